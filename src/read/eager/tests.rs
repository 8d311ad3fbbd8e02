//! The node layout against a plain decode, and the memory budget.

use super::*;
use crate::generate::raw::{self, SynthOptions};
use crate::read::block::DecodedBlock;
use crate::tree::TraceTree;

fn sample() -> Vec<u8> {
    raw::generate(&SynthOptions {
        threads: 3,
        bytes: 256 << 10,
        block_bytes: 4096,
        ..SynthOptions::default()
    })
    .0
}

/// Every tracepoint decoded with its parent's event, in file order.
fn decoded(data: &[u8]) -> Vec<(Tracepoint<'_>, Option<EventId>, Option<Footer<'_>>)> {
    let mut open: std::collections::HashMap<ThreadId, Vec<usize>> = Default::default();
    let mut out: Vec<(Tracepoint<'_>, Option<EventId>, Option<Footer<'_>>)> = Vec::new();
    for block in DecodedBlock::decode_all(data).0 {
        let open = open.entry(block.thread).or_default();
        for (_, object) in block.objects {
            match object {
                Object::Tracepoint(tracepoint) => {
                    let parent = open.last().map(|&index| out[index].0.event());
                    if tracepoint.is_container() {
                        open.push(out.len());
                    }
                    out.push((tracepoint, parent, None));
                }
                Object::Footer(footer) => {
                    let closed = open.pop().expect("an open container");
                    out[closed].2 = Some(footer);
                }
                _ => {}
            }
        }
    }
    out
}

#[test]
fn nodes_decode_as_the_block_decoder_reads_them() {
    let data = sample();
    let expected = decoded(&data);
    let trace = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
    assert!(trace.report().is_complete());
    assert_eq!(trace.node_count(), expected.len());
    let mut child_counts = vec![0usize; expected.len()];
    for (node, (tracepoint, parent, footer)) in trace.nodes().zip(&expected) {
        assert_eq!(&node.tracepoint(), tracepoint);
        assert_eq!(node.tracepoint_type(), tracepoint.tracepoint_type());
        assert_eq!(node.header(), tracepoint.header);
        assert_eq!(&node.footer(), footer);
        let parent_event = node.parent().map(|p| trace.node(p).tracepoint().event());
        assert_eq!(parent_event, *parent);
        if let Some(parent) = node.parent() {
            assert!(trace.node(parent).children().contains(&node.id()));
            child_counts[parent.0 as usize] += 1;
        }
    }
    for node in trace.nodes() {
        let children = node.children();
        assert_eq!(children.len(), child_counts[node.id().0 as usize]);
        assert!(
            children.windows(2).all(|pair| pair[0] < pair[1]),
            "in order"
        );
        assert_eq!(trace.child_count(node.id()).unwrap(), children.len());
        for from in [0, 1, children.len() / 2, children.len() + 1] {
            let range = trace.children_range(node.id(), from, 3).unwrap();
            let end = (from + 3).min(children.len());
            assert_eq!(range, children[from.min(end)..end]);
        }
    }
    let roots: usize = trace
        .threads()
        .iter()
        .map(|t| trace.thread_roots(t.id).len())
        .sum();
    assert_eq!(roots, expected.iter().filter(|e| e.1.is_none()).count());
    let mut by_type = [0u64; TracepointType::ALL.len()];
    for (tracepoint, _, _) in &expected {
        by_type[tracepoint.tracepoint_type() as usize] += 1;
    }
    assert_eq!(trace.counts_by_type(), by_type);
}

#[test]
fn a_trace_over_the_budget_is_refused_before_loading() {
    let data = sample();
    let len = data.len() as u64;
    let needed = EagerTrace::estimated_memory(len);
    let options = EagerOptions {
        memory_budget: Some(needed - 1),
        ..EagerOptions::default()
    };
    let error = EagerTrace::load_with(TraceBytes::from_vec(data.clone()), options).unwrap_err();
    assert!(
        matches!(error, Error::OverMemoryBudget { needed: n, budget } if n == needed && budget == needed - 1)
    );
    assert!(error.to_string().contains("lazy reader"), "{error}");
    let options = EagerOptions {
        memory_budget: Some(needed),
        ..EagerOptions::default()
    };
    assert!(EagerTrace::load_with(TraceBytes::from_vec(data), options).is_ok());
}

#[test]
fn a_trace_of_more_nodes_than_estimated_is_stopped_during_the_load() {
    let data = sample();
    let trace = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
    let actual = data.len() as u64 + trace.node_count() as u64 * BYTES_PER_NODE;
    let load = |budget| {
        let options = EagerOptions {
            memory_budget: Some(budget),
            ..EagerOptions::default()
        };
        load::load_estimating(TraceBytes::from_vec(data.clone()), options, false)
    };
    let error = load(actual - 1).unwrap_err();
    assert!(matches!(error, Error::OverMemoryBudget { needed, .. } if needed == actual));
    let loaded = load(actual).unwrap();
    assert_eq!(loaded.node_count(), trace.node_count());
}

/// Footers further than a record holds (over a MiB past their tracepoint)
/// are kept aside and found again, those closing a container of an earlier
/// block and those of blocks over a MiB; unfinished containers have none.
#[test]
fn far_footers_are_kept_aside() {
    // Small blocks: far footers close containers of earlier blocks.
    let (data, _) = raw::generate(&SynthOptions {
        threads: 2,
        bytes: 3 << 20,
        block_bytes: 64 << 10,
        ..SynthOptions::default()
    });
    let far = check_far_footers(data);
    assert_eq!(far.in_block, 0);
    assert!(far.all > 0);
    // One block of 3 MiB: its call closes in it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.trace");
    let options = crate::generate::GenerateOptions {
        threads: 1,
        block_size: Some(8 << 20),
        ..crate::generate::GenerateOptions::new(3 << 20, crate::generate::Shape::Wide)
    };
    crate::generate::generate_file(&path, &options, |_| {}).unwrap();
    let far = check_far_footers(std::fs::read(&path).unwrap());
    assert!(far.in_block > 0);
    assert_eq!(far.in_block, far.all);
}

/// Far footers: all, and those closing a container of their own block.
struct FarFooters {
    all: usize,
    in_block: usize,
}

/// Loads a data file and checks its far footers.
fn check_far_footers(data: Vec<u8>) -> FarFooters {
    let expected = decoded(&data);
    let trace = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
    assert!(
        trace
            .far_footers
            .windows(2)
            .all(|pair| pair[0].0 < pair[1].0)
    );
    assert_eq!(trace.node_count(), expected.len());
    let mut far = 0;
    for (node, (_, _, footer)) in trace.nodes().zip(&expected) {
        assert_eq!(&node.footer(), footer);
        far += usize::from(node.slot.footer_distance() == FAR);
        assert_eq!(
            node.is_unfinished(),
            footer.is_none() && node.tracepoint_type().is_container()
        );
    }
    assert_eq!(far, trace.far_footers.len());
    let mut in_block = 0;
    for block in DecodedBlock::decode_all(&data).0 {
        let mut open = Vec::new();
        for (at, object) in block.objects {
            match object {
                Object::Tracepoint(tracepoint) if tracepoint.is_container() => open.push(at),
                Object::Footer(_) => {
                    if let Some(opened) = open.pop() {
                        in_block += usize::from(at.0 - opened.0 >= FAR);
                    }
                }
                _ => {}
            }
        }
    }
    FarFooters { all: far, in_block }
}

#[test]
fn records_stay_small() {
    assert_eq!(std::mem::size_of::<NodeRecord>(), 16);
    assert_eq!(BYTES_PER_NODE, 20);
    let trace = EagerTrace::load(TraceBytes::from_vec(sample())).unwrap();
    let printed = format!("{:?}", trace.node(NodeId(1)));
    assert!(
        printed.starts_with("EagerNode { id: NodeId(1), slot: NodeRecord {"),
        "{printed}"
    );
    assert!(printed.len() < 200, "{printed}");
}
