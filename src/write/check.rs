//! Checks that what a caller hands a writer can be written and read back:
//! strings fit `writeUTF`, values and types nest no deeper than readers
//! follow, counts fit their fields.

use crate::error::{Error, Result};
use crate::format::{MAX_NESTING, Object};
use crate::model::{Footer, JavaStr, Tracepoint, TracepointBody, Type, Value};

/// Longest string `writeUTF` writes, in bytes of modified UTF-8.
pub(crate) const MAX_UTF_LEN: usize = u16::MAX as usize;

/// Fails with [`Error::StringTooLong`] if `text` does not fit `writeUTF`.
pub(crate) fn check_str(text: &JavaStr<'_>, what: &'static str) -> Result<()> {
    let len = text.as_bytes().len();
    if len > MAX_UTF_LEN {
        return Err(Error::StringTooLong { what, len });
    }
    Ok(())
}

/// The error for a value or type nested deeper than readers follow.
pub(crate) fn too_deep(what: &'static str) -> Error {
    Error::invalid(what, format!("nested deeper than {MAX_NESTING} levels"))
}

/// Checks a type's class name and array depth.
pub(crate) fn check_type(value: &Type<'_>, what: &'static str) -> Result<()> {
    let mut current = value;
    let mut dimensions = 0usize;
    while let Type::Array(element) = current {
        dimensions += 1;
        if dimensions > MAX_NESTING {
            return Err(too_deep(what));
        }
        current = element;
    }
    match current {
        Type::Object(name) => check_str(name, what),
        _ => Ok(()),
    }
}

/// Checks every string and the nesting of a value.
#[inline]
pub(crate) fn check_value(value: &Value<'_>) -> Result<()> {
    // Most values hold nothing to check.
    if value.is_scalar() {
        Ok(())
    } else {
        check_value_at(value, 0)
    }
}

fn check_value_at(value: &Value<'_>, depth: usize) -> Result<()> {
    if depth > MAX_NESTING {
        return Err(too_deep("value"));
    }
    match value {
        Value::String(s) | Value::RawString(s) => check_str(s, "string value"),
        Value::JavaClass(s) | Value::KotlinClass(s) => check_str(s, "class literal"),
        Value::StringBuilder { text, .. } => check_str(text, "StringBuilder text"),
        Value::Object { fields, .. } => {
            check_count(fields.len(), "object fields")?;
            for (name, field) in fields {
                check_str(name, "field name")?;
                check_value_at(field, depth + 1)?;
            }
            Ok(())
        }
        Value::Array { elements, .. } => {
            check_count(elements.len(), "array elements")?;
            for element in elements {
                check_value_at(element, depth + 1)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Checks that a collection's length fits the format's `i32` count.
pub(crate) fn check_count(len: usize, what: &'static str) -> Result<()> {
    if len >= i32::MAX as usize {
        return Err(Error::limit(what, len, i32::MAX - 1));
    }
    Ok(())
}

/// Checks a tracepoint's strings, values and counts.
pub(crate) fn check_tracepoint(tracepoint: &Tracepoint<'_>) -> Result<()> {
    if tracepoint.child_diff_statuses.len() > u8::MAX as usize {
        return Err(Error::limit(
            "child diff statuses of a container",
            tracepoint.child_diff_statuses.len(),
            u8::MAX,
        ));
    }
    if !tracepoint.is_container() && !tracepoint.child_diff_statuses.is_empty() {
        return Err(Error::invalid(
            "tracepoint",
            "a leaf tracepoint has no child diff statuses",
        ));
    }
    match &tracepoint.body {
        TracepointBody::MethodCall {
            receiver,
            arguments,
            ..
        } => {
            check_value(receiver)?;
            check_count(arguments.len(), "arguments")?;
            arguments.iter().try_for_each(check_value)
        }
        TracepointBody::ReadArray { array, value, .. }
        | TracepointBody::WriteArray { array, value, .. } => {
            check_value(array)?;
            check_value(value)
        }
        TracepointBody::ReadLocal { value, .. } | TracepointBody::WriteLocal { value, .. } => {
            check_value(value)
        }
        TracepointBody::ReadField {
            receiver, value, ..
        }
        | TracepointBody::WriteField {
            receiver, value, ..
        } => {
            check_value(receiver)?;
            check_value(value)
        }
        TracepointBody::Loop { .. } | TracepointBody::LoopIteration { .. } => Ok(()),
        TracepointBody::SnapshotBreakpoint {
            stack,
            values,
            trace_id,
            ..
        } => {
            check_count(stack.len(), "stack frames")?;
            check_count(values.len(), "captured values")?;
            values.iter().try_for_each(check_value)?;
            match trace_id {
                Some(id) => check_str(id, "trace id"),
                None => Ok(()),
            }
        }
        TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
            check_value(exception)
        }
    }
}

/// Checks a footer's strings and values.
pub(crate) fn check_footer(footer: &Footer<'_>) -> Result<()> {
    match footer {
        Footer::MethodCall { result, exception } => {
            check_value(result)?;
            check_str(exception, "exception class name")
        }
        Footer::Loop { .. } | Footer::LoopIteration => Ok(()),
    }
}

/// Checks a reference object's strings, types and counts.
pub(crate) fn check_reference(object: &Object<'_>) -> Result<()> {
    match object {
        Object::ThreadName(o) => check_str(&o.name, "thread name"),
        Object::ClassDescriptor(o) => check_str(&o.name, "class name"),
        Object::MethodDescriptor(o) => {
            check_str(&o.name, "method name")?;
            check_type(&o.return_type, "return type")?;
            check_count(o.parameter_types.len(), "parameter types")?;
            o.parameter_types
                .iter()
                .try_for_each(|t| check_type(t, "parameter type"))
        }
        Object::FieldDescriptor(o) => {
            check_str(&o.name, "field name")?;
            check_type(&o.field_type, "field type")
        }
        Object::VariableDescriptor(o) => {
            check_str(&o.name, "variable name")?;
            check_type(&o.variable_type, "variable type")
        }
        Object::String(o) => check_str(&o.value, "string"),
        Object::AccessPath(o) => check_count(o.locations.len(), "access locations"),
        Object::CodeLocation(o) => {
            check_count(o.argument_paths.len(), "arguments")?;
            check_count(o.locals.len(), "locals")
        }
        other => Err(Error::invalid(
            "reference object",
            format!("{} is not a reference object", other.kind()),
        )),
    }
}
