//! The eager loader against traces written by the reference recorder: the
//! structure it sees equals the reference model's (`NAME.trace.jsonl`).

use std::collections::BTreeMap;

use serde_json::Value;
use tracetree::model::TracepointType;
use tracetree::print::write_jsonl;
use tracetree::read::EagerTrace;
use tracetree::tree::TraceTree;

use tracetree_testkit::files;

const KEYS: [&str; 5] = ["thread", "depth", "event_id", "kind", "children"];

fn structure(jsonl: &str) -> Vec<Vec<Value>> {
    jsonl
        .lines()
        .map(|line| {
            let object: Value = serde_json::from_str(line).expect("valid JSON line");
            KEYS.iter().map(|key| object[key].clone()).collect()
        })
        .collect()
}

#[test]
fn eager_structure_matches_reference_model() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    for name in [
        "all-types-stream",
        "all-types-dump",
        "small-stream",
        "small-dump",
    ] {
        let trace = EagerTrace::open(dir.join(format!("{name}.trace"))).unwrap();
        assert!(trace.report().is_complete(), "{name}: {:?}", trace.report());
        let mut ours = Vec::new();
        write_jsonl(&trace, None, &mut ours).unwrap();
        let expected = std::fs::read_to_string(dir.join(format!("{name}.trace.jsonl"))).unwrap();
        let ours = structure(&String::from_utf8(ours).unwrap());
        let expected = structure(&expected);
        assert_eq!(ours.len(), expected.len(), "{name}: tracepoint count");
        for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
            assert_eq!(a, b, "{name}: line {}", i + 1);
        }
    }
}

fn counts(trace: &EagerTrace) -> BTreeMap<TracepointType, usize> {
    let mut counts = BTreeMap::new();
    for node in trace.nodes() {
        *counts
            .entry(node.tracepoint().tracepoint_type())
            .or_default() += 1;
    }
    counts
}

#[test]
fn medium_stream_counts_match_reference() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let trace = EagerTrace::open(dir.join("medium-stream.trace")).unwrap();
    assert!(trace.report().is_complete());
    assert_eq!(trace.threads().len(), 3);
    assert!(
        trace
            .threads()
            .iter()
            .all(|t| trace.roots(t.id).unwrap().len() == 1)
    );
    let counts = counts(&trace);
    use TracepointType::*;
    let expected = [
        (MethodCall, 60_033),
        (WriteField, 60_000),
        (WriteLocal, 48_000),
        (ReadField, 15_000),
        (ReadLocal, 15_000),
        (WriteArray, 15_000),
        (LoopIteration, 3_000),
        (Loop, 1_500),
    ];
    for (kind, count) in expected {
        assert_eq!(counts.get(&kind).copied().unwrap_or(0), count, "{kind:?}");
    }
    assert_eq!(counts.values().sum::<usize>(), 217_533);
}

#[test]
fn crashed_trace_keeps_every_complete_block() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let trace = EagerTrace::open(dir.join("crashed.trace")).unwrap();
    let report = trace.report();
    assert!(report.missing_eof);
    assert_eq!(report.dropped_blocks, 0);
    assert_eq!(report.unfinished_containers, 15);
    assert_eq!(trace.nodes().len(), 362_158);
    assert_eq!(trace.threads().iter().map(|t| t.blocks).sum::<usize>(), 15);
    assert!(
        trace
            .threads()
            .iter()
            .all(|t| trace.roots(t.id).unwrap().len() == 1)
    );
    let unfinished = trace.nodes().filter(|n| n.is_unfinished()).count();
    assert_eq!(unfinished, 15);
    // No names: the streaming writer writes them only when the trace ends.
    for thread in trace.threads() {
        assert!(trace.context().thread_name(thread.id).is_none());
    }
}
