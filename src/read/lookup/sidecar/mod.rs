//! The lookup sidecar: a trace's lookup structures persisted next to it
//! (`TRACE.ttlookup`), so that a second open costs O(1) in the trace size.
//!
//! The sidecar holds flat little-endian arrays read in place from a memory
//! mapping with `zerocopy`: the block list, each thread's containers in start
//! order (content starts, content ends, event ids, and the chunk maxima the
//! parent search uses), and the reference objects' positions. Opening with a
//! valid sidecar maps it, checks its header, the files' stamps and the
//! section lengths, checks the block list's arithmetic (contiguous, inside
//! the data) and the framing of a sample of blocks in the data; no
//! container is looked at and no container table is built.
//!
//! A sidecar is *stale* when the data file or the index file changed since
//! it was written: it records both files' lengths, modification and
//! status-change times and inode numbers, a checksum of the index's first
//! and last 4 KiB, and a checksum of the data file's framing (its first and
//! last 4 KiB, and of every block its `BLOCK_START` header and the 16 bytes
//! up to and including its `BLOCK_END`). When the stamps vouch for the data
//! (its `ctime` is more than 2 s older than the moment they were taken, so a
//! later change must have moved it), only a sample of
//! [`SAMPLED_BLOCKS`] blocks is read for the framing check; otherwise every
//! block is, and the checksum compared. A stale or malformed sidecar is ignored (the report says
//! why), the lookups are made from the index or rebuilt, and a new sidecar
//! replaces it. The recorder's `.idx` is never written.
//!
//! What is not checked at open, to keep it O(1): the container arrays'
//! values. They are trusted only to be arrays of the recorded lengths; a
//! sidecar whose values were altered (with its header intact) gives wrong
//! ranges, which the reader meets as typed decode errors, never a panic. A
//! data file changed inside a block's payload, with the same length, framing
//! and modification time, is not detected (it would take reading the whole
//! file); see ARCHITECTURE.md, "Lookup sidecar".
//!
//! Layout (all integers little-endian; every section starts 8-aligned):
//!
//! | offset | bytes | content |
//! |---|---|---|
//! | 0 | 8 | magic `TTLOOKUP` |
//! | 8 | 4 | sidecar version ([`SIDECAR_VERSION`]) |
//! | 12 | 4 | status: 0 index used, 1 index used (no footer), 2 rebuilt |
//! | 16 | 8 | sidecar length |
//! | 24 | 8 | data file length |
//! | 32 | 8 | data file mtime (ns since the epoch; 0 unknown) |
//! | 40 | 8 | index file length (0 when there was none) |
//! | 48 | 8 | index file mtime |
//! | 56 | 8 | index checksum (first and last 4 KiB) |
//! | 64 | 8 | data framing checksum |
//! | 72 | 8 | blocks `B` |
//! | 80 | 8 | threads `T` |
//! | 88 | 8 | reference records `R` |
//! | 96 | 8 | reference cells (duplicates included), for the report |
//! | 104 | 8 | repaired containers |
//! | 112 | 8 | unfinished containers |
//! | 120 | 8 | dropped bytes |
//! | 128 | 8 | dropped blocks |
//! | 136 | 8 | trailing bytes after `EOF` |
//! | 144 | 8 | 1 if the data has no `EOF` |
//! | 152 | 8 | length `P` of the rebuild reason text |
//! | 160 | 8 | data file ctime (ns; 0 unknown) |
//! | 168 | 8 | data file inode |
//! | 176 | 8 | index file ctime |
//! | 184 | 8 | index file inode |
//! | 192 | 8 | when the stamps were taken (ns since the epoch) |
//! | 200 | 8 | zero |
//! | 208 | 24·B | blocks: start u64, end u64, thread i32, 0 u32 |
//! | | 24·T | threads: id i32, flags u32 (1 events ascend, 2 crossing cells), containers `n` u64, crossing cell u64 |
//! | | 16·R | references: offset u64, id i32, kind u8, 3 zero bytes |
//! | | P, padded to 8 | the rebuild reason (UTF-8) |
//! | | per thread | `n` starts u64, `n` ends u64, `n` event ids i32 (padded to 8), `⌈n/256⌉` chunk maxima u64 |

mod layout;
mod load;
#[cfg(test)]
mod tests;
mod write;

pub use layout::SAMPLED_BLOCKS;
pub(crate) use layout::{Files, LoadedSidecar, Stamp};
pub(crate) use load::load;
pub(crate) use write::{Summary, write, write_scratch};

use std::path::{Path, PathBuf};

/// The sidecar's magic bytes.
pub const SIDECAR_MAGIC: [u8; 8] = *b"TTLOOKUP";

/// The sidecar layout's version; a sidecar of another version is ignored.
pub const SIDECAR_VERSION: u32 = 1;

/// The sidecar of a data file: its path plus `.ttlookup`.
pub fn sidecar_path(data: &Path) -> PathBuf {
    let mut path = data.as_os_str().to_owned();
    path.push(".ttlookup");
    PathBuf::from(path)
}

/// Whether a reader uses and writes the lookup sidecar.
///
/// Where the lookups are, for memory: a sidecar (next to the trace, or a
/// scratch one) is mapped, so the container tables are page cache the
/// kernel can drop; without one they are on the heap, 4 bytes per
/// container (about 38 MB per GB of trace), for the reader's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SidecarPolicy {
    /// Use a valid sidecar; write one after building the lookups otherwise
    /// (failures to write are reported, never an error). If it cannot be
    /// written next to the trace (a read-only directory), the same bytes
    /// go to an unlinked scratch file in the temporary directory
    /// ([`std::env::temp_dir`]), mapped from there: the heap stays bounded
    /// ([`SidecarReport::scratch`]).
    #[default]
    ReadWrite,
    /// Use a valid sidecar; never write one next to the trace. Without a
    /// valid one, the lookups go to an unlinked scratch file, as for
    /// [`ReadWrite`](Self::ReadWrite) in a read-only directory.
    ReadOnly,
    /// Neither read nor write one, nor a scratch file: the container
    /// tables stay on the heap (memory grows with the trace).
    Off,
}

/// Why a sidecar was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SidecarProblem {
    /// There is none (or it could not be opened).
    #[error("missing ({0})")]
    Missing(String),
    /// Its bytes do not follow the layout.
    #[error("malformed at byte {at}: {what}")]
    Malformed {
        /// Where in the sidecar.
        at: u64,
        /// What is wrong.
        what: String,
    },
    /// Written by another layout version.
    #[error("version {0}, expected {SIDECAR_VERSION}")]
    Version(u32),
    /// The data or index file changed since it was written.
    #[error("stale: {0}")]
    Stale(String),
    /// It describes a rebuild, and the caller requires the index file.
    #[error("made by a rebuild, and the index is required")]
    Rebuilt,
}

/// What happened to the sidecar when a trace was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SidecarOutcome {
    /// It was valid and the lookups came from it.
    Used,
    /// The lookups were built, and a new sidecar was written.
    Written,
    /// Writing one failed (a read-only directory, a full disk); the trace
    /// opened anyway.
    NotWritten(String),
    /// None was written: the policy is read-only, or a rebuild was asked
    /// for.
    Skipped,
}

/// The sidecar part of an [`IndexReport`](crate::read::IndexReport).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidecarReport {
    /// The sidecar's path.
    pub path: PathBuf,
    /// Why an existing (or missing) sidecar was not used; `None` when used.
    pub rejected: Option<SidecarProblem>,
    /// Used, written or not.
    pub outcome: SidecarOutcome,
    /// When used: how many blocks' framing was read from the data file (all
    /// of them, or a sample when the files' stamps vouch for the data).
    pub framing_checked: usize,
    /// None was written next to the trace (a read-only directory, a failed
    /// write, or [`SidecarPolicy::ReadOnly`]), and the lookups were written
    /// to an unlinked scratch file in the temporary directory and mapped
    /// from there instead of staying on the heap (gone when the reader is
    /// dropped).
    pub scratch: bool,
}

impl SidecarReport {
    /// Whether the lookups came from the sidecar.
    pub fn used(&self) -> bool {
        self.outcome == SidecarOutcome::Used
    }
}
