//! Codec of values (`V`): an `i32` code, then a payload.

use std::io::{self, Write};

use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::bytes::{ByteReader, WriteBigEndian, preallocation};
use crate::format::offset::ClassId;
use crate::format::skip::Cursor;
use crate::format::types::MAX_NESTING;
use crate::model::Value;

/// Value codes of the format.
mod code {
    pub const NULL: i32 = -1;
    pub const VOID: i32 = -2;
    pub const BYTE: i32 = -3;
    pub const SHORT: i32 = -4;
    pub const INT: i32 = -5;
    pub const LONG: i32 = -6;
    pub const FLOAT: i32 = -7;
    pub const DOUBLE: i32 = -8;
    pub const CHAR: i32 = -9;
    pub const STRING: i32 = -10;
    pub const KOTLIN_UNIT: i32 = -11;
    pub const RAW_STRING: i32 = -12;
    pub const BOOLEAN: i32 = -13;
    pub const JAVA_CLASS: i32 = -14;
    pub const KOTLIN_CLASS: i32 = -15;
    pub const STRING_BUILDER: i32 = -16;
}

impl<'a> Value<'a> {
    /// Decodes one value.
    pub fn decode(reader: &mut ByteReader<'a>) -> Result<Self, DecodeError> {
        Self::decode_nested(reader, 0)
    }

    fn decode_nested(reader: &mut ByteReader<'a>, depth: usize) -> Result<Self, DecodeError> {
        let start = reader.offset();
        if depth > MAX_NESTING {
            return Err(DecodeError::new(
                start,
                DecodeErrorKind::TooDeep(MAX_NESTING),
            ));
        }
        let value_code = reader.i32()?;
        Ok(match value_code {
            code::NULL => Value::Null,
            code::VOID => Value::Void,
            code::BYTE => Value::Byte(reader.i8()?),
            code::SHORT => Value::Short(reader.i16()?),
            code::INT => Value::Int(reader.i32()?),
            code::LONG => Value::Long(reader.i64()?),
            code::FLOAT => Value::Float(reader.i32()? as u32),
            code::DOUBLE => Value::Double(reader.i64()? as u64),
            code::CHAR => Value::Char(reader.u16()?),
            code::STRING => Value::String(reader.utf()?),
            code::KOTLIN_UNIT => Value::KotlinUnit,
            code::RAW_STRING => Value::RawString(reader.utf()?),
            code::BOOLEAN => Value::Boolean(reader.bool()?),
            code::JAVA_CLASS => Value::JavaClass(reader.utf()?),
            code::KOTLIN_CLASS => Value::KotlinClass(reader.utf()?),
            code::STRING_BUILDER => Value::StringBuilder {
                identity_hash: reader.i32()?,
                text: reader.utf()?,
            },
            class if class >= 0 => {
                let identity_hash = reader.i32()?;
                let count_offset = reader.offset();
                let count = reader.i32()?;
                if count >= 0 {
                    // Each field takes at least a 2-byte name and a 4-byte code.
                    let count =
                        reader.check_count(count_offset, "object field", count as i64, 6)?;
                    let mut fields = Vec::with_capacity(preallocation(count));
                    for _ in 0..count {
                        let name = reader.utf()?;
                        fields.push((name, Self::decode_nested(reader, depth + 1)?));
                    }
                    Value::Object {
                        class: ClassId(class),
                        identity_hash,
                        fields,
                    }
                } else {
                    let captured = -(count as i64) - 1;
                    let captured =
                        reader.check_count(count_offset, "array element", captured, 4)?;
                    let mut elements = Vec::with_capacity(preallocation(captured));
                    for _ in 0..captured {
                        elements.push(Self::decode_nested(reader, depth + 1)?);
                    }
                    Value::Array {
                        class: ClassId(class),
                        identity_hash,
                        elements,
                        total_size: reader.i32()?,
                    }
                }
            }
            unknown => {
                return Err(DecodeError::new(
                    start,
                    DecodeErrorKind::UnknownValueCode(unknown),
                ));
            }
        })
    }

    /// Skips one value as [`Value::decode`] reads it, checking the same
    /// things, without building it; `None` where decoding fails (decode
    /// then to learn why). `depth` is the nesting depth, as in decoding.
    pub(crate) fn skip(cursor: &mut Cursor<'_>, depth: usize) -> Option<()> {
        if depth > MAX_NESTING {
            return None;
        }
        match cursor.i32()? {
            code::NULL | code::VOID | code::KOTLIN_UNIT => Some(()),
            code::BYTE | code::BOOLEAN => cursor.advance(1),
            code::SHORT | code::CHAR => cursor.advance(2),
            code::INT | code::FLOAT => cursor.advance(4),
            code::LONG | code::DOUBLE => cursor.advance(8),
            code::STRING | code::RAW_STRING | code::JAVA_CLASS | code::KOTLIN_CLASS => cursor.utf(),
            code::STRING_BUILDER => {
                cursor.advance(4)?;
                cursor.utf()
            }
            class if class >= 0 => {
                cursor.advance(4)?;
                let count = cursor.i32()?;
                if count >= 0 {
                    for _ in 0..cursor.count(count as i64, 6)? {
                        cursor.utf()?;
                        Self::skip(cursor, depth + 1)?;
                    }
                } else {
                    for _ in 0..cursor.count(-(count as i64) - 1, 4)? {
                        Self::skip(cursor, depth + 1)?;
                    }
                    cursor.advance(4)?;
                }
                Some(())
            }
            _ => None,
        }
    }

    /// Encodes the value.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        match self {
            Value::Null => out.put_i32(code::NULL),
            Value::Void => out.put_i32(code::VOID),
            Value::Byte(v) => {
                out.put_i32(code::BYTE)?;
                out.put_i8(*v)
            }
            Value::Short(v) => {
                out.put_i32(code::SHORT)?;
                out.put_i16(*v)
            }
            Value::Int(v) => {
                out.put_i32(code::INT)?;
                out.put_i32(*v)
            }
            Value::Long(v) => {
                out.put_i32(code::LONG)?;
                out.put_i64(*v)
            }
            Value::Float(bits) => {
                out.put_i32(code::FLOAT)?;
                out.put_i32(*bits as i32)
            }
            Value::Double(bits) => {
                out.put_i32(code::DOUBLE)?;
                out.put_i64(*bits as i64)
            }
            Value::Char(v) => {
                out.put_i32(code::CHAR)?;
                out.put_u16(*v)
            }
            Value::String(s) => {
                out.put_i32(code::STRING)?;
                out.put_utf(s)
            }
            Value::KotlinUnit => out.put_i32(code::KOTLIN_UNIT),
            Value::RawString(s) => {
                out.put_i32(code::RAW_STRING)?;
                out.put_utf(s)
            }
            Value::Boolean(v) => {
                out.put_i32(code::BOOLEAN)?;
                out.put_bool(*v)
            }
            Value::JavaClass(s) => {
                out.put_i32(code::JAVA_CLASS)?;
                out.put_utf(s)
            }
            Value::KotlinClass(s) => {
                out.put_i32(code::KOTLIN_CLASS)?;
                out.put_utf(s)
            }
            Value::StringBuilder {
                identity_hash,
                text,
            } => {
                out.put_i32(code::STRING_BUILDER)?;
                out.put_i32(*identity_hash)?;
                out.put_utf(text)
            }
            Value::Object {
                class,
                identity_hash,
                fields,
            } => {
                out.put_i32(class.0)?;
                out.put_i32(*identity_hash)?;
                out.put_i32(len_i32(fields.len())?)?;
                for (name, value) in fields {
                    out.put_utf(name)?;
                    value.encode(out)?;
                }
                Ok(())
            }
            Value::Array {
                class,
                identity_hash,
                elements,
                total_size,
            } => {
                out.put_i32(class.0)?;
                out.put_i32(*identity_hash)?;
                out.put_i32(-len_i32(elements.len())? - 1)?;
                for element in elements {
                    element.encode(out)?;
                }
                out.put_i32(*total_size)
            }
        }
    }
}

/// A collection length as the format's `i32` count.
pub(crate) fn len_i32(len: usize) -> io::Result<i32> {
    i32::try_from(len)
        .ok()
        .filter(|&n| n < i32::MAX)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "too many elements"))
}
