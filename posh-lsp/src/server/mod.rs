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
mod handlers;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tower_lsp::{Client, LspService, Server};

use crate::ide::{Settings, World};
use crate::os_fs::CachedFs;
pub use convert::Lines;
use documents::Store;

/// How long a script's analysis may spend on the file system before unknown sizes count as 0.
const FS_BUDGET: Duration = Duration::from_millis(300);
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
    settings: Settings,
    /// The client accepts `workspace/inlayHint/refresh`.
    inlay_refresh: bool,
    /// The client can register file watchers.
    dynamic_watch: bool,
}

impl Backend {
    pub fn new(client: Client) -> Backend {
        Backend::with_debounce(client, Duration::from_millis(150))
    }

    pub fn with_debounce(client: Client, debounce: Duration) -> Backend {
        let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let inner = Inner {
            client,
            state: Mutex::new(State {
                store: Store::default(),
                world: Arc::new(World::new(root)),
                root: None,
                user_config_dir: crate::os_fs::user_config_dir(),
                settings: Settings::default(),
                inlay_refresh: false,
                dynamic_watch: false,
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

/// Serves the protocol on standard input and output until the client exits.
pub async fn serve_stdio() {
    let (service, socket) = LspService::new(Backend::new);
    Server::new(tokio::io::stdin(), tokio::io::stdout(), socket).serve(service).await;
}
