//! Traces the streaming writer writes load identically through the eager
//! loader and the lazy reader — which must accept the writer's index as
//! valid (`IndexChoice::Require`) — and through the lazy reader's own
//! rebuild; also when many producers streamed at once, in small blocks.

use std::sync::atomic::{AtomicU64, Ordering};

use tracetree::TraceBytes;
use tracetree::generate::samples;
use tracetree::generate::{Shape, ThreadGenerator};
use tracetree::read::{EagerTrace, IndexChoice, IndexStatus, LazyTraceReader};
use tracetree::write::StreamingOptions;

use tracetree_testkit::lazy::assert_same_tree;
use tracetree_testkit::stream::{CutRule, check_stream_layout, memory_writer};

/// Loads a closed trace eagerly and lazily (with the written index, then
/// rebuilding), and compares every tree; returns the node count.
fn load_both_ways(data: &[u8], index: &[u8], what: &str) -> usize {
    let eager = EagerTrace::load(TraceBytes::from_vec(data.to_vec())).unwrap();
    assert!(eager.report().is_complete(), "{what}: {:?}", eager.report());
    let lazy = LazyTraceReader::options()
        .index(IndexChoice::Require)
        .cache_bytes(256 << 10)
        .open_bytes(
            TraceBytes::from_vec(data.to_vec()),
            Some(TraceBytes::from_vec(index.to_vec())),
        )
        .unwrap();
    let report = lazy.report();
    assert_eq!(
        report.status,
        IndexStatus::Used { complete: true },
        "{what}"
    );
    assert_eq!(report.repaired_containers, 0, "{what}");
    assert_eq!(&report.data, eager.report(), "{what}");
    let nodes = assert_same_tree(&lazy, &eager, what);
    assert_eq!(nodes, eager.nodes().len(), "{what}");
    for thread in eager.threads() {
        let name = eager.context().thread_name(thread.id).unwrap();
        assert_eq!(
            lazy.thread_name(thread.id).as_deref(),
            Some(&*name.decode()),
            "{what}"
        );
    }
    let rebuilt = LazyTraceReader::options()
        .index(IndexChoice::Rebuild)
        .open_bytes(TraceBytes::from_vec(data.to_vec()), None)
        .unwrap();
    assert_same_tree(&rebuilt, &eager, what);
    nodes
}

#[test]
fn streamed_samples_load_the_same_lazily() {
    for options in [StreamingOptions::default(), {
        let mut options = StreamingOptions::default();
        options.block_size = 64;
        options.flush_threshold = 16;
        options.queue_capacity = 2;
        options
    }] {
        let (mut writer, data, index) = memory_writer(options);
        samples::record_all_types(&mut writer).unwrap();
        writer.close().unwrap();
        load_both_ways(&data.bytes(), &index.bytes(), "all-types");

        let (mut writer, data, index) = memory_writer(options);
        samples::record_multi_thread(&mut writer).unwrap();
        writer.close().unwrap();
        load_both_ways(&data.bytes(), &index.bytes(), "multi-thread");
    }
}

/// Four producers generating mixed and deep trees at once, in 4 KiB blocks:
/// containers spanning hundreds of blocks, interleaved threads.
#[test]
fn concurrently_streamed_traces_load_the_same_lazily() {
    let mut options = StreamingOptions::default();
    options.block_size = 4096;
    options.flush_threshold = 1024;
    options.queue_capacity = 4;
    let (writer, data, index) = memory_writer(options);
    let shapes = [Shape::Mixed, Shape::Deep, Shape::Threads, Shape::Wide];
    std::thread::scope(|scope| {
        for (t, shape) in shapes.into_iter().enumerate() {
            let mut thread = writer.new_thread(format!("gen-{t}")).unwrap();
            scope.spawn(move || {
                let calls = AtomicU64::new(0);
                // About 40,000 tracepoints each.
                let stop = || calls.fetch_add(1, Ordering::Relaxed) >= 160;
                ThreadGenerator::new(shape, 7, t as u64, shapes.len() as u64)
                    .run(&mut thread, stop)
                    .unwrap();
                thread.finish().unwrap();
            });
        }
    });
    let summary = writer.close().unwrap();
    let (data, index) = (data.bytes(), index.bytes());
    let layout = check_stream_layout(&data, &index, Some(CutRule::from(options)));
    assert!(layout.blocks > 100, "{layout:?}");
    let nodes = load_both_ways(&data, &index, "generated");
    assert_eq!(nodes as u64, summary.tracepoints);
}
