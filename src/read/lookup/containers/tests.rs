//! Tables from post-order cells, nesting errors, lookups by start and event.

use zerocopy::byteorder::{BigEndian, I32, I64};

use super::table::*;
use super::*;
use crate::common::EventId;

use crate::format::ObjectKind;

/// Made cells only, and a view of them.
struct Made(Vec<RawIndexCell>);

impl Made {
    fn view(&self) -> CellView<'_> {
        CellView::made(&self.0)
    }
}

fn made_cells(cells: Vec<RawIndexCell>) -> Made {
    Made(cells)
}

fn cell(event: i32, start: u64, end: u64) -> RawIndexCell {
    RawIndexCell {
        kind: ObjectKind::Tracepoint as u8,
        id: I32::<BigEndian>::new(event),
        start: I64::<BigEndian>::new(start as i64),
        end: I64::<BigEndian>::new(end as i64),
    }
}

/// A random forest of containers: (event, start, end) in pre-order.
fn forest(seed: u64, count: usize) -> Vec<(i32, u64, u64)> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // Open containers as (event, start); positions advance by 10 per step.
    let mut out: Vec<(i32, u64, u64)> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut at = 0u64;
    let mut made = 0;
    while made < count || !open.is_empty() {
        at += 10;
        if made < count && (open.is_empty() || next() % 3 != 0) {
            out.push((made as i32 * 2, at, 0));
            open.push(out.len() - 1);
            made += 1;
        } else if let Some(index) = open.pop() {
            out[index].2 = at;
        }
    }
    out
}

#[test]
fn post_order_converts_to_start_order() {
    for seed in 1..40 {
        let pre = forest(seed, 1 + seed as usize * 7);
        let mut post: Vec<(i32, u64, u64)> = pre.clone();
        post.sort_by_key(|c| c.2);
        let cells = made_cells(post.iter().map(|&(e, s, n)| cell(e, s, n)).collect());
        let table = ContainerTable::from_post_order(cells.view(), (0..post.len() as u32).collect())
            .unwrap();
        let got: Vec<_> = (0..table.len())
            .map(|k| {
                (
                    table.event(cells.view(), k).0,
                    table.start(cells.view(), k).0,
                    table.end(cells.view(), k).0,
                )
            })
            .collect();
        assert_eq!(got, pre, "seed {seed}");
        assert!(table.events_ascend());
        // Any input order gives the same table.
        let shuffled: Vec<u32> = (0..post.len() as u32).rev().collect();
        let again = ContainerTable::from_post_order(cells.view(), shuffled).unwrap();
        assert_eq!(again.order, table.order);
        // Parents, by brute force.
        for k in 0..pre.len() {
            let expected = (0..k)
                .rev()
                .find(|&j| pre[j].1 < pre[k].1 && pre[k].2 < pre[j].2);
            assert_eq!(
                table.parent(cells.view(), k),
                expected,
                "seed {seed}, container {k}"
            );
            let mut hint = None;
            assert_eq!(
                table.find_start(cells.view(), LogicalOffset(pre[k].1), hint),
                Some(k)
            );
            if k > 0 {
                hint = Some(k - 1);
            }
            assert_eq!(
                table.find_start(cells.view(), LogicalOffset(pre[k].1), hint),
                Some(k)
            );
            assert_eq!(
                table.find_start(cells.view(), LogicalOffset(pre[k].1 + 1), None),
                None
            );
            assert_eq!(table.find_event(cells.view(), EventId(pre[k].0)), Some(k));
            assert_eq!(table.find_event(cells.view(), EventId(pre[k].0 + 1)), None);
        }
    }
}

#[test]
fn parent_search_crosses_chunks() {
    // One wide container around 1,000 small ones.
    let mut pre = vec![(0, 1u64, 100_000u64)];
    for i in 0..1000u64 {
        pre.push((1 + i as i32, 10 + i * 10, 15 + i * 10));
    }
    let cells = made_cells(pre.iter().map(|&(e, s, n)| cell(e, s, n)).collect());
    let table =
        ContainerTable::from_post_order(cells.view(), (0..pre.len() as u32).collect()).unwrap();
    assert_eq!(table.parent(cells.view(), 0), None);
    for k in 1..pre.len() {
        assert_eq!(table.parent(cells.view(), k), Some(0));
    }
}

#[test]
fn crossing_and_shared_ends_are_rejected() {
    let cells = made_cells(vec![cell(0, 10, 50), cell(1, 20, 60)]);
    assert!(matches!(
        ContainerTable::from_post_order(cells.view(), vec![0, 1]),
        Err(NestingError::Crossing { .. })
    ));
    let cells = made_cells(vec![cell(0, 10, 50), cell(1, 20, 50)]);
    assert!(matches!(
        ContainerTable::from_post_order(cells.view(), vec![0, 1]),
        Err(NestingError::SameEnd { .. })
    ));
}

#[test]
fn events_out_of_order_are_found_through_a_sorted_copy() {
    let cells = made_cells(vec![cell(9, 20, 30), cell(5, 40, 50), cell(7, 10, 60)]);
    let table = ContainerTable::from_post_order(cells.view(), vec![0, 1, 2]).unwrap();
    assert!(!table.events_ascend());
    assert_eq!(table.find_event(cells.view(), EventId(7)), Some(0));
    assert_eq!(table.find_event(cells.view(), EventId(9)), Some(1));
    assert_eq!(table.find_event(cells.view(), EventId(5)), Some(2));
    assert_eq!(table.find_event(cells.view(), EventId(6)), None);
}

#[test]
fn searches_through_the_fence_agree_with_a_linear_scan() {
    // Sizes around multiples of the fence's spacing (64), and a large one.
    for (seed, count) in [(3, 1), (5, 63), (7, 64), (9, 65), (11, 129), (13, 1000)] {
        let pre = forest(seed, count);
        let mut post = pre.clone();
        post.sort_by_key(|c| c.2);
        let cells = made_cells(post.iter().map(|&(e, s, n)| cell(e, s, n)).collect());
        let table = ContainerTable::from_post_order(cells.view(), (0..post.len() as u32).collect())
            .unwrap();
        check_searches(&pre, &table, cells.view(), seed);
        // The same containers as a sidecar maps them: a table that builds
        // its fence after some searches.
        let mut arrays = Vec::new();
        for c in &pre {
            arrays.extend_from_slice(&c.1.to_le_bytes());
        }
        for c in &pre {
            arrays.extend_from_slice(&c.2.to_le_bytes());
        }
        for c in &pre {
            arrays.extend_from_slice(&c.0.to_le_bytes());
        }
        // Mapped, so that copied reads copy (bytes in memory are lent).
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("arrays"), &arrays).unwrap();
        let flat = MappedCells {
            bytes: crate::storage::TraceBytes::map(dir.path().join("arrays")).unwrap(),
            starts: 0,
            ends: pre.len() * 8,
            events: pre.len() * 16,
            len: pre.len(),
        };
        let maxima: Vec<u64> = (0..chunk_count(pre.len()))
            .map(|c| {
                pre[c * 256..pre.len().min(c * 256 + 256)]
                    .iter()
                    .map(|c| c.2)
                    .max()
                    .unwrap()
            })
            .collect();
        // Lent and copied reads, before and after the fence is built.
        for reads in [Reads::Lend, Reads::Copy] {
            let mapped = ContainerTable::mapped(pre.len(), Words::Owned(maxima.clone()), true);
            let cells = CellView::flat(&flat, reads);
            check_searches(&pre, &mapped, cells, seed);
            check_searches(&pre, &mapped, cells, seed);
        }
    }
}

/// Every search of `table` by start and by event id against a linear scan
/// of `pre` (event, start, end in start order).
fn check_searches(pre: &[(i32, u64, u64)], table: &ContainerTable, cells: CellView<'_>, seed: u64) {
    let last = pre.last().map_or(0, |c| c.2);
    for at in (0..last + 20).step_by(5) {
        let expected = pre.iter().rposition(|c| c.1 <= at);
        assert_eq!(
            table.last_starting_at_or_before(cells, LogicalOffset(at)),
            expected,
            "seed {seed}, offset {at}"
        );
        let exact = pre.iter().position(|c| c.1 == at);
        assert_eq!(table.find_start(cells, LogicalOffset(at), None), exact);
        let range = exact.map(|k| (k, LogicalOffset(pre[k].2)));
        assert_eq!(table.find_range(cells, LogicalOffset(at)), range);
        let after = pre.iter().position(|c| c.1 >= at).unwrap_or(pre.len());
        assert_eq!(
            table.first_starting_at_or_after(cells, LogicalOffset(at)),
            after
        );
        let run = table.run_from(cells, LogicalOffset(at), 3);
        assert_eq!(run.position(), after, "seed {seed}, offset {at}");
        let ranges: Vec<_> = run.ranges().map(|(s, e)| (s.0, e.0)).collect();
        let want: Vec<_> = pre[after..].iter().take(3).map(|c| (c.1, c.2)).collect();
        assert_eq!(ranges, want, "seed {seed}, offset {at}");
        let before = table.run_before(cells, LogicalOffset(at), 3);
        let last = expected.map_or(0, |k| k + 1);
        assert_eq!(
            before.position() + before.len(),
            last,
            "seed {seed}, offset {at}"
        );
    }
    for event in -2..pre.len() as i32 * 2 + 2 {
        let expected = pre.iter().rposition(|c| c.0 < event);
        assert_eq!(
            table.last_event_below(cells, EventId(event)),
            expected,
            "seed {seed}, event {event}"
        );
        let exact = pre.iter().position(|c| c.0 == event);
        assert_eq!(table.find_event(cells, EventId(event)), exact);
    }
}
