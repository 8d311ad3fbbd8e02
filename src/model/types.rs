//! JVM types and access locations, as reference objects use them.

use crate::common::{AccessPathId, FieldId, VariableId};
use crate::model::JavaStr;

/// A JVM type, as written in method, field and variable descriptors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type<'a> {
    /// An array of the element type.
    Array(Box<Type<'a>>),
    /// `boolean`.
    Boolean,
    /// `byte`.
    Byte,
    /// `char`.
    Char,
    /// `double`.
    Double,
    /// `float`.
    Float,
    /// `int`.
    Int,
    /// `long`.
    Long,
    /// An object of the named class.
    Object(JavaStr<'a>),
    /// `short`.
    Short,
    /// `void`.
    Void,
}

impl Type<'_> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> Type<'static> {
        match self {
            Type::Array(element) => Type::Array(Box::new(element.into_owned())),
            Type::Boolean => Type::Boolean,
            Type::Byte => Type::Byte,
            Type::Char => Type::Char,
            Type::Double => Type::Double,
            Type::Float => Type::Float,
            Type::Int => Type::Int,
            Type::Long => Type::Long,
            Type::Object(name) => Type::Object(name.into_owned()),
            Type::Short => Type::Short,
            Type::Void => Type::Void,
        }
    }
}

/// One step of an access path: how a value was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessLocation {
    /// A local variable.
    Local(VariableId),
    /// A static field.
    StaticField(FieldId),
    /// A field of an object.
    ObjectField(FieldId),
    /// An array element at a constant index.
    ArrayIndex(i32),
    /// An array element at an index named by another access path.
    ArrayElementByName(AccessPathId),
}
