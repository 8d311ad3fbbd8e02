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

/// The thread ids of the blocks of the trace at `path`, in file order.
fn block_threads(path: &Path) -> Vec<i32> {
    let mut index = path.as_os_str().to_owned();
    index.push(".idx");
    let index = std::fs::read(index).unwrap();
    let cells = crate::format::index::parse_index(&index).unwrap().cells;
    cells
        .iter()
        .enumerate()
        .filter_map(|(i, raw)| match raw.decode(i).unwrap() {
            crate::common::IndexCell::Block { thread, .. } => Some(thread.0),
            _ => None,
        })
        .collect()
}

/// Round-robin blocks go in turns whatever the producers' speed: thread 0's
/// first block, thread 1's, thread 0's second, … until thread 1 finishes;
/// then the thread names.
#[test]
fn round_robin_blocks_take_turns() {
    use crate::write::{BlockOrder, StreamingOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    let options = StreamingOptions {
        block_size: 256,
        flush_threshold: 64,
        queue_capacity: 1,
        order: BlockOrder::RoundRobin,
    };
    let writer = StreamingWriter::create_with_options(&path, options).unwrap();
    let method = MethodSpec::new("demo.MainKt", "main", vec![], Type::Void);
    let threads: Vec<_> = (0..2)
        .map(|t| writer.new_thread(format!("t{t}")).unwrap())
        .collect();
    assert!(writer.thread_handle(crate::common::ThreadId(0)).is_err());
    std::thread::scope(|scope| {
        for (t, mut thread) in threads.into_iter().enumerate() {
            let method = &method;
            scope.spawn(move || {
                // Thread 1, the slow one, records less.
                for _ in 0..[400, 100][t] {
                    if t == 1 {
                        std::thread::yield_now();
                    }
                    thread.enter_call(None, CallSpec::new(method)).unwrap();
                    thread.exit_call(CallOutcome::VOID).unwrap();
                }
                thread.finish().unwrap();
            });
        }
    });
    writer.close().unwrap();
    let blocks = block_threads(&path);
    let ones = blocks.iter().filter(|&&t| t == 1).count() - 1;
    let turns = 2 * ones;
    assert!(ones > 3 && blocks.len() > turns + 5, "{blocks:?}");
    let expected: Vec<i32> = (0..turns as i32)
        .map(|i| i % 2)
        .chain(std::iter::repeat_n(0, blocks.len() - turns - 2))
        .chain([0, 1])
        .collect();
    assert_eq!(blocks, expected);
}
