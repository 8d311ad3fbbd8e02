//! `roots_range`, `root_count`, `ancestors` and `position` against what a
//! walk of the same trace sees.

use tracetree::read::{LazyNode, LazyTraceReader, WalkDetail};

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
