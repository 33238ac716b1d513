//! Memory the proxy gives back to the system once a load has passed.
//!
//! glibc's malloc keeps what a thread freed in that thread's arena for its next allocations:
//! after a flood of connections ended, a proxy kept 190 MB it no longer used (614 MB after
//! one introduced proxy's flood) until the next flood reused it. `malloc_trim(0)` hands the
//! free pages of every arena back. The proxy calls it when it becomes idle ([`Trimmer`]).
//!
//! This module, `sandbox` and `supervisor` are the proxy's only `unsafe` code.
#![allow(unsafe_code)]

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// Hands the free memory of every malloc arena back to the system; whether some was.
pub fn give_back() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes no pointer and works on malloc's own free lists under
        // malloc's locks: any thread may call it at any time.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// The shortest time between two trims: trimming takes each arena's lock, and a proxy whose
/// connections come and go all the time need not trim at each.
const BETWEEN_TRIMS: Duration = Duration::from_secs(1);

/// Gives memory back each time it is told the proxy became idle ([`Trimmer::idle`]), off the
/// reactor, at most once per [`BETWEEN_TRIMS`] (an idleness told meanwhile trims after it).
#[derive(Clone, Debug)]
pub struct Trimmer {
    idle: Arc<Notify>,
}

impl Trimmer {
    /// Starts the task that trims; it ends with the runtime.
    pub fn start() -> Trimmer {
        let idle = Arc::new(Notify::new());
        let told = idle.clone();
        tokio::spawn(async move {
            loop {
                told.notified().await;
                let gave = tokio::task::spawn_blocking(give_back).await;
                tracing::debug!("idle: memory given back: {gave:?}");
                tokio::time::sleep(BETWEEN_TRIMS).await;
            }
        });
        Trimmer { idle }
    }

    /// The proxy became idle: no stream in flight, or a connection ended while none was.
    pub fn idle(&self) {
        self.idle.notify_one();
    }
}
