//! The reference objects an importer of a single interleaved stream adds
//! to the trace (classes, methods, fields, variables, code locations), each
//! added on first use and looked up by its source key afterwards, and the
//! tracepoints it pushes (calls with the void result, and leaves with no
//! recorded values).
//!
//! Memory holds one entry per distinct name, never per event.

use std::collections::HashMap;

use crate::common::{
    ClassId, CodeLocationId, EventId, FieldId, MethodId, StringId, ThreadId, VariableId,
};
use crate::error::{Error, Result};
use crate::format::Object;
use crate::import::flow::parse_descriptor;
use crate::model::{
    ClassDescriptor, CodeLocation, CodeLocationKind, DiffStatus, FieldDescriptor, Footer, JavaStr,
    MethodDescriptor, Tracepoint, TracepointBody, TracepointHeader, TracepointType, Type, Value,
    VariableDescriptor,
};
use crate::write::StreamingWriter;

/// A leaf an importer maps a source record to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leaf {
    /// `receiver.field ➜ value`.
    ReadField(FieldId),
    /// `receiver.field = value`.
    WriteField(FieldId),
    /// `variable ➜ value`.
    ReadLocal(VariableId),
    /// `variable = value`.
    WriteLocal(VariableId),
    /// `array[index] ➜ value`.
    ReadArray,
    /// `array[index] = value`.
    WriteArray,
    /// An exception thrown.
    Throw,
}

/// The trace's reference objects, added on first use.
#[derive(Default)]
pub(crate) struct Descriptors {
    classes: HashMap<String, ClassId>,
    methods: usize,
    fields: HashMap<(ClassId, String), FieldId>,
    variables: HashMap<(String, u8), VariableId>,
    lines: HashMap<i32, CodeLocationId>,
    next_event: i64,
}

impl Descriptors {
    /// The id of the class named `name` (dotted).
    pub fn class(&mut self, name: &str, writer: &StreamingWriter) -> Result<ClassId> {
        if let Some(&class) = self.classes.get(name) {
            return Ok(class);
        }
        let class = ClassId(next_id(self.classes.len())?);
        writer.add_reference(&Object::ClassDescriptor(ClassDescriptor {
            id: class,
            name: JavaStr::new(name),
        }))?;
        self.classes.insert(name.to_string(), class);
        Ok(class)
    }

    /// Adds a method of `class` (dotted) named `name`, with the JVM
    /// `descriptor`'s types when it parses; callers keep the id.
    pub fn add_method(
        &mut self,
        class: &str,
        name: &str,
        descriptor: Option<&str>,
        writer: &StreamingWriter,
    ) -> Result<MethodId> {
        let class = self.class(class, writer)?;
        let (parameter_types, return_type) = descriptor
            .and_then(parse_descriptor)
            .unwrap_or((Vec::new(), Type::Void));
        let method = MethodId(next_id(self.methods)?);
        self.methods += 1;
        writer.add_reference(&Object::MethodDescriptor(MethodDescriptor {
            id: method,
            class,
            name: JavaStr::new(name),
            return_type,
            parameter_types,
        }))?;
        Ok(method)
    }

    /// The id of field `name` of `class` (dotted), of JVM type `descriptor`.
    pub fn field(
        &mut self,
        class: &str,
        name: &str,
        descriptor: &str,
        is_static: bool,
        writer: &StreamingWriter,
    ) -> Result<FieldId> {
        let class = self.class(class, writer)?;
        let key = (class, name.to_string());
        if let Some(&field) = self.fields.get(&key) {
            return Ok(field);
        }
        let field = FieldId(next_id(self.fields.len())?);
        let field_type = parse_descriptor(&format!("(){descriptor}"))
            .map_or(Type::Object(JavaStr::new("java.lang.Object")), |(_, t)| t);
        writer.add_reference(&Object::FieldDescriptor(FieldDescriptor {
            id: field,
            class,
            name: JavaStr::new(name),
            field_type,
            is_static,
            is_final: false,
            is_volatile: false,
        }))?;
        self.fields.insert(key, field);
        Ok(field)
    }

    /// The id of local variable `name` of the type named by a JVM type
    /// letter (`I`, `J`, `F`, `D`, else an object).
    pub fn variable(
        &mut self,
        name: &str,
        letter: u8,
        writer: &StreamingWriter,
    ) -> Result<VariableId> {
        let key = (name.to_string(), letter);
        if let Some(&variable) = self.variables.get(&key) {
            return Ok(variable);
        }
        let variable = VariableId(next_id(self.variables.len())?);
        let variable_type = match letter {
            b'I' => Type::Int,
            b'J' => Type::Long,
            b'F' => Type::Float,
            b'D' => Type::Double,
            _ => Type::Object(JavaStr::new("java.lang.Object")),
        };
        writer.add_reference(&Object::VariableDescriptor(VariableDescriptor {
            id: variable,
            name: JavaStr::new(name),
            variable_type,
        }))?;
        self.variables.insert(key, variable);
        Ok(variable)
    }

    /// The code location of source line `line` (an access).
    pub fn line(&mut self, line: i32, writer: &StreamingWriter) -> Result<CodeLocationId> {
        if let Some(&location) = self.lines.get(&line) {
            return Ok(location);
        }
        let location = CodeLocationId(next_id(self.lines.len())?);
        writer.add_reference(&Object::CodeLocation(CodeLocation {
            kind: CodeLocationKind::Access,
            id: location,
            file_name: StringId(-1),
            class_name: StringId(-1),
            method_name: StringId(-1),
            line,
            access_path: None,
            argument_paths: Vec::new(),
            locals: Vec::new(),
        }))?;
        self.lines.insert(line, location);
        Ok(location)
    }

    /// The next event id of the trace.
    pub fn next_event(&mut self) -> Result<EventId> {
        let event = i32::try_from(self.next_event)
            .map_err(|_| Error::limit("events in a v22 trace", self.next_event, i32::MAX))?;
        self.next_event += 1;
        Ok(EventId(event))
    }
}

/// A call header with no receiver, arguments or location.
pub(crate) fn call(thread: ThreadId, event: EventId, method: MethodId) -> Tracepoint<'static> {
    tracepoint(
        TracepointType::MethodCall,
        CodeLocationId(-1),
        thread,
        event,
        TracepointBody::MethodCall {
            method,
            receiver: Value::Null,
            arguments: Vec::new(),
            flags: 0,
        },
    )
}

/// A leaf at `location` with no recorded values.
pub(crate) fn leaf(
    leaf: Leaf,
    location: CodeLocationId,
    thread: ThreadId,
    event: EventId,
) -> Tracepoint<'static> {
    let (kind, body) = match leaf {
        Leaf::ReadField(field) => (
            TracepointType::ReadField,
            TracepointBody::ReadField {
                field,
                receiver: Value::Null,
                value: Value::Void,
            },
        ),
        Leaf::WriteField(field) => (
            TracepointType::WriteField,
            TracepointBody::WriteField {
                field,
                receiver: Value::Null,
                value: Value::Void,
            },
        ),
        Leaf::ReadLocal(variable) => (
            TracepointType::ReadLocal,
            TracepointBody::ReadLocal {
                variable,
                value: Value::Void,
            },
        ),
        Leaf::WriteLocal(variable) => (
            TracepointType::WriteLocal,
            TracepointBody::WriteLocal {
                variable,
                value: Value::Void,
            },
        ),
        Leaf::ReadArray => (
            TracepointType::ReadArray,
            TracepointBody::ReadArray {
                array: Value::Null,
                index: 0,
                value: Value::Void,
            },
        ),
        Leaf::WriteArray => (
            TracepointType::WriteArray,
            TracepointBody::WriteArray {
                array: Value::Null,
                index: 0,
                value: Value::Void,
            },
        ),
        Leaf::Throw => (
            TracepointType::Throw,
            TracepointBody::Throw {
                exception: Value::Null,
            },
        ),
    };
    tracepoint(kind, location, thread, event, body)
}

fn tracepoint(
    tracepoint_type: TracepointType,
    code_location: CodeLocationId,
    thread: ThreadId,
    event: EventId,
    body: TracepointBody<'static>,
) -> Tracepoint<'static> {
    Tracepoint {
        header: TracepointHeader {
            tracepoint_type,
            code_location,
            thread,
            event,
            diff_status: DiffStatus::None,
        },
        child_diff_statuses: Vec::new(),
        body,
    }
}

/// The footer of a call of a source that records no values.
pub(crate) fn void_return() -> Footer<'static> {
    Footer::MethodCall {
        result: Value::Void,
        exception: JavaStr::new(""),
    }
}

fn next_id(count: usize) -> Result<i32> {
    i32::try_from(count).map_err(|_| Error::limit("names in a v22 trace", count, i32::MAX))
}
