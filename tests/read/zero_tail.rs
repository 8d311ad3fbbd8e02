//! Zeros after the last bytes a recorder wrote (power loss, a filesystem
//! allocating ahead): every reader reads the trace as if they were not
//! there, says how many there were, and spends nothing on them.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use tracetree::read::RebuildOptions;
use tracetree::read::{EagerTrace, LazyOptions, LazyTraceReader, SidecarPolicy};
use tracetree::tree::TraceTree;
use tracetree_testkit::lazy::{assert_same_tree, testdata_traces};

/// Zeros a data file may end with and still be read as it is: the bound
/// `TraceBytes::without_zero_tail` documents.
const ZERO_SLACK: u64 = 64;

/// A copy of `trace` (and its index) cut to `len` bytes with `zeros`
/// zero bytes after (a sparse file: nothing is written for them).
fn copy_with_zeros(dir: &Path, trace: &Path, len: Option<u64>, zeros: u64) -> PathBuf {
    let name = trace.file_name().unwrap().to_string_lossy();
    let copy = dir.join(format!("{zeros}-{}", name));
    std::fs::copy(trace, &copy).unwrap();
    let index = PathBuf::from(format!("{}.idx", trace.display()));
    if index.exists() {
        std::fs::copy(&index, format!("{}.idx", copy.display())).unwrap();
    }
    let file = OpenOptions::new().write(true).open(&copy).unwrap();
    let len = len.unwrap_or(file.metadata().unwrap().len());
    file.set_len(len).unwrap();
    file.set_len(len + zeros).unwrap();
    copy
}

fn lazy(path: &Path) -> LazyTraceReader {
    LazyOptions::default()
        .sidecar(SidecarPolicy::Off)
        .open(path)
        .unwrap()
}

#[test]
fn a_zero_filled_tail_is_read_as_the_end_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for trace in testdata_traces() {
        let len = std::fs::metadata(&trace).unwrap().len();
        // Whole, and cut in its last block (a crash), then zeros.
        for cut in [None, Some(len - len / 7)] {
            let plain = copy_with_zeros(dir.path(), &trace, cut, 0);
            for zeros in [ZERO_SLACK + 1, 3 << 20] {
                let zeroed = copy_with_zeros(dir.path(), &trace, cut, zeros);
                let (a, b) = (lazy(&plain), lazy(&zeroed));
                assert_same_tree(&a, &b, &zeroed.display().to_string());
                // The zeros counted are those after the last non-zero
                // byte: a half-written block may end with a few of its own.
                let counted = b.report().data.zero_filled_bytes;
                assert!((zeros..zeros + ZERO_SLACK).contains(&counted), "{counted}");
                if cut.is_none() {
                    let expected = tracetree::read::LoadReport {
                        zero_filled_bytes: zeros,
                        ..a.report().data.clone()
                    };
                    assert_eq!(b.report().data, expected);
                }
                let (a, b) = (
                    EagerTrace::open(&plain).unwrap(),
                    EagerTrace::open(&zeroed).unwrap(),
                );
                assert_same_tree(&a, &b, &zeroed.display().to_string());
                assert_eq!(b.report().zero_filled_bytes, counted);
                checked += 1;
            }
            // Up to ZERO_SLACK zeros after the last non-zero byte are left
            // to the readers (a half-written block may end with a few).
            if cut.is_none() {
                let few = copy_with_zeros(dir.path(), &trace, cut, ZERO_SLACK);
                assert_eq!(lazy(&few).report().data.zero_filled_bytes, 0);
            }
        }
    }
    assert!(checked >= 8, "{checked}");
}

#[test]
fn a_block_start_then_a_gigabyte_of_zeros_costs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeros.trace");
    let mut header = Vec::new();
    header.extend_from_slice(&0x706E_5471_24EE_5F70u64.to_be_bytes());
    header.extend_from_slice(&22u64.to_be_bytes());
    header.push(10); // BLOCK_START of thread 0
    header.extend_from_slice(&0i32.to_be_bytes());
    std::fs::write(&path, &header).unwrap();
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(1 << 30).unwrap();
    drop(file);

    let reader = lazy(&path);
    // The block's thread id, 0, is zeros too.
    assert_eq!(
        reader.report().data.zero_filled_bytes,
        (1 << 30) - header.len() as u64 + 4
    );
    assert!(reader.thread_ids().is_empty());
    assert!(
        reader.lookup_heap_bytes() < 1 << 20,
        "{}",
        reader.lookup_heap_bytes()
    );
    let eager = EagerTrace::open(&path).unwrap();
    assert!(eager.thread_ids().is_empty());
    let index = dir.path().join("zeros.idx");
    let written = RebuildOptions::default()
        .write_index(&path, &index, &|_| {})
        .unwrap();
    assert_eq!(written.cells, 0);
}
