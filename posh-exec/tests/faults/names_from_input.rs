//! Item 6: commands whose file names come from their input (`xargs cat < list`, `tar -T list`)
//! run at the client, where those names mean what they mean under bash, even when the working
//! directory and the list lie on a mount a real proxy serves, and the list names a file outside
//! the mount.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::proxy_process::Proxy;

/// A client home, a mount `data` served by a posh-proxy, and `outside.txt` beside the mount.
struct Setup {
    dir: tempfile::TempDir,
    _proxy: Proxy,
}

const SCRIPT: &str = "\
xargs cat < list.txt
tar -cf - -T list.txt | tar -tf -
xargs -a list.txt cat
grep -v '^#' list.txt | xargs head -n 1
";

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mount = root.join("data");
        std::fs::create_dir_all(&mount).unwrap();
        std::fs::create_dir_all(root.join("tmp")).unwrap();
        std::fs::write(mount.join("inside.txt"), "inside the mount\n").unwrap();
        std::fs::write(root.join("outside.txt"), "outside the mount\nsecond line\n").unwrap();
        std::fs::write(mount.join("list.txt"), "inside.txt\n../outside.txt\n").unwrap();
        std::fs::write(root.join("s.sh"), SCRIPT).unwrap();
        let fingerprint =
            String::from_utf8(client(root, &mount).arg("--print-identity").output().unwrap().stdout).unwrap();
        std::fs::write(root.join("authorized"), fingerprint).unwrap();
        let authorized = root.join("authorized");
        let proxy = Proxy::start(&mount, &root.join("state"), &["--authorized-clients", authorized.to_str().unwrap()]);
        std::fs::write(
            root.join("posh.toml"),
            format!("[[mount]]\nname = \"data\"\npath = \"data\"\nproxy = \"{}\"\n", proxy.addr),
        )
        .unwrap();
        Setup { dir, _proxy: proxy }
    }

    /// No job file in the export, no runtime directory in `$TMPDIR`.
    fn assert_nothing_left(&self) {
        let names = |dir: &Path| {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(&self.root().join("data")), ["inside.txt", "list.txt"]);
        assert_eq!(names(&self.root().join("tmp")), Vec::<String>::new());
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Runs `program` with `args` in the mount, as the script's user would.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let mount = self.root().join("data");
        let mut command = if program == "bash" {
            environment(Command::new("bash"), self.root(), &mount)
        } else {
            client(self.root(), &mount)
        };
        command.args(args).output().unwrap()
    }
}

fn environment(mut command: Command, root: &Path, cwd: &Path) -> Command {
    command.current_dir(cwd).env("LC_ALL", "C").env("TMPDIR", root.join("tmp")).stdin(Stdio::null());
    crate::common::isolate(&mut command, root, &root.join("config"), &root.join("client"));
    command
}

fn client(root: &Path, cwd: &Path) -> Command {
    environment(Command::new(env!("CARGO_BIN_EXE_posh-exec")), root, cwd)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn names_read_from_input_mean_what_they_mean_under_bash() {
    let setup = Setup::new();
    let bash = setup.run("bash", &["../s.sh"]);
    assert!(bash.status.success(), "{}", text(&bash.stderr));
    assert!(text(&bash.stdout).contains("outside the mount\n"), "bash reads the file outside the mount");
    let posh = setup.run("posh-exec", &["--stats", "../stats.json", "../s.sh"]);
    assert_eq!(text(&posh.stdout), text(&bash.stdout));
    assert_eq!(text(&posh.stderr), text(&bash.stderr));
    assert_eq!(posh.status.code(), bash.status.code());

    // The plan keeps the commands that read names at the client and says why: the first three
    // pipelines, all at the client, are bash's (no call of the runtime, so no record); the
    // fourth goes to the runtime, which runs its `xargs` at the client and says why too.
    let stats = std::fs::read_to_string(setup.root().join("stats.json")).unwrap();
    let records: Vec<serde_json::Value> = stats.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let command = |line: u64, index: usize| {
        let record =
            records.iter().find(|r| r["line"] == line).unwrap_or_else(|| panic!("no record of line {line}: {stats}"));
        record["commands"][index].clone()
    };
    assert!(records.iter().all(|r| r["line"] == 4), "{stats}");
    let explain = setup.run("posh-exec", &["--explain", "../s.sh"]);
    assert!(explain.status.success(), "{}", text(&explain.stderr));
    let explained = text(&explain.stdout);
    for from in ["standard input", "`list.txt`"] {
        assert!(explained.contains(&format!("opens files named in {from}")), "{explained}");
    }
    let why = command(4, 1)["why"].as_str().unwrap_or_default().to_string();
    assert_eq!(command(4, 1)["location"], "client", "{stats}");
    assert!(why.starts_with("opens files named in standard input"), "line 4: {why}");
    // The list itself is read where it lies: the proxy is live and still takes what it can.
    assert_eq!(command(4, 0)["location"], "data", "{stats}");
    assert_eq!(command(4, 0)["why"], serde_json::Value::Null, "a reason is given for the client only");
    setup.assert_nothing_left();
}

#[test]
fn explain_places_them_at_the_client_and_says_why() {
    let setup = Setup::new();
    let explain = setup.run("posh-exec", &["--explain", "../s.sh"]);
    assert!(explain.status.success(), "{}", text(&explain.stderr));
    let out = text(&explain.stdout);
    for expected in [
        "@client xargs cat: opens files named in standard input, names posh cannot see, so it runs at the client",
        "@client tar -cf - -T list.txt: opens files named in `list.txt`",
        "@client xargs -a list.txt cat: opens files named in `list.txt`",
        "@client xargs head -n 1: opens files named in standard input",
        "@data grep -v '^#' list.txt",
    ] {
        assert!(out.contains(expected), "`{expected}` missing from:\n{out}");
    }
    setup.assert_nothing_left();
}
