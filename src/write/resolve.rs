//! The inverse of interning: the specs that ids of a decoded trace stand
//! for, resolved through its [`TraceContext`]. Recording the resolved specs
//! again gives a trace equal up to the ids chosen.

use crate::common::PhysicalOffset;
use crate::common::{AccessPathId, CodeLocationId, FieldId, MethodId, StringId, VariableId};
use crate::error::{DecodeError, DecodeErrorKind, Error, Result};
use crate::format::TraceContext;
use crate::format::{MAX_NESTING, ObjectKind};
use crate::model::{AccessLocation, Footer, JavaStr, Value};
use crate::write::spec::{
    AccessPathSpec, AccessStep, CallOutcome, CodeLocationSpec, FieldSpec, LocalSpec, MethodSpec,
    ValueSpec, VariableSpec,
};

/// The result string the recorder writes for a call that never returned.
pub(crate) const UNFINISHED_METHOD: &str = "<unfinished method>";
/// The result string the recorder writes for a call whose end was not tracked.
pub(crate) const UNTRACKED_RESULT: &str = "<untracked result>";

impl ValueSpec<'static> {
    /// The spec of `value`, with class ids resolved to names.
    pub fn from_value(value: &Value<'_>, context: &TraceContext) -> Result<Self> {
        Ok(match value {
            Value::Null => ValueSpec::Null,
            Value::Void => ValueSpec::Void,
            Value::Byte(v) => ValueSpec::Byte(*v),
            Value::Short(v) => ValueSpec::Short(*v),
            Value::Int(v) => ValueSpec::Int(*v),
            Value::Long(v) => ValueSpec::Long(*v),
            Value::Float(bits) => ValueSpec::Float(*bits),
            Value::Double(bits) => ValueSpec::Double(*bits),
            Value::Char(unit) => ValueSpec::Char(*unit),
            Value::String(s) => ValueSpec::String(owned(s)),
            Value::KotlinUnit => ValueSpec::KotlinUnit,
            Value::RawString(s) => ValueSpec::RawString(owned(s)),
            Value::Boolean(v) => ValueSpec::Boolean(*v),
            Value::JavaClass(s) => ValueSpec::JavaClass(owned(s)),
            Value::KotlinClass(s) => ValueSpec::KotlinClass(owned(s)),
            Value::StringBuilder {
                identity_hash,
                text,
            } => ValueSpec::StringBuilder {
                identity_hash: *identity_hash,
                text: owned(text),
            },
            Value::Object {
                class,
                identity_hash,
                fields,
            } => ValueSpec::Object {
                class: owned(&context.class(*class)?.name),
                identity_hash: *identity_hash,
                fields: fields
                    .iter()
                    .map(|(name, value)| Ok((owned(name), Self::from_value(value, context)?)))
                    .collect::<Result<_>>()?,
            },
            Value::Array {
                class,
                identity_hash,
                elements,
                total_size,
            } => ValueSpec::Array {
                class: owned(&context.class(*class)?.name),
                identity_hash: *identity_hash,
                elements: elements
                    .iter()
                    .map(|value| Self::from_value(value, context))
                    .collect::<Result<_>>()?,
                total_size: *total_size,
            },
        })
    }
}

impl MethodSpec<'static> {
    /// The spec of method descriptor `id`.
    pub fn from_id(id: MethodId, context: &TraceContext) -> Result<Self> {
        let method = context.method(id)?;
        Ok(MethodSpec {
            class: owned(&context.class(method.class)?.name),
            name: method.name.clone(),
            parameter_types: method.parameter_types.clone(),
            return_type: method.return_type.clone(),
        })
    }
}

impl FieldSpec<'static> {
    /// The spec of field descriptor `id`.
    pub fn from_id(id: FieldId, context: &TraceContext) -> Result<Self> {
        let field = context.field(id)?;
        Ok(FieldSpec {
            class: owned(&context.class(field.class)?.name),
            name: field.name.clone(),
            field_type: field.field_type.clone(),
            is_static: field.is_static,
            is_final: field.is_final,
            is_volatile: field.is_volatile,
        })
    }
}

impl VariableSpec<'static> {
    /// The spec of variable descriptor `id`.
    pub fn from_id(id: VariableId, context: &TraceContext) -> Result<Self> {
        let variable = context.variable(id)?;
        Ok(VariableSpec {
            name: variable.name.clone(),
            variable_type: variable.variable_type.clone(),
        })
    }
}

impl AccessPathSpec<'static> {
    /// The spec of access path `id` (and of the paths it names by index).
    pub fn from_id(id: AccessPathId, context: &TraceContext) -> Result<Self> {
        Self::from_id_at(id, context, 0)
    }

    fn from_id_at(id: AccessPathId, context: &TraceContext, depth: usize) -> Result<Self> {
        if depth > MAX_NESTING {
            // Only a cycle of paths naming each other nests this deep.
            let offset = context
                .offset(ObjectKind::AccessPath, id.0)
                .map_or(0, |offset| offset.0);
            return Err(Error::Decode(DecodeError::new(
                PhysicalOffset(offset),
                DecodeErrorKind::TooDeep(MAX_NESTING),
            )));
        }
        let steps = context
            .access_path(id)?
            .locations
            .iter()
            .map(|location| {
                Ok(match *location {
                    AccessLocation::Local(variable) => {
                        AccessStep::Local(VariableSpec::from_id(variable, context)?)
                    }
                    AccessLocation::StaticField(field) => {
                        AccessStep::StaticField(FieldSpec::from_id(field, context)?)
                    }
                    AccessLocation::ObjectField(field) => {
                        AccessStep::ObjectField(FieldSpec::from_id(field, context)?)
                    }
                    AccessLocation::ArrayIndex(index) => AccessStep::ArrayIndex(index),
                    AccessLocation::ArrayElementByName(path) => {
                        AccessStep::ArrayElementByName(Self::from_id_at(path, context, depth + 1)?)
                    }
                })
            })
            .collect::<Result<_>>()?;
        Ok(AccessPathSpec { steps })
    }
}

fn optional_string(id: StringId, context: &TraceContext) -> Result<Option<JavaStr<'static>>> {
    if id.0 == -1 {
        return Ok(None);
    }
    context.string(id).map(|s| Some(s.clone()))
}

impl CodeLocationSpec<'static> {
    /// The spec of code location `id`; `None` for the unknown location −1.
    pub fn from_id(id: CodeLocationId, context: &TraceContext) -> Result<Option<Self>> {
        if id.0 == -1 {
            return Ok(None);
        }
        let location = context.code_location(id)?;
        let path = |id: Option<AccessPathId>| {
            id.map(|id| AccessPathSpec::from_id(id, context))
                .transpose()
        };
        Ok(Some(CodeLocationSpec {
            kind: location.kind,
            file: optional_string(location.file_name, context)?,
            class: optional_string(location.class_name, context)?,
            method: optional_string(location.method_name, context)?,
            line: location.line,
            access_path: path(location.access_path)?,
            arguments: location
                .argument_paths
                .iter()
                .map(|&id| path(id))
                .collect::<Result<_>>()?,
            locals: location
                .locals
                .iter()
                .map(|local| {
                    Ok(LocalSpec {
                        name: optional_string(local.name, context)?,
                        kind: local.kind,
                    })
                })
                .collect::<Result<_>>()?,
        }))
    }
}

impl CallOutcome<'static> {
    /// How the call a method-call footer closes ended (`None` for the
    /// footers of loops and iterations). A result that is the recorder's
    /// `<unfinished method>` or `<untracked result>` string reads as
    /// [`CallOutcome::Unfinished`] or [`CallOutcome::Untracked`].
    pub fn from_footer(footer: &Footer<'_>, context: &TraceContext) -> Result<Option<Self>> {
        let Footer::MethodCall { result, exception } = footer else {
            return Ok(None);
        };
        if !exception.is_empty() {
            return Ok(Some(CallOutcome::Threw(owned(exception))));
        }
        Ok(Some(match result {
            Value::String(text) if text.as_bytes() == UNFINISHED_METHOD.as_bytes() => {
                CallOutcome::Unfinished
            }
            Value::String(text) if text.as_bytes() == UNTRACKED_RESULT.as_bytes() => {
                CallOutcome::Untracked
            }
            result => CallOutcome::Returned(ValueSpec::from_value(result, context)?),
        }))
    }
}

fn owned(text: &JavaStr<'_>) -> JavaStr<'static> {
    text.clone().into_owned()
}
