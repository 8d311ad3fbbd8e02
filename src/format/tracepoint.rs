//! Codec of tracepoints (kind 8) and container footers (kind 9). `decode`
//! starts after the kind byte; `encode` writes it.

use std::io::{self, Write};

use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::ObjectKind;
use crate::format::bytes::{ByteReader, WriteBigEndian, preallocation};
use crate::format::offset::{CodeLocationId, EventId, FieldId, MethodId, ThreadId, VariableId};
use crate::format::skip::Cursor;
use crate::format::value::len_i32;
use crate::model::{
    DiffStatus, Footer, JavaStr, Tracepoint, TracepointBody, TracepointHeader, TracepointType,
    Value,
};

type DecodeResult<T> = Result<T, DecodeError>;

fn diff_status(reader: &mut ByteReader<'_>) -> DecodeResult<DiffStatus> {
    let offset = reader.offset();
    let raw = reader.i8()?;
    DiffStatus::from_i8(raw)
        .ok_or_else(|| DecodeError::new(offset, DecodeErrorKind::InvalidDiffStatus(raw)))
}

impl TracepointHeader {
    /// Decodes the common header after the kind byte.
    #[inline]
    pub fn decode(reader: &mut ByteReader<'_>) -> DecodeResult<Self> {
        // All 14 bytes at once when they are there (one bounds check);
        // field by field otherwise, so a bad header fails where it should.
        let mut whole = reader.clone();
        let header = whole
            .bytes(Self::LEN)
            .ok()
            .and_then(|bytes| Self::from_bytes(bytes.try_into().ok()?));
        match header {
            Some(header) => {
                *reader = whole;
                Ok(header)
            }
            None => Self::decode_fields(reader),
        }
    }

    /// Bytes of the common header after the kind byte.
    pub(crate) const LEN: usize = 14;

    /// The header in its bytes, when they hold a known tracepoint type and
    /// diff status (what [`TracepointHeader::decode`] reads; the skipper
    /// reads headers with it too).
    #[inline(always)]
    pub(crate) fn from_bytes(bytes: &[u8; Self::LEN]) -> Option<Self> {
        let &[type_byte, ref ints @ .., diff] = bytes;
        let int =
            |at: usize| i32::from_be_bytes([ints[at], ints[at + 1], ints[at + 2], ints[at + 3]]);
        Some(TracepointHeader {
            tracepoint_type: TracepointType::from_byte(type_byte)?,
            code_location: CodeLocationId(int(0)),
            thread: ThreadId(int(4)),
            event: EventId(int(8)),
            diff_status: DiffStatus::from_i8(diff as i8)?,
        })
    }

    #[cold]
    fn decode_fields(reader: &mut ByteReader<'_>) -> DecodeResult<Self> {
        let type_offset = reader.offset();
        let type_byte = reader.u8()?;
        let tracepoint_type = TracepointType::from_byte(type_byte).ok_or_else(|| {
            DecodeError::new(
                type_offset,
                DecodeErrorKind::UnknownTracepointType(type_byte),
            )
        })?;
        Ok(TracepointHeader {
            tracepoint_type,
            code_location: CodeLocationId(reader.i32()?),
            thread: ThreadId(reader.i32()?),
            event: EventId(reader.i32()?),
            diff_status: diff_status(reader)?,
        })
    }

    fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.put_u8(ObjectKind::Tracepoint as u8)?;
        out.put_u8(self.tracepoint_type as u8)?;
        out.put_i32(self.code_location.0)?;
        out.put_i32(self.thread.0)?;
        out.put_i32(self.event.0)?;
        out.put_i8(self.diff_status as i8)
    }
}

fn values<'a>(reader: &mut ByteReader<'a>, what: &'static str) -> DecodeResult<Vec<Value<'a>>> {
    let count = reader.count(what, 4)?;
    let mut values = Vec::with_capacity(preallocation(count));
    for _ in 0..count {
        values.push(Value::decode(reader)?);
    }
    Ok(values)
}

fn put_values<W: Write + ?Sized>(out: &mut W, values: &[Value<'_>]) -> io::Result<()> {
    out.put_i32(len_i32(values.len())?)?;
    values.iter().try_for_each(|value| value.encode(out))
}

impl<'a> Tracepoint<'a> {
    /// Decodes a tracepoint after its kind byte.
    pub fn decode(reader: &mut ByteReader<'a>) -> DecodeResult<Self> {
        let header = TracepointHeader::decode(reader)?;
        let mut child_diff_statuses = Vec::new();
        if header.tracepoint_type.is_container() {
            let count = reader.u8()? as usize;
            child_diff_statuses.reserve(count);
            for _ in 0..count {
                child_diff_statuses.push(diff_status(reader)?);
            }
        }
        let body = match header.tracepoint_type {
            TracepointType::MethodCall => TracepointBody::MethodCall {
                method: MethodId(reader.i32()?),
                receiver: Value::decode(reader)?,
                arguments: values(reader, "argument")?,
                flags: reader.i16()?,
            },
            TracepointType::ReadArray => TracepointBody::ReadArray {
                array: Value::decode(reader)?,
                index: reader.i32()?,
                value: Value::decode(reader)?,
            },
            TracepointType::ReadLocal => TracepointBody::ReadLocal {
                variable: VariableId(reader.i32()?),
                value: Value::decode(reader)?,
            },
            TracepointType::ReadField => TracepointBody::ReadField {
                field: FieldId(reader.i32()?),
                receiver: Value::decode(reader)?,
                value: Value::decode(reader)?,
            },
            TracepointType::WriteArray => TracepointBody::WriteArray {
                array: Value::decode(reader)?,
                index: reader.i32()?,
                value: Value::decode(reader)?,
            },
            TracepointType::WriteLocal => TracepointBody::WriteLocal {
                variable: VariableId(reader.i32()?),
                value: Value::decode(reader)?,
            },
            TracepointType::WriteField => TracepointBody::WriteField {
                field: FieldId(reader.i32()?),
                receiver: Value::decode(reader)?,
                value: Value::decode(reader)?,
            },
            TracepointType::Loop => TracepointBody::Loop {
                loop_id: reader.i32()?,
            },
            TracepointType::LoopIteration => TracepointBody::LoopIteration {
                loop_id: reader.i32()?,
                iteration: reader.i32()?,
            },
            TracepointType::SnapshotBreakpoint => {
                let uuid_high = reader.i64()?;
                let uuid_low = reader.i64()?;
                let count = reader.count("stack frame", 4)?;
                let mut stack = Vec::with_capacity(preallocation(count));
                for _ in 0..count {
                    stack.push(CodeLocationId(reader.i32()?));
                }
                let millis = reader.i64()?;
                let values = values(reader, "captured value")?;
                let trace_id = if reader.bool()? {
                    Some(reader.utf()?)
                } else {
                    None
                };
                TracepointBody::SnapshotBreakpoint {
                    uuid_high,
                    uuid_low,
                    stack,
                    millis,
                    values,
                    trace_id,
                }
            }
            TracepointType::Throw => TracepointBody::Throw {
                exception: Value::decode(reader)?,
            },
            TracepointType::Catch => TracepointBody::Catch {
                exception: Value::decode(reader)?,
            },
        };
        Ok(Tracepoint {
            header,
            child_diff_statuses,
            body,
        })
    }

    /// Encodes the tracepoint, kind byte first (a container's header only:
    /// its children and footer are separate objects).
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        self.header.encode(out)?;
        if self.header.tracepoint_type.is_container() {
            let count = u8::try_from(self.child_diff_statuses.len()).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "more than 255 child diff statuses",
                )
            })?;
            out.put_u8(count)?;
            for status in &self.child_diff_statuses {
                out.put_i8(*status as i8)?;
            }
        }
        match &self.body {
            TracepointBody::MethodCall {
                method,
                receiver,
                arguments,
                flags,
            } => {
                out.put_i32(method.0)?;
                receiver.encode(out)?;
                put_values(out, arguments)?;
                out.put_i16(*flags)
            }
            TracepointBody::ReadArray {
                array,
                index,
                value,
            }
            | TracepointBody::WriteArray {
                array,
                index,
                value,
            } => {
                array.encode(out)?;
                out.put_i32(*index)?;
                value.encode(out)
            }
            TracepointBody::ReadLocal { variable, value }
            | TracepointBody::WriteLocal { variable, value } => {
                out.put_i32(variable.0)?;
                value.encode(out)
            }
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
                out.put_i32(field.0)?;
                receiver.encode(out)?;
                value.encode(out)
            }
            TracepointBody::Loop { loop_id } => out.put_i32(*loop_id),
            TracepointBody::LoopIteration { loop_id, iteration } => {
                out.put_i32(*loop_id)?;
                out.put_i32(*iteration)
            }
            TracepointBody::SnapshotBreakpoint {
                uuid_high,
                uuid_low,
                stack,
                millis,
                values,
                trace_id,
            } => {
                out.put_i64(*uuid_high)?;
                out.put_i64(*uuid_low)?;
                out.put_i32(len_i32(stack.len())?)?;
                for location in stack {
                    out.put_i32(location.0)?;
                }
                out.put_i64(*millis)?;
                put_values(out, values)?;
                out.put_bool(trace_id.is_some())?;
                match trace_id {
                    Some(id) => out.put_utf(id),
                    None => Ok(()),
                }
            }
            TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
                exception.encode(out)
            }
        }
    }
}

impl<'a> Footer<'a> {
    /// Decodes the footer of a container of type `container` after the kind byte.
    pub fn decode(reader: &mut ByteReader<'a>, container: TracepointType) -> DecodeResult<Self> {
        Ok(match container {
            TracepointType::MethodCall => Footer::MethodCall {
                result: Value::decode(reader)?,
                exception: reader.utf()?,
            },
            TracepointType::Loop => Footer::Loop {
                iterations: reader.i32()?,
            },
            _ => Footer::LoopIteration,
        })
    }

    /// Encodes the footer, kind byte first.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.put_u8(ObjectKind::TracepointFooter as u8)?;
        match self {
            Footer::MethodCall { result, exception } => {
                result.encode(out)?;
                out.put_utf(exception)
            }
            Footer::Loop { iterations } => out.put_i32(*iterations),
            Footer::LoopIteration => Ok(()),
        }
    }

    /// The footer of a method call that never returned (a crashed recorder's):
    /// the reference printer's `<unfinished method>` marker.
    pub fn unfinished_method() -> Footer<'static> {
        Footer::MethodCall {
            result: Value::String(JavaStr::new("<unfinished method>")),
            exception: JavaStr::new(""),
        }
    }
}

/// Skipping without building: the tracepoint and footer codecs' own skip
/// methods, which read what `decode` reads and refuse what it refuses
/// (`None`: decode to learn why). The skipper (`format::skip`) dispatches
/// to them.
impl Tracepoint<'_> {
    /// Skips a tracepoint after its kind byte; its common header.
    #[inline(always)]
    pub(crate) fn skip(cursor: &mut Cursor<'_>) -> Option<TracepointHeader> {
        let header = TracepointHeader::from_bytes(&cursor.take::<{ TracepointHeader::LEN }>()?)?;
        let tracepoint_type = header.tracepoint_type;
        if tracepoint_type.is_container() {
            let count = cursor.u8()?;
            for _ in 0..count {
                DiffStatus::from_i8(cursor.u8()? as i8)?;
            }
        }
        match tracepoint_type {
            TracepointType::MethodCall => {
                cursor.i32()?;
                Value::skip(cursor, 0)?;
                let count = cursor.i32()?;
                for _ in 0..cursor.count(count as i64, 4)? {
                    Value::skip(cursor, 0)?;
                }
                cursor.advance(2)?;
            }
            TracepointType::ReadArray | TracepointType::WriteArray => {
                Value::skip(cursor, 0)?;
                cursor.i32()?;
                Value::skip(cursor, 0)?;
            }
            TracepointType::ReadLocal | TracepointType::WriteLocal => {
                cursor.i32()?;
                Value::skip(cursor, 0)?;
            }
            TracepointType::ReadField | TracepointType::WriteField => {
                cursor.i32()?;
                Value::skip(cursor, 0)?;
                Value::skip(cursor, 0)?;
            }
            TracepointType::Loop => cursor.advance(4)?,
            TracepointType::LoopIteration => cursor.advance(8)?,
            TracepointType::SnapshotBreakpoint => {
                cursor.advance(16)?;
                let frames = cursor.i32()?;
                let frames = cursor.count(frames as i64, 4)?;
                cursor.advance(frames * 4)?;
                cursor.advance(8)?;
                let values = cursor.i32()?;
                for _ in 0..cursor.count(values as i64, 4)? {
                    Value::skip(cursor, 0)?;
                }
                if cursor.u8()? != 0 {
                    cursor.utf()?;
                }
            }
            TracepointType::Throw | TracepointType::Catch => Value::skip(cursor, 0)?,
        }
        Some(header)
    }
}

impl Footer<'_> {
    /// Skips the footer of a container of type `container` after its kind
    /// byte.
    #[inline]
    pub(crate) fn skip(cursor: &mut Cursor<'_>, container: TracepointType) -> Option<()> {
        match container {
            TracepointType::MethodCall => {
                Value::skip(cursor, 0)?;
                cursor.utf()
            }
            TracepointType::Loop => cursor.advance(4),
            _ => Some(()),
        }
    }
}
