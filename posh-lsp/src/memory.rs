//! The server's memory. An analysis is tens of thousands of small allocations, made on one thread
//! and freed on another ([`free_later`]); glibc's allocator spent about a third of a keystroke in
//! malloc and free there, its arenas' locks contended, and it kept what was freed unless asked.
//! The binary allocates with mimalloc (`main.rs`), which frees across threads without a lock and
//! returns freed pages to the system by itself; an editor session is long, so a closed document's
//! memory is also given back at once (benches/stdio.rs measures both).
//!
//! mimalloc asks the kernel for transparent huge pages. An opening's analysis touches 45 MB of
//! fresh memory, and at 4 KiB a page the faults were a sixth of its samples: with huge pages an
//! opening of a varied 5,000-line script is about a fifth quicker (92 -> 72 ms in three pairs),
//! for 70 to 85 MB held after opening instead of 45, and about 100 MB after closing instead of
//! 55 (docs/lsp.md, "Huge pages").

#![allow(unsafe_code)] // mimalloc's mi_collect: no safe wrapper

/// Returns the allocator's free memory to the system (after a document closed or a version was
/// replaced).
pub fn give_back() {
    // SAFETY: mi_collect takes no pointer; it frees what the calling thread's heap holds unused
    // and is safe to call from any thread.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}

/// Frees `value` on a thread of its own, and every [`TRIM_EVERY`]th time gives memory back
/// there too: freeing a replaced analysis of a large script takes milliseconds, and giving back
/// walks the heap, work a keystroke's answer should not wait for.
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
