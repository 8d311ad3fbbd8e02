//! Codec of tracepoints (kind 8) and container footers (kind 9). `decode`
//! starts after the kind byte; `encode` writes it, in one shot:
//! `encoded_len` sizes and checks the object, `write_to` stores its fields
//! straight into a slice (checking as it goes, so a writer with enough room
//! at hand — the streaming block — need not size the object first).

use std::io::{self, Write};

use crate::common::PhysicalOffset;
use crate::common::{CodeLocationId, EventId, FieldId, MethodId, ThreadId, VariableId};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::ObjectKind;
use crate::format::bytes::{ByteReader, SliceWriter, encode_sized_to, preallocation, utf_len};
use crate::format::skip::Cursor;
use crate::format::value::len_i32;
use crate::model::{
    DiffStatus, Footer, JavaStr, Tracepoint, TracepointBody, TracepointHeader, TracepointName,
    TracepointType, Value,
};

type DecodeResult<T> = Result<T, DecodeError>;

fn diff_status(reader: &mut ByteReader<'_>) -> DecodeResult<DiffStatus> {
    let offset = reader.offset();
    let raw = reader.i8()?;
    DiffStatus::from_i8(raw).ok_or_else(|| {
        DecodeError::new(
            PhysicalOffset(offset),
            DecodeErrorKind::InvalidDiffStatus(raw),
        )
    })
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
                PhysicalOffset(type_offset),
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
    pub(crate) const ENCODED_LEN: usize = 15;

    /// Where an encoded tracepoint (kind byte included) holds its thread
    /// id, then its event id: 4 bytes each, big-endian.
    pub(crate) const THREAD_AT: usize = 6;
    /// See [`THREAD_AT`](Self::THREAD_AT).
    pub(crate) const EVENT_AT: usize = 10;

    #[inline(always)]
    fn write_to(&self, out: &mut SliceWriter<'_>) {
        out.fixed(|header: &mut [u8; Self::ENCODED_LEN]| {
            header[0] = ObjectKind::Tracepoint as u8;
            header[1] = self.tracepoint_type as u8;
            header[2..6].copy_from_slice(&self.code_location.0.to_be_bytes());
            let (thread, event) = (Self::THREAD_AT, Self::EVENT_AT);
            header[thread..thread + 4].copy_from_slice(&self.thread.0.to_be_bytes());
            header[event..event + 4].copy_from_slice(&self.event.0.to_be_bytes());
            header[14] = self.diff_status as u8;
        })
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

/// [`values`] into `spare`'s memory when there are any (it is left empty
/// then), else into none. `values` keeps its own loop: built on this one,
/// the container walk that decodes through it was laid out worse (the
/// dump +1.7% instructions).
fn values_reusing<'a>(
    reader: &mut ByteReader<'a>,
    what: &'static str,
    spare: &mut Vec<Value<'a>>,
) -> DecodeResult<Vec<Value<'a>>> {
    let count = reader.count(what, 4)?;
    if count == 0 {
        return Ok(Vec::new());
    }
    let mut values = std::mem::take(spare);
    values.clear();
    values.reserve(preallocation(count));
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

/// Inlined: the writer stays in its caller's registers.
#[inline(always)]
fn write_values(out: &mut SliceWriter<'_>, values: &[Value<'_>]) {
    out.count(values.len());
    for value in values {
        value.write_to(out);
    }
}

impl TracepointName {
    /// What the tracepoint whose bytes start `object` (its kind byte
    /// first) names, if it is a call or an access and `object` holds its
    /// header and the id (a block end may cut them).
    pub(crate) fn peek(object: &[u8]) -> Option<TracepointName> {
        let (&kind, rest) = object.split_first()?;
        if kind != ObjectKind::Tracepoint as u8 {
            return None;
        }
        let header = TracepointHeader::from_bytes(rest.first_chunk()?)?;
        let mut body = ByteReader::new(rest.get(TracepointHeader::LEN..)?, 0);
        let id = |body: &mut ByteReader<'_>| body.i32().ok();
        match header.tracepoint_type {
            // A container's child diff statuses come first: u8 k, k × i8.
            TracepointType::MethodCall => {
                let statuses = body.u8().ok()?;
                body.bytes(usize::from(statuses)).ok()?;
                Some(TracepointName::Method(MethodId(id(&mut body)?)))
            }
            TracepointType::ReadField | TracepointType::WriteField => {
                Some(TracepointName::Field(FieldId(id(&mut body)?)))
            }
            TracepointType::ReadLocal | TracepointType::WriteLocal => {
                Some(TracepointName::Variable(VariableId(id(&mut body)?)))
            }
            _ => None,
        }
    }
}

impl<'a> Tracepoint<'a> {
    /// Decodes a tracepoint after its kind byte.
    pub fn decode(reader: &mut ByteReader<'a>) -> DecodeResult<Self> {
        Self::decode_inline(reader)
    }

    /// [`decode`](Self::decode), inlined into its caller: a walk's loop
    /// then builds each tracepoint where it keeps it, instead of copying
    /// its 136 bytes there from where a call left them.
    #[inline(always)]
    pub(crate) fn decode_inline(reader: &mut ByteReader<'a>) -> DecodeResult<Self> {
        Self::decode_inline_with(reader, None)
    }

    /// [`decode_inline`](Self::decode_inline), a method call's arguments
    /// decoded into the memory of `spare` (a vector a walk took back from
    /// the call before), when it has arguments.
    #[inline(always)]
    pub(crate) fn decode_reusing(
        reader: &mut ByteReader<'a>,
        spare: &mut Vec<Value<'a>>,
    ) -> DecodeResult<Self> {
        Self::decode_inline_with(reader, Some(spare))
    }

    /// [`decode_inline`](Self::decode_inline), reusing `spare` if given.
    #[inline(always)]
    fn decode_inline_with(
        reader: &mut ByteReader<'a>,
        spare: Option<&mut Vec<Value<'a>>>,
    ) -> DecodeResult<Self> {
        // The header's 14 bytes at once; where they do not make a header,
        // the cold path reads it field by field to name the error. Only
        // the header comes from either path, so that one body decodes
        // straight into the result.
        let header = reader
            .rest()
            .first_chunk::<{ TracepointHeader::LEN }>()
            .and_then(TracepointHeader::from_bytes);
        let header = match header {
            Some(header) => {
                reader.seek(reader.position() + TracepointHeader::LEN);
                header
            }
            None => TracepointHeader::decode_fields(reader)?,
        };
        Self::decode_body(reader, header, spare)
    }

    /// The rest of a tracepoint after its `header`.
    #[inline(always)]
    fn decode_body(
        reader: &mut ByteReader<'a>,
        header: TracepointHeader,
        spare: Option<&mut Vec<Value<'a>>>,
    ) -> DecodeResult<Self> {
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
                arguments: match spare {
                    Some(spare) => values_reusing(reader, "argument", spare)?,
                    None => values(reader, "argument")?,
                },
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

    /// Writes the tracepoint into `out`, or marks `out` rejected where
    /// [`encoded_len`](Self::encoded_len) fails. Inlined into its callers
    /// (a writer's hot path), so `out` lives in registers.
    #[inline(always)]
    pub(crate) fn write_to(&self, out: &mut SliceWriter<'_>) {
        self.header.write_to(out);
        let statuses = &self.child_diff_statuses;
        if self.header.tracepoint_type.is_container() {
            match u8::try_from(statuses.len()) {
                Ok(count) => out.u8(count),
                Err(_) => out.reject(),
            }
            for status in statuses {
                out.i8(*status as i8);
            }
        } else if !statuses.is_empty() {
            out.reject();
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
                out.count(stack.len());
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

    /// Writes the footer into `out`, or marks `out` rejected where
    /// [`encoded_len`](Self::encoded_len) fails. Inlined into its callers,
    /// as a tracepoint's is.
    #[inline(always)]
    pub(crate) fn write_to(&self, out: &mut SliceWriter<'_>) {
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
            TracepointType::SnapshotBreakpoint => cursor.out_of_line(Self::skip_snapshot)?,
            TracepointType::Throw | TracepointType::Catch => Value::skip(cursor, 0)?,
        }
        Some(header)
    }

    /// A snapshot breakpoint's body: rare, kept out of the scans' loops.
    #[inline(never)]
    fn skip_snapshot(cursor: &mut Cursor<'_>) -> Option<()> {
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
        Some(())
    }
}

impl Footer<'_> {
    /// Skips the footer of a container of type `container` after its kind
    /// byte.
    #[inline(always)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::ClassId;
    use crate::format::MAX_NESTING;
    use crate::format::bytes::Unwritten;

    fn header(tracepoint_type: TracepointType) -> TracepointHeader {
        TracepointHeader {
            tracepoint_type,
            code_location: CodeLocationId(3),
            thread: ThreadId(1),
            event: EventId(42),
            diff_status: DiffStatus::Added,
        }
    }

    fn nested(depth: usize) -> Value<'static> {
        (0..depth).fold(Value::Int(7), |inner, _| Value::Array {
            class: ClassId(2),
            identity_hash: 9,
            elements: vec![inner],
            total_size: 1,
        })
    }

    fn samples() -> Vec<Tracepoint<'static>> {
        let object = Value::Object {
            class: ClassId(1),
            identity_hash: 5,
            fields: vec![(JavaStr::new("f"), Value::String(JavaStr::new("é\0x")))],
        };
        let bodies = vec![
            TracepointBody::MethodCall {
                method: MethodId(4),
                receiver: object.clone(),
                arguments: vec![Value::Long(-1), Value::Double(7), Value::Char(0x263A)],
                flags: 3,
            },
            TracepointBody::WriteArray {
                array: nested(3),
                index: 2,
                value: Value::Boolean(true),
            },
            TracepointBody::ReadField {
                field: FieldId(6),
                receiver: object,
                value: Value::StringBuilder {
                    identity_hash: 1,
                    text: JavaStr::new("sb"),
                },
            },
            TracepointBody::WriteLocal {
                variable: VariableId(0),
                value: Value::Float(0x3F80_0000),
            },
            TracepointBody::SnapshotBreakpoint {
                uuid_high: 1,
                uuid_low: 2,
                stack: vec![CodeLocationId(1), CodeLocationId(2)],
                millis: 3,
                values: vec![Value::Null, Value::KotlinUnit],
                trace_id: Some(JavaStr::new("trace")),
            },
            TracepointBody::Throw {
                exception: Value::JavaClass(JavaStr::new("E")),
            },
            TracepointBody::LoopIteration {
                loop_id: 1,
                iteration: 2,
            },
        ];
        bodies
            .into_iter()
            .map(|body| {
                let tracepoint_type = match body {
                    TracepointBody::MethodCall { .. } => TracepointType::MethodCall,
                    TracepointBody::WriteArray { .. } => TracepointType::WriteArray,
                    TracepointBody::ReadField { .. } => TracepointType::ReadField,
                    TracepointBody::WriteLocal { .. } => TracepointType::WriteLocal,
                    TracepointBody::SnapshotBreakpoint { .. } => TracepointType::SnapshotBreakpoint,
                    TracepointBody::Throw { .. } => TracepointType::Throw,
                    _ => TracepointType::LoopIteration,
                };
                let child_diff_statuses = if tracepoint_type.is_container() {
                    vec![DiffStatus::Removed, DiffStatus::Unchanged]
                } else {
                    Vec::new()
                };
                Tracepoint {
                    header: header(tracepoint_type),
                    child_diff_statuses,
                    body,
                }
            })
            .collect()
    }

    /// Writes into `room` bytes of room, as the streaming block does.
    fn write_in_room(tracepoint: &Tracepoint<'_>, room: usize) -> Result<Vec<u8>, Unwritten> {
        let mut bytes = vec![0xAA; room];
        let mut out = SliceWriter::new(&mut bytes);
        tracepoint.write_to(&mut out);
        let len = out.written()?;
        bytes.truncate(len);
        Ok(bytes)
    }

    #[test]
    fn size_write_and_decode_agree() {
        for tracepoint in samples() {
            let mut bytes = Vec::new();
            tracepoint.encode(&mut bytes).unwrap();
            assert_eq!(tracepoint.encoded_len().unwrap(), bytes.len());
            assert_eq!(write_in_room(&tracepoint, 4096).unwrap(), bytes);
            let mut reader = ByteReader::new(&bytes[1..], 1);
            assert_eq!(Tracepoint::decode(&mut reader).unwrap(), tracepoint);
            assert!(reader.is_empty());
        }
        let footer = Footer::unfinished_method();
        let mut bytes = Vec::new();
        footer.encode(&mut bytes).unwrap();
        assert_eq!(footer.encoded_len().unwrap(), bytes.len());
    }

    #[test]
    fn too_little_room_is_short_not_a_panic() {
        for tracepoint in samples() {
            let len = tracepoint.encoded_len().unwrap();
            for room in [0, 1, len / 2, len - 1] {
                assert_eq!(write_in_room(&tracepoint, room), Err(Unwritten::Short));
            }
        }
    }

    #[test]
    fn what_cannot_be_read_back_is_rejected() {
        let mut leaf_with_statuses = samples().remove(1);
        leaf_with_statuses.child_diff_statuses = vec![DiffStatus::Added];
        let mut too_many_statuses = samples().remove(0);
        too_many_statuses.child_diff_statuses = vec![DiffStatus::None; 256];
        let long = "x".repeat(65_536);
        let mut long_string = samples().remove(5);
        long_string.body = TracepointBody::Throw {
            exception: Value::String(JavaStr::new(&long)),
        };
        let mut too_deep = samples().remove(1);
        too_deep.body = TracepointBody::WriteArray {
            array: nested(MAX_NESTING + 1),
            index: 0,
            value: Value::Null,
        };
        for tracepoint in [leaf_with_statuses, too_many_statuses, long_string, too_deep] {
            assert!(tracepoint.encoded_len().is_err());
            assert!(tracepoint.encode(&mut Vec::new()).is_err());
            assert_eq!(
                write_in_room(&tracepoint, 1 << 20),
                Err(Unwritten::Rejected)
            );
        }
        let mut deepest = samples().remove(1);
        deepest.body = TracepointBody::WriteArray {
            array: nested(MAX_NESTING),
            index: 0,
            value: Value::Null,
        };
        assert!(write_in_room(&deepest, 1 << 20).is_ok());
    }
}
