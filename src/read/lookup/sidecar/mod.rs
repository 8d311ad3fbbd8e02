//! The lookup sidecar: a trace's lookup structures persisted next to it
//! (`NAME-HASH.ttlookup` in a sidecar directory), so that a second open costs O(1) in the trace size.
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
//! file; see "The lookup sidecar" below).
//!
//! Layout: `docs/FORMAT.md`, "The lookup sidecar".
//!
//! # The lookup sidecar
//!
//! Even with a valid index, the first expansion of a thread builds its
//! start-order table (~75–125 ms per 0.5 GB thread), and without an index the
//! open is a rebuild. `read::sidecar` persists the finished lookup structures
//! in `NAME-HASH.ttlookup` in the sidecar directory the caller names
//! (`LazyOptions::sidecar_dir`; never beside the trace, and the recorder's
//! `.idx` is never written; past the directory's budget the least recently
//! written sidecars are removed), so that a second open costs O(1) in the trace size: map, compare
//! the files' stamps, check the header and section lengths, the block records'
//! arithmetic (a few µs per thousand blocks) and the framing of a sample of
//! blocks in the data (below); no container is looked at and no table is built — each thread's
//! `ContainerTable` is an `Order::Identity` table over the mapped arrays
//! (`containers::MappedCells`, read through `CellView`'s flat mode; its chunk
//! maxima are `Words::Mapped`).
//!
//! **Layout** (every integer little-endian, every section 8-aligned; the
//! header is a `zerocopy` struct of `little_endian::U64`/`U32` fields, and the
//! arrays are read in place as `&[U64]`/`&[I32]` — on little-endian machines
//! each access is a plain load):
//!
//! | offset | bytes | content |
//! |---|---|---|
//! | 0 | 8 | magic `TTLOOKUP` |
//! | 8 | 4 | sidecar version (1) |
//! | 12 | 4 | status: 0 index used, 1 index used without footer, 2 rebuilt, 3 rebuilt as asked (`IndexProblem::Requested`) |
//! | 16 | 8 | sidecar length |
//! | 24 | 8 | data file length |
//! | 32 | 8 | data file mtime, ns (0 unknown) |
//! | 40 | 8 | index file length (0: there was none) |
//! | 48 | 8 | index file mtime |
//! | 56 | 8 | index checksum: its first and last 4 KiB |
//! | 64 | 8 | data framing checksum (below) |
//! | 72 | 8 | blocks `B` |
//! | 80 | 8 | threads `T` |
//! | 88 | 8 | reference records `R` (first copy of each id) |
//! | 96 | 8 | reference cells with duplicates (for the report) |
//! | 104–151 | 6 × 8 | report: repaired containers, unfinished containers, dropped bytes, dropped blocks, trailing bytes, no-`EOF` flag |
//! | 152 | 8 | length `P` of the rebuild reason |
//! | 160 | 8 | data file ctime, ns (0 unknown) |
//! | 168 | 8 | data file inode |
//! | 176 | 8 | index file ctime |
//! | 184 | 8 | index file inode |
//! | 192 | 8 | when these stamps were taken, ns since the epoch (just before mapping the files) |
//! | 200 | 8 | zero |
//! | 208 | 24·B | blocks: start u64, end u64, thread i32, zero u32 |
//! | | 24·T | threads, ascending: id i32, flags u32 (1: event ids ascend, 2: the index's cells crossed), containers `n` u64, crossing cell u64 |
//! | | 16·R | references: offset u64, id i32, kind u8, 3 zero bytes |
//! | | P, padded | the rebuild reason, UTF-8 (reported as `IndexProblem::Recorded`) |
//! | | per thread | `n` content starts u64, `n` content ends u64, `n` event ids i32 (padded), ⌈n/256⌉ chunk maxima u64, all in start order |
//!
//! Section positions are not stored: they follow from the counts, computed
//! with checked arithmetic, and must end exactly at the recorded (and actual)
//! length. Size: 20 bytes per container (the index spends 21), ~24 per block.
//!
//! **Validation, in order; any failure ignores the sidecar** (the report's
//! `sidecar.rejected` says why; the lookups then come from the index or a
//! rebuild, and a new sidecar replaces the old one):
//!
//! 1. `Malformed`/`Version`: shorter than the header, bad magic, another
//!    version, recorded length ≠ file length, counts that do not fit, bytes
//!    after the last array, a thread list that differs from the blocks'.
//! 2. `Stale`: the data file's length, mtime, ctime or inode differs; the
//!    index's length, mtime, ctime, inode or edge checksum differs (a missing
//!    index records zeros, so an index that appears makes the sidecar stale,
//!    and vice versa). A copy or a replacement by rename has another inode
//!    (and ctime): its sidecar is rebuilt once.
//! 3. Blocks: contiguous from the data header and inside the data (arithmetic
//!    over the sidecar's block records, all of them), and their *framing* in
//!    the data file: each `BLOCK_START` with the recorded thread id and a
//!    `BLOCK_END` where recorded; the bytes after the last block agree with
//!    the recorded report (`EOF` and trailing bytes, or a dropped half-written
//!    block, or nothing). The *framing checksum* covers the data's first and
//!    last 4 KiB plus, per block, its 5-byte header and the 16 bytes up to and
//!    including its `BLOCK_END` (the end of its last objects, typically
//!    footers).
//! 4. References: each offset holds an object of the recorded kind and id.
//!
//! *Which blocks are read* ("racy" stamps, as git calls them). The ctime is
//! set by the kernel on every write and on every metadata change (forging the
//! mtime back sets it too) and cannot be set back by a program; so if the data
//! file's ctime is *well before* the moment its stamps were taken (more than
//! `RACY_NS` = 2 s, more than the file-system clock's tick), any later change
//! must have moved it, and matching stamps vouch for the data: the framing of
//! only `SAMPLED_BLOCKS` = 32 evenly spaced blocks (and the last) is read, and
//! references are bounds-checked. Otherwise — the trace was written moments
//! before the sidecar, as in tests, or the file system reports no ctime —
//! every block's framing is read and the checksum compared (O(blocks): ~1,000
//! page faults per GB with 1 MiB blocks, ~10 ms on the loaded bench machine,
//! which is why it is not done when the stamps suffice), and every reference is
//! peeked at. `SidecarReport::framing_checked` says how many blocks were read.
//! Such a sidecar is *re-stamped* by the first read-write open (the default
//! policy; read-only opens write nothing) whose own stamps vouch for the data
//! — taken more than `RACY_NS` after the files' ctimes — once its all-blocks
//! check has passed: the header's `stamped_at` becomes that open's stamp time,
//! written in place (8 bytes, and only if the file at the path still has the
//! header that was checked, so a sidecar renamed over it meanwhile is left
//! alone). From then on opens read a sample, as if the sidecar had been written
//! late. This is the one in-place write to a sidecar: the field only decides
//! how much of the data an open reads, and a reader that has the file mapped
//! sees the old or the new value, both safe for the data as it is now.
//!
//! *Trade-off.* What changes a data file in practice — appending (a live or
//! resumed recording), truncation (a crash, a partial copy), rewriting in
//! place, replacing — moves the length, the ctime or the inode, which costs
//! one `stat` to see; the framing check catches edits in the same clock tick
//! and is the only check where the stamps are unknown. Not detected: an edit
//! that leaves length, mtime, ctime and inode as they were (only by changing
//! the system clock or the raw device), and edits of the container arrays of
//! the sidecar itself (checking them is per-container work; a full checksum
//! would be O(sidecar) — about 190 MB for a 1 GB trace). Such values are only
//! ever used as logical offsets inside a thread's stream: the reader never
//! trusts them for memory safety (the arrays have the checked lengths, table
//! positions come from `Order::Identity`), so altered values give wrong or
//! failed lookups as typed errors, never a panic — `tests/lazy_sidecar.rs`
//! overwrites the arrays with garbage and expands every node.
//!
//! **Deferred to the second open.** A sidecar pays off when a trace is
//! opened again; building it costs a first open most of its time (on a
//! 1 GB trace, the footer checks and the start-order pass over every
//! thread, and the write). So by default (`LazyOptions::defer_sidecar`) a
//! first open that uses the index, and whose container tables would take
//! at most `DEFAULT_DEFERRED_TABLES` on the heap (4 bytes a container),
//! builds nothing up front: each thread's table is built (and checked) on
//! the heap when first needed, as under `SidecarPolicy::Off`. In the
//! sidecar's place it leaves a *note* (`write_opened`): a header alone,
//! magic [`OPENED_MAGIC`], with the files' lengths and stamps, not synced
//! (lost in a crash, the next open is a first one again). An open that
//! finds a note matching its files (`SidecarProblem::Deferred`) writes the
//! sidecar as below; a note for other files is stale, and deferred again.
//! A rebuild (no index, or a broken one) writes the sidecar at once: its
//! cells are already in a scratch file, and the rebuild was the cost.
//!
//! **Writing.** After building the lookups from the index or a rebuild
//! (`IndexChoice::Rebuild`, an explicit request, writes none), with
//! `SidecarPolicy::ReadWrite` (the default; `ReadOnly` only reads, `Off`
//! neither), the sidecar is written to `NAME-HASH.ttlookup.tmp-PID-N`, synced
//! and renamed over the old one. When no thread's table is built yet and the
//! cells are the index file's (a first open with a valid index), each thread's
//! arrays are written straight from its cells, threads in parallel, and no
//! table is ever built on the heap: the backwards pass over post-order that
//! builds a table (`containers::convert_into`) places containers in start
//! order *last first*, `n − 1` down to 0 (a container closes after its
//! descendants and after everything that starts later), so a
//! `SectionWriter` fills the starts, ends and event ids from their ends, 8,192
//! entries per positional write, and learns on the way whether event ids
//! ascend; the thread records, which carry that flag, are written last. The
//! footer checks run first, as for a build. If a thread's cells do not nest,
//! are not in post-order or end without a footer, the file is truncated and
//! written again from tables built the usual way (which find out why). The
//! two ways write the same bytes (unit test
//! `streamed_arrays_equal_those_of_built_tables`). A
//! directory whose permissions are read-only is left alone (even for root); a
//! failed write is `SidecarOutcome::NotWritten(reason)` in the report, never an
//! error. `open_bytes` has no path and no sidecar. `tracetree info` prints
//! whether it was used, written or deferred.
//!
//! **Scratch sidecar.** When none is written (no sidecar directory, a read-only
//! directory, a failed write, `ReadOnly`, or `IndexChoice::Rebuild`) and the
//! policy is not `Off`, the same bytes are written to a scratch file in the
//! temporary directory (`std::env::temp_dir()`, i.e. `TMPDIR`), a file that
//! never has a name (`tempfile::tempfile_in`: `O_TMPFILE` on Linux, elsewhere
//! created and unlinked at once), then mapped from its handle
//! (`TraceBytes::map_file`) and loaded like any sidecar
//! (`sidecar::write_scratch`; its stamps are this open's, so every block's
//! framing is read, ~1,000 page faults per GB); its disk blocks are freed
//! when the reader drops the mapping.
//! `SidecarReport::scratch` says so, and `tracetree info` prints it (`…;
//! lookups mapped from an unlinked scratch file instead`). Cost: the same write as a sidecar (~20
//! bytes per container, ~135 MB per GB of trace) on every such open, since
//! nothing persists; a failure (a full or read-only temporary directory) leaves
//! the tables on the heap. A temporary directory on `tmpfs` keeps the tables in
//! shared memory that only swap can evict, so the bound then holds for the heap
//! but not for the memory used.
//!
//! **A trace that changes under a mapping.** The sidecar is only replaced by
//! rename, so a reader that has mapped it keeps the old inode and stays
//! consistent. If the data file is rewritten while mapped, reads see the new
//! bytes (the storage contract: decoders bounds-check, so the result is a
//! decode error; a truncation under the mapping is `SIGBUS`); the next open
//! sees a stale sidecar and rebuilds.

mod layout;
mod load;
#[cfg(test)]
mod tests;
mod write;

pub use layout::SAMPLED_BLOCKS;
pub(crate) use layout::{Files, LoadedSidecar, Stamp};
pub(crate) use load::load;
pub(crate) use write::{Summary, write, write_opened, write_scratch};

use std::path::{Path, PathBuf};

/// The sidecar's magic bytes.
pub const SIDECAR_MAGIC: [u8; 8] = *b"TTLOOKUP";

/// The magic bytes of the note a deferring first open leaves in the
/// sidecar's place ([`SidecarOutcome::Deferred`]): a sidecar header with the
/// files' stamps and no sections.
pub const OPENED_MAGIC: [u8; 8] = *b"TTOPENED";

/// The sidecar layout's version; a sidecar of another version is ignored.
pub const SIDECAR_VERSION: u32 = 1;

/// The sidecar of the data file `data` in the sidecar directory `dir`:
/// `NAME-HASH.ttlookup`, where `NAME` is the data file's name (made safe
/// for a file name) and `HASH` a fixed 64-bit hash of its canonical path,
/// so that each trace has one place and a moved or replaced trace is told
/// apart by the sidecar's stamps, not its name.
pub fn sidecar_path(dir: &Path, data: &Path) -> PathBuf {
    use std::hash::Hasher;
    let canonical = std::fs::canonicalize(data).unwrap_or_else(|_| data.to_path_buf());
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(canonical.as_os_str().as_encoded_bytes());
    let name: String = data
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .take(64)
        .collect();
    dir.join(format!("{name}-{:016x}.ttlookup", hasher.finish()))
}

/// Removes the least recently written sidecars of `kept`'s directory
/// until those left add up to at most `budget` bytes; `kept` itself stays.
pub(crate) fn evict_oldest(kept: &Path, budget: u64) {
    let Some(dir) = kept.parent() else {
        return;
    };
    crate::storage::evict_oldest(dir, kept, budget, |path| {
        (path.extension()? == "ttlookup").then(Vec::new)
    });
}

/// Whether a reader uses and writes the lookup sidecar.
///
/// Where the lookups are, for memory: a sidecar (in the sidecar directory, or a
/// scratch one) is mapped, so the container tables are page cache the
/// kernel can drop; without one they are on the heap, 4 bytes per
/// container (about 38 MB per GB of trace), for the reader's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SidecarPolicy {
    /// Use a valid sidecar; write one after building the lookups otherwise
    /// (failures to write are reported, never an error). If it cannot be
    /// written (no sidecar directory, or a read-only one), the same bytes
    /// go to an unlinked scratch file in the temporary directory
    /// ([`std::env::temp_dir`]), mapped from there: the heap stays bounded
    /// ([`SidecarReport::scratch`]).
    #[default]
    ReadWrite,
    /// Use a valid sidecar; never write one. Without a
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
    /// In its place is the note of an earlier open of the same files
    /// ([`SidecarOutcome::Deferred`]): the trace is being opened again, so
    /// the sidecar is written now.
    #[error("none yet: an earlier open deferred it")]
    Deferred,
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
    /// None was written yet: this is the first open of the trace (its
    /// index is used), so the lookups are built on demand, on the heap, as
    /// they are needed; a note of the files' stamps was left in the
    /// sidecar's place, and the next open of the same files writes the
    /// sidecar ([`LazyOptions::defer_sidecar`](crate::read::LazyOptions::defer_sidecar)).
    Deferred,
}

/// The sidecar part of an [`IndexReport`](crate::read::IndexReport).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidecarReport {
    /// The sidecar's path (`None` without a sidecar directory).
    pub path: Option<PathBuf>,
    /// Why an existing (or missing) sidecar was not used; `None` when used.
    pub rejected: Option<SidecarProblem>,
    /// Used, written or not.
    pub outcome: SidecarOutcome,
    /// When used: how many blocks' framing was read from the data file (all
    /// of them, or a sample when the files' stamps vouch for the data).
    pub framing_checked: usize,
    /// None was written (no sidecar directory, a read-only one, a failed
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
