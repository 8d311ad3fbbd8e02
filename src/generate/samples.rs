//! Small sample traces written by [`DumpWriter`], the ones kept in the
//! repository's `testdata/` (`examples/gen_testdata.rs` writes them, and a
//! test checks the committed files are what these functions write).
//!
//! - [`all_types`]: every tracepoint type and every value code, objects with
//!   fields, arrays with captured elements, nested calls, loops (nested, and
//!   without iterations), calls that threw, never finished, were entered
//!   before recording started or whose end was not tracked, strings with NUL,
//!   unpaired surrogate halves and supplementary characters, NaN payloads
//!   (kept: written with `canonicalize_nan: false`), code locations with
//!   access paths of every step kind and unknown parts; two threads, one with
//!   a non-ASCII name.
//! - [`multi_thread`]: four threads (non-ASCII names among them) recorded
//!   interleaved, so event ids interleave, sharing classes, fields and code
//!   locations.
//!
//! [`record_all_types`] and [`record_multi_thread`] record the same traces
//! through any [`TraceRecorder`], so other writers can write them too.

use crate::common::ThreadId;
use crate::error::Result;
use crate::model::{JavaStr, LocalKind, Type};
use crate::write::{
    AccessPathSpec, AccessStep, BreakpointSpec, CallOutcome, CallSpec, CodeLocationSpec,
    DumpOptions, DumpWriter, FieldSpec, MethodSpec, ThreadRecorder, TraceRecorder, ValueSpec,
    VariableSpec, array_type, class_type,
};

/// A function writing one sample trace.
pub type Generator = fn() -> Result<DumpWriter>;

/// The sample traces: file name and generator.
pub fn all() -> [(&'static str, Generator); 2] {
    [
        ("all-types.trace", all_types),
        ("multi-thread.trace", multi_thread),
    ]
}

const ACCOUNT: &str = "lincheckdriver.Account";
const NODE: &str = "lincheckdriver.Node";
const REF_KT: &str = "lincheckdriver.RefKt";
const STRING: &str = "java.lang.String";

fn string_type() -> Type<'static> {
    class_type(STRING)
}

fn account_type() -> Type<'static> {
    class_type(ACCOUNT)
}

/// A line of `Account.kt` in method `method` of `Account`, with `this` and
/// the method's parameters visible.
fn account_access(
    method: &'static str,
    line: i32,
    parameters: &[&'static str],
) -> CodeLocationSpec<'static> {
    let mut at = CodeLocationSpec::access("Account.kt", ACCOUNT, method, line)
        .with_local("this", LocalKind::This);
    for &parameter in parameters {
        at = at.with_local(parameter, LocalKind::Parameter);
    }
    at
}

fn this_path() -> AccessPathSpec<'static> {
    AccessPathSpec::local(VariableSpec::new("this", account_type()))
}

/// Every tracepoint type and every value code; see the module documentation.
pub fn all_types() -> Result<DumpWriter> {
    let mut writer = DumpWriter::with_options(DumpOptions {
        canonicalize_nan: false,
    });
    record_all_types(&mut writer)?;
    Ok(writer)
}

/// Records the [`all_types`] sample through any writer.
pub fn record_all_types<R: TraceRecorder>(writer: &mut R) -> Result<()> {
    let main = writer.add_thread("main")?;
    let worker = writer.add_thread("Поток-β 线程 😀 №1")?;
    record_main(writer, main)?;
    record_incomplete_worker(writer, worker)
}

fn record_main<R: TraceRecorder>(writer: &mut R, main: ThreadId) -> Result<()> {
    let mut t = writer.thread(main)?;
    let thread_object = ValueSpec::object("java.lang.Thread", 1_899_710_330);
    let acc = ValueSpec::object(ACCOUNT, 270_341_036);

    // Thread.run(), at an unknown code location.
    let run = MethodSpec::new("java.lang.Thread", "run", vec![], Type::Void);
    t.enter_call(None, CallSpec::new(&run).on(thread_object))?;

    // new Account(i ➜ 7, name ➜ "Alice"): arguments named by local variables.
    let i = VariableSpec::new("i", Type::Int);
    let name = VariableSpec::new("name", string_type());
    let init = MethodSpec::new(
        ACCOUNT,
        "<init>",
        vec![Type::Int, string_type()],
        Type::Void,
    );
    let at = CodeLocationSpec::call("Ref.kt", REF_KT, "run", 10)
        .with_argument(Some(AccessPathSpec::local(i.clone())))
        .with_argument(Some(AccessPathSpec::local(name.clone())));
    t.enter_call(
        Some(&at),
        CallSpec::new(&init).with_argument(7).with_argument("Alice"),
    )?;
    let balance = FieldSpec::new(ACCOUNT, "balance", Type::Long).with_volatile(true);
    let count = FieldSpec::new(ACCOUNT, "count", Type::Int)
        .with_static(true)
        .with_volatile(true);
    let name_field = FieldSpec::new(ACCOUNT, "name", string_type()).with_final(true);
    let at = account_access("<init>", 30, &["i", "name"]).with_access_path(this_path());
    t.write_field(Some(&at), &balance, acc.clone(), ValueSpec::Long(0))?;
    // A static field has no owner to reach: no access path, as the recorder writes it.
    let at = account_access("<init>", 31, &["i", "name"]);
    t.write_field(Some(&at), &count, ValueSpec::Null, ValueSpec::Int(1))?;
    // An element of an array held by a static field: `Account.GRID[1][0]`.
    let grid = FieldSpec::new(ACCOUNT, "GRID", array_type(array_type(Type::Int))).with_static(true);
    let at = account_access("<init>", 31, &["i", "name"])
        .with_access_path(AccessPathSpec::static_field(grid).then_index(1));
    let row = ValueSpec::array("[I", 1_370_310_980, 2);
    t.read_array(Some(&at), row, 0, ValueSpec::Int(7))?;
    let at = account_access("<init>", 32, &["i", "name"]).with_access_path(this_path());
    t.write_field(Some(&at), &name_field, acc.clone(), "Alice".into())?;
    t.exit_call(CallOutcome::VOID)?;

    // acc.deposit(l ➜ 100): true
    let l = VariableSpec::new("l", Type::Long);
    let deposit = MethodSpec::new(ACCOUNT, "deposit", vec![Type::Long], Type::Boolean);
    let at = CodeLocationSpec::call("Ref.kt", REF_KT, "run", 11)
        .with_access_path(AccessPathSpec::local(VariableSpec::new(
            "acc",
            account_type(),
        )))
        .with_argument(Some(AccessPathSpec::local(l.clone())));
    t.enter_call(
        Some(&at),
        CallSpec::new(&deposit)
            .on(acc.clone())
            .with_argument(100i64),
    )?;
    let at = account_access("deposit", 33, &["l"]).with_access_path(this_path());
    t.read_field(Some(&at), &balance, acc.clone(), ValueSpec::Long(0))?;
    let at_l = CodeLocationSpec::access("Account.kt", ACCOUNT, "deposit", 34);
    t.read_local(Some(&at_l), &l, ValueSpec::Long(100))?;
    t.write_field(Some(&at), &balance, acc.clone(), ValueSpec::Long(100))?;
    t.exit_call(CallOutcome::returned(true))?;

    record_primitives(&mut t)?;
    record_strings(&mut t)?;
    record_objects(&mut t, &acc)?;
    record_loops(&mut t, &acc)?;
    record_exceptions(&mut t, &acc)?;
    record_recursion(&mut t, 4)?;

    // A call whose end was not tracked.
    let native = MethodSpec::new(ACCOUNT, "nativeHash", vec![], Type::Int);
    let at = CodeLocationSpec::call("Ref.kt", REF_KT, "run", 40);
    t.enter_call(Some(&at), CallSpec::new(&native).on(acc.clone()))?;
    t.exit_call(CallOutcome::Untracked)?;
    // A leaf at an unknown location, and one at a location with no known part.
    let mystery = CodeLocationSpec {
        file: None,
        class: None,
        method: None,
        line: -1,
        ..CodeLocationSpec::line("", "", "", 0)
    };
    let x = VariableSpec::new("x", Type::Double);
    t.write_local(None, &x, ValueSpec::double(0.5))?;
    t.write_local(Some(&mystery), &x, ValueSpec::double(-0.5))?;
    t.exit_call(CallOutcome::VOID)
}

fn record_primitives(t: &mut impl ThreadRecorder) -> Result<()> {
    let variables = [
        ("b", Type::Byte),
        ("s", Type::Short),
        ("c", Type::Char),
        ("f", Type::Float),
        ("d", Type::Double),
        ("flag", Type::Boolean),
    ];
    let [b, s, c, f, d, flag] = variables.map(|(name, ty)| VariableSpec::new(name, ty));
    let values = MethodSpec::new(
        ACCOUNT,
        "values",
        vec![
            Type::Byte,
            Type::Short,
            Type::Char,
            Type::Float,
            Type::Double,
            Type::Boolean,
        ],
        Type::Void,
    );
    let mut at = CodeLocationSpec::call("Ref.kt", REF_KT, "run", 12);
    for variable in [&b, &s, &c, &f, &d, &flag] {
        at = at.with_argument(Some(AccessPathSpec::local(variable.clone())));
    }
    t.enter_call(
        Some(&at),
        CallSpec::new(&values)
            .with_argument(ValueSpec::Byte(-128))
            .with_argument(ValueSpec::Short(-32768))
            .with_argument(ValueSpec::Char(0x0436))
            .with_argument(ValueSpec::Float(0x7FC0_0001))
            .with_argument(ValueSpec::double(-0.0))
            .with_argument(false),
    )?;
    let at = CodeLocationSpec::access("Account.kt", ACCOUNT, "values", 35)
        .with_local("b", LocalKind::Parameter)
        .with_local("s", LocalKind::Parameter)
        .with_local("f", LocalKind::Variable);
    t.write_local(Some(&at), &b, ValueSpec::Byte(127))?;
    t.write_local(Some(&at), &s, ValueSpec::Short(32767))?;
    // 'A', '€', NUL, an unpaired high and low surrogate half.
    for unit in [0x41, 0x20AC, 0x0000, 0xD83D, 0xDE00] {
        t.write_local(Some(&at), &c, ValueSpec::Char(unit))?;
    }
    // Quiet NaN with a payload, signalling NaN, −0, ∞, smallest subnormal,
    // 1.5, negative NaN.
    for bits in [
        0x7FC0_0001,
        0x7F80_0001,
        0x8000_0000,
        0x7F80_0000,
        0x0000_0001,
        0x3FC0_0000,
        0xFFC0_0000,
    ] {
        t.write_local(Some(&at), &f, ValueSpec::Float(bits))?;
    }
    for bits in [
        0x7FF8_0000_0000_0001,
        0x7FF0_0000_0000_0001,
        0x8000_0000_0000_0000,
        0xFFF0_0000_0000_0000,
        std::f64::consts::PI.to_bits(),
        0x0000_0000_0000_0001,
    ] {
        t.write_local(Some(&at), &d, ValueSpec::Double(bits))?;
    }
    let i = VariableSpec::new("i", Type::Int);
    let l = VariableSpec::new("l", Type::Long);
    t.write_local(Some(&at), &i, ValueSpec::Int(i32::MIN))?;
    t.write_local(Some(&at), &i, ValueSpec::Int(i32::MAX))?;
    t.write_local(Some(&at), &l, ValueSpec::Long(i64::MIN))?;
    t.write_local(Some(&at), &l, ValueSpec::Long(i64::MAX))?;
    t.write_local(Some(&at), &flag, true.into())?;
    t.write_local(Some(&at), &flag, false.into())?;
    t.exit_call(CallOutcome::VOID)
}

fn record_strings(t: &mut impl ThreadRecorder) -> Result<()> {
    let text = VariableSpec::new("text", string_type());
    let describe = MethodSpec::new(REF_KT, "describe", vec![string_type()], string_type());
    let at = CodeLocationSpec::call("Ref.kt", REF_KT, "run", 14).with_argument(None);
    t.enter_call(Some(&at), CallSpec::new(&describe).with_argument("short"))?;
    let at = CodeLocationSpec::access("Ref.kt", REF_KT, "describe", 36)
        .with_local("text", LocalKind::Parameter);
    // The recorder cuts strings to 50 UTF-16 units and adds "...", which can
    // leave half a surrogate pair.
    let mut cut: Vec<u16> = "a".repeat(49).encode_utf16().collect();
    cut.push(0xD83D);
    cut.extend("...".encode_utf16());
    let strings = [
        JavaStr::new(""),
        JavaStr::new("Hello, world"),
        JavaStr::new("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN..."),
        JavaStr::new("naïve café — 日本 😀 nul:\0:end"),
        JavaStr::from_utf16(&cut),
        JavaStr::from_utf16(&[0xDE00, 0x61, 0xD800]),
        JavaStr::new("line1\nline2\ttab\\back\"quote\r"),
    ];
    for s in strings {
        t.write_local(Some(&at), &text, ValueSpec::String(s))?;
    }
    let sb = VariableSpec::new("sb", class_type("java.lang.StringBuilder"));
    t.write_local(
        Some(&at),
        &sb,
        ValueSpec::string_builder(11_089_143, "sb-é😀"),
    )?;
    t.write_local(
        Some(&at),
        &sb,
        ValueSpec::string_builder(210_690_542, "S".repeat(50) + "..."),
    )?;
    let any = VariableSpec::new("any", class_type("java.lang.Object"));
    t.write_local(
        Some(&at),
        &any,
        ValueSpec::raw_string("Pair(first=1, second=2)"),
    )?;
    t.write_local(Some(&at), &any, ValueSpec::JavaClass(JavaStr::new(STRING)))?;
    t.write_local(
        Some(&at),
        &any,
        ValueSpec::KotlinClass(JavaStr::new("kotlin.Int")),
    )?;
    t.write_local(Some(&at), &any, ValueSpec::KotlinUnit)?;
    t.write_local(Some(&at), &any, ValueSpec::Void)?;
    t.write_local(Some(&at), &any, ValueSpec::Null)?;
    t.exit_call(CallOutcome::returned("short-described"))?;

    // Kotlin Unit and null results.
    let log = MethodSpec::new(REF_KT, "log", vec![], class_type("kotlin.Unit"));
    let at = CodeLocationSpec::call("Ref.kt", REF_KT, "run", 15);
    t.enter_call(Some(&at), CallSpec::new(&log))?;
    t.exit_call(CallOutcome::returned(ValueSpec::KotlinUnit))?;
    let find = MethodSpec::new(REF_KT, "find", vec![], account_type());
    t.enter_call(Some(&at), CallSpec::new(&find))?;
    t.exit_call(CallOutcome::returned(ValueSpec::Null))
}

fn record_objects(t: &mut impl ThreadRecorder, acc: &ValueSpec<'static>) -> Result<()> {
    let history = ValueSpec::array("[J", 1_700_696_122, 4);
    let node = ValueSpec::object(NODE, 1_491_534_312).with_field("next", ValueSpec::Null);
    let full = ValueSpec::object(ACCOUNT, 270_341_036)
        .with_field("id", 7)
        .with_field("name", "Alice")
        .with_field("node", node.clone())
        .with_field("nothing", ValueSpec::Null)
        .with_field("history", history);
    let snapshot = MethodSpec::new(ACCOUNT, "snapshot", vec![], account_type());
    let at = CodeLocationSpec::call("Ref.kt", REF_KT, "run", 16).with_access_path(
        AccessPathSpec::local(VariableSpec::new("acc", account_type())),
    );
    t.enter_call(Some(&at), CallSpec::new(&snapshot).on(acc.clone()))?;

    // items[i] = …, grid[i][0] ➜ …: access paths with array steps.
    let items = FieldSpec::new(ACCOUNT, "items", array_type(Type::Int));
    let i = VariableSpec::new("i", Type::Int);
    let items_path = this_path().then_field(items.clone());
    let at = account_access("snapshot", 50, &[])
        .with_local("i", LocalKind::Variable)
        .with_access_path(items_path.clone());
    let ints = ValueSpec::array("[I", 1_520_906_588, 5)
        .with_element(10)
        .with_element(20)
        .with_element(30);
    t.write_array(Some(&at), ints.clone(), 0, ValueSpec::Int(10))?;
    let at_by_name = account_access("snapshot", 51, &[])
        .with_access_path(items_path.then_element(AccessPathSpec::local(i.clone())));
    t.read_array(Some(&at_by_name), ints, 1, ValueSpec::Int(20))?;
    let grid =
        FieldSpec::new(ACCOUNT, "grid", array_type(array_type(string_type()))).with_static(true);
    let at_grid = account_access("snapshot", 52, &[]).with_access_path(AccessPathSpec::new(vec![
        AccessStep::StaticField(grid),
        AccessStep::ArrayElementByName(AccessPathSpec::local(i)),
        AccessStep::ArrayIndex(0),
    ]));
    let nodes = ValueSpec::array("[Llincheckdriver.Node;", 219_956_714, 3)
        .with_element(node.clone())
        .with_element(ValueSpec::Null)
        .with_element(ValueSpec::array("[Ljava.lang.String;", 33, 1).with_element("x"));
    t.write_array(Some(&at_grid), nodes, 2, node)?;
    t.read_array(
        Some(&at_grid),
        ValueSpec::array("[Ljava.lang.String;", 34, 0),
        0,
        ValueSpec::Null,
    )?;

    // Breakpoints: a stack with an unknown frame, captured values, a trace id.
    let frame = |method: &'static str, line| CodeLocationSpec::line("Ref.kt", REF_KT, method, line);
    let mut hit = BreakpointSpec::new(0x123E_4567_E89B_12D3_A456_4266_1417_4000, 1_700_000_000_123)
        .with_frame(frame("snapshot", 53))
        .with_frame(frame("run", 16))
        .with_value(acc.clone())
        .with_value(full.clone())
        .with_value(ValueSpec::Null)
        .with_value(42)
        .with_value(ValueSpec::string("loc-é"))
        .with_trace_id("trace-id-é-42");
    hit.stack.push(None);
    let at = CodeLocationSpec::line("Ref.kt", REF_KT, "snapshot", 53);
    t.breakpoint(Some(&at), hit)?;
    t.breakpoint(None, BreakpointSpec::new(u128::MAX, -1))?;
    t.exit_call(CallOutcome::returned(full))
}

fn record_loops(t: &mut impl ThreadRecorder, acc: &ValueSpec<'static>) -> Result<()> {
    let step = MethodSpec::new(ACCOUNT, "step", vec![Type::Int], Type::Void);
    let k = VariableSpec::new("k", Type::Int);
    let at = CodeLocationSpec::call("Ref.kt", REF_KT, "run", 19)
        .with_access_path(AccessPathSpec::local(VariableSpec::new(
            "acc",
            account_type(),
        )))
        .with_argument(Some(AccessPathSpec::local(k.clone())));
    t.enter_call(
        Some(&at),
        CallSpec::new(&step).on(acc.clone()).with_argument(3),
    )?;
    let outer = account_access("step", 60, &["n"]);
    let inner = account_access("step", 61, &["n"]);
    let at_k = account_access("step", 62, &["n"]).with_local("k", LocalKind::Variable);
    t.enter_loop(Some(&outer), 1)?;
    for iteration in 0..3 {
        t.enter_iteration()?;
        t.write_local(Some(&at_k), &k, ValueSpec::Int(iteration))?;
        if iteration == 2 {
            // A nested loop, one iteration.
            t.enter_loop(Some(&inner), 2)?;
            t.enter_iteration()?;
            t.write_local(Some(&at_k), &k, ValueSpec::Int(-1))?;
            t.exit_iteration()?;
            t.exit_loop(1)?;
        }
        t.exit_iteration()?;
    }
    t.exit_loop(3)?;
    // A loop that ran no iteration.
    t.enter_loop(Some(&inner), 3)?;
    t.exit_loop(0)?;
    t.exit_call(CallOutcome::VOID)
}

fn record_exceptions(t: &mut impl ThreadRecorder, acc: &ValueSpec<'static>) -> Result<()> {
    let fail = MethodSpec::new(
        ACCOUNT,
        "fail",
        vec![Type::Short, Type::Byte, Type::Char],
        Type::Int,
    );
    let at = CodeLocationSpec::call("Ref.kt", REF_KT, "run", 20)
        .with_argument(Some(AccessPathSpec::local(VariableSpec::new(
            "s",
            Type::Short,
        ))))
        .with_argument(None)
        .with_argument(Some(AccessPathSpec::local(VariableSpec::new(
            "c",
            Type::Char,
        ))));
    t.enter_call(
        Some(&at),
        CallSpec::new(&fail)
            .on(acc.clone())
            .with_argument(ValueSpec::Short(1))
            .with_argument(ValueSpec::Byte(2))
            .with_argument(ValueSpec::Char(0x78)),
    )?;
    let exception = ValueSpec::object("java.lang.IllegalStateException", 2_139_867_374)
        .with_field("message", "boom");
    let at = account_access("fail", 63, &[]);
    t.throw(Some(&at), exception.clone())?;
    t.exit_call(CallOutcome::threw("IllegalStateException"))?;
    let at = CodeLocationSpec::line("Ref.kt", REF_KT, "run", 21);
    t.catch(Some(&at), exception)?;
    Ok(())
}

/// `depth` nested calls of `fib`.
fn record_recursion(t: &mut impl ThreadRecorder, depth: i32) -> Result<()> {
    let fib = MethodSpec::new(REF_KT, "fib", vec![Type::Int], Type::Int);
    let n = VariableSpec::new("n", Type::Int);
    let at = CodeLocationSpec::call("Ref.kt", REF_KT, "fib", 70)
        .with_argument(Some(AccessPathSpec::local(n.clone())));
    for level in (0..=depth).rev() {
        t.enter_call(Some(&at), CallSpec::new(&fib).with_argument(level))?;
    }
    let mut result = 1;
    for _ in 0..=depth {
        t.exit_call(CallOutcome::returned(result))?;
        result *= 2;
    }
    Ok(())
}

/// A thread recorded from inside two calls that never returned.
fn record_incomplete_worker<R: TraceRecorder>(writer: &mut R, worker: ThreadId) -> Result<()> {
    let mut t = writer.thread(worker)?;
    let outer = MethodSpec::new("lincheckdriver.Worker", "loop", vec![], Type::Void);
    let deep = MethodSpec::new("lincheckdriver.Worker", "deep", vec![], Type::Void);
    t.enter_call(None, CallSpec::new(&outer).incomplete())?;
    t.enter_call(None, CallSpec::new(&deep).incomplete())?;
    let x = VariableSpec::new("x", Type::Double);
    let at = CodeLocationSpec::access("Worker.kt", "lincheckdriver.Worker", "deep", 47);
    t.write_local(Some(&at), &x, ValueSpec::double(1.0))?;
    t.exit_call(CallOutcome::Unfinished)?;
    t.exit_call(CallOutcome::Unfinished)
}

/// Four threads recorded interleaved; see the module documentation.
pub fn multi_thread() -> Result<DumpWriter> {
    let mut writer = DumpWriter::new();
    record_multi_thread(&mut writer)?;
    Ok(writer)
}

/// Records the [`multi_thread`] sample through any writer.
pub fn record_multi_thread<R: TraceRecorder>(writer: &mut R) -> Result<()> {
    let names = ["main", "worker-1", "Поток-β №2", "線程-γ 😀"];
    let threads = names
        .iter()
        .map(|name| writer.add_thread(*name))
        .collect::<Result<Vec<_>>>()?;
    let counter_class = "lincheckdriver.Counter";
    let counter = ValueSpec::object(counter_class, 5_000);
    let value = FieldSpec::new(counter_class, "value", Type::Int).with_volatile(true);
    let increment = MethodSpec::new(counter_class, "increment", vec![], Type::Int);
    let run = MethodSpec::new("java.lang.Thread", "run", vec![], Type::Void);
    let start = MethodSpec::new("java.lang.Thread", "start", vec![], Type::Void);
    let join = MethodSpec::new("java.lang.Thread", "join", vec![], Type::Void);
    let at_call = CodeLocationSpec::call("Counter.kt", "lincheckdriver.CounterKt", "work", 12)
        .with_access_path(AccessPathSpec::local(VariableSpec::new(
            "counter",
            class_type(counter_class),
        )));
    let at_field = CodeLocationSpec::access("Counter.kt", counter_class, "increment", 5)
        .with_local("this", LocalKind::This)
        .with_access_path(AccessPathSpec::local(VariableSpec::new(
            "this",
            class_type(counter_class),
        )));
    let at_loop = CodeLocationSpec::line("Counter.kt", "lincheckdriver.CounterKt", "work", 11);
    let at_main = CodeLocationSpec::call("Main.kt", "lincheckdriver.MainKt", "main", 7);
    let thread_object = |index: usize| ValueSpec::object("java.lang.Thread", 100 + index as i32);

    // Every thread enters run(); main starts the workers.
    for (index, &thread) in threads.iter().enumerate() {
        writer
            .thread(thread)?
            .enter_call(None, CallSpec::new(&run).on(thread_object(index)))?;
    }
    for index in 1..threads.len() {
        let mut main = writer.thread(threads[0])?;
        main.enter_call(
            Some(&at_main),
            CallSpec::new(&start).on(thread_object(index)),
        )?;
        main.exit_call(CallOutcome::VOID)?;
    }
    // The workers increment the counter in a loop, round-robin.
    let workers = &threads[1..];
    for &thread in workers {
        writer.thread(thread)?.enter_loop(Some(&at_loop), 1)?;
    }
    let mut shared = 0;
    let rounds = 3;
    for _ in 0..rounds {
        for &thread in workers {
            let mut t = writer.thread(thread)?;
            t.enter_iteration()?;
            t.enter_call(
                Some(&at_call),
                CallSpec::new(&increment).on(counter.clone()),
            )?;
            t.read_field(
                Some(&at_field),
                &value,
                counter.clone(),
                ValueSpec::Int(shared),
            )?;
            shared += 1;
            t.write_field(
                Some(&at_field),
                &value,
                counter.clone(),
                ValueSpec::Int(shared),
            )?;
            t.exit_call(CallOutcome::returned(shared))?;
            t.exit_iteration()?;
        }
    }
    for &thread in workers {
        let mut t = writer.thread(thread)?;
        t.exit_loop(rounds)?;
        t.exit_call(CallOutcome::VOID)?;
    }
    let mut main = writer.thread(threads[0])?;
    for index in 1..threads.len() {
        main.enter_call(
            Some(&at_main),
            CallSpec::new(&join).on(thread_object(index)),
        )?;
        main.exit_call(CallOutcome::VOID)?;
    }
    let total = VariableSpec::new("total", Type::Int);
    let at_total = CodeLocationSpec::access("Main.kt", "lincheckdriver.MainKt", "main", 9);
    main.read_field(Some(&at_field), &value, counter, ValueSpec::Int(shared))?;
    main.write_local(Some(&at_total), &total, ValueSpec::Int(shared))?;
    main.exit_call(CallOutcome::VOID)
}
