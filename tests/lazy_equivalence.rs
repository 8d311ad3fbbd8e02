//! The lazy reader against the eager loader: a full expansion through
//! `TraceTree` gives the same threads, roots, tracepoints, footers and
//! children, for every bundled and reference trace, with the index used,
//! rebuilt, and with a tiny cache.

mod lazy_support;

use lazy_support::{assert_same_tree, reference_traces, testdata_traces};
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
