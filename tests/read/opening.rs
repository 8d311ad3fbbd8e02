//! Opening through a `TraceCache`, as every front end opens: the status
//! and warnings of a whole and of a damaged trace, strict opening refusing
//! the damaged one, and a temporary cache leaving nothing behind.

use std::path::{Path, PathBuf};

use tracetree::{Error, TraceCache, TraceStatus};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// A copy of the data file of `name` (without its index) cut to half.
fn cut_copy(dir: &Path, name: &str) -> PathBuf {
    let copy = dir.join(name);
    let bytes = std::fs::read(testdata(name)).unwrap();
    std::fs::write(&copy, &bytes[..bytes.len() / 2]).unwrap();
    copy
}

#[test]
fn a_whole_trace_opens_complete_without_warnings() {
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = TraceCache::in_folder(cache_dir.path()).unwrap();
    let path = testdata("multi-thread.trace");
    let opened = cache
        .open(&path, "multi-thread.trace", cache.lazy_options(), false)
        .unwrap();
    assert_eq!(opened.status, TraceStatus::Complete);
    assert!(opened.warnings.is_empty(), "{:?}", opened.warnings);
    assert_eq!(opened.trace.path, path);
    assert_eq!(opened.reader.thread_ids().len(), 4);
}

#[test]
fn a_cut_trace_opens_damaged_and_strict_opening_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = cut_copy(dir.path(), "multi-thread.trace");
    let cache = TraceCache::temporary().unwrap();
    let opened = cache
        .open(&path, "given-name", cache.lazy_options(), false)
        .unwrap();
    assert_eq!(opened.status, TraceStatus::Damaged);
    assert!(
        opened
            .warnings
            .iter()
            .any(|w| w.starts_with("given-name: ")),
        "{:?}",
        opened.warnings
    );
    assert!(
        opened
            .warnings
            .iter()
            .any(|w| w.contains("rebuilt from the data")),
        "no index: {:?}",
        opened.warnings
    );

    let strict = cache.strict(true);
    match strict.open(&path, "given-name", strict.lazy_options(), false) {
        Err(Error::BadSource { path, what }) => {
            assert_eq!(path, Path::new("given-name"));
            assert!(what.contains("strict"), "{what}");
        }
        Err(other) => panic!("another error: {other}"),
        Ok(opened) => panic!("opened as {:?}", opened.status),
    }
}

#[test]
fn a_temporary_cache_writes_nothing_beside_the_trace() {
    let cache = TraceCache::temporary().unwrap();
    assert!(cache.is_temporary());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    std::fs::copy(testdata("all-types.trace"), &path).unwrap();
    std::fs::copy(
        testdata("all-types.trace.idx"),
        dir.path().join("t.trace.idx"),
    )
    .unwrap();
    let opened = cache
        .open(&path, "t.trace", cache.lazy_options(), false)
        .unwrap();
    assert_eq!(opened.status, TraceStatus::Complete);
    drop(opened);
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["t.trace", "t.trace.idx"]);
}
