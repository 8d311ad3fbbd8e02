//! Codec of `Type` and `AccessLocation`.

use std::io::{self, Write};

use crate::common::PhysicalOffset;
use crate::common::{AccessPathId, FieldId, VariableId};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::bytes::{ByteReader, WriteBigEndian};
use crate::model::{AccessLocation, Type};

/// Deepest nesting of array types or values a decoder follows (the JVM allows
/// 255 array dimensions).
pub const MAX_NESTING: usize = 255;

impl<'a> Type<'a> {
    /// Decodes a `Type` (tag byte, then an element type or a class name).
    pub fn decode(reader: &mut ByteReader<'a>) -> Result<Self, DecodeError> {
        // Arrays nest by prefix: count the dimensions, then wrap iteratively.
        let mut dimensions = 0usize;
        let start = reader.offset();
        let base = loop {
            let tag = reader.u8()?;
            let base = match tag {
                0 => {
                    dimensions += 1;
                    if dimensions > MAX_NESTING {
                        return Err(DecodeError::new(
                            PhysicalOffset(start),
                            DecodeErrorKind::TooDeep(MAX_NESTING),
                        ));
                    }
                    continue;
                }
                1 => Type::Boolean,
                2 => Type::Byte,
                3 => Type::Char,
                4 => Type::Double,
                5 => Type::Float,
                6 => Type::Int,
                7 => Type::Long,
                8 => Type::Object(reader.utf()?),
                9 => Type::Short,
                10 => Type::Void,
                other => {
                    return Err(DecodeError::new(
                        PhysicalOffset(reader.offset() - 1),
                        DecodeErrorKind::UnknownTypeTag(other),
                    ));
                }
            };
            break base;
        };
        Ok((0..dimensions).fold(base, |element, _| Type::Array(Box::new(element))))
    }

    /// Encodes the type.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        let mut current = self;
        while let Type::Array(element) = current {
            out.put_u8(0)?;
            current = element;
        }
        match current {
            Type::Array(_) => unreachable!("arrays unwrapped above"),
            Type::Boolean => out.put_u8(1),
            Type::Byte => out.put_u8(2),
            Type::Char => out.put_u8(3),
            Type::Double => out.put_u8(4),
            Type::Float => out.put_u8(5),
            Type::Int => out.put_u8(6),
            Type::Long => out.put_u8(7),
            Type::Object(name) => {
                out.put_u8(8)?;
                out.put_utf(name)
            }
            Type::Short => out.put_u8(9),
            Type::Void => out.put_u8(10),
        }
    }
}

impl AccessLocation {
    /// Decodes an access location (tag byte and an `i32`).
    pub fn decode(reader: &mut ByteReader<'_>) -> Result<Self, DecodeError> {
        let tag = reader.u8()?;
        let tag_offset = reader.offset() - 1;
        let value = reader.i32()?;
        Ok(match tag {
            0 => AccessLocation::Local(VariableId(value)),
            1 => AccessLocation::StaticField(FieldId(value)),
            2 => AccessLocation::ObjectField(FieldId(value)),
            3 => AccessLocation::ArrayIndex(value),
            4 => AccessLocation::ArrayElementByName(AccessPathId(value)),
            other => {
                return Err(DecodeError::new(
                    PhysicalOffset(tag_offset),
                    DecodeErrorKind::UnknownAccessLocationTag(other),
                ));
            }
        })
    }

    /// Encodes the access location.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        let (tag, value) = match *self {
            AccessLocation::Local(id) => (0, id.0),
            AccessLocation::StaticField(id) => (1, id.0),
            AccessLocation::ObjectField(id) => (2, id.0),
            AccessLocation::ArrayIndex(index) => (3, index),
            AccessLocation::ArrayElementByName(id) => (4, id.0),
        };
        out.put_u8(tag)?;
        out.put_i32(value)
    }
}
