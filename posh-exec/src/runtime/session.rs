//! The runtime of one script run: posh-exec starts bash on the rewritten script and stays beside
//! it, listening on a private Unix socket. Each `__run` hands its pipeline over (descriptors,
//! working directory, environment, words); the session places it, runs it with connections to
//! the proxies that stay warm for the whole run, and answers with the status.

use std::os::unix::net::{UnixListener, UnixStream};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use posh_core::config::{Config, ProxyAddress};
use posh_core::library::Library;
use posh_core::planner::measured::Ratios;
use posh_exec::handoff;
use posh_exec::remote::ssh::{self, SshLink};
use posh_exec::remote::{Connection, Identity, KnownProxies, Pin, connect, connect_pinned};
use posh_proxy::jobs_dir::JobsDir;
use posh_proxy::journal::Journal;
use posh_proxy::proxy::{self, Authorization, ProxyConfig};
use tokio::sync::OnceCell;

use super::embedded_state::EmbeddedState;
use super::local::{Caller, CallerJob};
use super::{coherence, decode, execute, metadata, placement, progress};

/// Where the client keeps what it knows: its identity and the proxies it pinned. Each is made
/// only when a separate proxy is reached (an embedded proxy needs none of them: see
/// `embedded_state`).
#[derive(Debug, Clone)]
pub struct ClientState {
    pub identity_dir: std::path::PathBuf,
    pub known_proxies: std::path::PathBuf,
    /// The measured ratios file (see `crate::ratios`): added to only where its directory exists.
    pub ratios: std::path::PathBuf,
    /// Records of proxies left lingering by earlier runs (see `remote::ssh::Lingering`).
    pub lingering: std::path::PathBuf,
}

/// The most connections to proxies the run sets up at once (QUIC handshakes, embedded proxies
/// started): a split across a thousand mounts opens its connections together, not one after
/// another, and not all thousand at once either.
pub const CONNECTING_AT_ONCE: usize = 16;

/// How long a pipeline waits for a proxy that was lost, or not reached, to answer again.
const RECONNECT_WAIT: Duration = Duration::from_secs(3);
/// The pause after a failed attempt before the next; it doubles up to the maximum.
const RETRY_PAUSE_FIRST: Duration = Duration::from_secs(1);
const RETRY_PAUSE_MAX: Duration = Duration::from_secs(30);
/// At the end of a run, how long a proxy started through ssh may take to end once its channel
/// closed (its jobs for this client ended with the connection), before its ssh is killed.
const SSH_PROXY_EXIT_WAIT: Duration = Duration::from_secs(3);
/// After bash ended, how long the run waits for the pipelines it still serves to notice their
/// callers went (at once, after Ctrl-C); one whose caller outlived bash is then cut off.
const GIVE_UP_WAIT: Duration = Duration::from_secs(2);

/// A mount's proxy as the run knows it.
#[derive(Debug, Default)]
enum ProxyLink {
    #[default]
    Untried,
    /// With how the run holds it when it is an ssh:// mount's (see `SshLink`).
    Connected(Arc<Connection>, Option<Box<SshLink>>),
    /// The last attempt failed (the outage was warned about when it began); the next is not
    /// made before `retry_at`.
    Unreachable { retry_at: Instant, pause: Duration },
}

#[derive(Debug)]
pub struct Session {
    pub config: Config,
    /// Shared with the run's embedded proxies.
    pub(super) library: Arc<Library>,
    /// What earlier runs measured, as of the run's start: every pipeline of the run is planned
    /// with the figures `--explain` would have shown.
    pub(super) ratios: Ratios,
    state: ClientState,
    identity: OnceCell<Option<Identity>>,
    /// The run's private directory (the runtime's socket's).
    run_dir: std::path::PathBuf,
    /// The client's identity towards its embedded proxies: for this run alone, kept nowhere.
    embedded_identity: std::sync::OnceLock<Option<Identity>>,
    /// Where the embedded proxies keep their jobs' directories and journal, made on first use.
    embedded_state: std::sync::OnceLock<Option<EmbeddedState>>,
    /// Where the run's embedded proxies make their jobs' directories, one for the process.
    embedded_jobs: OnceCell<Option<Arc<JobsDir>>>,
    /// Shared by the run's embedded proxies: one journal file per process.
    journal: std::sync::OnceLock<Arc<Journal>>,
    /// One per mount: connected on first use, kept while it stays open.
    connections: Vec<tokio::sync::Mutex<ProxyLink>>,
    /// Connections being set up: at most [`CONNECTING_AT_ONCE`], and the most there were at once.
    connecting: Connecting,
    /// Pairs of mounts (from, to) whose proxies could not stream a pipe from one to the other:
    /// for the rest of the run such pipes are relayed through the client without trying again.
    relayed_pipes: std::sync::Mutex<std::collections::BTreeSet<(usize, usize)>>,
    /// What proxies told the run's plans of their exports (see `metadata`).
    pub(super) answers: metadata::Answers,
    /// What the plan before the script asked each mount's proxy, until the first pipeline's
    /// `--stats` record takes it (`metadata::Planning::into_traffic`).
    pub(super) asked_before_the_script:
        std::sync::Mutex<std::collections::BTreeMap<usize, Arc<posh_wire::client::Traffic>>>,
    pub(super) runtime: tokio::runtime::Handle,
    /// Pipelines handed over and not yet answered.
    in_flight: tokio::sync::watch::Sender<usize>,
    /// Calls' globs are guessed from kept listings and confirmed by the proxy in the job
    /// (`globs::predict`), until a proxy refuses such a job for another reason than the names.
    predicting: std::sync::atomic::AtomicBool,
}

impl Session {
    /// The run's embedded proxies' directory in its private directory, made on first use.
    fn embedded_state(&self) -> Option<&EmbeddedState> {
        let open = || {
            EmbeddedState::open(&self.run_dir)
                .map_err(|e| {
                    progress::eprintln(format_args!("posh-exec: cannot make the embedded proxy's directory: {e}"))
                })
                .ok()
        };
        self.embedded_state.get_or_init(open).as_ref()
    }

    /// The client's identity for its embedded proxies.
    fn embedded_identity(&self) -> Option<&Identity> {
        let make = || {
            Identity::ephemeral("posh-exec")
                .map_err(|e| progress::eprintln(format_args!("posh-exec: {e:#}; every command runs at the client")))
                .ok()
        };
        self.embedded_identity.get_or_init(make).as_ref()
    }

    /// The embedded proxies' jobs directory, in the run's private directory (what a killed run
    /// left there is cleaned when the next one starts an embedded proxy: see `embedded_state`).
    async fn embedded_jobs(&self) -> Option<Arc<JobsDir>> {
        self.embedded_jobs
            .get_or_init(|| async {
                JobsDir::open(&self.embedded_state()?.jobs())
                    .map_err(|e| {
                        progress::eprintln(format_args!("posh-exec: cannot make the embedded proxy's directory: {e}"))
                    })
                    .ok()
                    .map(Arc::new)
            })
            .await
            .clone()
    }

    async fn identity(&self) -> Option<&Identity> {
        self.identity
            .get_or_init(|| async {
                Identity::load_or_create(&self.state.identity_dir, "posh-exec")
                    .map_err(|e| progress::eprintln(format_args!("posh-exec: {e:#}; every command runs at the client")))
                    .ok()
            })
            .await
            .as_ref()
    }

    /// Adds what a pipeline's commands measured to the ratios file, for the runs that follow.
    pub fn record_ratios(&self, runs: &[(String, u64, u64, u32)]) {
        crate::ratios::record(&self.state.ratios, runs);
    }

    /// Whether pipes from mount `from`'s proxy to mount `to`'s go through the client (see
    /// `relayed_pipes`).
    pub fn pipes_relayed(&self, from: usize, to: usize) -> bool {
        self.relayed_pipes.lock().unwrap_or_else(|e| e.into_inner()).contains(&(from, to))
    }

    /// Pipes from mount `from`'s proxy to mount `to`'s go through the client from now on.
    pub fn relay_pipes(&self, from: usize, to: usize) {
        self.relayed_pipes.lock().unwrap_or_else(|e| e.into_inner()).insert((from, to));
    }

    pub fn library(&self) -> &Library {
        &self.library
    }

    pub fn ratios(&self) -> &Ratios {
        &self.ratios
    }

    /// The embedded proxies' journal, opened on first use (what runs killed mid-job, `kill -9`,
    /// left behind is settled by `embedded_state` first).
    fn journal(&self) -> Arc<Journal> {
        let open = || {
            let Some(dir) = self.embedded_state().map(EmbeddedState::journal) else {
                return Arc::new(Journal::none());
            };
            match Journal::open(&dir) {
                Ok(journal) => Arc::new(journal),
                Err(e) => {
                    progress::eprintln(format_args!("posh-exec: output journal in {}: {e}", dir.display()));
                    Arc::new(Journal::none())
                }
            }
        };
        self.journal.get_or_init(open).clone()
    }

    /// The warm connection to mount `index`'s proxy, connecting (or starting an embedded proxy)
    /// on first use, and again when the connection closed (the proxy restarted, say). A proxy
    /// that could not be reached is warned about once and tried again only after a pause that
    /// doubles while it stays away; meanwhile its mount's commands run at the client.
    pub async fn connection(&self, index: usize) -> Option<Arc<Connection>> {
        // An embedded proxy serves this run alone: the client's lasting identity, made in its
        // state directory, is for separate proxies.
        let identity = match self.config.mounts[index].proxy {
            ProxyAddress::Embedded => self.embedded_identity()?,
            _ => self.identity().await?,
        };
        let mut link = self.connections[index].lock().await;
        let first = match &*link {
            ProxyLink::Connected(connection, _) if connection.close_reason().is_none() => {
                return Some(connection.clone());
            }
            // A proxy that could not be started through ssh is not started again in this run:
            // each try would log in again, and ask again for what a terminal user typed.
            ProxyLink::Unreachable { .. } if matches!(self.config.mounts[index].proxy, ProxyAddress::Ssh { .. }) => {
                return None;
            }
            ProxyLink::Unreachable { retry_at, .. } if Instant::now() < *retry_at => return None,
            ProxyLink::Untried => true,
            ProxyLink::Connected(..) | ProxyLink::Unreachable { .. } => false,
        };
        let mount = &self.config.mounts[index];
        let ssh = matches!(mount.proxy, ProxyAddress::Ssh { .. });
        let _setting_up = self.connecting.enter().await;
        let attempt = async {
            match &mount.proxy {
                ProxyAddress::Remote { .. } => {
                    let known = KnownProxies::new(&self.state.known_proxies);
                    connect(&mount.proxy.to_string(), identity, &known).await.map(|c| (c, None))
                }
                ProxyAddress::Embedded => match self.embedded_jobs().await {
                    Some(jobs) => {
                        start_embedded(mount, identity, &self.library, jobs, self.journal()).await.map(|c| (c, None))
                    }
                    None => Err(anyhow::anyhow!("no directory for the embedded proxy's jobs")),
                },
                ProxyAddress::Ssh { user, host, port } => {
                    reach_over_ssh(mount, user.as_deref(), host, *port, identity, &self.state.lingering)
                        .await
                        .map(|(c, p)| (c, Some(Box::new(p))))
                }
            }
        };
        // The first attempt waits as long as QUIC does, and a start through ssh as long as its
        // login may take; later ones hold a pipeline back briefly.
        let connected = if first || ssh {
            attempt.await
        } else {
            tokio::time::timeout(RECONNECT_WAIT, attempt).await.unwrap_or_else(|_| {
                Err(anyhow::anyhow!("proxy {} did not answer within {RECONNECT_WAIT:?}", mount.proxy))
            })
        };
        match connected {
            Ok((connection, started)) => {
                let connection = Arc::new(connection);
                let old = std::mem::replace(&mut *link, ProxyLink::Connected(connection.clone(), started));
                // A proxy started earlier and lost is ended for good.
                if let ProxyLink::Connected(_, Some(lost)) = old {
                    (*lost).lost().await;
                }
                Some(connection)
            }
            Err(e) => {
                let pause = match &*link {
                    ProxyLink::Unreachable { pause, .. } => (*pause * 2).min(RETRY_PAUSE_MAX),
                    // An ssh error names the mount and the command itself.
                    ProxyLink::Untried if ssh => {
                        progress::eprintln(format_args!("posh-exec: {e:#}; its commands run at the client"));
                        RETRY_PAUSE_FIRST
                    }
                    ProxyLink::Untried => {
                        progress::eprintln(format_args!(
                            "posh-exec: mount {}: {e:#}; its commands run at the client",
                            mount.name
                        ));
                        RETRY_PAUSE_FIRST
                    }
                    ProxyLink::Connected(lost, _) => {
                        let why = lost.close_reason().map(|r| r.to_string()).unwrap_or_default();
                        progress::eprintln(format_args!(
                            "posh-exec: mount {}: lost the connection to proxy {} ({why}) and cannot reconnect: {e:#}; \
                             its commands run at the client until it answers again",
                            mount.name,
                            lost.addr()
                        ));
                        RETRY_PAUSE_FIRST
                    }
                };
                let old =
                    std::mem::replace(&mut *link, ProxyLink::Unreachable { retry_at: Instant::now() + pause, pause });
                if let ProxyLink::Connected(_, Some(lost)) = old {
                    (*lost).lost().await;
                }
                None
            }
        }
    }

    /// What the run holds of its proxies and memory so far, for `--stats`.
    pub fn figures(&self) -> RunFigures {
        let open = self
            .connections
            .iter()
            .filter(|link| {
                link.try_lock()
                    .map_or(true, |link| matches!(&*link, ProxyLink::Connected(c, _) if c.close_reason().is_none()))
            })
            .count();
        RunFigures {
            connections_open: open,
            most_connecting_at_once: self.connecting.most(),
            peak_rss_bytes: peak_rss_bytes(),
        }
    }

    /// Closes every connection to a proxy, telling it so. All at once: each close waits for its
    /// endpoint to go idle, up to a QUIC draining period (hundreds of milliseconds), and one after
    /// the other those waits added up to most of a run across five proxies.
    ///
    /// Proxies the run started through ssh are then told to end (their channel closed) and
    /// given a moment to do so before their ssh processes are killed: none outlives the run.
    async fn close_connections(&self) {
        let mut closing = tokio::task::JoinSet::new();
        for link in &self.connections {
            let mut link = link.lock().await;
            if let ProxyLink::Connected(connection, started) = &mut *link {
                let connection = connection.clone();
                let started = started.take();
                closing.spawn(async move {
                    connection.close().await;
                    if let Some(started) = started {
                        (*started).end(SSH_PROXY_EXIT_WAIT).await;
                    }
                });
            }
        }
        closing.join_all().await;
    }

    /// Runs one handed-over pipeline and answers with its status.
    fn serve(self: &Arc<Session>, stream: UnixStream) {
        /// Counts the pipeline out however `answer` ends (a panic included), or posh-exec would
        /// wait for it after bash ended.
        struct InFlight<'a>(&'a tokio::sync::watch::Sender<usize>);
        impl Drop for InFlight<'_> {
            fn drop(&mut self) {
                self.0.send_modify(|n| *n -= 1);
            }
        }
        self.in_flight.send_modify(|n| *n += 1);
        let _counted = InFlight(&self.in_flight);
        self.answer(stream);
    }

    /// Runs `run` until it ends, or until the caller on `stream` goes (killed, Ctrl-C): then
    /// `None`, and what `run` started is dropped.
    pub(super) fn until_caller_goes<T>(
        &self,
        stream: &UnixStream,
        run: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        self.runtime.block_on(async {
            tokio::select! {
                // A caller already gone starts nothing.
                biased;
                () = follow_caller(stream, None) => None,
                done = run => Some(done),
            }
        })
    }

    /// No call's globs are guessed from now on (see `globs::predict`).
    pub fn stop_predicting(&self) {
        self.predicting.store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// Plans `call` (its globs still words, if it has any) in `cwd`: its globs guessed from the
    /// listings the run keeps when `predict` and the plan puts the whole call in one job at
    /// the proxy that lists them, which then confirms them (the call's `Expected`); otherwise
    /// asked of the proxies first.
    fn plan_call(
        &self,
        mut call: super::PipelineCall,
        cwd: &std::path::Path,
        env: &[(std::ffi::OsString, std::ffi::OsString)],
        redirected: &[std::path::PathBuf],
        predict: bool,
    ) -> Planned {
        let place = |call: &super::PipelineCall, planning: &metadata::Planning<'_>| {
            planning.prefetch(call_paths(call, cwd));
            placement::place(&self.library, &self.config, &self.ratios, call, cwd, env, planning, 1).1
        };
        if call.commands.iter().all(|c| c.globs.is_empty()) {
            let planning = metadata::Planning::new(self);
            let units = place(&call, &planning);
            return Planned { call, units, asked: planning.into_traffic(), expected: None };
        }
        if predict && self.predicting.load(std::sync::atomic::Ordering::Relaxed) {
            let mut guessed = call.clone();
            let listed = |mount: usize, dir: &str| self.answers.names_in(mount, dir);
            if let Some(mut expected) = super::globs::predict(&mut guessed, &self.config, cwd, listed) {
                // A file the call redirects to or from that the kept listing lacks (the file a
                // `>` makes) is taken to be absent, and the proxy confirms that too; another
                // directory's is asked for, a round trip the globs asked first would have hidden.
                let (mut absent, mut to_ask) = (Vec::new(), Vec::new());
                for path in redirected {
                    match self.answers.lacks(&self.config, path) {
                        Some((mount, dir, name)) if mount == expected.mount && expected.expect_absent(&dir, &name) => {
                            absent.push(path.clone());
                        }
                        _ => to_ask.push(path.clone()),
                    }
                }
                let planning = metadata::Planning::assuming_absent(self, &absent);
                self.runtime.block_on(planning.list_beside(to_ask));
                let units = place(&guessed, &planning);
                if placement::one_job_at(&units) == Some(expected.mount) {
                    let expected = Some(Arc::new(expected));
                    return Planned { call: guessed, units, asked: planning.into_traffic(), expected };
                }
            }
        }
        let planning = metadata::Planning::new(self);
        let globs = self.expand_globs(&mut call, cwd);
        self.runtime.block_on(futures_util::future::join(globs, planning.list_beside(redirected.to_vec())));
        let units = place(&call, &planning);
        Planned { call, units, asked: planning.into_traffic(), expected: None }
    }

    /// Has the mounts' proxies expand the call's globs (`globs`), each mount's in one request.
    async fn expand_globs(&self, call: &mut super::PipelineCall, cwd: &std::path::Path) {
        let at_proxy = |mount: usize, request: posh_exec::remote::protocol::Request| async move {
            let connection = self.connection(mount).await.ok_or("no connection")?;
            let output = tokio::time::timeout(GLOB_WAIT, connection.run(&request, b""))
                .await
                .map_err(|_| format!("no answer within {GLOB_WAIT:?}"))?
                .map_err(|e| format!("{e:#}"))?;
            if output.status != 0 {
                let stderr = String::from_utf8_lossy(&output.stderr);
                return Err(format!("its bash ended with status {}: {}", output.status, stderr.trim_end()));
            }
            let patterns = request.glob.as_ref().map_or(0, |g| g.patterns.len());
            posh_wire::glob::read_answer(&output.stdout, patterns)
        };
        super::globs::expand(call, Some(&self.config), cwd, at_proxy).await;
    }

    fn answer(self: &Arc<Session>, stream: UnixStream) {
        let handoff = match handoff::receive(&stream) {
            Ok(handoff) => handoff,
            Err(e) => {
                progress::eprintln(format_args!("posh-exec: a pipeline could not be handed over: {e}"));
                return;
            }
        };
        // A question of the prompt about a typed line, not a pipeline.
        if crate::prompt::answer(self, &handoff, &stream) {
            return;
        }
        let handoff::Handoff { fds, cwd, env, mut args } = handoff;
        // A call made by a job of bash's own: its process group, and its suspensions as they come.
        let (suspended, _) = tokio::sync::watch::channel(false);
        let job = match &args[..] {
            [mark, group, ..] if mark == handoff::JOB => {
                let group = group.to_str().and_then(|g| g.parse().ok()).and_then(rustix::process::Pid::from_raw);
                args.drain(..2);
                group.map(|group| CallerJob { group, suspended: suspended.subscribe() })
            }
            _ => None,
        };
        let caller_of =
            |fds, env| Caller { fds, cwd: Some(cwd.clone()), env: Some(env), job: job.clone(), ..Caller::default() };
        match super::loops::decode_loop(&args) {
            Ok(None) => {}
            Ok(Some(loop_call)) => {
                let caller = caller_of(fds, env.clone());
                let status = super::loops::run(self, &loop_call, &caller, &cwd, &env, &stream);
                let _ = handoff::answer_status(&stream, status, &[]);
                return;
            }
            Err(e) => {
                caller_of(fds, env).warn(&format!("internal call: {e}"));
                let _ = handoff::answer_status(&stream, 2, &[]);
                return;
            }
        }
        let mut caller = caller_of(fds, env.clone());
        let call = decode(&args).map(|mut call| {
            colour_as_on_the_terminal(&mut call, caller.fds[1].as_ref(), &env);
            call.stdout_file = caller.fds[1].as_ref().and_then(super::regular_file_path);
            // Only what redirections name (`>&` and `<&` aside: descriptors) is surely a file:
            // the pattern itself or a word such as `SLOW` lacks from every listing, and would
            // have its directory's (thousands of names) asked again for nothing.
            let files = call.commands.iter().flat_map(|c| c.redirects.iter()).filter(|(_, op, _)| !op.ends_with('&'));
            let redirected: Vec<_> = files.clone().map(|(_, _, target)| cwd.join(target)).collect();
            // (`/dev/null`, never refreshed, needs no look: a thread per call for nothing.)
            let written =
                files.filter(|(_, op, target)| coherence::WRITING.contains(&op.as_str()) && target != "/dev/null");
            let written: Vec<_> = written.map(|(_, _, target)| cwd.join(target)).collect();
            // Which of the files it may write exist, asked now, beside the globs and the plan.
            let seen = (!written.is_empty()).then(|| Arc::new(coherence::SeenBefore::look(written)));
            (call, redirected, seen)
        });
        let (status, statuses) = match call {
            Ok((call, redirected, seen)) => {
                caller.seen = seen;
                let mut planned = self.plan_call(call.clone(), &cwd, &env, &redirected, true);
                loop {
                    caller.expected = planned.expected.clone();
                    let run = execute::execute_with_statuses(
                        Some(self),
                        &planned.call,
                        &caller,
                        &planned.units,
                        &planned.asked,
                    );
                    // The caller gone (killed, Ctrl-C) ends the pipeline: its jobs are dropped.
                    let gone = follow_caller(&stream, Some(&suspended));
                    let ended = self.runtime.block_on(async {
                        tokio::select! {
                            // A caller already gone starts nothing.
                            biased;
                            () = gone => (130, Vec::new()),
                            ended = run => ended,
                        }
                    });
                    if planned.expected.as_ref().is_some_and(|expected| expected.unmet()) && ended.0 != 130 {
                        // The proxy did not confirm the guessed names: nothing ran; asked now.
                        planned = self.plan_call(call.clone(), &cwd, &env, &redirected, false);
                        continue;
                    }
                    // What the pipeline may have written is asked about again, but for the files
                    // its proxies said it left. A call run whole at one proxy (its commands
                    // annotated) changed only what its annotations and redirections write: the
                    // names it read stay in the kept listings, and the next call's globs over
                    // them can be guessed.
                    let changed: Vec<std::path::PathBuf> = match placement::one_job_at(&planned.units) {
                        Some(_) => {
                            let steps = &planned.units[0].lanes[0];
                            coherence::written_paths(&self.library, &planned.call, steps, Some(&cwd))
                        }
                        None => call_paths(&planned.call, &cwd).collect(),
                    };
                    self.answers.forget(&self.config, changed);
                    self.answers.learn(&caller.written);
                    break ended;
                }
            }
            Err(e) => {
                caller.warn(&format!("internal call: {e}"));
                (2, Vec::new())
            }
        };
        let _ = handoff::answer_status(&stream, status, &statuses);
    }
}

/// A call planned: its words (globs expanded), where each command runs, what the plan asked of
/// the proxies, and the globs its job must find as guessed, if they were.
struct Planned {
    call: super::PipelineCall,
    units: Vec<placement::Unit>,
    asked: std::collections::BTreeMap<usize, Arc<posh_wire::client::Traffic>>,
    expected: Option<Arc<super::globs::Expected>>,
}

/// `--color=auto` (GNU's convention, shared by grep, ls, diff and others: colour when standard
/// output is a terminal) on a command writing the caller's terminal: wherever it runs for the
/// runtime, its output is a pipe, so it is told `--color=always`, which is what `auto` means on a
/// terminal whose `TERM` is set and not `dumb` (a line typed at the prompt under Debian's
/// `alias grep='grep --color=auto'`). A convention of option names, not of programs.
fn colour_as_on_the_terminal(
    call: &mut super::PipelineCall,
    stdout: Option<&std::os::fd::OwnedFd>,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) {
    let Some(last) = call.commands.last_mut() else { return };
    if last.redirects.iter().any(|r| r.0 == 1 || r.1.contains('&')) {
        return;
    }
    let term = env.iter().find(|(k, _)| k == "TERM").map(|(_, v)| v.as_os_str());
    if !term.is_some_and(|t| !t.is_empty() && t != "dumb") || !stdout.is_some_and(rustix::termios::isatty) {
        return;
    }
    let mut operand = false;
    for word in last.argv.iter_mut().skip(1) {
        if word == "--" {
            break;
        }
        // A pattern or a file of patterns is not an option.
        if std::mem::replace(&mut operand, ["-e", "-f", "--regexp", "--file"].iter().any(|o| word == *o)) {
            continue;
        }
        for option in ["--color", "--colour"] {
            if word == option || *word == *format!("{option}=auto") {
                *word = format!("{option}=always").into();
            }
        }
    }
}

/// Every path a pipeline's words and redirection targets may name, resolved in `cwd`.
pub(super) fn call_paths<'a>(
    call: &'a super::PipelineCall,
    cwd: &'a std::path::Path,
) -> impl Iterator<Item = std::path::PathBuf> + 'a {
    let words = call.commands.iter().flat_map(|c| c.argv.iter().chain(c.redirects.iter().map(|r| &r.2)));
    words.map(|word| cwd.join(word))
}

/// The bash that runs a rewritten script: it must not outlive posh-exec, its runtime (killed
/// with `kill -9`, posh-exec would leave bash running the rest of the script with every handed
/// over pipeline failing). Linux's parent-death signal does that, but Rust sets it in a child
/// only in unsafe code, so util-linux's `setpriv` sets it and execs bash; without setpriv, plain
/// bash. The signal is SIGKILL: bash started with SIGTERM ignored (as under some supervisors)
/// would ignore SIGTERM, and a trap on it would run the script's code without its runtime.
pub fn bash_beside_runtime() -> Command {
    let setpriv = super::local::found_at("setpriv".as_ref(), std::env::var_os("PATH").as_deref());
    match setpriv {
        Some(setpriv) => {
            let mut command = Command::new(setpriv);
            command.args(["--pdeathsig", "KILL", "--", "bash"]);
            command
        }
        None => Command::new("bash"),
    }
}

/// SIGTERM and SIGHUP (a closed terminal) sent to posh-exec end the run as they would end bash
/// started alone: bash gets them, and posh-exec ends when bash does, its proxies told.
fn forward_ending_signals(runtime: &tokio::runtime::Runtime, bash: &std::process::Child) -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let pid = rustix::process::Pid::from_child(bash);
    let _guard = runtime.enter();
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut hup = signal(SignalKind::hangup()).context("cannot handle SIGHUP")?;
    runtime.spawn(async move {
        loop {
            let forwarded = tokio::select! {
                Some(()) = term.recv() => rustix::process::Signal::TERM,
                Some(()) = hup.recv() => rustix::process::Signal::HUP,
                else => return,
            };
            let _ = rustix::process::kill_process(pid, forwarded);
        }
    });
    Ok(())
}

/// After bash ended: waits while a pipeline it handed over runs, or a background job it left
/// behind (reparented to posh-exec, its subreaper) may still hand one over, as bash's job would
/// go on after it. Ctrl-C, SIGTERM or SIGHUP stop the wait: the run then ends them.
async fn await_background(session: &Session) {
    use tokio::signal::unix::{SignalKind, signal};
    let stop = async {
        let (Ok(mut int), Ok(mut term), Ok(mut hup)) =
            (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()))
        else {
            return;
        };
        tokio::select! { _ = int.recv() => {}, _ = term.recv() => {}, _ = hup.recv() => {} }
    };
    let done = async {
        let mut in_flight = session.in_flight.subscribe();
        loop {
            let _ = in_flight.wait_for(|n| *n == 0).await;
            if !callers_left_behind() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! { () = done => {}, () = stop => {} }
}

/// Whether a process bash left behind may still hand a pipeline over: a child of posh-exec
/// (reparented to it) that is a bash (a background subshell) or `posh-run`, and not a zombie.
/// The commands the runtime itself runs are never either.
fn callers_left_behind() -> bool {
    let tasks = std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten();
    let children = tasks.filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok());
    children.flat_map(|list| list.split_whitespace().map(str::to_string).collect::<Vec<_>>()).any(|pid| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // `PID (COMM) STATE ...`: the name may hold spaces and parentheses, the state follows the last `)`.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { return false };
        let state = stat[close + 1..].split_whitespace().next().unwrap_or("Z");
        matches!(&stat[open + 1..close], "bash" | "posh-run") && state != "Z"
    })
}

/// Completes when the peer closes `stream` (it waits for our answer), or writes on it anything
/// but a job's suspensions ([`handoff::STOPPED`], [`handoff::CONTINUED`]), which go to
/// `suspended` as they come. Watched on the runtime's reactor (the stream is ours alone, so its
/// flags may change), not by a thread blocked in read(2) for each pipeline.
async fn follow_caller(stream: &UnixStream, suspended: Option<&tokio::sync::watch::Sender<bool>>) {
    let watched = stream.try_clone().and_then(|copy| {
        copy.set_nonblocking(true)?;
        tokio::net::UnixStream::from_std(copy)
    });
    let Ok(watched) = watched else { return std::future::pending().await };
    let mut byte = [0u8; 1];
    // Once suspended, the pipeline is drawn no progress for: it runs, if at all, in the background.
    let mut hidden = None;
    loop {
        if watched.readable().await.is_err() {
            return;
        }
        match (watched.try_read(&mut byte), suspended) {
            (Err(e), _) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            (Ok(1), Some(suspended)) if byte[0] == handoff::STOPPED => {
                hidden = hidden.or_else(progress::hidden);
                suspended.send_replace(true);
            }
            (Ok(1), Some(suspended)) if byte[0] == handoff::CONTINUED => _ = suspended.send_replace(false),
            _ => return,
        }
    }
}

/// Connections being set up, bounded; the most at once is kept for `--stats` (and tells a test
/// whether they were set up together).
#[derive(Debug)]
struct Connecting {
    permits: tokio::sync::Semaphore,
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
}

impl Connecting {
    fn new(bound: usize) -> Connecting {
        Connecting {
            permits: tokio::sync::Semaphore::new(bound),
            now: std::sync::atomic::AtomicUsize::new(0),
            most: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Waits for a place among those setting up a connection; held until dropped.
    async fn enter(&self) -> SettingUp<'_> {
        use std::sync::atomic::Ordering::SeqCst;
        // The semaphore is never closed.
        let permit = self.permits.acquire().await.ok();
        let now = self.now.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        SettingUp { connecting: self, _permit: permit }
    }

    fn most(&self) -> usize {
        self.most.load(std::sync::atomic::Ordering::SeqCst)
    }
}

struct SettingUp<'a> {
    connecting: &'a Connecting,
    _permit: Option<tokio::sync::SemaphorePermit<'a>>,
}

impl Drop for SettingUp<'_> {
    fn drop(&mut self) {
        self.connecting.now.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// What `--stats` says of the whole run so far, beside each pipeline's own figures.
#[derive(Clone, Copy, Debug)]
pub struct RunFigures {
    /// Connections to proxies open (one per mount whose proxy took part).
    pub connections_open: usize,
    /// The most connections set up at once (at most [`CONNECTING_AT_ONCE`]).
    pub most_connecting_at_once: usize,
    /// The most memory the posh-exec process (its runtime and embedded proxies) held resident.
    pub peak_rss_bytes: Option<u64>,
}

/// The process's peak resident memory, as the kernel counts it (`VmHWM` in /proc/self/status);
/// `None` where there is no such file.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// Starts an in-process proxy on loopback for `mount`, serving only this client the commands of
/// the client's own library (`--annotations` included), and connects to it, its certificate
/// pinned.
pub(crate) async fn start_embedded(
    mount: &posh_core::config::Mount,
    client: &Identity,
    library: &Arc<Library>,
    jobs: Arc<JobsDir>,
    journal: Arc<Journal>,
) -> Result<Connection> {
    let host = Arc::new(Identity::ephemeral("posh-embedded")?);
    let endpoint = proxy::endpoint(&host, "127.0.0.1:0".parse()?)?;
    let addr = endpoint.local_addr()?;
    let export = std::fs::canonicalize(&mount.export)
        .with_context(|| format!("export {} of the embedded proxy", mount.export.display()))?;
    let config = ProxyConfig {
        export,
        authorization: Authorization::Only(vec![client.fingerprint().to_string()]),
        // It serves this run alone.
        max_jobs: 64,
        max_jobs_per_client: 64,
        slot_wait: Duration::from_secs(1),
        max_connections_per_client: 64,
        request_wait: Duration::from_secs(10),
        jobs,
        grace: Duration::from_secs(1),
        library: Arc::clone(library),
        journal,
        identity: host.clone(),
        connected: None,
    };
    tokio::spawn(async move {
        if let Err(e) = proxy::serve(endpoint, config, std::future::pending()).await {
            progress::eprintln(format_args!("posh-exec: embedded proxy: {e:#}"));
        }
    });
    connect_pinned(&addr.to_string(), client, Pin::Exactly(host.fingerprint())).await
}

/// Reaches mount's proxy on `host` through ssh (see `remote::ssh::reach`): one left lingering
/// by an earlier run, or one started now.
async fn reach_over_ssh(
    mount: &posh_core::config::Mount,
    user: Option<&str>,
    host: &str,
    port: Option<u16>,
    client: &Identity,
    lingering_dir: &std::path::Path,
) -> Result<(Connection, SshLink)> {
    let target = ssh::SshTarget { say: progress::eprintln, ..ssh::target_for_mount(mount, user, host, port)? };
    ssh::reach(&target, client, Some(lingering_dir)).await
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
        let dir = tempfile::Builder::new()
            .prefix(super::embedded_state::RUN_DIR_PREFIX)
            .tempdir()
            .context("cannot make the runtime's directory")?;
        let socket = dir.path().join("runtime.sock");
        let path = socket.to_str().context("the temporary directory's path is not UTF-8")?.to_string();
        let listener = UnixListener::bind(&socket).with_context(|| format!("cannot listen on {path}"))?;
        Ok(RuntimeSocket { dir, path, listener })
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// The run's private directory (mode 0700), removed when the run ends.
    pub fn directory(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// Runs `bash` (already given the rewritten script, which names `socket`, or posh's prompt) with
/// a session beside it; returns bash's status as posh-exec's. The proxies of `connect_first` are
/// connected first; with `background` jobs, posh-exec stays after bash until they end (see
/// [`await_background`]).
#[allow(clippy::too_many_arguments)] // one run's parts, each moved into its session
/// A run's runtime and session, started before its script is planned: the rewrite's questions
/// about the mounts' files then go to their proxies (`metadata::Planning`), on the connections
/// the run goes on using, instead of through the mounts one round trip after another.
pub struct Started {
    runtime: tokio::runtime::Runtime,
    pub session: Arc<Session>,
}

impl Started {
    /// Ends a session that runs nothing (the script was not rewritten): the proxies asked about
    /// its files learn at once that this client is gone.
    pub fn end(self) {
        self.runtime.block_on(self.session.close_connections());
        self.runtime.shutdown_timeout(Duration::from_secs(1));
    }
}

/// Starts the runtime and the session of a run whose private directory is `run_dir`.
/// `library` is the one the script was planned with, shared: its shipped entries are parsed
/// when first asked for, once for the run.
pub fn start(
    config: Config,
    library: Arc<Library>,
    ratios: Ratios,
    state: ClientState,
    run_dir: &std::path::Path,
) -> Result<Started> {
    // One worker: the runtime mostly waits, and on a small machine a second worker costs more in
    // thread hand-offs than it gives (bench/throughput.sh).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let session = Arc::new(Session {
        connections: config.mounts.iter().map(|_| tokio::sync::Mutex::default()).collect(),
        connecting: Connecting::new(CONNECTING_AT_ONCE),
        relayed_pipes: std::sync::Mutex::default(),
        answers: metadata::Answers::default(),
        asked_before_the_script: std::sync::Mutex::default(),
        config,
        library,
        ratios,
        state,
        identity: OnceCell::new(),
        run_dir: run_dir.to_path_buf(),
        embedded_identity: std::sync::OnceLock::new(),
        embedded_state: std::sync::OnceLock::new(),
        embedded_jobs: OnceCell::new(),
        journal: std::sync::OnceLock::new(),
        runtime: runtime.handle().clone(),
        in_flight: tokio::sync::watch::channel(0).0,
        predicting: std::sync::atomic::AtomicBool::new(true),
    });
    Ok(Started { runtime, session })
}

/// Runs `bash` (the rewritten script, or the prompt) beside the `started` session, serving its
/// calls on `socket`, whose directory is the session's.
pub fn run_script(
    started: Started,
    socket: RuntimeSocket,
    mut bash: Command,
    connect_first: &[usize],
    background: bool,
) -> Result<u8> {
    let Started { runtime, session } = started;
    let RuntimeSocket { dir, listener, .. } = socket;
    // Ctrl-C and Ctrl-\ are bash's to act on; posh-exec ends when bash does.
    let _signals = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        (signal(SignalKind::interrupt()), signal(SignalKind::quit()))
    });
    if progress::reporting() {
        let _guard = runtime.enter();
        if let Ok(mut int) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
            runtime.spawn(async move {
                while int.recv().await.is_some() {
                    progress::interrupted();
                }
            });
        }
    }
    if background {
        // A background job bash leaves behind becomes posh-exec's child, so that it is seen.
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
            .context("cannot become the subreaper of bash's background jobs")?;
    }
    let mut child = bash.spawn().context("cannot start bash")?;
    forward_ending_signals(&runtime, &child)?;
    // The proxies the plans use are connected while bash starts and the first pipeline is
    // planned: a handshake is a round trip or two that the first remote job no longer waits for.
    for &index in connect_first.iter() {
        if matches!(session.config.mounts[index].proxy, ProxyAddress::Remote { .. } | ProxyAddress::Ssh { .. }) {
            let session = session.clone();
            runtime.spawn(async move { session.connection(index).await });
        }
    }
    let serving = session.clone();
    std::thread::spawn(move || {
        let session = serving;
        for stream in listener.incoming().flatten() {
            let session = session.clone();
            std::thread::spawn(move || session.serve(stream));
        }
    });
    let status = child.wait().context("waiting for bash")?;
    let code = super::local::shell_status(status);
    if background && std::os::unix::process::ExitStatusExt::signal(&status).is_none() {
        runtime.block_on(await_background(&session));
    }
    // Pipelines whose callers went with bash (Ctrl-C) are given up first: closing the connections
    // under them would make a remote group fall back to the client and start its commands there.
    runtime.block_on(async {
        let mut in_flight = session.in_flight.subscribe();
        let _ = tokio::time::timeout(GIVE_UP_WAIT, in_flight.wait_for(|n| *n == 0)).await;
    });
    // The proxies learn at once that this client is done: a job still running for it (a
    // background pipeline bash left behind) ends instead of waiting out the idle timeout.
    runtime.block_on(session.close_connections());
    runtime.shutdown_timeout(Duration::from_secs(2));
    if let Some(Some(jobs)) = session.embedded_jobs.get() {
        jobs.remove();
    }
    // Erased before posh-exec ends (`end_by_signal` runs no destructor).
    progress::end();
    drop(dir);
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        end_by_signal(signal);
    }
    Ok((code & 0xff) as u8)
}

/// Ends posh-exec by `signal`, as bash ended: a calling shell tells an interrupted command from
/// one that exited 130 (an interactive loop stops at Ctrl-C only for the former). posh-exec
/// catches SIGINT and SIGQUIT and Rust resets a handler only in unsafe code, but exec does it:
/// posh-exec becomes a shell that sends itself the signal. Returns only if that fails.
fn end_by_signal(signal: i32) {
    use std::os::unix::process::CommandExt as _;
    let error = Command::new("bash").args(["-c", &format!("kill -{signal} $$")]).exec();
    tracing::debug!("cannot end by signal {signal}: {error}");
}

/// How long a call waits for a proxy to expand its globs before bash expands them here.
const GLOB_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
