//! The server's memory, given back: an editor session is long, and glibc's allocator keeps what
//! was freed (an arena per thread that allocated, none of it returned unless asked). A document's
//! analyses are freed at every keystroke and at close; without this, the server's resident size
//! grew with the keystrokes and stayed after the document was closed (benches/stdio.rs).

#![allow(unsafe_code)] // glibc's mallopt and malloc_trim: no Rust wrapper

/// At most two allocator arenas: the analyses run on tokio's blocking threads, each of which
/// would otherwise get an arena of its own that holds on to its peak.
pub fn limit_arenas() {
    // SAFETY: a glibc tunable, set before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Returns the allocator's free memory to the system (after a document closed or a version was
/// replaced).
pub fn give_back() {
    // SAFETY: glibc's malloc_trim takes no pointer and is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Called after each analysis: every [`TRIM_EVERY`]th gives memory back (a trim walks the heap,
/// about a millisecond, too much for every keystroke).
pub fn after_analysis() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static ANALYSES: AtomicUsize = AtomicUsize::new(0);
    if ANALYSES.fetch_add(1, Ordering::Relaxed) % TRIM_EVERY == TRIM_EVERY - 1 {
        give_back();
    }
}

const TRIM_EVERY: usize = 50;
