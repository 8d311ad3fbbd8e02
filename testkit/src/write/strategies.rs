//! Proptest strategies for the writer tests: random trees of every
//! tracepoint type, random values of every code, names from a small pool (so
//! interning meets equal names often).

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestCaseError, TestRunner};
use tracetree::model::{CodeLocationKind, JavaStr, LocalKind, Type};
use tracetree::write::{
    AccessPathSpec, AccessStep, BreakpointSpec, CallOutcome, CodeLocationSpec, FieldSpec,
    LocalSpec, MethodSpec, ValueSpec, VariableSpec,
};

use super::{Leaf, Node, Thread};

/// Any UTF-16 sequence: NUL, unpaired surrogate halves, pairs, ASCII.
pub fn any_text() -> impl Strategy<Value = JavaStr<'static>> {
    let unit = prop_oneof![
        3 => 0x20u16..0x7F,
        1 => Just(0u16),
        1 => 0xD800u16..0xE000,
        1 => any::<u16>(),
    ];
    vec(unit, 0..10).prop_map(|units| JavaStr::from_utf16(&units))
}

/// Names from a small pool, so interning meets equal names often.
pub fn name() -> impl Strategy<Value = JavaStr<'static>> {
    prop_oneof![
        4 => prop::sample::select(vec!["a", "b", "Account", "ж", "x\0y", "😀", ""])
            .prop_map(JavaStr::new),
        1 => any_text(),
    ]
}

pub fn jvm_type() -> impl Strategy<Value = Type<'static>> {
    let leaf = prop_oneof![
        Just(Type::Boolean),
        Just(Type::Byte),
        Just(Type::Char),
        Just(Type::Double),
        Just(Type::Float),
        Just(Type::Int),
        Just(Type::Long),
        Just(Type::Short),
        Just(Type::Void),
        name().prop_map(Type::Object),
    ];
    leaf.prop_recursive(3, 6, 1, |inner| {
        inner.prop_map(|element| Type::Array(Box::new(element)))
    })
}

pub fn value() -> impl Strategy<Value = ValueSpec<'static>> {
    let numbers = prop_oneof![
        Just(ValueSpec::Null),
        Just(ValueSpec::Void),
        any::<i8>().prop_map(ValueSpec::Byte),
        any::<i16>().prop_map(ValueSpec::Short),
        any::<i32>().prop_map(ValueSpec::Int),
        any::<i64>().prop_map(ValueSpec::Long),
        any::<u32>().prop_map(ValueSpec::Float),
        any::<u64>().prop_map(ValueSpec::Double),
        prop_oneof![Just(0x7FC0_0001u32), Just(0xFF80_0001)].prop_map(ValueSpec::Float),
        any::<u16>().prop_map(ValueSpec::Char),
    ];
    let others = prop_oneof![
        any_text().prop_map(ValueSpec::String),
        Just(ValueSpec::KotlinUnit),
        any_text().prop_map(ValueSpec::RawString),
        any::<bool>().prop_map(ValueSpec::Boolean),
        name().prop_map(ValueSpec::JavaClass),
        name().prop_map(ValueSpec::KotlinClass),
        (any::<i32>(), any_text()).prop_map(|(identity_hash, text)| ValueSpec::StringBuilder {
            identity_hash,
            text
        }),
    ];
    prop_oneof![numbers, others].prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (name(), any::<i32>(), vec((name(), inner.clone()), 0..4)).prop_map(
                |(class, identity_hash, fields)| ValueSpec::Object {
                    class,
                    identity_hash,
                    fields
                }
            ),
            (name(), any::<i32>(), vec(inner, 0..4), any::<i32>()).prop_map(
                |(class, identity_hash, elements, total_size)| ValueSpec::Array {
                    class,
                    identity_hash,
                    elements,
                    total_size
                }
            ),
        ]
    })
}

pub fn variable() -> impl Strategy<Value = VariableSpec<'static>> {
    (name(), jvm_type()).prop_map(|(name, variable_type)| VariableSpec {
        name,
        variable_type,
    })
}

pub fn field() -> impl Strategy<Value = FieldSpec<'static>> {
    (name(), name(), jvm_type(), any::<[bool; 3]>()).prop_map(|(class, name, field_type, flags)| {
        FieldSpec {
            class,
            name,
            field_type,
            is_static: flags[0],
            is_final: flags[1],
            is_volatile: flags[2],
        }
    })
}

pub fn method() -> impl Strategy<Value = MethodSpec<'static>> {
    (name(), name(), vec(jvm_type(), 0..3), jvm_type()).prop_map(
        |(class, name, parameter_types, return_type)| MethodSpec {
            class,
            name,
            parameter_types,
            return_type,
        },
    )
}

pub fn access_path() -> impl Strategy<Value = AccessPathSpec<'static>> {
    let step = prop_oneof![
        variable().prop_map(AccessStep::Local),
        field().prop_map(AccessStep::StaticField),
        field().prop_map(AccessStep::ObjectField),
        any::<i32>().prop_map(AccessStep::ArrayIndex),
    ];
    vec(step.clone(), 0..3)
        .prop_map(AccessPathSpec::new)
        .prop_recursive(2, 6, 2, move |inner| {
            vec(
                prop_oneof![3 => step.clone(), 1 => inner.prop_map(AccessStep::ArrayElementByName)],
                0..3,
            )
            .prop_map(AccessPathSpec::new)
        })
}

pub fn code_location() -> impl Strategy<Value = Option<CodeLocationSpec<'static>>> {
    let kind = prop_oneof![
        Just(CodeLocationKind::Line),
        Just(CodeLocationKind::Access),
        Just(CodeLocationKind::MethodCall),
    ];
    let local_kind = prop_oneof![
        Just(LocalKind::This),
        Just(LocalKind::Parameter),
        Just(LocalKind::Variable),
    ];
    let local = (option::of(name()), local_kind).prop_map(|(name, kind)| LocalSpec { name, kind });
    option::weighted(
        0.8,
        (
            kind,
            [option::of(name()), option::of(name()), option::of(name())],
            -2i32..200,
            option::of(access_path()),
            vec(option::of(access_path()), 0..3),
            vec(local, 0..3),
        )
            .prop_map(
                |(kind, [file, class, method], line, access_path, arguments, locals)| {
                    CodeLocationSpec {
                        kind,
                        file,
                        class,
                        method,
                        line,
                        access_path,
                        arguments,
                        locals,
                    }
                },
            ),
    )
}

pub fn leaf() -> impl Strategy<Value = Leaf> {
    let breakpoint = (
        any::<u128>(),
        vec(code_location(), 0..3),
        any::<i64>(),
        vec(value(), 0..3),
        option::of(any_text()),
    )
        .prop_map(|(uuid, stack, millis, values, trace_id)| BreakpointSpec {
            uuid,
            stack,
            millis,
            values,
            trace_id,
        });
    prop_oneof![
        (value(), any::<i32>(), value()).prop_map(|(a, i, v)| Leaf::ReadArray(a, i, v)),
        (value(), any::<i32>(), value()).prop_map(|(a, i, v)| Leaf::WriteArray(a, i, v)),
        (variable(), value()).prop_map(|(x, v)| Leaf::ReadLocal(x, v)),
        (variable(), value()).prop_map(|(x, v)| Leaf::WriteLocal(x, v)),
        (field(), value(), value()).prop_map(|(f, r, v)| Leaf::ReadField(f, r, v)),
        (field(), value(), value()).prop_map(|(f, r, v)| Leaf::WriteField(f, r, v)),
        breakpoint.prop_map(Leaf::Breakpoint),
        value().prop_map(Leaf::Throw),
        value().prop_map(Leaf::Catch),
    ]
}

pub fn is_marker(value: &ValueSpec<'_>) -> bool {
    matches!(value, ValueSpec::String(s)
        if s.as_bytes() == b"<unfinished method>" || s.as_bytes() == b"<untracked result>")
}

pub fn outcome() -> impl Strategy<Value = CallOutcome<'static>> {
    prop_oneof![
        4 => value()
            .prop_filter("the recorder's marker strings", |v| !is_marker(v))
            .prop_map(CallOutcome::Returned),
        1 => any_text()
            .prop_filter("an exception has a name", |s| !s.is_empty())
            .prop_map(CallOutcome::Threw),
        1 => Just(CallOutcome::Unfinished),
        1 => Just(CallOutcome::Untracked),
    ]
}

pub fn node() -> impl Strategy<Value = Node> {
    let leaf = (code_location(), leaf()).prop_map(|(at, leaf)| Node::Leaf { at, leaf });
    leaf.prop_recursive(6, 96, 5, |inner| {
        prop_oneof![
            (
                code_location(),
                method(),
                value(),
                vec(value(), 0..3),
                any::<bool>(),
                vec(inner.clone(), 0..6),
                outcome(),
            )
                .prop_map(
                    |(at, method, receiver, arguments, incomplete, children, outcome)| {
                        Node::Call {
                            at,
                            method,
                            receiver,
                            arguments,
                            incomplete,
                            children,
                            outcome,
                        }
                    }
                ),
            (
                code_location(),
                any::<i32>(),
                vec(vec(inner, 0..4), 0..4),
                any::<i32>()
            )
                .prop_map(|(at, loop_id, iterations, count)| Node::Loop {
                    at,
                    loop_id,
                    iterations,
                    count,
                }),
        ]
    })
}

pub fn threads() -> impl Strategy<Value = Vec<Thread>> {
    vec(
        ("\\PC{0,8}", vec(node(), 0..4)).prop_map(|(name, roots)| Thread { name, roots }),
        0..4,
    )
}

/// Runs a property test on a thread with a large stack: generating deeply
/// nested strategies recurses deeper than a test thread's 2 MiB allow in a
/// debug build. The failures found are kept in, and replayed first from,
/// `NAME.proptest-regressions` beside `source_file` (the test's `file!()`).
pub fn check_property<S, F>(cases: u32, source_file: &'static str, strategy: fn() -> S, test: F)
where
    S: Strategy + 'static,
    F: Fn(S::Value) -> Result<(), TestCaseError> + Send + 'static,
{
    let handle = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let mut runner = TestRunner::new(ProptestConfig {
                cases,
                source_file: Some(source_file),
                failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
                    "proptest-regressions",
                ))),
                ..ProptestConfig::default()
            });
            if let Err(failure) = runner.run(&strategy(), test) {
                panic!("{failure}");
            }
        })
        .expect("spawn");
    if let Err(panic) = handle.join() {
        std::panic::resume_unwind(panic);
    }
}
