//! Smaller faults: scripts too long for one argument, temporary directories left behind,
//! identities created by several processes at once, a proxy restarted during a run.

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
