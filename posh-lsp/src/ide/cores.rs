//! Work of an opening spread over the machine's cores: a file opened (or changed in most of
//! it) has hundreds of chunks to parse and plan, each on its own.

/// `work` of each of `items`, in order: on every core (at most 8) when there are at least
/// `from` of them, else on this thread. A panic in a thread is raised again here.
pub fn on_every_core<T: Sync, R: Send>(items: &[T], from: usize, work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    if items.len() < from.max(2) || threads < 2 {
        return items.iter().map(&work).collect();
    }
    let work = &work;
    std::thread::scope(|scope| {
        let working: Vec<_> = items
            .chunks(items.len().div_ceil(threads))
            .map(|part| scope.spawn(move || part.iter().map(work).collect::<Vec<R>>()))
            .collect();
        working.into_iter().flat_map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
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
