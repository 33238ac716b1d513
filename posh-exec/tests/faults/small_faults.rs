//! Smaller faults: scripts too long for one argument, temporary directories left behind,
//! identities created by several processes at once, a proxy restarted during a run.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Barrier};

use crate::common::isolated;
use crate::proxy_process::Proxy;

/// A working directory whose `data/` is an embedded mount, a client home, and a `$TMPDIR` of its
/// own, so what a run leaves there can be seen.
struct Mounted {
    dir: tempfile::TempDir,
}

impl Mounted {
    fn new() -> Mounted {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["data", "tmp", "empty-path"] {
            std::fs::create_dir(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("data/lines.txt"), "alpha\nbeta\ngamma\n").unwrap();
        std::fs::write(root.join("posh.toml"), "[[mount]]\nname = \"data\"\npath = \"data\"\nproxy = \"embedded\"\n")
            .unwrap();
        Mounted { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, program: &str) -> Command {
        let mut command = isolated(program, self.root());
        command.env("TMPDIR", self.root().join("tmp")).stdin(Stdio::null());
        command
    }

    fn write(&self, name: &str, script: &str) -> PathBuf {
        let path = self.root().join(name);
        std::fs::write(&path, script).unwrap();
        path
    }

    /// Runs `args` under bash and under posh-exec and checks that they agree.
    fn same_as_bash(&self, args: &[&str]) -> Output {
        let bash = self.command("bash").args(args).output().unwrap();
        let posh = self.command(env!("CARGO_BIN_EXE_posh-exec")).args(args).output().unwrap();
        assert_eq!(text(&posh.stdout), text(&bash.stdout), "stdout of {args:?}");
        assert_eq!(text(&posh.stderr), text(&bash.stderr), "stderr of {args:?}");
        assert_eq!(posh.status.code(), bash.status.code(), "status of {args:?}");
        posh
    }

    /// `same_as_bash` with `input` on standard input.
    fn same_as_bash_reading(&self, args: &[&str], input: &str) -> Output {
        let run = |program: &str| {
            let mut child = self
                .command(program)
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
            child.wait_with_output().unwrap()
        };
        let (bash, posh) = (run("bash"), run(env!("CARGO_BIN_EXE_posh-exec")));
        assert_eq!(text(&posh.stdout), text(&bash.stdout), "stdout of {args:?}");
        assert_eq!(text(&posh.stderr), text(&bash.stderr), "stderr of {args:?}");
        assert_eq!(posh.status.code(), bash.status.code(), "status of {args:?}");
        posh
    }

    /// The script as posh-exec hands it to bash.
    fn rewritten(&self, args: &[&str]) -> String {
        let posh = self.command(env!("CARGO_BIN_EXE_posh-exec")).arg("--print-rewritten").args(args).output().unwrap();
        assert!(posh.status.success(), "{}", text(&posh.stderr));
        text(&posh.stdout)
    }

    /// What runs left in `$TMPDIR`.
    fn left_in_tmp(&self) -> Vec<String> {
        let entries = std::fs::read_dir(self.root().join("tmp")).unwrap();
        entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `make` in `n` threads released together, and returns what each produced.
fn all_at_once<T: Send + 'static>(n: usize, make: impl Fn() -> T + Send + Sync + 'static) -> Vec<T> {
    let barrier = Arc::new(Barrier::new(n));
    let make = Arc::new(make);
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (barrier, make) = (barrier.clone(), make.clone());
            std::thread::spawn(move || {
                barrier.wait();
                make()
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().expect("a racer did not come up")).collect()
}

#[test]
fn proxies_started_at_once_on_a_fresh_state_dir_share_one_host_key() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export");
    std::fs::create_dir(&export).unwrap();
    let state = dir.path().join("state");
    let racers = {
        let (export, state) = (export.clone(), state.clone());
        all_at_once(8, move || Proxy::start(&export, &state, &["--allow-any-client"]))
    };
    let first = racers[0].fingerprint.clone();
    for proxy in &racers {
        assert_eq!(proxy.fingerprint, first, "two host keys came out of one race: {}", proxy.log());
    }
    drop(racers);
    // The key left behind serves every later start.
    let later = Proxy::start(&export, &state, &["--allow-any-client"]);
    assert_eq!(later.fingerprint, first);
    let left: Vec<_> = std::fs::read_dir(state.join("host")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "only the key and its certificate stay: {left:?}");
}

#[test]
fn clients_started_at_once_on_a_fresh_state_dir_share_one_identity() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().to_path_buf();
    let print_identity = move || -> Output {
        Command::new(env!("CARGO_BIN_EXE_posh-exec"))
            .arg("--print-identity")
            .env("XDG_STATE_HOME", &home)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let runs = all_at_once(8, print_identity.clone());
    let first = text(&runs[0].stdout);
    assert!(first.starts_with("SHA256:"), "{first:?} {}", text(&runs[0].stderr));
    for run in &runs {
        assert!(run.status.success(), "{}", text(&run.stderr));
        assert_eq!(text(&run.stdout), first, "two identities came out of one race");
    }
    assert_eq!(text(&print_identity().stdout), first);
}

#[test]
fn no_run_leaves_its_runtime_directory_behind() {
    let mounted = Mounted::new();
    // A mount is configured, but no pipeline goes to the runtime: bash is exec'd.
    mounted.write("builtins.sh", "echo \"no runtime needed\"\nexit 3\n");
    mounted.same_as_bash(&["builtins.sh", "a"]);
    assert_eq!(mounted.left_in_tmp(), Vec::<String>::new(), "after a script that stays with bash");
    // A script bash rejects runs as it is, and bash says why.
    mounted.write("broken.sh", "echo one\nif then fi\ngrep a data/lines.txt\n");
    mounted.same_as_bash(&["broken.sh"]);
    assert_eq!(mounted.left_in_tmp(), Vec::<String>::new(), "after a script with a syntax error");
    // A pipeline on the mount: the runtime runs beside bash, and goes with it.
    mounted.write("mounted.sh", "grep a data/lines.txt\ngrep -c a data/lines.txt\n");
    mounted.same_as_bash(&["mounted.sh"]);
    assert_eq!(mounted.left_in_tmp(), Vec::<String>::new(), "after a script run beside the runtime");
    // Bash cannot start, whether the script was rewritten or not.
    for script in ["mounted.sh", "builtins.sh"] {
        let posh = mounted
            .command(env!("CARGO_BIN_EXE_posh-exec"))
            .arg(script)
            .env("PATH", mounted.root().join("empty-path"))
            .output()
            .unwrap();
        assert_eq!(posh.status.code(), Some(2), "{}", text(&posh.stderr));
        assert!(text(&posh.stderr).contains("cannot start bash"), "{}", text(&posh.stderr));
        assert_eq!(mounted.left_in_tmp(), Vec::<String>::new(), "after bash could not start for {script}");
    }
}

/// A script whose every line is checked against bash after a function of `body_lines` pipelines
/// on the mount (each grows by a hundred-odd bytes when rewritten into a runtime call).
fn long_script(body_lines: usize) -> String {
    let body = "  grep -c a data/lines.txt\n".repeat(body_lines);
    format!(
        "echo \"0=$0 n=$# args=$*\"\nfor a in \"$@\"; do echo \"[$a]\"; done\ngrep -c a data/lines.txt\n\
         unused() {{\n{body}}}\n\
         echo \"line $LINENO\"\nnosuchcommand\nread -r line; echo \"read: $line\"\nreturn 3\n\
         grep a data/lines.txt | sort -r\nexit 7\n"
    )
}

#[test]
fn scripts_longer_than_one_argument_may_be_run_as_bash_runs_them() {
    const MAX_ARG_STRLEN: usize = 128 * 1024;
    let mounted = Mounted::new();
    // A script file over the limit even before it is rewritten.
    let long = long_script(5_000);
    assert!(long.len() > MAX_ARG_STRLEN);
    mounted.write("long.sh", &long);
    let args = ["long.sh", "one", "two words", ""];
    assert!(mounted.rewritten(&args).contains("__run"), "the script goes to the runtime");
    mounted.same_as_bash_reading(&args, "from stdin\n");
    // `-c` text that fits in an argument, but not once rewritten.
    let short = long_script(1_500);
    let rewritten = mounted.rewritten(&["-c", &short, "name"]);
    assert!(short.len() < MAX_ARG_STRLEN && rewritten.len() > MAX_ARG_STRLEN, "{}", rewritten.len());
    mounted.same_as_bash_reading(&["-c", &short, "name", "arg"], "from stdin\n");
    assert_eq!(mounted.left_in_tmp(), Vec::<String>::new());
}

#[test]
fn a_script_holding_a_nul_byte_runs_as_bash_runs_it() {
    let mounted = Mounted::new();
    mounted.write("nul.sh", "echo before\ngrep -c a data/lines.txt # a \0 in a comment\necho after\n");
    mounted.same_as_bash(&["nul.sh"]);
}

