//! The lazy reader against the eager loader: a full expansion through
//! `TraceTree` gives the same threads, roots, tracepoints, footers and
//! children, for every bundled, reference and generated trace, with the
//! index used and rebuilt, with a normal and a tiny cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tracetree::TraceBytes;
use tracetree::generate::raw::{self, Crash, SynthOptions};
use tracetree::model::TracepointType;
use tracetree::read::{EagerTrace, IndexChoice, IndexStatus, LazyTraceReader, SidecarPolicy};
use tracetree::tree::TraceTree;

use tracetree_testkit::lazy::{
    assert_same_tree, open_in_memory, reference_traces, testdata_traces,
};

/// Full expansion of `path` equals the eager loader's, with the index used
/// and rebuilt.
fn check_trace(path: &Path) {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let eager = EagerTrace::open(path).unwrap();
    // The index used; the lookups go to a scratch file, never beside the
    // trace (the bundled traces are in the repository).
    let lazy = LazyTraceReader::options()
        .sidecar(SidecarPolicy::ReadOnly)
        .open(path)
        .unwrap();
    assert!(
        matches!(lazy.report().status, IndexStatus::Used { .. }),
        "{name}: {:?}",
        lazy.report().status
    );
    assert_eq!(&lazy.report().data, eager.report(), "{name}: data report");
    let nodes = assert_same_tree(&lazy, &eager, &name);
    assert_eq!(nodes, eager.nodes().len(), "{name}");
    assert!(lazy.build_lookups().is_empty(), "{name}");
    check_threads_and_counts(&name, &lazy, &eager);
    // Rebuilt from the data file, with a small cache.
    let lazy = LazyTraceReader::options()
        .index(IndexChoice::Rebuild)
        .cache_bytes(64 << 10)
        .open(path)
        .unwrap();
    assert!(matches!(lazy.report().status, IndexStatus::Rebuilt(_)));
    assert_eq!(&lazy.report().data, eager.report(), "{name}: data report");
    assert_same_tree(&lazy, &eager, &name);
}

/// Threads (ids, names, blocks, roots) and tracepoint counts agree.
fn check_threads_and_counts(name: &str, lazy: &LazyTraceReader, eager: &EagerTrace) {
    let threads = lazy.threads();
    assert_eq!(threads.len(), eager.threads().len(), "{name}");
    for (info, thread) in threads.iter().zip(eager.threads()) {
        assert_eq!(info.id, thread.id, "{name}");
        assert_eq!(info.blocks, thread.blocks, "{name}: blocks of {}", info.id);
        assert_eq!(info.bytes, thread.bytes, "{name}: bytes of {}", info.id);
        assert_eq!(
            info.containers, thread.containers,
            "{name}: containers of {}",
            info.id
        );
        let expected_name = eager
            .context()
            .thread_name(thread.id)
            .map(|n| n.decode().into_owned());
        assert_eq!(lazy.thread_name(info.id), expected_name, "{name}");
        let root = lazy.root(info.id).unwrap().unwrap();
        assert_eq!(lazy.node_thread(root), info.id);
        let expected_root = &eager.node(eager.roots(thread.id).unwrap()[0]).tracepoint();
        assert_eq!(
            lazy.node(root).unwrap().tracepoint(),
            expected_root,
            "{name}"
        );
    }
    let mut expected: BTreeMap<TracepointType, u64> = BTreeMap::new();
    for node in eager.nodes() {
        *expected
            .entry(node.tracepoint().tracepoint_type())
            .or_default() += 1;
    }
    assert_eq!(
        lazy.count_tracepoints().unwrap(),
        expected,
        "{name}: counts"
    );
}

/// The reference traces whose file name starts with one of `prefixes`.
fn traces(prefixes: &[&str]) -> Vec<PathBuf> {
    reference_traces()
        .into_iter()
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            prefixes.iter().any(|prefix| name.starts_with(prefix))
        })
        .collect()
}

#[test]
fn lazy_expansion_equals_eager_on_bundled_and_small_reference_traces() {
    let small = testdata_traces()
        .into_iter()
        .chain(traces(&["all-types", "small"]));
    small.for_each(|path| check_trace(&path));
}

#[test]
fn lazy_expansion_equals_eager_on_medium_reference_trace() {
    traces(&["medium"])
        .iter()
        .for_each(|path| check_trace(path));
}

#[test]
fn lazy_expansion_equals_eager_on_crashed_reference_trace() {
    traces(&["crashed"])
        .iter()
        .for_each(|path| check_trace(path));
}

/// Generated traces of every shape the synthetic writer makes.
fn synthetic_shapes() -> Vec<(String, SynthOptions)> {
    let mut shapes = Vec::new();
    for (threads, block_bytes) in [(1, 4096), (3, 700), (4, 64 << 10)] {
        for block_cell_last in [false, true] {
            for crash in [
                None,
                Some(Crash {
                    half_written_block: false,
                }),
                Some(Crash {
                    half_written_block: true,
                }),
            ] {
                let options = SynthOptions {
                    threads,
                    bytes: 300 << 10,
                    block_bytes,
                    seed: threads as u64 * 31 + block_bytes as u64,
                    block_cell_last,
                    crash,
                };
                shapes.push((format!("{options:?}"), options));
            }
        }
    }
    shapes
}

#[test]
fn lazy_expansion_equals_eager_on_generated_traces() {
    for (name, options) in synthetic_shapes() {
        let (data, index) = raw::generate(&options);
        let eager = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
        for cache_bytes in [64 << 20, 8 << 10] {
            let lazy = open_in_memory(&data, Some(&index), cache_bytes).unwrap();
            let report = lazy.report();
            // A half-written last block is not covered by the index.
            let half = options.crash.is_some_and(|c| c.half_written_block);
            assert_eq!(report.index_used(), !half, "{name}: {:?}", report.status);
            assert_eq!(&report.data, eager.report(), "{name}");
            if options.crash.is_some() && !half {
                assert_eq!(
                    report.repaired_containers,
                    eager.report().unfinished_containers
                );
            }
            assert_same_tree(&lazy, &eager, &name);
        }
    }
}

/// A walk asked for no leaf bodies gets every leaf from the lazy reader as
/// `Visit::Leaf` (its body skipped, not decoded) and every container
/// whole; the same nodes, in the same order, as a whole walk.
#[test]
fn a_walk_without_leaf_bodies_gets_leaves_by_their_headers() {
    use tracetree::tree::{TraceTree, Visit, VisitDetail};
    let leaf_headers = VisitDetail {
        child_counts: false,
        leaf_bodies: false,
    };
    let paths: Vec<PathBuf> = testdata_traces()
        .into_iter()
        .chain(traces(&["all-types", "small", "crashed"]))
        .collect();
    for path in &paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let lazy = LazyTraceReader::options()
            .sidecar(SidecarPolicy::ReadOnly)
            .open(path)
            .unwrap();
        let (mut whole, mut headers, mut leaves) = (Vec::new(), Vec::new(), 0);
        for thread in lazy.thread_ids() {
            let roots = lazy.roots(thread).unwrap();
            lazy.walk_visit(&roots, None, VisitDetail::default(), |step| {
                if let Visit::Node {
                    node, tracepoint, ..
                } = step
                {
                    whole.push((node, tracepoint.header));
                }
                Ok(())
            })
            .unwrap();
            lazy.walk_visit(&roots, None, leaf_headers, |step| {
                match step {
                    Visit::Node {
                        node, tracepoint, ..
                    } => {
                        assert!(tracepoint.is_container(), "{name}: a leaf given whole");
                        headers.push((node, tracepoint.header));
                    }
                    Visit::Leaf { node, header, .. } => {
                        assert!(!header.tracepoint_type.is_container(), "{name}");
                        leaves += 1;
                        headers.push((node, header));
                    }
                    Visit::Folded { .. } => panic!("{name}: folded without a depth limit"),
                }
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(headers, whole, "{name}");
        let expected = whole
            .iter()
            .filter(|(_, header)| !header.tracepoint_type.is_container())
            .count();
        assert_eq!(leaves, expected, "{name}");
        assert!(leaves > 0, "{name}: no leaves to skip");
    }
}
