//! A client directory whose `data/` is a mount served by a real posh-proxy process exporting it,
//! with the client's identity authorized; bash and posh-exec run the same script in it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::proxy_process::Proxy;

pub struct Site {
    dir: tempfile::TempDir,
    pub proxy: Proxy,
}

impl Site {
    /// A site whose proxy gets `proxy_args` besides its export, address and state.
    pub fn new(proxy_args: &[&str]) -> Site {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("data")).unwrap();
        let mut print_identity = Command::new(env!("CARGO_BIN_EXE_posh-exec"));
        crate::common::isolate(&mut print_identity, root, &root.join("config"), &root.join("client"));
        let identity = print_identity.arg("--print-identity").output().unwrap();
        assert!(identity.status.success(), "{identity:?}");
        std::fs::write(root.join("authorized"), &identity.stdout).unwrap();
        let mut args = vec!["--authorized-clients", root.join("authorized").to_str().unwrap().to_string().leak()];
        args.extend_from_slice(proxy_args);
        let proxy = Proxy::start(&root.join("data"), &root.join("proxy-state"), &args);
        std::fs::write(
            root.join("posh.toml"),
            format!("[[mount]]\nname = \"data\"\npath = \"data\"\nproxy = \"{}\"\n", proxy.addr),
        )
        .unwrap();
        Site { dir, proxy }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    pub fn write(&self, relative: &str, content: impl AsRef<[u8]>) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// `program` (bash or posh-exec) in the site, isolated from the caller's configuration.
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.current_dir(self.root()).env("LC_ALL", "C").stdin(Stdio::null());
        crate::common::isolate(&mut command, self.root(), &self.path("config"), &self.path("client"));
        command
    }

    /// Runs `bash -c SHELL_LINE` in the site: the line starts a script the way a user would
    /// (`$SHELL script.sh > log 2>&1`), with `$SHELL` bash or posh-exec.
    pub fn shell_line(&self, shell: &str, line: &str) -> Output {
        self.command("bash").env("SHELL", shell).args(["-c", line]).output().unwrap()
    }

    /// The proxy's log so far.
    pub fn proxy_log(&self) -> String {
        self.proxy.log()
    }
}

/// The posh-exec binary under test.
pub fn posh_exec() -> &'static str {
    env!("CARGO_BIN_EXE_posh-exec")
}

/// Waits (at most `within`) until `condition` holds; returns how long it took.
pub fn wait_until(within: Duration, what: &str, mut condition: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < within, "{what} not within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

/// Files in `dir` and below whose name starts with `.posh-`.
pub fn temporaries(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".posh-") {
            found.push(name);
        } else if entry.file_type().unwrap().is_dir() {
            found.extend(temporaries(&entry.path()));
        }
    }
    found
}
