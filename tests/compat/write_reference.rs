//! The dump writer against the reference dump writer: an eager load of a
//! reference dump trace, copied through `DumpWriter::from_trace`, must give
//! back the very same data and index files, byte for byte.

use tracetree::TraceBytes;
use tracetree::read::{EagerTrace, NodeId};
use tracetree::write::{DumpOptions, DumpWriter};

use tracetree_testkit::{compare, files, write};

fn redump(name: &str) {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let data = std::fs::read(dir.join(name)).expect("reference data file");
    let index = std::fs::read(dir.join(format!("{name}.idx"))).expect("reference index file");
    let trace = EagerTrace::load(TraceBytes::from_vec(data.clone())).expect("eager load");
    let writer = DumpWriter::from_trace(&trace, DumpOptions::default()).expect("copy");
    let (written_data, written_index) = writer.to_bytes().expect("write");
    compare::assert_same_bytes(name, &written_data, &data);
    compare::assert_same_bytes(&format!("{name}.idx"), &written_index, &index);
}

#[test]
fn redumping_all_types_dump_gives_identical_files() {
    redump("all-types-dump.trace");
}

#[test]
fn redumping_small_dump_gives_identical_files() {
    redump("small-dump.trace");
}

/// The stream writer's copy of a trace, converted, is the dump writer's copy.
/// (Only the all-types pair records one run twice; `small-stream` and
/// `small-dump` come from two runs, with other event ids and hash codes.)
fn convert(stream: &str, dump: &str) {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let trace = EagerTrace::load(TraceBytes::read(dir.join(stream)).expect("read")).expect("load");
    let writer = DumpWriter::from_trace(&trace, DumpOptions::default()).expect("copy");
    let (written_data, written_index) = writer.to_bytes().expect("write");
    let data = std::fs::read(dir.join(dump)).expect("reference data file");
    let index = std::fs::read(dir.join(format!("{dump}.idx"))).expect("reference index file");
    compare::assert_same_bytes(dump, &written_data, &data);
    compare::assert_same_bytes(&format!("{dump}.idx"), &written_index, &index);
}

#[test]
fn converting_all_types_stream_gives_the_reference_dump() {
    convert("all-types-stream.trace", "all-types-dump.trace");
}

/// The layout checker of the writer tests agrees with the reference writer.
#[test]
fn reference_dumps_follow_the_checked_layout_rules() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    for name in ["all-types-dump.trace", "small-dump.trace"] {
        let data = std::fs::read(dir.join(name)).expect("data");
        let index = std::fs::read(dir.join(format!("{name}.idx"))).expect("index");
        write::check_dump_layout(&data, &index);
    }
}

/// A crashed recorder's trace converts to a complete dump: every tracepoint
/// it kept, unchanged, and each container it never finished closed as the
/// recorder closes containers at the end of a trace.
#[test]
fn converting_a_crashed_trace_closes_its_unfinished_containers() {
    use std::collections::HashMap;
    use tracetree::model::{Footer, TracepointType};

    let Some(dir) = files::reference_traces() else {
        return;
    };
    let original =
        EagerTrace::load(TraceBytes::read(dir.join("crashed.trace")).expect("read")).expect("load");
    assert!(original.report().unfinished_containers > 0);
    let mut keep_nan = DumpOptions::default();
    keep_nan.canonicalize_nan = false;
    let writer = DumpWriter::from_trace(&original, keep_nan).expect("copy");
    let (data, index) = writer.to_bytes().expect("write");
    write::check_dump_layout(&data, &index);
    let copy = EagerTrace::load(TraceBytes::from_vec(data)).expect("load the copy");
    assert!(copy.report().is_complete(), "{:?}", copy.report());
    assert_eq!(copy.nodes().len(), original.nodes().len());
    let by_event: HashMap<_, _> = copy
        .nodes()
        .enumerate()
        .map(|(i, node)| (node.tracepoint().event(), i))
        .collect();
    let mut closed = 0;
    for node in original.nodes() {
        let copied = copy.node(NodeId(by_event[&node.tracepoint().event()] as u32));
        assert_eq!(copied.tracepoint(), node.tracepoint());
        assert_eq!(copied.children().len(), node.children().len());
        let expected = match (&node.footer(), node.tracepoint().tracepoint_type()) {
            (Some(footer), _) => Some(footer.clone()),
            (None, TracepointType::MethodCall) => Some(Footer::unfinished_method()),
            (None, TracepointType::Loop) => Some(Footer::Loop {
                iterations: node.children().len() as i32,
            }),
            (None, TracepointType::LoopIteration) => Some(Footer::LoopIteration),
            (None, _) => None,
        };
        closed += usize::from(node.is_unfinished());
        assert_eq!(copied.footer(), expected);
    }
    assert_eq!(closed, original.report().unfinished_containers);
}
