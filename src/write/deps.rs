//! The order every writer writes reference objects in, as the reference
//! writers do: before a tracepoint or footer, each reference object it refers
//! to that is not written yet, dependencies first — a method's or field's
//! class before it; a code location's file, class and method names, then its
//! access path, argument paths and local names; an access path's variables
//! and fields, nested paths first.
//!
//! What "written yet" means is the writer's: the dump writer writes each
//! object once per file, the streaming writer once per block unless it is
//! already on disk. A writer says so through [`ReferenceSink`].

use std::collections::HashSet;
use std::ops::ControlFlow;

use crate::common::{
    AccessPathId, ClassId, CodeLocationId, FieldId, MethodId, StringId, VariableId,
};
use crate::error::{Error, Result};
use crate::format::{Object, ObjectKind};
use crate::model::{AccessLocation, Footer, StringObject, Tracepoint, TracepointBody, Value};
use crate::write::pool::ReferencePool;

/// Where a writer's reference objects go.
pub(crate) trait ReferenceSink {
    /// Whether object `id` of `kind` must be written now; if so, it counts as
    /// written from now on (the caller writes it right after its
    /// dependencies).
    fn first_use(&mut self, kind: ObjectKind, id: i32) -> bool;

    /// Writes a reference object whose dependencies are written.
    fn reference(&mut self, object: &Object<'_>) -> Result<()>;
}

/// Calls `visit` with each reference object `tracepoint` names itself, in
/// the order the writers write them: its code location (unless unknown),
/// then what its body names (a method, field or variable, then the classes
/// of its object and array values, outer first). The objects these depend
/// on are not visited: [`before_tracepoint`] writes them.
///
/// Inlined into each caller, so a writer's "is everything written?" probe
/// on its hot path is a few tests, with no call per id.
#[inline(always)]
pub(crate) fn tracepoint_references<B>(
    tracepoint: &Tracepoint<'_>,
    visit: &mut impl FnMut(ObjectKind, i32) -> ControlFlow<B>,
) -> ControlFlow<B> {
    let location = tracepoint.header.code_location;
    // −1 (unknown) is not an object.
    if location.0 != -1 {
        visit(ObjectKind::CodeLocation, location.0)?;
    }
    match &tracepoint.body {
        TracepointBody::MethodCall {
            method,
            receiver,
            arguments,
            ..
        } => {
            visit(ObjectKind::MethodDescriptor, method.0)?;
            value_references(receiver, visit)?;
            arguments
                .iter()
                .try_for_each(|value| value_references(value, visit))
        }
        TracepointBody::Loop { .. } | TracepointBody::LoopIteration { .. } => {
            ControlFlow::Continue(())
        }
        TracepointBody::ReadField {
            field,
            receiver,
            value,
        }
        | TracepointBody::WriteField {
            field,
            receiver,
            value,
        } => {
            visit(ObjectKind::FieldDescriptor, field.0)?;
            value_references(receiver, visit)?;
            value_references(value, visit)
        }
        TracepointBody::ReadArray { array, value, .. }
        | TracepointBody::WriteArray { array, value, .. } => {
            value_references(array, visit)?;
            value_references(value, visit)
        }
        TracepointBody::ReadLocal { variable, value }
        | TracepointBody::WriteLocal { variable, value } => {
            visit(ObjectKind::VariableDescriptor, variable.0)?;
            value_references(value, visit)
        }
        TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
            value_references(exception, visit)
        }
        TracepointBody::SnapshotBreakpoint { stack, values, .. } => {
            for location in stack.iter().filter(|location| location.0 != -1) {
                visit(ObjectKind::CodeLocation, location.0)?;
            }
            values
                .iter()
                .try_for_each(|value| value_references(value, visit))
        }
    }
}

/// Calls `visit` with each reference object `footer` names: the classes of
/// a call's result.
#[inline(always)]
pub(crate) fn footer_references<B>(
    footer: &Footer<'_>,
    visit: &mut impl FnMut(ObjectKind, i32) -> ControlFlow<B>,
) -> ControlFlow<B> {
    match footer {
        Footer::MethodCall { result, .. } => value_references(result, visit),
        Footer::Loop { .. } | Footer::LoopIteration => ControlFlow::Continue(()),
    }
}

/// The classes of an object or array value and of what it holds, outer
/// first; other values name nothing.
#[inline(always)]
fn value_references<B>(
    value: &Value<'_>,
    visit: &mut impl FnMut(ObjectKind, i32) -> ControlFlow<B>,
) -> ControlFlow<B> {
    match value {
        Value::Object { class, fields, .. } => {
            visit(ObjectKind::ClassDescriptor, class.0)?;
            if fields.is_empty() {
                return ControlFlow::Continue(());
            }
            nested_references(value, visit)
        }
        Value::Array { .. } => nested_references(value, visit),
        _ => ControlFlow::Continue(()),
    }
}

/// [`value_references`] for what an object holds, or for an array: out of
/// line (it recurses).
fn nested_references<B>(
    value: &Value<'_>,
    visit: &mut impl FnMut(ObjectKind, i32) -> ControlFlow<B>,
) -> ControlFlow<B> {
    match value {
        Value::Object { fields, .. } => fields
            .iter()
            .try_for_each(|(_, value)| value_references(value, visit)),
        Value::Array {
            class, elements, ..
        } => {
            visit(ObjectKind::ClassDescriptor, class.0)?;
            elements
                .iter()
                .try_for_each(|value| value_references(value, visit))
        }
        _ => ControlFlow::Continue(()),
    }
}

/// Writes what `tracepoint` refers to and `sink` lacks, from `pool`.
pub(crate) fn before_tracepoint(
    pool: &ReferencePool,
    sink: &mut impl ReferenceSink,
    tracepoint: &Tracepoint<'_>,
) -> Result<()> {
    let mut writer = Dependencies { pool, sink };
    into_result(tracepoint_references(tracepoint, &mut |kind, id| {
        writer.named(kind, id)
    }))
}

/// Writes what `footer` refers to (a call result's classes) and `sink` lacks.
pub(crate) fn before_footer(
    pool: &ReferencePool,
    sink: &mut impl ReferenceSink,
    footer: &Footer<'_>,
) -> Result<()> {
    let mut writer = Dependencies { pool, sink };
    into_result(footer_references(footer, &mut |kind, id| {
        writer.named(kind, id)
    }))
}

fn into_result(flow: ControlFlow<Error>) -> Result<()> {
    match flow {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(error) => Err(error),
    }
}

struct Dependencies<'a, S> {
    pool: &'a ReferencePool,
    sink: &'a mut S,
}

// Each `first_use` check is inlined into the walk (on a hot path the answer
// is almost always "already written"); writing an object is out of line.
impl<S: ReferenceSink> Dependencies<'_, S> {
    /// Writes object `id` of `kind`, named by a tracepoint or footer, and
    /// what it depends on, unless the sink has it.
    #[inline]
    fn named(&mut self, kind: ObjectKind, id: i32) -> ControlFlow<Error> {
        let written = match kind {
            ObjectKind::CodeLocation => self.code_location(CodeLocationId(id)),
            ObjectKind::MethodDescriptor => self.method(MethodId(id)),
            ObjectKind::FieldDescriptor => self.field(FieldId(id)),
            ObjectKind::VariableDescriptor => self.variable(VariableId(id)),
            ObjectKind::ClassDescriptor => self.class(ClassId(id)),
            // Not named by tracepoints and footers.
            _ => Ok(()),
        };
        match written {
            Ok(()) => ControlFlow::Continue(()),
            Err(error) => ControlFlow::Break(error),
        }
    }

    #[inline]
    fn class(&mut self, id: ClassId) -> Result<()> {
        if !self.sink.first_use(ObjectKind::ClassDescriptor, id.0) {
            return Ok(());
        }
        self.write_class(id)
    }

    #[inline(never)]
    fn write_class(&mut self, id: ClassId) -> Result<()> {
        let class = self.pool.class(id)?;
        self.sink.reference(&Object::ClassDescriptor(class))
    }

    #[inline]
    fn method(&mut self, id: MethodId) -> Result<()> {
        if !self.sink.first_use(ObjectKind::MethodDescriptor, id.0) {
            return Ok(());
        }
        self.write_method(id)
    }

    #[inline(never)]
    fn write_method(&mut self, id: MethodId) -> Result<()> {
        let method = self.pool.method(id)?;
        self.class(method.class)?;
        self.sink.reference(&Object::MethodDescriptor(method))
    }

    #[inline]
    fn field(&mut self, id: FieldId) -> Result<()> {
        if !self.sink.first_use(ObjectKind::FieldDescriptor, id.0) {
            return Ok(());
        }
        self.write_field(id)
    }

    #[inline(never)]
    fn write_field(&mut self, id: FieldId) -> Result<()> {
        let field = self.pool.field(id)?;
        self.class(field.class)?;
        self.sink.reference(&Object::FieldDescriptor(field))
    }

    #[inline]
    fn variable(&mut self, id: VariableId) -> Result<()> {
        if !self.sink.first_use(ObjectKind::VariableDescriptor, id.0) {
            return Ok(());
        }
        self.write_variable(id)
    }

    #[inline(never)]
    fn write_variable(&mut self, id: VariableId) -> Result<()> {
        let variable = self.pool.variable(id)?;
        self.sink.reference(&Object::VariableDescriptor(variable))
    }

    /// A shared string; −1 (unknown) is not an object.
    fn string(&mut self, id: StringId) -> Result<()> {
        if id.0 == -1 || !self.sink.first_use(ObjectKind::String, id.0) {
            return Ok(());
        }
        let value = self.pool.string(id)?;
        self.sink
            .reference(&Object::String(StringObject { id, value }))
    }

    /// An access path: the paths it names by index first (depth-first,
    /// innermost first), then every variable and field of all those paths,
    /// then the paths themselves.
    fn access_path(&mut self, root: AccessPathId) -> Result<()> {
        let mut order = Vec::new();
        let mut visited: HashSet<i32> = HashSet::from([root.0]);
        // (path, index of the next location to look at)
        let mut stack = vec![(self.pool.access_path(root)?, 0)];
        while let Some((path, next)) = stack.last_mut() {
            match path.locations.get(*next) {
                Some(location) => {
                    *next += 1;
                    if let AccessLocation::ArrayElementByName(inner) = *location
                        && visited.insert(inner.0)
                    {
                        let inner = self.pool.access_path(inner)?;
                        stack.push((inner, 0));
                    }
                }
                None => {
                    if let Some((path, _)) = stack.pop() {
                        order.push(path);
                    }
                }
            }
        }
        for path in &order {
            for location in &path.locations {
                match *location {
                    AccessLocation::Local(variable) => self.variable(variable)?,
                    AccessLocation::StaticField(field) | AccessLocation::ObjectField(field) => {
                        self.field(field)?
                    }
                    AccessLocation::ArrayIndex(_) | AccessLocation::ArrayElementByName(_) => {}
                }
            }
        }
        for path in order {
            if self.sink.first_use(ObjectKind::AccessPath, path.id.0) {
                self.sink.reference(&Object::AccessPath(path))?;
            }
        }
        Ok(())
    }

    /// A code location; −1 (unknown) is not an object.
    #[inline]
    fn code_location(&mut self, id: CodeLocationId) -> Result<()> {
        if id.0 == -1 || !self.sink.first_use(ObjectKind::CodeLocation, id.0) {
            return Ok(());
        }
        self.write_code_location(id)
    }

    #[inline(never)]
    fn write_code_location(&mut self, id: CodeLocationId) -> Result<()> {
        let location = self.pool.code_location(id)?;
        self.string(location.file_name)?;
        self.string(location.class_name)?;
        self.string(location.method_name)?;
        if let Some(path) = location.access_path {
            self.access_path(path)?;
        }
        for path in location.argument_paths.iter().flatten() {
            self.access_path(*path)?;
        }
        for local in &location.locals {
            self.string(local.name)?;
        }
        self.sink.reference(&Object::CodeLocation(location))
    }
}
