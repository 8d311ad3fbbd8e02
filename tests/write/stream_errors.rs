//! Bad use of the streaming writer gives typed errors, and leaves the writer
//! usable where it can: exits that match no entry, writing after close,
//! closing with open containers, and I/O errors from the disk (a full
//! device, a target that cannot be created, a disk filling mid-stream).

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use tracetree::common::{EventId, ThreadId};
use tracetree::lowlevel::{Object, ObjectKind};
use tracetree::model::{
    ClassDescriptor, DiffStatus, Footer, JavaStr, Tracepoint, TracepointBody, TracepointHeader,
    TracepointType, Type, Value,
};
use tracetree::read::EagerTrace;
use tracetree::write::{
    CallOutcome, CallSpec, MethodSpec, StreamingOptions, StreamingWriter, ThreadRecorder,
    TraceRecorder, ValueSpec,
};
use tracetree::{Error, TraceBytes};

use tracetree_testkit::stream::{Memory, check_stream_layout, memory_writer};

fn usage<T: std::fmt::Debug>(result: tracetree::Result<T>, needle: &str) {
    match result {
        Err(error @ Error::InvalidArgument { .. }) => {
            let message = error.to_string();
            assert!(message.contains(needle), "{message:?} lacks {needle:?}")
        }
        other => panic!("expected an invalid-argument error about {needle:?}, got {other:?}"),
    }
}

fn method() -> MethodSpec<'static> {
    MethodSpec::new("A", "m", vec![], Type::Void)
}

#[test]
fn exits_must_match_entries() {
    let (mut writer, data, index) = memory_writer(StreamingOptions::default());
    let id = writer.add_thread("main").unwrap();
    let mut t = writer.thread(id).unwrap();
    usage(t.exit_call(CallOutcome::VOID), "no open container");
    usage(t.exit_loop(0), "no open container");
    usage(t.exit_iteration(), "no open container");
    usage(t.enter_iteration(), "no open container");
    let m = method();
    t.enter_call(None, CallSpec::new(&m)).unwrap();
    usage(t.exit_loop(1), "is a method_call, not a loop");
    usage(
        t.push_footer(&Footer::LoopIteration),
        "cannot close the open method_call",
    );
    t.enter_loop(None, 7).unwrap();
    usage(
        t.exit_call(CallOutcome::VOID),
        "is a loop, not a method_call",
    );
    // The thread goes on as if the bad calls never happened.
    t.enter_iteration().unwrap();
    t.exit_iteration().unwrap();
    t.exit_loop(1).unwrap();
    t.exit_call(CallOutcome::VOID).unwrap();
    usage(t.exit_call(CallOutcome::VOID), "no open container");
    drop(t);
    writer.close().unwrap();
    check_stream_layout(&data.bytes(), &index.bytes(), None);
}

#[test]
fn bad_ids_and_names_are_refused() {
    let writer = StreamingWriter::from_writers(
        Memory::default(),
        Memory::default(),
        StreamingOptions::default(),
    )
    .unwrap();
    writer.new_thread_with_id(ThreadId::new(5), "five").unwrap();
    usage(
        writer.new_thread_with_id(ThreadId::new(5), "again"),
        "used twice",
    );
    usage(
        writer.new_thread_with_id(ThreadId::new(-1), "negative"),
        "negative",
    );
    usage(writer.thread_handle(ThreadId::new(9)), "no thread 9");
    // Ids go on after the largest taken.
    assert_eq!(
        writer.new_thread("six").unwrap().thread_id(),
        ThreadId::new(6)
    );
    let long = "x".repeat(70_000);
    assert!(matches!(
        writer.new_thread(long.as_str()),
        Err(Error::StringTooLong { .. })
    ));
    let class = |name: &str| {
        Object::ClassDescriptor(ClassDescriptor {
            id: tracetree::common::ClassId::new(3),
            name: JavaStr::new(name),
        })
    };
    writer.add_reference(&class("A")).unwrap();
    writer.add_reference(&class("A")).unwrap();
    usage(writer.add_reference(&class("B")), "two different");

    let mut t = writer.thread_handle(ThreadId::new(5)).unwrap();
    let mut tracepoint = Tracepoint {
        header: TracepointHeader {
            tracepoint_type: TracepointType::Throw,
            code_location: tracetree::common::CodeLocationId::new(-1),
            thread: ThreadId::new(5),
            event: EventId::new(-3),
            diff_status: DiffStatus::None,
        },
        child_diff_statuses: Vec::new(),
        body: TracepointBody::Throw {
            exception: Value::Object {
                class: tracetree::common::ClassId::new(4),
                identity_hash: 1,
                fields: Vec::new(),
            },
        },
    };
    usage(t.push_tracepoint(&tracepoint), "is negative");
    tracepoint.header.event = EventId::new(0);
    // Class 4 was never added.
    assert!(matches!(
        t.push_tracepoint(&tracepoint),
        Err(Error::MissingReference {
            kind: ObjectKind::ClassDescriptor,
            id: 4
        })
    ));
    drop(t);
    writer.close().unwrap();
}

#[test]
fn writing_after_close_is_refused() {
    let (mut writer, data, _) = memory_writer(StreamingOptions::default());
    let id = writer.add_thread("main").unwrap();
    let mut kept = writer.thread(id).unwrap();
    let m = method();
    kept.enter_call(None, CallSpec::new(&m)).unwrap();
    kept.exit_call(CallOutcome::VOID).unwrap();
    writer.close().unwrap();
    usage(kept.enter_call(None, CallSpec::new(&m)), "closed");
    usage(kept.throw(None, ValueSpec::Null), "closed");
    usage(kept.flush(), "closed");
    usage(kept.finish(), "closed");
    // What was written before close is in the trace.
    let trace = EagerTrace::load(TraceBytes::from_vec(data.bytes())).unwrap();
    assert!(trace.report().is_complete());
    assert_eq!(trace.nodes().len(), 1);
}

#[test]
fn closing_with_open_containers_fails_but_writes_the_trace() {
    let (mut writer, data, index) = memory_writer(StreamingOptions::default());
    let id = writer.add_thread("main").unwrap();
    let mut t = writer.thread(id).unwrap();
    let m = method();
    t.enter_call(None, CallSpec::new(&m)).unwrap();
    t.enter_loop(None, 1).unwrap();
    drop(t);
    usage(
        writer.close(),
        "thread 0 has 2 open container(s), innermost a loop",
    );
    let trace = EagerTrace::load(TraceBytes::from_vec(data.bytes())).unwrap();
    let report = trace.report();
    assert!(!report.missing_eof, "{report:?}");
    assert_eq!(report.unfinished_containers, 2);
    assert!(
        tracetree::lowlevel::IndexCell::parse_file(&index.bytes())
            .unwrap()
            .1
    );
}

/// Dropping the writer without closing it writes every buffer, but does
/// not end the trace: it reads as a crashed recorder's.
#[test]
fn dropping_the_writer_flushes_without_ending_the_trace() {
    let (mut writer, data, _) = memory_writer(StreamingOptions::default());
    let id = writer.add_thread("main").unwrap();
    let mut t = writer.thread(id).unwrap();
    let m = method();
    for _ in 0..10 {
        t.enter_call(None, CallSpec::new(&m)).unwrap();
        t.exit_call(CallOutcome::VOID).unwrap();
    }
    drop(writer);
    usage(t.throw(None, ValueSpec::Null), "closed");
    let trace = EagerTrace::load(TraceBytes::from_vec(data.bytes())).unwrap();
    assert!(trace.report().missing_eof);
    assert_eq!(trace.nodes().len(), 10);
    assert!(trace.context().thread_name(id).is_none());
}

/// Bytes up to a limit, then "no space left on device".
#[derive(Clone)]
struct FillingDisk {
    memory: Memory,
    room: Arc<Mutex<usize>>,
}

impl Write for FillingDisk {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut room = self.room.lock().unwrap();
        if *room == 0 {
            return Err(io::Error::from(io::ErrorKind::StorageFull));
        }
        let n = buf.len().min(*room);
        *room -= n;
        self.memory.write(&buf[..n])
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn storage_full<T: std::fmt::Debug>(result: tracetree::Result<T>) {
    match result {
        Err(Error::Io { path: None, source }) => {
            assert_eq!(source.kind(), io::ErrorKind::StorageFull)
        }
        other => panic!("expected a full disk, got {other:?}"),
    }
}

/// The disk fills while producers stream: they get the I/O error as soon as
/// they hand over a block (none waits forever on the queue), and so does
/// `close`; the blocks that fit are intact.
#[test]
fn a_disk_filling_mid_stream_fails_every_producer() {
    let disk = FillingDisk {
        memory: Memory::default(),
        room: Arc::new(Mutex::new(200_000)),
    };
    let mut options = StreamingOptions::default();
    options.block_size = 4096;
    options.flush_threshold = 64;
    options.queue_capacity = 1;
    let writer = StreamingWriter::from_writers(disk.clone(), Memory::default(), options).unwrap();
    let m = method();
    let errors: Vec<tracetree::Error> = std::thread::scope(|scope| {
        let producers: Vec<_> = (0..3)
            .map(|t| {
                let mut thread = writer.new_thread(format!("p{t}")).unwrap();
                let m = &m;
                scope.spawn(move || {
                    for _ in 0..1_000_000 {
                        let entered = thread
                            .enter_call(None, CallSpec::new(m))
                            .and_then(|_| thread.exit_call(CallOutcome::VOID));
                        if let Err(error) = entered {
                            return error;
                        }
                    }
                    panic!("a million calls fit in 200 kB");
                })
            })
            .collect();
        producers.into_iter().map(|p| p.join().unwrap()).collect()
    });
    for error in errors {
        storage_full(Err::<(), _>(error));
    }
    storage_full(writer.close());
    let data = disk.memory.bytes();
    assert_eq!(data.len(), 200_000);
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    assert!(trace.report().missing_eof);
    assert!(trace.nodes().len() > 1000);
}

/// `/dev/full` takes no byte: the writer fails as it writes the header.
#[cfg(target_os = "linux")]
#[test]
fn a_full_device_fails_at_once() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    storage_full(StreamingWriter::from_writers(
        full,
        Memory::default(),
        StreamingOptions::default(),
    ));
}

/// A target that cannot be created fails with the path: a directory without
/// write permission, or — for root, whom permissions do not stop — a
/// file system that refuses new files (`/sys`).
#[cfg(unix)]
#[test]
fn an_unwritable_target_fails_with_its_path() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let probe = locked.join("probe");
    let target = if std::fs::File::create(&probe).is_err() {
        locked.join("t.trace")
    } else if std::path::Path::new("/sys/kernel").is_dir() {
        std::path::PathBuf::from("/sys/kernel/tracetree-test.trace")
    } else {
        eprintln!("skipped: permissions do not apply and /sys is absent");
        return;
    };
    match StreamingWriter::create(&target) {
        Err(Error::Io { path, source }) => {
            assert_eq!(path, Some(target));
            assert_eq!(source.kind(), io::ErrorKind::PermissionDenied);
        }
        other => panic!(
            "expected an I/O error on {}, got {other:?}",
            target.display()
        ),
    }
    let _ = std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755));
}

/// A producer whose writer is gone gets an error too.
#[test]
fn a_handle_outliving_its_writer_is_refused() {
    let (writer, _, _) = memory_writer(StreamingOptions::default());
    let mut t = writer.new_thread("main").unwrap();
    drop(writer);
    usage(t.push_footer(&Footer::Loop { iterations: 0 }), "closed");
}
