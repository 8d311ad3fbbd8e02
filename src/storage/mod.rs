//! [`TraceBytes`]: the bytes of a trace file, memory-mapped or in memory,
//! cheap to clone and shareable across threads.
//!
//! # Memory
//!
//! Resident memory = heap (lookup structures + the cache budget + what the
//! caller holds) + mapped pages (data, index, sidecar) the reader has touched
//! and not released. Both are bounded by configuration:
//!
//! - **Heap.** With the lookup sidecar (used whenever valid, and *mapped back*
//!   right after a first open writes it, so that open's heap tables are
//!   dropped) the container tables are the sidecar's mapped arrays: the heap
//!   is per-block and per-reference-object entries only (≈ 0.1 MB at 1 GB).
//!   Where none can be written (no sidecar directory, a read-only one,
//!   `SidecarPolicy::ReadOnly`) the tables go to an unlinked scratch sidecar
//!   (above) and are mapped the same way: page cache the kernel can drop, not
//!   heap (`tests/lazy_scratch_sidecar.rs`: four readers of a 192 MB trace in
//!   a read-only directory grow `RssAnon` by 0–6 MB, against 28 MB with
//!   `Off`). Only `SidecarPolicy::Off`, `open_bytes`, a failed scratch
//!   write and a first open that defers the sidecar (up to
//!   `LazyOptions::defer_sidecar`'s bound, 64 MiB by default) keep each
//!   thread's table on the heap: 4 bytes per container (27 MB at 1 GB,
//!   ~270 MB at 10 GB). An open that writes the sidecar from a valid index
//!   writes its arrays straight from the index's cells, with no
//!   table on the heap (above), and so does one that rebuilds a missing
//!   index (it rebuilds into a scratch index first, above; a crashed
//!   recorder's unfinished calls included), and so does one that repairs a
//!   crashed recorder's own index (its scan reads the cells alongside, above). Walking all 26.7 million nodes
//!   of a 1 GB trace through `TraceTree` with a 256 KiB budget grows the heap
//!   by 0.66 MB (test `lazy_memory`).
//! - **Mapped pages: the resident window.** `LazyOptions::resident_window`
//!   (default 16 MiB; `None` keeps every page) bounds what a *forward* read
//!   leaves resident behind it: a `Stream` made `releasing` (the walks' main
//!   stream, and `scan_children`, which serves child counts, pages and child
//!   indexes) remembers the first block it has not released; when it enters a
//!   block `window` bytes further on *in the data file* (other threads' blocks
//!   in between count: large folios map them with the thread's own, so a
//!   window counted in the thread's logical stream left about twice its size
//!   mapped for two interleaved threads), it releases the blocks in between
//!   (`TraceBytes::release_around` per block: the 2 MiB-aligned regions of
//!   the file holding it, because the kernel maps that much of the
//!   neighbouring blocks, another thread's included: fault-around maps 64
//!   KiB, and with large page-cache folios — ext4 reads evicted files back in
//!   folios of up to 2 MiB on our Linux 6.18 machines — a fault maps the
//!   whole folio, aligned to its size; those edges would otherwise add up
//!   over the file), and with them every page of the index and sidecar mappings
//!   (they fault back in when used). Footers read ahead of the walk (one per
//!   open container) are released when the walk passes them. A walk's stream
//!   also releases the blocks it kept (its last window) when the walk ends
//!   (`Stream::released_at_end`, dropped with the walk), so walks one after
//!   another do not each leave a window behind (`tests/lazy_walk_release.rs`:
//!   +0.4 MB mapped after each walk with a 4 MiB window, ~6 MB without). Opening releases every page it
//!   touched (index validation, framing checks, table builds) when it ends,
//!   and its one-time passes release behind them as they go
//!   (`storage::ReleaseBehind`: every window, plus 2 MiB around for what the
//!   kernel mapped with the pages): `load_index` releases the index behind its
//!   pass, and the data pages its peeks at blocks' edges and reference
//!   objects touched; building a thread's table (on first use,
//!   `build_lookups`, or before writing the sidecar) releases the index cells
//!   behind its backwards pass and behind its footer checks' forward passes
//!   (pieces, two at a time: each releases what is left behind it when done),
//!   and the data pages the footer checks touch (one byte per container
//!   faults in a page of nearly every block of the thread,
//!   `Lookup::release_reads`); writing the sidecar releases the data pages
//!   its framing checksum touches (two spots per block) and the index every
//!   window's worth of cells it reads; loading a sidecar releases each block
//!   whose framing it checked at once (a sample of 33 blocks, read in 2 MiB
//!   folios, mapped ~50–100 MB for a moment). An open of a 1.08 GB trace
//!   that writes the sidecar (`tracetree info`'s second, which then walks
//!   every thread) peaks at 64–65 MB max RSS (was 0.27–1.1 GB, depending on
//!   the folios the page cache held; the first, its tables on the heap, at
//!   81–88 MB), later opens at 31–35 MB; at 10.7 GB the
//!   first open peaks at 135 MB (was 666 MB). `tests/lazy_open_memory.rs`
//!   checks an open's peak (`VmHWM`) against its window. A walker
//!   therefore keeps about one window plus the block it is in and the one it
//!   released from, plus the edges of its blocks' neighbours the kernel
//!   mapped with them (64 KiB each, up to 2 MiB with large folios), plus the lookups' pages touched since the last release (about
//!   the window's share of the index or sidecar): a full traversal of a
//!   1 GB trace, both threads in parallel, peaks at +38 MB of mapped pages
//!   with the default window (+1,160 MB with none; `benches/lazy.rs`), and
//!   `tracetree print` of a 1.08 GB trace at 39 MB max RSS (was 1.17 GB).
//!   `tests/lazy_memory.rs`' ignored 1 GB variant (threads in turn, then both
//!   in parallel): +14.7 MB in turn, +38.4–40.9 MB in parallel with the
//!   sidecar and +41.9–47.3 MB over the index path in four runs (allowed
//!   there: per walker window + 2 blocks + edges, plus the lookups' share,
//!   plus 4 MiB = 46.9 MiB); with the window counted in the thread's stream,
//!   +51.2 and +80.8 MB in the same page-cache state. The
//!   former "parallel index-path exception" (+70–96 MB) was the walks before:
//!   each left its last window resident, and on the index path
//!   `build_lookups` left nearly every data page mapped before the walks
//!   started (a baseline of ~1.2 GB: on this machine that variant then
//!   reported +0 for the index path).
//!   Random access (lookups, children of calls here and there, backwards
//!   moves: streams not made `releasing`, and the blocks a releasing stream
//!   still kept when dropped, such as a scan of one call's children)
//!   records the 2 MiB-aligned regions of the blocks it enters
//!   (`Resident::entered_at_random`: what reading a block can map, since a
//!   fault maps at most an aligned folio); a node decoded on its own is
//!   copied from the file instead (`TraceBytes::copy_at`, `pread`: no fault,
//!   nothing to release), and so are the cells that find its container
//!   (`ContainerTable::find_start_copied`), so it counts nothing; found
//!   through the mapped cells instead (a sidecar's table before its fence
//!   is built), it counts as one region, for the lookups' pages. A scan of
//!   a short call's children (≤ 64 KiB) reads copies too (`lazy/copied.rs`:
//!   the content, and its containers' cells) and counts nothing. Once the
//!   regions and copies add up to a window, it releases the regions (one
//!   `madvise` over the span from the first to the last: each call makes
//!   the other cores flush their TLBs, so with two threads, ten calls a
//!   release cost more than the reads; made outside the lock, so other
//!   threads go on meanwhile) and every page of the lookups' mappings
//!   (`tests/lazy_random_release.rs`: 2,000 expansions over a 32 MB trace
//!   leave 0.4 MB mapped with a 1 MiB window, 35.8 MB without). The price is
//!   refaults and copies: 1,000 random expansions of a 1 GB trace take
//!   several times the time without a window (BENCHMARKS.md; searches keep to a
//!   page or two of the lookups through their fence, `containers::table`);
//!   `resident_window(None)` opts out, and then nothing is copied.
//! - **Cost.** A released page faults in again when read (a minor fault from
//!   the page cache, mapping 64 KiB or a large folio at a time): every walk of a trace pays
//!   those faults, about 16,000 per GB, where without releasing only the
//!   first walk did.
//! - **Opening without an index** rebuilds in windows (above): the heap holds
//!   one window's cells (~24 bytes per container or reference object; a
//!   4 MiB window's are ~0.6 MB) and the data one window's pages.
//!   `tests/lazy_rebuild_memory.rs`: a 256 MB trace without its index, 1 MiB
//!   window, grows the peak resident set by 13.7 MB (the whole-file rebuild
//!   before grew it by 416 MB); `tracetree info` on a 1.08 GB trace without
//!   its index peaks at 80–113 MB max RSS, depending on the page cache's
//!   folios (was 1.48 GB).
//!   A crashed recorder's trace without its index too: its calls that never
//!   got a footer stream into the sidecar with the rebuilt cells (the same
//!   test, a 256 MB crashed trace: 6.9–11.5 MB, against 66 MB when every
//!   thread's table was built first); `tracetree info` on a 900 MB crashed
//!   trace without its index peaks at 81–91 MB max RSS (was 190 MB, and
//!   1.05–1.24 GB before the windows).
//! - **A crashed recorder's own index** (no footer; its blocks cover the
//!   data) is repaired (above) with a releasing scan that reads the cells
//!   alongside (its cursor keeps 32 bytes per 256 containers: 0.7 MB at
//!   850 MB, against 21 MB of tables), and its threads stream into the
//!   sidecar: `tests/lazy_repair_memory.rs` (256 MB, 1 MiB window)
//!   grows the peak by 8.2–13.7 MB, against 332 MB when the scan kept the
//!   data resident and the tables were merged and written from the heap;
//!   `tracetree info` on an 850 MB crashed trace with its index peaks at
//!   96–116 MB max RSS with a heap of about 1 MB (was 969 MB in the same
//!   page-cache state). An index whose blocks stop before the
//!   data's last ones is rejected, and the trace is rebuilt as above (a
//!   900 MB crashed trace with the first 78% of its index: 1.17 s,
//!   74–89 MB).
//!
//! **Releasing and correctness.** `MADV_DONTNEED` on a read-only shared file
//! mapping changes no byte the process sees: a released page is read again
//! from the page cache, i.e. the file, exactly as after the kernel reclaims it
//! under memory pressure; references into the mapping stay valid (the
//! addresses stay mapped). So releasing is safe with any number of threads
//! reading the same pages (a walker releasing pages another thread is using
//! costs that thread a fault, nothing else), and for bytes in memory it does
//! nothing (it would zero anonymous memory). **If the file changes under the
//! mapping**, nothing new happens: a shared mapping shows the file's current
//! bytes whether or not a page was released (decoders bounds-check, so changed
//! bytes give decode errors; a truncated file raises `SIGBUS` on access past
//! its end) — releasing only makes a reread more likely to see a change that
//! was already visible. The reader never writes through a mapping.
//!
//! A packed trace's entry deflated at level 0 is held in an anonymous
//! mapping instead, paged in from the pack on first read
//! ([`TraceBytes::paged`], `pager`): releasing its pages drops them, and
//! they are filled again from the file when read again, so the same
//! window bounds it and the same reasoning holds.

mod atomic;
pub mod packed;
#[cfg(target_os = "linux")]
mod pager;
pub mod stored_blocks;

pub(crate) use atomic::TemporaryName;
pub use atomic::remove_temporaries;
pub(crate) use atomic::{
    write_derived_file_atomically, write_file_atomically, write_trace_atomically,
};

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
    /// A packed trace's level-0 deflated entry, its pages filled from the
    /// pack on first read (`pager`).
    #[cfg(target_os = "linux")]
    Paged(pager::Pager),
}

/// Why [`TraceBytes::paged`] cannot serve entries on this system.
#[cfg(not(target_os = "linux"))]
const NO_PAGING: &str = "reading deflated entries in place needs Linux's userfaultfd";

/// Zeros a data file may end with before [`TraceBytes::without_zero_tail`]
/// calls them a zero-filled tail.
pub const ZERO_SLACK: u64 = 64;

/// The bytes of a data or index file.
///
/// Files are opened read-only and mapped with `memmap2` (a shared mapping:
/// its pages are the page cache's). If another process truncates or
/// rewrites a file while it is mapped, reads of the changed pages see the
/// new bytes (every decoder bounds-checks, so changed bytes give decode
/// errors, not undefined reads), and a read past a truncated end raises
/// `SIGBUS` on Linux: do not modify traces while tracetree has them open.
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
    /// readers drop that block anyway: when more than [`ZERO_SLACK`] zeros
    /// end the bytes, they are cut right after the last non-zero byte. The
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
            let at = self.start as u64 + offset;
            let mut filled = 0;
            loop {
                match file.read_at(&mut buffer[filled..], at + filled as u64) {
                    Ok(0) => return filled,
                    Ok(read) => {
                        filled += read;
                        if filled == wanted {
                            return filled;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
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

    /// Whether the bytes are a file mapping, or a packed trace's entry
    /// read in place (whose pages [`release`](Self::release) can drop).
    pub fn is_mapped(&self) -> bool {
        !matches!(&*self.backing, Backing::Memory(_))
    }

    /// Whether [`paged`](Self::paged) can serve entries here: `Err` says
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
    pub fn paged(blocks: stored_blocks::StoredBlocks) -> std::result::Result<Self, String> {
        #[cfg(target_os = "linux")]
        {
            if blocks.is_empty() {
                return Ok(Self::from_vec(Vec::new()));
            }
            pager::Pager::new(blocks).map(|pager| Self::whole(Backing::Paged(pager)))
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

/// The per-user cache directory of tracetree: `$TRACETREE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/tracetree`, else `$HOME/.cache/tracetree`.
pub fn cache_dir() -> Result<PathBuf> {
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
