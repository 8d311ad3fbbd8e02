//! The printer rules, one test each, on small synthetic traces, grouped by
//! topic in the submodules. Expected lines are taken from the reference
//! outputs where one exercises the rule. This module holds the fixture that
//! builds the reference objects and tracepoints they print.

mod accesses;
mod calls;
mod events;
mod whole_traces;

use std::collections::BTreeMap;

use crate::common::{
    AccessPathId, ClassId, CodeLocationId, EventId, FieldId, MethodId, PhysicalOffset, StringId,
    ThreadId, VariableId,
};
use crate::error::{Error, Result};
use crate::format::Object;
use crate::format::{ContextBuilder, TraceContext};
use crate::model::{
    AccessLocation, AccessPath, ClassDescriptor, CodeLocation, CodeLocationKind, DiffStatus,
    FieldDescriptor, Footer, JavaStr, MethodDescriptor, StringObject, ThreadName, Tracepoint,
    TracepointBody, TracepointHeader, TracepointType, Type, Value, VariableDescriptor,
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
