//! The printer rules, one test each, on small synthetic traces. Expected
//! lines are taken from the reference outputs where one exercises the rule.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::format::Object;
use crate::format::offset::{
    AccessPathId, ClassId, CodeLocationId, EventId, FieldId, MethodId, PhysicalOffset, StringId,
    ThreadId, VariableId,
};
use crate::model::{
    AccessLocation, AccessPath, ClassDescriptor, CodeLocation, CodeLocationKind, ContextBuilder,
    DiffStatus, FieldDescriptor, Footer, JavaStr, MethodDescriptor, StringObject, ThreadName,
    TraceContext, Tracepoint, TracepointBody, TracepointHeader, TracepointType, Type, Value,
    VariableDescriptor,
};
use crate::print::text::{Parent, PrintOptions, TextFormatter, print_trace, tracepoint_text};
use crate::storage::TraceBytes;
use crate::tree::TraceTree;

/// Reference objects of a synthetic trace, with ids handed out in order.
#[derive(Default)]
struct Fixture {
    objects: Vec<Object<'static>>,
    classes: BTreeMap<String, ClassId>,
    variables: BTreeMap<String, VariableId>,
    strings: BTreeMap<String, StringId>,
    next_id: i32,
}

impl Fixture {
    fn id(&mut self) -> i32 {
        self.next_id += 1;
        self.next_id
    }

    fn class(&mut self, name: &str) -> ClassId {
        if let Some(&id) = self.classes.get(name) {
            return id;
        }
        let id = ClassId(self.id());
        self.objects.push(Object::ClassDescriptor(ClassDescriptor {
            id,
            name: JavaStr::new(name),
        }));
        self.classes.insert(name.to_owned(), id);
        id
    }

    fn method(&mut self, class: &str, name: &str) -> MethodId {
        let class = self.class(class);
        let id = MethodId(self.id());
        self.objects
            .push(Object::MethodDescriptor(MethodDescriptor {
                id,
                class,
                name: JavaStr::new(name),
                return_type: Type::Void,
                parameter_types: Vec::new(),
            }));
        id
    }

    fn field(&mut self, class: &str, name: &str) -> FieldId {
        let class = self.class(class);
        let id = FieldId(self.id());
        self.objects.push(Object::FieldDescriptor(FieldDescriptor {
            id,
            class,
            name: JavaStr::new(name),
            field_type: Type::Int,
            is_static: false,
            is_final: false,
            is_volatile: false,
        }));
        id
    }

    fn variable(&mut self, name: &str) -> VariableId {
        if let Some(&id) = self.variables.get(name) {
            return id;
        }
        let id = VariableId(self.id());
        self.objects
            .push(Object::VariableDescriptor(VariableDescriptor {
                id,
                name: JavaStr::new(name),
                variable_type: Type::Int,
            }));
        self.variables.insert(name.to_owned(), id);
        id
    }

    fn string(&mut self, text: &str) -> StringId {
        if let Some(&id) = self.strings.get(text) {
            return id;
        }
        let id = StringId(self.id());
        self.objects.push(Object::String(StringObject {
            id,
            value: JavaStr::new(text),
        }));
        self.strings.insert(text.to_owned(), id);
        id
    }

    fn resolve(&mut self, location: Loc) -> AccessLocation {
        match location {
            Loc::Local(name) => AccessLocation::Local(self.variable(name)),
            Loc::Static(class, name) => AccessLocation::StaticField(self.field(class, name)),
            Loc::Field(class, name) => AccessLocation::ObjectField(self.field(class, name)),
            Loc::Index(index) => AccessLocation::ArrayIndex(index),
            Loc::ByName(path) => AccessLocation::ArrayElementByName(self.path(path)),
            Loc::Raw(location) => location,
        }
    }

    fn path(&mut self, locations: Vec<Loc>) -> AccessPathId {
        let locations = locations.into_iter().map(|l| self.resolve(l)).collect();
        let id = AccessPathId(self.id());
        self.objects
            .push(Object::AccessPath(AccessPath { id, locations }));
        id
    }

    fn location_of(
        &mut self,
        kind: CodeLocationKind,
        file: &str,
        line: i32,
        path: Option<AccessPathId>,
        arguments: Vec<Option<AccessPathId>>,
    ) -> CodeLocationId {
        let id = CodeLocationId(self.id());
        let file_name = self.string(file);
        let class_name = self.string("lincheckdriver.Account");
        let method_name = self.string("run");
        self.objects.push(Object::CodeLocation(CodeLocation {
            kind,
            id,
            file_name,
            class_name,
            method_name,
            line,
            access_path: path,
            argument_paths: arguments,
            locals: Vec::new(),
        }));
        id
    }

    /// A call site (kind 2) with a receiver path and argument names.
    fn call_site(
        &mut self,
        path: Option<Vec<Loc>>,
        arguments: Vec<Option<Vec<Loc>>>,
    ) -> CodeLocationId {
        let path = path.map(|p| self.path(p));
        let arguments = arguments
            .into_iter()
            .map(|a| a.map(|p| self.path(p)))
            .collect();
        self.location_of(CodeLocationKind::MethodCall, "Ref.kt", 10, path, arguments)
    }

    /// An access site (kind 1) with an owner path.
    fn access_site(&mut self, path: Option<Vec<Loc>>) -> CodeLocationId {
        let path = path.map(|p| self.path(p));
        self.location_of(CodeLocationKind::Access, "Account.kt", 30, path, Vec::new())
    }

    fn thread_name(&mut self, thread: i32, name: &str) {
        self.objects.push(Object::ThreadName(ThreadName {
            thread: ThreadId(thread),
            name: JavaStr::new(name),
        }));
    }

    fn context(&self) -> TraceContext {
        let mut builder = ContextBuilder::new();
        for object in &self.objects {
            builder.add_decoded(object.clone(), PhysicalOffset(0));
        }
        builder.build(TraceBytes::from_vec(Vec::new()))
    }

    fn obj(&mut self, class: &str, hash: i32) -> Value<'static> {
        Value::Object {
            class: self.class(class),
            identity_hash: hash,
            fields: Vec::new(),
        }
    }
}

/// An access location, by names.
enum Loc {
    Local(&'static str),
    Static(&'static str, &'static str),
    Field(&'static str, &'static str),
    Index(i32),
    ByName(Vec<Loc>),
    Raw(AccessLocation),
}

fn local(name: &'static str) -> Loc {
    Loc::Local(name)
}

fn static_field(class: &'static str, name: &'static str) -> Loc {
    Loc::Static(class, name)
}

fn object_field(class: &'static str, name: &'static str) -> Loc {
    Loc::Field(class, name)
}

fn by_name(path: Vec<Loc>) -> Loc {
    Loc::ByName(path)
}

fn tracepoint(location: CodeLocationId, body: TracepointBody<'static>) -> Tracepoint<'static> {
    let tracepoint_type = match &body {
        TracepointBody::MethodCall { .. } => TracepointType::MethodCall,
        TracepointBody::ReadArray { .. } => TracepointType::ReadArray,
        TracepointBody::ReadLocal { .. } => TracepointType::ReadLocal,
        TracepointBody::ReadField { .. } => TracepointType::ReadField,
        TracepointBody::WriteArray { .. } => TracepointType::WriteArray,
        TracepointBody::WriteLocal { .. } => TracepointType::WriteLocal,
        TracepointBody::WriteField { .. } => TracepointType::WriteField,
        TracepointBody::Loop { .. } => TracepointType::Loop,
        TracepointBody::LoopIteration { .. } => TracepointType::LoopIteration,
        TracepointBody::SnapshotBreakpoint { .. } => TracepointType::SnapshotBreakpoint,
        TracepointBody::Throw { .. } => TracepointType::Throw,
        TracepointBody::Catch { .. } => TracepointType::Catch,
    };
    Tracepoint {
        header: TracepointHeader {
            tracepoint_type,
            code_location: location,
            thread: ThreadId(0),
            event: EventId(0),
            diff_status: DiffStatus::None,
        },
        child_diff_statuses: Vec::new(),
        body,
    }
}

fn call(
    location: CodeLocationId,
    method: MethodId,
    receiver: Value<'static>,
    arguments: Vec<Value<'static>>,
) -> Tracepoint<'static> {
    tracepoint(
        location,
        TracepointBody::MethodCall {
            method,
            receiver,
            arguments,
            flags: 0,
        },
    )
}

fn returned(result: Value<'static>) -> Footer<'static> {
    Footer::MethodCall {
        result,
        exception: JavaStr::new(""),
    }
}

const NO_LOCATION: CodeLocationId = CodeLocationId(-1);

fn brief(
    fixture: &Fixture,
    tracepoint: &Tracepoint<'_>,
    footer: Option<&Footer<'_>>,
    parent: Parent,
) -> String {
    tracepoint_text(&fixture.context(), tracepoint, footer, parent, false).unwrap()
}

fn verbose(fixture: &Fixture, tracepoint: &Tracepoint<'_>, footer: Option<&Footer<'_>>) -> String {
    tracepoint_text(
        &fixture.context(),
        tracepoint,
        footer,
        Parent::TopLevel,
        true,
    )
    .unwrap()
}

fn void() -> Footer<'static> {
    returned(Value::Void)
}

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

// ---- §1 and §4: whole traces ----

/// A trace in memory: nodes by index, roots by thread.
struct MemoryTree {
    context: TraceContext,
    nodes: Vec<(Tracepoint<'static>, Option<Footer<'static>>, Vec<usize>)>,
    roots: BTreeMap<ThreadId, Vec<usize>>,
}

impl MemoryTree {
    fn new(fixture: &Fixture) -> Self {
        MemoryTree {
            context: fixture.context(),
            nodes: Vec::new(),
            roots: BTreeMap::new(),
        }
    }

    fn add(
        &mut self,
        parent: Option<usize>,
        thread: i32,
        mut tracepoint: Tracepoint<'static>,
        footer: Option<Footer<'static>>,
    ) -> usize {
        tracepoint.header.thread = ThreadId(thread);
        let id = self.nodes.len();
        self.nodes.push((tracepoint, footer, Vec::new()));
        match parent {
            Some(parent) => self.nodes[parent].2.push(id),
            None => self.roots.entry(ThreadId(thread)).or_default().push(id),
        }
        id
    }

    fn print(&self, options: &PrintOptions) -> Result<String> {
        let mut out = Vec::new();
        print_trace(self, options, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }
}

impl TraceTree for MemoryTree {
    type Node = usize;

    fn context(&self) -> &TraceContext {
        &self.context
    }

    fn thread_ids(&self) -> Vec<ThreadId> {
        self.roots.keys().copied().collect()
    }

    fn roots(&self, thread: ThreadId) -> Result<Vec<usize>> {
        Ok(self.roots.get(&thread).cloned().unwrap_or_default())
    }

    fn visit<R>(
        &self,
        node: usize,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> Result<R> {
        let (tracepoint, footer, _) = &self.nodes[node];
        Ok(f(tracepoint, footer.as_ref()))
    }

    fn child_count(&self, node: usize) -> Result<usize> {
        Ok(self.nodes[node].2.len())
    }

    fn children(&self, node: usize) -> Result<Vec<usize>> {
        Ok(self.nodes[node].2.clone())
    }
}

/// Two threads: `main()` calling `Account.values()`, which calls `check()`
/// twice around a loop; and `run()` with a local write.
fn two_threads(named: bool) -> MemoryTree {
    let mut fx = Fixture::default();
    let main = fx.method("lincheckdriver.RefKt", "main");
    let values = fx.method("lincheckdriver.Account", "values");
    let check = fx.method("lincheckdriver.Account", "check");
    let run = fx.method("lincheckdriver.RefKt", "run");
    let k = fx.variable("k");
    let at = fx.access_site(None);
    if named {
        fx.thread_name(0, "main");
        fx.thread_name(1, "Поток-β 🧵");
    }
    let mut tree = MemoryTree::new(&fx);
    let root = tree.add(
        None,
        0,
        call(NO_LOCATION, main, Value::Null, vec![]),
        Some(void()),
    );
    let v = tree.add(
        Some(root),
        0,
        call(NO_LOCATION, values, Value::Null, vec![]),
        Some(void()),
    );
    tree.add(
        Some(v),
        0,
        call(NO_LOCATION, check, Value::Null, vec![]),
        Some(void()),
    );
    let l = tree.add(
        Some(v),
        0,
        tracepoint(at, TracepointBody::Loop { loop_id: 0 }),
        Some(Footer::Loop { iterations: 1 }),
    );
    let i = tree.add(
        Some(l),
        0,
        tracepoint(
            at,
            TracepointBody::LoopIteration {
                loop_id: 0,
                iteration: 0,
            },
        ),
        Some(Footer::LoopIteration),
    );
    tree.add(
        Some(i),
        0,
        call(NO_LOCATION, check, Value::Null, vec![]),
        Some(void()),
    );
    tree.add(
        Some(i),
        0,
        tracepoint(
            at,
            TracepointBody::WriteLocal {
                variable: k,
                value: Value::Int(1),
            },
        ),
        None,
    );
    tree.add(
        Some(v),
        0,
        call(NO_LOCATION, check, Value::Null, vec![]),
        Some(void()),
    );
    let r = tree.add(None, 1, call(NO_LOCATION, run, Value::Null, vec![]), None);
    tree.add(
        Some(r),
        1,
        tracepoint(
            at,
            TracepointBody::WriteLocal {
                variable: k,
                value: Value::Int(2),
            },
        ),
        None,
    );
    tree
}

#[test]
fn threads_print_in_order_with_names_and_two_spaces_per_level() {
    let text = two_threads(true)
        .print(&PrintOptions {
            verbose: true,
            ..PrintOptions::default()
        })
        .unwrap();
    assert_eq!(
        text,
        "# Thread 1 (main)\n\
         main() at :0\n\
         \x20 Account.values() at :0\n\
         \x20   check() at :0\n\
         \x20   loop(1 iterations) at Account.kt:30\n\
         \x20     <iteration 1> at Account.kt:30\n\
         \x20       Account.check() at :0\n\
         \x20       k = 1 at Account.kt:30\n\
         \x20   check() at :0\n\
         # Thread 2 (Поток-β 🧵)\n\
         run(): <unfinished method> at :0\n\
         \x20 k = 2 at Account.kt:30\n"
    );
}

#[test]
fn threads_without_names_print_empty_parentheses() {
    let text = two_threads(false).print(&PrintOptions::default()).unwrap();
    assert!(text.starts_with("# Thread 1 ()\nmain()\n"), "{text}");
    assert!(
        text.contains("\n# Thread 2 ()\nrun(): <unfinished method>\n"),
        "{text}"
    );
}

#[test]
fn a_single_root_prints_no_name() {
    let mut fx = Fixture::default();
    let main = fx.method("lincheckdriver.RefKt", "main");
    fx.thread_name(0, "main");
    let mut tree = MemoryTree::new(&fx);
    tree.add(
        None,
        0,
        call(NO_LOCATION, main, Value::Null, vec![]),
        Some(void()),
    );
    assert_eq!(
        tree.print(&PrintOptions::default()).unwrap(),
        "# Thread 1\nmain()\n"
    );
}

#[test]
fn the_thread_number_is_the_root_thread_id_plus_one() {
    let mut fx = Fixture::default();
    let main = fx.method("lincheckdriver.RefKt", "main");
    fx.thread_name(6, "seventh");
    let mut tree = MemoryTree::new(&fx);
    tree.add(
        None,
        6,
        call(NO_LOCATION, main, Value::Null, vec![]),
        Some(void()),
    );
    tree.add(
        None,
        6,
        call(NO_LOCATION, main, Value::Null, vec![]),
        Some(void()),
    );
    assert_eq!(
        tree.print(&PrintOptions::default()).unwrap(),
        "# Thread 7 (seventh)\nmain()\n# Thread 7 (seventh)\nmain()\n"
    );
}

#[test]
fn a_depth_limit_folds_deeper_children_into_one_line_per_parent() {
    let tree = two_threads(true);
    let options = PrintOptions {
        verbose: true,
        max_depth: Some(1),
        ..PrintOptions::default()
    };
    assert_eq!(
        tree.print(&options).unwrap(),
        "# Thread 1 (main)\n\
         main() at :0\n\
         \x20 Account.values() at :0\n\
         \x20   ... <3 unloaded children>\n\
         # Thread 2 (Поток-β 🧵)\n\
         run(): <unfinished method> at :0\n\
         \x20 k = 2 at Account.kt:30\n"
    );
    let options = PrintOptions {
        max_depth: Some(0),
        ..PrintOptions::default()
    };
    assert_eq!(
        tree.print(&options).unwrap(),
        "# Thread 1 (main)\n\
         main()\n\
         \x20 ... <unloaded child>\n\
         # Thread 2 (Поток-β 🧵)\n\
         run(): <unfinished method>\n\
         \x20 ... <unloaded child>\n"
    );
    let options = PrintOptions {
        max_depth: Some(3),
        ..PrintOptions::default()
    };
    let text = tree.print(&options).unwrap();
    assert!(
        text.contains("      <iteration 1>\n        ... <2 unloaded children>\n    check()\n"),
        "{text}"
    );
}

#[test]
fn a_thread_filter_prints_part_of_the_full_text() {
    let tree = two_threads(true);
    let options = PrintOptions {
        threads: Some(vec![ThreadId(1)]),
        ..PrintOptions::default()
    };
    assert_eq!(
        tree.print(&options).unwrap(),
        "# Thread 2 (Поток-β 🧵)\nrun(): <unfinished method>\n  k = 2\n"
    );
    let options = PrintOptions {
        threads: Some(vec![ThreadId(1), ThreadId(0), ThreadId(1)]),
        ..PrintOptions::default()
    };
    assert_eq!(
        tree.print(&options).unwrap(),
        tree.print(&PrintOptions::default()).unwrap()
    );
}

#[test]
fn a_thread_filter_naming_an_absent_thread_is_a_usage_error() {
    let options = PrintOptions {
        threads: Some(vec![ThreadId(5)]),
        ..PrintOptions::default()
    };
    let error = two_threads(true).print(&options).unwrap_err();
    assert!(
        matches!(&error, Error::Usage(message) if message.contains("no thread 5")),
        "{error}"
    );
}
