//! The lookup sidecar's records (`docs/FORMAT.md`, "The lookup sidecar"):
//! written and read in place by `read::lookup::sidecar`, little-endian,
//! each section 8-aligned.

use zerocopy::little_endian::{I32, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The sidecar's magic bytes.
pub(crate) const SIDECAR_MAGIC: [u8; 8] = *b"TTLOOKUP";

/// The magic bytes of the note a deferring first open leaves in the
/// sidecar's place (`SidecarOutcome::Deferred`): a sidecar header with the
/// files' stamps and no sections.
pub(crate) const OPENED_MAGIC: [u8; 8] = *b"TTOPENED";

/// The sidecar layout's version; a sidecar of another version is ignored.
pub(crate) const SIDECAR_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct Header {
    pub(crate) magic: [u8; 8],
    pub(crate) version: U32,
    pub(crate) status: U32,
    pub(crate) file_len: U64,
    pub(crate) data_len: U64,
    pub(crate) data_mtime: U64,
    pub(crate) index_len: U64,
    pub(crate) index_mtime: U64,
    pub(crate) index_hash: U64,
    pub(crate) frame_hash: U64,
    pub(crate) blocks: U64,
    pub(crate) threads: U64,
    pub(crate) references: U64,
    pub(crate) reference_cells: U64,
    pub(crate) repaired: U64,
    pub(crate) unfinished: U64,
    pub(crate) dropped_bytes: U64,
    pub(crate) dropped_blocks: U64,
    pub(crate) trailing_bytes: U64,
    pub(crate) missing_eof: U64,
    pub(crate) problem_len: U64,
    pub(crate) data_ctime: U64,
    pub(crate) data_inode: U64,
    pub(crate) index_ctime: U64,
    pub(crate) index_inode: U64,
    pub(crate) stamped_at: U64,
    pub(crate) zero: U64,
}

pub(crate) const HEADER_LEN: usize = std::mem::size_of::<Header>();

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct BlockRecord {
    pub(crate) start: U64,
    pub(crate) end: U64,
    pub(crate) thread: I32,
    pub(crate) zero: U32,
}

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct ThreadRecord {
    pub(crate) thread: I32,
    pub(crate) flags: U32,
    pub(crate) containers: U64,
    pub(crate) crossing_cell: U64,
}

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct ReferenceRecord {
    pub(crate) offset: U64,
    pub(crate) id: I32,
    pub(crate) kind: u8,
    pub(crate) zero: [u8; 3],
}

pub(crate) const EVENTS_ASCEND: u32 = 1;
pub(crate) const CROSSING: u32 = 2;

pub(crate) const STATUS_USED: u32 = 0;
pub(crate) const STATUS_NO_FOOTER: u32 = 1;
pub(crate) const STATUS_REBUILT: u32 = 2;
pub(crate) const STATUS_READ_THROUGH: u32 = 3;

/// Bytes of a file's head and tail that go into its checksum.
pub(crate) const EDGE: usize = 4096;

/// Bytes before and including each `BLOCK_END` that go into the framing
/// checksum.
pub(crate) const BLOCK_TAIL: u64 = 16;

/// A 64-bit checksum (FxHash's word mix) for detecting changed files; not
/// meant to resist an adversary, only to notice edits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checksum(pub(crate) u64);

impl Checksum {
    const SEED: u64 = 0xcbf2_9ce4_8422_2325;

    pub(crate) fn new() -> Self {
        Checksum(Self::SEED)
    }

    pub(crate) fn word(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.word(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let mut last = [0u8; 8];
        last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.word(u64::from_le_bytes(last));
        self.word(bytes.len() as u64);
    }
}

/// A file's first and last [`EDGE`] bytes, checksummed.
pub(crate) fn edges(bytes: &[u8]) -> Checksum {
    let mut sum = Checksum::new();
    sum.bytes(&bytes[..bytes.len().min(EDGE)]);
    sum.bytes(&bytes[bytes.len().saturating_sub(EDGE)..]);
    sum
}

/// `at` rounded up to a multiple of 8.
pub(crate) fn pad8(at: usize) -> usize {
    at.div_ceil(8) * 8
}
