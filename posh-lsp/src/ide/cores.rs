//! Work of an opening spread over the machine's cores: a file opened (or changed in most of
//! it) has hundreds of chunks to parse and plan, each on its own.
//!
//! The threads are rayon's, started once and kept: threads started for each step (the parse,
//! the planning, the hints) began with empty heaps, and each step's allocations then took fresh
//! pages from the allocator's slow path where a kept thread reuses what the step before freed.

use std::sync::Once;

/// `work` of each of `items`, in order: on every core (at most 8) when there are at least
/// `from` of them, else on this thread. A panic in a thread is raised again here.
///
/// Each item is a task of its own, taken by whichever thread is free: chunks differ in cost (a
/// loop of twenty pipelines beside a comment), and halves fixed in advance left one core idle
/// while the other finished its half.
pub fn on_every_core<T: Sync, R: Send>(items: &[T], from: usize, work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use rayon::prelude::*;
    static THREADS: Once = Once::new();
    THREADS.call_once(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        // Already built (by a test's other server in the same process): that pool serves.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .thread_name(|i| format!("posh-lsp-core{i}"))
            .build_global();
    });
    if items.len() < from.max(2) || rayon::current_num_threads() < 2 {
        return items.iter().map(&work).collect();
    }
    let work = &work;
    items.par_iter().with_max_len(1).map(work).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_in_the_order_of_the_items() {
        let items: Vec<usize> = (0..100).collect();
        assert_eq!(super::on_every_core(&items, 16, |i| i * 2), items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(super::on_every_core(&items[..3], 16, |i| i + 1), [1, 2, 3]);
    }
}
