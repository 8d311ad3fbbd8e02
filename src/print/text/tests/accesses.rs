//! Locals, fields, arrays and access paths (§2.2–2.4, §3.4).

use super::*;

// ---- §2.2 locals ----

#[test]
fn locals_print_name_operator_value() {
    let mut fx = Fixture::default();
    let l = fx.variable("l");
    let inlined = fx.variable("x$iv");
    let at = fx.access_site(None);
    let read = tracepoint(
        at,
        TracepointBody::ReadLocal {
            variable: l,
            value: Value::Long(100),
        },
    );
    assert_eq!(verbose(&fx, &read, None), "l ➜ 100 at Account.kt:30");
    let write = tracepoint(
        at,
        TracepointBody::WriteLocal {
            variable: inlined,
            value: Value::Null,
        },
    );
    assert_eq!(brief(&fx, &write, None, Parent::TopLevel), "x = null");
}

// ---- §2.3 fields ----

fn field_write(
    fx: &mut Fixture,
    path: Option<Vec<Loc>>,
    receiver: Value<'static>,
    class: &str,
    name: &str,
) -> String {
    let field = fx.field(class, name);
    let at = fx.access_site(path);
    let tp = tracepoint(
        at,
        TracepointBody::WriteField {
            field,
            receiver,
            value: Value::Int(5),
        },
    );
    brief(fx, &tp, None, Parent::TopLevel)
}

#[test]
fn a_field_of_this_prints_without_owner() {
    let mut fx = Fixture::default();
    let this = local("this");
    let receiver = fx.obj("lincheckdriver.Account", 1);
    assert_eq!(
        field_write(
            &mut fx,
            Some(vec![this]),
            receiver,
            "lincheckdriver.Account",
            "balance"
        ),
        "balance = 5"
    );
}

#[test]
fn a_field_with_a_path_prints_the_path_as_owner() {
    let mut fx = Fixture::default();
    let receiver = fx.obj("lincheckdriver.Account", 1);
    let other = local("other");
    assert_eq!(
        field_write(
            &mut fx,
            Some(vec![other]),
            receiver.clone(),
            "lincheckdriver.Account",
            "balance"
        ),
        "other.balance = 5"
    );
    let path = vec![local("objs"), by_name(vec![local("k")])];
    assert_eq!(
        field_write(
            &mut fx,
            Some(path),
            receiver,
            "lincheckdriver.Account",
            "balance"
        ),
        "objs[k].balance = 5"
    );
}

#[test]
fn a_field_without_a_path_prints_the_receiver_or_the_class() {
    let mut fx = Fixture::default();
    let receiver = fx.obj("lincheckdriver.Account", 123);
    assert_eq!(
        field_write(&mut fx, None, receiver, "lincheckdriver.Account", "balance"),
        "Account@123.balance = 5"
    );
    assert_eq!(
        field_write(
            &mut fx,
            None,
            Value::Null,
            "lincheckdriver.Account",
            "count"
        ),
        "Account.count = 5"
    );
}

#[test]
fn a_captured_kotlin_local_prints_as_its_owner_alone() {
    let mut fx = Fixture::default();
    let x = local("x");
    let receiver = fx.obj("kotlin.jvm.internal.Ref$IntRef", 9);
    assert_eq!(
        field_write(
            &mut fx,
            Some(vec![x]),
            receiver,
            "kotlin.jvm.internal.Ref$IntRef",
            "element"
        ),
        "x = 5"
    );
}

#[test]
fn atomicfu_field_names_lose_their_suffix() {
    let mut fx = Fixture::default();
    let this = local("this");
    let receiver = fx.obj("lincheckdriver.Stack", 1);
    assert_eq!(
        field_write(
            &mut fx,
            Some(vec![this]),
            receiver,
            "lincheckdriver.Stack",
            "top$volatile$FU"
        ),
        "top = 5"
    );
}

#[test]
fn a_field_read_uses_the_read_arrow() {
    let mut fx = Fixture::default();
    let field = fx.field("lincheckdriver.Account", "count");
    let at = fx.access_site(None);
    let tp = tracepoint(
        at,
        TracepointBody::ReadField {
            field,
            receiver: Value::Null,
            value: Value::Int(1),
        },
    );
    assert_eq!(
        verbose(&fx, &tp, None),
        "Account.count ➜ 1 at Account.kt:30"
    );
}

// ---- §2.4 arrays ----

fn array_access(
    fx: &mut Fixture,
    path: Option<Vec<Loc>>,
    array: Value<'static>,
    index: i32,
    write: bool,
) -> String {
    let at = fx.access_site(path);
    let value = Value::Int(7);
    let body = if write {
        TracepointBody::WriteArray {
            array,
            index,
            value,
        }
    } else {
        TracepointBody::ReadArray {
            array,
            index,
            value,
        }
    };
    brief(fx, &tracepoint(at, body), None, Parent::TopLevel)
}

#[test]
fn array_accesses_print_the_path_then_the_last_index() {
    let mut fx = Fixture::default();
    let arr = local("arr");
    assert_eq!(
        array_access(&mut fx, Some(vec![arr]), Value::Null, 3, true),
        "arr[3] = 7"
    );
    let path = vec![local("grid"), by_name(vec![local("i")])];
    assert_eq!(
        array_access(&mut fx, Some(path), Value::Null, 0, true),
        "grid[i][0] = 7"
    );
    let path = vec![
        static_field("lincheckdriver.Account", "GRID"),
        Loc::Index(1),
    ];
    assert_eq!(
        array_access(&mut fx, Some(path), Value::Null, 0, false),
        "Account.GRID[1][0] ➜ 7"
    );
    let inner = vec![local("arr"), by_name(vec![local("i")])];
    let path = vec![local("grid"), by_name(inner)];
    assert_eq!(
        array_access(&mut fx, Some(path), Value::Null, 1, false),
        "grid[arr[i]][1] ➜ 7"
    );
    let path = vec![
        local("this"),
        object_field("lincheckdriver.Account", "history"),
    ];
    assert_eq!(
        array_access(&mut fx, Some(path), Value::Null, 0, true),
        "history[0] = 7"
    );
}

#[test]
fn array_accesses_without_a_path_print_the_array_value() {
    let mut fx = Fixture::default();
    let array = Value::Array {
        class: fx.class("[I"),
        identity_hash: 1520906588,
        elements: Vec::new(),
        total_size: 5,
    };
    assert_eq!(
        array_access(&mut fx, None, array, 0, false),
        "[I@1520906588[0] ➜ 7"
    );
    let strings = Value::Array {
        class: fx.class("[Ljava.lang.String;"),
        identity_hash: 456780954,
        elements: Vec::new(),
        total_size: 2,
    };
    assert_eq!(
        array_access(&mut fx, None, strings, 1, false),
        "String;@456780954[1] ➜ 7"
    );
    assert_eq!(
        array_access(&mut fx, None, Value::Null, 1, false),
        "null[1] ➜ 7"
    );
}

#[test]
fn an_array_reached_through_this_alone_prints_just_the_index() {
    let mut fx = Fixture::default();
    let this = local("this");
    assert_eq!(
        array_access(&mut fx, Some(vec![this]), Value::Null, 2, true),
        "[2] = 7"
    );
}

// ---- §3.4 access paths ----

/// Only locals and fields put a dot before a following field; an index does
/// not (the reference's quirk, kept).
#[test]
fn dots_go_only_before_fields_and_this_prints_nothing() {
    let mut fx = Fixture::default();
    let path = vec![
        local("this"),
        object_field("lincheckdriver.Account", "node"),
        object_field("lincheckdriver.Node", "items"),
        Loc::Index(2),
        object_field("lincheckdriver.Item", "name$volatile$FU"),
    ];
    assert_eq!(
        array_access(&mut fx, Some(path), Value::Null, 0, true),
        "node.items[2]name[0] = 7"
    );
}

#[test]
fn a_path_that_contains_itself_does_not_recurse_forever() {
    let mut fx = Fixture::default();
    // Path ids are handed out in order: the next id is the path's own.
    let own = AccessPathId(fx.next_id + 1);
    let path = fx.path(vec![Loc::Raw(AccessLocation::ArrayElementByName(own))]);
    assert_eq!(path, own);
    let at = fx.location_of(CodeLocationKind::Access, "A.kt", 1, Some(path), Vec::new());
    let tp = tracepoint(
        at,
        TracepointBody::WriteArray {
            array: Value::Null,
            index: 0,
            value: Value::Int(1),
        },
    );
    let text = brief(&fx, &tp, None, Parent::TopLevel);
    assert!(text.starts_with("[[[["), "{text}");
    assert!(text.contains("<nested too deep: ACCESS_PATH"), "{text}");
    assert!(text.ends_with("[0] = 1"), "{text}");
}
