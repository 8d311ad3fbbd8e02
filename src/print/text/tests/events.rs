//! Loops, snapshot breakpoints, exceptions (§2.5–2.9); locations, diff
//! statuses, missing objects and formatter reuse (§2).

use super::*;

// ---- §2.5–2.9 loops, snapshots, exceptions ----

#[test]
fn a_loop_prints_the_footer_count_and_iterations_count_from_one() {
    let fx = Fixture::default();
    let tp = tracepoint(NO_LOCATION, TracepointBody::Loop { loop_id: 1 });
    assert_eq!(
        brief(
            &fx,
            &tp,
            Some(&Footer::Loop { iterations: 1 }),
            Parent::TopLevel
        ),
        "loop(1 iterations)"
    );
    assert_eq!(
        brief(&fx, &tp, None, Parent::TopLevel),
        "loop(0 iterations)"
    );
    let tp = tracepoint(
        NO_LOCATION,
        TracepointBody::LoopIteration {
            loop_id: 1,
            iteration: 0,
        },
    );
    assert_eq!(
        brief(&fx, &tp, Some(&Footer::LoopIteration), Parent::Other),
        "<iteration 1>"
    );
}

fn breakpoint(stack: Vec<CodeLocationId>, at: CodeLocationId) -> Tracepoint<'static> {
    tracepoint(
        at,
        TracepointBody::SnapshotBreakpoint {
            uuid_high: 0x123E_4567_E89B_12D3,
            uuid_low: 0xA456_4266_1417_4000_u64 as i64,
            stack,
            millis: 1_700_000_000_123,
            values: vec![Value::Int(42)],
            trace_id: Some(JavaStr::new("trace-id")),
        },
    )
}

fn frame(fx: &mut Fixture, class: Option<&str>, method: &str) -> CodeLocationId {
    let id = CodeLocationId(fx.next_id + 100);
    fx.next_id += 100;
    let class_name = class.map_or(StringId(-1), |c| fx.string(c));
    let method_name = fx.string(method);
    fx.objects.push(Object::CodeLocation(CodeLocation {
        kind: CodeLocationKind::Line,
        id,
        file_name: StringId(-1),
        class_name,
        method_name,
        line: 1,
        access_path: None,
        argument_paths: Vec::new(),
        locals: Vec::new(),
    }));
    id
}

#[test]
fn a_snapshot_breakpoint_puts_its_location_mid_line_and_three_frames() {
    let mut fx = Fixture::default();
    let at = fx.access_site(None);
    let stack = vec![
        frame(&mut fx, Some("lincheckdriver.Account"), "snapshot"),
        frame(&mut fx, Some("lincheckdriver.RefKt"), "run"),
        frame(&mut fx, Some("java.lang.Thread"), "run"),
        frame(&mut fx, None, "lambda$0"),
    ];
    let tp = breakpoint(stack, at);
    assert_eq!(
        verbose(&fx, &tp, None),
        "Live breakpoint [123e4567-e89b-12d3-a456-426614174000] at Account.kt:30, \
         stacktrace: [Account.snapshot, RefKt.run, Thread.run ... (1 more)]"
    );
    assert_eq!(
        brief(&fx, &tp, None, Parent::TopLevel),
        "Live breakpoint [123e4567-e89b-12d3-a456-426614174000], \
         stacktrace: [Account.snapshot, RefKt.run, Thread.run ... (1 more)]"
    );
}

#[test]
fn a_snapshot_breakpoint_with_an_odd_stack() {
    let mut fx = Fixture::default();
    let unknown_class = frame(&mut fx, None, "m");
    let tp = breakpoint(
        vec![NO_LOCATION, unknown_class, CodeLocationId(999_999)],
        NO_LOCATION,
    );
    assert_eq!(
        brief(&fx, &tp, None, Parent::TopLevel),
        "Live breakpoint [123e4567-e89b-12d3-a456-426614174000], \
         stacktrace: [., <unknown>.m, <missing CODE_LOCATION 999999>]"
    );
    let mut tp = breakpoint(vec![], NO_LOCATION);
    if let TracepointBody::SnapshotBreakpoint {
        uuid_high,
        uuid_low,
        ..
    } = &mut tp.body
    {
        (*uuid_high, *uuid_low) = (0, 1);
    }
    assert_eq!(
        brief(&fx, &tp, None, Parent::TopLevel),
        "Live breakpoint [00000000-0000-0000-0000-000000000001], stacktrace: []"
    );
}

#[test]
fn throw_and_catch_print_the_exception_value() {
    let mut fx = Fixture::default();
    let exception = fx.obj("java.lang.IllegalStateException", 2139867374);
    let tp = tracepoint(
        NO_LOCATION,
        TracepointBody::Throw {
            exception: exception.clone(),
        },
    );
    assert_eq!(
        brief(&fx, &tp, None, Parent::TopLevel),
        "throw IllegalStateException@2139867374"
    );
    let tp = tracepoint(NO_LOCATION, TracepointBody::Catch { exception });
    assert_eq!(
        brief(&fx, &tp, None, Parent::TopLevel),
        "catch(IllegalStateException@2139867374)"
    );
    let tp = tracepoint(
        NO_LOCATION,
        TracepointBody::Throw {
            exception: Value::Null,
        },
    );
    assert_eq!(brief(&fx, &tp, None, Parent::TopLevel), "throw null");
}

// ---- §2 locations, diff statuses, missing objects ----

#[test]
fn unknown_files_print_unknown_and_unknown_locations_at_colon_zero() {
    let mut fx = Fixture::default();
    let at = fx.location_of(CodeLocationKind::Line, "x", -2, None, Vec::new());
    let Some(Object::CodeLocation(location)) = fx.objects.last_mut() else {
        unreachable!()
    };
    location.file_name = StringId(-1);
    let tp = tracepoint(at, TracepointBody::Loop { loop_id: 0 });
    assert_eq!(
        verbose(&fx, &tp, None),
        "loop(0 iterations) at <unknown>:-2"
    );
    let tp = tracepoint(NO_LOCATION, TracepointBody::Loop { loop_id: 0 });
    assert_eq!(verbose(&fx, &tp, None), "loop(0 iterations) at :0");
}

#[test]
fn diff_statuses_prefix_every_type_but_breakpoints() {
    let fx = Fixture::default();
    let mut tp = tracepoint(NO_LOCATION, TracepointBody::Loop { loop_id: 0 });
    let mut line = |status| {
        tp.header.diff_status = status;
        brief(&fx, &tp, None, Parent::TopLevel)
    };
    assert_eq!(line(DiffStatus::Unchanged), "  loop(0 iterations)");
    assert_eq!(line(DiffStatus::Removed), "- loop(0 iterations)");
    assert_eq!(line(DiffStatus::Added), "+ loop(0 iterations)");
    assert_eq!(line(DiffStatus::EditedOld), "! loop(0 iterations)");
    assert_eq!(line(DiffStatus::EditedNew), "! loop(0 iterations)");
    let mut tp = breakpoint(vec![], NO_LOCATION);
    tp.header.diff_status = DiffStatus::Added;
    assert!(brief(&fx, &tp, None, Parent::TopLevel).starts_with("Live breakpoint"));
}

#[test]
fn missing_reference_objects_print_placeholders() {
    let mut fx = Fixture::default();
    let tp = call(CodeLocationId(77), MethodId(5), Value::Null, vec![]);
    assert_eq!(
        verbose(&fx, &tp, Some(&void())),
        "<missing METHOD_DESCRIPTOR 5>() at <missing CODE_LOCATION 77>"
    );
    let at = fx.access_site(Some(vec![Loc::Raw(AccessLocation::Local(VariableId(404)))]));
    let tp = tracepoint(
        at,
        TracepointBody::WriteField {
            field: FieldId(8),
            receiver: Value::Null,
            value: Value::Int(1),
        },
    );
    assert_eq!(
        brief(&fx, &tp, None, Parent::TopLevel),
        "<missing VARIABLE_DESCRIPTOR 404>.<missing FIELD_DESCRIPTOR 8> = 1"
    );
    let tp = tracepoint(
        NO_LOCATION,
        TracepointBody::ReadLocal {
            variable: VariableId(9),
            value: Value::Int(1),
        },
    );
    assert_eq!(
        brief(&fx, &tp, None, Parent::TopLevel),
        "<missing VARIABLE_DESCRIPTOR 9> ➜ 1"
    );
    let at = fx.location_of(
        CodeLocationKind::Access,
        "A.kt",
        1,
        Some(AccessPathId(4040)),
        Vec::new(),
    );
    let tp = tracepoint(
        at,
        TracepointBody::WriteArray {
            array: Value::Null,
            index: 0,
            value: Value::Int(1),
        },
    );
    assert_eq!(
        brief(&fx, &tp, None, Parent::TopLevel),
        "<missing ACCESS_PATH 4040>[0] = 1"
    );
    let method = fx.method("lincheckdriver.Account", "m");
    let Some(Object::MethodDescriptor(descriptor)) = fx.objects.last_mut() else {
        unreachable!()
    };
    descriptor.class = ClassId(31337);
    let tp = call(NO_LOCATION, method, Value::Null, vec![]);
    assert_eq!(
        brief(&fx, &tp, Some(&void()), Parent::TopLevel),
        "<missing CLASS_DESCRIPTOR 31337>.m()"
    );
}

#[test]
fn one_formatter_renders_many_lines_alike() {
    let mut fx = Fixture::default();
    let deposit = fx.method("lincheckdriver.Account", "deposit");
    let at = fx.call_site(Some(vec![local("acc")]), vec![Some(vec![local("l")])]);
    let receiver = fx.obj("lincheckdriver.Account", 1);
    let tp = call(at, deposit, receiver, vec![Value::Long(100)]);
    let context = fx.context();
    let mut formatter = TextFormatter::new(&context, false);
    let mut out = String::new();
    for _ in 0..3 {
        formatter
            .write_tracepoint(&mut out, &tp, Some(&void()), Parent::TopLevel)
            .unwrap();
        out.push('\n');
    }
    assert_eq!(out, "acc.deposit(l ➜ 100)\n".repeat(3));
}
