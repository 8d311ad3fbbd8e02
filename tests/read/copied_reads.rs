//! Nodes decoded on their own are copied from the data file instead of
//! read through its mapping (when a resident window bounds the mapping):
//! objects of every size decode as through the mapping: those longer than
//! the first copy after a longer one, those longer than the largest copy
//! through the mapping.

use std::path::Path;

use tracetree::model::{JavaStr, Type};
use tracetree::read::{EagerTrace, LazyNode, LazyTraceReader, SidecarPolicy, WalkDetail};
use tracetree::write::{
    CallOutcome, CallSpec, DumpWriter, MethodSpec, ThreadRecorder, TraceRecorder, ValueSpec,
};

/// A trace whose root holds calls with `args` string arguments of
/// `len` characters each, returning a string as long: tracepoints and
/// footers of 1 KiB up to more than a megabyte.
fn write_trace(path: &Path) {
    let string = || Type::Object(JavaStr::new("java.lang.String"));
    let run = MethodSpec::new("Main", "run", vec![], Type::Void);
    let shapes: [(usize, usize); 5] = [(1, 1_000), (1, 10_000), (4, 60_000), (20, 60_000), (1, 3)];
    let methods: Vec<MethodSpec> = shapes
        .iter()
        .map(|&(args, _)| {
            MethodSpec::new(
                "Main",
                format!("take{args}"),
                (0..args).map(|_| string()).collect(),
                string(),
            )
        })
        .collect();
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let mut t = writer.thread(main).unwrap();
    t.enter_call(None, CallSpec::new(&run)).unwrap();
    for (method, &(args, len)) in methods.iter().zip(&shapes) {
        let text: String = (0..len)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let mut call = CallSpec::new(method);
        for _ in 0..args {
            call = call.with_argument(ValueSpec::string(text.as_str()));
        }
        t.enter_call(None, call).unwrap();
        t.enter_call(None, CallSpec::new(&run)).unwrap();
        t.exit_call(CallOutcome::VOID).unwrap();
        t.exit_call(CallOutcome::Returned(ValueSpec::string(text.as_str())))
            .unwrap();
    }
    t.exit_call(CallOutcome::VOID).unwrap();
    writer.save(path).unwrap();
}

fn nodes(reader: &LazyTraceReader) -> Vec<LazyNode> {
    let mut nodes = Vec::new();
    for thread in reader.thread_ids() {
        reader
            .walk_thread(thread, WalkDetail::Headers, |walked| {
                nodes.push(walked.node);
                Ok(true)
            })
            .unwrap();
    }
    nodes
}

#[test]
fn nodes_of_every_size_decode_from_copies_as_from_the_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long-values.trace");
    write_trace(&path);
    let eager = EagerTrace::open(&path).unwrap();
    let expected: Vec<_> = (0..eager.node_count())
        .map(|id| {
            let node = eager.node(tracetree::read::NodeId(id as u32));
            (node.tracepoint(), node.footer())
        })
        .collect();
    // The default resident window copies nodes; without a window they are
    // read through the mapping.
    for window in [Some(1 << 20), None] {
        let reader = LazyTraceReader::options()
            .sidecar(SidecarPolicy::Off)
            .resident_window(window)
            .open(&path)
            .unwrap();
        let nodes = nodes(&reader);
        assert_eq!(nodes.len(), expected.len());
        for (node, (tracepoint, footer)) in nodes.iter().zip(&expected) {
            reader.clear_cache();
            let data = reader.node(*node).unwrap();
            assert_eq!(data.tracepoint(), tracepoint, "window {window:?}");
            assert_eq!(data.footer(), footer.as_ref(), "window {window:?}");
        }
    }
}
