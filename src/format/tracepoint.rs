//! Codec of tracepoints (kind 8) and container footers (kind 9). `decode`
//! starts after the kind byte; `encode` writes it, in one shot:
//! `encoded_len` sizes and checks the object, `write_to` stores its fields
//! straight into a slice of that size (the block writer's buffer, or a
//! stack buffer for any other writer).

use std::io::{self, Write};

use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::ObjectKind;
use crate::format::bytes::{ByteReader, SliceWriter, encode_sized_to, preallocation, utf_len};
use crate::format::offset::{CodeLocationId, EventId, FieldId, MethodId, ThreadId, VariableId};
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
    pub fn decode(reader: &mut ByteReader<'_>) -> DecodeResult<Self> {
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

    /// Bytes of the header, kind byte included.
    const ENCODED_LEN: usize = 15;

    #[inline(always)]
    fn write_to(&self, out: &mut SliceWriter<'_>) {
        out.u8(ObjectKind::Tracepoint as u8);
        out.u8(self.tracepoint_type as u8);
        out.i32(self.code_location.0);
        out.i32(self.thread.0);
        out.i32(self.event.0);
        out.i8(self.diff_status as i8)
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

/// Bytes of a counted list of values.
fn values_len(values: &[Value<'_>]) -> io::Result<usize> {
    len_i32(values.len())?;
    values
        .iter()
        .try_fold(4, |len, value| Ok(len + value.encoded_len()?))
}

fn write_values(out: &mut SliceWriter<'_>, values: &[Value<'_>]) {
    // `values_len` checked the count.
    out.i32(values.len() as i32);
    for value in values {
        value.write_to(out);
    }
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
        encode_sized_to(out, self.encoded_len()?, |writer| self.write_to(writer))
    }

    /// The bytes [`encode`](Self::encode) writes. Fails, as `encode` does,
    /// for what cannot be written faithfully: more than 255 child diff
    /// statuses, child diff statuses on a leaf, a string longer than
    /// `writeUTF` allows, a count that does not fit an `i32`, a value nested
    /// deeper than readers follow. A writer calls it once per tracepoint:
    /// it is the size to reserve and the whole check of the tracepoint.
    #[inline]
    pub fn encoded_len(&self) -> io::Result<usize> {
        let statuses = self.child_diff_statuses.len();
        let header = if self.header.tracepoint_type.is_container() {
            if statuses > u8::MAX as usize {
                return Err(unencodable_statuses("more than 255 child diff statuses"));
            }
            TracepointHeader::ENCODED_LEN + 1 + statuses
        } else {
            if statuses != 0 {
                return Err(unencodable_statuses("child diff statuses on a leaf"));
            }
            TracepointHeader::ENCODED_LEN
        };
        let body = match &self.body {
            TracepointBody::MethodCall {
                receiver,
                arguments,
                ..
            } => 4 + receiver.encoded_len()? + values_len(arguments)? + 2,
            TracepointBody::ReadArray { array, value, .. }
            | TracepointBody::WriteArray { array, value, .. } => {
                array.encoded_len()? + 4 + value.encoded_len()?
            }
            TracepointBody::ReadLocal { value, .. } | TracepointBody::WriteLocal { value, .. } => {
                4 + value.encoded_len()?
            }
            TracepointBody::ReadField {
                receiver, value, ..
            }
            | TracepointBody::WriteField {
                receiver, value, ..
            } => 4 + receiver.encoded_len()? + value.encoded_len()?,
            TracepointBody::Loop { .. } => 4,
            TracepointBody::LoopIteration { .. } => 8,
            TracepointBody::SnapshotBreakpoint {
                stack,
                values,
                trace_id,
                ..
            } => {
                len_i32(stack.len())?;
                let trace_id = match trace_id {
                    Some(id) => utf_len(id)?,
                    None => 0,
                };
                8 + 8 + 4 + 4 * stack.len() + 8 + values_len(values)? + 1 + trace_id
            }
            TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
                exception.encoded_len()?
            }
        };
        Ok(header + body)
    }

    /// Writes the tracepoint, whose [`encoded_len`](Self::encoded_len) was
    /// accepted, into `out`.
    #[inline]
    pub fn write_to(&self, out: &mut SliceWriter<'_>) {
        self.header.write_to(out);
        if self.header.tracepoint_type.is_container() {
            // `encoded_len` checked there are at most 255.
            out.u8(self.child_diff_statuses.len() as u8);
            for status in &self.child_diff_statuses {
                out.i8(*status as i8);
            }
        }
        match &self.body {
            TracepointBody::MethodCall {
                method,
                receiver,
                arguments,
                flags,
            } => {
                out.i32(method.0);
                receiver.write_to(out);
                write_values(out, arguments);
                out.i16(*flags)
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
                array.write_to(out);
                out.i32(*index);
                value.write_to(out)
            }
            TracepointBody::ReadLocal { variable, value }
            | TracepointBody::WriteLocal { variable, value } => {
                out.i32(variable.0);
                value.write_to(out)
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
                out.i32(field.0);
                receiver.write_to(out);
                value.write_to(out)
            }
            TracepointBody::Loop { loop_id } => out.i32(*loop_id),
            TracepointBody::LoopIteration { loop_id, iteration } => {
                out.i32(*loop_id);
                out.i32(*iteration)
            }
            TracepointBody::SnapshotBreakpoint {
                uuid_high,
                uuid_low,
                stack,
                millis,
                values,
                trace_id,
            } => {
                out.i64(*uuid_high);
                out.i64(*uuid_low);
                out.i32(stack.len() as i32);
                for location in stack {
                    out.i32(location.0);
                }
                out.i64(*millis);
                write_values(out, values);
                out.bool(trace_id.is_some());
                if let Some(id) = trace_id {
                    out.utf(id)
                }
            }
            TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
                exception.write_to(out)
            }
        }
    }
}

#[cold]
fn unencodable_statuses(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
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
        encode_sized_to(out, self.encoded_len()?, |writer| self.write_to(writer))
    }

    /// The bytes [`encode`](Self::encode) writes (it fails for a result
    /// value or exception name that cannot be written, as `encode` does).
    #[inline]
    pub fn encoded_len(&self) -> io::Result<usize> {
        Ok(1 + match self {
            Footer::MethodCall { result, exception } => result.encoded_len()? + utf_len(exception)?,
            Footer::Loop { .. } => 4,
            Footer::LoopIteration => 0,
        })
    }

    /// Writes the footer, whose [`encoded_len`](Self::encoded_len) was
    /// accepted, into `out`.
    #[inline]
    pub fn write_to(&self, out: &mut SliceWriter<'_>) {
        out.u8(ObjectKind::TracepointFooter as u8);
        match self {
            Footer::MethodCall { result, exception } => {
                result.write_to(out);
                out.utf(exception)
            }
            Footer::Loop { iterations } => out.i32(*iterations),
            Footer::LoopIteration => {}
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
