//! [`TraceBytes`]: a trace file's bytes, memory-mapped, paged in by `pread`
//! ([`FileAccess::Read`]) or in memory, cheap to clone and shared by threads;
//! `ByteSource` (`source.rs`): those bytes as a reader's random reads take
//! them, lent or copied, chosen at open; files written whole or not at all
//! (`atomic`); packs (`packed`; `diff_map.rs`: a diff's map to its inputs).
//!
//! # Memory
//!
//! Resident memory is the heap (lookup tables, the node cache's budget,
//! what the caller holds) plus the mapped pages the reader has touched and
//! not released. Both are bounded by configuration, never by the trace's
//! size:
//!
//! - **Heap.** Container tables live in the lookup sidecar's mapped arrays
//!   (or an unlinked scratch one): page cache the kernel can drop. Only
//!   `SidecarPolicy::Off`, `open_bytes`, a failed scratch write, a
//!   deferred first open and an open that writes no sidecar (both within
//!   `LazyOptions::defer_sidecar`'s bound) keep them on the heap; rebuilds and repairs hold one window's cells at a time.
//! - **Mapped pages: the resident window.** `LazyOptions::resident_window`
//!   bounds what reads leave mapped. A forward read releases the blocks
//!   more than a window behind it, counted in bytes of the data file, and
//!   with them the pages of the index and sidecar mappings; random reads
//!   record the 2 MiB-aligned regions they enter (a fault maps at most an
//!   aligned folio) and release them once they add up to a window
//!   (`resident.rs`); opening releases what its passes touched. The
//!   memory tests (`tests/memory/`) check these bounds.
//!
//! # Invariants
//!
//! - Releasing (`MADV_DONTNEED` on a read-only shared file mapping) changes
//!   no byte the process sees: a released page is read again from the page
//!   cache, and addresses stay valid, so it is safe with any number of
//!   threads. For bytes in memory it does nothing.
//! - The reader never writes through a mapping. A mapped file changed under
//!   it shows its current bytes (decoders bounds-check them); a truncated
//!   one raises `SIGBUS` on access past its end. Read with
//!   [`FileAccess::Read`], its lost bytes read as no object kind: errors.
//! - Pages filled on first read (`pager`: a file read without a mapping, a
//!   packed trace's level-0 entry, `TraceBytes::paged`) are filled again
//!   when read after a release, so the same window bounds them.

mod atomic;
pub(crate) mod diff_map;
pub mod packed;
#[cfg(target_os = "linux")]
mod pager;
mod resident;
mod source;
pub(crate) mod stored_blocks;

pub(crate) use atomic::TemporaryName;
pub use atomic::remove_temporaries;
pub(crate) use atomic::{
    write_derived_file_atomically, write_file_atomically, write_file_atomically_read_back,
    write_trace_atomically,
};
pub(crate) use resident::Resident;
pub(crate) use source::{ByteSource, CUT_SHORT, Reads};

use std::fmt;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::{Mmap, UncheckedAdvice};

use crate::error::{Error, Result};

/// The size of the pages [`TraceBytes::release`] rounds to. Linux on x86-64
/// and most ARM configurations use 4 KiB; with larger pages a range rounded
/// to 4 KiB is widened by the kernel to whole pages, which only releases a
/// little more (see [`TraceBytes::release`]: releasing is never incorrect).
const PAGE: usize = 4096;

/// How far around a faulting address the kernel may map pages already in
/// the page cache: Linux's fault-around (`fault_around_bytes`, 64 KiB by
/// default) or, with large page-cache folios (ext4 reads files back in
/// folios of up to 2 MiB), the whole folio holding the address — seen on
/// this project's Linux 6.18 machines once a trace's pages had been evicted
/// and read back. Folios are aligned to their size, so a read maps pages
/// of the `FAULT_AROUND`-aligned region of the file that holds it only:
/// [`TraceBytes::release_around`] releases such regions whole.
pub(crate) const FAULT_AROUND: u64 = 2 << 20;

/// What holds the bytes.
enum Backing {
    Memory(Vec<u8>),
    /// A mapping, and the file it maps, for [`TraceBytes::copy_at`].
    Mapped(Mmap, File),
    /// Pages filled from a file on first read (`pager`): a file read
    /// without a mapping, or a packed trace's level-0 deflated entry.
    #[cfg(target_os = "linux")]
    Paged(pager::Pager),
}

/// Why [`TraceBytes::paged`] cannot serve entries on this system.
#[cfg(not(target_os = "linux"))]
const NO_PAGING: &str = "reading deflated entries in place needs Linux's userfaultfd";

/// How a reader reads a trace's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FileAccess {
    /// Mapped read-only (the default): a read costs no copy. A file
    /// truncated while mapped raises `SIGBUS` when a lost page is read,
    /// which ends the process.
    #[default]
    Map,
    /// Never mapped: each page is copied from the file (`pread`) into the
    /// reader's own memory when first read, and dropped again by the
    /// resident window as a mapping's pages are. A file truncated under the
    /// reader reads as bytes no decoder accepts, so reads give errors,
    /// never a signal; a file replaced (renamed over) is not seen, since
    /// the reader keeps the file it opened. For processes that must outlive
    /// any file they read: an IDE, a service. Linux only (`userfaultfd`);
    /// elsewhere, or where the kernel refuses it, opening says why.
    Read,
}

/// Zeros a data file may end with before [`TraceBytes::without_zero_tail`]
/// calls them a zero-filled tail.
pub(crate) const ZERO_SLACK: u64 = 64;

/// The bytes of a data or index file.
///
/// Files are opened read-only and mapped with `memmap2` (a shared mapping:
/// its pages are the page cache's). If another process truncates or
/// rewrites a file while it is mapped, reads of the changed pages see the
/// new bytes (every decoder bounds-checks, so changed bytes give decode
/// errors, not undefined reads), and a read past a truncated end raises
/// `SIGBUS` on Linux: do not modify traces while tracetree has them open,
/// or read them without a mapping ([`FileAccess::Read`]).
#[derive(Clone)]
pub struct TraceBytes {
    backing: Arc<Backing>,
    /// Where these bytes start in the backing: a [`slice`](Self::slice)
    /// of a mapping (a packed trace's stored entry) starts inside it.
    start: usize,
    len: usize,
}

impl TraceBytes {
    /// Bytes held in memory.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        Self::whole(Backing::Memory(bytes))
    }

    fn whole(backing: Backing) -> Self {
        let len = match &backing {
            Backing::Memory(bytes) => bytes.len(),
            Backing::Mapped(map, _) => map.len(),
            #[cfg(target_os = "linux")]
            Backing::Paged(pager) => pager.as_slice().len(),
        };
        TraceBytes {
            backing: Arc::new(backing),
            start: 0,
            len,
        }
    }

    /// The bytes of `range` (within these), sharing their memory or
    /// mapping: no copy. `None` when `range` does not lie within them.
    pub fn slice(&self, range: Range<u64>) -> Option<TraceBytes> {
        if range.start > range.end || range.end > self.len() {
            return None;
        }
        Some(TraceBytes {
            backing: Arc::clone(&self.backing),
            start: self.start + usize::try_from(range.start).ok()?,
            len: usize::try_from(range.end - range.start).ok()?,
        })
    }

    /// Maps `path` read-only. An empty file is held as an empty vector (an
    /// empty mapping is an error on some systems).
    pub fn map(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(Error::io(path, is_a_directory()));
        }
        Self::map_file(&file).map_err(|e| Error::io(path, e))
    }

    /// Opens `path` for reading as `access` says.
    pub fn open(path: impl AsRef<Path>, access: FileAccess) -> Result<Self> {
        match access {
            FileAccess::Map => Self::map(path),
            FileAccess::Read => Self::read_in_pages(path),
        }
    }

    /// Opens `path` to be read without a mapping ([`FileAccess::Read`]):
    /// contiguous in memory, each page copied from the file when first
    /// read (`pager`). An error says why this system cannot.
    pub fn read_in_pages(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let metadata = file.metadata().map_err(|e| Error::io(path, e))?;
        if metadata.is_dir() {
            return Err(Error::io(path, is_a_directory()));
        }
        if metadata.len() == 0 {
            return Ok(Self::from_vec(Vec::new()));
        }
        let refused = |why: String| {
            let why = format!("cannot be read without a mapping here: {why}");
            Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::Unsupported, why),
            )
        };
        #[cfg(target_os = "linux")]
        {
            pager::Pager::new(pager::Source::File(file, metadata.len()))
                .map(|pager| Self::whole(Backing::Paged(pager)))
                .map_err(refused)
        }
        #[cfg(not(target_os = "linux"))]
        Err(refused(NO_PAGING.into()))
    }

    /// Maps an open `file` read-only (an empty one is held as an empty
    /// vector). The file's name, if it has one, plays no part: an unlinked
    /// file maps the same. On Linux the file's open description is marked
    /// `O_NOATIME` where the kernel allows it (the file's owner): reads
    /// then leave its access time as it was, and each `pread` of
    /// [`copy_at`](Self::copy_at) skips the access-time check.
    pub fn map_file(file: &File) -> std::io::Result<Self> {
        if file.metadata()?.len() == 0 {
            return Ok(Self::from_vec(Vec::new()));
        }
        #[cfg(target_os = "linux")]
        if let Ok(flags) = rustix::fs::fcntl_getfl(file) {
            // Refused unless this process owns the file: its reads then
            // touch the access time as any reader's do.
            let _ = rustix::fs::fcntl_setfl(file, flags | rustix::fs::OFlags::NOATIME);
        }
        // SAFETY: the mapping is read-only (shared, over a file opened for
        // reading, or the scratch sidecar this crate wrote before mapping);
        // memmap2 requires `unsafe` because another process could modify
        // the file while it is mapped. Trace files are not modified by
        // tracetree while open, every decoder bounds-checks the bytes it
        // reads, and the documented contract above says not to change a
        // trace under a reader.
        let map = unsafe { Mmap::map(file) }?;
        Ok(Self::whole(Backing::Mapped(map, file.try_clone()?)))
    }

    /// These bytes without a zero-filled tail, and the length of the tail
    /// cut off (0 when there is none).
    ///
    /// Power loss, or a filesystem that allocates ahead, can leave zeros
    /// after the last byte a recorder wrote; read as objects, each 7 zeros
    /// are another `THREAD_NAME` of thread 0, so a gigabyte of them is a
    /// hundred million objects. Every whole block ends with its
    /// `BLOCK_END` byte and a whole trace with its `EOF` byte, neither
    /// zero, so only a half-written last block can end in zeros, and
    /// readers drop that block anyway: when more than 64 zeros
    /// (`ZERO_SLACK`) end the bytes, they are cut right after the last non-zero byte. The
    /// scan runs back from the end a window at a time, releasing what it
    /// read.
    pub fn without_zero_tail(self) -> (TraceBytes, u64) {
        const WINDOW: usize = 1 << 20;
        let bytes = self.as_slice();
        let mut end = bytes.len();
        while end > 0 {
            let start = end.saturating_sub(WINDOW);
            let found = bytes[start..end].iter().rposition(|&b| b != 0);
            self.release(start as u64..end as u64);
            if let Some(last) = found {
                end = start + last + 1;
                break;
            }
            end = start;
        }
        let keep = end as u64;
        let cut = self.len() - keep;
        if cut <= ZERO_SLACK {
            return (self, 0);
        }
        match self.slice(0..keep) {
            Some(kept) => (kept, cut),
            None => (self, 0),
        }
    }

    /// Reads `path` into memory.
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if path.is_dir() {
            return Err(Error::io(path, is_a_directory()));
        }
        std::fs::read(path)
            .map(Self::from_vec)
            .map_err(|e| Error::io(path, e))
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        let all: &[u8] = match &*self.backing {
            Backing::Memory(bytes) => bytes,
            Backing::Mapped(map, _) => map,
            #[cfg(target_os = "linux")]
            Backing::Paged(pager) => pager.as_slice(),
        };
        &all[self.start..self.start + self.len]
    }

    /// Copies the bytes from `offset` on into `buffer`, as many as fit and
    /// there are; returns how many. A mapping's are read from its file
    /// (`pread`), not through the mapping: a read that lands anywhere in
    /// a large file costs a system call and a copy instead of faulting
    /// pages in that must later be released (see the module's *Memory*),
    /// and maps nothing. Should the file fail to read, the mapping's bytes
    /// are copied instead (they are the same bytes); a file cut short
    /// meanwhile gives fewer bytes, where the mapping would fault.
    pub fn copy_at(&self, offset: u64, buffer: &mut [u8]) -> usize {
        let Some(left) = self.len().checked_sub(offset) else {
            return 0;
        };
        let wanted = buffer
            .len()
            .min(usize::try_from(left).unwrap_or(usize::MAX));
        let buffer = &mut buffer[..wanted];
        #[cfg(target_os = "linux")]
        if let Backing::Paged(pager) = &*self.backing {
            return pager.copy_at(self.start as u64 + offset, buffer);
        }
        if let Backing::Mapped(_, file) = &*self.backing {
            // A file that fails to read: the mapping's bytes are the same.
            if let Ok(filled) = read_file_at(file, self.start as u64 + offset, buffer) {
                return filled;
            }
        }
        let from = offset as usize;
        buffer.copy_from_slice(&self.as_slice()[from..from + wanted]);
        wanted
    }

    /// Their number.
    pub fn len(&self) -> u64 {
        self.len as u64
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the bytes are a file mapping, or pages filled from a file
    /// when first read (a packed trace's entry read in place, a file read
    /// without a mapping), which [`release`](Self::release) can drop.
    pub fn is_mapped(&self) -> bool {
        !matches!(&*self.backing, Backing::Memory(_))
    }

    /// Whether a packed trace's level-0 deflated entries can be read in
    /// place here (pages filled from the pack on first read): `Err` says
    /// why not (asked of the kernel once a process).
    pub fn paging_available() -> std::result::Result<(), String> {
        #[cfg(target_os = "linux")]
        {
            static AVAILABLE: std::sync::OnceLock<std::result::Result<(), String>> =
                std::sync::OnceLock::new();
            AVAILABLE.get_or_init(pager::available).clone()
        }
        #[cfg(not(target_os = "linux"))]
        Err(NO_PAGING.into())
    }

    /// The bytes of a packed trace's deflated entry made of stored deflate
    /// blocks only (`blocks`), read in place: contiguous in memory, each
    /// page filled from the pack file when first read and released like a
    /// mapping's (see `pager`, Linux only). `Err` says why they cannot
    /// be (no `userfaultfd` here); the caller then inflates the entry.
    pub(crate) fn paged(blocks: stored_blocks::StoredBlocks) -> std::result::Result<Self, String> {
        #[cfg(target_os = "linux")]
        {
            if blocks.is_empty() {
                return Ok(Self::from_vec(Vec::new()));
            }
            pager::Pager::new(pager::Source::Stored(blocks))
                .map(|pager| Self::whole(Backing::Paged(pager)))
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = blocks;
            Err(NO_PAGING.into())
        }
    }

    /// Lets the kernel drop this process's mapping of the pages that hold
    /// bytes of `range` (whole pages, so a little before and after it;
    /// bytes outside the mapping are ignored): they stop counting in the
    /// process's resident set, stay in the page cache, and fault back in,
    /// with the file's bytes, when read again. The bytes seen do not change,
    /// so this is a hint about memory, never about content; slices borrowed
    /// from [`as_slice`](Self::as_slice) stay valid, and releasing a page
    /// still in use only costs a fault. Bytes held in memory are left
    /// alone. Returns whether pages were released.
    pub fn release(&self, range: Range<u64>) -> bool {
        let len = match &*self.backing {
            Backing::Memory(_) => return false,
            Backing::Mapped(map, _) => map.len(),
            #[cfg(target_os = "linux")]
            Backing::Paged(pager) => pager.mapped_len(),
        };
        if range.is_empty() {
            return false;
        }
        // Offsets in the mapping (these bytes may be a slice of it).
        let end = usize::try_from(range.end)
            .unwrap_or(usize::MAX)
            .min(self.len)
            .saturating_add(self.start)
            .min(len);
        let start = usize::try_from(range.start)
            .unwrap_or(usize::MAX)
            .saturating_add(self.start);
        // Whole pages (the mapping starts on a page boundary).
        let start = start / PAGE * PAGE;
        let end = end.div_ceil(PAGE).saturating_mul(PAGE).min(len);
        if start >= end {
            return false;
        }
        let map = match &*self.backing {
            Backing::Mapped(map, _) => map,
            #[cfg(target_os = "linux")]
            Backing::Paged(pager) => return pager.release(start, end),
            Backing::Memory(_) => return false,
        };
        // SAFETY: `MADV_DONTNEED` is "unchecked" in memmap2 because on a
        // private or anonymous mapping it discards the pages' contents
        // (written copy-on-write pages, or anonymous memory, read back as
        // zeros). This mapping is `Mmap::map`'s: read-only and `MAP_SHARED`
        // over a file, so no page was ever written by this process, and
        // dropped pages fault back in from the page cache (the file) with the
        // same bytes, exactly as after the kernel reclaims them under memory
        // pressure. No reference into the mapping is invalidated: the
        // addresses stay mapped. `start..end` lies inside the mapping (checked
        // above). In-memory bytes never get here.
        unsafe {
            map.unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start)
                .is_ok()
        }
    }

    /// [`release`](Self::release)s the [`folio_regions`](Self::folio_regions)
    /// that hold `range`: reading a page maps its neighbours in its region
    /// too (the edges of the blocks on either side of a block included,
    /// which may be another thread's; they fault back in if read); else
    /// those edges would add up over the file.
    pub(crate) fn release_around(&self, range: Range<u64>) -> bool {
        self.release_folio_regions(self.folio_regions(range))
    }

    /// The [`FAULT_AROUND`]-aligned regions of the mapped file that hold
    /// the bytes of `range` (of these bytes, which may start inside the
    /// file), as region numbers: reading a byte maps pages of its region
    /// only (a fault maps at most the folio holding it, and a folio is
    /// aligned to its size, at most `FAULT_AROUND`).
    pub(crate) fn folio_regions(&self, range: Range<u64>) -> Range<u64> {
        let start = range.start.saturating_add(self.start as u64);
        let end = range
            .end
            .max(range.start.saturating_add(1))
            .saturating_add(self.start as u64);
        start / FAULT_AROUND..(end - 1) / FAULT_AROUND + 1
    }

    /// [`release`](Self::release)s the pages of `regions` (numbered as
    /// [`folio_regions`](Self::folio_regions) numbers them) that hold these
    /// bytes.
    pub(crate) fn release_folio_regions(&self, regions: Range<u64>) -> bool {
        let offset = self.start as u64;
        let start = regions.start.saturating_mul(FAULT_AROUND);
        let end = regions.end.saturating_mul(FAULT_AROUND);
        self.release(start.saturating_sub(offset)..end.saturating_sub(offset))
    }

    /// [`release`](Self::release)s every page of the mapping.
    pub fn release_all(&self) -> bool {
        self.release(0..self.len())
    }

    /// A [`ReleaseBehind`] over these bytes, releasing every `window` bytes
    /// (never without a window).
    pub(crate) fn behind(&self, window: Option<u64>) -> ReleaseBehind<'_> {
        ReleaseBehind {
            bytes: self,
            window: window.map(|window| window.max(1)),
            mark: None,
            last: 0,
        }
    }

    /// Whether `self` and `other` are the same bytes (clones of one value).
    pub fn same(&self, other: &TraceBytes) -> bool {
        Arc::ptr_eq(&self.backing, &other.backing)
            && self.start == other.start
            && self.len == other.len
    }
}

/// A pass over a mapping, front to back or back to front, that releases
/// the pages it has left behind each time they span a window
/// ([`TraceBytes::release_around`]: what the kernel mapped around them
/// too): what a one-time pass (an index check, a table build, a sidecar
/// write) reads then does not stay resident.
pub(crate) struct ReleaseBehind<'a> {
    bytes: &'a TraceBytes,
    window: Option<u64>,
    /// Where the pass was when it last released (or began).
    mark: Option<u64>,
    /// Where the pass is.
    last: u64,
}

impl ReleaseBehind<'_> {
    /// The pass has reached byte `at`: releases everything between it and
    /// the mark once that spans the window.
    pub(crate) fn at(&mut self, at: u64) {
        let Some(window) = self.window else {
            return;
        };
        self.last = at;
        let mark = *self.mark.get_or_insert(at);
        if mark.abs_diff(at) >= window {
            self.bytes.release_around(mark.min(at)..mark.max(at));
            self.mark = Some(at);
        }
    }

    /// The pass ends: releases what lies between the mark and where it is
    /// (for a pass that is one of several pieces, so that each leaves
    /// nothing behind).
    pub(crate) fn finish(&mut self) {
        if let (Some(mark), Some(_)) = (self.mark.take(), self.window) {
            self.bytes
                .release_around(mark.min(self.last)..mark.max(self.last) + 1);
        }
    }
}

impl fmt::Debug for TraceBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceBytes({} bytes)", self.len())
    }
}

/// The error for a folder given where a file is read: said plainly,
/// instead of what mapping one reports ("No such device").
fn is_a_directory() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::IsADirectory,
        "is a directory, not a trace file",
    )
}

/// Removes the least recently used entries of the cache directory `dir`
/// until they add up to at most `budget` bytes. An entry is a file of
/// `dir` that `companions` accepts, with the files it names (removed with
/// it and counted in its size); the file's modification time dates its
/// last use. `kept`'s entry stays. Failures (an entry removed meanwhile by
/// another process) are ignored: the directory is a cache.
pub(crate) fn evict_oldest(
    dir: &Path,
    kept: &Path,
    budget: u64,
    companions: impl Fn(&Path) -> Option<Vec<PathBuf>>,
) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    let size = |path: &Path, with: &[PathBuf]| -> u64 {
        std::iter::once(path)
            .chain(with.iter().map(PathBuf::as_path))
            .filter_map(|file| std::fs::metadata(file).ok())
            .map(|m| m.len())
            .sum()
    };
    let mut total = companions(kept).map_or(0, |with| size(kept, &with));
    let mut entries: Vec<_> = listing
        .filter_map(|found| {
            let path = found.ok()?.path();
            let with = companions(&path).filter(|_| path != kept)?;
            let used = std::fs::metadata(&path).ok()?.modified().ok()?;
            let len = size(&path, &with);
            total += len;
            Some((used, len, path, with))
        })
        .collect();
    entries.sort();
    for (_, len, path, with) in entries {
        if total <= budget {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
        for file in with {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Reads `buffer.len()` bytes of `file` from `offset` on (`pread`, again
/// after an interruption); returns how many there were (fewer where the
/// file ends first).
pub(crate) fn read_file_at(file: &File, offset: u64, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read_at(&mut buffer[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The per-user cache directory of tracetree: `$TRACETREE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/tracetree`, else `$HOME/.cache/tracetree`.
pub(crate) fn cache_dir() -> Result<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("TRACETREE_CACHE_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(dir).join("tracetree"));
    }
    match var("HOME") {
        Some(home) => Ok(PathBuf::from(home).join(".cache").join("tracetree")),
        None => Err(Error::invalid(
            "cache directory",
            "none is set: set TRACETREE_CACHE_DIR, XDG_CACHE_HOME or HOME",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mapping a file and reading it by `pread` leave its access time as
    /// it was (this process owns the file). It is set two days back, so
    /// that even a `relatime` mount would update it on a read.
    #[cfg(target_os = "linux")]
    #[test]
    fn reads_leave_the_access_time_as_it_was() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &[7u8; 3 * PAGE]).unwrap();
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400);
        let times = std::fs::FileTimes::new()
            .set_accessed(long_ago)
            .set_modified(long_ago);
        file.as_file().set_times(times).unwrap();
        let accessed = || std::fs::metadata(file.path()).unwrap().accessed().unwrap();
        let before = accessed();
        let mapped = TraceBytes::map(file.path()).unwrap();
        let mut buffer = [0u8; 100];
        assert_eq!(mapped.copy_at(PAGE as u64, &mut buffer), buffer.len());
        assert_eq!(buffer, [7u8; 100]);
        assert_eq!(accessed(), before);
    }

    #[test]
    fn releasing_keeps_the_bytes() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let bytes: Vec<u8> = (0..5 * PAGE + 123).map(|i| (i * 7 % 251) as u8).collect();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        let mapped = TraceBytes::map(file.path()).unwrap();
        assert!(mapped.is_mapped());
        let sum = |b: &TraceBytes| b.as_slice().iter().map(|&x| x as u64).sum::<u64>();
        let before = sum(&mapped);
        assert!(mapped.release(10..(3 * PAGE as u64 + 5)));
        assert!(mapped.release(10..20));
        assert!(!mapped.release(20..20), "an empty range");
        assert!(mapped.release_all());
        assert_eq!(mapped.as_slice(), &bytes[..]);
        assert_eq!(sum(&mapped), before);

        let memory = TraceBytes::from_vec(bytes.clone());
        assert!(!memory.is_mapped());
        assert!(!memory.release_all());
        assert_eq!(memory.as_slice(), &bytes[..]);
    }

    #[test]
    fn folio_regions_are_counted_in_the_file_not_in_a_slice() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let len = FAULT_AROUND as usize + 5 * PAGE;
        let bytes: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        let mapped = TraceBytes::map(file.path()).unwrap();
        // A slice starting 3 pages into the file (a packed trace's entry).
        let offset = 3 * PAGE as u64;
        let slice = mapped.slice(offset..len as u64).unwrap();
        let edge = FAULT_AROUND - offset;
        assert_eq!(slice.folio_regions(0..1), 0..1);
        assert_eq!(slice.folio_regions(5..5), 0..1, "an empty range");
        assert_eq!(slice.folio_regions(edge - 1..edge), 0..1);
        assert_eq!(slice.folio_regions(edge..edge + 1), 1..2);
        assert_eq!(slice.folio_regions(edge - 1..edge + 1), 0..2);
        assert_eq!(mapped.folio_regions(edge..edge + 1), 0..1);
        // Region 0 begins before the slice, region 1 ends after the file,
        // region 9 lies past it: released as far as they overlap, bytes kept.
        assert!(slice.release_folio_regions(0..1));
        assert!(slice.release_folio_regions(1..2));
        assert!(!slice.release_folio_regions(9..10));
        assert_eq!(slice.as_slice(), &bytes[offset as usize..]);
    }

    #[test]
    fn a_folder_is_not_mapped() {
        let dir = tempfile::tempdir().unwrap();
        for error in [TraceBytes::map(dir.path()), TraceBytes::read(dir.path())] {
            let error = error.unwrap_err().to_string();
            assert!(error.contains("is a directory"), "{error}");
        }
    }
}
