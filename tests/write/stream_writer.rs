//! The streaming writer: what it writes follows every streaming layout rule
//! (checked block by block, cell for cell, and against the index rebuilt
//! from the data alone), and loads to the same trace as the dump writer fed
//! the same calls — from one producer thread or many.

use proptest::prelude::*;
use tracetree::TraceBytes;
use tracetree::common::{EventId, ThreadId};
use tracetree::generate::samples;
use tracetree::lowlevel::ObjectKind;
use tracetree::model::Type;
use tracetree::read::EagerTrace;
use tracetree::write::{
    CallOutcome, CallSpec, CodeLocationSpec, DumpOptions, DumpWriter, FieldSpec, MethodSpec,
    StreamingOptions, StreamingWriter, ThreadRecorder, TraceRecorder, ValueSpec, VariableSpec,
};

use tracetree_testkit::stream::{CutRule, check_stream_layout, memory_writer, stream};
use tracetree_testkit::write::strategies::{check_property, threads};
use tracetree_testkit::write::{Leaf, Node, Thread, load, record, write};

/// Dump options that keep NaN payloads as they are.
fn keep_nan() -> DumpOptions {
    let mut options = DumpOptions::default();
    options.canonicalize_nan = false;
    options
}

/// Small blocks, so even small traces span many.
fn small_blocks(block_size: usize, flush_threshold: usize) -> StreamingOptions {
    let mut options = StreamingOptions::default();
    options.block_size = block_size;
    options.flush_threshold = flush_threshold;
    options.queue_capacity = 2;
    options
}

#[test]
fn random_traces_stream_as_they_dump() {
    let cases = || {
        (
            threads(),
            prop_oneof![Just(8usize), 32usize..512, Just(1 << 20)],
            0usize..64,
        )
    };
    check_property(
        64,
        file!(),
        cases,
        |(threads, block_size, flush_threshold)| {
            let options = small_blocks(block_size, flush_threshold);
            let (data, index, events) = stream(&threads, options).unwrap();
            check_stream_layout(&data, &index, Some(CutRule::from(options)));
            let (dumped, _, dump_events) = write(&threads, keep_nan()).unwrap();
            let (loaded, loaded_events) = load(data).unwrap();
            prop_assert_eq!(&loaded, &threads);
            prop_assert_eq!(&loaded, &load(dumped).unwrap().0);
            prop_assert_eq!(&loaded_events, &events);
            prop_assert_eq!(&events, &dump_events);
            Ok(())
        },
    );
}

/// Records a sample through any writer.
type Recorder<W> = fn(&mut W) -> tracetree::Result<()>;

fn sample_streams_as_it_dumps(
    name: &str,
    dump: Recorder<DumpWriter>,
    stream: Recorder<StreamingWriter>,
) {
    let mut dump_writer = DumpWriter::with_options(keep_nan());
    dump(&mut dump_writer).unwrap();
    let (dumped, _) = dump_writer.to_bytes().unwrap();
    for options in [StreamingOptions::default(), small_blocks(64, 16)] {
        let (mut writer, data, index) = memory_writer(options);
        stream(&mut writer).unwrap();
        writer.close().unwrap();
        let (data, index) = (data.bytes(), index.bytes());
        let layout = check_stream_layout(&data, &index, Some(CutRule::from(options)));
        if options.block_size == 64 {
            assert!(layout.blocks > 20, "{name}: {layout:?}");
        }
        assert_eq!(load(data).unwrap(), load(dumped.clone()).unwrap(), "{name}");
    }
}

/// The samples, recorded through `TraceRecorder` code written for the dump
/// writer, stream to the same trace (event ids included).
#[test]
fn samples_stream_as_they_dump() {
    sample_streams_as_it_dumps(
        "all-types",
        samples::record_all_types,
        samples::record_all_types,
    );
    sample_streams_as_it_dumps(
        "multi-thread",
        samples::record_multi_thread,
        samples::record_multi_thread,
    );
}

/// A tree of `size` tracepoints or so, every kind of container, shared and
/// per-thread names.
fn workload(thread: usize, size: usize) -> Vec<Node> {
    let method = MethodSpec::new("app.Worker", "step", vec![Type::Int], Type::Int);
    let field = FieldSpec::new("app.Worker", "count", Type::Long);
    let own = VariableSpec::new(format!("local{thread}"), Type::Int);
    let at = |line: i32| {
        Some(CodeLocationSpec::access(
            "Worker.kt",
            "app.Worker",
            "step",
            line,
        ))
    };
    let mut roots = Vec::new();
    let mut made = 0;
    let mut step = 0;
    while made < size {
        let children = (0..8)
            .map(|i| Node::Leaf {
                at: at(i % 5),
                leaf: if i % 2 == 0 {
                    Leaf::WriteField(
                        field.clone(),
                        ValueSpec::object("app.Worker", thread as i32),
                        ValueSpec::Long(step * 8 + i64::from(i)),
                    )
                } else {
                    Leaf::WriteLocal(own.clone(), ValueSpec::Int(i))
                },
            })
            .collect::<Vec<_>>();
        let call = Node::Call {
            at: at(100),
            method: method.clone(),
            receiver: ValueSpec::object("app.Worker", thread as i32),
            arguments: vec![ValueSpec::Int(step as i32)],
            incomplete: false,
            children,
            outcome: CallOutcome::returned(step as i32),
        };
        let node = if step % 4 == 0 {
            Node::Loop {
                at: at(200),
                loop_id: thread as i32,
                iterations: vec![vec![call], vec![]],
                count: 2,
            }
        } else {
            call
        };
        made += node.size();
        roots.push(node);
        step += 1;
    }
    roots
}

/// Four producers at once, each on its own OS thread with its own handle:
/// every block lands, the layout holds, each thread's tree loads back, and
/// event ids are one trace-wide counter.
#[test]
fn concurrent_producers_write_a_valid_trace() {
    let options = small_blocks(4096, 256);
    let (writer, data, index) = memory_writer(options);
    let producers = 4;
    let trees: Vec<Vec<Node>> = (0..producers).map(|t| workload(t, 5_000)).collect();
    std::thread::scope(|scope| {
        for (t, roots) in trees.iter().enumerate() {
            let mut thread = writer.new_thread(format!("producer-{t}")).unwrap();
            scope.spawn(move || {
                let mut events = Vec::new();
                for root in roots {
                    record(&mut thread, root, &mut events).unwrap();
                }
                thread.finish().unwrap();
            });
        }
    });
    let summary = writer.close().unwrap();
    let total: usize = trees.iter().flatten().map(Node::size).sum();
    assert_eq!(summary.tracepoints, total as u64);
    let (data, index) = (data.bytes(), index.bytes());
    let layout = check_stream_layout(&data, &index, Some(CutRule::from(options)));
    assert!(
        layout.data_blocks.values().all(|&blocks| blocks > 10),
        "{layout:?}"
    );
    assert_eq!(summary.blocks as usize, layout.blocks);
    assert_eq!(summary.data_bytes as usize, data.len());
    assert_eq!(summary.index_bytes as usize, index.len());

    let trace = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
    let mut ids: Vec<i32> = trace
        .nodes()
        .map(|n| n.tracepoint().event().get())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..total as i32).collect::<Vec<_>>(), "one counter");
    let (loaded, _) = load(data).unwrap();
    let expected: Vec<Thread> = trees
        .into_iter()
        .enumerate()
        .map(|(t, roots)| Thread {
            name: format!("producer-{t}"),
            roots,
        })
        .collect();
    assert_eq!(loaded, expected);
}

/// The reference objects of each block, in order.
fn references_per_block(data: &[u8]) -> Vec<(ThreadId, Vec<(ObjectKind, i32)>)> {
    let (blocks, error) = tracetree::lowlevel::DecodedBlock::decode_all(data);
    assert_eq!(error, None);
    blocks
        .iter()
        .map(|block| {
            let references = block
                .objects
                .iter()
                .filter(|(_, o)| o.kind().is_reference() && o.kind() != ObjectKind::ThreadName)
                .map(|(_, o)| (o.kind(), o.reference_id().unwrap()))
                .collect();
            (block.thread, references)
        })
        .collect()
}

/// A reference object is written once per block, again by a thread that
/// needs it while it is not on disk (a duplicate the format allows), and
/// never again once it is on disk.
#[test]
fn reference_objects_are_written_once_per_block_until_on_disk() {
    let (writer, data, index) = memory_writer(StreamingOptions::default());
    let method = MethodSpec::new("app.Main", "tick", vec![], Type::Void);
    let at = CodeLocationSpec::call("Main.kt", "app.MainKt", "main", 3);
    let tick = |t: &mut tracetree::write::StreamingThread| {
        t.enter_call(Some(&at), CallSpec::new(&method)).unwrap();
        t.exit_call(CallOutcome::VOID).unwrap();
    };
    let mut a = writer.new_thread("a").unwrap();
    let mut b = writer.new_thread("b").unwrap();
    let mut c = writer.new_thread("c").unwrap();
    for _ in 0..3 {
        tick(&mut a); // once in a's block
    }
    tick(&mut b); // not on disk yet: b writes its own copies
    a.flush().unwrap();
    b.flush().unwrap();
    writer.sync().unwrap();
    tick(&mut c); // on disk now: c writes none
    tick(&mut a);
    drop((a, b, c));
    writer.close().unwrap();
    let (data, index) = (data.bytes(), index.bytes());
    let layout = check_stream_layout(&data, &index, None);
    let blocks = references_per_block(&data);
    // a, b, then c's block and a's second block, then three name blocks.
    assert_eq!(blocks.len(), 7);
    let first = &blocks[0].1;
    assert_eq!(first.len(), 6, "class, method, 3 strings, code location");
    assert_eq!(&blocks[1].1, first, "b repeats what a had not written yet");
    assert!(blocks[2..].iter().all(|(_, refs)| refs.is_empty()));
    assert_eq!(layout.duplicates, 6);
}

/// A block is cut before an object that does not fit even when a
/// container's header ends it (no room was left by a leaf or footer), and a
/// single object larger than a block gets a block of its own.
#[test]
fn blocks_may_end_in_a_header_and_oversized_objects_fit() {
    let options = small_blocks(100, 0);
    let (mut writer, data, index) = memory_writer(options);
    let method = MethodSpec::new("A", "m", vec![], Type::Void);
    let id = writer.add_thread("main").unwrap();
    let mut t = writer.thread(id).unwrap();
    // Headers of about 30 bytes each, until one no longer fits.
    for _ in 0..5 {
        t.enter_call(None, CallSpec::new(&method)).unwrap();
    }
    let big = "x".repeat(1000);
    t.throw(None, ValueSpec::string(big.as_str())).unwrap();
    for _ in 0..5 {
        t.exit_call(CallOutcome::VOID).unwrap();
    }
    drop(t);
    writer.close().unwrap();
    let (data, index) = (data.bytes(), index.bytes());
    let layout = check_stream_layout(&data, &index, Some(CutRule::from(options)));
    assert!(layout.blocks_ending_in_a_header >= 1, "{layout:?}");
    assert!(
        data.len() > 1000 && layout.data_blocks[&ThreadId::new(0)] >= 3,
        "{layout:?}"
    );
}

/// Tracepoints pushed with their ids (as an importer copies a trace) keep
/// them, and the builder's counter goes on after the largest.
#[test]
fn builder_events_continue_after_pushed_ids() {
    use tracetree::model::{
        DiffStatus, Tracepoint, TracepointBody, TracepointHeader, TracepointType, Value,
    };
    let (mut writer, data, index) = memory_writer(StreamingOptions::default());
    let id = writer.add_thread("main").unwrap();
    let mut t = writer.thread(id).unwrap();
    let pushed = Tracepoint {
        header: TracepointHeader {
            tracepoint_type: TracepointType::Throw,
            code_location: tracetree::common::CodeLocationId::new(-1),
            thread: id,
            event: EventId::new(1000),
            diff_status: DiffStatus::None,
        },
        child_diff_statuses: Vec::new(),
        body: TracepointBody::Throw {
            exception: Value::Null,
        },
    };
    t.push_tracepoint(&pushed).unwrap();
    let next = t.throw(None, ValueSpec::Null).unwrap();
    assert_eq!(next, EventId::new(1001));
    drop(t);
    writer.close().unwrap();
    check_stream_layout(&data.bytes(), &index.bytes(), None);
}

/// Producer handles move to the threads that record through them; the
/// writer is shared by reference.
#[test]
fn handles_are_send_and_the_writer_is_shared() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<tracetree::write::StreamingThread>();
    send::<StreamingWriter>();
    sync::<StreamingWriter>();
}
