//! `posh-proxy`: runs confined, annotated commands next to the data for posh clients.
//! See `docs/proxy.md`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use posh_proxy::jobs_dir::JobsDir;
use posh_proxy::journal::Journal;
use posh_proxy::privileges::{self, PrivilegeError, Use, User};
use posh_proxy::proxy::{self, Authorization, ProxyConfig};
use posh_proxy::sandbox;
use posh_wire::identity::Identity;
use posh_wire::over_ssh::{ClientGreeting, ProxyGreeting, VERSION, listen_address_from};

#[derive(Debug, Parser)]
#[command(
    name = "posh-proxy",
    version = posh_cli::VERSION,
    about = "Serve posh clients: run annotated commands under an export root"
)]
struct Args {
    /// The directory whose files clients may use; every path must resolve under it.
    #[arg(long, value_name = "DIR")]
    export: PathBuf,
    /// The user (a name or a uid) whose rights jobs have. Required when started as root, which
    /// is refused without it: the proxy binds its socket and reads its host key as root, then
    /// becomes that user for good (its groups, group and uid) before it serves. That user must
    /// be able to read and write the export and write the state directory (a missing one is made
    /// for it).
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// The UDP address to listen on (QUIC), e.g. 0.0.0.0:4433 [with --over-ssh: the address
    /// the ssh connection came in on, any port].
    #[arg(long, value_name = "ADDR", required_unless_present = "over_ssh")]
    listen: Option<SocketAddr>,
    /// Started by posh-exec through ssh for one run: read the client's greeting (its version
    /// and fingerprint) from standard input, answer with this proxy's on standard output (its
    /// version, address and one-time host key's fingerprint), serve that client alone, and
    /// shut down when standard input ends. See docs/running.md.
    #[arg(long, conflicts_with_all = ["authorized_clients", "allow_any_client"])]
    over_ssh: bool,
    /// With --over-ssh: once standard input ends, stay up for the same client until no
    /// connection has been open for SECONDS, then shut down (posh.toml's `linger`).
    #[arg(long, value_name = "SECONDS", requires = "over_ssh", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    linger: Option<u64>,
    /// Where the host key and certificate and the output journal live
    /// [default: $XDG_STATE_HOME/posh-proxy or ~/.local/state/posh-proxy].
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Fingerprints of the clients to serve, one per line, `#` comments
    /// [default: STATE_DIR/authorized-clients].
    #[arg(long, value_name = "FILE")]
    authorized_clients: Option<PathBuf>,
    /// Serve any client that presents a certificate. Anyone who can reach the port can then run
    /// commands on the export.
    #[arg(long, conflicts_with = "authorized_clients")]
    allow_any_client: bool,
    /// Jobs run at once; more wait for a slot (see --slot-wait). Jobs mostly wait for their
    /// disk and their client: with 4, twenty clients at once on a 20 ms link were slower than
    /// bash over sshfs (bench/load.sh; 1.8x faster with 16).
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    max_jobs: u32,
    /// Jobs one client may run at once [default: one less than --max-jobs, at least 1], so that
    /// another client always finds a slot.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_jobs_per_client: Option<u32>,
    /// Seconds a job may wait for a slot, in line with other clients' (a freed slot goes to the
    /// client holding fewest), before it is answered "busy" and its client runs it itself;
    /// 0 answers "busy" at once.
    #[arg(long, value_name = "SECONDS", default_value = "1", value_parser = seconds)]
    slot_wait: Duration,
    /// Connections one client may hold at once (one per mount this proxy serves it); more are
    /// closed at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections_per_client: u32,
    /// Seconds a stream may take to send its request before it is refused.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    request_timeout: u64,
    /// Seconds running jobs may continue after SIGTERM or SIGINT before they are killed.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    grace_secs: u64,
}

/// A number of seconds, fractions allowed (`0.25`).
fn seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text.parse().map_err(|_| format!("`{text}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{text}` is not a number of seconds from 0 up"))
}

fn default_state_dir() -> Result<PathBuf> {
    let state =
        posh_core::config::xdg_base_dir(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"), ".local/state")
            .context("neither XDG_STATE_HOME nor HOME is set; pass --state-dir")?;
    Ok(state.join("posh-proxy"))
}

/// Installs the SIGTERM and SIGINT handlers now (a signal that arrives before the returned future
/// is first polled is kept, not fatal) and returns a future that completes on either.
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
    })
}

/// With `--over-ssh`: the client's greeting, read from standard input on a thread of its own
/// (tokio's stdin would keep the runtime from shutting down while it waits); then the end of
/// standard input, sent on `ended`.
fn read_channel(ended: tokio::sync::oneshot::Sender<()>) -> tokio::sync::oneshot::Receiver<Result<ClientGreeting>> {
    let (greeted, greeting) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        use std::io::{BufRead as _, Read as _};
        let mut stdin = std::io::stdin().lock();
        let mut line = String::new();
        let read = (&mut stdin).take(64 * 1024).read_line(&mut line);
        let parsed = match read {
            Ok(0) => Err(anyhow::anyhow!("standard input ended before the client's greeting")),
            Ok(_) => serde_json::from_str::<ClientGreeting>(line.trim_end())
                .with_context(|| format!("not a client's greeting: {}", line.trim_end())),
            Err(e) => Err(anyhow::anyhow!("cannot read the client's greeting: {e}")),
        };
        let _ = greeted.send(parsed);
        let mut sink = [0u8; 4096];
        while stdin.read(&mut sink).is_ok_and(|n| n > 0) {}
        let _ = ended.send(());
    });
    greeting
}

/// Prints `greeting` as the one line of standard output.
fn greet(greeting: &ProxyGreeting) -> Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let line = serde_json::to_string(greeting)?;
    writeln!(stdout, "{line}").and_then(|()| stdout.flush()).context("cannot answer on standard output")
}

#[expect(clippy::disallowed_methods, reason = "the operator's command line: the export named, /dev/null")]
async fn run(args: Args) -> Result<()> {
    // Before anything is opened or made: a root proxy without --user starts nothing (over ssh,
    // it says so in its greeting).
    let become_user = privileges::user_to_become(args.user.as_deref());
    let export =
        std::fs::canonicalize(&args.export).with_context(|| format!("export directory {}", args.export.display()))?;
    anyhow::ensure!(export.is_dir(), "export {} is not a directory", export.display());
    let state_dir = match args.state_dir {
        Some(dir) => dir,
        None => default_state_dir()?,
    };
    if args.over_ssh {
        let linger = args.linger.map(Duration::from_secs);
        return run_over_ssh(args.listen, export, state_dir, args.grace_secs, linger, become_user).await;
    }
    let become_user = become_user?;
    let listen = args.listen.context("--listen is required")?;
    if let Some(user) = &become_user {
        privileges::make_state_dir_for(&state_dir, user)?;
    }
    // As root, if it was started as root: the host key may be root's alone.
    let identity = Identity::load_or_create(&state_dir.join("host"), "posh-proxy")?;
    let shutdown = shutdown_signal()?;
    let endpoint = proxy::endpoint(&identity, listen)?;
    if let Some(user) = &become_user {
        become_for_good(user, &export, &state_dir)?;
    }
    let authorization = if args.allow_any_client {
        tracing::warn!(
            "--allow-any-client: ANY client that can reach {} may run commands on {}",
            listen,
            export.display()
        );
        eprintln!("posh-proxy: WARNING: --allow-any-client: every client is served, authorized or not");
        Authorization::AnyClient
    } else {
        let file = args.authorized_clients.unwrap_or_else(|| state_dir.join("authorized-clients"));
        match proxy::authorized_fingerprints(&file) {
            Ok(list) if list.is_empty() => {
                tracing::warn!("{} lists no client: every client will be refused", file.display())
            }
            Ok(list) => tracing::info!("{} authorizes {} client(s)", file.display(), list.len()),
            Err(e) => anyhow::bail!("cannot read {}{}: {e}", file.display(), as_whom(become_user.as_ref())),
        }
        Authorization::File(file)
    };
    // Before serving: what a proxy killed mid-job left behind is undone first.
    let journal = Journal::open(&state_dir.join("journal"))
        .with_context(|| format!("the output journal{}", as_whom(become_user.as_ref())))?;
    let local = endpoint.local_addr()?;
    warn_unless_enforced();
    eprintln!("posh-proxy: listening on {local}, fingerprint {}", identity.fingerprint());
    tracing::info!("listening on {local}, fingerprint {}, export {}", identity.fingerprint(), export.display());
    let jobs = JobsDir::open(&state_dir.join("jobs")).with_context(|| {
        format!("cannot make the jobs' directory in {}{}", state_dir.display(), as_whom(become_user.as_ref()))
    })?;
    let config = ProxyConfig {
        jobs: std::sync::Arc::new(jobs),
        export,
        authorization,
        max_jobs: args.max_jobs as usize,
        max_jobs_per_client: args.max_jobs_per_client.unwrap_or(args.max_jobs.saturating_sub(1).max(1)) as usize,
        slot_wait: args.slot_wait,
        max_connections_per_client: args.max_connections_per_client as usize,
        request_wait: Duration::from_secs(args.request_timeout),
        grace: Duration::from_secs(args.grace_secs),
        library: std::sync::Arc::new(posh_core::library::Library::builtin()),
        journal: std::sync::Arc::new(journal),
        identity: std::sync::Arc::new(identity),
        connected: None,
    };
    proxy::serve(endpoint, config, shutdown).await
}

/// Becomes `user` (see `privileges::become_user`), once the socket is bound and the host key
/// read, and checks that it may use the export and the state directory.
fn become_for_good(user: &User, export: &std::path::Path, state_dir: &std::path::Path) -> Result<(), PrivilegeError> {
    privileges::become_user(user)?;
    // A change of user makes the process dumpable again where fs.suid_dumpable allows it.
    sandbox::forbid_inspection().map_err(|source| PrivilegeError::NotForGood {
        user: user.clone(),
        what: format!("it cannot be made not dumpable again: {source}"),
    })?;
    tracing::info!("running as user {user}");
    privileges::check_usable(state_dir, Use::State, user)?;
    if !privileges::check_usable(export, Use::Export, user)? {
        tracing::warn!("user {user} cannot write the export {}: jobs can only read it", export.display());
    }
    Ok(())
}

/// What follows an error once the proxy became a user (` (as user NAME (uid N), from --user)`),
/// so that a permission denied says whose it is.
fn as_whom(user: Option<&User>) -> String {
    user.map(|user| format!(" (as user {user}, from --user)")).unwrap_or_default()
}

fn warn_unless_enforced() {
    let enforced = std::env::current_exe()
        .and_then(|exe| std::process::Command::new(exe).arg(sandbox::CHECK_ARG).status())
        .is_ok_and(|s| s.success());
    if !enforced {
        tracing::warn!(
            "this kernel does not fully enforce Landlock: commands are confined by their annotations only, \
             and a program they start (awk's system(), sed's w) can reach files outside the export"
        );
    }
}

/// `--over-ssh`: one client, named by its greeting on standard input; a one-time host key; the
/// address the ssh connection came in on; until standard input ends (or SIGTERM, SIGINT), or
/// with `linger`, until it ended and no connection was open for that long.
async fn run_over_ssh(
    listen: Option<SocketAddr>,
    export: PathBuf,
    state_dir: PathBuf,
    grace_secs: u64,
    linger: Option<Duration>,
    become_user: Result<Option<User>, PrivilegeError>,
) -> Result<()> {
    let (ended_tx, ended) = tokio::sync::oneshot::channel();
    let greeting = read_channel(ended_tx);
    let client = tokio::time::timeout(Duration::from_secs(30), greeting)
        .await
        .context("no greeting from the client within 30 s")?
        .context("standard input is gone")??;
    let refuse = |error: String| {
        let _ = greet(&ProxyGreeting {
            posh_proxy: VERSION.to_string(),
            listen: None,
            fingerprint: None,
            error: Some(error.clone()),
        });
        anyhow::anyhow!(error)
    };
    if client.posh_exec != VERSION {
        return Err(refuse(format!(
            "posh-exec {} cannot use posh-proxy {VERSION}: the versions must be the same",
            client.posh_exec
        )));
    }
    let listen = match listen {
        Some(listen) => listen,
        None => std::env::var("SSH_CONNECTION").ok().and_then(|text| listen_address_from(&text)).ok_or_else(|| {
            refuse("$SSH_CONNECTION does not name the address to listen on; pass --listen".to_string())
        })?,
    };
    // A root login is a root proxy: refused in the same way, unless told whom to become.
    let become_user = become_user.map_err(|e| refuse(e.to_string()))?;
    if let Some(user) = &become_user {
        privileges::make_state_dir_for(&state_dir, user).map_err(|e| refuse(e.to_string()))?;
    }
    let identity = Identity::ephemeral("posh-proxy").map_err(|e| refuse(format!("{e:#}")))?;
    let (connected, idle) = tokio::sync::watch::channel(0usize);
    let endpoint = proxy::endpoint(&identity, listen).map_err(|e| refuse(format!("{e:#}")))?;
    if let Some(user) = &become_user {
        become_for_good(user, &export, &state_dir).map_err(|e| refuse(e.to_string()))?;
    }
    let whom = as_whom(become_user.as_ref());
    let journal =
        Journal::open(&state_dir.join("journal")).map_err(|e| refuse(format!("the output journal{whom}: {e}")))?;
    let jobs = JobsDir::open(&state_dir.join("jobs"))
        .map_err(|e| refuse(format!("cannot make the jobs' directory in {}{whom}: {e}", state_dir.display())))?;
    let local = endpoint.local_addr()?;
    warn_unless_enforced();
    let signals = shutdown_signal()?;
    greet(&ProxyGreeting {
        posh_proxy: VERSION.to_string(),
        listen: Some(local),
        fingerprint: Some(identity.fingerprint().to_string()),
        error: None,
    })?;
    tracing::info!("over ssh: listening on {local} for client {}, export {}", client.client, export.display());
    let config = ProxyConfig {
        jobs: std::sync::Arc::new(jobs),
        export,
        authorization: Authorization::Only(vec![client.client]),
        // One client, one run: its pipelines are the only jobs.
        max_jobs: 64,
        max_jobs_per_client: 64,
        slot_wait: Duration::from_secs(1),
        max_connections_per_client: 64,
        request_wait: Duration::from_secs(10),
        grace: Duration::from_secs(grace_secs),
        library: std::sync::Arc::new(posh_core::library::Library::builtin()),
        journal: std::sync::Arc::new(journal),
        identity: std::sync::Arc::new(identity),
        connected: linger.map(|_| connected),
    };
    let after_channel = async move {
        let _ = ended.await;
        tracing::info!("the ssh channel ended");
        if let Some(linger) = linger {
            let _ = detach_from_session();
            until_idle(idle, linger).await;
            tracing::info!("no connection for {}s: lingered long enough", linger.as_secs());
        }
    };
    let shutdown = async move {
        tokio::select! {
            () = signals => {}
            () = after_channel => {}
        }
    };
    proxy::serve(endpoint, config, shutdown).await
}

/// A lingering proxy's standard output and error become /dev/null, so that sshd, seeing them
/// closed, ends the session and the client's ssh exits; the proxy goes on, reached over QUIC.
#[expect(clippy::disallowed_methods, reason = "the operator's command line: the export named, /dev/null")]
fn detach_from_session() -> std::io::Result<()> {
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    rustix::stdio::dup2_stdout(&null)?;
    rustix::stdio::dup2_stderr(&null)?;
    Ok(())
}

/// Completes once no connection has been open for `linger` (`connected` counts them).
async fn until_idle(mut connected: tokio::sync::watch::Receiver<usize>, linger: Duration) {
    loop {
        if connected.wait_for(|n| *n == 0).await.is_err() {
            return;
        }
        // Idle from now on, unless a connection comes within the linger.
        tokio::select! {
            () = tokio::time::sleep(linger) => return,
            changed = connected.changed() => if changed.is_err() { return },
        }
    }
}

fn main() -> ExitCode {
    // Whether this kernel enforces the sandbox (see posh_proxy::sandbox), asked by the proxy itself.
    if std::env::args_os().nth(1).is_some_and(|a| a == sandbox::CHECK_ARG) {
        return ExitCode::from(sandbox::check_enforced());
    }
    let args = posh_cli::parse::<Args>();
    // Over ssh, what the proxy logs goes back to posh-exec, which shows it only with an error.
    let default_filter = if args.over_ssh { "warn" } else { "info" };
    if let Err(e) = sandbox::forbid_inspection() {
        eprintln!("posh-proxy: cannot keep jobs from reading the proxy's environment: {e}");
        return ExitCode::from(1);
    }
    // While the process has one thread, so that every thread the runtime starts inherits it.
    if let Err(e) = privileges::forbid_new_privileges() {
        eprintln!("posh-proxy: cannot set no_new_privs: {e}");
        return ExitCode::from(1);
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        )
        .init();
    // One worker: jobs are processes of their own, the proxy only moves their bytes, and a second
    // worker costs more in thread hand-offs than it gives (bench/throughput.sh).
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("posh-proxy: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("posh-proxy: {e:#}");
            ExitCode::from(1)
        }
    }
}
