//! Random reads (a node decoded on its own, a short call's children, a
//! parent) take their bytes as chosen at open: copied from the files by
//! `pread` when a resident window bounds the mapping, lent from the
//! mapping without one. Both give the same answers: objects of every size
//! (those longer than the first copy after a longer one, those longer
//! than the largest copy through the mapping), containers, children and
//! parents, on the index and on a sidecar.

use std::path::Path;

use tracetree::generate::Shape;
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
    let expected_children: Vec<usize> = (0..eager.node_count())
        .map(|id| eager.children_of(tracetree::read::NodeId(id as u32)).len())
        .collect();
    // The default resident window copies nodes; without a window they are
    // read through the mapping. A node is decoded on its own, or with its
    // children when they are asked for first (a short call: from one copy
    // of it, its footer copied on its own when longer than the room left
    // for it).
    for window in [Some(1 << 20), None] {
        let reader = LazyTraceReader::options()
            .sidecar(SidecarPolicy::Off)
            .resident_window(window)
            .open(&path)
            .unwrap();
        let nodes = tracetree_testkit::lazy::all_nodes(&reader);
        assert_eq!(nodes.len(), expected.len());
        for (i, (node, (tracepoint, footer))) in nodes.iter().zip(&expected).enumerate() {
            for children_first in [false, true] {
                reader.clear_cache();
                let children = children_first.then(|| reader.children(*node).unwrap().len());
                let data = reader.node(*node).unwrap();
                let children = children.unwrap_or_else(|| reader.child_count(*node).unwrap());
                let case = format!("window {window:?}, node {i}, children first {children_first}");
                assert_eq!(data.tracepoint(), tracepoint, "{case}");
                assert_eq!(data.footer(), footer.as_ref(), "{case}");
                assert_eq!(children, expected_children[i], "{case}");
            }
        }
    }
}

/// Under a resident window, the container of a node decoded on its own is
/// looked up with the cells read by `pread` (index cells one by one or in
/// one span, a sidecar's starts in one read) instead of through their
/// mappings. Every container's node and children must come out as they
/// do without a window (every read lent from the mappings), on the index
/// and on a sidecar; the sidecar's table narrows its searches with a fence
/// only after some dozens of searches, so the first containers are found
/// by a binary search over all of its starts.
#[test]
fn containers_looked_up_by_pread_are_those_the_mappings_give() {
    let dir = tempfile::tempdir().unwrap();
    let path = tracetree_testkit::synth::synth_trace(dir.path(), "copied-lookups", 4 << 20, 11);
    let open = |sidecar: bool, window: Option<u64>| {
        let options = LazyTraceReader::options().resident_window(window);
        let options = if sidecar {
            let sidecars = dir.path().join("sidecars");
            options.sidecar_dir(Some(sidecars)).defer_sidecar(None)
        } else {
            options.sidecar(SidecarPolicy::Off)
        };
        options.open(&path).unwrap()
    };
    // Every container, and every 16th leaf (whose children asked for
    // first are none, from the same copy).
    let containers = |reader: &LazyTraceReader| -> Vec<LazyNode> {
        let mut found = Vec::new();
        let mut leaves = 0;
        for thread in reader.thread_ids() {
            reader
                .walk_thread(thread, WalkDetail::Headers, |walked| {
                    if walked.header.tracepoint_type.is_container() {
                        found.push(walked.node);
                    } else {
                        leaves += 1;
                        if leaves % 16 == 0 {
                            found.push(walked.node);
                        }
                    }
                    Ok(true)
                })
                .unwrap();
        }
        found
    };
    for sidecar in [false, true] {
        let mapped = open(sidecar, None);
        let copied = open(sidecar, Some(1 << 20));
        let nodes = containers(&mapped);
        assert!(nodes.len() > 1_000, "{} containers", nodes.len());
        assert_eq!(containers(&copied), nodes);
        for (i, &node) in nodes.iter().step_by(3).enumerate() {
            copied.clear_cache();
            // Every other node's children are asked for first: the node is
            // then decoded with them, from one copy of a short call (parsed
            // whole when it ends within the copy, else with its cells).
            let children = (i % 2 == 1).then(|| copied.children(node).unwrap());
            let (want, got) = (mapped.node(node).unwrap(), copied.node(node).unwrap());
            assert_eq!(got.tracepoint(), want.tracepoint(), "sidecar {sidecar}");
            assert_eq!(got.footer(), want.footer(), "sidecar {sidecar}");
            assert_eq!(got.content(), want.content(), "sidecar {sidecar}");
            let children = children.unwrap_or_else(|| copied.children(node).unwrap());
            assert_eq!(
                children,
                mapped.children(node).unwrap(),
                "sidecar {sidecar}, {node:?}"
            );
        }
    }
}

/// Under a resident window a node's parent is found from copies: the cells
/// of the containers before it (and, past those, of the chunks the chunk
/// maxima point to), then the parent's header and the stretch of its
/// children before the node. Every node's parent must be the one a walk
/// sees, on the index and on a sidecar, in traces with parents far behind
/// their children (a wide call's millions of children, deep nesting).
#[test]
fn parents_found_from_copies_are_those_a_walk_sees() {
    let dir = tempfile::tempdir().unwrap();
    let traces = [
        tracetree_testkit::synth::synth_trace(dir.path(), "parents", 4 << 20, 5),
        tracetree_testkit::files::generated(dir.path(), Shape::Wide, 1, 2 << 20, None),
        tracetree_testkit::files::generated(dir.path(), Shape::Mixed, 2, 4 << 20, None),
    ];
    for trace in &traces {
        for sidecar in [false, true] {
            let options = LazyTraceReader::options().resident_window(Some(1 << 20));
            let options = match sidecar {
                true => options
                    .sidecar_dir(Some(dir.path().join("sidecars")))
                    .defer_sidecar(None),
                false => options.sidecar(SidecarPolicy::Off),
            };
            let reader = options.open(trace).unwrap();
            let mut expected = Vec::new();
            for thread in reader.thread_ids() {
                let mut open: Vec<LazyNode> = Vec::new();
                reader
                    .walk_thread(thread, WalkDetail::Headers, |walked| {
                        open.truncate(walked.depth);
                        expected.push((walked.node, open.last().copied()));
                        open.push(walked.node);
                        Ok(true)
                    })
                    .unwrap();
            }
            assert!(expected.len() > 10_000, "{} nodes", expected.len());
            for (node, parent) in expected.iter().step_by(5) {
                let case = format!("{}, sidecar {sidecar}, {node:?}", trace.display());
                assert_eq!(reader.parent(*node).unwrap(), *parent, "{case}");
            }
        }
    }
}
