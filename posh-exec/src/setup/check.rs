//! `posh-exec --check`: for each mount of a posh.toml, whether its proxy answers, who it is (the
//! certificate pinned for it), whether it sees the files the client sees, and how fast the link
//! is; [`render`] makes the table and the notes under it.
//!
//! [`connect_remote`] reaches a proxy the way a run does (its certificate pinned in the
//! known-proxies file, recorded on first use), bounded in time, and tells a closed port at once;
//! [`connect_over_ssh`] starts an `ssh://` mount's proxy through ssh as a run does, and ends it
//! after the check;
//! [`check_connected`] then asks it, over the protocol runs use: an empty question (the round
//! trip), a listing (a sample file's size as the proxy sees it), a job `sha256sum` (its content)
//! and a job `seq` (about 15 MB streamed back: the bandwidth). No message was added for the check:
//! the listing and the jobs are what a run's plans and pipelines already ask, so a proxy that
//! passes serves runs too.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin as StdPin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use posh_core::config::{Link, Mount, ProxyAddress, format_bandwidth, format_rtt};

use super::probe::{self, Isolation};
use super::{round_bandwidth, round_rtt};
use crate::remote::client::{Connection, KnownProxies, Pin, PinMismatch, StartError, Traffic};
use crate::remote::identity::Identity;
use crate::remote::protocol::{self, Answer, JobCommand, Question, Request};
use crate::remote::ssh::{SshError, SshProxy, SshTarget};

/// How long each step may take, and how much it looks at.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Resolving the proxy's host and the QUIC handshake.
    pub connect: Duration,
    /// Empty questions timed for the round trip.
    pub pings: u32,
    /// One question or small job.
    pub request: Duration,
    /// Looking for a sample file at the client: entries and time; its size at most.
    pub sample_entries: usize,
    pub sample_within: Duration,
    pub sample_at_most: u64,
    /// `seq 1 N` streamed back for the bandwidth, for at most `stream_within` (on a slow link,
    /// what came by then gives the rate).
    pub stream_count: u64,
    pub stream_within: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connect: Duration::from_secs(3),
            pings: 5,
            request: Duration::from_secs(5),
            sample_entries: 2000,
            sample_within: Duration::from_secs(2),
            sample_at_most: 1 << 20,
            // About 15 MB of output: enough for QUIC's window to open on a WAN link (at 20 ms and
            // 600 Mbit/s, 4 MB ended while it still grew).
            stream_count: 2_000_000,
            stream_within: Duration::from_secs(3),
        }
    }
}

/// Who answered at a mount's proxy address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Who {
    /// It presented the certificate recorded for its address in `file`.
    Pinned { fingerprint: String, file: PathBuf },
    /// Met for the first time: its certificate is now recorded in `file` (trust on first use).
    PinnedNow { fingerprint: String, file: PathBuf },
    /// The run's own in-process proxy, whose certificate the client made.
    Embedded { fingerprint: String },
    /// A proxy started through ssh for the check: the one-time key it gave over the channel of
    /// `command` (ssh checked the host against the user's known_hosts).
    OverSsh { fingerprint: String, command: String },
    /// Another certificate than the one pinned.
    Mismatch { got: String, expected: String },
    /// Not reached.
    Unknown,
}

/// A file as one end sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Relative to the mount.
    pub path: PathBuf,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

/// Whether the proxy's export shows what the client's mount shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportCheck {
    /// Not looked at (an earlier step failed).
    NotChecked,
    /// The sample reads the same at both ends.
    Same(Sample),
    /// The mount holds no file to compare among the entries looked at.
    NothingToCompare { visited: usize },
    /// The sample is missing or different at the proxy (the failure says how).
    Differs,
}

/// The link as measured through the proxy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measures {
    /// The shortest round trip of an empty question, of `pings`.
    pub rtt: Option<(Duration, u32)>,
    /// Bytes of `seq` output in the second half of the stream, and the time they took.
    pub stream: Option<(u64, Duration)>,
}

impl Measures {
    pub fn bandwidth(&self) -> Option<f64> {
        self.stream.map(|(bytes, took)| bytes as f64 / took.as_secs_f64().max(1e-9))
    }
}

/// Why a mount failed its check; [`Failure::advice`] says what to do.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("cannot resolve the proxy's host in {proxy}: {why}")]
    Resolve { proxy: String, why: String },
    #[error("nothing listens at {proxy}: its host answered that UDP port {} is closed", addr.port())]
    PortClosed { proxy: String, addr: SocketAddr },
    #[error("no answer from {proxy} within {}", format_rtt(*waited))]
    NoAnswer { proxy: String, waited: Duration },
    #[error("cannot connect to {proxy}: {why}")]
    Connect { proxy: String, why: String },
    #[error("{0}")]
    Mismatch(PinMismatch),
    #[error("{proxy} does not serve this client: {reason}")]
    NotAuthorized { proxy: String, reason: String },
    #[error("{proxy} refused {what}: {reason}")]
    Refused { proxy: String, what: String, reason: String },
    #[error("{proxy} ran `{what}` with status {status}: {stderr}")]
    Command { proxy: String, what: String, status: i32, stderr: String },
    #[error("lost {proxy} while {doing}: {why}")]
    Lost { proxy: String, doing: &'static str, why: String },
    #[error("the client's {path} does not answer: {why}")]
    ClientView { path: PathBuf, why: String },
    #[error("the proxy's export has no regular file `{}`, which the client sees at {} ({size} bytes){}", sample.display(), client_path.display(), detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Missing { sample: PathBuf, client_path: PathBuf, size: u64, detail: Option<String> },
    #[error("`{}` differs: {size_and_hash_at_client} at the client, {size_and_hash_at_proxy} at the proxy", sample.display())]
    Differs { sample: PathBuf, size_and_hash_at_client: String, size_and_hash_at_proxy: String },
    #[error("cannot start the embedded proxy: {why}")]
    Embedded { why: String },
    /// Starting the proxy through ssh failed (the error names the mount and the ssh command).
    #[error("{0}")]
    Ssh(SshError),
    #[error("the proxy started through ssh listens on {listen} (UDP), which this client cannot reach: {why}")]
    Unreachable { listen: SocketAddr, why: String },
}

impl Failure {
    /// What to do about it. `config` is the posh.toml checked; `client` this client's
    /// fingerprint.
    pub fn advice(&self, mount: &Mount, config: &Path, client: &str) -> String {
        let config = config.display();
        let over_ssh = match &mount.proxy {
            ProxyAddress::Ssh { user, host, port } => Some(format!(
                "ssh{} {}{host} true",
                port.map(|p| format!(" -p {p}")).unwrap_or_default(),
                user.as_deref().map(|u| format!("{u}@")).unwrap_or_default()
            )),
            ProxyAddress::Remote { .. } | ProxyAddress::Embedded => None,
        };
        match self {
            Failure::Resolve { .. } => format!("correct the host of `proxy` of mount `{}` in {config}", mount.name),
            Failure::PortClosed { .. } | Failure::NoAnswer { .. } | Failure::Connect { .. } if over_ssh.is_some() => {
                "the proxy started through ssh stopped answering: see the host's load and its messages \
                 (`posh-exec -v --check`), and run the check again"
                    .to_string()
            }
            Failure::PortClosed { .. } | Failure::NoAnswer { .. } | Failure::Connect { .. } => {
                let port = match &mount.proxy {
                    ProxyAddress::Remote { port, .. } => *port,
                    ProxyAddress::Embedded | ProxyAddress::Ssh { .. } => 0,
                };
                format!(
                    "start posh-proxy on that host (`posh-proxy --export {} --listen 0.0.0.0:{port}`) and let UDP port \
                     {port} through its firewall, or set `proxy` of mount `{}` in {config} to where it listens",
                    mount.export.display(),
                    mount.name
                )
            }
            Failure::Mismatch(mismatch) => match &mismatch.known_proxies {
                Some(file) => format!(
                    "if that proxy's key was replaced on purpose (a new --state-dir, a reinstall), remove the line \
                     of {} from {}; otherwise another machine answers at that address",
                    mismatch.addr,
                    file.display()
                ),
                None => "another process answers at the embedded proxy's address".to_string(),
            },
            Failure::NotAuthorized { .. } => format!(
                "add this client's fingerprint {client} (`posh-exec --print-identity`) to the proxy's \
                 authorized-clients file (STATE_DIR/authorized-clients, read again for every connection)"
            ),
            Failure::Refused { reason, .. } if reason == "busy" => {
                "the proxy has no free slot: try again, or raise its --max-jobs".to_string()
            }
            Failure::Refused { .. } | Failure::Command { .. } => {
                "see the proxy's log; a proxy of another posh version may not know the command".to_string()
            }
            Failure::Lost { .. } => "see the proxy's log: it closed the connection or went away".to_string(),
            Failure::ClientView { .. } => format!(
                "see that the filesystem is mounted at {} (`findmnt {0}`) and that its server answers (a hung \
                 sshfs or NFS mount answers nothing), or correct `path` of mount `{}` in {config}",
                mount.path.display(),
                mount.name
            ),
            Failure::Missing { .. } | Failure::Differs { .. } => format!(
                "the proxy must export the directory the client sees at {}: start posh-proxy with --export set \
                 to it (`export` in {config} says {}), and see that the client's mount is of that server",
                mount.path.display(),
                mount.export.display()
            ),
            Failure::Embedded { .. } => format!(
                "an embedded proxy serves {} from this machine: it must be a directory here",
                mount.export.display()
            ),
            Failure::Ssh(error) => {
                let login = over_ssh.as_deref().unwrap_or("ssh HOST true");
                match error {
                    SshError::BadSshCommand { .. } => format!(
                        "correct ${}: a command line, split as a shell splits it (`ssh -F ~/.ssh/other`)",
                        crate::remote::ssh::SSH_COMMAND_VAR
                    ),
                    SshError::Spawn { .. } => format!(
                        "install an ssh client (OpenSSH's `ssh`) or set ${} to one",
                        crate::remote::ssh::SSH_COMMAND_VAR
                    ),
                    SshError::Missing { .. } | SshError::Version { .. } | SshError::NotCopied { .. } => format!(
                        "install posh-proxy {} on the host; if it is there but not on the PATH of a \
                         non-interactive login (`~/.cargo/bin` often is not), set `proxy_program` of mount `{}` in \
                         {config} to its path",
                        crate::remote::ssh::VERSION,
                        mount.name
                    ),
                    SshError::Login { .. } => format!(
                        "see that `{login}` logs in without a question: a key in your ssh-agent, the host's key in \
                         known_hosts (without a terminal posh-exec runs ssh with BatchMode=yes, which asks nothing)"
                    ),
                    SshError::Timeout { .. } => format!(
                        "see that `{login}` answers; without a terminal ssh cannot ask for a passphrase: add the key \
                         to your ssh-agent"
                    ),
                    SshError::Ended { .. } | SshError::Garbled { .. } => format!(
                        "run the ssh command shown by hand to see what the host says (a login script that prints \
                         to standard output garbles the greeting); `export` of mount `{}` in {config} must be a \
                         directory on the host",
                        mount.name
                    ),
                    SshError::Refused { .. } => format!(
                        "the proxy said why it would not serve; see `export` of mount `{}` in {config}",
                        mount.name
                    ),
                    SshError::Channel { .. } => "ssh's pipes failed: run the check again".to_string(),
                }
            }
            Failure::Unreachable { listen, .. } => format!(
                "the proxy listens on the address your ssh connection reached ({}), on a UDP port of its choice: \
                 let UDP to that host through its firewall; a host reached only through a jump host or NAT \
                 cannot serve posh this way: run posh-proxy there with a fixed --listen and set `proxy` to an \
                 address this client reaches",
                listen.ip()
            ),
        }
    }
}

/// One mount's check.
#[derive(Debug)]
pub struct Report {
    pub mount: Mount,
    pub who: Who,
    pub export: ExportCheck,
    pub measures: Measures,
    pub failure: Option<Failure>,
}

impl Report {
    /// A mount whose proxy was not reached.
    pub fn unreached(mount: &Mount, failure: Failure) -> Report {
        let who = match &failure {
            Failure::Mismatch(m) => Who::Mismatch { got: m.got.clone(), expected: m.expected.clone() },
            _ => Who::Unknown,
        };
        Report {
            mount: mount.clone(),
            who,
            export: ExportCheck::NotChecked,
            measures: Measures { rtt: None, stream: None },
            failure: Some(failure),
        }
    }
}

/// Connects to the proxy `proxy` (`host:port`) as `identity`, its certificate pinned in `known`
/// (recorded there on first use, as a run does), within `limits.connect`. A host that answers
/// that the UDP port is closed fails at once.
pub async fn connect_remote(
    proxy: &str,
    identity: &Identity,
    known: &KnownProxies,
    limits: &Limits,
) -> Result<(Connection, Who), Failure> {
    let expected =
        known.lookup(proxy).map_err(|e| Failure::Connect { proxy: proxy.to_string(), why: format!("{e:#}") })?;
    let resolved = tokio::time::timeout(limits.connect, tokio::net::lookup_host(proxy)).await;
    let addr = match resolved {
        Err(_) => return Err(Failure::NoAnswer { proxy: proxy.to_string(), waited: limits.connect }),
        Ok(Err(e)) => return Err(Failure::Resolve { proxy: proxy.to_string(), why: protocol::os_message(&e) }),
        Ok(Ok(mut addrs)) => addrs.next().ok_or_else(|| Failure::Resolve {
            proxy: proxy.to_string(),
            why: "it resolves to no address".to_string(),
        })?,
    };
    let connecting =
        tokio::time::timeout(limits.connect, crate::remote::connect_pinned(proxy, identity, Pin::Known(known)));
    let connected = tokio::select! {
        connected = connecting => connected,
        () = udp_port_closed(addr) => return Err(Failure::PortClosed { proxy: proxy.to_string(), addr }),
    };
    let connection = match connected {
        Err(_) => return Err(Failure::NoAnswer { proxy: proxy.to_string(), waited: limits.connect }),
        Ok(Err(e)) => {
            return Err(match e.downcast::<PinMismatch>() {
                Ok(mismatch) => Failure::Mismatch(mismatch),
                Err(e) => Failure::Connect { proxy: proxy.to_string(), why: format!("{e:#}") },
            });
        }
        Ok(Ok(connection)) => connection,
    };
    let fingerprint = connection.fingerprint().to_string();
    let file = known.path().to_path_buf();
    let who = if expected.is_some() { Who::Pinned { fingerprint, file } } else { Who::PinnedNow { fingerprint, file } };
    Ok((connection, who))
}

/// Starts the proxy of `target` through ssh, as a run does, and connects to it pinned to the
/// fingerprint it gave over the channel, within `limits.connect` (the login has ssh's own time,
/// `target.timeout`). The started proxy comes back with the connection: it lives until
/// [`SshProxy::shutdown`], and is ended here when the connection fails.
pub async fn connect_over_ssh(
    target: &SshTarget,
    identity: &Identity,
    limits: &Limits,
) -> Result<(Connection, Who, SshProxy), Failure> {
    let started = SshProxy::start(target, identity.fingerprint()).await.map_err(Failure::Ssh)?;
    let listen = started.listen;
    let address = listen.to_string();
    let connecting = tokio::time::timeout(
        limits.connect,
        crate::remote::connect_pinned(&address, identity, Pin::Exactly(&started.fingerprint)),
    );
    let connected = tokio::select! {
        connected = connecting => match connected {
            Err(_) => Err(Failure::Unreachable { listen, why: format!("no answer within {}", format_rtt(limits.connect)) }),
            Ok(Err(e)) => Err(match e.downcast::<PinMismatch>() {
                Ok(mismatch) => Failure::Mismatch(mismatch),
                Err(e) => Failure::Unreachable { listen, why: format!("{e:#}") },
            }),
            Ok(Ok(connection)) => Ok(connection),
        },
        () = udp_port_closed(listen) => {
            Err(Failure::Unreachable { listen, why: "its host answered that the port is closed".to_string() })
        }
    };
    match connected {
        Ok(connection) => {
            let who = Who::OverSsh { fingerprint: started.fingerprint.clone(), command: started.command().to_string() };
            Ok((connection, who, started))
        }
        Err(failure) => {
            started.shutdown(Duration::ZERO).await;
            Err(failure)
        }
    }
}

/// Completes once the host at `addr` answers that its UDP port is closed (an ICMP "port
/// unreachable", which Linux reports on a connected UDP socket as ECONNREFUSED): empty datagrams
/// go there every 250 ms (a proxy listening there drops them). Never completes otherwise.
async fn udp_port_closed(addr: SocketAddr) {
    let bind = if addr.is_ipv6() { "[::]:0" } else { "0.0.0.0:0" };
    let socket = match tokio::net::UdpSocket::bind(bind).await {
        Ok(socket) if socket.connect(addr).await.is_ok() => socket,
        _ => return std::future::pending().await,
    };
    let refused = |e: &std::io::Error| e.kind() == std::io::ErrorKind::ConnectionRefused;
    let mut buffer = [0u8; 64];
    loop {
        if socket.send(&[]).await.as_ref().is_err_and(refused) {
            return;
        }
        if let Ok(Err(e)) = tokio::time::timeout(Duration::from_millis(250), socket.recv(&mut buffer)).await
            && refused(&e)
        {
            return;
        }
    }
}

/// Checks a mount whose proxy answered on `connection`: the round trip, a sample file at both
/// ends (read at the client as `isolation` says), the bandwidth; stops at the first failure.
pub async fn check_connected(
    connection: &Connection,
    mount: &Mount,
    who: Who,
    limits: &Limits,
    isolation: &Isolation,
) -> Report {
    let mut report = Report {
        mount: mount.clone(),
        who,
        export: ExportCheck::NotChecked,
        measures: Measures { rtt: None, stream: None },
        failure: None,
    };
    let traffic = Traffic::default();
    let proxy = connection.addr().to_string();
    // The round trip: the shortest of a few empty questions.
    let mut shortest: Option<Duration> = None;
    let empty = Question::EndsWithNewline(Vec::new());
    for _ in 0..limits.pings {
        let started = Instant::now();
        match tokio::time::timeout(limits.request, connection.ask(&empty, &traffic)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                report.failure = Some(failed(connection, "asking an empty question", "an empty question", &e));
                return report;
            }
            Err(_) => {
                report.failure = Some(Failure::NoAnswer { proxy, waited: limits.request });
                return report;
            }
        }
        let took = started.elapsed();
        shortest = Some(shortest.map_or(took, |s| s.min(took)));
    }
    report.measures.rtt = shortest.map(|rtt| (rtt, limits.pings));
    match compare_sample(connection, mount, limits, isolation, &traffic).await {
        Ok(export) => report.export = export,
        Err(failure) => {
            if matches!(failure, Failure::Missing { .. } | Failure::Differs { .. }) {
                report.export = ExportCheck::Differs;
            }
            report.failure = Some(failure);
            return report;
        }
    }
    match stream_rate(connection, limits, &traffic).await {
        Ok(stream) => report.measures.stream = Some(stream),
        Err(failure) => report.failure = Some(failure),
    }
    report
}

/// The failure of a request on `connection`: a connection that closed (for a client the proxy
/// does not serve, say), or the proxy's refusal.
fn failed(connection: &Connection, doing: &'static str, what: &str, error: &anyhow::Error) -> Failure {
    let proxy = connection.addr().to_string();
    match connection.close_reason() {
        Some(quinn::ConnectionError::ApplicationClosed(close))
            if close.error_code == quinn::VarInt::from_u32(protocol::CLOSE_NOT_AUTHORIZED) =>
        {
            Failure::NotAuthorized { proxy, reason: String::from_utf8_lossy(&close.reason).into_owned() }
        }
        Some(reason) => Failure::Lost { proxy, doing, why: reason.to_string() },
        None => match error.downcast_ref::<StartError>() {
            Some(StartError::Refused { reason, .. }) => {
                Failure::Refused { proxy, what: what.to_string(), reason: reason.clone() }
            }
            _ => Failure::Refused { proxy, what: what.to_string(), reason: format!("{error:#}") },
        },
    }
}

/// Picks a small file under the mount at the client and compares it with the proxy's: its size
/// in the proxy's listing of its directory, its content by a `sha256sum` job.
async fn compare_sample(
    connection: &Connection,
    mount: &Mount,
    limits: &Limits,
    isolation: &Isolation,
    traffic: &Traffic,
) -> Result<ExportCheck, Failure> {
    let root = mount.path.clone();
    let (entries, within, at_most) = (limits.sample_entries, limits.sample_within, limits.sample_at_most);
    let client_view = |why: String| Failure::ClientView { path: mount.path.clone(), why };
    let searching = isolation.clone();
    let found = tokio::task::spawn_blocking(move || probe::find_files(&searching, &root, entries, at_most, within))
        .await
        .map_err(|e| client_view(e.to_string()))?
        .map_err(|e| client_view(e.to_string()))?;
    let Some(file) = found.sample else {
        return Ok(ExportCheck::NothingToCompare { visited: found.visited });
    };
    let client_path = mount.path.join(&file.path);
    let hashed_path = client_path.clone();
    let hashing = isolation.clone();
    let (size, sha256) = tokio::task::spawn_blocking(move || probe::sha256_file(&hashing, &hashed_path, within))
        .await
        .map_err(|e| client_view(e.to_string()))?
        .map_err(|e| client_view(e.to_string()))?;
    let client = Sample { path: file.path.clone(), size, sha256 };
    // Plain UTF-8 names (see `probe::find_files`).
    let name = file.path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
    let dir = file.path.parent().and_then(Path::to_str).unwrap_or_default().to_string();
    let proxy = connection.addr().to_string();
    let missing = |detail: Option<String>| Failure::Missing {
        sample: file.path.clone(),
        client_path: client_path.clone(),
        size,
        detail,
    };

    let listing = tokio::time::timeout(limits.request, connection.ask(&Question::List(dir.clone()), traffic)).await;
    let proxy_size = match listing {
        Err(_) => return Err(Failure::NoAnswer { proxy, waited: limits.request }),
        Ok(Err(e)) if connection.close_reason().is_some() => {
            return Err(failed(connection, "listing the sample's directory", "a listing", &e));
        }
        // A directory missing beneath the export is refused by name.
        Ok(Err(e)) => return Err(missing(Some(format!("{e:#}")))),
        Ok(Ok(Answer::Listing { files, .. })) => match files.iter().find(|(n, _)| *n == name) {
            Some(&(_, size)) => size,
            None => return Err(missing(None)),
        },
        Ok(Ok(other)) => {
            return Err(Failure::Refused {
                proxy,
                what: "a listing".to_string(),
                reason: format!("answered {other:?}"),
            });
        }
    };

    let request = Request {
        version: protocol::VERSION,
        cwd: dir,
        commands: vec![JobCommand {
            argv: vec!["sha256sum".to_string(), name],
            files: vec![1],
            ..JobCommand::default()
        }],
        ..Request::default()
    };
    let what = format!("sha256sum {}", file.path.display());
    let output = match tokio::time::timeout(limits.request, connection.run(&request, b"")).await {
        Err(_) => return Err(Failure::NoAnswer { proxy, waited: limits.request }),
        Ok(Err(e)) => return Err(failed(connection, "hashing the sample", &format!("`{what}`"), &e)),
        Ok(Ok(output)) => output,
    };
    if output.status != 0 {
        return Err(Failure::Command {
            proxy,
            what,
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim_end().to_string(),
        });
    }
    let proxy_hash = String::from_utf8_lossy(&output.stdout).get(..64).unwrap_or_default().to_string();
    if !proxy_hash.bytes().all(|b| b.is_ascii_hexdigit()) || proxy_hash.len() != 64 {
        return Err(Failure::Command {
            proxy,
            what,
            status: 0,
            stderr: format!("unexpected output {:?}", String::from_utf8_lossy(&output.stdout)),
        });
    }
    if proxy_size != client.size || proxy_hash != client.sha256 {
        return Err(Failure::Differs {
            sample: file.path.clone(),
            size_and_hash_at_client: size_and_hash(client.size, &client.sha256),
            size_and_hash_at_proxy: size_and_hash(proxy_size, &proxy_hash),
        });
    }
    Ok(ExportCheck::Same(client))
}

fn size_and_hash(size: u64, sha256: &str) -> String {
    format!("{size} bytes, sha256 {}", short(sha256))
}

/// The first 16 hex digits of a digest.
fn short(sha256: &str) -> &str {
    sha256.get(..16).unwrap_or(sha256)
}

/// Streams `seq 1 N` from the proxy and times its second half: the first carries the job's
/// start, a round trip and the congestion window's growth.
async fn stream_rate(connection: &Connection, limits: &Limits, traffic: &Traffic) -> Result<(u64, Duration), Failure> {
    let count = limits.stream_count.to_string();
    let request = Request::new(&["seq", "1", &count]);
    let mut counted = Counted::default();
    let mut stderr = Vec::new();
    let streamed = tokio::time::timeout(
        limits.stream_within,
        connection.run_job(&request, None::<tokio::io::Empty>, &mut counted, &mut stderr, traffic),
    )
    .await;
    let what = format!("seq 1 {count}");
    match streamed {
        // Out of time: what came so far may do.
        Err(_) => {}
        Ok(Err(e)) => return Err(failed(connection, "streaming `seq` output", &format!("`{what}`"), &e)),
        Ok(Ok(ended)) => {
            let status = ended.commands.last().map_or(0, protocol::Exit::status);
            if status != 0 {
                return Err(Failure::Command {
                    proxy: connection.addr().to_string(),
                    what,
                    status,
                    stderr: String::from_utf8_lossy(&stderr).trim_end().to_string(),
                });
            }
        }
    }
    // Nothing after the first write within the time: the stream stalled.
    counted
        .second_half()
        .ok_or_else(|| Failure::NoAnswer { proxy: connection.addr().to_string(), waited: limits.stream_within })
}

/// Counts what is written to it: after each write, when, and the bytes so far.
#[derive(Debug, Default)]
struct Counted {
    writes: Vec<(Instant, u64)>,
}

impl Counted {
    /// The bytes written after the write that passed half of them, and the time from that write
    /// to the last; from the first write when that is the last.
    fn second_half(&self) -> Option<(u64, Duration)> {
        let &(last_at, total) = self.writes.last()?;
        let half = self.writes.iter().position(|&(_, bytes)| bytes >= total / 2)?;
        let from = if half + 1 < self.writes.len() { half } else { 0 };
        let (from_at, from_bytes) = self.writes[from];
        let took = last_at.checked_duration_since(from_at)?;
        (!took.is_zero()).then_some((total - from_bytes, took))
    }
}

impl tokio::io::AsyncWrite for Counted {
    fn poll_write(mut self: StdPin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let total = self.writes.last().map_or(0, |&(_, bytes)| bytes) + buf.len() as u64;
        self.writes.push((Instant::now(), total));
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: StdPin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: StdPin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The table of `reports`, then a few lines per mount: what was seen, and for a failure why and
/// what to do. `config` is the checked file; `client` this client's fingerprint.
pub fn render(reports: &[Report], config: &Path, client: &str) -> String {
    let header = ["MOUNT", "PROXY", "IDENTITY", "EXPORT", "RTT", "BANDWIDTH", "RESULT"];
    let rows: Vec<[String; 7]> = reports
        .iter()
        .map(|report| {
            let identity = match &report.who {
                Who::Pinned { .. } => "pinned",
                Who::PinnedNow { .. } => "pinned now",
                Who::Embedded { .. } => "embedded",
                Who::OverSsh { .. } => "over ssh",
                Who::Mismatch { .. } => "MISMATCH",
                Who::Unknown => "-",
            };
            let export = match &report.export {
                ExportCheck::NotChecked => "-",
                ExportCheck::Same(_) => "same",
                ExportCheck::NothingToCompare { .. } => "no file",
                ExportCheck::Differs => "DIFFERS",
            };
            let dash = || "-".to_string();
            [
                report.mount.name.clone(),
                report.mount.proxy.to_string(),
                identity.to_string(),
                export.to_string(),
                report.measures.rtt.map_or_else(dash, |(rtt, _)| format_rtt(round_rtt(rtt))),
                report.measures.bandwidth().map_or_else(dash, |rate| format_bandwidth(round_bandwidth(rate))),
                if report.failure.is_some() { "FAILED" } else { "ok" }.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[&str], out: &mut String| {
        let mut text = String::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            // RTT and BANDWIDTH are numbers: right-aligned.
            if i == 4 || i == 5 {
                let _ = write!(text, "{cell:>width$}  ");
            } else {
                let _ = write!(text, "{cell:<width$}  ");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&header, &mut out);
    for row in &rows {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>(), &mut out);
    }
    for report in reports {
        out.push('\n');
        out.push_str(&details(report, config, client));
    }
    out
}

/// What the check saw of one mount, and for a failure why and what to do.
fn details(report: &Report, config: &Path, client: &str) -> String {
    let mut out = String::new();
    let mount = &report.mount;
    match &report.failure {
        None => {
            let _ = writeln!(out, "{}: ok", mount.name);
        }
        Some(failure) => {
            let _ = writeln!(out, "{}: FAILED: {failure}", mount.name);
        }
    }
    let _ = writeln!(out, "  path {}, proxy {}", mount.path.display(), mount.proxy);
    match &report.who {
        Who::Pinned { fingerprint, file } => {
            let _ = writeln!(out, "  identity {fingerprint}, as pinned in {}", file.display());
        }
        Who::PinnedNow { fingerprint, file } => {
            let _ = writeln!(
                out,
                "  identity {fingerprint}, met for the first time and now pinned in {}: compare it with the \
                 fingerprint posh-proxy printed when it started",
                file.display()
            );
        }
        Who::Embedded { fingerprint } => {
            let _ = writeln!(out, "  identity {fingerprint}, an embedded proxy started for the check");
        }
        Who::OverSsh { fingerprint, command } => {
            let _ = writeln!(
                out,
                "  identity {fingerprint}, a one-time key the proxy gave over `{command}` (ssh checked the host \
                 against your known_hosts)"
            );
        }
        Who::Mismatch { got, expected } => {
            let _ = writeln!(out, "  identity {got}, but {expected} is pinned");
        }
        Who::Unknown => {}
    }
    match &report.export {
        ExportCheck::Same(sample) => {
            let _ = writeln!(
                out,
                "  export: `{}` reads the same at both ends ({})",
                sample.path.display(),
                size_and_hash(sample.size, &sample.sha256)
            );
        }
        ExportCheck::NothingToCompare { visited } => {
            let _ = writeln!(out, "  export: not compared: no small regular file among the first {visited} entries");
        }
        ExportCheck::NotChecked | ExportCheck::Differs => {}
    }
    if let Some((rtt, pings)) = report.measures.rtt {
        let _ = writeln!(
            out,
            "  rtt {}: the shortest of {pings} round trips of an empty question",
            format_rtt(round_rtt(rtt))
        );
    }
    if let (Some(rate), Some((bytes, took))) = (report.measures.bandwidth(), report.measures.stream) {
        let _ = writeln!(
            out,
            "  bandwidth {}: the last {} MB of `seq` output from the proxy in {}",
            format_bandwidth(round_bandwidth(rate)),
            format_megabytes(bytes),
            format_rtt(round_rtt(took))
        );
    }
    if report.failure.is_none()
        && let Some(note) = estimate_note(&mount.link, &report.measures)
    {
        let _ = writeln!(out, "  note: {note}");
    }
    if let Some(failure) = &report.failure {
        let _ = writeln!(out, "  to do: {}", failure.advice(mount, config, client));
    }
    out
}

fn format_megabytes(bytes: u64) -> String {
    let text = format!("{:.2}", bytes as f64 / 1e6);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// When posh.toml's estimates are off from what was measured by more than a factor of two (and,
/// for the round trip, by more than a millisecond: the proxy's own time to answer is in the
/// measure), the values to plan with instead.
fn estimate_note(link: &Link, measures: &Measures) -> Option<String> {
    let off = |configured: f64, measured: f64| configured > 2.0 * measured || measured > 2.0 * configured;
    let rtt = measures.rtt.map(|(rtt, _)| rtt).filter(|rtt| {
        off(link.rtt.as_secs_f64(), rtt.as_secs_f64()) && link.rtt.abs_diff(*rtt) > Duration::from_millis(1)
    });
    let rate = measures.bandwidth().filter(|&rate| off(link.bandwidth_bytes_per_sec, rate));
    let mut set = Vec::new();
    if let Some(rtt) = rtt {
        set.push(format!("rtt = \"{}\"", format_rtt(round_rtt(rtt))));
    }
    if let Some(rate) = rate {
        set.push(format!("bandwidth = \"{}\"", format_bandwidth(round_bandwidth(rate))));
    }
    if set.is_empty() {
        return None;
    }
    Some(format!(
        "the plans assume rtt {} and {}, more than twice off what was measured; set {} for this mount",
        format_rtt(link.rtt),
        format_bandwidth(link.bandwidth_bytes_per_sec),
        set.join(" and ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use posh_core::config::Config;

    fn mounts() -> Vec<Mount> {
        let text = "\
[[mount]]
path = \"/mnt/logs\"
proxy = \"10.0.0.5:4433\"
export = \"/srv/logs\"
rtt = \"20ms\"
bandwidth = \"600Mbit\"

[[mount]]
path = \"/mnt/archive\"
proxy = \"10.0.0.6:4433\"

[[mount]]
path = \"/scratch\"
proxy = \"embedded\"

[[mount]]
path = \"/mnt/old\"
proxy = \"10.0.0.7:4433\"

[[mount]]
path = \"/mnt/team\"
proxy = \"10.0.0.8:4433\"
";
        Config::parse(text, Path::new("/home/u/posh.toml")).unwrap().mounts
    }

    const FP_A: &str = "SHA256:Yh8pD0pM3q0b2l2uJgJ7M0pCk1S1o0Wl3QX8n5YcT2E";
    const FP_B: &str = "SHA256:3v0F0Zr7wQw9H9yW7cS8XfW2c7eD6Q1kJm0bS3n4p5A";

    /// The table and notes of every outcome, from fixed reports: what the user reads.
    #[test]
    fn the_table_says_each_mounts_state_and_what_to_do() {
        let mounts = mounts();
        let known = PathBuf::from("/home/u/.local/state/posh/known_proxies");
        let sample = Sample { path: "2024/a.log".into(), size: 1234, sha256: "3f2a0c1d".repeat(8) };
        let reports = vec![
            Report {
                mount: mounts[0].clone(),
                who: Who::Pinned { fingerprint: FP_A.into(), file: known.clone() },
                export: ExportCheck::Same(sample),
                measures: Measures {
                    rtt: Some((Duration::from_micros(20_400), 5)),
                    stream: Some((4_000_000, Duration::from_millis(55))),
                },
                failure: None,
            },
            Report::unreached(
                &mounts[1],
                Failure::PortClosed { proxy: "10.0.0.6:4433".into(), addr: "10.0.0.6:4433".parse().unwrap() },
            ),
            Report {
                mount: mounts[2].clone(),
                who: Who::Embedded { fingerprint: FP_B.into() },
                export: ExportCheck::NothingToCompare { visited: 3 },
                measures: Measures {
                    rtt: Some((Duration::from_micros(180), 5)),
                    stream: Some((4_000_000, Duration::from_millis(8))),
                },
                failure: None,
            },
            Report {
                mount: mounts[3].clone(),
                who: Who::PinnedNow { fingerprint: FP_B.into(), file: known.clone() },
                export: ExportCheck::Differs,
                measures: Measures { rtt: Some((Duration::from_micros(900), 5)), stream: None },
                failure: Some(Failure::Differs {
                    sample: "a.log".into(),
                    size_and_hash_at_client: size_and_hash(1234, &"3f2a0c1d".repeat(8)),
                    size_and_hash_at_proxy: size_and_hash(1234, &"9e9e0c1d".repeat(8)),
                }),
            },
            Report::unreached(
                &mounts[4],
                Failure::Mismatch(PinMismatch {
                    addr: "10.0.0.8:4433".into(),
                    got: FP_B.into(),
                    expected: FP_A.into(),
                    known_proxies: Some(known),
                }),
            ),
        ];
        let client = "SHA256:cLiEnTcLiEnTcLiEnTcLiEnTcLiEnTcLiEnTcLiEnT0";
        let text = render(&reports, Path::new("/home/u/posh.toml"), client);
        insta::assert_snapshot!(text);
    }

    #[test]
    fn advice_names_the_mount_and_the_file() {
        let mounts = mounts();
        let config = Path::new("/home/u/posh.toml");
        let closed = Failure::NoAnswer { proxy: "10.0.0.6:4433".into(), waited: Duration::from_secs(3) };
        assert_eq!(closed.to_string(), "no answer from 10.0.0.6:4433 within 3 s");
        let advice = closed.advice(&mounts[1], config, "SHA256:x");
        assert!(
            advice.contains("--listen 0.0.0.0:4433") && advice.contains("`archive` in /home/u/posh.toml"),
            "{advice}"
        );
        let denied = Failure::NotAuthorized { proxy: "p".into(), reason: "no".into() };
        assert!(denied.advice(&mounts[1], config, "SHA256:x").contains("fingerprint SHA256:x"));
        assert_eq!(mounts[2].proxy, ProxyAddress::Embedded);
    }

    #[test]
    fn a_rate_is_counted_over_the_second_half() {
        let mut counted = Counted::default();
        assert_eq!(counted.second_half(), None);
        let at = Instant::now();
        let ms = |n| at + Duration::from_millis(n);
        counted.writes = vec![(ms(0), 100), (ms(50), 200)];
        // Half is passed by the last write: from the first.
        assert_eq!(counted.second_half(), Some((100, Duration::from_millis(50))));
        counted.writes = vec![(ms(0), 100), (ms(40), 300), (ms(50), 600), (ms(60), 1100)];
        assert_eq!(counted.second_half(), Some((500, Duration::from_millis(10))));
        counted.writes = vec![(ms(0), 100)];
        assert_eq!(counted.second_half(), None);
        let note = estimate_note(
            &Link { bandwidth_bytes_per_sec: 12.5e6, rtt: Duration::from_millis(10) },
            &Measures { rtt: Some((Duration::from_millis(9), 5)), stream: Some((1_000_000, Duration::from_millis(1))) },
        );
        assert_eq!(
            note.as_deref(),
            Some(
                "the plans assume rtt 10 ms and 100 Mbit/s, more than twice off what was measured; \
                 set bandwidth = \"8 Gbit/s\" for this mount"
            )
        );
        // Five times off, but by less than a millisecond: the proxy's own time to answer.
        let lan = Link { bandwidth_bytes_per_sec: 125e6, rtt: Duration::from_micros(100) };
        let measured = Measures {
            rtt: Some((Duration::from_micros(500), 5)),
            stream: Some((1_000_000, Duration::from_millis(8))),
        };
        assert_eq!(estimate_note(&lan, &measured), None);
    }
}
