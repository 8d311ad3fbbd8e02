//! Values decoded by the layouts of a chunk's metadata, and skipped by
//! them.
//!
//! A value of a primitive type is stored as its kind says ([`Kind`]); a
//! field marked `constantPool` holds only a key into its type's pool; an
//! array field is a count then its elements; a value of any other type is
//! its fields, one after another (nested types inline). Decoding recurses
//! through nested types only, whose depth the metadata fixes; a depth past
//! [`MAX_NESTING`] (only hostile metadata makes one) is an error.

use super::input::{Input, JfrResult, JfrString};
use super::metadata::{Field, Kind, Metadata};

/// Nested inline types deeper than this are refused.
pub const MAX_NESTING: usize = 32;

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// `boolean`.
    Boolean(bool),
    /// `byte`.
    Byte(i8),
    /// `char`.
    Char(u16),
    /// `short`.
    Short(i16),
    /// `int`.
    Int(i32),
    /// `long`.
    Long(i64),
    /// `float`.
    Float(f32),
    /// `double`.
    Double(f64),
    /// `java.lang.String`.
    String(JfrString<'a>),
    /// A key into the constant pool of the type at index `class`.
    Ref {
        /// The type's index in the metadata.
        class: u32,
        /// The key.
        key: i64,
    },
    /// A value of a type with fields, stored inline.
    Struct {
        /// The type's index in the metadata.
        class: u32,
        /// The fields' values, in the type's order.
        fields: Vec<Value<'a>>,
    },
    /// An array.
    Array(Vec<Value<'a>>),
}

impl Value<'_> {
    /// The value as a signed integer, for every integer kind.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Byte(v) => Some(v.into()),
            Value::Char(v) => Some(v.into()),
            Value::Short(v) => Some(v.into()),
            Value::Int(v) => Some(v.into()),
            Value::Long(v) => Some(v),
            _ => None,
        }
    }

    /// The pool key of a reference.
    pub fn as_ref_key(&self) -> Option<i64> {
        match *self {
            Value::Ref { key, .. } => Some(key),
            _ => None,
        }
    }
}

/// Reads the value of `field`.
#[inline(always)]
pub fn read_field<'a>(
    metadata: &Metadata,
    input: &mut Input<'a>,
    field: &Field,
    depth: usize,
) -> JfrResult<Value<'a>> {
    if field.array {
        let count = input.count(1, "array element")?;
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            items.push(read_one(metadata, input, field, depth)?);
        }
        Ok(Value::Array(items))
    } else {
        read_one(metadata, input, field, depth)
    }
}

#[inline(always)]
fn read_one<'a>(
    metadata: &Metadata,
    input: &mut Input<'a>,
    field: &Field,
    depth: usize,
) -> JfrResult<Value<'a>> {
    if field.pooled {
        Ok(Value::Ref {
            class: field.class,
            key: input.long()?,
        })
    } else {
        read_value(metadata, input, field.class, field.kind, depth)
    }
}

/// Reads a value of the type at `class` (of kind `kind`), stored inline.
#[inline(always)]
pub fn read_value<'a>(
    metadata: &Metadata,
    input: &mut Input<'a>,
    class: u32,
    kind: Kind,
    depth: usize,
) -> JfrResult<Value<'a>> {
    Ok(match kind {
        Kind::Boolean => Value::Boolean(input.u8()? != 0),
        Kind::Byte => Value::Byte(input.u8()? as i8),
        Kind::Char => Value::Char(input.char()?),
        Kind::Short => Value::Short(input.short()?),
        Kind::Int => Value::Int(input.int()?),
        Kind::Long => Value::Long(input.long()?),
        Kind::Float => Value::Float(f32::from_bits(input.raw_u32()?)),
        Kind::Double => Value::Double(f64::from_bits(input.raw_u64()?)),
        Kind::String => Value::String(input.string()?),
        Kind::Struct => {
            let mut fields = Vec::new();
            read_fields(metadata, input, class, depth, &mut fields)?;
            Value::Struct { class, fields }
        }
    })
}

/// Reads the fields of a value of the type at `class` into `out` (cleared
/// first), so a caller decoding many events reuses one buffer.
pub fn read_fields<'a>(
    metadata: &Metadata,
    input: &mut Input<'a>,
    class: u32,
    depth: usize,
    out: &mut Vec<Value<'a>>,
) -> JfrResult<()> {
    if depth >= MAX_NESTING {
        return Err(input.error("types nested too deep"));
    }
    out.clear();
    let fields = &metadata.class(class).fields;
    out.reserve(fields.len());
    for field in fields {
        out.push(read_field(metadata, input, field, depth + 1)?);
    }
    Ok(())
}

/// Skips the value of `field`.
pub fn skip_field(
    metadata: &Metadata,
    input: &mut Input<'_>,
    field: &Field,
    depth: usize,
) -> JfrResult<()> {
    let count = if field.array {
        input.count(1, "array element")?
    } else {
        1
    };
    for _ in 0..count {
        if field.pooled {
            input.long()?;
        } else {
            skip_value(metadata, input, field.class, field.kind, depth)?;
        }
    }
    Ok(())
}

/// Skips a value of the type at `class` (of kind `kind`), stored inline.
pub fn skip_value(
    metadata: &Metadata,
    input: &mut Input<'_>,
    class: u32,
    kind: Kind,
    depth: usize,
) -> JfrResult<()> {
    match kind {
        Kind::Boolean | Kind::Byte => input.u8().map(drop),
        Kind::Char | Kind::Short => input.short().map(drop),
        Kind::Int => input.int().map(drop),
        Kind::Long => input.long().map(drop),
        Kind::Float => input.bytes(4).map(drop),
        Kind::Double => input.bytes(8).map(drop),
        Kind::String => input.skip_string(),
        Kind::Struct => {
            if depth >= MAX_NESTING {
                return Err(input.error("types nested too deep"));
            }
            for field in &metadata.class(class).fields {
                skip_field(metadata, input, field, depth + 1)?;
            }
            Ok(())
        }
    }
}
