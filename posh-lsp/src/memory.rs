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

/// Frees `value` on a thread of its own, and every [`TRIM_EVERY`]th time gives memory back
/// there too: freeing a replaced analysis of a large script takes milliseconds, and a trim walks
/// the heap, work a keystroke's answer should not wait for.
pub fn free_later<T: Send + 'static>(value: T) {
    use std::sync::OnceLock;
    use std::sync::mpsc::{Sender, channel};
    static FREER: OnceLock<Sender<Box<dyn Send>>> = OnceLock::new();
    let freer = FREER.get_or_init(|| {
        let (send, receive) = channel::<Box<dyn Send>>();
        // Without a thread (spawning failed) the receiver is gone: each send fails and hands its
        // value back, freed where it was sent.
        let _ = std::thread::Builder::new().name("posh-lsp-free".into()).spawn(move || {
            for (freed, value) in receive.into_iter().enumerate() {
                drop(value);
                if freed % TRIM_EVERY == TRIM_EVERY - 1 {
                    give_back();
                }
            }
        });
        send
    });
    // A failed send hands the value back in its error, freed here.
    let _ = freer.send(Box::new(value));
}

const TRIM_EVERY: usize = 50;
