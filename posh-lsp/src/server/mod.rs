//! The language server: a thin tower-lsp layer over `crate::ide`. It alone knows LSP types and
//! UTF-16 positions (`convert`).
//!
//! Concurrency: tower-lsp runs handlers concurrently, so every document lives in one store
//! behind one lock; edits are applied in order under it, and every request copies out a
//! snapshot (text, version, world) and answers from that. A script's analysis is computed once
//! per version (off the async threads), cached, and its diagnostics are published after a short
//! debounce, only if no newer edit arrived meanwhile.

mod convert;
mod documents;
pub mod framing;
mod handlers;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;
use tower_lsp::jsonrpc::Request;
use tower_lsp::{Client, LspService, Server};
use tower_service::Service;

use crate::ide::{Settings, World};
use crate::os_fs::CachedFs;
pub use convert::Lines;
use documents::Store;

/// How long a script's analysis may spend on the file system before unknown sizes count as 0
/// (`POSH_LSP_FS_BUDGET_MS` sets another). Such an analysis is answered with only when nothing
/// better is known, never kept, and done again in the background with [`FS_LATE_BUDGET`].
fn fs_budget() -> Duration {
    static BUDGET: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(|| {
        let ms = std::env::var("POSH_LSP_FS_BUDGET_MS").ok().and_then(|ms| ms.parse().ok());
        Duration::from_millis(ms.unwrap_or(300))
    })
}
/// The budget of an analysis done again in the background after [`fs_budget`] ran out.
const FS_LATE_BUDGET: Duration = Duration::from_secs(20);
/// The budget of loading posh.toml and the annotation files.
const FS_WORLD_BUDGET: Duration = Duration::from_secs(3);
/// Between an edit and the diagnostics it causes, by default.
const DEBOUNCE: Duration = Duration::from_millis(150);
/// How long answers from the disk are kept (watched-file notifications clear them earlier).
const FS_TTL: Duration = Duration::from_secs(10);

/// The server. Cheap to clone (one shared inside), so debounced work can run as its own task.
#[derive(Debug, Clone)]
pub struct Backend {
    inner: Arc<Inner>,
}

/// The server's shared state (reached through [`Backend`]).
#[derive(Debug)]
pub struct Inner {
    client: Client,
    state: Mutex<State>,
    fs: Arc<CachedFs>,
    /// Between an edit and the diagnostics it causes.
    debounce: Duration,
}

impl std::ops::Deref for Backend {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.inner
    }
}

#[derive(Debug)]
struct State {
    store: Store,
    world: Arc<World>,
    root: Option<PathBuf>,
    user_config_dir: Option<PathBuf>,
    user_state_dir: Option<PathBuf>,
    settings: Settings,
    /// The client accepts `workspace/inlayHint/refresh`.
    inlay_refresh: bool,
    /// The client accepts `workspace/codeLens/refresh`.
    lens_refresh: bool,
    /// What of inlay hints the client resolves when it shows them.
    deferred: convert::Deferred,
    /// Documents (and versions) whose analysis is being done again in the background.
    late: std::collections::HashSet<(tower_lsp::lsp_types::Url, i32)>,
    /// The client can register file watchers.
    dynamic_watch: bool,
    /// The client watches files outside the workspace for us (`RelativePattern`).
    relative_watch: bool,
    /// The posh.toml files whose diagnostics were last published.
    config_diagnostics: Vec<tower_lsp::lsp_types::Url>,
}

/// The user's directories the server reads: the configuration directory (a posh.toml for every
/// directory) and the state directory (posh-exec's learned ratios).
#[derive(Clone, Debug, Default)]
pub struct UserDirPaths {
    pub config: Option<PathBuf>,
    pub state: Option<PathBuf>,
}

impl UserDirPaths {
    /// `$XDG_CONFIG_HOME` and `$XDG_STATE_HOME`, else under `$HOME`.
    pub fn from_env() -> UserDirPaths {
        UserDirPaths { config: crate::os_fs::user_config_dir(), state: crate::os_fs::user_state_dir() }
    }
}

impl Backend {
    pub fn new(client: Client) -> Backend {
        Backend::with_debounce(client, DEBOUNCE, UserDirPaths::from_env())
    }

    pub fn with_debounce(client: Client, debounce: Duration, user_dirs: UserDirPaths) -> Backend {
        let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let inner = Inner {
            client,
            state: Mutex::new(State {
                store: Store::default(),
                world: Arc::new(World::new(root)),
                root: None,
                user_config_dir: user_dirs.config,
                user_state_dir: user_dirs.state,
                settings: Settings::default(),
                inlay_refresh: false,
                lens_refresh: false,
                deferred: Default::default(),
                late: Default::default(),
                dynamic_watch: false,
                relative_watch: false,
                config_diagnostics: Vec::new(),
            }),
            fs: Arc::new(CachedFs::new(FS_TTL)),
            debounce,
        };
        Backend { inner: Arc::new(inner) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Serves the protocol on standard input and output until the client sends `exit` or closes
/// standard input. Messages pass through [`framing`] both ways.
pub async fn serve_stdio() {
    serve(tokio::io::stdin(), tokio::io::stdout(), DEBOUNCE).await;
}

/// Serves the protocol on `input` and `output` (see [`serve_stdio`]), with diagnostics published
/// `debounce` after an edit.
pub async fn serve(
    input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    debounce: Duration,
) {
    serve_with(input, output, debounce, UserDirPaths::from_env()).await;
}

/// [`serve`] reading the user's configuration and state from `user_dirs` instead of the
/// environment's (a test's server in its own process reads none of the user's).
pub async fn serve_with(
    input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    debounce: Duration,
    user_dirs: UserDirPaths,
) {
    let (service, socket) =
        LspService::build(move |client| Backend::with_debounce(client, debounce, user_dirs.clone()))
            .custom_method(framing::LOST_CHANGE, Backend::lost_change)
            .finish();
    let (service, exit) = Compat::new(service);
    let (to_server, server_reads) = tokio::io::duplex(1 << 16);
    let (server_writes, from_server) = tokio::io::duplex(1 << 16);
    let (answers, answered) = tokio::sync::mpsc::unbounded_channel();
    let (gone, output_gone) = tokio::sync::oneshot::channel();
    let written = tokio::spawn(framing::merge_output(from_server, output, answered, gone));
    {
        let client_input = framing::filter_input(input, to_server, answers);
        let server = Server::new(server_reads, server_writes, socket).serve(service);
        tokio::select! {
            () = server => {}
            () = exit.notified() => {}
            () = client_input => {}
            // The client closed the server's output before its input: nothing can reach it any
            // more, so the server ends (cleanly: its output is drained meanwhile).
            Ok(()) = output_gone => framing::log("the client closed the server's output; exiting"),
        }
    }
    // The server and the filter are dropped: what they wrote is flushed, then the output ends.
    let _ = tokio::time::timeout(Duration::from_secs(1), written).await;
}

/// What tower-lsp needs around it to serve real clients: `shutdown` and `exit` with
/// `"params": null` (as eglot 1.9 sends them) are passed on without params, which is how
/// tower-lsp accepts them; and `exit` is announced through the `Notify` that [`Compat::new`]
/// returns, since tower-lsp itself stops only when standard input closes.
pub struct Compat<S> {
    inner: S,
    exit: Arc<Notify>,
}

impl<S> Compat<S> {
    pub fn new(inner: S) -> (Compat<S>, Arc<Notify>) {
        let exit = Arc::new(Notify::new());
        (Compat { inner, exit: exit.clone() }, exit)
    }
}

impl<S> std::fmt::Debug for Compat<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compat")
    }
}

impl<S: Service<Request>> Service<Request> for Compat<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> S::Future {
        let exit = request.method() == "exit";
        let bare = matches!(request.method(), "shutdown" | "exit") && request.params() == Some(&Value::Null);
        let request = if bare {
            let (method, id, _) = request.into_parts();
            let builder = Request::build(method);
            match id {
                Some(id) => builder.id(id).finish(),
                None => builder.finish(),
            }
        } else {
            request
        };
        let answer = self.inner.call(request);
        if exit {
            self.exit.notify_one();
        }
        answer
    }
}
