//! The byte-level pieces the readers are built from, gathered for tools
//! that check, repair or rewrite trace files at the level of their bytes
//! (and for the tests that check the readers independently). The readers
//! and writers of [`read`](crate::read) and [`write`](crate::write) are
//! the API; these are their parts.
//!
//! **No stability promise**: what this module holds, and how, may change
//! in any release, as the readers' internals do. It names each item it
//! gives; the modules they come from stay private.

pub use crate::common::{IndexCell, ObjectKind};
/// Big-endian primitives over byte slices: the decoders' reader.
pub use crate::format::bytes::ByteReader;
pub use crate::format::index::{CELL_LEN, INDEX_FOOTER_LEN, parse_index};
pub use crate::format::object::peek_kind_and_id;
pub use crate::format::{
    BLOCK_HEADER_LEN, DATA_MAGIC, FILE_HEADER_LEN, FORMAT_VERSION, INDEX_MAGIC, Object, file_header,
};
pub use crate::import::flow::{FlowDamage, FlowDecoder, FlowEvent};
pub use crate::read::block::{BlockStep, decode_block};
pub use crate::read::lookup::sidecar::{OPENED_MAGIC, SAMPLED_BLOCKS};
pub use crate::read::rebuild::{
    DEFAULT_WINDOW, MAX_WORKERS_PER_CORE, MIN_CHUNK, RebuiltIndex, rebuild_index,
    rebuild_index_windowed,
};
