//! The runtime of one script run: posh-exec starts bash on the rewritten script and stays beside
//! it, listening on a private Unix socket. Each `__run` hands its pipeline over (descriptors,
//! working directory, environment, words); the session places it, runs it with connections to
//! the proxies that stay warm for the whole run, and answers with the status.

use std::os::unix::net::{UnixListener, UnixStream};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use posh_core::config::{Config, ProxyAddress};
use posh_core::library::Library;
use posh_exec::remote::journal::Journal;
use posh_exec::remote::proxy::{self, Authorization, ProxyConfig};
use posh_exec::remote::{Connection, Identity, KnownProxies, Pin, connect, connect_pinned};
use tokio::sync::OnceCell;

use super::handoff;
use super::local::Caller;
use super::{decode, execute, placement};

/// Where the client keeps what it knows: its identity and the proxies it pinned.
#[derive(Debug, Clone)]
pub struct ClientState {
    pub identity_dir: std::path::PathBuf,
    pub known_proxies: std::path::PathBuf,
    /// Where the run's embedded proxies write down their output changes (see `remote::journal`).
    pub journal_dir: std::path::PathBuf,
}

#[derive(Debug)]
pub struct Session {
    pub config: Config,
    library: Library,
    state: ClientState,
    identity: OnceCell<Option<Identity>>,
    /// Shared by the run's embedded proxies: one journal file per process.
    journal: std::sync::OnceLock<Arc<Journal>>,
    /// One per mount: connected on first use, kept for the run; `None` after a failure (warned
    /// about once; that mount's commands then run at the client).
    connections: Vec<OnceCell<Option<Arc<Connection>>>>,
    runtime: tokio::runtime::Handle,
}

impl Session {
    async fn identity(&self) -> Option<&Identity> {
        self.identity
            .get_or_init(|| async {
                Identity::load_or_create(&self.state.identity_dir, "posh-exec")
                    .map_err(|e| eprintln!("posh-exec: {e:#}; every command runs at the client"))
                    .ok()
            })
            .await
            .as_ref()
    }

    /// The embedded proxies' journal, opened on first use, which first settles what runs killed
    /// mid-job (`kill -9`) left behind.
    fn journal(&self) -> Arc<Journal> {
        let open = || match Journal::open(&self.state.journal_dir) {
            Ok(journal) => Arc::new(journal),
            Err(e) => {
                eprintln!("posh-exec: output journal in {}: {e}", self.state.journal_dir.display());
                Arc::new(Journal::none())
            }
        };
        self.journal.get_or_init(open).clone()
    }

    /// The warm connection to mount `index`'s proxy, connecting (or starting an embedded proxy)
    /// on first use.
    pub async fn connection(&self, index: usize) -> Option<Arc<Connection>> {
        self.connections[index]
            .get_or_init(|| async {
                let mount = &self.config.mounts[index];
                let identity = self.identity().await?;
                let connected = match &mount.proxy {
                    ProxyAddress::Remote { .. } => {
                        let known = KnownProxies::new(&self.state.known_proxies);
                        connect(&mount.proxy.to_string(), identity, &known).await
                    }
                    ProxyAddress::Embedded => start_embedded(mount, identity, &self.library, self.journal()).await,
                };
                match connected {
                    Ok(connection) => Some(Arc::new(connection)),
                    Err(e) => {
                        eprintln!("posh-exec: mount {}: {e:#}; its commands run at the client", mount.name);
                        None
                    }
                }
            })
            .await
            .clone()
    }

    /// Runs one handed-over pipeline and answers with its status.
    fn serve(self: &Arc<Session>, stream: UnixStream) {
        let handoff::Handoff { fds, cwd, env, args } = match handoff::receive(&stream) {
            Ok(handoff) => handoff,
            Err(e) => {
                eprintln!("posh-exec: a pipeline could not be handed over: {e}");
                return;
            }
        };
        let call = decode(&args).map(|call| {
            let units = placement::place(&self.library, &self.config, &call, &cwd, &env);
            (call, units)
        });
        let caller = Caller { fds, cwd: Some(cwd), env: Some(env) };
        let status = match call {
            Ok((call, units)) => {
                let run = execute::execute(Some(self), &call, &caller, &units);
                // The caller gone (killed, Ctrl-C) ends the pipeline: its jobs are dropped.
                let gone = wait_until_closed(&stream);
                self.runtime.block_on(async {
                    tokio::select! {
                        status = run => status,
                        () = gone => 130,
                    }
                })
            }
            Err(e) => {
                caller.warn(&format!("internal call: {e}"));
                2
            }
        };
        use std::io::Write as _;
        let _ = (&stream).write_all(&[status]);
    }
}

/// Completes when the peer closes `stream` (it only ever waits for our answer).
async fn wait_until_closed(stream: &UnixStream) {
    let Ok(copy) = stream.try_clone() else { return std::future::pending().await };
    let closed = tokio::task::spawn_blocking(move || {
        use std::io::Read as _;
        let mut byte = [0u8; 1];
        let _ = (&copy).read(&mut byte);
    });
    let _ = closed.await;
}

/// Starts an in-process proxy on loopback for `mount`, serving only this client the commands of
/// the client's own library (`--annotations` included), and connects to it, its certificate
/// pinned.
async fn start_embedded(
    mount: &posh_core::config::Mount,
    client: &Identity,
    library: &Library,
    journal: Arc<Journal>,
) -> Result<Connection> {
    let host = Identity::ephemeral("posh-embedded")?;
    let endpoint = proxy::endpoint(&host, "127.0.0.1:0".parse()?)?;
    let addr = endpoint.local_addr()?;
    let export = std::fs::canonicalize(&mount.export)
        .with_context(|| format!("export {} of the embedded proxy", mount.export.display()))?;
    let config = ProxyConfig {
        export,
        authorization: Authorization::Only(vec![client.fingerprint().to_string()]),
        max_jobs: 64,
        grace: Duration::from_secs(1),
        library: library.clone(),
        launcher: Some(std::env::current_exe().context("posh-exec's own executable")?),
        journal,
    };
    tokio::spawn(async move {
        if let Err(e) = proxy::serve(endpoint, config, std::future::pending()).await {
            eprintln!("posh-exec: embedded proxy: {e:#}");
        }
    });
    connect_pinned(&addr.to_string(), client, Pin::Exactly(host.fingerprint())).await
}

/// The socket a run's runtime listens on, in a private temporary directory (made before the
/// script is rewritten: the rewritten text names it).
#[derive(Debug)]
pub struct RuntimeSocket {
    dir: tempfile::TempDir,
    path: String,
    listener: UnixListener,
}

impl RuntimeSocket {
    pub fn bind() -> Result<RuntimeSocket> {
        let dir =
            tempfile::Builder::new().prefix("posh-run-").tempdir().context("cannot make the runtime's directory")?;
        let socket = dir.path().join("runtime.sock");
        let path = socket.to_str().context("the temporary directory's path is not UTF-8")?.to_string();
        let listener = UnixListener::bind(&socket).with_context(|| format!("cannot listen on {path}"))?;
        Ok(RuntimeSocket { dir, path, listener })
    }

    pub fn path(&self) -> &str {
        &self.path
    }
}

/// Runs `bash` (already given the rewritten script, which names `socket`) with a session beside
/// it; returns bash's status as posh-exec's.
pub fn run_script(
    config: Config,
    library: Library,
    state: ClientState,
    socket: RuntimeSocket,
    mut bash: Command,
) -> Result<u8> {
    // One worker: the runtime mostly waits, and on a small machine a second worker costs more in
    // thread hand-offs than it gives (bench/throughput.sh).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let RuntimeSocket { dir, listener, .. } = socket;
    let session = Arc::new(Session {
        connections: config.mounts.iter().map(|_| OnceCell::new()).collect(),
        config,
        library,
        state,
        identity: OnceCell::new(),
        journal: std::sync::OnceLock::new(),
        runtime: runtime.handle().clone(),
    });
    // Ctrl-C and Ctrl-\ are bash's to act on; posh-exec ends when bash does.
    let _signals = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        (signal(SignalKind::interrupt()), signal(SignalKind::quit()))
    });
    let mut child = bash.spawn().context("cannot start bash")?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let session = session.clone();
            std::thread::spawn(move || session.serve(stream));
        }
    });
    let status = child.wait().context("waiting for bash")?;
    let code = super::local::shell_status(status);
    runtime.shutdown_timeout(Duration::from_secs(2));
    drop(dir);
    Ok((code & 0xff) as u8)
}
