//! The lazy reader against the eager loader: a full expansion through
//! `TraceTree` gives the same threads, roots, tracepoints, footers and
//! children, for every bundled and reference trace, with the index used,
//! rebuilt, and with a tiny cache.

mod lazy_support;

use lazy_support::{assert_same_tree, reference_traces, testdata_traces};
use tracetree::TraceBytes;
use tracetree::read::synth::{self, Crash, SynthOptions};
use tracetree::read::{EagerTrace, IndexChoice, IndexStatus, LazyTraceReader};

#[test]
fn lazy_expansion_equals_eager_on_every_trace() {
    for path in testdata_traces().into_iter().chain(reference_traces()) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let eager = EagerTrace::open(&path).unwrap();
        let lazy = LazyTraceReader::open(&path).unwrap();
        assert!(
            matches!(lazy.report().status, IndexStatus::Used { .. }),
            "{name}: {:?}",
            lazy.report().status
        );
        assert_eq!(&lazy.report().data, eager.report(), "{name}: data report");
        let nodes = assert_same_tree(&lazy, &eager, &name);
        assert_eq!(nodes, eager.nodes().len(), "{name}");
    }
}

#[test]
fn rebuilt_lookup_structures_equal_eager() {
    for path in testdata_traces().into_iter().chain(reference_traces()) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let eager = EagerTrace::open(&path).unwrap();
        let lazy = LazyTraceReader::options()
            .index(IndexChoice::Rebuild)
            .cache_bytes(64 << 10)
            .open(&path)
            .unwrap();
        assert!(matches!(lazy.report().status, IndexStatus::Rebuilt(_)));
        assert_eq!(&lazy.report().data, eager.report(), "{name}: data report");
        assert_same_tree(&lazy, &eager, &name);
    }
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
        let (data, index) = synth::generate(&options);
        let eager = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
        for cache_bytes in [64 << 20, 8 << 10] {
            let lazy = LazyTraceReader::options()
                .cache_bytes(cache_bytes)
                .open_bytes(
                    TraceBytes::from_vec(data.clone()),
                    Some(TraceBytes::from_vec(index.clone())),
                )
                .unwrap();
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
