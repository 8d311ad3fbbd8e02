//! [`TraceBytes`]: the bytes of a trace file, memory-mapped or in memory,
//! cheap to clone and shareable across threads.

use std::fmt;
use std::fs::File;
use std::io::BufWriter;
use std::ops::Range;
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
/// and read back. [`TraceBytes::release_around`] covers this much on either
/// side.
pub(crate) const FAULT_AROUND: u64 = 2 << 20;

/// What holds the bytes.
enum Backing {
    Memory(Vec<u8>),
    Mapped(Mmap),
}

/// The bytes of a data or index file.
///
/// Files are opened read-only and mapped with `memmap2` (a shared mapping:
/// its pages are the page cache's). If another process truncates or
/// rewrites a file while it is mapped, reads of the changed pages see the
/// new bytes (every decoder bounds-checks, so changed bytes give decode
/// errors, not undefined reads), and a read past a truncated end raises
/// `SIGBUS` on Linux: do not modify traces while tracetree has them open.
#[derive(Clone)]
pub struct TraceBytes(Arc<Backing>);

impl TraceBytes {
    /// Bytes held in memory.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        TraceBytes(Arc::new(Backing::Memory(bytes)))
    }

    /// Maps `path` read-only. An empty file is held as an empty vector (an
    /// empty mapping is an error on some systems).
    pub fn map(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        Self::map_file(&file).map_err(|e| Error::io(path, e))
    }

    /// Maps an open `file` read-only (an empty one is held as an empty
    /// vector). The file's name, if it has one, plays no part: an unlinked
    /// file maps the same.
    pub fn map_file(file: &File) -> std::io::Result<Self> {
        if file.metadata()?.len() == 0 {
            return Ok(Self::from_vec(Vec::new()));
        }
        // SAFETY: the mapping is read-only (shared, over a file opened for
        // reading, or the scratch sidecar this crate wrote before mapping);
        // memmap2 requires `unsafe` because another process could modify
        // the file while it is mapped. Trace files are not modified by
        // tracetree while open, every decoder bounds-checks the bytes it
        // reads, and the documented contract above says not to change a
        // trace under a reader.
        let map = unsafe { Mmap::map(file) }?;
        Ok(TraceBytes(Arc::new(Backing::Mapped(map))))
    }

    /// Reads `path` into memory.
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        std::fs::read(path)
            .map(Self::from_vec)
            .map_err(|e| Error::io(path, e))
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match &*self.0 {
            Backing::Memory(bytes) => bytes,
            Backing::Mapped(map) => map,
        }
    }

    /// Their number.
    pub fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    /// Whether the bytes are a file mapping (whose pages [`release`](Self::release)
    /// can drop).
    pub fn is_mapped(&self) -> bool {
        matches!(&*self.0, Backing::Mapped(_))
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
        let Backing::Mapped(map) = &*self.0 else {
            return false;
        };
        if range.is_empty() {
            return false;
        }
        let len = map.len();
        let end = usize::try_from(range.end).unwrap_or(usize::MAX).min(len);
        let start = usize::try_from(range.start).unwrap_or(usize::MAX);
        // Whole pages (the mapping starts on a page boundary).
        let start = start / PAGE * PAGE;
        let end = end.div_ceil(PAGE).saturating_mul(PAGE).min(len);
        if start >= end {
            return false;
        }
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

    /// [`release`](Self::release)s `range` and [`FAULT_AROUND`] on either
    /// side: reading a page maps its neighbours too (the edges of the
    /// blocks on either side of a block included, which may be another
    /// thread's; they fault back in if read); else those edges would add
    /// up over the file.
    pub(crate) fn release_around(&self, range: Range<u64>) -> bool {
        self.release(
            range.start.saturating_sub(FAULT_AROUND)..range.end.saturating_add(FAULT_AROUND),
        )
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
        }
    }

    /// Whether `self` and `other` are the same bytes (clones of one value).
    pub fn same(&self, other: &TraceBytes) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
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
}

impl ReleaseBehind<'_> {
    /// The pass has reached byte `at`: releases everything between it and
    /// the mark once that spans the window.
    pub(crate) fn at(&mut self, at: u64) {
        let Some(window) = self.window else {
            return;
        };
        let mark = *self.mark.get_or_insert(at);
        if mark.abs_diff(at) >= window {
            self.bytes.release_around(mark.min(at)..mark.max(at));
            self.mark = Some(at);
        }
    }
}

impl fmt::Debug for TraceBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceBytes({} bytes)", self.len())
    }
}

/// Writes a file through `write` (buffered) into a temporary file beside
/// `path`, syncs it, then renames it over `path` and syncs the folder, so
/// readers never see half a file. On failure the temporary file is removed
/// and `path` is untouched. I/O errors (including [`Error::Stream`] from
/// `write`) name `path`.
pub fn write_file_atomically<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
) -> Result<T> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp-{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let io = |e| Error::io(path, e);
    let result = (|| -> Result<T> {
        let file = File::create(&temp).map_err(io)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let value = write(&mut out).map_err(|e| match e {
            Error::Stream(e) => io(e),
            e => e,
        })?;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&temp, path).map_err(io)?;
        File::open(dir).and_then(|dir| dir.sync_all()).map_err(io)?;
        Ok(value)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
