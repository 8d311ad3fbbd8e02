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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::UNIX_EPOCH;

use zerocopy::little_endian::{I32, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::format::index::CELL_LEN;
use crate::format::object::peek_kind_and_id;
use crate::format::offset::{PhysicalOffset, ThreadId};
use crate::format::{BLOCK_HEADER_LEN, FILE_HEADER_LEN, ObjectKind};
use crate::model::{ContextBuilder, TraceContext};
use crate::read::block_table::{BlockInfo, BlockTable};
use crate::read::containers::{
    ContainerTable, Containers, MappedCells, Placed, Words, chunk_count,
};
use crate::read::eager::LoadReport;
use crate::read::index::{IndexProblem, IndexStatus, Lookup};
use crate::storage::TraceBytes;

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

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct Header {
    magic: [u8; 8],
    version: U32,
    status: U32,
    file_len: U64,
    data_len: U64,
    data_mtime: U64,
    index_len: U64,
    index_mtime: U64,
    index_hash: U64,
    frame_hash: U64,
    blocks: U64,
    threads: U64,
    references: U64,
    reference_cells: U64,
    repaired: U64,
    unfinished: U64,
    dropped_bytes: U64,
    dropped_blocks: U64,
    trailing_bytes: U64,
    missing_eof: U64,
    problem_len: U64,
    data_ctime: U64,
    data_inode: U64,
    index_ctime: U64,
    index_inode: U64,
    stamped_at: U64,
    zero: U64,
}

const HEADER_LEN: usize = std::mem::size_of::<Header>();

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct BlockRecord {
    start: U64,
    end: U64,
    thread: I32,
    zero: U32,
}

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct ThreadRecord {
    thread: I32,
    flags: U32,
    containers: U64,
    crossing_cell: U64,
}

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct ReferenceRecord {
    offset: U64,
    id: I32,
    kind: u8,
    zero: [u8; 3],
}

const EVENTS_ASCEND: u32 = 1;
const CROSSING: u32 = 2;

const STATUS_USED: u32 = 0;
const STATUS_NO_FOOTER: u32 = 1;
const STATUS_REBUILT: u32 = 2;

/// Bytes of a file's head and tail that go into its checksum.
const EDGE: usize = 4096;

/// Bytes before and including each `BLOCK_END` that go into the framing
/// checksum.
const BLOCK_TAIL: u64 = 16;

/// A 64-bit checksum (FxHash's word mix) for detecting changed files; not
/// meant to resist an adversary, only to notice edits.
#[derive(Debug, Clone, Copy)]
struct Checksum(u64);

impl Checksum {
    const SEED: u64 = 0xcbf2_9ce4_8422_2325;

    fn new() -> Self {
        Checksum(Self::SEED)
    }

    fn word(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn bytes(&mut self, bytes: &[u8]) {
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
fn edges(bytes: &[u8]) -> Checksum {
    let mut sum = Checksum::new();
    sum.bytes(&bytes[..bytes.len().min(EDGE)]);
    sum.bytes(&bytes[bytes.len().saturating_sub(EDGE)..]);
    sum
}

/// Adds one block's framing to `sum`: its header, and the bytes up to and
/// including its `BLOCK_END` (both inside `data`: checked by the caller).
fn add_block(sum: &mut Checksum, data: &[u8], block: &BlockInfo) {
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
const RACY_NS: u64 = 2_000_000_000;

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
    fn index_fields(&self) -> [u64; 5] {
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

fn malformed(at: usize, what: impl Into<String>) -> SidecarProblem {
    SidecarProblem::Malformed {
        at: at as u64,
        what: what.into(),
    }
}

/// Reads `count` records of `T` at `*at`, moving `*at` past them (8-aligned).
fn records<'a, T: FromBytes + KnownLayout + Immutable + Unaligned>(
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

fn pad8(at: usize) -> usize {
    at.div_ceil(8) * 8
}

/// Maps and checks the sidecar at `path` against `files`. With `restamp`
/// (the read-write policy), a sidecar whose stamps could not vouch for the
/// data when it was written, and that passed the all-blocks check, is
/// re-stamped once the stamps can ([`restamp`]).
pub(crate) fn load(
    path: &Path,
    files: &Files<'_>,
    restamp: bool,
) -> Result<LoadedSidecar, SidecarProblem> {
    let sidecar = TraceBytes::map(path).map_err(|e| SidecarProblem::Missing(e.to_string()))?;
    load_mapped(sidecar, Some(path).filter(|_| restamp), files)
}

/// Loads the mapped sidecar `sidecar` (see [`load`]); `restamp` is the
/// path to re-stamp it at, if it may be.
fn load_mapped(
    sidecar: TraceBytes,
    restamp: Option<&Path>,
    files: &Files<'_>,
) -> Result<LoadedSidecar, SidecarProblem> {
    let bytes = sidecar.as_slice();
    let (header, _) = Header::read_from_prefix(bytes)
        .map_err(|_| malformed(0, format!("{} bytes, shorter than a header", bytes.len())))?;
    if header.magic != SIDECAR_MAGIC {
        return Err(malformed(0, "bad magic"));
    }
    if header.version.get() != SIDECAR_VERSION {
        return Err(SidecarProblem::Version(header.version.get()));
    }
    if header.file_len.get() != bytes.len() as u64 {
        return Err(malformed(
            16,
            format!(
                "records {} bytes, the file has {}",
                header.file_len.get(),
                bytes.len()
            ),
        ));
    }
    // Staleness, cheapest checks first.
    let data = files.data.as_slice();
    let stale = |what: String| Err(SidecarProblem::Stale(what));
    if header.data_len.get() != data.len() as u64 {
        return stale(format!(
            "data file length {} differs from the recorded {}",
            data.len(),
            header.data_len.get()
        ));
    }
    let stamp = files.data_stamp;
    if [
        header.data_mtime.get(),
        header.data_ctime.get(),
        header.data_inode.get(),
    ] != [stamp.mtime, stamp.ctime, stamp.inode]
    {
        return stale("data file modified or replaced since (mtime, ctime or inode)".into());
    }
    let recorded_index = [
        header.index_len.get(),
        header.index_mtime.get(),
        header.index_hash.get(),
        header.index_ctime.get(),
        header.index_inode.get(),
    ];
    if recorded_index != files.index_fields() {
        return stale("index file changed (length, mtime, ctime, inode or checksum)".into());
    }
    // Whether the stamps vouch for the data: a change after they were taken
    // moves the ctime, unless it came in the same clock tick as the change
    // the recorded ctime shows.
    let vouch = |stamped_at: u64| {
        stamp.ctime != 0
            && stamp.ctime.saturating_add(RACY_NS) < stamped_at
            && header.index_ctime.get().saturating_add(RACY_NS) < stamped_at
    };
    let trusted = vouch(header.stamped_at.get());
    let status = header.status.get();
    if status > STATUS_REBUILT {
        return Err(malformed(12, format!("status {status}")));
    }
    let mut at = HEADER_LEN;
    let blocks: &[BlockRecord] = records(bytes, &mut at, header.blocks.get(), "blocks")?;
    let threads: &[ThreadRecord] = records(bytes, &mut at, header.threads.get(), "threads")?;
    let references: &[ReferenceRecord] =
        records(bytes, &mut at, header.references.get(), "references")?;
    let problem: &[u8] = records(bytes, &mut at, header.problem_len.get(), "reason bytes")?;
    let problem = std::str::from_utf8(problem)
        .map_err(|_| malformed(at, "rebuild reason is not UTF-8"))?
        .to_owned();

    // Blocks: contiguous from the data's header, framed as recorded.
    let report = LoadReport {
        missing_eof: header.missing_eof.get() != 0,
        dropped_bytes: header.dropped_bytes.get(),
        dropped_blocks: header.dropped_blocks.get() as usize,
        unfinished_containers: header.unfinished.get() as usize,
        trailing_bytes: header.trailing_bytes.get(),
    };
    let mut sum = edges(data);
    let mut next = FILE_HEADER_LEN;
    let mut infos = Vec::with_capacity(blocks.len());
    let stride = blocks.len().div_ceil(SAMPLED_BLOCKS).max(1);
    let mut framing_checked = 0;
    for (i, record) in blocks.iter().enumerate() {
        let block = BlockInfo {
            thread: ThreadId(record.thread.get()),
            start: PhysicalOffset(record.start.get()),
            end: PhysicalOffset(record.end.get()),
        };
        let record_at = HEADER_LEN + i * std::mem::size_of::<BlockRecord>();
        if block.start.0 != next
            || block.end.0 < block.payload_start().0
            || block.end.0 >= data.len() as u64
        {
            return Err(malformed(record_at, format!("block {i} is out of place")));
        }
        next = block.end.0 + 1;
        infos.push(block);
        if trusted && i % stride != 0 && i + 1 != blocks.len() {
            continue;
        }
        framing_checked += 1;
        if peek_kind_and_id(data, block.start.0) != Some((ObjectKind::BlockStart, block.thread.0))
            || data[block.end.0 as usize] != ObjectKind::BlockEnd as u8
        {
            return stale(format!("no block at offset {} of the data", block.start.0));
        }
        add_block(&mut sum, data, &block);
        // Each read may have mapped a large folio on either side: release
        // them now, not when the open ends (a sample of 33 blocks could
        // otherwise leave ~100 MB mapped for a moment).
        files.data.release_around(block.start.0..block.end.0 + 1);
    }
    let tail_ok = match data.get(next as usize) {
        None => report.missing_eof && report.dropped_blocks == 0 && report.trailing_bytes == 0,
        Some(&b) if b == ObjectKind::Eof as u8 => {
            !report.missing_eof && report.trailing_bytes == data.len() as u64 - next - 1
        }
        Some(_) => {
            report.missing_eof
                && report.dropped_blocks == 1
                && report.dropped_bytes == data.len() as u64 - next
        }
    };
    if !tail_ok {
        return stale(format!(
            "the data after the last block (offset {next}) changed"
        ));
    }
    if !trusted && sum.0 != header.frame_hash.get() {
        return stale("data framing checksum differs".into());
    }
    let block_table = BlockTable::new(infos);

    // Threads: those of the blocks, ascending, each with its arrays.
    if threads.len() != block_table.thread_count() {
        return Err(malformed(
            80,
            format!(
                "{} threads, the blocks have {}",
                threads.len(),
                block_table.thread_count()
            ),
        ));
    }
    let mut containers = Vec::with_capacity(threads.len());
    for (slot, record) in threads.iter().enumerate() {
        let record_at = HEADER_LEN + blocks.len() * 24 + slot * 24;
        if record.thread.get() != block_table.thread(slot).thread.0 {
            return Err(malformed(record_at, "thread ids differ from the blocks'"));
        }
        let n = usize::try_from(record.containers.get())
            .ok()
            .filter(|&n| n <= u32::MAX as usize)
            .ok_or_else(|| malformed(record_at, "too many containers"))?;
        let flags = record.flags.get();
        let starts = at;
        let _: &[U64] = records(bytes, &mut at, n as u64, "container starts")?;
        let ends = at;
        let _: &[U64] = records(bytes, &mut at, n as u64, "container ends")?;
        let events = at;
        let _: &[I32] = records(bytes, &mut at, n as u64, "event ids")?;
        let chunks = at;
        let _: &[U64] = records(bytes, &mut at, chunk_count(n) as u64, "chunk maxima")?;
        let problem = (flags & CROSSING != 0).then(|| IndexProblem::Crossing {
            cell: record.crossing_cell.get() as usize,
        });
        let table = ContainerTable::mapped(
            n,
            Words::Mapped {
                bytes: sidecar.clone(),
                at: chunks,
                len: chunk_count(n),
            },
            flags & EVENTS_ASCEND != 0,
        );
        let flat = MappedCells {
            bytes: sidecar.clone(),
            starts,
            ends,
            events,
            len: n,
        };
        containers.push((
            Containers {
                made: Vec::new(),
                flat: Some(flat),
                table,
            },
            problem,
        ));
    }
    if at != bytes.len() {
        return Err(malformed(at, "bytes after the last thread's arrays"));
    }

    // References: each where the data has it.
    let mut context = ContextBuilder::new();
    let refs_at = HEADER_LEN + (blocks.len() + threads.len()) * 24;
    for (i, record) in references.iter().enumerate() {
        let kind = ObjectKind::from_byte(record.kind)
            .filter(|kind| kind.is_reference())
            .ok_or_else(|| malformed(refs_at + i * 16, "not a reference kind"))?;
        let (offset, id) = (record.offset.get(), record.id.get());
        // Trusted stamps: a bounds check (a wrong offset would give a typed
        // decode error when the object is used); else the object itself.
        let found = if trusted {
            offset < data.len() as u64
        } else {
            peek_kind_and_id(data, offset) == Some((kind, id))
        };
        if offset < FILE_HEADER_LEN || !found {
            return stale(format!(
                "no {kind} with id {id} at offset {offset} of the data"
            ));
        }
        context.add(kind, id, PhysicalOffset(offset));
    }

    // Every block was read and the stamps taken at this open vouch for the
    // data: record that moment, so later opens read a sample.
    if let Some(path) = restamp.filter(|_| !trusted && vouch(files.stamped_at)) {
        // Best effort: failing leaves the full check for the next open.
        let _ = restamp_header(path, &header, files.stamped_at);
    }

    let status = match status {
        STATUS_USED => IndexStatus::Used { complete: true },
        STATUS_NO_FOOTER => IndexStatus::Used { complete: false },
        _ => IndexStatus::Rebuilt(IndexProblem::Recorded(problem)),
    };
    Ok(LoadedSidecar {
        lookup: Lookup::from_sidecar(block_table, containers),
        context,
        references: header.reference_cells.get() as usize,
        data: report,
        repaired: header.repaired.get() as usize,
        status,
        framing_checked,
    })
}

/// Re-stamps the sidecar at `path`, whose header was `header` when it was
/// mapped and fully checked: its `stamped_at` becomes `stamped_at` (when this
/// open took the stamps). Written in place — eight bytes, the only field that
/// changes, and one that only decides how many blocks an open reads — and
/// only if the file at `path` still has exactly that header (a sidecar
/// renamed over it since is left alone: the write goes to the inode whose
/// header was compared). A reader that has it mapped sees either value;
/// both are safe for the data as it is now.
#[cfg(unix)]
fn restamp_header(path: &Path, header: &Header, stamped_at: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if std::fs::metadata(dir)?.permissions().readonly() {
        return Ok(());
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let mut on_disk = [0u8; HEADER_LEN];
    file.read_exact_at(&mut on_disk, 0)?;
    if on_disk != header.as_bytes() {
        return Ok(());
    }
    let at = std::mem::offset_of!(Header, stamped_at);
    file.write_all_at(&stamped_at.to_le_bytes(), at as u64)
}

#[cfg(not(unix))]
fn restamp_header(_: &Path, _: &Header, _: u64) -> std::io::Result<()> {
    Ok(())
}

/// What a sidecar records besides the lookups.
pub(crate) struct Summary<'a> {
    pub(crate) status: &'a IndexStatus,
    pub(crate) references: usize,
    pub(crate) repaired: usize,
    pub(crate) data: &'a LoadReport,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes the sidecar of `lookup` (every thread's table is built first) to
/// `path`, atomically: a temporary file beside it, then a rename.
pub(crate) fn write(
    path: &Path,
    files: &Files<'_>,
    lookup: &Lookup,
    context: &TraceContext,
    summary: &Summary<'_>,
) -> std::io::Result<()> {
    // A directory without write permission is left alone, even by a user
    // (root) whom the system would let write there.
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if std::fs::metadata(dir)?.permissions().readonly() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} is read-only", dir.display()),
        ));
    }
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let temp = PathBuf::from(temp);
    let result = (|| {
        let file = encode_to(&temp, files, lookup, context, summary)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Creates `path` (which must not exist) and writes the sidecar of
/// `lookup` to it.
fn encode_to(
    path: &Path,
    files: &Files<'_>,
    lookup: &Lookup,
    context: &TraceContext,
    summary: &Summary<'_>,
) -> std::io::Result<std::fs::File> {
    let file = std::fs::File::create_new(path)?;
    encode_file(&file, files, lookup, context, summary)?;
    Ok(file)
}

/// Writes the sidecar of `lookup` to a scratch file in the system's
/// temporary directory ([`std::env::temp_dir`], `TMPDIR`) and maps it: the
/// lookups of a trace whose sidecar cannot be written next to it then live
/// in page cache (which the kernel can drop and read back) instead of the
/// heap. The file never has a name (`tempfile::tempfile`: `O_TMPFILE` on
/// Linux, else created and unlinked at once); its blocks are freed when
/// the mapping goes.
pub(crate) fn write_scratch(
    files: &Files<'_>,
    lookup: &Lookup,
    context: &TraceContext,
    summary: &Summary<'_>,
) -> Result<LoadedSidecar, String> {
    let dir = std::env::temp_dir();
    let what = |e: String| format!("scratch file in {}: {e}", dir.display());
    let mapped = (|| {
        let file = tempfile::tempfile_in(&dir)?;
        encode_file(&file, files, lookup, context, summary)?;
        TraceBytes::map_file(&file)
    })()
    .map_err(|e| what(e.to_string()))?;
    load_mapped(mapped, None, files).map_err(|e| what(e.to_string()))
}

/// Writes zero bytes up to the next multiple of 8 of `len`.
fn pad(out: &mut impl Write, len: usize) -> std::io::Result<()> {
    out.write_all(&[0u8; 8][..pad8(len) - len])
}

/// Writes the sidecar of `lookup` to `file` (new and empty). When no
/// thread's table is built yet and every thread's cells stream
/// ([`Lookup::stream_containers`]), each thread's arrays are written
/// straight from the index's cells, threads in parallel, and no table is
/// ever held on the heap; otherwise (or when a thread's cells fail the
/// checks on the way) every table is built first and written from memory.
fn encode_file(
    file: &std::fs::File,
    files: &Files<'_>,
    lookup: &Lookup,
    context: &TraceContext,
    summary: &Summary<'_>,
) -> std::io::Result<()> {
    #[cfg(unix)]
    if encode_streamed(file, files, lookup, context, summary)? {
        return Ok(());
    }
    file.set_len(0)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    std::io::Seek::rewind(&mut out)?;
    lookup.build_all(files.data.as_slice());
    encode_built(&mut out, files, lookup, context, summary)?;
    out.flush()
}

/// Everything of a sidecar but the threads' records and arrays, and where
/// those go.
struct Layout {
    header: Header,
    references: Vec<ReferenceRecord>,
    problem: String,
    /// Where each thread's arrays begin.
    sections: Vec<u64>,
}

impl Layout {
    /// The layout of the sidecar of `lookup` with `counts` containers per
    /// thread. Reads the framing of every block in the data (releasing it
    /// behind it every window).
    fn new(
        files: &Files<'_>,
        lookup: &Lookup,
        context: &TraceContext,
        summary: &Summary<'_>,
        counts: &[usize],
    ) -> Layout {
        let data = files.data.as_slice();
        let blocks = lookup.blocks.blocks();
        let mut data_pass = files.data.behind(lookup.release_window());
        let mut sum = edges(data);
        for block in blocks {
            add_block(&mut sum, data, block);
            data_pass.at(block.end.0);
        }
        let mut references = Vec::new();
        for kind in ObjectKind::ALL
            .into_iter()
            .filter(|kind| kind.is_reference())
        {
            for &id in context.ids(kind) {
                if let Some(offset) = context.offset(kind, id) {
                    references.push(ReferenceRecord {
                        offset: U64::new(offset.0),
                        id: I32::new(id),
                        kind: kind as u8,
                        zero: [0; 3],
                    });
                }
            }
        }
        let (status, problem) = match summary.status {
            IndexStatus::Used { complete: true } => (STATUS_USED, String::new()),
            IndexStatus::Used { complete: false } => (STATUS_NO_FOOTER, String::new()),
            IndexStatus::Rebuilt(problem) => (STATUS_REBUILT, problem.to_string()),
        };
        let mut file_len = HEADER_LEN
            + (blocks.len() + counts.len()) * 24
            + references.len() * 16
            + pad8(problem.len());
        let mut sections = Vec::with_capacity(counts.len());
        for &n in counts {
            sections.push(file_len as u64);
            file_len += section_len(n);
        }
        let [index_len, index_mtime, index_hash, index_ctime, index_inode] = files.index_fields();
        let header = Header {
            magic: SIDECAR_MAGIC,
            version: U32::new(SIDECAR_VERSION),
            status: U32::new(status),
            file_len: U64::new(file_len as u64),
            data_len: U64::new(data.len() as u64),
            data_mtime: U64::new(files.data_stamp.mtime),
            index_len: U64::new(index_len),
            index_mtime: U64::new(index_mtime),
            index_hash: U64::new(index_hash),
            frame_hash: U64::new(sum.0),
            blocks: U64::new(blocks.len() as u64),
            threads: U64::new(counts.len() as u64),
            references: U64::new(references.len() as u64),
            reference_cells: U64::new(summary.references as u64),
            repaired: U64::new(summary.repaired as u64),
            unfinished: U64::new(summary.data.unfinished_containers as u64),
            dropped_bytes: U64::new(summary.data.dropped_bytes),
            dropped_blocks: U64::new(summary.data.dropped_blocks as u64),
            trailing_bytes: U64::new(summary.data.trailing_bytes),
            missing_eof: U64::new(summary.data.missing_eof as u64),
            problem_len: U64::new(problem.len() as u64),
            data_ctime: U64::new(files.data_stamp.ctime),
            data_inode: U64::new(files.data_stamp.inode),
            index_ctime: U64::new(index_ctime),
            index_inode: U64::new(index_inode),
            stamped_at: U64::new(files.stamped_at),
            zero: U64::new(0),
        };
        Layout {
            header,
            references,
            problem,
            sections,
        }
    }

    /// Where thread `slot`'s record is.
    fn thread_record_at(&self, slot: usize) -> u64 {
        (HEADER_LEN + (self.header.blocks.get() as usize + slot) * 24) as u64
    }

    /// Writes everything up to the threads' arrays, with `threads`' records.
    fn write_prefix(
        &self,
        out: &mut impl Write,
        lookup: &Lookup,
        threads: &[ThreadRecord],
    ) -> std::io::Result<()> {
        out.write_all(self.header.as_bytes())?;
        for block in lookup.blocks.blocks() {
            let record = BlockRecord {
                start: U64::new(block.start.0),
                end: U64::new(block.end.0),
                thread: I32::new(block.thread.0),
                zero: U32::new(0),
            };
            out.write_all(record.as_bytes())?;
        }
        out.write_all(threads.as_bytes())?;
        out.write_all(self.references.as_bytes())?;
        out.write_all(self.problem.as_bytes())?;
        pad(out, self.problem.len())
    }
}

/// Bytes of a thread's arrays with `n` containers.
fn section_len(n: usize) -> usize {
    16 * n + pad8(4 * n) + 8 * chunk_count(n)
}

/// Thread `slot`'s record.
fn thread_record(
    lookup: &Lookup,
    slot: usize,
    containers: usize,
    events_ascend: bool,
) -> ThreadRecord {
    let thread = lookup.blocks.thread(slot).thread;
    let crossing = lookup
        .problems()
        .into_iter()
        .find_map(|(t, problem)| match problem {
            IndexProblem::Crossing { cell } if t == thread => Some(cell as u64),
            _ => None,
        });
    ThreadRecord {
        thread: I32::new(thread.0),
        flags: U32::new(
            if events_ascend { EVENTS_ASCEND } else { 0 }
                | if crossing.is_some() { CROSSING } else { 0 },
        ),
        containers: U64::new(containers as u64),
        crossing_cell: U64::new(crossing.unwrap_or(0)),
    }
}

/// The sidecar from every thread's table, built.
fn encode_built(
    out: &mut impl Write,
    files: &Files<'_>,
    lookup: &Lookup,
    context: &TraceContext,
    summary: &Summary<'_>,
) -> std::io::Result<()> {
    let data = files.data.as_slice();
    let threads = lookup.blocks.thread_count();
    // A thread whose table could not be made (its cells were not trusted
    // and the scan met corrupt data) has nothing to persist.
    let tables = (0..threads)
        .map(|slot| lookup.containers(data, slot))
        .collect::<crate::Result<Vec<_>>>()
        .map_err(std::io::Error::other)?;
    let counts: Vec<usize> = tables.iter().map(|(table, _)| table.len()).collect();
    let layout = Layout::new(files, lookup, context, summary, &counts);
    let records: Vec<ThreadRecord> = tables
        .iter()
        .enumerate()
        .map(|(slot, (table, _))| thread_record(lookup, slot, table.len(), table.events_ascend()))
        .collect();
    layout.write_prefix(out, lookup, &records)?;
    // The tables read the index's cells: released every window's worth.
    let mappings = lookup.mappings();
    let release_every = lookup.release_window().map_or(usize::MAX, |window| {
        (window / CELL_LEN as u64).max(1) as usize
    });
    let release_lookups = |k: usize| {
        if k % release_every == release_every - 1 {
            mappings.iter().for_each(|mapping| {
                mapping.release_all();
            });
        }
    };
    for (table, cells) in &tables {
        let n = table.len();
        let mut buffer: Vec<u8> = Vec::with_capacity(1 << 16);
        let flush = |buffer: &mut Vec<u8>, out: &mut dyn Write, last: bool| {
            if buffer.len() >= 1 << 16 || last {
                out.write_all(buffer)?;
                buffer.clear();
            }
            std::io::Result::Ok(())
        };
        for k in 0..n {
            buffer.extend_from_slice(&table.start(*cells, k).0.to_le_bytes());
            flush(&mut buffer, out, false)?;
            release_lookups(k);
        }
        for k in 0..n {
            buffer.extend_from_slice(&table.end(*cells, k).0.to_le_bytes());
            flush(&mut buffer, out, false)?;
            release_lookups(k);
        }
        for k in 0..n {
            buffer.extend_from_slice(&table.event(*cells, k).0.to_le_bytes());
            flush(&mut buffer, out, false)?;
            release_lookups(k);
        }
        flush(&mut buffer, out, true)?;
        pad(out, 4 * n)?;
        for max in table.chunk_max_ends() {
            out.write_all(&max.to_le_bytes())?;
        }
    }
    Ok(())
}

/// The sidecar with every thread's arrays streamed from the index's cells
/// (no table built); false, with the file in any state, when a thread
/// cannot be streamed ([`Lookup::stream_containers`]).
#[cfg(unix)]
fn encode_streamed(
    file: &std::fs::File,
    files: &Files<'_>,
    lookup: &Lookup,
    context: &TraceContext,
    summary: &Summary<'_>,
) -> std::io::Result<bool> {
    use rayon::prelude::*;
    use std::os::unix::fs::FileExt;
    let threads = lookup.blocks.thread_count();
    if !(0..threads).all(|slot| lookup.streams(slot)) {
        return Ok(false);
    }
    let counts: Vec<usize> = (0..threads)
        .map(|slot| lookup.container_count(slot))
        .collect();
    let layout = Layout::new(files, lookup, context, summary, &counts);
    // The records are written again once each thread's flags are known.
    let mut records: Vec<ThreadRecord> = (0..threads)
        .map(|slot| thread_record(lookup, slot, counts[slot], false))
        .collect();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    layout.write_prefix(&mut out, lookup, &records)?;
    out.flush()?;
    drop(out);
    let data = files.data.as_slice();
    let streamed = (0..threads)
        .into_par_iter()
        .map(|slot| {
            let mut arrays = SectionWriter::new(file, layout.sections[slot], counts[slot]);
            let converted = lookup.stream_containers(data, slot, |placed| arrays.place(placed));
            match converted {
                Some(converted) if arrays.finish(&converted.chunk_max_end)? => {
                    Ok(Some(converted.events_ascend))
                }
                _ => Ok(None),
            }
        })
        .collect::<std::io::Result<Vec<Option<bool>>>>()?;
    for (slot, events_ascend) in streamed.into_iter().enumerate() {
        let Some(events_ascend) = events_ascend else {
            return Ok(false);
        };
        records[slot] = thread_record(lookup, slot, counts[slot], events_ascend);
    }
    file.write_all_at(records.as_bytes(), layout.thread_record_at(0))?;
    file.set_len(layout.header.file_len.get())?;
    Ok(true)
}

/// Writes one thread's arrays (content starts, content ends, event ids,
/// chunk maxima) at their place in the sidecar as containers arrive in
/// start order, last first: each array is filled from its end, a buffer
/// of [`SectionWriter::BUFFER`] entries at a time.
#[cfg(unix)]
struct SectionWriter<'f> {
    file: &'f std::fs::File,
    /// Where the starts, ends, event ids and chunk maxima begin.
    starts: u64,
    ends: u64,
    events: u64,
    chunks: u64,
    /// The position the next container must have; the buffers hold
    /// positions `next + 1 ..`.
    next: Option<usize>,
    buffered: (Vec<u8>, Vec<u8>, Vec<u8>),
    /// A write failed.
    failed: Option<std::io::Error>,
    /// A container came out of turn.
    out_of_turn: bool,
}

#[cfg(unix)]
impl<'f> SectionWriter<'f> {
    const BUFFER: usize = 1 << 13;

    fn new(file: &'f std::fs::File, at: u64, n: usize) -> Self {
        let starts = at;
        let ends = starts + 8 * n as u64;
        let events = ends + 8 * n as u64;
        let chunks = events + pad8(4 * n) as u64;
        SectionWriter {
            file,
            starts,
            ends,
            events,
            chunks,
            next: n.checked_sub(1),
            buffered: (Vec::new(), Vec::new(), Vec::new()),
            failed: None,
            out_of_turn: false,
        }
    }

    fn place(&mut self, placed: Placed) {
        if self.failed.is_some() || self.out_of_turn {
            return;
        }
        if self.next != Some(placed.at) {
            self.out_of_turn = true;
            return;
        }
        self.next = placed.at.checked_sub(1);
        let (starts, ends, events) = &mut self.buffered;
        // Buffers fill back to front: each entry's bytes reversed, and the
        // whole buffer reversed when written.
        starts.extend(placed.start.to_le_bytes().iter().rev());
        ends.extend(placed.end.to_le_bytes().iter().rev());
        events.extend(placed.event.to_le_bytes().iter().rev());
        if events.len() >= 4 * Self::BUFFER
            && let Err(error) = self.flush(placed.at)
        {
            self.failed = Some(error);
        }
    }

    /// Writes the buffered entries, the first of which is at position `at`.
    fn flush(&mut self, at: usize) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let (starts, ends, events) = &mut self.buffered;
        for (buffer, base, width) in [
            (starts, self.starts, 8),
            (ends, self.ends, 8),
            (events, self.events, 4),
        ] {
            buffer.reverse();
            self.file.write_all_at(buffer, base + (width * at) as u64)?;
            buffer.clear();
        }
        Ok(())
    }

    /// Writes what is buffered and the chunk maxima; false if a container
    /// came out of turn or not every position was filled.
    fn finish(mut self, chunk_max_end: &[u64]) -> std::io::Result<bool> {
        use std::os::unix::fs::FileExt;
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        if self.out_of_turn || self.next.is_some() {
            return Ok(false);
        }
        self.flush(0)?;
        let maxima: Vec<u8> = chunk_max_end
            .iter()
            .flat_map(|max| max.to_le_bytes())
            .collect();
        self.file.write_all_at(&maxima, self.chunks)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sidecar of `data` and `index` written both ways: streamed from
    /// the cells (`None` if that was refused) and from built tables.
    fn both_ways(data: Vec<u8>, index: Vec<u8>) -> (Option<Vec<u8>>, Vec<u8>) {
        let index = TraceBytes::from_vec(index);
        lookups_both_ways(TraceBytes::from_vec(data), Some(&index), |data| {
            crate::read::index::load_index(data, index.clone(), Some(1 << 16))
                .expect("a valid index")
        })
    }

    /// The sidecar of the lookups `load` makes, written both ways.
    fn lookups_both_ways(
        data: TraceBytes,
        index: Option<&TraceBytes>,
        load: impl Fn(&TraceBytes) -> crate::read::index::LoadedIndex,
    ) -> (Option<Vec<u8>>, Vec<u8>) {
        let files = Files {
            data: &data,
            stamped_at: 7,
            data_stamp: Stamp::default(),
            index: index.map(|index| (index, Stamp::default())),
        };
        let status = IndexStatus::Used { complete: true };
        let write = |built: bool| {
            let loaded = load(&data);
            let context = loaded.context.build(data.clone());
            let summary = Summary {
                status: &status,
                references: loaded.references,
                repaired: 0,
                data: &loaded.data,
            };
            let file = tempfile::tempfile().unwrap();
            if built {
                loaded.lookup.build_all(data.as_slice());
                let mut out = std::io::BufWriter::new(&file);
                encode_built(&mut out, &files, &loaded.lookup, &context, &summary).unwrap();
                out.flush().unwrap();
            } else if !encode_streamed(&file, &files, &loaded.lookup, &context, &summary).unwrap() {
                return None;
            }
            Some(TraceBytes::map_file(&file).unwrap().as_slice().to_vec())
        };
        (write(false), write(true).unwrap())
    }

    #[test]
    fn streamed_arrays_equal_those_of_built_tables() {
        use crate::generate::raw::{SynthOptions, generate};
        let mut cases = Vec::new();
        // The last case has more containers per thread than a section
        // writer buffers.
        for (threads, bytes, block_bytes, block_cell_last, seed) in [
            (1, 1 << 20, 1 << 10, false, 1),
            (3, 1 << 20, 4 << 10, false, 2),
            (5, 1 << 20, 512, true, 3),
            (2, 1 << 20, 64 << 10, true, 4),
            (1, 6 << 20, 256 << 10, false, 5),
        ] {
            cases.push(generate(&SynthOptions {
                threads,
                bytes,
                block_bytes,
                seed,
                block_cell_last,
                crash: None,
            }));
        }
        let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
        for name in ["all-types.trace", "multi-thread.trace"] {
            let path = testdata.join(name);
            let index = crate::read::index_path(&path);
            cases.push((std::fs::read(path).unwrap(), std::fs::read(index).unwrap()));
        }
        for (case, (data, index)) in cases.into_iter().enumerate() {
            let (streamed, built) = both_ways(data, index);
            let streamed = streamed.unwrap_or_else(|| panic!("case {case}: not streamed"));
            if case == 4 {
                let header = Header::ref_from_prefix(&built).unwrap().0;
                let thread = HEADER_LEN + 24 * header.blocks.get() as usize;
                let record = ThreadRecord::ref_from_prefix(&built[thread..]).unwrap().0;
                assert!(record.containers.get() as usize > 2 * SectionWriter::BUFFER);
            }
            assert_eq!(streamed.len(), built.len(), "case {case}");
            assert!(streamed == built, "case {case}: the sidecars differ");
        }
    }

    #[test]
    fn a_crashed_recorders_missing_containers_stream_with_the_cells() {
        use crate::generate::raw::{Crash, SynthOptions, generate};
        for (threads, block_bytes, half_written_block, seed) in [
            (1, 1 << 10, false, 1),
            (3, 700, true, 2),
            (4, 16 << 10, false, 3),
            (2, 64 << 10, true, 4),
            (2, 700, false, 5),
        ] {
            let (data, index) = generate(&SynthOptions {
                threads,
                bytes: 1 << 20,
                block_bytes,
                seed,
                block_cell_last: false,
                crash: Some(Crash { half_written_block }),
            });
            let data = TraceBytes::from_vec(data);
            // Without the index: the rebuild's calls that never finished.
            let (streamed, built) = lookups_both_ways(data.clone(), None, |data| {
                crate::read::index::rebuild_to_scratch(data, Some(1 << 16))
                    .unwrap()
                    .expect("a scratch index")
            });
            // Every thread has a call never finished (its root at least).
            let header = Header::ref_from_prefix(&built).unwrap().0;
            assert!(header.unfinished.get() >= threads as u64, "seed {seed}");
            let streamed = streamed.unwrap_or_else(|| panic!("seed {seed}: not streamed"));
            assert!(streamed == built, "seed {seed}: the sidecars differ");
            // With the recorder's index (no footer; it covers every block
            // unless one was half written): the repair's finds.
            if half_written_block {
                continue;
            }
            let index = TraceBytes::from_vec(index);
            let (streamed, built) = lookups_both_ways(data, Some(&index), |data| {
                let mut loaded =
                    crate::read::index::load_index(data, index.clone(), Some(1 << 16)).unwrap();
                let (repaired, unfinished) = loaded.lookup.repair_all(data.as_slice()).unwrap();
                assert!(
                    unfinished >= threads && repaired >= unfinished,
                    "seed {seed}"
                );
                loaded
            });
            let streamed = streamed.unwrap_or_else(|| panic!("seed {seed}: repair not streamed"));
            assert!(
                streamed == built,
                "seed {seed}: the repaired sidecars differ"
            );
        }
    }

    #[test]
    fn cells_that_do_not_nest_are_not_streamed() {
        use crate::generate::raw::{SynthOptions, generate};
        let (data, mut index) = generate(&SynthOptions {
            threads: 2,
            bytes: 256 << 10,
            block_bytes: 4 << 10,
            ..SynthOptions::default()
        });
        // Swap two neighbouring container cells (one thread's): the cells
        // are no longer in post-order, which a build sorts out and a stream
        // cannot.
        let cells = &mut index[FILE_HEADER_LEN as usize..];
        let container = |k: usize| cells[CELL_LEN * k] == ObjectKind::Tracepoint as u8;
        let k = (0..cells.len() / CELL_LEN - 1)
            .find(|&k| container(k) && container(k + 1))
            .unwrap();
        let (first, second) = cells[CELL_LEN * k..CELL_LEN * (k + 2)].split_at_mut(CELL_LEN);
        first.swap_with_slice(second);
        let (streamed, _) = both_ways(data, index);
        assert!(streamed.is_none());
    }

    #[test]
    fn records_reject_lengths_that_do_not_fit() {
        let bytes = [0u8; 64];
        let mut at = 8;
        assert!(records::<BlockRecord>(&bytes, &mut at, 3, "blocks").is_err());
        assert_eq!(at, 8);
        assert!(records::<BlockRecord>(&bytes, &mut at, u64::MAX, "blocks").is_err());
        assert!(records::<BlockRecord>(&bytes, &mut at, 2, "blocks").is_ok());
        assert_eq!(at, 56);
        // A byte count pads to 8.
        assert!(records::<u8>(&bytes, &mut at, 3, "bytes").is_ok());
        assert_eq!(at, 64);
    }

    #[test]
    fn checksum_sees_every_byte_and_the_length() {
        let mut a = Checksum::new();
        a.bytes(b"block header and tail");
        for i in 0..21 {
            let mut changed = *b"block header and tail";
            changed[i] ^= 1;
            let mut b = Checksum::new();
            b.bytes(&changed);
            assert_ne!(a.0, b.0, "byte {i}");
        }
        let mut shorter = Checksum::new();
        shorter.bytes(b"block header and tai");
        assert_ne!(a.0, shorter.0);
    }
}
