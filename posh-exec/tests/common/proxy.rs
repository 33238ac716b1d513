//! A real `posh-proxy` process for tests: started on loopback, its address and fingerprint read
//! from what it prints, killed when dropped. Each test binary uses part of it.
#![allow(dead_code)]

#[path = "hand_over.rs"]
mod hand_over;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The posh-proxy binary of this build another package's, so cargo names it
/// only to that package's tests; `cargo test --workspace` builds it beside posh-exec.
pub fn program() -> std::path::PathBuf {
    Path::new(env!("CARGO_BIN_EXE_posh-exec")).with_file_name("posh-proxy")
}

/// A running proxy; killed when dropped.
pub struct Proxy {
    pub child: Child,
    pub addr: String,
    pub fingerprint: String,
    /// What it printed before its address.
    pub early: Vec<String>,
    stderr: mpsc::Receiver<String>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proxy {
    /// Its peak resident memory so far (`VmHWM` of /proc/PID/status), for the record.
    pub fn peak_memory(&self) -> String {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap_or("unknown").trim().to_string()
    }

    pub fn start(export: &Path, state: &Path, extra: &[&str]) -> Proxy {
        Proxy::start_on("127.0.0.1:0", export, state, extra)
    }

    /// A proxy listening on `listen` (a restarted proxy takes its predecessor's address).
    pub fn start_on(listen: &str, export: &Path, state: &Path, extra: &[&str]) -> Proxy {
        Proxy::start_in(&[], listen, export, state, extra)
    }

    /// A proxy listening on `listen`, started through `wrapper` (`ip netns exec NS`), which
    /// must exec it: the child's pid is the proxy's. Started as root (the tests run as root
    /// here and in CI), it is told to become [`USER`] (a root proxy without `--user` refuses to
    /// start), with the export and the state directory handed to that user first; unless the
    /// test names a `--user` itself or its wrapper changes the user (`setpriv`).
    pub fn start_in(wrapper: &[&str], listen: &str, export: &Path, state: &Path, extra: &[&str]) -> Proxy {
        let mut extra = extra.to_vec();
        if becomes_user(wrapper, &extra) {
            hand_over(export);
            if state.exists() {
                hand_over(state);
            }
            extra.extend(["--user", USER]);
        }
        let extra = &extra[..];
        let program = program();
        let mut command = match wrapper.split_first() {
            Some((first, rest)) => {
                let mut command = Command::new(first);
                command.args(rest).arg(program);
                command
            }
            None => Command::new(program),
        };
        let mut child = command
            .arg("--export")
            .arg(export)
            .args(["--listen", listen, "--state-dir"])
            .arg(state)
            .args(extra)
            .env("RUST_LOG", "info")
            .env("POSH_PROXY_TEST_SECRET", "hunter2")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("posh-proxy starts");
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut early = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                let _ = child.kill();
                let status = child.wait();
                // What it said before it ended is why (a race lost at start, a refused option).
                panic!("posh-proxy printed no address (ended: {status:?}); it said:\n{}", early.join("\n"));
            };
            if let Some(rest) = line.strip_prefix("posh-proxy: listening on ") {
                let (addr, fingerprint) = rest.split_once(", fingerprint ").expect("address and fingerprint");
                assert!(fingerprint.starts_with("SHA256:"), "{line}");
                return Proxy {
                    child,
                    addr: addr.to_string(),
                    fingerprint: fingerprint.to_string(),
                    early,
                    stderr: rx,
                };
            }
            early.push(line);
        }
    }

    /// Waits (bounded) for the proxy to exit and returns its status code.
    pub fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("posh-proxy did not exit within {within:?}");
    }

    pub fn signal(&self, name: &str) {
        let ok = Command::new("kill").args([name, &self.child.id().to_string()]).status().unwrap().success();
        assert!(ok);
    }

    pub fn log(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }
}

/// Whether a proxy started through `wrapper` with `extra` is told to become [`USER`]: when the
/// tests run as root, unless the test names a `--user` itself or its wrapper changes the user.
pub fn becomes_user(wrapper: &[&str], extra: &[&str]) -> bool {
    rustix::process::geteuid().is_root()
        && !extra.contains(&"--user")
        && !wrapper.first().is_some_and(|w| w.ends_with("setpriv"))
}

/// The user a proxy started as root becomes (`--user`), and its uid.
pub const USER: &str = "nobody";
pub const USER_ID: u32 = 65534;

/// `dir` handed over to [`USER`] (see `hand_over.rs`).
pub fn hand_over(dir: &Path) {
    hand_over::hand_over(dir, USER_ID);
}

/// `dir` and everything in it owned by user and group `id` (links themselves, not followed).
pub fn chown_all(dir: &Path, id: u32) {
    std::os::unix::fs::chown(dir, Some(id), Some(id)).unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        match path.is_dir() && !path.is_symlink() {
            true => chown_all(&path, id),
            false => std::os::unix::fs::lchown(&path, Some(id), Some(id)).unwrap(),
        }
    }
}
