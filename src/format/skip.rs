//! Skipping objects: the same layouts as the decoders, validated the same
//! way, but building nothing. Readers that only need where objects are and
//! what they are (the index rebuild, listing a call's children) skip
//! instead of decoding. Tests hold `skip` and `decode` to the same bytes and
//! the same errors.

use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::ObjectKind;
use crate::format::bytes::ByteReader;
use crate::format::offset::{EventId, ThreadId};
use crate::format::types::MAX_NESTING;
use crate::model::{DiffStatus, TracepointType};

type SkipResult<T> = Result<T, DecodeError>;

/// What a skipped object was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// A reference object (kinds 0–7) and its id (thread id for names).
    Reference {
        /// Its kind.
        kind: ObjectKind,
        /// Its id.
        id: i32,
    },
    /// A tracepoint (a leaf, or a container's header).
    Tracepoint {
        /// Its type.
        tracepoint_type: TracepointType,
        /// Its event id.
        event: EventId,
    },
    /// A container's footer.
    Footer,
    /// A block's start.
    BlockStart(ThreadId),
    /// A block's end.
    BlockEnd,
    /// The end of the file.
    Eof,
}

/// Skips the object at the reader's position; `open_container` is the type
/// of the innermost open container (needed for footers), as for
/// [`Object::decode`](crate::format::Object::decode).
pub fn skip_object(
    reader: &mut ByteReader<'_>,
    open_container: Option<TracepointType>,
) -> SkipResult<Skipped> {
    let kind_offset = reader.offset();
    let kind_byte = reader.u8()?;
    let kind = ObjectKind::from_byte(kind_byte).ok_or_else(|| {
        DecodeError::new(kind_offset, DecodeErrorKind::UnknownObjectKind(kind_byte))
    })?;
    let reference = |id| Skipped::Reference { kind, id };
    Ok(match kind {
        ObjectKind::ThreadName | ObjectKind::ClassDescriptor | ObjectKind::String => {
            let id = reader.i32()?;
            reader.utf()?;
            reference(id)
        }
        ObjectKind::MethodDescriptor => {
            let id = reader.i32()?;
            reader.i32()?;
            reader.utf()?;
            skip_type(reader)?;
            let count = reader.count("parameter type", 1)?;
            for _ in 0..count {
                skip_type(reader)?;
            }
            reference(id)
        }
        ObjectKind::FieldDescriptor => {
            let id = reader.i32()?;
            reader.i32()?;
            reader.utf()?;
            skip_type(reader)?;
            reader.bytes(3)?;
            reference(id)
        }
        ObjectKind::VariableDescriptor => {
            let id = reader.i32()?;
            reader.utf()?;
            skip_type(reader)?;
            reference(id)
        }
        ObjectKind::AccessPath => {
            let id = reader.i32()?;
            let count = reader.count("access location", 5)?;
            for _ in 0..count {
                let tag_offset = reader.offset();
                let tag = reader.u8()?;
                if tag > 4 {
                    return Err(DecodeError::new(
                        tag_offset,
                        DecodeErrorKind::UnknownAccessLocationTag(tag),
                    ));
                }
                reader.i32()?;
            }
            reference(id)
        }
        ObjectKind::CodeLocation => {
            let kind_offset = reader.offset();
            let location_kind = reader.u8()?;
            if location_kind > 2 {
                return Err(DecodeError::new(
                    kind_offset,
                    DecodeErrorKind::UnknownCodeLocationKind(location_kind),
                ));
            }
            let id = reader.i32()?;
            reader.bytes(20)?; // file, class, method, line, access path
            let arguments = reader.count("argument", 4)?;
            reader.bytes(arguments * 4)?;
            let locals = reader.count("local", 8)?;
            reader.bytes(locals * 4)?;
            for _ in 0..locals {
                let offset = reader.offset();
                let local_kind = reader.i32()?;
                if !(0..=2).contains(&local_kind) {
                    return Err(DecodeError::new(
                        offset,
                        DecodeErrorKind::UnknownLocalKind(local_kind),
                    ));
                }
            }
            reference(id)
        }
        ObjectKind::Tracepoint => skip_tracepoint(reader)?,
        ObjectKind::TracepointFooter => {
            match open_container {
                Some(TracepointType::MethodCall) => {
                    skip_value(reader, 0)?;
                    reader.utf()?;
                }
                Some(TracepointType::Loop) => {
                    reader.i32()?;
                }
                Some(_) => {}
                None => {
                    return Err(DecodeError::new(
                        kind_offset,
                        DecodeErrorKind::UnmatchedFooter,
                    ));
                }
            }
            Skipped::Footer
        }
        ObjectKind::BlockStart => Skipped::BlockStart(ThreadId(reader.i32()?)),
        ObjectKind::BlockEnd => Skipped::BlockEnd,
        ObjectKind::Eof => Skipped::Eof,
    })
}

fn skip_diff_status(reader: &mut ByteReader<'_>) -> SkipResult<()> {
    let offset = reader.offset();
    let raw = reader.i8()?;
    match DiffStatus::from_i8(raw) {
        Some(_) => Ok(()),
        None => Err(DecodeError::new(
            offset,
            DecodeErrorKind::InvalidDiffStatus(raw),
        )),
    }
}

fn skip_tracepoint(reader: &mut ByteReader<'_>) -> SkipResult<Skipped> {
    let type_offset = reader.offset();
    let type_byte = reader.u8()?;
    let tracepoint_type = TracepointType::from_byte(type_byte).ok_or_else(|| {
        DecodeError::new(
            type_offset,
            DecodeErrorKind::UnknownTracepointType(type_byte),
        )
    })?;
    reader.bytes(8)?; // code location, thread
    let event = EventId(reader.i32()?);
    skip_diff_status(reader)?;
    if tracepoint_type.is_container() {
        let count = reader.u8()?;
        for _ in 0..count {
            skip_diff_status(reader)?;
        }
    }
    match tracepoint_type {
        TracepointType::MethodCall => {
            reader.i32()?;
            skip_value(reader, 0)?;
            skip_values(reader, "argument")?;
            reader.i16()?;
        }
        TracepointType::ReadArray | TracepointType::WriteArray => {
            skip_value(reader, 0)?;
            reader.i32()?;
            skip_value(reader, 0)?;
        }
        TracepointType::ReadLocal | TracepointType::WriteLocal => {
            reader.i32()?;
            skip_value(reader, 0)?;
        }
        TracepointType::ReadField | TracepointType::WriteField => {
            reader.i32()?;
            skip_value(reader, 0)?;
            skip_value(reader, 0)?;
        }
        TracepointType::Loop => {
            reader.i32()?;
        }
        TracepointType::LoopIteration => {
            reader.bytes(8)?;
        }
        TracepointType::SnapshotBreakpoint => {
            reader.bytes(16)?;
            let frames = reader.count("stack frame", 4)?;
            reader.bytes(frames * 4)?;
            reader.i64()?;
            skip_values(reader, "captured value")?;
            if reader.bool()? {
                reader.utf()?;
            }
        }
        TracepointType::Throw | TracepointType::Catch => skip_value(reader, 0)?,
    }
    Ok(Skipped::Tracepoint {
        tracepoint_type,
        event,
    })
}

fn skip_values(reader: &mut ByteReader<'_>, what: &'static str) -> SkipResult<()> {
    let count = reader.count(what, 4)?;
    for _ in 0..count {
        skip_value(reader, 0)?;
    }
    Ok(())
}

fn skip_type(reader: &mut ByteReader<'_>) -> SkipResult<()> {
    let start = reader.offset();
    let mut dimensions = 0usize;
    loop {
        let tag = reader.u8()?;
        match tag {
            0 => {
                dimensions += 1;
                if dimensions > MAX_NESTING {
                    return Err(DecodeError::new(
                        start,
                        DecodeErrorKind::TooDeep(MAX_NESTING),
                    ));
                }
            }
            8 => {
                reader.utf()?;
                return Ok(());
            }
            1..=10 => return Ok(()),
            other => {
                return Err(DecodeError::new(
                    reader.offset() - 1,
                    DecodeErrorKind::UnknownTypeTag(other),
                ));
            }
        }
    }
}

/// Skips one value; the layout is [`Value::decode`](crate::model::Value::decode)'s.
pub fn skip_value(reader: &mut ByteReader<'_>, depth: usize) -> SkipResult<()> {
    let start = reader.offset();
    if depth > MAX_NESTING {
        return Err(DecodeError::new(
            start,
            DecodeErrorKind::TooDeep(MAX_NESTING),
        ));
    }
    let code = reader.i32()?;
    match code {
        -1 | -2 | -11 => {}
        -3 | -13 => {
            reader.u8()?;
        }
        -4 | -9 => {
            reader.bytes(2)?;
        }
        -5 | -7 => {
            reader.bytes(4)?;
        }
        -6 | -8 => {
            reader.bytes(8)?;
        }
        -10 | -12 | -14 | -15 => {
            reader.utf()?;
        }
        -16 => {
            reader.i32()?;
            reader.utf()?;
        }
        class if class >= 0 => {
            reader.i32()?;
            let count_offset = reader.offset();
            let count = reader.i32()?;
            if count >= 0 {
                let count = reader.check_count(count_offset, "object field", count as i64, 6)?;
                for _ in 0..count {
                    reader.utf()?;
                    skip_value(reader, depth + 1)?;
                }
            } else {
                let captured = -(count as i64) - 1;
                let captured = reader.check_count(count_offset, "array element", captured, 4)?;
                for _ in 0..captured {
                    skip_value(reader, depth + 1)?;
                }
                reader.i32()?;
            }
        }
        unknown => {
            return Err(DecodeError::new(
                start,
                DecodeErrorKind::UnknownValueCode(unknown),
            ));
        }
    }
    Ok(())
}
