//! The streaming writer against files that already exist.

use std::path::Path;

use crate::model::Type;
use crate::storage::TraceBytes;
use crate::write::{CallOutcome, CallSpec, MethodSpec, StreamingWriter, ThreadRecorder};

/// Records `calls` calls of `main` in one thread at `path`.
fn record(path: &Path, calls: usize) {
    let writer = StreamingWriter::create(path).unwrap();
    let mut thread = writer.new_thread("main").unwrap();
    let method = MethodSpec::new("demo.MainKt", "main", vec![], Type::Void);
    for _ in 0..calls {
        thread.enter_call(None, CallSpec::new(&method)).unwrap();
        thread.exit_call(CallOutcome::VOID).unwrap();
    }
    thread.finish().unwrap();
    writer.close().unwrap();
}

/// Re-recording over a trace that a reader still maps leaves the reader's
/// bytes whole: a truncated mapped file would kill it with `SIGBUS`.
#[test]
fn rerecording_keeps_a_mapped_trace_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    record(&path, 1_000);
    let data = TraceBytes::map(&path).unwrap();
    let index = TraceBytes::map(dir.path().join("t.trace.idx")).unwrap();
    let (old_data, old_index) = (data.as_slice().to_vec(), index.as_slice().to_vec());

    record(&path, 10);

    assert_eq!(data.as_slice(), &old_data[..]);
    assert_eq!(index.as_slice(), &old_index[..]);
    let new_data = std::fs::read(&path).unwrap();
    assert!(
        new_data.len() < old_data.len(),
        "the new trace replaced the old one"
    );
}

/// Through a symbolic link, the file it names is replaced and the link
/// kept.
#[cfg(unix)]
#[test]
fn rerecording_through_a_link_replaces_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    record(&path, 1_000);
    let data = TraceBytes::map(&path).unwrap();
    let old_data = data.as_slice().to_vec();
    let link = dir.path().join("link.trace");
    std::os::unix::fs::symlink(&path, &link).unwrap();

    record(&link, 10);

    assert_eq!(data.as_slice(), &old_data[..]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&link).unwrap(), std::fs::read(&path).unwrap());
    assert!(std::fs::read(&path).unwrap().len() < old_data.len());
}
