//! Method calls (§2.1): the head with its owner rules, the arguments, the results.

use super::*;

// ---- §2.1 method calls: head ----

#[test]
fn constructor_prints_new_and_the_short_class_name() {
    let mut fx = Fixture::default();
    let init = fx.method("lincheckdriver.Account", "<init>");
    let at = fx.call_site(
        None,
        vec![Some(vec![local("i")]), Some(vec![local("name")])],
    );
    let tp = call(
        at,
        init,
        Value::Null,
        vec![Value::Int(7), Value::String(JavaStr::new("Alice"))],
    );
    assert_eq!(
        brief(&fx, &tp, Some(&void()), Parent::TopLevel),
        "new Account(i ➜ 7, name ➜ \"Alice\")"
    );
}

#[test]
fn owner_rule_1_static_call_from_its_defining_class_has_no_owner() {
    let mut fx = Fixture::default();
    let values = fx.method("lincheckdriver.Account", "values");
    let check = fx.method("lincheckdriver.Account", "check");
    let at = fx.call_site(None, vec![Some(vec![local("i")])]);
    let tp = call(at, check, Value::Null, vec![Value::Int(3)]);
    let footer = returned(Value::Boolean(true));
    assert_eq!(
        brief(&fx, &tp, Some(&footer), Parent::Call(values)),
        "check(i ➜ 3): true"
    );
}

#[test]
fn owner_rule_1_counts_a_companion_call_from_its_outer_class() {
    let mut fx = Fixture::default();
    let process = fx.method("lincheckdriver.Account", "process");
    let create = fx.method("lincheckdriver.Account$Companion", "create");
    let tp = call(NO_LOCATION, create, Value::Null, vec![]);
    assert_eq!(
        brief(&fx, &tp, Some(&void()), Parent::Call(process)),
        "create()"
    );
    assert_eq!(
        brief(&fx, &tp, Some(&void()), Parent::TopLevel),
        "Account$Companion.create()"
    );
}

#[test]
fn owner_rule_2_a_path_of_only_this_has_no_owner() {
    let mut fx = Fixture::default();
    let step = fx.method("lincheckdriver.Account", "step");
    let at = fx.call_site(Some(vec![local("this")]), vec![Some(vec![local("k")])]);
    let receiver = fx.obj("lincheckdriver.Account", 1);
    let tp = call(at, step, receiver, vec![Value::Int(3)]);
    assert_eq!(
        brief(&fx, &tp, Some(&void()), Parent::TopLevel),
        "step(k ➜ 3)"
    );
}

#[test]
fn owner_rule_2_an_object_instance_prints_the_class() {
    let mut fx = Fixture::default();
    let lookup = fx.method("lincheckdriver.Registry", "lookup");
    let instance = static_field("lincheckdriver.Registry", "INSTANCE");
    let at = fx.call_site(Some(vec![instance]), vec![Some(vec![local("name")])]);
    let receiver = fx.obj("lincheckdriver.Registry", 5);
    let tp = call(
        at,
        lookup,
        receiver,
        vec![Value::String(JavaStr::new("Alice"))],
    );
    assert_eq!(
        brief(&fx, &tp, Some(&returned(Value::Null)), Parent::TopLevel),
        "Registry.lookup(name ➜ \"Alice\"): null"
    );
}

#[test]
fn owner_rule_2_a_companion_prints_the_outer_class_except_from_inside_it() {
    let mut fx = Fixture::default();
    let process = fx.method("lincheckdriver.Account", "process");
    let run = fx.method("java.lang.Thread", "run");
    let create = fx.method("lincheckdriver.Account$Companion", "create");
    let companion = static_field("lincheckdriver.Account", "Companion");
    let at = fx.call_site(Some(vec![companion]), vec![]);
    let receiver = fx.obj("lincheckdriver.Account$Companion", 859950146);
    let tp = call(at, create, receiver, vec![]);
    let footer = returned(fx.obj("lincheckdriver.Account", 270341036));
    assert_eq!(
        brief(&fx, &tp, Some(&footer), Parent::Call(process)),
        "create(): Account@270341036"
    );
    assert_eq!(
        brief(&fx, &tp, Some(&footer), Parent::Call(run)),
        "Account.create(): Account@270341036"
    );
}

#[test]
fn owner_rule_2_any_other_path_prints_the_path() {
    let mut fx = Fixture::default();
    let deposit = fx.method("lincheckdriver.Account", "deposit");
    let at = fx.call_site(Some(vec![local("acc")]), vec![Some(vec![local("l")])]);
    let receiver = fx.obj("lincheckdriver.Account", 1);
    let tp = call(at, deposit, receiver, vec![Value::Long(100)]);
    assert_eq!(
        brief(
            &fx,
            &tp,
            Some(&returned(Value::Boolean(true))),
            Parent::TopLevel
        ),
        "acc.deposit(l ➜ 100): true"
    );
}

#[test]
fn owner_rule_3_without_a_path_the_receiver_value_is_the_owner() {
    let mut fx = Fixture::default();
    let run = fx.method("java.lang.Thread", "run");
    let receiver = fx.obj("java.lang.Thread", 1899710330);
    let tp = call(NO_LOCATION, run, receiver, vec![]);
    assert_eq!(
        verbose(&fx, &tp, Some(&void())),
        "Thread@1899710330.run() at :0"
    );
}

#[test]
fn owner_rule_4_static_calls_of_kotlin_file_classes_have_no_owner() {
    let mut fx = Fixture::default();
    let main = fx.method("lincheckdriver.RefKt", "main");
    let process = fx.method("lincheckdriver.Account", "process");
    let helper = fx.method("lincheckdriver.UtilsKt", "helper");
    let tp = call(NO_LOCATION, main, Value::Null, vec![]);
    assert_eq!(brief(&fx, &tp, Some(&void()), Parent::TopLevel), "main()");
    let tp = call(NO_LOCATION, helper, Value::Null, vec![Value::Int(3)]);
    assert_eq!(
        brief(
            &fx,
            &tp,
            Some(&returned(Value::Int(9))),
            Parent::Call(process)
        ),
        "helper(3): 9"
    );
}

#[test]
fn owner_rule_5_other_static_calls_print_the_class() {
    let mut fx = Fixture::default();
    let run = fx.method("lincheckdriver.RefKt", "run");
    let values = fx.method("lincheckdriver.Account", "values");
    let tp = call(NO_LOCATION, values, Value::Null, vec![Value::Byte(-128)]);
    assert_eq!(
        brief(&fx, &tp, Some(&void()), Parent::Call(run)),
        "Account.values(-128)"
    );
}

#[test]
fn a_static_call_directly_inside_a_loop_is_not_from_its_defining_class() {
    let mut fx = Fixture::default();
    let check = fx.method("lincheckdriver.Account", "check");
    let tp = call(NO_LOCATION, check, Value::Null, vec![]);
    assert_eq!(
        brief(&fx, &tp, Some(&void()), Parent::Other),
        "Account.check()"
    );
}

#[test]
fn the_coroutines_module_suffix_is_dropped_from_method_names() {
    let mut fx = Fixture::default();
    let resume = fx.method("kotlinx.coroutines.Job", "resume$kotlinx_coroutines_core");
    let tp = call(NO_LOCATION, resume, Value::Null, vec![]);
    assert_eq!(
        brief(&fx, &tp, Some(&void()), Parent::TopLevel),
        "Job.resume()"
    );
}

// ---- §2.1 arguments ----

#[test]
fn argument_names_are_used_only_when_there_is_one_per_argument() {
    let mut fx = Fixture::default();
    let pair = fx.method("lincheckdriver.RefKt", "pair");
    let at = fx.call_site(None, vec![Some(vec![local("i")])]);
    let tp = call(at, pair, Value::Null, vec![Value::Int(1), Value::Int(2)]);
    let footer = returned(Value::String(JavaStr::new("1:2")));
    assert_eq!(
        brief(&fx, &tp, Some(&footer), Parent::TopLevel),
        "pair(1, 2): \"1:2\""
    );
}

#[test]
fn an_unnamed_argument_prints_its_value() {
    let mut fx = Fixture::default();
    let fail = fx.method("lincheckdriver.RefKt", "fail");
    let at = fx.call_site(
        None,
        vec![Some(vec![local("s")]), None, Some(vec![local("c")])],
    );
    let tp = call(
        at,
        fail,
        Value::Null,
        vec![Value::Short(1), Value::Int(2), Value::Char(u16::from(b'x'))],
    );
    assert_eq!(
        brief(&fx, &tp, Some(&void()), Parent::TopLevel),
        "fail(s ➜ 1, 2, c ➜ 'x')"
    );
}

#[test]
fn a_named_object_array_or_null_argument_prints_its_name_only() {
    let mut fx = Fixture::default();
    let transfer = fx.method("lincheckdriver.RefKt", "transfer");
    let names = vec![
        Some(vec![local("other")]),
        Some(vec![
            local("this"),
            object_field("lincheckdriver.Account", "history"),
        ]),
        Some(vec![local("arr"), Loc::Index(3)]),
        Some(vec![local("f")]),
        Some(vec![local("n")]),
    ];
    let at = fx.call_site(None, names);
    let other = fx.obj("lincheckdriver.Account", 1);
    let history = Value::Array {
        class: fx.class("[I"),
        identity_hash: 2,
        elements: Vec::new(),
        total_size: 0,
    };
    let arguments = vec![
        other,
        history,
        Value::Double(2.5f64.to_bits()),
        Value::Float(0x8000_0000),
        Value::Null,
    ];
    let tp = call(at, transfer, Value::Null, arguments);
    assert_eq!(
        brief(&fx, &tp, Some(&void()), Parent::TopLevel),
        "transfer(other, history, arr[3] ➜ 2.5, f ➜ -0.0, n)"
    );
}

#[test]
fn only_call_sites_keep_argument_names() {
    let mut fx = Fixture::default();
    let f = fx.method("lincheckdriver.RefKt", "f");
    let name = fx.path(vec![local("i")]);
    let at = fx.location_of(
        CodeLocationKind::Access,
        "Ref.kt",
        1,
        None,
        vec![Some(name)],
    );
    let tp = call(at, f, Value::Null, vec![Value::Int(1)]);
    assert_eq!(brief(&fx, &tp, Some(&void()), Parent::TopLevel), "f(1)");
}

// ---- §2.1 results ----

#[test]
fn a_call_that_threw_prints_the_exception_class_as_stored() {
    let mut fx = Fixture::default();
    let fail = fx.method("lincheckdriver.RefKt", "fail");
    let tp = call(NO_LOCATION, fail, Value::Null, vec![]);
    let footer = Footer::MethodCall {
        result: Value::Null,
        exception: JavaStr::new("IllegalStateException"),
    };
    assert_eq!(
        brief(&fx, &tp, Some(&footer), Parent::TopLevel),
        "fail(): threw IllegalStateException"
    );
}

#[test]
fn the_result_markers_print_unquoted_and_other_strings_quoted() {
    let mut fx = Fixture::default();
    let idle = fx.method("lincheckdriver.RefKt", "idle");
    let tp = call(NO_LOCATION, idle, Value::Null, vec![]);
    let with = |text: &str| returned(Value::String(JavaStr::new(text)));
    let line = |footer: Footer<'_>| brief(&fx, &tp, Some(&footer), Parent::TopLevel);
    assert_eq!(
        line(with("<untracked result>")),
        "idle(): <untracked result>"
    );
    assert_eq!(
        line(with("<unfinished method>")),
        "idle(): <unfinished method>"
    );
    assert_eq!(line(with("<other>")), "idle(): \"<other>\"");
    assert_eq!(
        line(returned(Value::RawString(JavaStr::new(
            "<untracked result>"
        )))),
        "idle(): <untracked result>"
    );
}

#[test]
fn a_void_result_prints_nothing_and_unit_prints_unit() {
    let mut fx = Fixture::default();
    let touch = fx.method("lincheckdriver.RefKt", "touch");
    let tp = call(NO_LOCATION, touch, Value::Null, vec![]);
    assert_eq!(brief(&fx, &tp, Some(&void()), Parent::TopLevel), "touch()");
    assert_eq!(
        brief(
            &fx,
            &tp,
            Some(&returned(Value::KotlinUnit)),
            Parent::TopLevel
        ),
        "touch(): Unit"
    );
}

#[test]
fn a_call_never_finished_prints_unfinished_method() {
    let mut fx = Fixture::default();
    let run = fx.method("java.lang.Thread", "run");
    let receiver = fx.obj("java.lang.Thread", 1672489102);
    let tp = call(NO_LOCATION, run, receiver, vec![]);
    assert_eq!(
        verbose(&fx, &tp, None),
        "Thread@1672489102.run(): <unfinished method> at :0"
    );
}
