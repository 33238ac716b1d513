//! `proxy = "ssh://..."` end to end: a real sshd in a network namespace (`ssh/sshd-fixture.sh`),
//! reached with the system's `ssh` through an ssh configuration of the fixture's
//! (`$POSH_SSH_COMMAND = "ssh -F ..."`, `StrictHostKeyChecking yes`), posh-proxy started there by
//! posh-exec for the run. Each test compares posh-exec with bash on the same script; a proxy
//! that cannot start leaves the work to the client with a message naming the mount and the ssh
//! command. No test leaves an ssh or a posh-proxy behind.
//!
//! Needs root, iproute2 and openssh-server (`/usr/sbin/sshd`). Without them the tests print why
//! they skip and pass, except under CI (`$CI` set), where they must run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

mod common;
#[path = "common/proxy.rs"]
mod proxy_process;

/// posh-exec's version, which a copied posh-proxy is.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The script: the host's files read and written at the proxy, results printed.
const SCRIPT: &str = "\
grep ERROR big.log | sort | uniq -c
wc -l big.log
sort -k2 big.log > sorted.txt
cat sorted.txt | grep -c 'served in 7 ms'
grep -v INFO big.log | head -3
";

/// Whether the tests can run here; prints the reason when they cannot, and fails under CI.
fn can_run() -> bool {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let ip = Command::new("ip").arg("-V").output().is_ok_and(|o| o.status.success());
    let sshd = Path::new("/usr/sbin/sshd").exists();
    let why = match (root, ip, sshd) {
        (true, true, true) => return true,
        (false, _, _) => "not running as root",
        (true, false, _) => "iproute2's `ip` is not installed",
        (true, true, false) => "/usr/sbin/sshd is not installed (apt-get install openssh-server)",
    };
    assert!(std::env::var_os("CI").is_none(), "ssh tests must run under CI, but {why}");
    eprintln!("ssh: SKIPPED: {why}");
    false
}

/// A storage host with an sshd, its directory (`data/`, the host's path) seen by the client at
/// `view/` (a bind mount: the client's mount point, as NFS or sshfs would show it), and a
/// client home. Torn down when dropped, on panic too.
struct Host {
    dir: tempfile::TempDir,
    namespace: String,
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ssh/sshd-fixture.sh")
}

impl Host {
    fn up() -> Host {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = (std::process::id() + NEXT.fetch_add(1, Ordering::Relaxed) * 7) % 240 + 1;
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(fixture()).arg("up").arg(dir.path()).arg(n.to_string()).output().unwrap();
        assert!(out.status.success(), "the fixture did not come up: {}", String::from_utf8_lossy(&out.stderr));
        let host = Host { dir, namespace: format!("posh-ssh-{n}") };
        let big: String = (0..30_000).map(|i| format!("{i} INFO request served in {} ms\n", i % 97)).collect();
        std::fs::write(host.data().join("big.log"), format!("{big}9 ERROR rare failure\n{big}3 ERROR other\n"))
            .unwrap();
        std::fs::write(host.home().join("s.sh"), SCRIPT).unwrap();
        host
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The host's path of the export.
    fn data(&self) -> PathBuf {
        self.root().join("data")
    }

    /// The client's path of the same directory.
    fn view(&self) -> PathBuf {
        self.root().join("view")
    }

    fn home(&self) -> PathBuf {
        let home = self.root().join("home");
        std::fs::create_dir_all(&home).unwrap();
        home
    }

    /// posh.toml: the client's `view/` served by `ssh://storage`, exported as `data/` on the
    /// host, the proxy program `program`.
    fn configure(&self, program: &Path) {
        self.configure_through("ssh://storage", program);
    }

    fn configure_through(&self, proxy: &str, program: &Path) {
        self.write_config(proxy, &format!("proxy_program = \"{}\"\n", program.display()));
    }

    /// posh.toml as a user writes it: no `proxy_program`, so posh-exec copies its own
    /// posh-proxy to a host that has none.
    fn configure_plainly(&self) {
        self.write_config("ssh://storage", "");
    }

    fn write_config(&self, proxy: &str, more: &str) {
        let config = format!(
            "[[mount]]\nname = \"data\"\npath = \"{}\"\nproxy = \"{proxy}\"\nexport = \"{}\"\n{more}",
            self.view().display(),
            self.data().display(),
        );
        std::fs::write(self.home().join("posh.toml"), config).unwrap();
    }

    /// `program` (posh-exec or bash) in `view/`, isolated from the caller's configuration, ssh
    /// told to use the fixture's configuration `ssh_config` (one of `ssh_config*`).
    fn command(&self, program: &str, ssh_config: &str) -> Command {
        let mut command = Command::new(program);
        common::isolate(&mut command, &self.home(), &self.home().join("config"), &self.home().join("state"));
        command
            .current_dir(self.view())
            .env("LC_ALL", "C")
            .env("POSH_CONFIG", self.home().join("posh.toml"))
            .env("POSH_SSH_COMMAND", format!("ssh -F {}", self.root().join(ssh_config).display()))
            .stdin(Stdio::null());
        command
    }

    /// Runs the script under bash, then (the file it wrote removed) under posh-exec with
    /// `--stats` and `args`, within `within`; stdout, status and the file must be bash's.
    /// Returns posh's run, its stats and bash's stderr.
    fn against_bash(
        &self,
        ssh_config: &str,
        args: &[&str],
        within: Duration,
    ) -> (Output, Vec<serde_json::Value>, String) {
        let script = self.home().join("s.sh");
        let bash = self.command("bash", ssh_config).arg(&script).output().unwrap();
        let sorted = std::fs::read(self.view().join("sorted.txt")).unwrap();
        std::fs::remove_file(self.view().join("sorted.txt")).unwrap();
        let stats_file = self.home().join("stats.json");
        let started = Instant::now();
        let posh = self
            .command(env!("CARGO_BIN_EXE_posh-exec"), ssh_config)
            .arg("--stats")
            .arg(&stats_file)
            .args(args)
            .arg(&script)
            .output()
            .unwrap();
        let took = started.elapsed();
        assert!(took < within, "posh-exec took {took:?}: {}", text(&posh.stderr));
        assert_eq!(text(&posh.stdout), text(&bash.stdout), "stderr: {}", text(&posh.stderr));
        assert_eq!(posh.status.code(), bash.status.code());
        assert!(std::fs::read(self.view().join("sorted.txt")).unwrap() == sorted, "sorted.txt differs from bash's");
        let stats = std::fs::read_to_string(&stats_file).unwrap();
        let stats = stats.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        (posh, stats, text(&bash.stderr))
    }

    /// Processes in the host's namespace besides sshd's listener (a session, a posh-proxy), and
    /// ssh clients using this fixture's configurations: none may be left once a run ended.
    fn leftovers(&self) -> Vec<String> {
        let env = std::fs::read_to_string(self.root().join("env")).unwrap();
        let sshd = env.lines().find_map(|l| l.strip_prefix("PID=")).unwrap().to_string();
        let pids = Command::new("ip").args(["netns", "pids", &self.namespace]).output().unwrap();
        let listed = text(&pids.stdout);
        let in_host = listed.split_whitespace().filter(|pid| *pid != sshd).map(str::to_string);
        let marker = self.root().join("ssh_config").display().to_string();
        let clients = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok().map(|c| (e.file_name(), c)))
            .filter(|(_, cmdline)| String::from_utf8_lossy(cmdline).contains(&marker))
            .map(|(pid, _)| pid.to_string_lossy().into_owned());
        let described = |pid: String| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!("{pid}: {}", String::from_utf8_lossy(&cmdline).replace('\0', " "))
        };
        in_host.chain(clients).map(described).collect()
    }

    /// Waits (up to 5 s) until nothing is left, else fails naming what is.
    fn assert_nothing_left(&self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = self.leftovers();
            if left.is_empty() {
                return;
            }
            assert!(Instant::now() < deadline, "left behind after the run: {left:#?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = Command::new(fixture()).arg("down").arg(self.dir.path()).status();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every command of the script's first four pipelines (those reading the host's files) ran at
/// the host, as `--stats` says.
fn assert_ran_at_host(stats: &[serde_json::Value]) {
    for record in &stats[..4] {
        for command in record["commands"].as_array().unwrap() {
            assert_eq!(command["location"], "data", "{record}");
        }
    }
}

/// The built posh-proxy, on the host's side of the fixture (the namespace shares this file
/// system), where `proxy_program` names it.
fn install_proxy(host: &Host) -> PathBuf {
    let installed = host.root().join("bin/posh-proxy");
    std::os::unix::fs::symlink(proxy_process::program(), &installed).unwrap();
    installed
}

#[test]
fn a_script_runs_at_the_host_through_ssh_with_bashs_output_and_nothing_is_left() {
    if !can_run() {
        return;
    }
    let host = Host::up();
    let program = install_proxy(&host);
    // The command line's proxy wins over posh.toml's.
    host.configure_through("ssh://nowhere.invalid", &program);
    let (posh, stats, bash_stderr) =
        host.against_bash("ssh_config", &["--proxy", "data=ssh://storage"], Duration::from_secs(60));
    assert_eq!(text(&posh.stderr), bash_stderr);
    // Every command of the first pipelines ran at the host, and only results came back.
    assert_ran_at_host(&stats);
    let back = stats[0]["proxies"]["data"]["bytes_from_proxy"].as_u64().unwrap();
    assert!(back < 400, "{back} bytes came back for `grep ERROR big.log | sort | uniq -c`");
    // The proxy went with the run, and its ssh with it.
    host.assert_nothing_left();
}

#[test]
fn a_host_without_posh_proxy_says_how_to_install_it_and_the_client_does_the_work() {
    if !can_run() {
        return;
    }
    let host = Host::up();
    let missing = host.root().join("bin/posh-proxy");
    host.configure(&missing);
    let (posh, stats, bash_stderr) = host.against_bash("ssh_config", &[], Duration::from_secs(30));
    let stderr = text(&posh.stderr);
    let expected = "posh-exec: mount data: posh-proxy is not installed on storage: `ssh -F ";
    assert!(stderr.starts_with(expected), "{stderr}");
    assert!(stderr.contains(&format!("{} --over-ssh --export", missing.display())), "{stderr}");
    assert!(stderr.contains("exited with status 127: ") && stderr.contains("No such file or directory"), "{stderr}");
    assert!(stderr.contains("cargo install --locked --path posh-proxy"), "{stderr}");
    assert!(stderr.contains("its commands run at the client"), "{stderr}");
    // Said once, and otherwise what bash says.
    assert_eq!(stderr.lines().skip(1).collect::<Vec<_>>().join("\n"), bash_stderr.trim_end(), "{stderr}");
    for record in &stats {
        for command in record["commands"].as_array().unwrap() {
            assert_eq!(command["location"], "client", "{record}");
        }
    }
    host.assert_nothing_left();
}

#[test]
fn a_refused_login_fails_fast_naming_the_mount_and_the_ssh_command() {
    if !can_run() {
        return;
    }
    let host = Host::up();
    let program = install_proxy(&host);
    host.configure(&program);
    let (posh, _, _) = host.against_bash("ssh_config_wrong_key", &[], Duration::from_secs(15));
    let stderr = text(&posh.stderr);
    assert!(stderr.starts_with("posh-exec: mount data: ssh could not log in to storage: `ssh -F "), "{stderr}");
    assert!(stderr.contains("ssh_config_wrong_key -T ") && stderr.contains(" -- storage "), "{stderr}");
    assert!(
        stderr.contains("exited with status 255: root@10.79.") && stderr.contains("Permission denied (publickey)"),
        "{stderr}"
    );
    host.assert_nothing_left();
}

#[test]
fn a_changed_host_key_is_refused_by_ssh_and_nothing_runs_there() {
    if !can_run() {
        return;
    }
    let host = Host::up();
    let program = install_proxy(&host);
    host.configure(&program);
    let (posh, stats, _) = host.against_bash("ssh_config_wrong_host", &[], Duration::from_secs(15));
    let stderr = text(&posh.stderr);
    assert!(stderr.starts_with("posh-exec: mount data: ssh could not log in to storage: `ssh -F "), "{stderr}");
    assert!(stderr.contains("Host key verification failed."), "{stderr}");
    assert!(stats.iter().all(|r| r["commands"][0]["location"] == "client"), "{stats:?}");
    host.assert_nothing_left();
}

/// Issue 37, E5: a root login makes a root proxy, which refuses to serve (its jobs would have
/// root's rights) unless told which user to become; posh-exec says why, and its client does the
/// work, with bash's output. (Every other test here logs in as an unprivileged user.)
#[test]
fn a_root_login_starts_no_proxy_and_the_client_does_the_work() {
    if !can_run() {
        return;
    }
    let host = Host::up();
    let program = install_proxy(&host);
    host.configure(&program);
    let (posh, stats, _) = host.against_bash("ssh_config_root", &[], Duration::from_secs(30));
    let stderr = text(&posh.stderr);
    let refused =
        "posh-exec: mount data: the proxy on storage refused to serve: refusing to run as root without --user";
    assert!(stderr.starts_with(refused) && stderr.contains("Pass --user NAME"), "{stderr}");
    let locations = stats.iter().flat_map(|r| r["commands"].as_array().unwrap().iter().map(|c| &c["location"]));
    assert!(locations.into_iter().all(|l| l == "client"), "{stats:?}");
    host.assert_nothing_left();
}

/// `posh-exec --check` of an ssh:// mount starts its proxy as a run does, compares a file at both
/// ends, and ends the proxy; a host without posh-proxy fails the check with what to do.
#[test]
fn check_starts_the_proxy_through_ssh_and_ends_it() {
    if !can_run() {
        return;
    }
    let host = Host::up();
    let program = install_proxy(&host);
    host.configure(&program);
    // The check compares a file of at most 1 MiB (big.log is larger).
    std::fs::write(host.data().join("small.txt"), "a line of the host's\n").unwrap();
    let check = |ssh_config: &str| {
        let out = host.command(env!("CARGO_BIN_EXE_posh-exec"), ssh_config).arg("--check").output().unwrap();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (status, stdout, stderr) = check("ssh_config");
    assert_eq!(status, Some(0), "{stdout}{stderr}");
    let row = stdout.lines().nth(1).unwrap();
    for cell in ["data", "ssh://storage", "over ssh", "same", " ok"] {
        assert!(row.contains(cell), "{cell} is not in the row `{row}`:\n{stdout}");
    }
    assert!(stdout.contains("a one-time key the proxy gave over `ssh -F "), "{stdout}");
    assert!(stdout.contains("export: `small.txt` reads the same at both ends"), "{stdout}");
    host.assert_nothing_left();

    host.configure(&host.root().join("bin/missing-posh-proxy"));
    let (status, stdout, _) = check("ssh_config");
    assert_eq!(status, Some(1), "{stdout}");
    assert!(stdout.contains("data: FAILED: mount data: posh-proxy is not installed on storage"), "{stdout}");
    assert!(
        stdout.contains("to do: install posh-proxy ") && stdout.contains("`proxy_program` of mount `data`"),
        "{stdout}"
    );

    host.configure(&program);
    let (status, stdout, _) = check("ssh_config_wrong_key");
    assert_eq!(status, Some(1), "{stdout}");
    assert!(stdout.contains("to do: see that `ssh storage true` logs in without a question"), "{stdout}");
    host.assert_nothing_left();
}

/// A host without posh-proxy gets this machine's (same system), which then runs the script
/// there; a later run finds the copy and says nothing. A copy replaced by other bytes of the
/// same length is not run (issue 37: it ran, its name and mode alone looked at): the next run
/// copies this machine's over it again.
#[test]
fn a_host_without_posh_proxy_gets_a_copy_of_this_machines() {
    if !can_run() {
        return;
    }
    let host = Host::up();
    host.configure_plainly();
    let (posh, stats, bash_stderr) = host.against_bash("ssh_config", &[], Duration::from_secs(60));
    let stderr = text(&posh.stderr);
    let (said, rest) = stderr.split_once('\n').unwrap();
    let expected = format!("posh-exec: mount data: storage has no posh-proxy {}: copying this machine's (", VERSION);
    assert!(said.starts_with(&expected) && said.contains(" MB) to ~/.cache/posh/posh-proxy-"), "{stderr}");
    assert_eq!(rest, bash_stderr, "{stderr}");
    assert_ran_at_host(&stats);
    let copies: Vec<_> = std::fs::read_dir(host.root().join("host-cache/posh")).unwrap().flatten().collect();
    let [copy] = &copies[..] else { panic!("{copies:?}") };
    let ours = std::fs::metadata(proxy_process::program()).unwrap().len();
    assert_eq!(copy.metadata().unwrap().len(), ours);
    host.assert_nothing_left();

    let (posh, _, bash_stderr) = host.against_bash("ssh_config", &[], Duration::from_secs(60));
    assert_eq!(text(&posh.stderr), bash_stderr);
    host.assert_nothing_left();

    let marker = host.root().join("replacement-ran");
    let mut replacement = format!("#!/bin/sh\ntouch {}\nexit 0\n#", marker.display()).into_bytes();
    replacement.resize(ours as usize, b'#');
    std::fs::write(copy.path(), &replacement).unwrap();
    let (posh, stats, bash_stderr) = host.against_bash("ssh_config", &[], Duration::from_secs(60));
    let stderr = text(&posh.stderr);
    let (said, rest) = stderr.split_once('\n').unwrap();
    assert!(said.starts_with(&expected), "{stderr}");
    assert_eq!(rest, bash_stderr, "{stderr}");
    assert_ran_at_host(&stats);
    assert!(!marker.exists(), "the replaced copy ran");
    let copied = std::fs::read(copy.path()).unwrap();
    assert!(copied == std::fs::read(proxy_process::program()).unwrap(), "this machine's bytes again");
    host.assert_nothing_left();
}

/// With `linger`, the proxy a run started stays up after it, idle, and the next run uses it
/// without logging in again; idle for the linger, it ends by itself, and the run after that
/// starts one through ssh again.
#[test]
fn a_lingering_proxy_serves_the_next_run_without_ssh_and_ends_when_idle() {
    if !can_run() {
        return;
    }
    let host = Host::up();
    let program = install_proxy(&host);
    host.write_config("ssh://storage", &format!("proxy_program = \"{}\"\nlinger = \"10s\"\n", program.display()));
    let logins = || {
        let log = std::fs::read_to_string(host.root().join("sshd.log")).unwrap_or_default();
        log.lines().filter(|l| l.contains("Accepted publickey")).count()
    };
    let (posh, stats, bash_stderr) = host.against_bash("ssh_config", &[], Duration::from_secs(60));
    assert_eq!(text(&posh.stderr), bash_stderr);
    assert_ran_at_host(&stats);
    assert_eq!(logins(), 1);
    // The proxy lingers, alone: its ssh and the session are gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    while host.leftovers().len() != 1 || !host.leftovers()[0].contains("posh-proxy --over-ssh") {
        assert!(Instant::now() < deadline, "not one lingering proxy: {:#?}", host.leftovers());
        std::thread::sleep(Duration::from_millis(50));
    }
    let records = std::fs::read_dir(host.home().join("state/posh/lingering")).unwrap().count();
    assert_eq!(records, 1);

    let (posh, stats, bash_stderr) = host.against_bash("ssh_config", &[], Duration::from_secs(60));
    assert_eq!(text(&posh.stderr), bash_stderr);
    assert_ran_at_host(&stats);
    assert_eq!(logins(), 1, "the second run logged in again");

    // Idle for its linger, it ends.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !host.leftovers().is_empty() {
        assert!(Instant::now() < deadline, "the lingering proxy did not end: {:#?}", host.leftovers());
        std::thread::sleep(Duration::from_millis(200));
    }
    let (_, stats, _) = host.against_bash("ssh_config", &[], Duration::from_secs(60));
    assert_ran_at_host(&stats);
    assert_eq!(logins(), 2);
}
