//! Work of an opening spread over the machine's cores: a file opened (or changed in most of
//! it) has hundreds of chunks to parse and plan, each on its own.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `work` of each of `items`, in order: on every core (at most 8) when there are at least
/// `from` of them, else on this thread. A panic in a thread is raised again here.
///
/// Each thread takes the next item not taken yet: chunks differ in cost (a loop of twenty
/// pipelines beside a comment), and halves fixed in advance left one core idle while the other
/// finished its half.
pub fn on_every_core<T: Sync, R: Send>(items: &[T], from: usize, work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    if items.len() < from.max(2) || threads < 2 {
        return items.iter().map(&work).collect();
    }
    let (work, next) = (&work, &AtomicUsize::new(0));
    let take = move || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { return done };
            done.push((i, work(item)));
        }
    };
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        // This thread works too: one thread fewer to start.
        let others: Vec<_> = (1..threads).map(|_| scope.spawn(take)).collect();
        let mut done = take();
        for other in others {
            done.extend(other.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, result)| result).collect()
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
