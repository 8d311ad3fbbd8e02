//! `last_child`, `last_descendant`, `roots_range`, `root_count`, `ancestors`, `position`
//! and `quick_child_count` against what a walk of the same trace sees.

use std::collections::HashMap;

use tracetree::generate::Shape;
use tracetree::read::{ChildCount, LazyNode, LazyTraceReader, WalkDetail};

use tracetree_testkit::files::generated;
use tracetree_testkit::lazy::{reference_traces, testdata_traces};

#[test]
fn every_node_knows_its_ancestors_and_its_place_among_its_siblings() {
    let mut traces = testdata_traces();
    let reference = reference_traces();
    // The bundled traces alone hold 139 nodes; the reference ones many more.
    let least = if reference.is_empty() { 100 } else { 1000 };
    traces.extend(reference);
    let mut checked = 0;
    for trace in &traces {
        let reader = LazyTraceReader::open(trace).unwrap();
        for thread in reader.thread_ids() {
            let roots = reader.roots(thread).unwrap();
            assert_eq!(reader.root_count(thread).unwrap(), roots.len());
            assert_eq!(reader.roots_range(thread, 0, usize::MAX).unwrap(), roots);
            if roots.len() > 1 {
                assert_eq!(reader.roots_range(thread, 1, 1).unwrap(), roots[1..2]);
            }
            // The walk's open nodes and children counts at each depth.
            let mut open: Vec<(LazyNode, usize)> = Vec::new();
            let mut top = 0;
            reader
                .walk_thread(thread, WalkDetail::Headers, |walked| {
                    open.truncate(walked.depth);
                    let index = match open.last_mut() {
                        Some((_, children)) => {
                            *children += 1;
                            *children - 1
                        }
                        None => {
                            top += 1;
                            top - 1
                        }
                    };
                    let ancestors: Vec<LazyNode> = open.iter().map(|(n, _)| *n).collect();
                    assert_eq!(reader.ancestors(walked.node).unwrap(), ancestors);
                    assert_eq!(reader.position(walked.node).unwrap(), index);
                    open.push((walked.node, 0));
                    checked += 1;
                    Ok(checked < 20_000)
                })
                .unwrap();
        }
    }
    assert!(checked > least, "{checked} nodes checked");
}

#[test]
fn a_quick_child_count_is_exact_for_short_containers_and_a_bound_for_wide_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = generated(dir.path(), Shape::Wide, 1, 1 << 20, None);
    let mut traces = testdata_traces();
    traces.push(path);
    let mut bounds = 0;
    for trace in &traces {
        let reader = LazyTraceReader::open(trace).unwrap();
        for thread in reader.thread_ids() {
            // Each node's children, as the walk counts them.
            let mut counts: HashMap<LazyNode, usize> = HashMap::new();
            let mut open: Vec<LazyNode> = Vec::new();
            reader
                .walk_thread(thread, WalkDetail::Headers, |walked| {
                    open.truncate(walked.depth);
                    if let Some(parent) = open.last() {
                        *counts.entry(*parent).or_default() += 1;
                    }
                    counts.entry(walked.node).or_default();
                    open.push(walked.node);
                    Ok(true)
                })
                .unwrap();
            for (&node, &count) in &counts {
                match reader.quick_child_count(node).unwrap() {
                    ChildCount::Exact(n) => assert_eq!(n, count),
                    ChildCount::AtLeast(n) => {
                        assert!(0 < n && n <= count, "{n} of {count}");
                        bounds += 1;
                        assert_eq!(reader.child_count(node).unwrap(), count);
                        let counted = reader.quick_child_count(node).unwrap();
                        assert_eq!(counted, ChildCount::Exact(count));
                    }
                }
            }
        }
    }
    assert!(bounds > 0, "no container was wide enough for a bound");
}

#[test]
fn every_subtree_ends_at_its_last_descendant_under_its_last_child() {
    let dir = tempfile::tempdir().unwrap();
    let mut traces = testdata_traces();
    traces.extend(reference_traces());
    for shape in [Shape::Mixed, Shape::Wide, Shape::Deep] {
        traces.push(generated(dir.path(), shape, 2, 1 << 17, Some(16 << 10)));
    }
    // Nodes checked in each thread: the first ones the walk leaves (the
    // subtrees still open when it stops are not checked).
    const PER_THREAD: usize = 20_000;
    let mut checked = 0;
    for trace in &traces {
        let reader = LazyTraceReader::open(trace).unwrap();
        for thread in reader.thread_ids() {
            let mut in_thread = 0;
            // The open nodes of the walk: each one's last descendant is the
            // node met last before the walk leaves its subtree.
            let mut open: Vec<LazyNode> = Vec::new();
            let mut last: Option<LazyNode> = None;
            let check = |node: LazyNode, last: LazyNode| {
                let children = reader.children(node).unwrap();
                assert_eq!(reader.last_child(node).unwrap().as_ref(), children.last());
                assert_eq!(
                    reader.last_descendant(node).unwrap(),
                    last,
                    "{} in {}",
                    node.offset(),
                    trace.display()
                );
            };
            reader
                .walk_thread(thread, WalkDetail::Headers, |walked| {
                    while open.len() > walked.depth {
                        let node = open.pop().unwrap();
                        check(node, last.unwrap());
                        in_thread += 1;
                    }
                    open.push(walked.node);
                    last = Some(walked.node);
                    Ok(in_thread < PER_THREAD)
                })
                .unwrap();
            let whole = in_thread < PER_THREAD;
            while let Some(node) = open.pop().filter(|_| whole) {
                check(node, last.unwrap());
                in_thread += 1;
            }
            checked += in_thread;
        }
    }
    assert!(checked > 10_000, "{checked} nodes checked");
}
