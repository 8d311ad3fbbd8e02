//! Reference objects: the thread-neutral, immutable objects tracepoints
//! refer to by id (kinds 0–7 of the format).

use crate::common::{
    AccessPathId, ClassId, CodeLocationId, FieldId, MethodId, StringId, ThreadId, VariableId,
};
use crate::model::{AccessLocation, JavaStr, Type};

/// `THREAD_NAME`: the name of a recorded thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadName<'a> {
    /// The thread.
    pub thread: ThreadId,
    /// Its name.
    pub name: JavaStr<'a>,
}

/// `CLASS_DESCRIPTOR`: a class by its binary name (`java.lang.String`, `[I`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassDescriptor<'a> {
    /// Its id.
    pub id: ClassId,
    /// Its JVM name.
    pub name: JavaStr<'a>,
}

/// `METHOD_DESCRIPTOR`: a method of a class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodDescriptor<'a> {
    /// Its id.
    pub id: MethodId,
    /// The declaring class.
    pub class: ClassId,
    /// The method name (`<init>` for constructors).
    pub name: JavaStr<'a>,
    /// The return type.
    pub return_type: Type<'a>,
    /// Parameter types.
    pub parameter_types: Vec<Type<'a>>,
}

/// `FIELD_DESCRIPTOR`: a field of a class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDescriptor<'a> {
    /// Its id.
    pub id: FieldId,
    /// The declaring class.
    pub class: ClassId,
    /// The field name.
    pub name: JavaStr<'a>,
    /// The field type.
    pub field_type: Type<'a>,
    /// `static`.
    pub is_static: bool,
    /// `final`.
    pub is_final: bool,
    /// `volatile`.
    pub is_volatile: bool,
}

/// `VARIABLE_DESCRIPTOR`: a local variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableDescriptor<'a> {
    /// Its id.
    pub id: VariableId,
    /// The variable name.
    pub name: JavaStr<'a>,
    /// Its type.
    pub variable_type: Type<'a>,
}

/// `STRING`: a string shared by code locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StringObject<'a> {
    /// Its id.
    pub id: StringId,
    /// The text.
    pub value: JavaStr<'a>,
}

/// `ACCESS_PATH`: how a value was reached, outermost step first (`grid[i][0]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessPath {
    /// Its id.
    pub id: AccessPathId,
    /// The steps.
    pub locations: Vec<AccessLocation>,
}

/// The kind of a code location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeLocationKind {
    /// A plain line.
    Line = 0,
    /// A field, variable or array access.
    Access = 1,
    /// A method call site.
    MethodCall = 2,
}

/// The kind of a local variable visible at a code location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocalKind {
    /// `this`.
    This = 0,
    /// A method parameter.
    Parameter = 1,
    /// A local variable.
    Variable = 2,
}

/// A local visible at a code location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocalName {
    /// The name, as a `STRING` id.
    pub name: StringId,
    /// What it is.
    pub kind: LocalKind,
}

/// `CODE_LOCATION`: where in the source a tracepoint happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeLocation {
    /// Its kind.
    pub kind: CodeLocationKind,
    /// Its id.
    pub id: CodeLocationId,
    /// The source file name (`STRING` id, −1 = unknown).
    pub file_name: StringId,
    /// The class name (`STRING` id, −1 = unknown).
    pub class_name: StringId,
    /// The method name (`STRING` id, −1 = unknown).
    pub method_name: StringId,
    /// The line number.
    pub line: i32,
    /// The access path of the accessed value or call receiver, if any.
    pub access_path: Option<AccessPathId>,
    /// Access paths naming each call argument (empty: no argument names).
    pub argument_paths: Vec<Option<AccessPathId>>,
    /// Locals visible here.
    pub locals: Vec<LocalName>,
}

impl<'a> ThreadName<'a> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> ThreadName<'static> {
        ThreadName {
            thread: self.thread,
            name: self.name.into_owned(),
        }
    }
}

impl<'a> ClassDescriptor<'a> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> ClassDescriptor<'static> {
        ClassDescriptor {
            id: self.id,
            name: self.name.into_owned(),
        }
    }
}

impl<'a> MethodDescriptor<'a> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> MethodDescriptor<'static> {
        MethodDescriptor {
            id: self.id,
            class: self.class,
            name: self.name.into_owned(),
            return_type: self.return_type.into_owned(),
            parameter_types: self
                .parameter_types
                .into_iter()
                .map(Type::into_owned)
                .collect(),
        }
    }
}

impl<'a> FieldDescriptor<'a> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> FieldDescriptor<'static> {
        FieldDescriptor {
            id: self.id,
            class: self.class,
            name: self.name.into_owned(),
            field_type: self.field_type.into_owned(),
            is_static: self.is_static,
            is_final: self.is_final,
            is_volatile: self.is_volatile,
        }
    }
}

impl<'a> VariableDescriptor<'a> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> VariableDescriptor<'static> {
        VariableDescriptor {
            id: self.id,
            name: self.name.into_owned(),
            variable_type: self.variable_type.into_owned(),
        }
    }
}

impl<'a> StringObject<'a> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> StringObject<'static> {
        StringObject {
            id: self.id,
            value: self.value.into_owned(),
        }
    }
}
