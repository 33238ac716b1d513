//! Proxies started through the user's own `ssh` (`proxy = "ssh://[user@]host[:port]"`).
//!
//! posh-exec runs `ssh -T [-o BatchMode=yes] [-p PORT] -- [USER@]HOST PROGRAM --over-ssh --export
//! DIR`, so the user's ssh configuration, agent, `known_hosts` and jump hosts decide how the host
//! is reached and whether it is who it claims to be. Over that ssh channel the two sides greet
//! each other with one JSON line each: the client first sends its version and the fingerprint of
//! its persistent identity ([`ClientGreeting`]); the proxy, which made a one-time host key,
//! answers with its version, the UDP address it bound (the address the ssh connection came in
//! on, from `$SSH_CONNECTION`) and that key's fingerprint ([`ProxyGreeting`]). The QUIC
//! connection is then pinned to that fingerprint, and the proxy serves that client alone.
//!
//! A host without posh-proxy, or with another version of it, gets a copy of this machine's own
//! when the mount names no `proxy_program` and the host's `uname -sm` is this machine's
//! ([`LocalProxy`]): streamed over ssh into `~/.cache/posh/posh-proxy-ID` (ID names this build),
//! which later starts run first.
//!
//! With a `linger`, the proxy stays up after the run for that long without a connection
//! (`--linger`), and the run leaves a record of its address and fingerprint in the client's
//! state ([`Lingering`]), so the next run connects to it without ssh ([`reach`]).
//!
//! Otherwise the proxy lives as long as the channel: it shuts down when its standard input (the channel)
//! ends, which happens when posh-exec closes it at the end of the run, when ssh dies, and when
//! posh-exec dies (its end of ssh's standard input closes). See docs/running.md.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

pub use posh_wire::over_ssh::{ClientGreeting, ProxyGreeting, VERSION, listen_address_from};

/// The environment variable holding the ssh command to use instead of `ssh` (split as a shell
/// would split it, without expanding anything), as git's `GIT_SSH_COMMAND`.
pub const SSH_COMMAND_VAR: &str = "POSH_SSH_COMMAND";

/// How to install posh-proxy on a host, for the messages that find it missing or of another
/// version.
pub const INSTALL_HINT: &str = "install it on the host with `cargo install --locked --path posh-proxy` from a checkout \
     of this posh version (or copy this build's posh-proxy there, to a directory on the PATH of non-interactive ssh \
     sessions), or set the mount's `proxy_program` in posh.toml to its path on the host";

/// What to start: one mount's proxy through ssh.
#[derive(Clone, Debug)]
pub struct SshTarget {
    /// The mount's name, for messages.
    pub mount: String,
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    /// The program ssh runs on the host (`posh-proxy`), handed to the remote shell as written.
    pub program: String,
    /// The directory the proxy exports, as the host sees it.
    pub export: PathBuf,
    /// The ssh command (`ssh`, or `$POSH_SSH_COMMAND` split into words).
    pub ssh: Vec<String>,
    /// Whether ssh may ask the user (a passphrase, a host key): only with a terminal; otherwise
    /// `BatchMode` makes it fail instead of waiting for an answer that cannot come.
    pub interactive: bool,
    /// How long the host may take to log in and answer.
    pub timeout: Duration,
    /// This machine's posh-proxy, copied to a host that has none of this version; `None` when
    /// the mount names its `proxy_program` (the user chose what runs there).
    pub copy: Option<LocalProxy>,
    /// How long the proxy stays up, idle, after its channel ends (`--linger`).
    pub linger: Option<Duration>,
    /// Writes a line of posh-exec's own to its stderr (the copy's notice): the runtime's erases
    /// the progress line first.
    pub say: fn(std::fmt::Arguments<'_>),
}

/// [`SshTarget::say`] where no progress line is drawn.
fn say_on_stderr(line: std::fmt::Arguments<'_>) {
    eprintln!("{line}");
}

/// This machine's posh-proxy, to copy to a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalProxy {
    pub path: PathBuf,
    pub size: u64,
    /// Names this build among copies on a host: the version, the file's size and its time
    /// (a rebuilt binary is another copy; hashing 150 MB of a debug build on every run is not).
    pub id: String,
    /// `uname -sm` here: a copy runs only on a host that says the same.
    pub system: String,
    /// The SHA-256 of the file, in hex: the host runs a copy only while it has exactly these
    /// bytes (a same-length replacement ran while only the name and mode were looked at).
    pub sha256: String,
}

impl LocalProxy {
    /// posh-proxy beside this program (where `cargo install` and the Debian package put it),
    /// and what `uname -sm` says here; `None` when either is missing.
    pub fn beside_this_program() -> Option<LocalProxy> {
        let path = std::env::current_exe().ok()?.with_file_name("posh-proxy");
        let meta = std::fs::metadata(&path).ok().filter(std::fs::Metadata::is_file)?;
        let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
        let uname = std::process::Command::new("uname").arg("-sm").output().ok().filter(|o| o.status.success())?;
        let system = String::from_utf8(uname.stdout).ok()?.trim().to_string();
        let id = format!("{VERSION}-{:x}-{:x}", meta.len(), modified.as_secs());
        let sha256 = hash_of_build(&path, &id).ok()?;
        Some(LocalProxy { path, size: meta.len(), id, system, sha256 })
    }

    /// Where the copy lives on the host, for the host's shell (`$HOME` expanded there).
    fn remote_path(&self) -> String {
        format!("${{XDG_CACHE_HOME:-$HOME/.cache}}/posh/posh-proxy-{}", self.id)
    }

    /// A test for the host's `sh` that the file `$VAR` holds this build's bytes: its SHA-256
    /// read through standard input (no file name to quote or parse).
    fn same_bytes(&self, var: &str) -> String {
        format!("h=\"$(sha256sum < \"${var}\")\" && [ \"${{h%% *}}\" = {} ]", self.sha256)
    }
}

/// The SHA-256 of the build `id` of posh-proxy at `path`, kept in this user's cache
/// (`~/.cache/posh/posh-proxy-ID.sha256`) for the next runs: hashing 150 MB of a debug build
/// takes a second; `id` names the file's version, size and time, as it names the copy.
fn hash_of_build(path: &Path, id: &str) -> std::io::Result<String> {
    let dir = posh_core::config::xdg_base_dir(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"), ".cache")
        .map(|cache| cache.join("posh"));
    let kept = dir.as_ref().map(|dir| dir.join(format!("posh-proxy-{id}.sha256")));
    if let Some(text) = kept.as_ref().and_then(|kept| std::fs::read_to_string(kept).ok()) {
        let text = text.trim();
        if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(text.to_string());
        }
    }
    let hash = sha256_of(path)?;
    if let (Some(dir), Some(kept)) = (dir, kept) {
        // Kept if it can be: under a name of this process's first, so no run reads half of it.
        let temporary = dir.join(format!(".posh-proxy-{id}.sha256.{}", std::process::id()));
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&temporary, format!("{hash}\n")))
            .and_then(|()| std::fs::rename(&temporary, &kept));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
    }
    Ok(hash)
}

/// The SHA-256 of the file at `path`, in hex.
fn sha256_of(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut file = std::fs::File::open(path)?;
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut buffer)? {
            0 => break,
            n => context.update(&buffer[..n]),
        }
    }
    Ok(context.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect())
}

impl SshTarget {
    /// The ssh command from `$POSH_SSH_COMMAND` (`None`: unset or empty) or `ssh`.
    pub fn ssh_command(from_env: Option<&str>) -> Result<Vec<String>, SshError> {
        match from_env.filter(|text| !text.trim().is_empty()) {
            None => Ok(vec!["ssh".to_string()]),
            Some(text) => shell_words::split(text)
                .map_err(|e| SshError::BadSshCommand { text: text.to_string(), reason: e.to_string() }),
        }
    }

    /// Whether this process has a terminal ssh could ask the user on.
    pub fn has_terminal() -> bool {
        std::io::stdin().is_terminal() || std::fs::File::open("/dev/tty").is_ok()
    }

    /// The whole command line: ssh's words, then the command for the host's shell.
    pub fn argv(&self) -> Vec<String> {
        let mut argv = self.ssh.clone();
        argv.push("-T".to_string());
        if !self.interactive {
            argv.extend(["-o".to_string(), "BatchMode=yes".to_string()]);
        }
        if let Some(port) = self.port {
            argv.extend(["-p".to_string(), port.to_string()]);
        }
        argv.push("--".to_string());
        argv.push(match &self.user {
            Some(user) => format!("{user}@{}", self.host),
            None => self.host.clone(),
        });
        argv.push(self.remote_command());
        argv
    }

    /// What the host's shell runs: the program as the user wrote it (so `~/.cargo/bin/posh-proxy`
    /// works), the export quoted; with a copy allowed, the copy of this build when the host has
    /// it with this build's bytes (checked by their SHA-256 right before it starts; another
    /// file under its name is passed over, and copied over when the program fails to start),
    /// through `sh` (the login shell may be any: one line, in single quotes).
    fn remote_command(&self) -> String {
        let mut arguments = format!("--over-ssh --export {}", shell_words::quote(&self.export.to_string_lossy()));
        if let Some(linger) = self.linger {
            arguments.push_str(&format!(" --linger {}", linger.as_secs()));
        }
        match &self.copy {
            None => format!("{} {arguments}", self.program),
            Some(local) => {
                let script = format!(
                    "p=\"{}\"; [ -x \"$p\" ] && {} || p={}; exec \"$p\" {arguments}",
                    local.remote_path(),
                    local.same_bytes("p"),
                    self.program
                );
                format!("sh -c {}", shell_words::quote(&script))
            }
        }
    }

    /// The command line that copies `local` to the host: the host's `sh` checks its system,
    /// takes exactly the file's bytes from standard input into a temporary file, checks their
    /// SHA-256 and renames it into place (a copy cut short or changed on its way is never run),
    /// and removes copies of other builds unused for a week.
    fn copy_argv(&self, local: &LocalProxy) -> Vec<String> {
        let size = local.size;
        let system = &local.system;
        let script = [
            format!(
                "s=\"$(uname -sm)\"; [ \"$s\" = {} ] || {{ echo \"posh: this host is $s, not {system}\" >&2; exit 90; }}",
                shell_words::quote(system)
            ),
            "d=\"${XDG_CACHE_HOME:-$HOME/.cache}/posh\"; mkdir -p \"$d\" && chmod 700 \"$d\" || exit 91".to_string(),
            format!("f=\"$d/posh-proxy-{}\"; t=\"$d/.posh-proxy.$$\"; trap 'rm -f \"$t\"' EXIT", local.id),
            format!("head -c {size} > \"$t\" || exit 91"),
            format!(
                "[ \"$(wc -c < \"$t\")\" -eq {size} ] || {{ echo \"posh: the copy was cut short\" >&2; exit 92; }}"
            ),
            format!("{} || {{ echo \"posh: the copy is not this build's bytes\" >&2; exit 93; }}", local.same_bytes("t")),
            "chmod 755 \"$t\" && mv -f \"$t\" \"$f\" || exit 91".to_string(),
            "find \"$d\" -maxdepth 1 -name 'posh-proxy-*' ! -path \"$f\" -mtime +6 -exec rm -f {} + 2>/dev/null; exit 0"
                .to_string(),
        ]
        .join("; ");
        let mut argv = self.argv();
        argv.pop();
        argv.push(format!("sh -c {}", shell_words::quote(&script)));
        argv
    }

    /// The command line as a user would type it, for messages.
    pub fn display(&self) -> String {
        shell_words::join(self.argv())
    }
}

/// Why a proxy could not be started through ssh. Each names the mount and the ssh command.
#[derive(Debug, thiserror::Error)]
pub enum SshError {
    #[error("${} is not a command line ({reason}): {text}", SSH_COMMAND_VAR)]
    BadSshCommand { text: String, reason: String },
    #[error("mount {mount}: cannot run `{command}`: {source}")]
    Spawn { mount: String, command: String, source: std::io::Error },
    #[error(
        "mount {mount}: posh-proxy is not installed on {host}: `{command}` exited with status 127{stderr}; {}",
        INSTALL_HINT
    )]
    Missing { mount: String, host: String, command: String, stderr: String },
    #[error("mount {mount}: ssh could not log in to {host}: `{command}` exited with status 255{stderr}")]
    Login { mount: String, host: String, command: String, stderr: String },
    #[error("mount {mount}: the proxy on {host} ended before it answered: `{command}` exited with {status}{stderr}")]
    Ended { mount: String, host: String, command: String, status: String, stderr: String },
    #[error("mount {mount}: {host} gave no answer within {}s: `{command}`{stderr}", .timeout.as_secs_f64())]
    Timeout { mount: String, host: String, command: String, timeout: Duration, stderr: String },
    #[error(
        "mount {mount}: the posh-proxy on {host} is version {theirs}, this posh-exec is {}; {} (`{command}`)",
        VERSION,
        INSTALL_HINT
    )]
    Version { mount: String, host: String, command: String, theirs: String },
    #[error(
        "mount {mount}: the proxy on {host} did not answer as posh-proxy --over-ssh does (`{command}`): {answer}{stderr}"
    )]
    Garbled { mount: String, host: String, command: String, answer: String, stderr: String },
    #[error("mount {mount}: the proxy on {host} refused to serve: {reason} (`{command}`)")]
    Refused { mount: String, host: String, command: String, reason: String },
    #[error("mount {mount}: cannot talk to `{command}`: {source}")]
    Channel { mount: String, command: String, source: std::io::Error },
    /// posh-proxy was missing or of another version (`first`), and this machine's could not be
    /// copied there.
    #[error("{first}; posh-exec could not copy this machine's posh-proxy there: {why}")]
    NotCopied { first: Box<SshError>, why: String },
}

/// The last bytes ssh wrote to its standard error (the host's messages and ssh's own), kept for
/// error messages; read as they come so that a talkative proxy never blocks on a full pipe.
#[derive(Clone, Debug, Default)]
struct StderrTail(Arc<Mutex<Vec<u8>>>);

const STDERR_KEPT: usize = 4096;
/// The lines of it an error message shows: the last ones say why (`Host key verification
/// failed.` ends a long warning).
const SUMMARY_LINES: usize = 4;

impl StderrTail {
    /// Keeps what `pipe` says until it ends.
    async fn read_from(self, mut pipe: tokio::process::ChildStderr) {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            self.push(&buf[..n]);
            tracing::debug!("ssh: {}", String::from_utf8_lossy(&buf[..n]).trim_end());
        }
    }

    fn push(&self, bytes: &[u8]) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.extend_from_slice(bytes);
        let excess = kept.len().saturating_sub(STDERR_KEPT);
        kept.drain(..excess);
    }

    /// `: LINE; LINE` (the last lines ssh and the host wrote, as one line), or nothing.
    fn summary(&self) -> String {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&kept);
        let mut lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        lines.drain(..lines.len().saturating_sub(SUMMARY_LINES));
        if lines.is_empty() { String::new() } else { format!(": {}", lines.join("; ")) }
    }
}

/// A proxy running on a host for this run, through its ssh process. Dropped, the ssh process is
/// killed (and with its channel gone, the proxy ends); [`SshProxy::shutdown`] lets it end first.
#[derive(Debug)]
pub struct SshProxy {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Where the proxy listens, and the fingerprint its certificate must have.
    pub listen: SocketAddr,
    pub fingerprint: String,
    command: String,
    stderr: StderrTail,
}

impl SshProxy {
    /// Starts the proxy and waits for its greeting (at most `target.timeout`), sending
    /// `client_fingerprint` as the one client it may serve. A host without posh-proxy, or with
    /// another version, gets a copy of this machine's when `target.copy` allows (said on
    /// standard error: it writes a file on the host), and the proxy is started again. On every
    /// error the ssh processes are killed and reaped before this returns.
    pub async fn start(target: &SshTarget, client_fingerprint: &str) -> Result<SshProxy, SshError> {
        let first = match SshProxy::start_once(target, client_fingerprint).await {
            Err(first @ (SshError::Missing { .. } | SshError::Version { .. })) => first,
            started => return started,
        };
        let Some(local) = &target.copy else { return Err(first) };
        (target.say)(format_args!(
            "posh-exec: mount {}: {} has no posh-proxy {VERSION}: copying this machine's ({} MB) to {} there",
            target.mount,
            target.host,
            local.size.div_ceil(1_000_000),
            local.remote_path().replace("${XDG_CACHE_HOME:-$HOME/.cache}", "~/.cache")
        ));
        if let Err(why) = copy_to_host(target, local).await {
            return Err(SshError::NotCopied { first: Box::new(first), why });
        }
        SshProxy::start_once(target, client_fingerprint).await
    }

    async fn start_once(target: &SshTarget, client_fingerprint: &str) -> Result<SshProxy, SshError> {
        let command = target.display();
        let (mut child, stderr, _) = spawn_ssh(&target.argv(), target.interactive, Stdio::piped())
            .map_err(|source| SshError::Spawn { mount: target.mount.clone(), command: command.clone(), source })?;
        let mut stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let greeting = ClientGreeting { posh_exec: VERSION.to_string(), client: client_fingerprint.to_string() };
        let exchange = async {
            let channel = |source| SshError::Channel { mount: target.mount.clone(), command: command.clone(), source };
            let mut line = serde_json::to_string(&greeting).expect("a greeting serializes");
            line.push('\n');
            if let Some(stdin) = stdin.as_mut() {
                // A host that refused the login closed the pipe: its status says why, not this.
                let _ = stdin.write_all(line.as_bytes()).await;
                let _ = stdin.flush().await;
            }
            let mut answer = String::new();
            if let Some(stdout) = stdout {
                BufReader::new(stdout).take(64 * 1024).read_line(&mut answer).await.map_err(channel)?;
            }
            Ok(answer)
        };
        let answer = tokio::time::timeout(target.timeout, exchange).await;
        let fail = |child: Child, error: SshError| async move {
            reap(child).await;
            Err::<SshProxy, _>(error)
        };
        let host = target.host.clone();
        let mount = target.mount.clone();
        let answer = match answer {
            Err(_) => {
                return fail(
                    child,
                    SshError::Timeout { mount, host, command, timeout: target.timeout, stderr: stderr.summary() },
                )
                .await;
            }
            Ok(Err(e)) => return fail(child, e).await,
            Ok(Ok(answer)) => answer,
        };
        if answer.is_empty() {
            // The channel ended without a word: ssh's status tells why.
            let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            // Let the last of ssh's messages be read.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let stderr = stderr.summary();
            let error = match status {
                Ok(Ok(status)) if status.code() == Some(127) => SshError::Missing { mount, host, command, stderr },
                Ok(Ok(status)) if status.code() == Some(255) => SshError::Login { mount, host, command, stderr },
                Ok(Ok(status)) => SshError::Ended { mount, host, command, status: status.to_string(), stderr },
                _ => SshError::Ended { mount, host, command, status: "no status".to_string(), stderr },
            };
            return fail(child, error).await;
        }
        let parsed: Result<ProxyGreeting, _> = serde_json::from_str(answer.trim_end());
        let greeting = match parsed {
            Ok(greeting) => greeting,
            Err(_) => {
                let answer = answer.trim_end().chars().take(200).collect();
                return fail(child, SshError::Garbled { mount, host, command, answer, stderr: stderr.summary() }).await;
            }
        };
        if greeting.posh_proxy != VERSION {
            return fail(child, SshError::Version { mount, host, command, theirs: greeting.posh_proxy }).await;
        }
        let (Some(listen), Some(fingerprint)) = (greeting.listen, greeting.fingerprint) else {
            let reason = greeting.error.unwrap_or_else(|| "no address or fingerprint".to_string());
            return fail(child, SshError::Refused { mount, host, command, reason }).await;
        };
        Ok(SshProxy { child, stdin, listen, fingerprint, command, stderr })
    }

    /// The ssh command, for messages.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// What ssh and the proxy said on standard error lately (`: LINE; LINE`, or nothing).
    pub fn stderr(&self) -> String {
        self.stderr.summary()
    }

    /// Ends the channel, so that the proxy shuts down, and waits up to `wait` for ssh to exit;
    /// kills it then. Either way it is reaped.
    pub async fn shutdown(mut self, wait: Duration) {
        drop(self.stdin.take());
        if tokio::time::timeout(wait, self.child.wait()).await.is_err() {
            reap(self.child).await;
        }
    }
}

/// How long a run tries a lingering proxy before it starts one through ssh instead.
const LINGERING_WAIT: Duration = Duration::from_secs(2);
/// A record is not used this close to its proxy's end (it may end as the run connects).
const LINGERING_MARGIN: Duration = Duration::from_secs(3);

/// A lingering proxy as a run left it: where it listens, its fingerprint, and when it ends if
/// no one connects (seconds since the epoch).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct LingerRecord {
    listen: SocketAddr,
    fingerprint: String,
    until: u64,
}

/// The record of a mount's lingering proxy, in the client's state directory: one file per
/// ssh target (user, host, port, program, export, this build).
#[derive(Debug)]
pub struct Lingering {
    file: PathBuf,
    linger: Duration,
    listen: SocketAddr,
    fingerprint: String,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Lingering {
    /// Where `target`'s record is kept under `dir`: named by a hash of what makes the proxy
    /// (FNV-1a, stable across builds and runs).
    fn file(dir: &Path, target: &SshTarget) -> PathBuf {
        let key = format!(
            "{}\0{:?}\0{}\0{:?}\0{}\0{}\0{}\0{:?}",
            VERSION,
            target.user,
            target.host,
            target.port,
            target.program,
            target.export.display(),
            target.ssh.join(" "),
            target.copy.as_ref().map(|c| &c.id)
        );
        let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        dir.join(format!("{}-{hash:016x}.json", target.host.replace(|c: char| !c.is_ascii_alphanumeric(), "_")))
    }

    /// The record at `file` if its proxy should still be up.
    fn load(file: &Path) -> Option<LingerRecord> {
        let record: LingerRecord = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
        (record.until > now_secs() + LINGERING_MARGIN.as_secs()).then_some(record)
    }

    /// Writes the record: the proxy ends `linger` after now, the run's last connection gone.
    /// Written whole (a temporary file renamed), readable by this user alone.
    fn save(&self) -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
        let dir = self.file.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let record = LingerRecord {
            listen: self.listen,
            fingerprint: self.fingerprint.clone(),
            until: now_secs() + self.linger.as_secs(),
        };
        let temporary = self.file.with_extension(format!("{}.tmp", std::process::id()));
        let mut out =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temporary)?;
        out.write_all(&serde_json::to_vec(&record).map_err(std::io::Error::other)?)?;
        std::fs::rename(&temporary, &self.file)
    }

    fn forget(&self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// How a run holds a proxy it reached through an ssh:// mount: the ssh process of the one it
/// started, and with a `linger`, the record to leave for the next run.
#[derive(Debug)]
pub struct SshLink {
    started: Option<SshProxy>,
    lingering: Option<Lingering>,
}

impl SshLink {
    /// The run is over: the channel of a proxy it started is closed and ssh given up to `wait`
    /// to exit (a lingering proxy lets it go at once); a lingering proxy is recorded, ending
    /// its linger from now.
    pub async fn end(self, wait: Duration) {
        if let Some(started) = self.started {
            started.shutdown(wait).await;
        }
        if let Some(lingering) = self.lingering
            && let Err(e) = lingering.save()
        {
            tracing::warn!("cannot record the lingering proxy in {}: {e}", lingering.file.display());
        }
    }

    /// Its connection was lost: the proxy is ended (if this run started it) and forgotten.
    pub async fn lost(self) {
        if let Some(started) = self.started {
            started.shutdown(Duration::ZERO).await;
        }
        if let Some(lingering) = self.lingering {
            lingering.forget();
        }
    }
}

/// Connects to `target`'s proxy as `client`: to the one an earlier run left lingering, when
/// `target` lingers and `lingering_dir` has its record and it answers within
/// [`LINGERING_WAIT`]; else to one started through ssh now, pinned to the fingerprint it gave
/// over the channel.
pub async fn reach(
    target: &SshTarget,
    client: &super::Identity,
    lingering_dir: Option<&Path>,
) -> anyhow::Result<(super::Connection, SshLink)> {
    use super::{Pin, connect_pinned};
    let lingering = |file: PathBuf, linger, listen, fingerprint| Lingering { file, linger, listen, fingerprint };
    let record = target.linger.zip(lingering_dir).map(|(linger, dir)| (linger, Lingering::file(dir, target)));
    if let Some((linger, file)) = &record
        && let Some(found) = Lingering::load(file)
    {
        let address = found.listen.to_string();
        let connecting = connect_pinned(&address, client, Pin::Exactly(&found.fingerprint));
        match tokio::time::timeout(LINGERING_WAIT, connecting).await {
            Ok(Ok(connection)) => {
                tracing::info!("mount {}: the proxy left lingering at {} answered", target.mount, found.listen);
                let kept = lingering(file.clone(), *linger, found.listen, found.fingerprint);
                return Ok((connection, SshLink { started: None, lingering: Some(kept) }));
            }
            _ => {
                tracing::info!("mount {}: the proxy left lingering at {} is gone", target.mount, found.listen);
                let _ = std::fs::remove_file(file);
            }
        }
    }
    let started = SshProxy::start(target, client.fingerprint()).await?;
    let listen = started.listen;
    match connect_pinned(&listen.to_string(), client, Pin::Exactly(&started.fingerprint)).await {
        Ok(connection) => {
            let kept = record.map(|(linger, file)| lingering(file, linger, listen, started.fingerprint.clone()));
            Ok((connection, SshLink { started: Some(started), lingering: kept }))
        }
        Err(e) => {
            let (command, said) = (started.command().to_string(), started.stderr());
            started.shutdown(Duration::ZERO).await;
            Err(e.context(format!(
                "mount {}: the proxy `{command}` started listens on {listen} (UDP), which this client cannot reach \
                 (a firewall, NAT, or a jump host between them){said}",
                target.mount
            )))
        }
    }
}

/// Starts ssh as `argv` says, its standard input piped, its standard error kept (by the task
/// returned) and its standard output as `stdout` says.
fn spawn_ssh(
    argv: &[String],
    interactive: bool,
    stdout: Stdio,
) -> std::io::Result<(Child, StderrTail, Option<tokio::task::JoinHandle<()>>)> {
    let mut ssh = Command::new(&argv[0]);
    // Without a terminal ssh asks nothing, and a group of its own keeps the script's Ctrl-C
    // (sent to the foreground group) from cutting the channel. With one, it stays in the
    // foreground group, where it may read a passphrase from the terminal.
    if !interactive {
        ssh.process_group(0);
    }
    let mut child =
        ssh.args(&argv[1..]).stdin(Stdio::piped()).stdout(stdout).stderr(Stdio::piped()).kill_on_drop(true).spawn()?;
    let stderr = StderrTail::default();
    let reading = child.stderr.take().map(|pipe| tokio::spawn(stderr.clone().read_from(pipe)));
    Ok((child, stderr, reading))
}

/// Copies `local` to the host through ssh (see [`SshTarget::copy_argv`]), within the login's
/// time and a second per megabyte; says why not otherwise.
async fn copy_to_host(target: &SshTarget, local: &LocalProxy) -> Result<(), String> {
    let argv = target.copy_argv(local);
    let mut file = tokio::fs::File::open(&local.path).await.map_err(|e| format!("{}: {e}", local.path.display()))?;
    let (mut child, stderr, reading) =
        spawn_ssh(&argv, target.interactive, Stdio::null()).map_err(|e| format!("cannot run `{}`: {e}", argv[0]))?;
    let mut stdin = child.stdin.take();
    let copying = async {
        if let Some(stdin) = stdin.as_mut() {
            // A host that refused (another system) closed the pipe: its status says why.
            let _ = tokio::io::copy(&mut file, stdin).await;
        }
        drop(stdin);
        child.wait().await
    };
    let within = target.timeout + Duration::from_secs(local.size / 1_000_000);
    let status = tokio::time::timeout(within, copying).await;
    if let Some(reading) = reading {
        let _ = tokio::time::timeout(Duration::from_secs(1), reading).await;
    }
    match status {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("`{}` exited with {status}{}", shell_words::join(&argv), stderr.summary())),
        Ok(Err(e)) => Err(format!("cannot wait for ssh: {e}")),
        Err(_) => {
            reap(child).await;
            Err(format!("no end within {}s{}", within.as_secs(), stderr.summary()))
        }
    }
}

/// Kills `child` (if it still runs) and waits for it.
async fn reap(mut child: Child) {
    let _ = child.start_kill();
    let _ = child.wait().await;
}

/// The target for `mount`, whose proxy is `ssh://[user@]host[:port]`: its `proxy_program`
/// (`posh-proxy` by default, and then this machine's copied when the host has none), the ssh
/// command from `$POSH_SSH_COMMAND`, interactive when this process has a terminal. Runs and
/// `--check` start proxies from this.
pub fn target_for_mount(
    mount: &posh_core::config::Mount,
    user: Option<&str>,
    host: &str,
    port: Option<u16>,
) -> Result<SshTarget, SshError> {
    let ssh_words = SshTarget::ssh_command(std::env::var(SSH_COMMAND_VAR).ok().as_deref())?;
    let program = mount.proxy_program.as_deref().unwrap_or(posh_core::config::DEFAULT_PROXY_PROGRAM);
    let mut target =
        target(&mount.name, user, host, port, program, &mount.export, ssh_words, SshTarget::has_terminal());
    if mount.proxy_program.is_none() {
        target.copy = LocalProxy::beside_this_program();
    }
    target.linger = mount.linger;
    Ok(target)
}

/// The target for a mount whose proxy is `ssh://`, with the ssh command given.
#[allow(clippy::too_many_arguments)]
pub fn target(
    mount: &str,
    user: Option<&str>,
    host: &str,
    port: Option<u16>,
    program: &str,
    export: &Path,
    ssh: Vec<String>,
    interactive: bool,
) -> SshTarget {
    SshTarget {
        mount: mount.to_string(),
        user: user.map(str::to_string),
        host: host.to_string(),
        port,
        program: program.to_string(),
        export: export.to_path_buf(),
        ssh,
        interactive,
        // A user may have a passphrase to type; a batch run fails fast.
        timeout: if interactive { Duration::from_secs(120) } else { Duration::from_secs(20) },
        copy: None,
        linger: None,
        say: say_on_stderr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SshTarget {
        target(
            "logs",
            Some("me"),
            "storage",
            Some(2222),
            "posh-proxy",
            Path::new("/srv/my logs"),
            vec!["ssh".into()],
            false,
        )
    }

    #[test]
    fn the_command_line_quotes_the_export_and_keeps_the_host_from_options() {
        assert_eq!(
            sample().argv(),
            [
                "ssh",
                "-T",
                "-o",
                "BatchMode=yes",
                "-p",
                "2222",
                "--",
                "me@storage",
                "posh-proxy --over-ssh --export '/srv/my logs'"
            ]
        );
        let interactive = SshTarget { interactive: true, port: None, user: None, ..sample() };
        assert_eq!(interactive.argv()[1..], ["-T", "--", "storage", "posh-proxy --over-ssh --export '/srv/my logs'"]);
        let lingering = SshTarget { linger: Some(Duration::from_secs(600)), ..sample() };
        assert_eq!(lingering.argv().last().unwrap(), "posh-proxy --over-ssh --export '/srv/my logs' --linger 600");
    }

    #[test]
    fn the_ssh_command_comes_from_the_environment_split_as_a_shell_would() {
        assert_eq!(SshTarget::ssh_command(None).unwrap(), ["ssh"]);
        assert_eq!(SshTarget::ssh_command(Some("  ")).unwrap(), ["ssh"]);
        assert_eq!(
            SshTarget::ssh_command(Some("ssh -F '/tmp/my config' -i k")).unwrap(),
            ["ssh", "-F", "/tmp/my config", "-i", "k"]
        );
        assert!(matches!(SshTarget::ssh_command(Some("ssh 'open")), Err(SshError::BadSshCommand { .. })));
    }

    #[test]
    fn the_listen_address_is_the_one_the_ssh_connection_came_in_on() {
        assert_eq!(listen_address_from("10.0.0.1 51234 10.0.0.2 22"), Some("10.0.0.2:0".parse().unwrap()));
        assert_eq!(listen_address_from("fd00::1 51234 fd00::2 22"), Some("[fd00::2]:0".parse().unwrap()));
        assert_eq!(listen_address_from("garbage"), None);
    }

    #[test]
    fn greetings_read_back_as_written() {
        let proxy = ProxyGreeting {
            posh_proxy: VERSION.into(),
            listen: Some("10.0.0.2:4433".parse().unwrap()),
            fingerprint: Some("SHA256:x".into()),
            error: None,
        };
        let line = serde_json::to_string(&proxy).unwrap();
        assert_eq!(line, format!(r#"{{"posh_proxy":"{VERSION}","listen":"10.0.0.2:4433","fingerprint":"SHA256:x"}}"#));
        assert_eq!(serde_json::from_str::<ProxyGreeting>(&line).unwrap(), proxy);
    }

    /// A fake `ssh` (bash running the remote command itself): each way the channel can fail
    /// gives its error, and no process is left.
    #[tokio::test]
    async fn each_way_a_start_fails_names_the_mount_and_leaves_no_process() {
        let fake = |script: &str| SshTarget {
            ssh: vec!["bash".into(), "-c".into(), script.into(), "fake-ssh".into()],
            timeout: Duration::from_millis(800),
            ..sample()
        };
        let missing = SshProxy::start(&fake("echo 'bash: posh-proxy: command not found' >&2; exit 127"), "SHA256:c")
            .await
            .unwrap_err();
        assert!(matches!(missing, SshError::Missing { .. }), "{missing}");
        let text = missing.to_string();
        assert!(text.starts_with("mount logs: posh-proxy is not installed on storage"), "{text}");
        assert!(text.contains("command not found") && text.contains("cargo install --locked"), "{text}");
        let login = SshProxy::start(&fake("echo 'Permission denied (publickey).' >&2; exit 255"), "SHA256:c")
            .await
            .unwrap_err();
        assert!(login.to_string().contains("ssh could not log in to storage"), "{login}");
        assert!(login.to_string().contains("Permission denied (publickey)."), "{login}");
        let silent = SshProxy::start(&fake("read line; exec sleep 29.5"), "SHA256:c").await.unwrap_err();
        assert!(matches!(silent, SshError::Timeout { .. }), "{silent}");
        let other = SshProxy::start(&fake(r#"read; echo '{"posh_proxy":"0.0.1"}'; exec sleep 29.5"#), "SHA256:c")
            .await
            .unwrap_err();
        assert!(other.to_string().contains("is version 0.0.1"), "{other}");
        let garbled =
            SshProxy::start(&fake("read; echo 'Welcome to the host!'; exec sleep 29.5"), "SHA256:c").await.unwrap_err();
        assert!(garbled.to_string().contains("Welcome to the host!"), "{garbled}");
        // The fakes that went on waiting were killed: none is left running.
        let left: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
            .filter(|cmdline| cmdline.as_slice() == b"sleep\x0029.5\x00")
            .map(|cmdline| String::from_utf8_lossy(&cmdline).into_owned())
            .collect();
        assert!(left.is_empty(), "left running: {left:?}");
    }

    /// A fake `ssh` that runs the remote command here with `sh`, the host's cache in `cache`.
    fn local_ssh(cache: &Path) -> Vec<String> {
        let script = format!(
            "export XDG_CACHE_HOME={}; exec sh -c \"${{@: -1}}\"",
            shell_words::quote(&cache.to_string_lossy())
        );
        vec!["bash".into(), "-c".into(), script, "fake-ssh".into()]
    }

    fn uname() -> String {
        let out = std::process::Command::new("uname").arg("-sm").output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn local_file(dir: &Path, bytes: &[u8], id: &str) -> LocalProxy {
        let path = dir.join(format!("local-{id}"));
        std::fs::write(&path, bytes).unwrap();
        let sha256 = sha256_of(&path).unwrap();
        LocalProxy { path, size: bytes.len() as u64, id: id.into(), system: uname(), sha256 }
    }

    /// The copy is the file's exact bytes, executable, renamed into place; a host of another
    /// system or a copy cut short leaves nothing there.
    #[tokio::test]
    async fn a_copy_lands_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("host-cache");
        let target = SshTarget { ssh: local_ssh(&cache), ..sample() };
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let local = local_file(dir.path(), &bytes, "t-1");
        copy_to_host(&target, &local).await.unwrap();
        let copied = cache.join("posh/posh-proxy-t-1");
        assert!(std::fs::read(&copied).unwrap() == bytes);
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&copied).unwrap().permissions().mode() & 0o777, 0o755);
        assert_eq!(std::fs::metadata(cache.join("posh")).unwrap().permissions().mode() & 0o777, 0o700);

        let other = LocalProxy { system: "Plan9 mips".into(), id: "t-2".into(), ..local.clone() };
        let why = copy_to_host(&target, &other).await.unwrap_err();
        assert!(why.contains(&format!("posh: this host is {}, not Plan9 mips", uname())), "{why}");
        let short = LocalProxy { size: local.size + 10, id: "t-3".into(), ..local.clone() };
        let why = copy_to_host(&target, &short).await.unwrap_err();
        assert!(why.contains("posh: the copy was cut short") && why.contains("exit status: 92"), "{why}");
        let mut left: Vec<String> = std::fs::read_dir(cache.join("posh"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["posh-proxy-t-1"]);
    }

    /// A host without posh-proxy gets this machine's, which the second start runs; the next
    /// start runs the copy at once.
    #[tokio::test]
    async fn a_missing_proxy_is_copied_and_started() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("host-cache");
        let greeting = format!(r#"{{"posh_proxy":"{VERSION}","listen":"127.0.0.1:4433","fingerprint":"SHA256:p"}}"#);
        // A stand-in for posh-proxy: it must be started with --over-ssh and the export.
        let proxy = format!(
            "#!/bin/sh\n[ \"$1 $2 $3\" = '--over-ssh --export /srv/my logs' ] || exit 3\nread -r line\necho '{greeting}'\nexec cat > /dev/null\n"
        );
        let local = local_file(dir.path(), proxy.as_bytes(), "t-9");
        let target = SshTarget {
            ssh: local_ssh(&cache),
            program: "no-such-posh-proxy".into(),
            copy: Some(local.clone()),
            ..sample()
        };
        let started = SshProxy::start(&target, "SHA256:c").await.unwrap();
        assert_eq!(started.fingerprint, "SHA256:p");
        started.shutdown(Duration::from_secs(5)).await;
        assert!(cache.join("posh/posh-proxy-t-9").exists());
        // The copy is there: no second copy (its file is not read again).
        std::fs::remove_file(&local.path).unwrap();
        let again = SshProxy::start(&target, "SHA256:c").await.unwrap();
        again.shutdown(Duration::from_secs(5)).await;
        // Without a copy allowed, a missing program is the error it was.
        let none = SshTarget { copy: None, ..target };
        assert!(matches!(SshProxy::start(&none, "SHA256:c").await, Err(SshError::Missing { .. })));
    }

    /// Issue 37: a copy replaced on the host by other bytes of the same length (and mode) is
    /// not run: its SHA-256 is not this build's, so the start passes it over, finds no other
    /// posh-proxy there and copies this build's over it, which then runs.
    #[tokio::test]
    async fn a_copy_replaced_by_other_bytes_of_its_length_is_not_run_but_copied_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("host-cache");
        let marker = dir.path().join("replacement-ran");
        let greeting = format!(r#"{{"posh_proxy":"{VERSION}","listen":"127.0.0.1:4433","fingerprint":"SHA256:p"}}"#);
        let greet = format!("read -r line\necho '{greeting}'\nexec cat > /dev/null\n");
        // Room at its end for the replacement's longer first lines.
        let proxy = format!("#!/bin/sh\n{greet}{}\n", "#".repeat(400));
        let local = local_file(dir.path(), proxy.as_bytes(), "t-10");
        let target = SshTarget {
            ssh: local_ssh(&cache),
            program: "no-such-posh-proxy".into(),
            copy: Some(local.clone()),
            ..sample()
        };
        SshProxy::start(&target, "SHA256:c").await.unwrap().shutdown(Duration::from_secs(5)).await;
        let copy = cache.join("posh/posh-proxy-t-10");
        let mut replacement = format!("#!/bin/sh\ntouch {}\n{greet}#", marker.display()).into_bytes();
        assert!(replacement.len() < proxy.len(), "the test's replacement fits in the copy's length");
        replacement.resize(proxy.len() - 1, b'#');
        replacement.push(b'\n');
        std::fs::write(&copy, &replacement).unwrap();

        SshProxy::start(&target, "SHA256:c").await.unwrap().shutdown(Duration::from_secs(5)).await;
        assert!(!marker.exists(), "the replaced copy ran");
        assert_eq!(std::fs::read(&copy).unwrap(), proxy.as_bytes(), "this build's bytes were copied again");
        // Bytes changed on their way are not put in place either.
        let changed = LocalProxy { sha256: "0".repeat(64), id: "t-11".into(), ..local };
        let why = copy_to_host(&target, &changed).await.unwrap_err();
        assert!(why.contains("posh: the copy is not this build's bytes") && why.contains("exit status: 93"), "{why}");
        assert!(!cache.join("posh/posh-proxy-t-11").exists());
    }

    #[tokio::test]
    async fn a_proxy_that_greets_is_started_and_shut_down_by_closing_its_input() {
        let greeting = format!(r#"{{"posh_proxy":"{VERSION}","listen":"127.0.0.1:4433","fingerprint":"SHA256:p"}}"#);
        let script = format!(
            r#"read -r line; case $line in *'"client":"SHA256:c"'*) echo '{greeting}';; esac; cat > /dev/null; exit 0"#
        );
        let target = SshTarget { ssh: vec!["bash".into(), "-c".into(), script, "fake-ssh".into()], ..sample() };
        let proxy = SshProxy::start(&target, "SHA256:c").await.unwrap();
        assert_eq!((proxy.listen, proxy.fingerprint.as_str()), ("127.0.0.1:4433".parse().unwrap(), "SHA256:p"));
        let started = std::time::Instant::now();
        proxy.shutdown(Duration::from_secs(5)).await;
        assert!(started.elapsed() < Duration::from_secs(2), "ended by its input, not killed");
    }
}
