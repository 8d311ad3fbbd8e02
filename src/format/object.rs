//! [`Object`]: any object of a data file, decoded by its kind byte. This is
//! the one entry point every reader (eager, lazy, rebuild) decodes through.

use std::io::{self, Write};

use crate::common::PhysicalOffset;
use crate::common::ThreadId;
use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::ObjectKind;
use crate::format::bytes::{ByteReader, WriteBigEndian};
use crate::model::{
    AccessPath, ClassDescriptor, CodeLocation, FieldDescriptor, Footer, MethodDescriptor,
    StringObject, ThreadName, Tracepoint, TracepointType, VariableDescriptor,
};

/// One decoded object of a data file.
#[derive(Debug, Clone, PartialEq)]
pub enum Object<'a> {
    /// `THREAD_NAME`.
    ThreadName(ThreadName<'a>),
    /// `CLASS_DESCRIPTOR`.
    ClassDescriptor(ClassDescriptor<'a>),
    /// `METHOD_DESCRIPTOR`.
    MethodDescriptor(MethodDescriptor<'a>),
    /// `FIELD_DESCRIPTOR`.
    FieldDescriptor(FieldDescriptor<'a>),
    /// `VARIABLE_DESCRIPTOR`.
    VariableDescriptor(VariableDescriptor<'a>),
    /// `STRING`.
    String(StringObject<'a>),
    /// `ACCESS_PATH`.
    AccessPath(AccessPath),
    /// `CODE_LOCATION`.
    CodeLocation(CodeLocation),
    /// `TRACEPOINT`: a leaf, or a container's header.
    Tracepoint(Tracepoint<'a>),
    /// `TRACEPOINT_FOOTER` of the innermost open container.
    Footer(Footer<'a>),
    /// `BLOCK_START` of a thread's block.
    BlockStart(ThreadId),
    /// `BLOCK_END`.
    BlockEnd,
    /// `EOF`.
    Eof,
}

impl<'a> Object<'a> {
    /// Decodes the object that starts `bytes`, which lie at offset `at` of
    /// their file (errors name offsets in the file), and gives its length.
    /// A footer can only be decoded knowing the type of the container it
    /// closes: `open_container`.
    pub fn parse(
        bytes: &'a [u8],
        at: u64,
        open_container: Option<TracepointType>,
    ) -> Result<(Self, usize), DecodeError> {
        let mut reader = ByteReader::new(bytes, at);
        let object = Object::decode(&mut reader, open_container)?;
        Ok((object, reader.position()))
    }

    /// Decodes the object at the reader's position. A footer can only be
    /// decoded knowing the type of the container it closes: `open_container`.
    pub(crate) fn decode(
        reader: &mut ByteReader<'a>,
        open_container: Option<TracepointType>,
    ) -> Result<Self, DecodeError> {
        let kind_offset = reader.offset();
        let kind_byte = reader.u8()?;
        let kind = ObjectKind::from_byte(kind_byte).ok_or_else(|| {
            DecodeError::new(
                PhysicalOffset(kind_offset),
                DecodeErrorKind::UnknownObjectKind(kind_byte),
            )
        })?;
        Ok(match kind {
            ObjectKind::ThreadName => Object::ThreadName(ThreadName::decode(reader)?),
            ObjectKind::ClassDescriptor => {
                Object::ClassDescriptor(ClassDescriptor::decode(reader)?)
            }
            ObjectKind::MethodDescriptor => {
                Object::MethodDescriptor(MethodDescriptor::decode(reader)?)
            }
            ObjectKind::FieldDescriptor => {
                Object::FieldDescriptor(FieldDescriptor::decode(reader)?)
            }
            ObjectKind::VariableDescriptor => {
                Object::VariableDescriptor(VariableDescriptor::decode(reader)?)
            }
            ObjectKind::String => Object::String(StringObject::decode(reader)?),
            ObjectKind::AccessPath => Object::AccessPath(AccessPath::decode(reader)?),
            ObjectKind::CodeLocation => Object::CodeLocation(CodeLocation::decode(reader)?),
            ObjectKind::Tracepoint => Object::Tracepoint(Tracepoint::decode(reader)?),
            ObjectKind::TracepointFooter => match open_container {
                Some(container) => Object::Footer(Footer::decode(reader, container)?),
                None => {
                    return Err(DecodeError::new(
                        PhysicalOffset(kind_offset),
                        DecodeErrorKind::UnmatchedFooter,
                    ));
                }
            },
            ObjectKind::BlockStart => Object::BlockStart(ThreadId(reader.i32()?)),
            ObjectKind::BlockEnd => Object::BlockEnd,
            ObjectKind::Eof => Object::Eof,
        })
    }

    /// The object's kind.
    pub fn kind(&self) -> ObjectKind {
        match self {
            Object::ThreadName(_) => ObjectKind::ThreadName,
            Object::ClassDescriptor(_) => ObjectKind::ClassDescriptor,
            Object::MethodDescriptor(_) => ObjectKind::MethodDescriptor,
            Object::FieldDescriptor(_) => ObjectKind::FieldDescriptor,
            Object::VariableDescriptor(_) => ObjectKind::VariableDescriptor,
            Object::String(_) => ObjectKind::String,
            Object::AccessPath(_) => ObjectKind::AccessPath,
            Object::CodeLocation(_) => ObjectKind::CodeLocation,
            Object::Tracepoint(_) => ObjectKind::Tracepoint,
            Object::Footer(_) => ObjectKind::TracepointFooter,
            Object::BlockStart(_) => ObjectKind::BlockStart,
            Object::BlockEnd => ObjectKind::BlockEnd,
            Object::Eof => ObjectKind::Eof,
        }
    }

    /// The id a reference object is indexed by (the thread for `THREAD_NAME`).
    pub fn reference_id(&self) -> Option<i32> {
        Some(match self {
            Object::ThreadName(o) => o.thread.0,
            Object::ClassDescriptor(o) => o.id.0,
            Object::MethodDescriptor(o) => o.id.0,
            Object::FieldDescriptor(o) => o.id.0,
            Object::VariableDescriptor(o) => o.id.0,
            Object::String(o) => o.id.0,
            Object::AccessPath(o) => o.id.0,
            Object::CodeLocation(o) => o.id.0,
            _ => return None,
        })
    }

    /// Encodes the object, kind byte first.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        match self {
            Object::ThreadName(o) => o.encode(out),
            Object::ClassDescriptor(o) => o.encode(out),
            Object::MethodDescriptor(o) => o.encode(out),
            Object::FieldDescriptor(o) => o.encode(out),
            Object::VariableDescriptor(o) => o.encode(out),
            Object::String(o) => o.encode(out),
            Object::AccessPath(o) => o.encode(out),
            Object::CodeLocation(o) => o.encode(out),
            Object::Tracepoint(o) => o.encode(out),
            Object::Footer(o) => o.encode(out),
            Object::BlockStart(thread) => {
                out.put_u8(ObjectKind::BlockStart as u8)?;
                out.put_i32(thread.0)
            }
            Object::BlockEnd => out.put_u8(ObjectKind::BlockEnd as u8),
            Object::Eof => out.put_u8(ObjectKind::Eof as u8),
        }
    }
}

/// Reads the kind and id at the start of a reference object or block header
/// without decoding the rest; used to check index cells cheaply.
pub fn peek_kind_and_id(data: &[u8], offset: u64) -> Option<(ObjectKind, i32)> {
    let start = usize::try_from(offset).ok()?;
    let kind = ObjectKind::from_byte(*data.get(start)?)?;
    // A code location has its own kind byte before the id.
    let id_at = if kind == ObjectKind::CodeLocation {
        start + 2
    } else {
        start + 1
    };
    let id = data.get(id_at..id_at + 4)?;
    Some((kind, i32::from_be_bytes(id.try_into().ok()?)))
}
