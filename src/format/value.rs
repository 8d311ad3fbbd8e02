//! Codec of values (`V`): an `i32` code, then a payload. Encoding is
//! one-shot: `encoded_len` sizes (and checks) a value, `write_to` stores it.

use std::io::{self, Write};

use crate::common::ClassId;
use crate::common::PhysicalOffset;
use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::bytes::{
    ByteReader, SliceWriter, encode_sized_to, preallocation, unencodable, utf_len,
};
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

/// Marks a code without a fixed-size payload in [`FIXED_PAYLOAD`].
const NOT_FIXED: u8 = u8::MAX;

/// Payload bytes after each negative value code `-k`, at `k` (index 0 is
/// no code); [`NOT_FIXED`] where the payload has a length of its own
/// (strings) or the code is unknown. What `Value::decode` reads for them.
const FIXED_PAYLOAD: [u8; 17] = {
    let mut table = [NOT_FIXED; 17];
    table[-code::NULL as usize] = 0;
    table[-code::VOID as usize] = 0;
    table[-code::BYTE as usize] = 1;
    table[-code::SHORT as usize] = 2;
    table[-code::INT as usize] = 4;
    table[-code::LONG as usize] = 8;
    table[-code::FLOAT as usize] = 4;
    table[-code::DOUBLE as usize] = 8;
    table[-code::CHAR as usize] = 2;
    table[-code::KOTLIN_UNIT as usize] = 0;
    table[-code::BOOLEAN as usize] = 1;
    table
};

/// Stores a value code and its fixed-size payload (`$len` bytes in all) at
/// once.
macro_rules! coded {
    ($out:expr, $code:expr, $payload:expr, $len:literal) => {
        $out.fixed(|bytes: &mut [u8; $len]| {
            bytes[..4].copy_from_slice(&$code.to_be_bytes());
            bytes[4..].copy_from_slice(&$payload);
        })
    };
}

impl<'a> Value<'a> {
    /// Decodes one value.
    ///
    /// The common values (a fixed-size payload, an object without fields)
    /// take an inlined fast path; everything else, and every value cut
    /// short, the general one, which names the error.
    #[inline(always)]
    pub fn decode(reader: &mut ByteReader<'a>) -> Result<Self, DecodeError> {
        match Self::decode_common(reader) {
            Some(value) => Ok(value),
            None => Self::decode_nested(reader, 0),
        }
    }

    /// A value with a fixed-size payload, or an object without fields, read
    /// at once as `decode_nested` reads it; `None`, having read nothing, for
    /// other values and for values the bytes left cannot hold.
    #[inline(always)]
    fn decode_common(reader: &mut ByteReader<'a>) -> Option<Self> {
        let rest = reader.rest();
        let (&code, payload) = rest.split_first_chunk::<4>()?;
        let (value, len) = match i32::from_be_bytes(code) {
            code::NULL => (Value::Null, 4),
            code::VOID => (Value::Void, 4),
            code::KOTLIN_UNIT => (Value::KotlinUnit, 4),
            code::BYTE => (Value::Byte(*payload.first()? as i8), 5),
            code::BOOLEAN => (Value::Boolean(*payload.first()? != 0), 5),
            code::SHORT => (Value::Short(i16::from_be_bytes(*payload.first_chunk()?)), 6),
            code::CHAR => (Value::Char(u16::from_be_bytes(*payload.first_chunk()?)), 6),
            code::INT => (Value::Int(i32::from_be_bytes(*payload.first_chunk()?)), 8),
            code::FLOAT => (Value::Float(u32::from_be_bytes(*payload.first_chunk()?)), 8),
            code::LONG => (Value::Long(i64::from_be_bytes(*payload.first_chunk()?)), 12),
            code::DOUBLE => (
                Value::Double(u64::from_be_bytes(*payload.first_chunk()?)),
                12,
            ),
            class if class >= 0 => {
                let &[h0, h1, h2, h3, 0, 0, 0, 0] = payload.first_chunk::<8>()? else {
                    return None;
                };
                let value = Value::Object {
                    class: ClassId(class),
                    identity_hash: i32::from_be_bytes([h0, h1, h2, h3]),
                    fields: Vec::new(),
                };
                (value, 12)
            }
            _ => return None,
        };
        reader.seek(reader.position() + len);
        Some(value)
    }

    fn decode_nested(reader: &mut ByteReader<'a>, depth: usize) -> Result<Self, DecodeError> {
        let start = reader.offset();
        if depth > MAX_NESTING {
            return Err(DecodeError::new(
                PhysicalOffset(start),
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
                    PhysicalOffset(start),
                    DecodeErrorKind::UnknownValueCode(unknown),
                ));
            }
        })
    }

    /// Skips one value as [`Value::decode`] reads it, checking the same
    /// things, without building it; `None` where decoding fails (decode
    /// then to learn why). `depth` is the nesting depth, as in decoding.
    ///
    /// The common values take the inlined fast path: a code with a
    /// fixed-size payload (looked up in [`FIXED_PAYLOAD`]), and objects and
    /// arrays without fields or elements; everything else (strings, nested
    /// values) the general one.
    #[inline(always)]
    pub(crate) fn skip(cursor: &mut Cursor<'_>, depth: usize) -> Option<()> {
        let code = i32::from_be_bytes(cursor.peek::<4>()?);
        if depth > MAX_NESTING {
            return None;
        }
        if code < 0 {
            if let Some(&len) = FIXED_PAYLOAD.get(code.unsigned_abs() as usize)
                && len != NOT_FIXED
            {
                return cursor.advance(4 + len as usize);
            }
        } else {
            // An object or array: class, identity hash, count (then, for
            // an array, its total size).
            let head = cursor.peek::<12>()?;
            match i32::from_be_bytes([head[8], head[9], head[10], head[11]]) {
                0 => return cursor.advance(12),
                -1 => return cursor.advance(16),
                _ => {}
            }
        }
        cursor.out_of_line(|cursor| Self::skip_nested(cursor, depth))
    }

    fn skip_nested(cursor: &mut Cursor<'_>, depth: usize) -> Option<()> {
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
                        Self::skip_nested(cursor, depth + 1)?;
                    }
                } else {
                    for _ in 0..cursor.count(-(count as i64) - 1, 4)? {
                        Self::skip_nested(cursor, depth + 1)?;
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
        encode_sized_to(out, self.encoded_len()?, |writer| self.write_to(writer))
    }

    /// The bytes [`encode`](Self::encode) writes; fails, as `encode` does,
    /// for a string longer than `writeUTF` allows, a count that does not fit
    /// an `i32`, or a value nested deeper than readers follow
    /// (`MAX_NESTING`).
    #[inline]
    pub fn encoded_len(&self) -> io::Result<usize> {
        match self {
            // Most values are a code and a fixed payload.
            Value::Null | Value::Void | Value::KotlinUnit => Ok(4),
            Value::Byte(_) | Value::Boolean(_) => Ok(5),
            Value::Short(_) | Value::Char(_) => Ok(6),
            Value::Int(_) | Value::Float(_) => Ok(8),
            Value::Long(_) | Value::Double(_) => Ok(12),
            Value::Object { fields, .. } if fields.is_empty() => Ok(12),
            _ => self.nested_len(0),
        }
    }

    fn nested_len(&self, depth: usize) -> io::Result<usize> {
        if depth > MAX_NESTING {
            return Err(unencodable(DecodeErrorKind::TooDeep(MAX_NESTING)));
        }
        Ok(match self {
            Value::String(s)
            | Value::RawString(s)
            | Value::JavaClass(s)
            | Value::KotlinClass(s) => 4 + utf_len(s)?,
            Value::StringBuilder { text, .. } => 8 + utf_len(text)?,
            Value::Object { fields, .. } => {
                len_i32(fields.len())?;
                let mut len = 12;
                for (name, value) in fields {
                    len += utf_len(name)? + value.nested_len(depth + 1)?;
                }
                len
            }
            Value::Array { elements, .. } => {
                len_i32(elements.len())?;
                let mut len = 16;
                for element in elements {
                    len += element.nested_len(depth + 1)?;
                }
                len
            }
            fixed => fixed.encoded_len()?,
        })
    }

    /// Writes the value into `out`, or marks `out` rejected if
    /// [`encoded_len`](Self::encoded_len) would fail. Inlined (values of
    /// fixed size are a few stores), except for nested values.
    #[inline(always)]
    pub(crate) fn write_to(&self, out: &mut SliceWriter<'_>) {
        match self {
            Value::Null => out.i32(code::NULL),
            Value::Void => out.i32(code::VOID),
            Value::Byte(v) => coded!(out, code::BYTE, v.to_be_bytes(), 5),
            Value::Short(v) => coded!(out, code::SHORT, v.to_be_bytes(), 6),
            Value::Int(v) => coded!(out, code::INT, v.to_be_bytes(), 8),
            Value::Long(v) => coded!(out, code::LONG, v.to_be_bytes(), 12),
            Value::Float(bits) => coded!(out, code::FLOAT, bits.to_be_bytes(), 8),
            Value::Double(bits) => coded!(out, code::DOUBLE, bits.to_be_bytes(), 12),
            Value::Char(v) => coded!(out, code::CHAR, v.to_be_bytes(), 6),
            Value::KotlinUnit => out.i32(code::KOTLIN_UNIT),
            Value::Boolean(v) => coded!(out, code::BOOLEAN, [*v as u8], 5),
            Value::Object {
                class,
                identity_hash,
                fields,
            } if fields.is_empty() => out.fixed(|bytes: &mut [u8; 12]| {
                bytes[..4].copy_from_slice(&class.0.to_be_bytes());
                bytes[4..8].copy_from_slice(&identity_hash.to_be_bytes());
                bytes[8..].copy_from_slice(&0i32.to_be_bytes());
            }),
            _ => out.out_of_line(|out| self.write_nested(out, 0)),
        }
    }

    fn write_nested(&self, out: &mut SliceWriter<'_>, depth: usize) {
        if depth > MAX_NESTING {
            return out.reject();
        }
        match self {
            Value::String(s) => {
                out.i32(code::STRING);
                out.utf(s)
            }
            Value::RawString(s) => {
                out.i32(code::RAW_STRING);
                out.utf(s)
            }
            Value::JavaClass(s) => {
                out.i32(code::JAVA_CLASS);
                out.utf(s)
            }
            Value::KotlinClass(s) => {
                out.i32(code::KOTLIN_CLASS);
                out.utf(s)
            }
            Value::StringBuilder {
                identity_hash,
                text,
            } => {
                out.i32(code::STRING_BUILDER);
                out.i32(*identity_hash);
                out.utf(text)
            }
            Value::Object {
                class,
                identity_hash,
                fields,
            } => {
                out.i32(class.0);
                out.i32(*identity_hash);
                out.count(fields.len());
                for (name, value) in fields {
                    out.utf(name);
                    value.write_nested(out, depth + 1);
                }
            }
            Value::Array {
                class,
                identity_hash,
                elements,
                total_size,
            } => {
                out.i32(class.0);
                out.i32(*identity_hash);
                match len_i32(elements.len()) {
                    Ok(len) => out.i32(-len - 1),
                    Err(_) => out.reject(),
                }
                for element in elements {
                    element.write_nested(out, depth + 1);
                }
                out.i32(*total_size)
            }
            fixed => fixed.write_to(out),
        }
    }
}

/// A collection length as the format's `i32` count.
#[inline]
pub(crate) fn len_i32(len: usize) -> io::Result<i32> {
    match i32::try_from(len) {
        Ok(n) if n < i32::MAX => Ok(n),
        _ => Err(too_many()),
    }
}

#[cold]
fn too_many() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "too many elements")
}
