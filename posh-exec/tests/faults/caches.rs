//! Item 3: what a proxy writes on a network filesystem reads, at the client, as under bash.
//!
//! The rig (`../shared/rig/netrig.sh`): client and storage network namespaces joined through a
//! router namespace, the storage host's directory mounted at the client with sshfs (FUSE), a
//! real posh-proxy in the storage namespace exporting that directory, posh-exec in the client
//! namespace with its working directory on the mount. The client reads files first (its kernel
//! and sshfs now cache their sizes and the directory's listing), then the proxy replaces,
//! creates and appends to files, and the client reads them again. bash runs the same script on
//! local files. It needs root, `/dev/fuse` and the rig's packages; Go builds the rig's delay
//! element (without Go the link is undelayed, which changes nothing about caches). When the rig
//! cannot come up, the test fails under `CI=true` and says why (and skips) otherwise.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::fixture::posh_exec;
use super::proxy_process::Proxy;

/// The script: the same under bash (local files) and posh-exec (files on the sshfs mount).
const SCRIPT: &str = "\
echo \"old: $(cat out.txt | wc -c) $(cat log.txt | wc -c)\"
for f in *.txt; do echo \"listed: $f\"; done
sort big > out.txt
sort -r big > new.txt
grep 7 big >> log.txt
sort -n -o sorted.txt big
{ cat out.txt; }
{ cksum new.txt log.txt sorted.txt; }
echo \"sizes: $(stat -c '%n %s' out.txt new.txt log.txt sorted.txt)\"
for f in *; do echo \"listed: $f\"; done
{ ls -a; }
";

/// Lines of `SCRIPT` whose commands must run at the proxy (the writes).
const REMOTE_LINES: [u64; 4] = [3, 4, 5, 6];

/// Files before the script runs, in the storage directory and in bash's local directory alike.
fn seed(dir: &Path) {
    // Shuffled (deterministically) so that sorting changes the bytes.
    let big: String = (0..20_000u64).map(|i| format!("{}\n", (i * 7919) % 20_011)).collect();
    std::fs::write(dir.join("big"), big).unwrap();
    std::fs::write(dir.join("out.txt"), "short\n").unwrap();
    std::fs::write(dir.join("log.txt"), "first line\n").unwrap();
}

#[test]
fn what_a_proxy_writes_on_an_sshfs_mount_reads_at_the_client_as_under_bash() {
    let dir = tempfile::tempdir().unwrap();
    let rig = match Rig::up(dir.path()) {
        Ok(rig) => rig,
        Err(reason) => return cannot_run(&reason),
    };
    let local = dir.path().join("local");
    std::fs::create_dir(&local).unwrap();
    seed(&local);
    seed(&rig.data);

    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let script = home.join("s.sh");
    std::fs::write(&script, SCRIPT).unwrap();
    let identity =
        bounded(client_env(Command::new(posh_exec()), &home).arg("--print-identity"), Duration::from_secs(20));
    let authorized = home.join("authorized");
    std::fs::write(&authorized, &identity.stdout).unwrap();
    let proxy = Proxy::start_in(
        &["ip", "netns", "exec", &rig.namespace("storage")],
        &format!("{}:0", rig.storage_ip()),
        &rig.data,
        &home.join("proxy-state"),
        &["--authorized-clients", authorized.to_str().unwrap()],
    );
    let config = home.join("posh.toml");
    let mount = format!(
        "[[mount]]\nname = \"data\"\npath = \"{}\"\nproxy = \"{}\"\nexport = \"{}\"\n",
        rig.mnt.display(),
        proxy.addr,
        rig.data.display()
    );
    std::fs::write(&config, mount).unwrap();

    let bash = bounded(client_env(Command::new("bash"), &home).arg(&script).current_dir(&local), LIMIT);
    let stats = home.join("stats.json");
    let mut posh = Command::new("ip");
    posh.args(["netns", "exec", &rig.namespace("client")]).arg(posh_exec()).arg("--stats").arg(&stats).arg(&script);
    let posh = bounded(client_env(posh, &home).current_dir(&rig.mnt).env("POSH_CONFIG", &config), LIMIT);

    assert_eq!(text(&posh.stderr), text(&bash.stderr), "{}", proxy.log());
    assert_eq!(text(&posh.stdout), text(&bash.stdout));
    assert_eq!(posh.status.code(), bash.status.code());
    // The storage directory holds what bash's local directory holds: no temporary left behind.
    assert_eq!(contents(&rig.data), contents(&local));
    // The writes ran at the proxy, or the test proves nothing about its caches.
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&stats).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for line in REMOTE_LINES {
        let record = records.iter().find(|r| r["line"] == line).unwrap_or_else(|| panic!("no record of line {line}"));
        for command in record["commands"].as_array().unwrap() {
            assert_eq!(command["location"], "data", "line {line} ran elsewhere: {record}");
        }
    }
}

/// Each of bash's and posh-exec's runs of the script.
const LIMIT: Duration = Duration::from_secs(90);

/// `command` with the client's identity and configuration under `home`, in the C locale.
pub(super) fn client_env(mut command: Command, home: &Path) -> Command {
    command.env("LC_ALL", "C");
    crate::common::isolate(&mut command, home, &home.join("config"), &home.join("state"));
    command
}

pub(super) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every entry of `dir` (hidden ones too) with its bytes.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap_or_default())
        })
        .collect();
    entries.sort();
    entries
}

/// Under `CI=true` the test must run: fail, saying why. Elsewhere, say why it did not run.
fn cannot_run(reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("the sshfs cache test cannot run: {reason}");
    }
    eprintln!("SKIPPED what_a_proxy_writes_on_an_sshfs_mount_reads_at_the_client_as_under_bash: {reason}");
}

/// Runs `command` to its end, killed after `limit`; its output.
pub(super) fn bounded(command: &mut Command, limit: Duration) -> Output {
    try_bounded(command, limit).unwrap_or_else(|e| panic!("{e}"))
}

fn try_bounded(command: &mut Command, limit: Duration) -> Result<Output, String> {
    let what = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{what}: {e}"))?;
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what} did not end within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() })
}

/// One rig of our own (its own namespace prefix, addresses, directories), brought down when
/// dropped, whatever happened.
pub(super) struct Rig {
    script: PathBuf,
    env: Vec<(&'static str, String)>,
    prefix: String,
    net: String,
    pub(super) data: PathBuf,
    pub(super) mnt: PathBuf,
}

impl Rig {
    fn up(dir: &Path) -> Result<Rig, String> {
        // The datacenter profile; without Go (for the delay element) an undelayed link.
        let link: &[&str] = if on_path("go") { &["--rtt", "0.5", "--rate", "5000"] } else { &["--rtt", "0"] };
        Rig::up_with(dir, link)
    }

    /// A rig whose link is `link` (`netrig.sh up`'s options), its state in `dir/rig-state`.
    pub(super) fn up_with(dir: &Path, link: &[&str]) -> Result<Rig, String> {
        let script = std::env::var_os("POSH_NETRIG")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/rig/netrig.sh"));
        if !script.exists() {
            return Err(format!("the rig {} is missing (POSH_NETRIG names another)", script.display()));
        }
        let uid = Command::new("id").arg("-u").output().map_err(|e| format!("id -u: {e}"))?;
        if text(&uid.stdout).trim() != "0" {
            return Err("network namespaces and FUSE mounts need root".into());
        }
        if !Path::new("/dev/fuse").exists() {
            return Err("no /dev/fuse".into());
        }
        let missing: Vec<&str> = ["ip", "tc", "iptables", "sshfs", "nsenter", "fusermount3", "ssh-keygen"]
            .into_iter()
            .filter(|c| !on_path(c))
            .chain((!Path::new("/usr/sbin/sshd").exists()).then_some("sshd"))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "missing {} (apt-get install iproute2 iptables openssh-server sshfs fuse3 iputils-ping)",
                missing.join(", ")
            ));
        }
        // Rigs of one test process (tests run in parallel) are told apart by a count.
        static RIGS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = RIGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = std::process::id();
        let (prefix, net) = (format!("pc{}{}", id % 100_000, n % 10), format!("10.{}", 150 + (id + n) % 100));
        let (data, mnt) = (dir.join("data"), dir.join("mnt"));
        let env = vec![
            ("NETRIG_PREFIX", prefix.clone()),
            ("NETRIG_NET", net.clone()),
            ("NETRIG_DATA", data.display().to_string()),
            ("NETRIG_MNT", mnt.display().to_string()),
            ("NETRIG_STATE", dir.join("rig-state").display().to_string()),
        ];
        // From here on, dropping the rig brings down whatever part of it came up.
        let rig = Rig { script, env, prefix, net, data, mnt };
        // Once more after a failure: on a loaded machine sshd in its namespace may not answer
        // sshfs within the rig's 10 s.
        let mut failures = Vec::new();
        for _ in 0..2 {
            let up = try_bounded(rig.netrig().arg("up").args(link), Duration::from_secs(240))?;
            if up.status.success() {
                return Ok(rig);
            }
            let sshfs_log = std::fs::read_to_string(dir.join("rig-state/sshfs.log")).unwrap_or_default();
            failures.push(format!("netrig.sh up failed: {}(sshfs said: {})", text(&up.stderr), sshfs_log.trim()));
            let _ = try_bounded(rig.netrig().arg("down"), Duration::from_secs(60));
        }
        Err(failures.join("; then "))
    }

    fn netrig(&self) -> Command {
        let mut command = Command::new("bash");
        command.arg(&self.script).envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    pub(super) fn namespace(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    pub(super) fn storage_ip(&self) -> String {
        format!("{}.2.2", self.net)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        match try_bounded(self.netrig().arg("down"), Duration::from_secs(60)) {
            Ok(down) if down.status.success() => {}
            Ok(down) => eprintln!("netrig.sh down failed: {}", text(&down.stderr)),
            Err(e) => eprintln!("netrig.sh down: {e}"),
        }
    }
}

pub(super) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
