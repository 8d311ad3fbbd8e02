//! The on-disk format, version 22: object kinds, file headers, index cells,
//! and one codec per object kind (decode from a byte slice without copying,
//! encode to any `Write`). The codecs are `decode`/`encode` methods on the
//! [`model`](crate::model) types, defined in this module's files.

pub(crate) mod bytes;
mod context;
pub mod index;
pub(crate) mod object;
mod reference;
pub(crate) mod sidecar;
pub(crate) mod skip;
mod tracepoint;
mod types;
mod value;

pub use crate::common::ObjectKind;
pub(crate) use bytes::ByteReader;
pub use context::{ContextBuilder, TraceContext};
pub use index::IndexCell;
pub use object::Object;
pub use types::MAX_NESTING;

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

/// Checks a data or index file header (`magic`, version 22); an error
/// is placed in the index file when `magic` is [`INDEX_MAGIC`].
pub fn check_file_header(bytes: &[u8], magic: u64) -> Result<(), crate::DecodeError> {
    let error = |offset: u64, kind| {
        if magic == INDEX_MAGIC {
            crate::DecodeError::in_index(offset, kind)
        } else {
            crate::DecodeError::new(crate::common::PhysicalOffset(offset), kind)
        }
    };
    let mut reader = ByteReader::new(bytes, 0);
    let found = reader.i64().map_err(|e| error(0, e.kind))? as u64;
    if found != magic {
        return Err(error(
            0,
            crate::DecodeErrorKind::BadMagic {
                found,
                expected: magic,
            },
        ));
    }
    let version = reader.i64().map_err(|e| error(8, e.kind))?;
    if version != FORMAT_VERSION {
        return Err(error(
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
