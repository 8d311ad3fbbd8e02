//! The writer's typed errors: wrong use of the builder API, strings and
//! nesting the format cannot hold, conflicting or missing reference objects,
//! and saving to disk (atomically, or not at all).

use tracetree::common::{ClassId, CodeLocationId, EventId, MethodId, ThreadId};
use tracetree::lowlevel::ObjectKind;
use tracetree::model::{
    ClassDescriptor, DiffStatus, Footer, JavaStr, ThreadName, Tracepoint, TracepointBody,
    TracepointHeader, TracepointType, Type, Value,
};
use tracetree::read::EagerTrace;
use tracetree::write::{
    CallOutcome, CallSpec, DumpWriter, MethodSpec, ThreadRecorder, TraceRecorder, ValueSpec,
    VariableSpec,
};
use tracetree::{Error, TraceBytes};

use tracetree_testkit::write;

fn method() -> MethodSpec<'static> {
    MethodSpec::new("Main", "run", vec![], Type::Void)
}

fn is_usage<T: std::fmt::Debug>(result: tracetree::Result<T>) -> bool {
    matches!(result, Err(Error::InvalidArgument { .. }))
}

#[test]
fn exiting_a_call_that_was_never_entered_is_a_usage_error() {
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let mut t = writer.thread(main).unwrap();
    assert!(is_usage(t.exit_call(CallOutcome::VOID)));
    let run = method();
    t.enter_call(None, CallSpec::new(&run)).unwrap();
    t.exit_call(CallOutcome::VOID).unwrap();
    assert!(is_usage(t.exit_call(CallOutcome::VOID)));
    assert_eq!(t.depth(), 0);
}

#[test]
fn containers_exit_in_order_and_by_their_own_kind() {
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let mut t = writer.thread(main).unwrap();
    let run = method();
    assert!(is_usage(t.enter_iteration()), "an iteration outside a loop");
    assert!(is_usage(t.exit_loop(0)));
    assert!(is_usage(t.exit_iteration()));
    t.enter_call(None, CallSpec::new(&run)).unwrap();
    assert!(
        is_usage(t.enter_iteration()),
        "an iteration directly in a call"
    );
    t.enter_loop(None, 7).unwrap();
    assert!(is_usage(t.exit_call(CallOutcome::VOID)), "a loop is open");
    assert!(is_usage(t.exit_iteration()), "no iteration is open");
    t.enter_iteration().unwrap();
    assert!(is_usage(t.exit_loop(1)), "the iteration is open");
    assert!(is_usage(t.enter_iteration()), "iterations do not nest");
    t.exit_iteration().unwrap();
    t.exit_loop(1).unwrap();
    assert!(
        is_usage(t.exit_call(CallOutcome::threw(""))),
        "a thrown exception has a name"
    );
    t.exit_call(CallOutcome::threw("IllegalStateException"))
        .unwrap();
    writer.to_bytes().unwrap();
}

#[test]
fn a_trace_with_open_containers_is_not_saved() {
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let run = method();
    writer
        .thread(main)
        .unwrap()
        .enter_call(None, CallSpec::new(&run))
        .unwrap();
    assert!(is_usage(writer.to_bytes()));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("open.trace");
    assert!(is_usage(writer.save(&path)));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no file written"
    );
    writer
        .thread(main)
        .unwrap()
        .exit_call(CallOutcome::Unfinished)
        .unwrap();
    writer.save(&path).unwrap();
}

#[test]
fn unknown_threads_are_a_usage_error() {
    let mut writer = DumpWriter::new();
    assert!(is_usage(writer.thread(ThreadId::new(0))));
    writer.add_thread("main").unwrap();
    assert!(is_usage(writer.thread(ThreadId::new(1))));
    assert!(is_usage(writer.thread(ThreadId::new(-1))));
}

#[test]
fn strings_longer_than_write_utf_allows_are_rejected() {
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let x = VariableSpec::new("x", Type::Object(JavaStr::new("java.lang.String")));
    let mut t = writer.thread(main).unwrap();
    let longest = "a".repeat(65_535);
    t.write_local(None, &x, ValueSpec::string(longest.as_str()))
        .unwrap();
    let too_long = |result: tracetree::Result<EventId>| {
        matches!(result, Err(Error::StringTooLong { len: 65_536, .. }))
    };
    assert!(too_long(t.write_local(
        None,
        &x,
        ValueSpec::string("a".repeat(65_536))
    )));
    // NUL takes two bytes of modified UTF-8.
    assert!(too_long(t.write_local(
        None,
        &x,
        ValueSpec::string("\0".repeat(32_768))
    )));
    let long_class = ValueSpec::object("C".repeat(65_536), 1);
    assert!(too_long(t.write_local(None, &x, long_class)));
    let long_variable = VariableSpec::new("v".repeat(65_536), Type::Int);
    assert!(too_long(t.write_local(
        None,
        &long_variable,
        ValueSpec::Int(1)
    )));
    let long_method = MethodSpec::new("Main", "m".repeat(65_536), vec![], Type::Void);
    assert!(matches!(
        t.enter_call(None, CallSpec::new(&long_method)),
        Err(Error::StringTooLong { len: 65_536, .. })
    ));
    assert!(matches!(
        writer.add_thread("t".repeat(65_536)),
        Err(Error::StringTooLong { len: 65_536, .. })
    ));
    // Failed tracepoints take no event id and leave nothing behind.
    let (data, index) = writer.to_bytes().unwrap();
    write::check_dump_layout(&data, &index);
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    assert_eq!(trace.nodes().len(), 1);
    assert_eq!(
        trace.node(tracetree::read::NodeId(0)).tracepoint().event(),
        EventId::new(0)
    );
    let mut t = writer.thread(main).unwrap();
    assert_eq!(
        t.write_local(None, &x, ValueSpec::Null).unwrap(),
        EventId::new(1)
    );
}

/// A chain of `arrays` nested arrays around an int.
fn nested(arrays: usize) -> ValueSpec<'static> {
    (0..arrays).fold(ValueSpec::Int(1), |inner, _| {
        ValueSpec::array("[Ljava.lang.Object;", 1, 1).with_element(inner)
    })
}

#[test]
fn values_nest_as_deep_as_readers_follow_and_no_deeper() {
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let mut t = writer.thread(main).unwrap();
    t.throw(None, nested(255)).unwrap();
    assert!(is_usage(t.throw(None, nested(256))));
    let (data, _) = writer.to_bytes().unwrap();
    EagerTrace::load(TraceBytes::from_vec(data)).expect("the deepest value loads");
}

fn tracepoint(
    event: i32,
    body: TracepointBody<'static>,
    tracepoint_type: TracepointType,
) -> Tracepoint<'static> {
    Tracepoint {
        header: TracepointHeader {
            tracepoint_type,
            code_location: CodeLocationId::new(-1),
            thread: ThreadId::new(0),
            event: EventId::new(event),
            diff_status: DiffStatus::None,
        },
        child_diff_statuses: Vec::new(),
        body,
    }
}

fn throw(event: i32, exception: Value<'static>) -> Tracepoint<'static> {
    tracepoint(
        event,
        TracepointBody::Throw { exception },
        TracepointType::Throw,
    )
}

#[test]
fn raw_tracepoints_keep_ids_that_must_be_unique_and_known() {
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    writer
        .push_tracepoint(main, &throw(41, Value::Null))
        .unwrap();
    assert!(
        is_usage(writer.push_tracepoint(main, &throw(41, Value::Null))),
        "event id used twice"
    );
    assert!(
        is_usage(writer.push_tracepoint(main, &throw(-3, Value::Null))),
        "negative event id"
    );
    assert!(is_usage(
        writer.push_tracepoint(ThreadId::new(9), &throw(50, Value::Null))
    ));
    // The counter continues after the largest id given.
    let x = VariableSpec::new("x", Type::Int);
    let next = writer
        .thread(main)
        .unwrap()
        .write_local(None, &x, ValueSpec::Int(0))
        .unwrap();
    assert_eq!(next, EventId::new(42));

    // An object of class 7, which the trace does not hold.
    let object = Value::Object {
        class: ClassId::new(7),
        identity_hash: 1,
        fields: Vec::new(),
    };
    writer.push_tracepoint(main, &throw(60, object)).unwrap();
    assert!(matches!(
        writer.to_bytes(),
        Err(Error::MissingReference {
            kind: ObjectKind::ClassDescriptor,
            id: 7
        })
    ));
    let class = |name: &str| {
        tracetree::lowlevel::Object::ClassDescriptor(ClassDescriptor {
            id: ClassId::new(7),
            name: JavaStr::new(name),
        })
    };
    writer.add_reference(&class("Boom")).unwrap();
    writer.add_reference(&class("Boom")).unwrap();
    assert!(
        is_usage(writer.add_reference(&class("Other"))),
        "two classes with id 7"
    );
    let name = tracetree::lowlevel::Object::ThreadName(ThreadName {
        thread: ThreadId::new(0),
        name: JavaStr::new("main"),
    });
    assert!(
        is_usage(writer.add_reference(&name)),
        "threads carry their names"
    );
    let (data, index) = writer.to_bytes().unwrap();
    write::check_dump_layout(&data, &index);
    // A class interned by name after a raw one gets a fresh id.
    let boom = ValueSpec::object("Boom", 2);
    let other = ValueSpec::object("Other", 3);
    let mut t = writer.thread(main).unwrap();
    t.throw(None, boom).unwrap();
    t.throw(None, other).unwrap();
    let (data, _) = writer.to_bytes().unwrap();
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    assert_eq!(trace.context().ids(ObjectKind::ClassDescriptor), &[7, 8]);
}

#[test]
fn raw_footers_close_a_container_of_their_kind() {
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    assert!(is_usage(writer.push_footer(main, &Footer::LoopIteration)));
    let call = tracepoint(
        0,
        TracepointBody::MethodCall {
            method: MethodId::new(0),
            receiver: Value::Null,
            arguments: Vec::new(),
            flags: 0,
        },
        TracepointType::MethodCall,
    );
    writer.push_tracepoint(main, &call).unwrap();
    assert!(is_usage(
        writer.push_footer(main, &Footer::Loop { iterations: 0 })
    ));
    writer
        .push_footer(main, &Footer::unfinished_method())
        .unwrap();
    assert!(matches!(
        writer.to_bytes(),
        Err(Error::MissingReference {
            kind: ObjectKind::MethodDescriptor,
            id: 0
        })
    ));
}

#[test]
fn an_empty_trace_is_a_header_and_eof() {
    let (data, index) = DumpWriter::new().to_bytes().unwrap();
    assert_eq!(data.len(), 16 + 1);
    assert_eq!(index.len(), 16 + 21 + 8);
    write::check_dump_layout(&data, &index);
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    assert!(trace.threads().is_empty());
}

#[test]
fn save_writes_both_files_and_replaces_old_ones() {
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let run = method();
    let mut t = writer.thread(main).unwrap();
    t.enter_call(None, CallSpec::new(&run)).unwrap();
    t.exit_call(CallOutcome::VOID).unwrap();
    let (data, index) = writer.to_bytes().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.trace");
    std::fs::write(&path, b"old").unwrap();
    std::fs::write(dir.path().join("run.trace.idx"), b"old").unwrap();
    writer.save(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), data);
    assert_eq!(
        std::fs::read(dir.path().join("run.trace.idx")).unwrap(),
        index
    );
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["run.trace", "run.trace.idx"],
        "no temporary file left"
    );

    let mut data_out = Vec::new();
    let mut index_out = Vec::new();
    writer.save_to(&mut data_out, &mut index_out).unwrap();
    assert_eq!((data_out, index_out), (data, index));
}

#[test]
fn save_into_a_missing_folder_fails_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("run.trace");
    let result = DumpWriter::new().save(&path);
    assert!(matches!(result, Err(Error::Io { .. })), "{result:?}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_failing_stream_is_an_error_not_a_panic() {
    struct Failing;
    impl std::io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let result = DumpWriter::new().save_to(Failing, Vec::new());
    assert!(
        matches!(result, Err(Error::Io { path: None, .. })),
        "{result:?}"
    );
}
