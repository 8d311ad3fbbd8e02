//! The post-processed view (`tree::Postprocessed`) against the reference's
//! `CompressingPostprocessor`: small traces holding each pattern it
//! compresses or removes, and look-alikes it must leave, printed through
//! the view line for line, on the lazy reader and the eager loader alike.

use std::collections::BTreeMap;
use std::path::Path;

use tracetree::diff::{DiffInput, DiffOptions, diff_traces};
use tracetree::model::{CodeLocationKind, JavaStr, Type};
use tracetree::print::PrintOptions;
use tracetree::read::EagerTrace;
use tracetree::tree::Postprocessed;
use tracetree::write::{
    AccessPathSpec, CallOutcome, CallSpec, CodeLocationSpec, DumpWriter, FieldSpec, MethodSpec,
    ThreadRecorder, TraceRecorder, ValueSpec, VariableSpec,
};
use tracetree::{LazyTraceReader, TraceTree};

fn string() -> Type<'static> {
    Type::Object(JavaStr::new("java.lang.String"))
}

fn at(method: &str, line: i32) -> CodeLocationSpec<'static> {
    CodeLocationSpec::new(
        CodeLocationKind::Line,
        "A.kt",
        "A",
        method.to_string(),
        line,
    )
}

/// A small recording: each pattern under the root `Main.run()`, from the
/// call site in `A.operation` (line = the pattern's number).
fn write_patterns(path: &Path) {
    let a = |name: &str, parameters: Vec<Type<'static>>, returns: Type<'static>| {
        MethodSpec::new("A", name.to_string(), parameters, returns)
    };
    let run = MethodSpec::new("Main", "run", vec![], Type::Void);
    let call_me_default = a("callMe$default", vec![Type::Int], Type::Void);
    let call_me = a("callMe", vec![Type::Int, string()], Type::Void);
    let call_me_plain = a("callMe", vec![], Type::Void);
    let access_call_me = a("access$callMe", vec![], Type::Void);
    let access_get = a("access$get_field", vec![], Type::Int);
    let access_set = a("access$set_field", vec![Type::Int], Type::Void);
    let get_x = a("getX", vec![], Type::Int);
    let get_x_default = a("getX$default", vec![], Type::Int);
    let set_x = a("setX", vec![Type::Int], Type::Void);
    let get_y = a("getY", vec![], string());
    let get_x_arg = a("getX", vec![Type::Int], Type::Int);
    let defaults = a("callMe$defaults", vec![], Type::Void);
    let two_children = a("foo", vec![], Type::Void);
    let bar = a("bar", vec![], Type::Void);
    let b_default = MethodSpec::new("B", "callMe$default", vec![], Type::Void);
    let field = FieldSpec::new("A", "_field", Type::Int);
    let x = FieldSpec::new("A", "x", Type::Int);
    let y = FieldSpec::new("A", "y", Type::Int);
    let hits =
        FieldSpec::new("A", "__$hits$__", Type::Array(Box::new(Type::Boolean))).with_static(true);
    let this = VariableSpec::new("this", Type::Object(JavaStr::new("A")));
    let set_param = VariableSpec::new("<set-?>", Type::Int);
    let value_var = VariableSpec::new("value", Type::Int);
    let coverage = VariableSpec::new("__$coverage_local$__", Type::Array(Box::new(Type::Boolean)));
    let coverage_like = VariableSpec::new("__$coverage_local$__x", Type::Int);
    let obj = || ValueSpec::object("A", 1);

    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let mut t = writer.thread(main).unwrap();
    let void = || CallOutcome::VOID;
    t.enter_call(None, CallSpec::new(&run)).unwrap();

    // 1. `callMe$default` with one child `callMe`.
    t.enter_call(
        Some(&at("operation", 1)),
        CallSpec::new(&call_me_default).on(obj()).with_argument(3),
    )
    .unwrap();
    t.enter_call(
        Some(&at("callMe$default", 27)),
        CallSpec::new(&call_me)
            .on(obj())
            .with_argument(3)
            .with_argument(ValueSpec::string("Hey")),
    )
    .unwrap();
    t.exit_call(void()).unwrap();
    t.exit_call(void()).unwrap();

    // 2. `access$callMe` → `callMe`.
    t.enter_call(Some(&at("operation", 2)), CallSpec::new(&access_call_me))
        .unwrap();
    t.enter_call(
        Some(&at("access$callMe", 30)),
        CallSpec::new(&call_me_plain),
    )
    .unwrap();
    t.exit_call(void()).unwrap();
    t.exit_call(void()).unwrap();

    // 3. `access$get_field`: `this`, then the field read.
    t.enter_call(
        Some(&at("operation", 3)),
        CallSpec::new(&access_get).with_argument(obj()),
    )
    .unwrap();
    t.read_local(Some(&at("access$get_field", 40)), &this, obj())
        .unwrap();
    t.read_field(
        Some(&at("access$get_field", 40)),
        &field,
        obj(),
        ValueSpec::Int(5),
    )
    .unwrap();
    t.exit_call(CallOutcome::returned(5)).unwrap();

    // 4. `access$set_field`: `this`, `<set-?>`, then the field write.
    t.enter_call(
        Some(&at("operation", 4)),
        CallSpec::new(&access_set)
            .with_argument(obj())
            .with_argument(6),
    )
    .unwrap();
    t.read_local(Some(&at("access$set_field", 41)), &this, obj())
        .unwrap();
    t.read_local(
        Some(&at("access$set_field", 41)),
        &set_param,
        ValueSpec::Int(6),
    )
    .unwrap();
    t.write_field(
        Some(&at("access$set_field", 41)),
        &field,
        obj(),
        ValueSpec::Int(6),
    )
    .unwrap();
    t.exit_call(void()).unwrap();

    // 5. An auto-generated getter.
    let read_x = |t: &mut tracetree::write::DumpThread<'_>, method: &str, value| {
        t.read_field(Some(&at(method, 50)), &x, obj(), value)
            .unwrap();
    };
    t.enter_call(Some(&at("operation", 5)), CallSpec::new(&get_x).on(obj()))
        .unwrap();
    read_x(&mut t, "getX", ValueSpec::Int(7));
    t.exit_call(CallOutcome::returned(7)).unwrap();

    // 6. An auto-generated setter.
    t.enter_call(
        Some(&at("operation", 6)),
        CallSpec::new(&set_x).on(obj()).with_argument(8),
    )
    .unwrap();
    t.read_local(Some(&at("setX", 51)), &set_param, ValueSpec::Int(8))
        .unwrap();
    t.write_field(Some(&at("setX", 51)), &x, obj(), ValueSpec::Int(8))
        .unwrap();
    t.exit_call(void()).unwrap();

    // 7. Coverage instrumentation: a local, an array through it, a field.
    let coverage_at = at("operation", 7).with_access_path(AccessPathSpec::local(coverage.clone()));
    t.write_local(
        Some(&at("operation", 7)),
        &coverage,
        ValueSpec::array("[Z", 2, 4),
    )
    .unwrap();
    t.write_array(
        Some(&coverage_at),
        ValueSpec::array("[Z", 2, 4),
        1,
        ValueSpec::Boolean(true),
    )
    .unwrap();
    t.read_field(
        Some(&at("operation", 7)),
        &hits,
        ValueSpec::Null,
        ValueSpec::array("[Z", 2, 4),
    )
    .unwrap();

    // 8. A loop without iterations; one whose only iteration is empty; one
    // whose last iteration is empty.
    t.enter_loop(Some(&at("operation", 8)), 1).unwrap();
    t.exit_loop(0).unwrap();
    t.enter_loop(Some(&at("operation", 8)), 2).unwrap();
    t.enter_iteration().unwrap();
    t.exit_iteration().unwrap();
    t.exit_loop(1).unwrap();
    t.enter_loop(Some(&at("operation", 8)), 3).unwrap();
    t.enter_iteration().unwrap();
    t.read_local(Some(&at("operation", 8)), &value_var, ValueSpec::Int(1))
        .unwrap();
    t.exit_iteration().unwrap();
    t.enter_iteration().unwrap();
    t.exit_iteration().unwrap();
    t.exit_loop(2).unwrap();

    // 9. Look-alikes: another class's `$default`, a name that only starts
    // alike, a getter of another type, a getter with an argument, a setter
    // whose parameter is named, a local named nearly as coverage's.
    t.enter_call(Some(&at("operation", 9)), CallSpec::new(&b_default))
        .unwrap();
    t.enter_call(
        Some(&at("callMe$default", 60)),
        CallSpec::new(&call_me_plain),
    )
    .unwrap();
    t.exit_call(void()).unwrap();
    t.exit_call(void()).unwrap();
    t.enter_call(Some(&at("operation", 9)), CallSpec::new(&defaults))
        .unwrap();
    t.enter_call(
        Some(&at("callMe$defaults", 61)),
        CallSpec::new(&call_me_plain),
    )
    .unwrap();
    t.exit_call(void()).unwrap();
    t.exit_call(void()).unwrap();
    t.enter_call(Some(&at("operation", 9)), CallSpec::new(&get_y).on(obj()))
        .unwrap();
    t.read_field(Some(&at("getY", 62)), &y, obj(), ValueSpec::Int(1))
        .unwrap();
    t.exit_call(CallOutcome::returned(ValueSpec::string("1")))
        .unwrap();
    t.enter_call(
        Some(&at("operation", 9)),
        CallSpec::new(&get_x_arg).on(obj()).with_argument(1),
    )
    .unwrap();
    read_x(&mut t, "getX", ValueSpec::Int(7));
    t.exit_call(CallOutcome::returned(7)).unwrap();
    t.enter_call(
        Some(&at("operation", 9)),
        CallSpec::new(&set_x).on(obj()).with_argument(8),
    )
    .unwrap();
    t.read_local(Some(&at("setX", 63)), &value_var, ValueSpec::Int(8))
        .unwrap();
    t.write_field(Some(&at("setX", 63)), &x, obj(), ValueSpec::Int(8))
        .unwrap();
    t.exit_call(void()).unwrap();
    t.write_local(Some(&at("operation", 9)), &coverage_like, ValueSpec::Int(0))
        .unwrap();

    // 10. A call of two children, the first dropped: the reference lists
    // the second twice (its peeked slot stays filled).
    t.enter_call(Some(&at("operation", 10)), CallSpec::new(&two_children))
        .unwrap();
    t.write_local(Some(&at("foo", 70)), &coverage, ValueSpec::Null)
        .unwrap();
    t.enter_call(Some(&at("foo", 71)), CallSpec::new(&bar))
        .unwrap();
    t.exit_call(void()).unwrap();
    t.exit_call(void()).unwrap();

    // 11. A chain: `getX$default` → `getX` → the read of `x`.
    t.enter_call(Some(&at("operation", 11)), CallSpec::new(&get_x_default))
        .unwrap();
    t.enter_call(
        Some(&at("getX$default", 80)),
        CallSpec::new(&get_x).on(obj()),
    )
    .unwrap();
    read_x(&mut t, "getX", ValueSpec::Int(9));
    t.exit_call(CallOutcome::returned(9)).unwrap();
    t.exit_call(CallOutcome::returned(9)).unwrap();

    // 12. A chain of pairs: `access$callMe` → `callMe$default` → `callMe`.
    t.enter_call(Some(&at("operation", 12)), CallSpec::new(&access_call_me))
        .unwrap();
    t.enter_call(
        Some(&at("access$callMe", 90)),
        CallSpec::new(&call_me_default).on(obj()).with_argument(4),
    )
    .unwrap();
    t.enter_call(
        Some(&at("callMe$default", 91)),
        CallSpec::new(&call_me_plain),
    )
    .unwrap();
    t.read_local(Some(&at("callMe", 92)), &value_var, ValueSpec::Int(2))
        .unwrap();
    t.exit_call(void()).unwrap();
    t.exit_call(void()).unwrap();
    t.exit_call(void()).unwrap();

    t.exit_call(void()).unwrap();
    writer.save(path).unwrap();
}

fn printed<T: TraceTree>(tree: &T) -> String {
    let mut out = Vec::new();
    let mut options = PrintOptions::default();
    options.verbose = true;
    options.event_ids = true;
    options.print(tree, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The recording as the reference's eager printer prints it.
const RAW: &str = "# Thread 1
#0	Main.run() at :0
#1	  A@1.callMe$default(3) at A.kt:1
#2	    A@1.callMe(3, \"Hey\") at A.kt:27
#3	  A.access$callMe() at A.kt:2
#4	    callMe() at A.kt:30
#5	  A.access$get_field(A@1): 5 at A.kt:3
#6	    this ➜ A@1 at A.kt:40
#7	    A@1._field ➜ 5 at A.kt:40
#8	  A.access$set_field(A@1, 6) at A.kt:4
#9	    this ➜ A@1 at A.kt:41
#10	    <set-?> ➜ 6 at A.kt:41
#11	    A@1._field = 6 at A.kt:41
#12	  A@1.getX(): 7 at A.kt:5
#13	    A@1.x ➜ 7 at A.kt:50
#14	  A@1.setX(8) at A.kt:6
#15	    <set-?> ➜ 8 at A.kt:51
#16	    A@1.x = 8 at A.kt:51
#17	  __$coverage_local$__ = [Z@2 at A.kt:7
#18	  [Z@2[1] = true at A.kt:7
#19	  A.__$hits$__ ➜ [Z@2 at A.kt:7
#20	  loop(0 iterations) at A.kt:8
#21	  loop(1 iterations) at A.kt:8
#22	    <iteration 1> at A.kt:8
#23	  loop(2 iterations) at A.kt:8
#24	    <iteration 1> at A.kt:8
#25	      value ➜ 1 at A.kt:8
#26	    <iteration 2> at A.kt:8
#27	  B.callMe$default() at A.kt:9
#28	    A.callMe() at A.kt:60
#29	  A.callMe$defaults() at A.kt:9
#30	    callMe() at A.kt:61
#31	  A@1.getY(): \"1\" at A.kt:9
#32	    A@1.y ➜ 1 at A.kt:62
#33	  A@1.getX(1): 7 at A.kt:9
#34	    A@1.x ➜ 7 at A.kt:50
#35	  A@1.setX(8) at A.kt:9
#36	    value ➜ 8 at A.kt:63
#37	    A@1.x = 8 at A.kt:63
#38	  __$coverage_local$__x = 0 at A.kt:9
#39	  A.foo() at A.kt:10
#40	    __$coverage_local$__ = null at A.kt:70
#41	    bar() at A.kt:71
#42	  A.getX$default(): 9 at A.kt:11
#43	    A@1.getX(): 9 at A.kt:80
#44	      A@1.x ➜ 9 at A.kt:50
#45	  A.access$callMe() at A.kt:12
#46	    A@1.callMe$default(4) at A.kt:90
#47	      callMe() at A.kt:91
#48	        value ➜ 2 at A.kt:92
";

/// What `CompressingPostprocessor` makes of it, rule by rule:
/// - 1, 2, 12: a pair becomes its inner call (event id, arguments, result,
///   children) at the outer call's location; 12 is `access$callMe` over the
///   already compressed `callMe$default`.
/// - 3, 4: the synthetic accessor becomes its last child, at its location.
/// - 5, 6: the generated getter and setter become their field access.
/// - 7: coverage accesses are dropped; 8: the loop without iterations and
///   the loop whose only iteration is empty are dropped, the last empty
///   iteration too, and its loop counts one iteration fewer.
/// - 9: look-alikes stay: another class, `$defaults`, a getter returning
///   another type, a getter with an argument, a setter's named parameter,
///   a local named longer than coverage's.
/// - 10: `foo` has two raw children, the first dropped: the reference's
///   peek of slot 1 stays filled after its kept children are compacted into
///   slot 0, so `bar()` is listed twice.
/// - 11: `getX$default`'s child becomes a read (so no pair), and the read
///   keeps `getX`'s location; `getX$default` is no getter of `x`.
const POSTPROCESSED: &str = "# Thread 1
#0	Main.run() at :0
#2	  A@1.callMe(3, \"Hey\") at A.kt:1
#4	  A.callMe() at A.kt:2
#7	  A@1._field ➜ 5 at A.kt:3
#11	  A@1._field = 6 at A.kt:4
#13	  A@1.x ➜ 7 at A.kt:5
#16	  A@1.x = 8 at A.kt:6
#23	  loop(1 iterations) at A.kt:8
#24	    <iteration 1> at A.kt:8
#25	      value ➜ 1 at A.kt:8
#27	  B.callMe$default() at A.kt:9
#28	    A.callMe() at A.kt:60
#29	  A.callMe$defaults() at A.kt:9
#30	    callMe() at A.kt:61
#31	  A@1.getY(): \"1\" at A.kt:9
#32	    A@1.y ➜ 1 at A.kt:62
#33	  A@1.getX(1): 7 at A.kt:9
#34	    A@1.x ➜ 7 at A.kt:50
#35	  A@1.setX(8) at A.kt:9
#36	    value ➜ 8 at A.kt:63
#37	    A@1.x = 8 at A.kt:63
#38	  __$coverage_local$__x = 0 at A.kt:9
#39	  A.foo() at A.kt:10
#41	    bar() at A.kt:71
#41	    bar() at A.kt:71
#42	  A.getX$default(): 9 at A.kt:11
#44	    A@1.x ➜ 9 at A.kt:80
#47	  A.callMe() at A.kt:12
#48	    value ➜ 2 at A.kt:92
";

fn assert_lines(actual: &str, expected: &str) {
    for (number, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
        assert_eq!(a, e, "line {}", number + 1);
    }
    assert_eq!(actual.lines().count(), expected.lines().count());
}

#[test]
fn each_pattern_prints_as_the_reference_post_processes_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("patterns.trace");
    write_patterns(&path);
    let lazy = LazyTraceReader::open(&path).unwrap();
    let eager = EagerTrace::open(&path).unwrap();
    assert_lines(&printed(&lazy), RAW);
    assert_lines(&printed(&eager), RAW);
    assert_lines(&printed(&Postprocessed::new(&lazy)), POSTPROCESSED);
    assert_lines(&printed(&Postprocessed::new(&eager)), POSTPROCESSED);
}

#[test]
fn node_by_node_access_agrees_with_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("patterns.trace");
    write_patterns(&path);
    let lazy = LazyTraceReader::open(&path).unwrap();
    let view = Postprocessed::new(&lazy);
    // The default walk pages children through `children_range`.
    let mut walked = Vec::new();
    let roots = view.roots(view.thread_ids()[0]).unwrap();
    view.walk(&roots, |node, depth| {
        let event = view.visit(node, |tp, _| tp.event().get()).unwrap();
        walked.push(format!("{depth} #{event}"));
        Ok(())
    })
    .unwrap();
    let expected: Vec<String> = POSTPROCESSED
        .lines()
        .skip(1)
        .map(|line| {
            let (id, text) = line.split_once('\t').unwrap();
            let depth = (text.len() - text.trim_start().len()) / 2;
            format!("{depth} {id}")
        })
        .collect();
    assert_eq!(walked, expected);
    let root = roots[0];
    assert_eq!(view.child_count(root).unwrap(), 16);
    assert_eq!(view.children_range(root, 14, 5).unwrap().len(), 2);
}

/// A one-thread trace: `run()` calling `callMe(3)` at line 1, through
/// `callMe$default` when `wrapped`.
fn write_call(path: &Path, wrapped: bool) {
    let run = MethodSpec::new("Main", "run", vec![], Type::Void);
    let wrapper = MethodSpec::new("A", "callMe$default", vec![Type::Int], Type::Void);
    let call_me = MethodSpec::new("A", "callMe", vec![Type::Int], Type::Void);
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let mut t = writer.thread(main).unwrap();
    t.enter_call(None, CallSpec::new(&run)).unwrap();
    if wrapped {
        t.enter_call(
            Some(&at("operation", 1)),
            CallSpec::new(&wrapper).with_argument(3),
        )
        .unwrap();
        t.enter_call(
            Some(&at("callMe$default", 5)),
            CallSpec::new(&call_me).with_argument(3),
        )
        .unwrap();
        t.exit_call(CallOutcome::VOID).unwrap();
        t.exit_call(CallOutcome::VOID).unwrap();
    } else {
        t.enter_call(
            Some(&at("operation", 1)),
            CallSpec::new(&call_me).with_argument(3),
        )
        .unwrap();
        t.exit_call(CallOutcome::VOID).unwrap();
    }
    t.exit_call(CallOutcome::VOID).unwrap();
    writer.save(path).unwrap();
}

#[test]
fn a_default_wrapper_alone_diffs_unchanged_through_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let (left, right) = (
        dir.path().join("left.trace"),
        dir.path().join("right.trace"),
    );
    write_call(&left, true);
    write_call(&right, false);
    let (l, r) = (
        LazyTraceReader::open(&left).unwrap(),
        LazyTraceReader::open(&right).unwrap(),
    );
    let input = |trace, name| DiffInput::new(trace, name);
    let diff = |options: &DiffOptions, name: &str| {
        let out = dir.path().join(name);
        let summary = diff_traces(input(&l, "left"), input(&r, "right"), options, &out).unwrap();
        let mut text = Vec::new();
        PrintOptions::default()
            .print(&EagerTrace::open(&out).unwrap(), &mut text)
            .unwrap();
        (summary, String::from_utf8(text).unwrap())
    };
    let (summary, text) = diff(&DiffOptions::default(), "through.packedtrace");
    let thread = &summary.threads[0];
    assert_eq!(
        (thread.removed, thread.added, thread.edited),
        (0, 0, 0),
        "{text}"
    );
    assert_eq!(thread.unchanged, 2, "{text}");
    let mut raw = DiffOptions::default();
    raw.postprocess = false;
    let (summary, text) = diff(&raw, "raw.packedtrace");
    let thread = &summary.threads[0];
    assert!(thread.removed + thread.added + thread.edited > 0, "{text}");
}

/// Each view node's event id and depth, in the walk's pre-order.
fn walked_events<T: TraceTree>(view: &T) -> Vec<(T::Node, usize, i32)> {
    let mut walked = Vec::new();
    let roots = view.roots(view.thread_ids()[0]).unwrap();
    view.walk(&roots, |node, depth| {
        let event = view.visit(node, |tp, _| tp.event().get()).unwrap();
        walked.push((node, depth, event));
        Ok(())
    })
    .unwrap();
    walked
}

#[test]
fn view_nodes_are_found_again_by_handle_event_and_path() {
    use tracetree::common::EventId;
    use tracetree::tree::Navigate;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("patterns.trace");
    write_patterns(&path);
    let lazy = LazyTraceReader::open(&path).unwrap();
    let view = Postprocessed::new(&lazy);
    let walked = walked_events(&view);
    // The open containers above each node, as the walk meets them.
    let mut above: Vec<tracetree::tree::PostNode<_>> = Vec::new();
    for &(node, depth, event) in &walked {
        above.truncate(depth);
        assert_eq!(
            view.resolve_handle(view.handle(node)).unwrap(),
            node,
            "#{event}"
        );
        assert_eq!(view.ancestors(node).unwrap(), above, "#{event}");
        let siblings = match above.last() {
            Some(&parent) => view.children(parent).unwrap(),
            None => view.roots(view.node_thread(node)).unwrap(),
        };
        let first = siblings.iter().position(|&s| s == node).unwrap();
        assert_eq!(view.position(node).unwrap(), first, "#{event}");
        let found = view.node_by_event(EventId::new(event)).unwrap().unwrap();
        assert_eq!(found, node, "#{event}");
        if view.child_count(node).unwrap() > 0 {
            above.push(node);
        }
    }
    // Events the view hides: a collapsed wrapper's own id is shown by its
    // inner call (#1 by #2); an accessor's receiver read (#6) and a dropped
    // loop (#20) by nothing.
    let shown: Vec<i32> = walked.iter().map(|w| w.2).collect();
    for hidden in [1, 6, 17, 20, 22, 43] {
        assert!(!shown.contains(&hidden));
        assert_eq!(
            view.node_by_event(EventId::new(hidden)).unwrap(),
            None,
            "#{hidden}"
        );
    }
    // The raw node of a collapsed pair's inner call is no handle of the
    // view: the pair's handle is the wrapper's.
    let inner_call = lazy.node_by_event(EventId::new(2)).unwrap().unwrap();
    let error = view.resolve_handle(lazy.handle(inner_call)).unwrap_err();
    assert!(error.to_string().contains("hides"), "{error}");
    assert_eq!(
        view.handle(view.node_by_event(EventId::new(2)).unwrap().unwrap()),
        lazy.handle(lazy.node_by_event(EventId::new(1)).unwrap().unwrap())
    );
}

#[test]
fn the_view_pre_order_and_its_resumptions_follow_the_walk() {
    use tracetree::tree::Navigate;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("patterns.trace");
    write_patterns(&path);
    let lazy = LazyTraceReader::open(&path).unwrap();
    let view = Postprocessed::new(&lazy);
    let walked: Vec<_> = walked_events(&view)
        .into_iter()
        .map(|(node, depth, _)| (node, depth))
        .collect();
    let thread = view.thread_ids()[0];
    let pre_order: Vec<_> = view.thread_nodes(thread).map(|n| n.unwrap()).collect();
    assert_eq!(pre_order, walked);
    for (at, &(node, _)) in walked.iter().enumerate() {
        let following: Vec<_> = view.following(node).unwrap().map(|n| n.unwrap()).collect();
        // `bar()` is listed twice: resumed after it, its repeat is passed.
        let expected: Vec<_> = walked[at + 1..]
            .iter()
            .copied()
            .filter(|&(other, _)| other != node)
            .collect();
        assert_eq!(following, expected, "after node {at}");
    }
}

#[test]
fn search_through_the_view_finds_what_it_shows() {
    use tracetree::search::{SearchFrom, SearchOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("patterns.trace");
    write_patterns(&path);
    let lazy = LazyTraceReader::open(&path).unwrap();
    let view = Postprocessed::new(&lazy);
    let events = |found: Vec<tracetree::search::Hit<_>>| -> Vec<String> {
        found
            .iter()
            .map(|hit| format!("#{} {}", hit.event, hit.line))
            .collect()
    };
    let raw = SearchOptions::new("getX").search(&lazy, &|_| {}).unwrap();
    assert_eq!(
        raw.hits.iter().map(|h| h.event.get()).collect::<Vec<_>>(),
        [12, 33, 42, 43]
    );
    // The getter of #12 became its read, the one inside #42 too.
    let seen = SearchOptions::new("getX").search(&view, &|_| {}).unwrap();
    assert_eq!(
        events(seen.hits.clone()),
        ["#33 A@1.getX(1): 7", "#42 A.getX$default(): 9"]
    );
    assert_eq!(seen.scanned as usize, walked_events(&view).len());
    // A read shown at the call's place, found by its field's name.
    let mut options = SearchOptions::new("A.x");
    options.kinds = Some(vec![tracetree::model::TracepointType::ReadField]);
    let reads = options.search(&view, &|_| {}).unwrap();
    assert_eq!(
        events(reads.hits.clone()),
        ["#13 A@1.x ➜ 7", "#34 A@1.x ➜ 7", "#44 A@1.x ➜ 9"]
    );
    assert_eq!(reads.hits[2].path.len(), 2, "{:?}", reads.hits[2].path);
    // Find next and previous walk the same hits one at a time.
    let every = SearchOptions::new("");
    let thread = view.thread_ids()[0];
    let mut forward = Vec::new();
    let mut from = SearchFrom::ThreadStart(thread);
    while let Some(hit) = from.find(&view, &every).unwrap() {
        forward.push(hit.event.get());
        from = SearchFrom::After(hit.node);
    }
    let mut shown: Vec<i32> = walked_events(&view).iter().map(|w| w.2).collect();
    shown.dedup();
    assert_eq!(forward, shown);
    let mut back = Vec::new();
    let mut from = SearchFrom::ThreadEnd(thread);
    while let Some(hit) = from.find(&view, &every).unwrap() {
        back.push(hit.event.get());
        from = SearchFrom::Before(hit.node);
    }
    back.reverse();
    assert_eq!(back, shown);
}

/// Frame name of a container as the call-stack exports name it.
fn frame_name<T: TraceTree>(tree: &T, tp: &tracetree::model::Tracepoint<'_>) -> String {
    match &tp.body {
        tracetree::model::TracepointBody::MethodCall { method, .. } => {
            let context = tree.context();
            let method = context.method(*method).unwrap();
            let class = context.class(method.class).unwrap().name.decode();
            format!("{class}.{}", method.name.decode())
        }
        _ => tp.tracepoint_type().name().to_string(),
    }
}

/// Flame graph widths (path of frames below the thread's → total, own
/// weight) counted over a navigable tree's pre-order, node by node.
fn widths_of_pre_order<T: tracetree::tree::Navigate>(
    tree: &T,
) -> BTreeMap<Vec<String>, (u64, u64)> {
    let thread = tree.thread_ids()[0];
    let mut widths: BTreeMap<Vec<String>, (u64, u64)> = BTreeMap::new();
    let mut open: Vec<(usize, String)> = Vec::new();
    for step in tree.thread_nodes(thread) {
        let (node, depth) = step.unwrap();
        while open.last().is_some_and(|(d, _)| *d >= depth) {
            open.pop();
        }
        let frame = tree
            .visit(node, |tp, _| {
                tp.is_container().then(|| frame_name(tree, tp))
            })
            .unwrap();
        if let Some(name) = frame {
            open.push((depth, name));
        }
        let path: Vec<String> = open.iter().map(|(_, name)| name.clone()).collect();
        widths.entry(path.clone()).or_default().1 += 1;
        for end in 0..=path.len() {
            widths.entry(path[..end].to_vec()).or_default().0 += 1;
        }
    }
    widths
}

#[test]
fn flame_graphs_and_stacks_of_the_view_equal_counts_over_its_pre_order() {
    use tracetree::export::stacks::flame::{FlameGraph, FlameOptions};
    use tracetree::export::stacks::{StackFormat, StackOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("patterns.trace");
    write_patterns(&path);
    let lazy = LazyTraceReader::open(&path).unwrap();
    let view = Postprocessed::new(&lazy);
    let want = widths_of_pre_order(&view);
    assert_ne!(
        want,
        widths_of_pre_order(&lazy),
        "the view changes the stacks"
    );
    let mut options = FlameOptions::default();
    options.min_fraction = 0.0;
    options.max_frames = FlameOptions::MAX_FRAMES;
    let graph = FlameGraph::build(&view, &options, &|_| {}).unwrap();
    let mut got: BTreeMap<Vec<String>, (u64, u64)> = BTreeMap::new();
    let mut paths: Vec<Vec<String>> = Vec::new();
    for frame in &graph.frames {
        let mut path = match frame.parent {
            Some(parent) => paths[parent as usize].clone(),
            None => Vec::new(),
        };
        if frame.parent.is_some() {
            path.push(frame.name.to_string());
        }
        got.insert(path.clone(), (frame.total, frame.self_weight));
        paths.push(path);
    }
    // The thread's frame: its total, and no weight of its own but its top
    // leaves'.
    assert_eq!(got, want);
    // The folded export: one line per stack with weight of its own.
    let out = dir.path().join("view.folded");
    let stack_options = StackOptions::new(StackFormat::Folded, "view");
    stack_options.export(&view, &out, &|_| {}).unwrap();
    let folded: BTreeMap<String, u64> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|line| {
            let (stack, weight) = line.rsplit_once(' ').unwrap();
            (stack.to_string(), weight.parse().unwrap())
        })
        .collect();
    let thread = "main".to_string();
    let own: BTreeMap<String, u64> = want
        .iter()
        .filter(|(_, (_, own))| *own > 0)
        .map(|(path, (_, own))| {
            let stack: Vec<String> = std::iter::once(thread.clone())
                .chain(path.iter().cloned())
                .collect();
            (stack.join(";"), *own)
        })
        .collect();
    assert_eq!(folded, own);
}

/// Loops of every shape the walk holds until their last child: nested,
/// with empty iterations first, last and inside, a last child that is no
/// iteration, and loops holding more than the walk keeps before it asks
/// the tree (kept, dropped, and around a loop still waiting).
fn write_loops(path: &Path) {
    let run = MethodSpec::new("Main", "run", vec![], Type::Void);
    let work = MethodSpec::new("A", "work", vec![], Type::Void);
    let value = VariableSpec::new("value", Type::Int);
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let mut t = writer.thread(main).unwrap();
    let here = at("operation", 1);
    let leaf = |t: &mut tracetree::write::DumpThread<'_>, n: i32| {
        t.write_local(Some(&here), &value, ValueSpec::Int(n))
            .unwrap();
    };
    let empty = |t: &mut tracetree::write::DumpThread<'_>| {
        t.enter_iteration().unwrap();
        t.exit_iteration().unwrap();
    };
    t.enter_call(None, CallSpec::new(&run)).unwrap();
    // An iteration whose only child is a loop the view drops.
    t.enter_loop(Some(&here), 1).unwrap();
    t.enter_iteration().unwrap();
    t.enter_loop(Some(&here), 2).unwrap();
    empty(&mut t);
    t.exit_loop(1).unwrap();
    t.exit_iteration().unwrap();
    t.enter_iteration().unwrap();
    leaf(&mut t, 1);
    t.exit_iteration().unwrap();
    t.exit_loop(2).unwrap();
    // Empty first (its slot shown again), then empty last.
    for shape in [
        [false, true, true],
        [true, true, false],
        [false, false, true],
    ] {
        t.enter_loop(Some(&here), 3).unwrap();
        for kept in shape {
            t.enter_iteration().unwrap();
            if kept {
                leaf(&mut t, 2);
            }
            t.exit_iteration().unwrap();
        }
        t.exit_loop(3).unwrap();
    }
    // A last iteration holding a loop whose own last iteration is empty.
    t.enter_loop(Some(&here), 4).unwrap();
    t.enter_iteration().unwrap();
    leaf(&mut t, 3);
    t.exit_iteration().unwrap();
    t.enter_iteration().unwrap();
    t.enter_loop(Some(&here), 5).unwrap();
    t.enter_iteration().unwrap();
    leaf(&mut t, 4);
    t.exit_iteration().unwrap();
    empty(&mut t);
    t.exit_loop(2).unwrap();
    t.exit_iteration().unwrap();
    t.exit_loop(2).unwrap();
    // Last children that are no iterations: a leaf, a call.
    t.enter_loop(Some(&here), 6).unwrap();
    empty(&mut t);
    leaf(&mut t, 5);
    t.exit_loop(2).unwrap();
    t.enter_loop(Some(&here), 7).unwrap();
    empty(&mut t);
    t.enter_call(Some(&here), CallSpec::new(&work)).unwrap();
    t.exit_call(CallOutcome::VOID).unwrap();
    t.exit_loop(1).unwrap();
    // More held than the walk keeps: kept with one iteration fewer ...
    t.enter_loop(Some(&here), 8).unwrap();
    t.enter_iteration().unwrap();
    for n in 0..70_000 {
        leaf(&mut t, n);
    }
    t.exit_iteration().unwrap();
    empty(&mut t);
    t.exit_loop(2).unwrap();
    // ... dropped whole (its children are no iterations) ...
    t.enter_loop(Some(&here), 9).unwrap();
    for n in 0..70_000 {
        leaf(&mut t, n);
    }
    empty(&mut t);
    t.exit_loop(1).unwrap();
    // ... and around a loop still waiting, which ends the thread.
    t.enter_loop(Some(&here), 10).unwrap();
    t.enter_iteration().unwrap();
    t.enter_loop(Some(&here), 11).unwrap();
    t.enter_iteration().unwrap();
    for n in 0..70_000 {
        leaf(&mut t, n);
    }
    t.exit_iteration().unwrap();
    t.enter_iteration().unwrap();
    leaf(&mut t, 6);
    t.exit_iteration().unwrap();
    empty(&mut t);
    t.exit_loop(3).unwrap();
    t.exit_iteration().unwrap();
    t.exit_loop(1).unwrap();
    t.exit_call(CallOutcome::VOID).unwrap();
    writer.save(path).unwrap();
}

/// A node's line as the tests compare it: depth, event id, footer.
fn line_of(
    depth: usize,
    tp: &tracetree::model::Tracepoint<'_>,
    footer: Option<&tracetree::model::Footer<'_>>,
    children: Option<usize>,
) -> String {
    format!("{depth} #{} {footer:?} {children:?}", tp.event().get())
}

/// The view's lines node by node: children lists, one node at a time.
fn lines_by_node<T: TraceTree>(
    view: &T,
    nodes: &[T::Node],
    depth: usize,
    max_depth: Option<usize>,
    counts: bool,
    out: &mut Vec<String>,
) {
    for &node in nodes {
        let children = view.children(node).unwrap();
        let count = counts.then_some(children.len());
        out.push(
            view.visit(node, |tp, footer| line_of(depth, tp, footer, count))
                .unwrap(),
        );
        if max_depth.is_some_and(|max| depth >= max) {
            if !children.is_empty() {
                out.push(format!("{} folded {}", depth + 1, children.len()));
            }
            continue;
        }
        lines_by_node(view, &children, depth + 1, max_depth, counts, out);
    }
}

/// The view's lines as its streamed walk gives them.
fn lines_walked<T: TraceTree>(view: &T, max_depth: Option<usize>, counts: bool) -> Vec<String> {
    use tracetree::read::{Visit, VisitDetail};
    let roots = view.roots(view.thread_ids()[0]).unwrap();
    let detail = VisitDetail {
        child_counts: counts,
        ..VisitDetail::default()
    };
    let mut out = Vec::new();
    view.walk_visit(&roots, max_depth, detail, |visit| {
        match visit {
            Visit::Node {
                depth,
                tracepoint,
                footer,
                children,
                ..
            } => out.push(line_of(depth, tracepoint, footer, children)),
            Visit::Folded { count, depth } => out.push(format!("{depth} folded {count}")),
            Visit::Leaf { .. } => panic!("a leaf by its header"),
        }
        Ok(())
    })
    .unwrap();
    out
}

#[test]
fn loops_walk_as_their_children_lists_list_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loops.trace");
    write_loops(&path);
    let lazy = LazyTraceReader::open(&path).unwrap();
    let eager = EagerTrace::open(&path).unwrap();
    let view = Postprocessed::new(&lazy);
    let roots = view.roots(view.thread_ids()[0]).unwrap();
    for (max_depth, counts) in [
        (None, false),
        (None, true),
        (Some(2), true),
        (Some(0), false),
    ] {
        let mut by_node = Vec::new();
        lines_by_node(&view, &roots, 0, max_depth, counts, &mut by_node);
        let walked = lines_walked(&view, max_depth, counts);
        assert_eq!(walked.len(), by_node.len(), "{max_depth:?}");
        for (at, (w, n)) in walked.iter().zip(&by_node).enumerate() {
            assert_eq!(w, n, "line {at} at depth limit {max_depth:?}");
        }
        assert_eq!(
            lines_walked(&Postprocessed::new(&eager), max_depth, counts),
            walked
        );
    }
    // What the view makes of them, loop by loop (event ids: the writer's
    // order); the big loops by their lines' count.
    let text = printed(&view);
    let head: Vec<&str> = text.lines().take(39).collect();
    let expected = "# Thread 1
#0	Main.run() at :0
#1	  loop(2 iterations) at A.kt:1
#2	    <iteration 1> at A.kt:1
#5	    <iteration 2> at A.kt:1
#6	      value = 1 at A.kt:1
#7	  loop(3 iterations) at A.kt:1
#9	    <iteration 2> at A.kt:1
#10	      value = 2 at A.kt:1
#11	    <iteration 3> at A.kt:1
#12	      value = 2 at A.kt:1
#11	    <iteration 3> at A.kt:1
#12	      value = 2 at A.kt:1
#13	  loop(2 iterations) at A.kt:1
#14	    <iteration 1> at A.kt:1
#15	      value = 2 at A.kt:1
#16	    <iteration 2> at A.kt:1
#17	      value = 2 at A.kt:1
#19	  loop(3 iterations) at A.kt:1
#22	    <iteration 3> at A.kt:1
#23	      value = 2 at A.kt:1
#22	    <iteration 3> at A.kt:1
#23	      value = 2 at A.kt:1
#24	  loop(2 iterations) at A.kt:1
#25	    <iteration 1> at A.kt:1
#26	      value = 3 at A.kt:1
#27	    <iteration 2> at A.kt:1
#28	      loop(1 iterations) at A.kt:1
#29	        <iteration 1> at A.kt:1
#30	          value = 4 at A.kt:1
#32	  loop(2 iterations) at A.kt:1
#34	    value = 5 at A.kt:1
#34	    value = 5 at A.kt:1
#35	  loop(1 iterations) at A.kt:1
#37	    A.work() at A.kt:1
#37	    A.work() at A.kt:1
#38	  loop(1 iterations) at A.kt:1
#39	    <iteration 1> at A.kt:1
#40	      value = 0 at A.kt:1";
    assert_lines(&head.join("\n"), expected);
    // The big loop of no iterations is dropped whole; the last two show
    // the outer loop's one iteration and the inner's two.
    let loops: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("loop("))
        .skip(9)
        .collect();
    assert_eq!(
        loops,
        [
            "#140043\t  loop(1 iterations) at A.kt:1",
            "#140045\t      loop(2 iterations) at A.kt:1"
        ]
    );
    assert_eq!(text.lines().count(), 36 + 70_002 + 70_006);
}

#[test]
fn a_wide_call_prints_in_runs_of_raw_children() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.trace");
    let run = MethodSpec::new("Main", "run", vec![], Type::Void);
    let value = VariableSpec::new("value", Type::Int);
    let coverage = VariableSpec::new("__$coverage_local$__", Type::Int);
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let mut t = writer.thread(main).unwrap();
    t.enter_call(None, CallSpec::new(&run)).unwrap();
    let mut expected = String::from("# Thread 1\nMain.run()\n");
    for n in 0..10_000 {
        // Every third a coverage local the view drops.
        let variable = if n % 3 == 0 { &coverage } else { &value };
        t.write_local(None, variable, ValueSpec::Int(n)).unwrap();
        if n % 3 != 0 {
            expected.push_str(&format!("  value = {n}\n"));
        }
    }
    t.exit_call(CallOutcome::VOID).unwrap();
    writer.save(&path).unwrap();
    let lazy = LazyTraceReader::open(&path).unwrap();
    let view = Postprocessed::new(&lazy);
    let root = view.roots(view.thread_ids()[0]).unwrap()[0];
    // No child containers to cut after: cut by raw child number.
    assert_eq!(view.sibling_cuts(root, 1024).unwrap().unwrap().len(), 2);
    let mut out = Vec::new();
    PrintOptions::default().print(&view, &mut out).unwrap();
    assert_lines(&String::from_utf8(out).unwrap(), &expected);
}

/// A tracepoint's event id, code location, diff status and depth.
type Shown = (i32, i32, tracetree::model::DiffStatus, usize);

/// Each tracepoint's [`Shown`], in the order the view walks the subtree
/// of `node`.
fn shown_headers<T: TraceTree>(view: &T, node: T::Node) -> Vec<Shown> {
    let mut shown = Vec::new();
    let detail = tracetree::tree::VisitDetail::default();
    view.walk_visit(&[node], None, detail, |visit| {
        if let tracetree::tree::Visit::Node {
            tracepoint, depth, ..
        } = visit
        {
            let header = &tracepoint.header;
            shown.push((
                header.event.get(),
                header.code_location.get(),
                header.diff_status,
                depth,
            ));
        }
        Ok(())
    })
    .unwrap();
    shown
}

/// The same of a raw subtree's bytes, each object decoded as the readers
/// decode it.
fn raw_headers(mut subtree: tracetree::read::RawSubtree<'_>) -> Vec<Shown> {
    use tracetree::lowlevel::Object;
    // The types of the open containers: a footer decodes knowing its own.
    let (mut headers, mut open) = (Vec::new(), Vec::new());
    while let Some(bytes) = subtree.next_object().unwrap() {
        match Object::parse(bytes, 0, open.last().copied()).unwrap().0 {
            Object::Tracepoint(tracepoint) => {
                let header = &tracepoint.header;
                headers.push((
                    header.event.get(),
                    header.code_location.get(),
                    header.diff_status,
                    open.len(),
                ));
                if tracepoint.is_container() {
                    open.push(header.tracepoint_type);
                }
            }
            Object::Footer(_) => {
                open.pop();
            }
            _ => {}
        }
    }
    headers
}

#[test]
fn the_view_hands_out_bytes_only_of_subtrees_it_shows_as_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (patterns, loops, call) = (
        dir.path().join("patterns.trace"),
        dir.path().join("loops.trace"),
        dir.path().join("call.trace"),
    );
    write_patterns(&patterns);
    write_loops(&loops);
    write_call(&call, false);
    for (path, as_recorded) in [(patterns, false), (loops, false), (call, true)] {
        let lazy = LazyTraceReader::open(&path).unwrap();
        let view = Postprocessed::new(&lazy);
        let (mut with_bytes, mut without) = (0, 0);
        for (node, _, _) in walked_events(&view) {
            let is_container = view.visit(node, |tp, _| tp.is_container()).unwrap();
            match view.raw_subtree(node).unwrap() {
                Some(subtree) => {
                    with_bytes += 1;
                    assert_eq!(raw_headers(subtree), shown_headers(&view, node), "{path:?}");
                }
                None if is_container => without += 1,
                None => {}
            }
        }
        let root = view.roots(view.thread_ids()[0]).unwrap()[0];
        assert_eq!(
            view.raw_subtree(root).unwrap().is_some(),
            as_recorded,
            "{path:?}"
        );
        assert!(with_bytes > 0, "{path:?}");
        assert_eq!(without > 0, !as_recorded, "{path:?}");
    }
}
