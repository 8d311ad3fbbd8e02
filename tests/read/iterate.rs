//! What an embedder keeps and steps through: node handles, the child,
//! subtree and following iterators, `find` and `node_text`, against
//! a walk of the same traces and `search`.

use tracetree::common::{LogicalOffset, ThreadId};
use tracetree::generate::Shape;
use tracetree::print::node_text;
use tracetree::read::{LazyNode, LazyTraceReader, NodeHandle, WalkDetail};
use tracetree::search::{SearchFrom, SearchOptions};
use tracetree_testkit::files::generated;
use tracetree_testkit::lazy::{reference_traces, testdata_traces};

/// The bundled and reference traces, and a generated wide one (a call
/// with more children than an iterator's page).
fn traces(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut traces = testdata_traces();
    traces.extend(reference_traces());
    traces.push(generated(dir, Shape::Wide, 1, 256 << 10, None));
    traces
}

/// Every node of `thread` with its depth, as the walk meets them.
fn walked(reader: &LazyTraceReader, thread: ThreadId) -> Vec<(LazyNode, usize)> {
    let mut nodes = Vec::new();
    reader
        .walk_thread(thread, WalkDetail::Headers, |w| {
            nodes.push((w.node, w.depth));
            Ok(true)
        })
        .unwrap();
    nodes
}

#[test]
fn handles_come_back_to_their_nodes_and_odd_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for trace in traces(dir.path()) {
        let reader = LazyTraceReader::open(&trace).unwrap();
        let again = LazyTraceReader::open(&trace).unwrap();
        for thread in reader.thread_ids() {
            for (node, _) in walked(&reader, thread).into_iter().take(3000) {
                let handle = reader.handle(node);
                assert_eq!(handle.thread, thread);
                // Another reader of the same trace finds the same node.
                let found = again.resolve_handle(handle).unwrap();
                assert_eq!(again.handle(found), handle);
                assert_eq!(
                    again.node(found).unwrap().tracepoint().event(),
                    reader.node(node).unwrap().tracepoint().event()
                );
                // One byte in is no tracepoint's start.
                let inside = NodeHandle {
                    offset: LogicalOffset::new(handle.offset.get() + 1),
                    ..handle
                };
                assert!(reader.resolve_handle(inside).is_err(), "{inside:?}");
                checked += 1;
            }
            let far = NodeHandle {
                thread,
                offset: LogicalOffset::new(u64::MAX / 2),
            };
            assert!(reader.resolve_handle(far).is_err());
        }
        let stranger = NodeHandle {
            thread: ThreadId::new(i32::MAX),
            offset: LogicalOffset::new(0),
        };
        assert!(reader.resolve_handle(stranger).is_err());
    }
    assert!(checked > 1000, "{checked} handles checked");
}

#[test]
fn iterators_visit_what_the_walk_visits() {
    let dir = tempfile::tempdir().unwrap();
    for trace in traces(dir.path()) {
        let reader = LazyTraceReader::open(&trace).unwrap();
        for thread in reader.thread_ids() {
            let all = walked(&reader, thread);
            let listed: Vec<_> = reader.thread_nodes(thread).map(Result::unwrap).collect();
            assert_eq!(listed, all, "{}", trace.display());
            let roots: Vec<_> = reader.roots_iter(thread).map(Result::unwrap).collect();
            assert_eq!(roots, reader.roots(thread).unwrap());
            // A few nodes of every depth: children, subtree and what follows.
            for (i, &(node, depth)) in all.iter().enumerate().step_by(97).take(40) {
                let children: Vec<_> = reader.children_iter(node).map(Result::unwrap).collect();
                assert_eq!(children, reader.children(node).unwrap());
                let subtree: Vec<_> = reader
                    .subtree(node)
                    .take(5000)
                    .map(Result::unwrap)
                    .collect();
                let end = all[i + 1..]
                    .iter()
                    .position(|&(_, d)| d <= depth)
                    .map_or(all.len(), |k| i + 1 + k);
                let end = end.min(i + 5000);
                let expected: Vec<_> = all[i..end].iter().map(|&(n, d)| (n, d - depth)).collect();
                assert_eq!(subtree, expected);
                // What follows, to the thread's end or for 1,000 nodes.
                let following: Vec<_> = reader
                    .following(node)
                    .unwrap()
                    .take(1000)
                    .map(Result::unwrap)
                    .collect();
                assert_eq!(following, all[i + 1..all.len().min(i + 1001)]);
            }
        }
    }
}

#[test]
fn find_next_from_hit_to_hit_finds_what_search_finds_with_the_same_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut hits = 0;
    for trace in traces(dir.path()) {
        let reader = LazyTraceReader::open(&trace).unwrap();
        for (pattern, text) in [("run", false), ("a", true), ("Worker", false)] {
            let mut options = SearchOptions::new(pattern);
            options.text = text;
            options.ignore_case = text;
            options.max = usize::MAX;
            let all = options.search(&reader, &|_| {}).unwrap();
            for thread in reader.thread_ids() {
                let expected: Vec<_> = all.hits.iter().filter(|h| h.thread == thread).collect();
                let mut from = SearchFrom::ThreadStart(thread);
                for hit in expected.into_iter().take(200) {
                    let found = from.find(&reader, &options).unwrap().unwrap();
                    assert_eq!(&found, hit, "{}", trace.display());
                    assert_eq!(node_text(&reader, found.node, false).unwrap(), found.line);
                    from = SearchFrom::After(found.node);
                    hits += 1;
                }
                if all.hits.iter().filter(|h| h.thread == thread).count() <= 200 {
                    assert_eq!(from.find(&reader, &options).unwrap(), None);
                }
            }
        }
    }
    assert!(hits > 50, "{hits} hits followed");
}

#[test]
fn find_previous_walks_back_from_hit_to_hit() {
    let dir = tempfile::tempdir().unwrap();
    let mut hits = 0;
    for trace in traces(dir.path()) {
        let reader = LazyTraceReader::open(&trace).unwrap();
        for (pattern, text) in [("run", false), ("a", true), ("Worker", false)] {
            let mut options = SearchOptions::new(pattern);
            options.text = text;
            options.ignore_case = text;
            options.max = usize::MAX;
            let all = options.search(&reader, &|_| {}).unwrap();
            for thread in reader.thread_ids() {
                let expected: Vec<_> = all.hits.iter().filter(|h| h.thread == thread).collect();
                // From the last 100 hits back: each finds the one before.
                let tail = expected.len().saturating_sub(100);
                let from_end = SearchFrom::ThreadEnd(thread).find(&reader, &options);
                assert_eq!(from_end.unwrap().as_ref(), expected.last().copied());
                for pair in expected[tail..].windows(2) {
                    let found = SearchFrom::Before(pair[1].node)
                        .find(&reader, &options)
                        .unwrap();
                    assert_eq!(found.as_ref(), Some(pair[0]), "{}", trace.display());
                    hits += 1;
                }
                if let Some(first) = expected.first() {
                    assert_eq!(
                        SearchFrom::Before(first.node)
                            .find(&reader, &options)
                            .unwrap(),
                        None
                    );
                }
            }
        }
        // A set stop ends it at once.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let mut stopped = SearchOptions::new("");
        stopped.stop = Some(stop);
        let thread = reader.thread_ids()[0];
        let last = reader.roots(thread).unwrap().pop().unwrap();
        assert_eq!(
            SearchFrom::Before(last).find(&reader, &stopped).unwrap(),
            None
        );
    }
    assert!(hits > 50, "{hits} hits walked back");
}

#[test]
fn a_node_of_another_trace_is_an_error_not_a_panic_or_a_wrong_answer() {
    let dir = tempfile::tempdir().unwrap();
    let traces = traces(dir.path());
    // The trace with the most threads, so that its nodes' slots are out
    // of range for some others.
    let many = traces
        .iter()
        .max_by_key(|t| LazyTraceReader::open(t).unwrap().thread_ids().len())
        .unwrap();
    let owner = LazyTraceReader::open(many).unwrap();
    let thread = *owner.thread_ids().last().unwrap();
    let nodes: Vec<_> = owner
        .thread_nodes(thread)
        .take(50)
        .map(|step| step.unwrap().0)
        .collect();
    let others: Vec<_> = traces
        .iter()
        .filter(|t| *t != many)
        .map(|t| LazyTraceReader::open(t).unwrap())
        .collect();
    assert!(others.len() >= 2, "{} other traces", others.len());
    for other in &others {
        for &node in &nodes {
            assert!(other.node(node).is_err());
            assert!(other.parent(node).is_err());
            assert!(other.child_count(node).is_err());
            assert!(other.quick_child_count(node).is_err());
            assert!(other.children_range(node, 0, 10).is_err());
            assert!(other.ancestors(node).is_err());
            assert!(other.position(node).is_err());
            assert!(other.following(node).is_err());
            assert!(other.subtree(node).any(|step| step.is_err()));
            assert!(
                other
                    .walk_subtree(node, WalkDetail::Headers, |_| Ok(true))
                    .is_err()
            );
            assert!(other.forget_children(node).is_err());
            assert!(node_text(other, node, false).is_err());
            // Its handle is plain numbers, which any reader may check.
            let handle = owner.handle(node);
            assert_eq!(other.node_thread(node), handle.thread);
            if other.resolve_handle(handle).is_ok() {
                assert!(
                    std::ptr::eq(other, others.last().unwrap())
                        || other.thread_ids().contains(&handle.thread)
                );
            }
        }
    }
    // The owner, and another reader of its trace, answer alike.
    let again = LazyTraceReader::open(many).unwrap();
    for &node in &nodes {
        assert_eq!(
            again.node(node).unwrap().tracepoint().event(),
            owner.node(node).unwrap().tracepoint().event()
        );
        assert_eq!(
            again.ancestors(node).unwrap(),
            owner.ancestors(node).unwrap()
        );
    }
}
