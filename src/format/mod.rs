//! The on-disk format, version 22: object kinds, file headers, index cells,
//! and one codec per object kind (decode from a byte slice without copying,
//! encode to any `Write`). The codecs are `decode`/`encode` methods on the
//! [`model`](crate::model) types, defined in this module's files.

pub mod bytes;
pub mod index;
pub mod mutf8;
pub mod object;
pub mod offset;
mod reference;
pub mod skip;
mod tracepoint;
mod types;
mod value;

use std::fmt;

pub use bytes::ByteReader;
pub use index::{IndexCell, RawIndexCell};
pub use object::Object;

/// The magic number a data file starts with.
pub const DATA_MAGIC: u64 = 0x706E_5471_24EE_5F70;
/// The magic number an index file starts and ends with (the data magic, bitwise NOT).
pub const INDEX_MAGIC: u64 = !DATA_MAGIC;
/// The format version tracetree reads and writes.
pub const FORMAT_VERSION: i64 = 22;
/// Bytes in a data or index file header: magic and version.
pub const FILE_HEADER_LEN: u64 = 16;
/// Bytes of a `BLOCK_START` object: kind and thread id.
pub const BLOCK_HEADER_LEN: u64 = 5;

/// The kind byte every object starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// A thread's name.
    ThreadName = 0,
    /// A class descriptor.
    ClassDescriptor = 1,
    /// A method descriptor.
    MethodDescriptor = 2,
    /// A field descriptor.
    FieldDescriptor = 3,
    /// A local variable descriptor.
    VariableDescriptor = 4,
    /// A shared string.
    String = 5,
    /// An access path.
    AccessPath = 6,
    /// A code location.
    CodeLocation = 7,
    /// A tracepoint (a container's header, or a leaf).
    Tracepoint = 8,
    /// A container's footer.
    TracepointFooter = 9,
    /// The start of a block.
    BlockStart = 10,
    /// The end of a block.
    BlockEnd = 11,
    /// The end of the file.
    Eof = 12,
}

impl ObjectKind {
    /// All kinds, in on-disk order.
    pub const ALL: [ObjectKind; 13] = [
        ObjectKind::ThreadName,
        ObjectKind::ClassDescriptor,
        ObjectKind::MethodDescriptor,
        ObjectKind::FieldDescriptor,
        ObjectKind::VariableDescriptor,
        ObjectKind::String,
        ObjectKind::AccessPath,
        ObjectKind::CodeLocation,
        ObjectKind::Tracepoint,
        ObjectKind::TracepointFooter,
        ObjectKind::BlockStart,
        ObjectKind::BlockEnd,
        ObjectKind::Eof,
    ];

    /// The kind written as `byte`.
    pub fn from_byte(byte: u8) -> Option<Self> {
        Self::ALL.get(byte as usize).copied()
    }

    /// Whether objects of this kind are reference objects (kinds 0–7).
    pub fn is_reference(self) -> bool {
        (self as u8) <= ObjectKind::CodeLocation as u8
    }

    /// The name the format notes use (`CLASS_DESCRIPTOR`).
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::ThreadName => "THREAD_NAME",
            ObjectKind::ClassDescriptor => "CLASS_DESCRIPTOR",
            ObjectKind::MethodDescriptor => "METHOD_DESCRIPTOR",
            ObjectKind::FieldDescriptor => "FIELD_DESCRIPTOR",
            ObjectKind::VariableDescriptor => "VARIABLE_DESCRIPTOR",
            ObjectKind::String => "STRING",
            ObjectKind::AccessPath => "ACCESS_PATH",
            ObjectKind::CodeLocation => "CODE_LOCATION",
            ObjectKind::Tracepoint => "TRACEPOINT",
            ObjectKind::TracepointFooter => "TRACEPOINT_FOOTER",
            ObjectKind::BlockStart => "BLOCK_START",
            ObjectKind::BlockEnd => "BLOCK_END",
            ObjectKind::Eof => "EOF",
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Checks a data or index file header (`magic`, version 22).
pub fn check_file_header(bytes: &[u8], magic: u64) -> Result<(), crate::DecodeError> {
    let mut reader = ByteReader::new(bytes, 0);
    let found = reader.i64()? as u64;
    if found != magic {
        return Err(crate::DecodeError::new(
            0,
            crate::DecodeErrorKind::BadMagic {
                found,
                expected: magic,
            },
        ));
    }
    let version = reader.i64()?;
    if version != FORMAT_VERSION {
        return Err(crate::DecodeError::new(
            8,
            crate::DecodeErrorKind::UnsupportedVersion(version),
        ));
    }
    Ok(())
}

/// The 16-byte header of a data (`magic` = [`DATA_MAGIC`]) or index file.
pub fn file_header(magic: u64) -> [u8; 16] {
    let mut header = [0u8; 16];
    header[..8].copy_from_slice(&magic.to_be_bytes());
    header[8..].copy_from_slice(&FORMAT_VERSION.to_be_bytes());
    header
}
