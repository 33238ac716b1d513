//! Smaller faults: scripts too long for one argument, temporary directories left behind,
//! identities created by several processes at once, a proxy restarted during a run.

use std::cell::RefCell;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

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
        let mut command = Command::new(env!("CARGO_BIN_EXE_posh-exec"));
        crate::common::isolate(&mut command, &home, &home, &home);
        command.arg("--print-identity").stdin(Stdio::null()).output().unwrap()
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

/// A client home, `data/` exported by a real posh-proxy and mounted, and a script that stops at
/// each `pause N` until the test lets it go on.
struct Restartable {
    mounted: Mounted,
    /// The running proxy (the test stops and starts it while a script runs), and its address.
    proxy: RefCell<Option<Proxy>>,
    addr: RefCell<String>,
}

impl Restartable {
    fn new() -> Restartable {
        let mounted = Mounted::new();
        let identity = mounted.command(env!("CARGO_BIN_EXE_posh-exec")).arg("--print-identity").output().unwrap();
        std::fs::write(mounted.root().join("authorized"), &identity.stdout).unwrap();
        let restartable =
            Restartable { mounted, proxy: RefCell::new(None), addr: RefCell::new("127.0.0.1:0".to_string()) };
        restartable.start_proxy();
        let config =
            format!("[[mount]]\nname = \"data\"\npath = \"data\"\nproxy = \"{}\"\n", restartable.addr.borrow());
        std::fs::write(restartable.root().join("posh.toml"), config).unwrap();
        restartable
    }

    fn root(&self) -> &Path {
        self.mounted.root()
    }

    /// Starts the proxy, on the address of the one before if there was one.
    fn start_proxy(&self) {
        let authorized = self.root().join("authorized");
        let args = ["--authorized-clients", authorized.to_str().unwrap()];
        let listen = self.addr.borrow().clone();
        let proxy = Proxy::start_on(&listen, &self.root().join("data"), &self.root().join("proxy-state"), &args);
        *self.addr.borrow_mut() = proxy.addr.clone();
        *self.proxy.borrow_mut() = Some(proxy);
    }

    /// Stops the proxy as an administrator would (SIGTERM) and waits until it is gone.
    fn stop_proxy(&self) {
        let mut proxy = self.proxy.borrow_mut().take().expect("a running proxy");
        proxy.signal("-TERM");
        assert_eq!(proxy.wait_exit(Duration::from_secs(20)), Some(0), "{}", proxy.log());
    }

    /// Kills the proxy (SIGKILL: it closes nothing, as in a crash) and waits until it is gone.
    fn kill_proxy(&self) {
        let mut proxy = self.proxy.borrow_mut().take().expect("a running proxy");
        proxy.signal("-KILL");
        assert_eq!(proxy.wait_exit(Duration::from_secs(20)), None);
    }

    /// `pause N` in a script: it says it stopped, then waits for the test.
    fn script(&self, body: &str) -> String {
        format!("pause() {{ : > \"paused-$1\"; read -r _ < \"resume-$1\"; }}\n{body}")
    }

    /// Runs `script` under `program`; at each pause, in order, calls `at_pause` with its number.
    fn run(&self, program: &str, args: &[&str], pauses: usize, mut at_pause: impl FnMut(usize)) -> Output {
        for n in 1..=pauses {
            let fifo = self.root().join(format!("resume-{n}"));
            let _ = std::fs::remove_file(self.root().join(format!("paused-{n}")));
            let _ = std::fs::remove_file(&fifo);
            assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        }
        let child =
            self.mounted.command(program).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let pid = child.id();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(child.wait_with_output().unwrap()));
        for n in 1..=pauses {
            wait_for_file(&self.root().join(format!("paused-{n}")));
            at_pause(n);
            std::fs::write(self.root().join(format!("resume-{n}")), "go\n").unwrap();
        }
        finished.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            panic!("{program} did not finish within a minute");
        })
    }

    fn stats(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.root().join("stats.json")).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Where each pipeline's commands ran, one list per pipeline.
fn locations(stats: &[serde_json::Value]) -> Vec<Vec<String>> {
    stats
        .iter()
        .map(|p| {
            p["commands"].as_array().unwrap().iter().map(|c| c["location"].as_str().unwrap().to_string()).collect()
        })
        .collect()
}

#[test]
fn a_proxy_restarted_between_two_pipelines_runs_the_second() {
    let cluster = Restartable::new();
    let script = cluster.script("grep -c a data/lines.txt\npause 1\ncat data/lines.txt | grep a\n");
    std::fs::write(cluster.root().join("s.sh"), script).unwrap();
    let bash = cluster.run("bash", &["s.sh"], 1, |_| {});
    let posh = cluster.run(env!("CARGO_BIN_EXE_posh-exec"), &["--stats", "stats.json", "s.sh"], 1, |_| {
        cluster.stop_proxy();
        cluster.start_proxy();
    });
    assert_eq!(text(&posh.stdout), text(&bash.stdout));
    assert_eq!(text(&posh.stderr), text(&bash.stderr));
    assert_eq!(posh.status.code(), bash.status.code());
    assert_eq!(locations(&cluster.stats()), [vec!["data"], vec!["data", "data"]]);
}

#[test]
fn a_proxy_that_stays_away_is_warned_about_once_and_tried_again_later() {
    let cluster = Restartable::new();
    let body = "grep -c a data/lines.txt\npause 1\ngrep -c b data/lines.txt\ngrep -c c data/lines.txt\n\
                pause 2\ngrep -c g data/lines.txt\n";
    std::fs::write(cluster.root().join("s.sh"), cluster.script(body)).unwrap();
    let bash = cluster.run("bash", &["s.sh"], 2, |_| {});
    let posh = cluster.run(env!("CARGO_BIN_EXE_posh-exec"), &["--stats", "stats.json", "s.sh"], 2, |pause| {
        if pause == 1 {
            cluster.stop_proxy();
        } else {
            cluster.start_proxy();
            // The retry waits a second after the failed attempt (which came before this pause).
            std::thread::sleep(Duration::from_millis(1_200));
        }
    });
    assert_eq!(text(&posh.stdout), text(&bash.stdout));
    assert_eq!(posh.status.code(), bash.status.code());
    let stderr = text(&posh.stderr);
    assert_eq!(stderr.lines().count(), 1, "one warning for the whole outage: {stderr}");
    assert!(stderr.contains(cluster.addr.borrow().as_str()) && stderr.contains("mount data"), "{stderr}");
    assert_eq!(locations(&cluster.stats()), [["data"], ["client"], ["client"], ["data"]]);
}

#[test]
fn a_proxy_that_crashed_and_came_back_is_used_again_once_its_connection_timed_out() {
    let cluster = Restartable::new();
    let body = "grep -c a data/lines.txt\npause 1\ngrep -c b data/lines.txt\ngrep -c g data/lines.txt\n";
    std::fs::write(cluster.root().join("s.sh"), cluster.script(body)).unwrap();
    let bash = cluster.run("bash", &["s.sh"], 1, |_| {});
    let started = Instant::now();
    let posh = cluster.run(env!("CARGO_BIN_EXE_posh-exec"), &["--stats", "stats.json", "s.sh"], 1, |_| {
        cluster.kill_proxy();
        cluster.start_proxy();
    });
    assert_eq!(text(&posh.stdout), text(&bash.stdout));
    assert_eq!(posh.status.code(), bash.status.code());
    // Nothing told the client: the first pipeline after the crash waits for QUIC's idle timeout
    // (10 s), then runs at the client; the next finds the connection closed and reconnects.
    let stderr = text(&posh.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(locations(&cluster.stats()), [["data"], ["client"], ["data"]]);
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
}
