//! The sidecar's bytes: header and record layouts (the table in the
//! module above), the checksum of the data's edges, the stamps that vouch
//! for a data file.

use std::path::Path;
use std::time::UNIX_EPOCH;

use zerocopy::little_endian::{I32, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::*;
use crate::format::BLOCK_HEADER_LEN;
use crate::format::ContextBuilder;
use crate::read::eager::LoadReport;
use crate::read::lookup::block_table::BlockInfo;
use crate::read::lookup::problem::IndexStatus;
use crate::read::lookup::table::Lookup;
use crate::storage::TraceBytes;

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct Header {
    pub(super) magic: [u8; 8],
    pub(super) version: U32,
    pub(super) status: U32,
    pub(super) file_len: U64,
    pub(super) data_len: U64,
    pub(super) data_mtime: U64,
    pub(super) index_len: U64,
    pub(super) index_mtime: U64,
    pub(super) index_hash: U64,
    pub(super) frame_hash: U64,
    pub(super) blocks: U64,
    pub(super) threads: U64,
    pub(super) references: U64,
    pub(super) reference_cells: U64,
    pub(super) repaired: U64,
    pub(super) unfinished: U64,
    pub(super) dropped_bytes: U64,
    pub(super) dropped_blocks: U64,
    pub(super) trailing_bytes: U64,
    pub(super) missing_eof: U64,
    pub(super) problem_len: U64,
    pub(super) data_ctime: U64,
    pub(super) data_inode: U64,
    pub(super) index_ctime: U64,
    pub(super) index_inode: U64,
    pub(super) stamped_at: U64,
    pub(super) zero: U64,
}

pub(super) const HEADER_LEN: usize = std::mem::size_of::<Header>();

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct BlockRecord {
    pub(super) start: U64,
    pub(super) end: U64,
    pub(super) thread: I32,
    pub(super) zero: U32,
}

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct ThreadRecord {
    pub(super) thread: I32,
    pub(super) flags: U32,
    pub(super) containers: U64,
    pub(super) crossing_cell: U64,
}

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct ReferenceRecord {
    pub(super) offset: U64,
    pub(super) id: I32,
    pub(super) kind: u8,
    pub(super) zero: [u8; 3],
}

pub(super) const EVENTS_ASCEND: u32 = 1;
pub(super) const CROSSING: u32 = 2;

pub(super) const STATUS_USED: u32 = 0;
pub(super) const STATUS_NO_FOOTER: u32 = 1;
pub(super) const STATUS_REBUILT: u32 = 2;
pub(super) const STATUS_READ_THROUGH: u32 = 3;

/// Bytes of a file's head and tail that go into its checksum.
pub(super) const EDGE: usize = 4096;

/// Bytes before and including each `BLOCK_END` that go into the framing
/// checksum.
pub(super) const BLOCK_TAIL: u64 = 16;

/// A 64-bit checksum (FxHash's word mix) for detecting changed files; not
/// meant to resist an adversary, only to notice edits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Checksum(pub(super) u64);

impl Checksum {
    const SEED: u64 = 0xcbf2_9ce4_8422_2325;

    pub(super) fn new() -> Self {
        Checksum(Self::SEED)
    }

    pub(super) fn word(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    pub(super) fn bytes(&mut self, bytes: &[u8]) {
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
pub(super) fn edges(bytes: &[u8]) -> Checksum {
    let mut sum = Checksum::new();
    sum.bytes(&bytes[..bytes.len().min(EDGE)]);
    sum.bytes(&bytes[bytes.len().saturating_sub(EDGE)..]);
    sum
}

/// Adds one block's framing to `sum`: its header, and the bytes up to and
/// including its `BLOCK_END` (both inside `data`: checked by the caller).
pub(super) fn add_block(sum: &mut Checksum, data: &[u8], block: &BlockInfo) {
    let (start, end) = (block.start.0 as usize, block.end.0 as usize);
    sum.bytes(&data[start..start + BLOCK_HEADER_LEN as usize]);
    let from = block
        .end
        .0
        .saturating_sub(BLOCK_TAIL)
        .max(block.payload_start().0) as usize;
    sum.bytes(&data[from..=end]);
}

/// What the file system says of a file: enough to notice any change made
/// through it. The status-change time (`ctime`) is set by the kernel on
/// every write and every metadata change — including a forged `mtime` — and
/// cannot be set back by a program.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) len: u64,
    /// Modification time, ns since the epoch (0: unknown).
    pub(crate) mtime: u64,
    /// Status-change time, ns since the epoch (0: unknown).
    pub(crate) ctime: u64,
    /// Inode number (0: unknown).
    pub(crate) inode: u64,
}

impl Stamp {
    /// The stamp of the file at `path` (zero when it cannot be read).
    pub(crate) fn of(path: &Path) -> Stamp {
        std::fs::metadata(path)
            .map(|meta| {
                #[cfg(unix)]
                let (ctime, inode) = {
                    use std::os::unix::fs::MetadataExt;
                    let ctime = (meta.ctime().max(0) as u64)
                        .saturating_mul(1_000_000_000)
                        .saturating_add(meta.ctime_nsec().max(0) as u64);
                    (ctime, meta.ino())
                };
                #[cfg(not(unix))]
                let (ctime, inode) = (0, 0);
                Stamp {
                    len: meta.len(),
                    mtime: meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_nanos() as u64),
                    ctime,
                    inode,
                }
            })
            .unwrap_or_default()
    }

    /// The time now, as stamps count it.
    pub(crate) fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    }
}

/// How close to the moment the stamps were taken a file's `ctime` may be
/// for the stamps alone to be trusted: a change in the same tick of the
/// file system's clock would leave the `ctime` as it was (ext4 and tmpfs
/// tick every few ms; some file systems every 1–2 s).
pub(super) const RACY_NS: u64 = 2_000_000_000;

/// Blocks whose framing is read at an open the stamps vouch for.
pub const SAMPLED_BLOCKS: usize = 32;

/// The data and index files a sidecar belongs to.
pub(crate) struct Files<'a> {
    pub(crate) data: &'a TraceBytes,
    /// When the stamps were taken (ns since the epoch), before mapping.
    pub(crate) stamped_at: u64,
    pub(crate) data_stamp: Stamp,
    /// The index file, if one was mapped, and its stamp.
    pub(crate) index: Option<(&'a TraceBytes, Stamp)>,
}

impl Files<'_> {
    /// The index's length, mtime, edge checksum, ctime and inode (zeros
    /// without an index).
    pub(super) fn index_fields(&self) -> [u64; 5] {
        match self.index {
            Some((bytes, stamp)) => [
                bytes.len(),
                stamp.mtime,
                edges(bytes.as_slice()).0,
                stamp.ctime,
                stamp.inode,
            ],
            None => [0; 5],
        }
    }
}

/// Lookup structures read from a sidecar.
pub(crate) struct LoadedSidecar {
    pub(crate) lookup: Lookup,
    pub(crate) context: ContextBuilder,
    pub(crate) references: usize,
    pub(crate) data: LoadReport,
    pub(crate) repaired: usize,
    pub(crate) status: IndexStatus,
    /// Blocks whose framing was read in the data file.
    pub(crate) framing_checked: usize,
}

pub(super) fn malformed(at: usize, what: impl Into<String>) -> SidecarProblem {
    SidecarProblem::Malformed {
        at: at as u64,
        what: what.into(),
    }
}

/// Reads `count` records of `T` at `*at`, moving `*at` past them (8-aligned).
pub(super) fn records<'a, T: FromBytes + KnownLayout + Immutable + Unaligned>(
    bytes: &'a [u8],
    at: &mut usize,
    count: u64,
    what: &str,
) -> Result<&'a [T], SidecarProblem> {
    let len = usize::try_from(count)
        .ok()
        .and_then(|count| count.checked_mul(std::mem::size_of::<T>()))
        .filter(|&len| len <= bytes.len().saturating_sub(*at))
        .ok_or_else(|| malformed(*at, format!("{count} {what} do not fit")))?;
    let slice = <[T]>::ref_from_bytes(&bytes[*at..*at + len])
        .map_err(|_| malformed(*at, format!("{what} are not whole records")))?;
    *at = pad8(*at + len);
    Ok(slice)
}

pub(super) fn pad8(at: usize) -> usize {
    at.div_ceil(8) * 8
}
