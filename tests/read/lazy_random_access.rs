//! Random access through the lazy reader agrees with the eager loader:
//! nodes by event id, parents, ranges of children, with forgets and cache
//! clears in between, and a tiny cache.

use tracetree::TraceBytes;
use tracetree::generate::raw::{self, Crash, SynthOptions};
use tracetree::read::{EagerTrace, LazyTraceReader, NodeId, WalkDetail};
use tracetree::tree::TraceTree;

use tracetree_testkit::lazy::{EagerIndex, Rng, open_in_memory, reference_traces};

fn check_random_access(
    name: &str,
    eager: &EagerTrace,
    lazy: &LazyTraceReader,
    probes: usize,
    seed: u64,
) {
    let index = EagerIndex::new(eager);
    let mut rng = Rng(seed | 1);
    for probe in 0..probes {
        let id = rng.below(eager.node_count());
        let expected = eager.node(tracetree::read::NodeId(id as u32));
        let event = index.events[id];
        let node = lazy
            .node_by_event(event)
            .unwrap()
            .unwrap_or_else(|| panic!("{name}: event {event} not found"));
        let data = lazy.node(node).unwrap();
        assert_eq!(
            data.tracepoint(),
            &expected.tracepoint(),
            "{name}: event {event}"
        );
        assert_eq!(
            data.footer(),
            expected.footer().as_ref(),
            "{name}: footer of {event}"
        );
        assert_eq!(data.is_unfinished(), expected.is_unfinished());
        // Parent.
        let parent = lazy.parent(node).unwrap();
        let parent_event = parent.map(|p| lazy.node(p).unwrap().tracepoint().event());
        let expected_parent = expected.parent().map(|p| index.events[p.0 as usize]);
        assert_eq!(parent_event, expected_parent, "{name}: parent of {event}");
        // A random range of children.
        let count = expected.children().len();
        assert_eq!(
            lazy.child_count(node).unwrap(),
            count,
            "{name}: child count of {event}"
        );
        let from = rng.below(count + 2);
        let len = rng.below(3000);
        let range = lazy.children_range(node, from, len).unwrap();
        let expected_range: Vec<_> = expected
            .children()
            .iter()
            .skip(from)
            .take(len)
            .map(|c: &NodeId| index.events[c.0 as usize])
            .collect();
        let got: Vec<_> = range
            .iter()
            .map(|&c| lazy.node(c).unwrap().tracepoint().event())
            .collect();
        assert_eq!(
            got, expected_range,
            "{name}: children {from}..+{len} of {event}"
        );
        // The subtree, walked in one pass, in both details.
        if probe % 5 == 0 {
            check_subtree_walk(name, eager, &index, lazy, id, node);
        }
        match probe % 7 {
            0 => lazy.forget_children(node).unwrap(),
            3 => {
                if let Some(parent) = parent {
                    lazy.forget_children(parent).unwrap();
                }
            }
            6 if rng.below(4) == 0 => lazy.clear_cache(),
            _ => {}
        }
    }
    // Every node not found is reported as such.
    let missing = (0..)
        .map(tracetree::common::EventId::new)
        .find(|e| !index.by_event.contains_key(e))
        .unwrap();
    assert_eq!(lazy.node_by_event(missing).unwrap(), None, "{name}");
}

/// `walk_subtree` from `node` (eager node `id`) meets the subtree in
/// pre-order with the eager loader's depths, tracepoints and footers.
fn check_subtree_walk(
    name: &str,
    eager: &EagerTrace,
    index: &EagerIndex,
    lazy: &LazyTraceReader,
    id: usize,
    node: tracetree::read::LazyNode,
) {
    let mut expected = Vec::new();
    let mut stack = vec![(id, 0usize)];
    while let Some((id, depth)) = stack.pop() {
        expected.push((index.events[id], depth));
        let children = eager.node(tracetree::read::NodeId(id as u32)).children();
        stack.extend(children.iter().rev().map(|c| (c.0 as usize, depth + 1)));
        if expected.len() > 20_000 {
            return; // large subtrees are covered by the full walks
        }
    }
    for detail in [
        WalkDetail::Headers,
        WalkDetail::Full,
        WalkDetail::Containers,
        WalkDetail::Names,
    ] {
        let mut got = Vec::new();
        // Names read by a names walk (all but those cut by a block end).
        let (mut named, mut peeked) = (0, 0);
        lazy.walk_subtree(node, detail, |walked| {
            got.push((walked.header.event, walked.depth));
            let decoded = match detail {
                WalkDetail::Headers => false,
                WalkDetail::Full => true,
                WalkDetail::Containers => walked.header.tracepoint_type.is_container(),
                WalkDetail::Names => false,
            };
            if let Some(name) = walked.name {
                use tracetree::model::TracepointBody as Body;
                use tracetree::model::TracepointName as Name;
                let id = index.by_event[&walked.header.event];
                let named = match (
                    &eager
                        .node(tracetree::read::NodeId(id as u32))
                        .tracepoint()
                        .body,
                    name,
                ) {
                    (Body::MethodCall { method, .. }, Name::Method(m)) => *method == m,
                    (
                        Body::ReadField { field, .. } | Body::WriteField { field, .. },
                        Name::Field(f),
                    ) => *field == f,
                    (
                        Body::ReadLocal { variable, .. } | Body::WriteLocal { variable, .. },
                        Name::Variable(v),
                    ) => *variable == v,
                    _ => false,
                };
                assert!(
                    named,
                    "{name:?} of event {:?} in {}",
                    walked.header.event,
                    eager
                        .node(tracetree::read::NodeId(id as u32))
                        .tracepoint()
                        .tracepoint_type()
                        .name()
                );
                peeked += 1;
            }
            if detail == WalkDetail::Names {
                use tracetree::model::TracepointType as Type;
                let kind = walked.header.tracepoint_type;
                named += usize::from(matches!(
                    kind,
                    Type::MethodCall
                        | Type::ReadField
                        | Type::WriteField
                        | Type::ReadLocal
                        | Type::WriteLocal
                ));
            }
            assert_eq!(walked.tracepoint.is_some(), decoded, "{name} ({detail:?})");
            if let Some(tracepoint) = walked.tracepoint {
                let id = index.by_event[&walked.header.event];
                let expected = eager.node(tracetree::read::NodeId(id as u32));
                assert_eq!(tracepoint, &expected.tracepoint(), "{name}");
                assert_eq!(walked.footer, expected.footer().as_ref(), "{name}");
            }
            Ok(true)
        })
        .unwrap();
        assert_eq!(got, expected, "{name}: subtree walk ({detail:?})");
        assert!(
            peeked * 10 >= named * 9,
            "{name}: {peeked} of {named} names read"
        );
    }
}

#[test]
fn random_access_on_reference_traces() {
    for path in reference_traces() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let eager = EagerTrace::open(&path).unwrap();
        for cache_bytes in [64 << 20, 4 << 10] {
            let lazy = LazyTraceReader::options()
                .cache_bytes(cache_bytes)
                .open(&path)
                .unwrap();
            let probes = if eager.nodes().len() > 100_000 {
                100
            } else {
                300
            };
            check_random_access(&name, &eager, &lazy, probes, cache_bytes as u64);
        }
    }
}

#[test]
fn random_access_in_a_wide_call_with_a_tiny_cache() {
    // ~100 pages of children and a cache whose index share holds 32
    // checkpoints: pages are found from every fourth page's checkpoint.
    let options = SynthOptions {
        threads: 1,
        bytes: 8 << 20,
        block_bytes: 256 << 10,
        seed: 13,
        ..SynthOptions::default()
    };
    let (data, index) = raw::generate(&options);
    let eager = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
    let lazy = open_in_memory(&data, Some(&index), 4 << 10).unwrap();
    let wide = eager
        .node(eager.roots(eager.threads()[0].id).unwrap()[0])
        .children()[0];
    assert!(eager.node(wide).children().len() > 80 * 1024, "a wide call");
    check_random_access("wide", &eager, &lazy, 200, 5);
}

#[test]
fn random_access_on_generated_traces() {
    for (threads, crash, block_cell_last) in [
        (1, None, false),
        (3, None, true),
        (
            3,
            Some(Crash {
                half_written_block: false,
            }),
            false,
        ),
        (
            2,
            Some(Crash {
                half_written_block: true,
            }),
            true,
        ),
    ] {
        let options = SynthOptions {
            threads,
            bytes: 2 << 20,
            block_bytes: 8 << 10,
            seed: threads as u64 + 5,
            block_cell_last,
            crash,
        };
        let name = format!("{options:?}");
        let (data, index) = raw::generate(&options);
        let eager = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
        for cache_bytes in [64 << 20, 16 << 10] {
            let lazy = open_in_memory(&data, Some(&index), cache_bytes).unwrap();
            check_random_access(&name, &eager, &lazy, 400, 77);
        }
    }
}
