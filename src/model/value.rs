//! Recorded values (the `V` of the format).

use crate::common::ClassId;
use crate::model::JavaStr;

/// A value captured by the recorder: an argument, a result, a read or written value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// `null` (code −1).
    Null,
    /// No value (code −2): the result of a `void` method.
    Void,
    /// `byte` (−3).
    Byte(i8),
    /// `short` (−4).
    Short(i16),
    /// `int` (−5).
    Int(i32),
    /// `long` (−6).
    Long(i64),
    /// `float` (−7), as its IEEE-754 bits so NaN payloads survive.
    Float(u32),
    /// `double` (−8), as its IEEE-754 bits.
    Double(u64),
    /// `char` (−9), one UTF-16 code unit.
    Char(u16),
    /// A `String` (−10), possibly cut by the recorder.
    String(JavaStr<'a>),
    /// Kotlin's `Unit` (−11).
    KotlinUnit,
    /// A value the recorder rendered itself (−12), printed as is.
    RawString(JavaStr<'a>),
    /// `boolean` (−13).
    Boolean(bool),
    /// A Java class literal (−14), by class name.
    JavaClass(JavaStr<'a>),
    /// A Kotlin class literal (−15), by class name.
    KotlinClass(JavaStr<'a>),
    /// A `StringBuilder` (−16) and its content.
    StringBuilder {
        /// The JVM identity hash code.
        identity_hash: i32,
        /// The builder's text.
        text: JavaStr<'a>,
    },
    /// An object of class `class` (code ≥ 0) with its captured fields.
    Object {
        /// The object's class descriptor.
        class: ClassId,
        /// The JVM identity hash code.
        identity_hash: i32,
        /// Captured fields, by name.
        fields: Vec<(JavaStr<'a>, Value<'a>)>,
    },
    /// An array of class `class` (code ≥ 0) with its first captured elements.
    Array {
        /// The array's class descriptor.
        class: ClassId,
        /// The JVM identity hash code.
        identity_hash: i32,
        /// Captured elements.
        elements: Vec<Value<'a>>,
        /// The array's full length.
        total_size: i32,
    },
}

impl Value<'_> {
    /// Whether the value holds no string and no nested value. Every
    /// variant is named, so that one added later is classed here.
    #[inline(always)]
    pub(crate) fn is_scalar(&self) -> bool {
        match self {
            Value::Null
            | Value::Void
            | Value::Byte(_)
            | Value::Short(_)
            | Value::Int(_)
            | Value::Long(_)
            | Value::Float(_)
            | Value::Double(_)
            | Value::Char(_)
            | Value::KotlinUnit
            | Value::Boolean(_) => true,
            Value::String(_)
            | Value::RawString(_)
            | Value::JavaClass(_)
            | Value::KotlinClass(_)
            | Value::StringBuilder { .. }
            | Value::Object { .. }
            | Value::Array { .. } => false,
        }
    }

    /// Whether dropping the value frees memory: captured fields or
    /// elements, or a string that does not borrow its bytes.
    #[inline(always)]
    pub(crate) fn owns_memory(&self) -> bool {
        match self {
            Value::String(text)
            | Value::RawString(text)
            | Value::JavaClass(text)
            | Value::KotlinClass(text)
            | Value::StringBuilder {
                identity_hash: _,
                text,
            } => text.owns_memory(),
            Value::Object {
                class: _,
                identity_hash: _,
                fields,
            } => fields.capacity() != 0,
            Value::Array {
                class: _,
                identity_hash: _,
                elements,
                total_size: _,
            } => elements.capacity() != 0,
            // Scalars own nothing; a variant that is not one and is not
            // named above is taken to own memory, and dropped.
            other => !other.is_scalar(),
        }
    }

    /// A copy that borrows nothing.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Null => Value::Null,
            Value::Void => Value::Void,
            Value::Byte(v) => Value::Byte(v),
            Value::Short(v) => Value::Short(v),
            Value::Int(v) => Value::Int(v),
            Value::Long(v) => Value::Long(v),
            Value::Float(v) => Value::Float(v),
            Value::Double(v) => Value::Double(v),
            Value::Char(v) => Value::Char(v),
            Value::String(s) => Value::String(s.into_owned()),
            Value::KotlinUnit => Value::KotlinUnit,
            Value::RawString(s) => Value::RawString(s.into_owned()),
            Value::Boolean(v) => Value::Boolean(v),
            Value::JavaClass(s) => Value::JavaClass(s.into_owned()),
            Value::KotlinClass(s) => Value::KotlinClass(s.into_owned()),
            Value::StringBuilder {
                identity_hash,
                text,
            } => Value::StringBuilder {
                identity_hash,
                text: text.into_owned(),
            },
            Value::Object {
                class,
                identity_hash,
                fields,
            } => Value::Object {
                class,
                identity_hash,
                fields: fields
                    .into_iter()
                    .map(|(name, value)| (name.into_owned(), value.into_owned()))
                    .collect(),
            },
            Value::Array {
                class,
                identity_hash,
                elements,
                total_size,
            } => Value::Array {
                class,
                identity_hash,
                elements: elements.into_iter().map(Value::into_owned).collect(),
                total_size,
            },
        }
    }

    /// The value as an `f32`, for [`Value::Float`].
    pub fn as_f32(&self) -> Option<f32> {
        match *self {
            Value::Float(bits) => Some(f32::from_bits(bits)),
            _ => None,
        }
    }

    /// The value as an `f64`, for [`Value::Double`].
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Double(bits) => Some(f64::from_bits(bits)),
            _ => None,
        }
    }
}
