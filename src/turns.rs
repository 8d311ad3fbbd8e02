//! Work taken in turns: items `0..count` handed out one at a time to
//! whichever thread asks next, so that items of uneven cost balance across
//! cores; [`in_turns`] runs them on scoped threads and gives the results
//! back by item.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Items `0..count`, each handed out once.
#[derive(Debug)]
pub(crate) struct Turns {
    next: AtomicUsize,
    count: usize,
}

impl Turns {
    /// Items `0..count`, none handed out yet.
    pub(crate) fn new(count: usize) -> Self {
        Turns {
            next: AtomicUsize::new(0),
            count,
        }
    }

    /// The next item not handed out, if any is left.
    pub(crate) fn take(&self) -> Option<usize> {
        let item = self.next.fetch_add(1, Ordering::Relaxed);
        (item < self.count).then_some(item)
    }

    /// Hands out nothing more.
    pub(crate) fn stop(&self) {
        self.next.fetch_max(self.count, Ordering::Relaxed);
    }
}

/// `f` of items `0..count`, taken in turn by up to `workers` scoped
/// threads, each with a state of its own, made when it starts (`start`):
/// the results by item. Once a result is one `stops` accepts, nothing more
/// is handed out, and the items never taken have no result. A panic in a
/// worker is resumed here.
pub(crate) fn in_turns<S, T: Send>(
    workers: usize,
    count: usize,
    start: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) -> T + Sync,
    stops: impl Fn(&T) -> bool + Sync,
) -> Vec<Option<T>> {
    let turns = Turns::new(count);
    let done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..workers.clamp(1, count.max(1)))
            .map(|_| {
                scope.spawn(|| {
                    let mut state = start();
                    let mut done = Vec::new();
                    while let Some(item) = turns.take() {
                        let result = f(&mut state, item);
                        if stops(&result) {
                            turns.stop();
                        }
                        done.push((item, result));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut results: Vec<Option<T>> = (0..count).map(|_| None).collect();
    for (item, result) in done {
        results[item] = Some(result);
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_in_order_of_items() {
        let results = in_turns(
            3,
            100,
            || 0usize,
            |seen, item| {
                *seen += 1;
                item * 2
            },
            |_| false,
        );
        let expected: Vec<Option<usize>> = (0..100).map(|item| Some(item * 2)).collect();
        assert_eq!(results, expected);
    }

    #[test]
    fn a_stopping_result_ends_the_handout() {
        // One worker: items after the stopping one are never taken.
        let results = in_turns(1, 10, || (), |_, item| item, |&item| item == 3);
        assert_eq!(&results[..4], &[Some(0), Some(1), Some(2), Some(3)]);
        assert!(results[4..].iter().all(Option::is_none));
        let turns = Turns::new(2);
        assert_eq!(
            (turns.take(), turns.take(), turns.take()),
            (Some(0), Some(1), None)
        );
        let turns = Turns::new(5);
        turns.stop();
        assert_eq!(turns.take(), None);
    }
}
