//! Generated traces have the shape asked for and are the same for a seed.

use tracetree::TraceBytes;
use tracetree::generate::{Shape, ThreadGenerator};
use tracetree::read::EagerTrace;
use tracetree::tree::{TraceTree, WalkStep, walk};
use tracetree::write::{DumpWriter, TraceRecorder};

fn generate(shape: Shape, seed: u64, threads: u64, tracepoints: usize) -> (Vec<u8>, Vec<u8>) {
    let mut writer = DumpWriter::new();
    for t in 0..threads {
        let id = writer.add_thread(format!("worker-{t}")).unwrap();
        let mut generator = ThreadGenerator::new(shape, seed, t);
        let start = writer.tracepoint_count();
        let mut emitted = 0usize;
        generator
            .run(&mut writer.thread(id).unwrap(), || {
                emitted += 256;
                emitted >= tracepoints
            })
            .unwrap();
        assert!(writer.tracepoint_count() > start);
    }
    writer.to_bytes().unwrap()
}

fn max_depth(trace: &EagerTrace) -> usize {
    let mut deepest = 0;
    for thread in trace.thread_ids() {
        let roots = trace.roots(thread).unwrap();
        walk(trace, &roots, None, |step| {
            if let WalkStep::Node { depth, .. } = step {
                deepest = deepest.max(depth);
            }
            Ok(())
        })
        .unwrap();
    }
    deepest
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = generate(Shape::Mixed, 7, 2, 5_000);
    assert_eq!(a, generate(Shape::Mixed, 7, 2, 5_000));
    assert_ne!(a.0, generate(Shape::Mixed, 8, 2, 5_000).0);
}

#[test]
fn mixed_shape_has_every_common_kind_and_moderate_depth() {
    let (data, _) = generate(Shape::Mixed, 1, 1, 20_000);
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    let kinds: std::collections::BTreeSet<_> = trace
        .nodes()
        .iter()
        .map(|n| n.tracepoint.tracepoint_type())
        .collect();
    assert!(kinds.len() >= 8, "{kinds:?}");
    let depth = max_depth(&trace);
    // Calls nest at most 12 deep under the root; a loop and its iteration add two.
    assert!((3..=15).contains(&depth), "depth {depth}");
}

#[test]
fn wide_shape_is_one_call_with_all_the_children() {
    let (data, _) = generate(Shape::Wide, 1, 1, 50_000);
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    let root = trace.roots(trace.thread_ids()[0]).unwrap()[0];
    let fill = trace.children(root).unwrap();
    assert_eq!(fill.len(), 1);
    assert!(trace.child_count(fill[0]).unwrap() >= 45_000);
}

#[test]
fn deep_shape_nests_deeply() {
    let (data, _) = generate(Shape::Deep, 1, 1, 60_000);
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    assert!(max_depth(&trace) >= 25_000);
}
