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

use crate::error::Result;
use crate::format::offset::{
    AccessPathId, ClassId, CodeLocationId, FieldId, MethodId, StringId, VariableId,
};
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

/// Writes what `tracepoint` refers to and `sink` lacks, from `pool`.
pub(crate) fn before_tracepoint(
    pool: &ReferencePool,
    sink: &mut impl ReferenceSink,
    tracepoint: &Tracepoint<'_>,
) -> Result<()> {
    let mut writer = Dependencies { pool, sink };
    writer.code_location(tracepoint.header.code_location)?;
    match &tracepoint.body {
        TracepointBody::MethodCall {
            method,
            receiver,
            arguments,
            ..
        } => {
            writer.method(*method)?;
            writer.value(receiver)?;
            arguments.iter().try_for_each(|v| writer.value(v))
        }
        TracepointBody::Loop { .. } | TracepointBody::LoopIteration { .. } => Ok(()),
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
            writer.field(*field)?;
            writer.value(receiver)?;
            writer.value(value)
        }
        TracepointBody::ReadArray { array, value, .. }
        | TracepointBody::WriteArray { array, value, .. } => {
            writer.value(array)?;
            writer.value(value)
        }
        TracepointBody::ReadLocal { variable, value }
        | TracepointBody::WriteLocal { variable, value } => {
            writer.variable(*variable)?;
            writer.value(value)
        }
        TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
            writer.value(exception)
        }
        TracepointBody::SnapshotBreakpoint { stack, values, .. } => {
            stack.iter().try_for_each(|&l| writer.code_location(l))?;
            values.iter().try_for_each(|v| writer.value(v))
        }
    }
}

/// Writes what `footer` refers to (a call result's classes) and `sink` lacks.
pub(crate) fn before_footer(
    pool: &ReferencePool,
    sink: &mut impl ReferenceSink,
    footer: &Footer<'_>,
) -> Result<()> {
    match footer {
        Footer::MethodCall { result, .. } => Dependencies { pool, sink }.value(result),
        Footer::Loop { .. } | Footer::LoopIteration => Ok(()),
    }
}

struct Dependencies<'a, S> {
    pool: &'a ReferencePool,
    sink: &'a mut S,
}

// Each `first_use` check is inlined into the walk (on a hot path the answer
// is almost always "already written"); writing an object is out of line.
impl<S: ReferenceSink> Dependencies<'_, S> {
    /// The classes of an object or array value and of what it holds.
    #[inline]
    fn value(&mut self, value: &Value<'_>) -> Result<()> {
        match value {
            Value::Object { class, fields, .. } if fields.is_empty() => self.class(*class),
            Value::Object { .. } | Value::Array { .. } => self.object_value(value),
            // Other values refer to nothing.
            _ => Ok(()),
        }
    }

    fn object_value(&mut self, value: &Value<'_>) -> Result<()> {
        match value {
            Value::Object { class, fields, .. } => {
                self.class(*class)?;
                fields.iter().try_for_each(|(_, v)| self.value(v))
            }
            Value::Array {
                class, elements, ..
            } => {
                self.class(*class)?;
                elements.iter().try_for_each(|v| self.value(v))
            }
            _ => Ok(()),
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
