//! Bytes filled from a file when first read: an anonymous mapping whose
//! pages a handler thread fills by `pread` when they are first touched
//! (Linux's `userfaultfd`). Two sources ([`Source`]): a packed trace's
//! level-0 deflated entry, whose bytes lie in the pack in pieces 5 bytes
//! apart that no file mapping can line up ([`StoredBlocks`]), and a whole
//! file read without a mapping ([`FileAccess::Read`](super::FileAccess)).
//!
//! The readers take a trace's bytes as one slice. The mapping is registered
//! for missing pages: the first read of a page stops the reading thread,
//! the handler copies the [`CHUNK`] around it from the source and installs
//! it (`UFFDIO_COPY`, which fills only pages still missing, atomically),
//! and the thread goes on. Nothing is read ahead of use. Releasing pages
//! ([`TraceBytes::release`](super::TraceBytes::release), the resident
//! window) drops them (`MADV_DONTNEED`); they are filled again when read
//! again, so the resident window bounds this memory as it bounds a file
//! mapping's.
//!
//! Invariants: the bytes seen never change while the source is whole. A
//! source cut short under the reader (a truncated file) fills the missing
//! bytes with [`CUT_SHORT`], which is no object kind, so every decoder
//! stops there with an error: never a signal, never a wait. The
//! `userfaultfd` is made for user-mode faults only unless the process may
//! handle the kernel's too (root, `CAP_SYS_PTRACE`, or
//! `vm.unprivileged_userfaultfd = 1`); a system call handed bytes from a
//! page not read yet then fails with `EFAULT` (the readers decode, and so
//! read, what they hand on). Where `userfaultfd` is refused (a kernel
//! without it, a seccomp filter), [`Pager::new`] says why. The mapping is
//! not inherited by a child process (`MADV_DONTFORK`). Should the handler
//! fail, it unregisters the mapping first and its end closes the
//! `userfaultfd`: a waiting reader wakes and reads zeros, which the
//! decoders report as damage, rather than waiting forever.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use linux_raw_sys::general::{
    UFFD_API, UFFD_EVENT_PAGEFAULT, UFFD_USER_MODE_ONLY, UFFDIO_REGISTER_MODE_MISSING, uffd_msg,
    uffd_msg__bindgen_ty_1__bindgen_ty_1, uffdio_api, uffdio_copy, uffdio_range, uffdio_register,
};
use linux_raw_sys::ioctl::{
    UFFDIO_API, UFFDIO_COPY, UFFDIO_REGISTER, UFFDIO_UNREGISTER, UFFDIO_WAKE,
};
use memmap2::{Advice, MmapMut, MmapOptions, UncheckedAdvice};
use rustix::event::{EventfdFlags, PollFd, PollFlags, eventfd, poll};
use rustix::io::Errno;
use rustix::ioctl::{Opcode, Updater, ioctl};
use rustix::mm::UserfaultfdFlags;

use super::PAGE;
use super::stored_blocks::StoredBlocks;

/// Where a [`Pager`]'s pages are copied from.
pub(crate) enum Source {
    /// A packed trace's level-0 entry: its pieces in the pack file.
    Stored(StoredBlocks),
    /// A whole file, `len` bytes long when opened (`pread`).
    File(std::fs::File, u64),
}

impl Source {
    /// The bytes it serves.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Source::Stored(blocks) => blocks.len(),
            Source::File(_, len) => *len,
        }
    }

    /// Copies its bytes from `offset` on into `buffer`, as many as fit and
    /// there are; returns how many (fewer where the file was cut short).
    pub(crate) fn copy_at(&self, offset: u64, buffer: &mut [u8]) -> usize {
        match self {
            Source::Stored(blocks) => blocks.copy_at(offset, buffer),
            Source::File(file, len) => {
                let wanted = buffer
                    .len()
                    .min(usize::try_from(len.saturating_sub(offset)).unwrap_or(usize::MAX));
                super::read_file_at(file, offset, &mut buffer[..wanted]).unwrap_or(0)
            }
        }
    }
}

/// The byte a page is filled with where its source was cut short under
/// the reader: the one random reads give there too.
pub(crate) use super::source::CUT_SHORT;

/// The bytes a fault fills: the aligned 128 KiB around the page read. A
/// forward read of 1 GB makes ~8,000 faults; the readers' sparse passes
/// (counting a call's children reads a footer a page or so apart) fill
/// much of what they pass over. Of 4 KiB to 2 MiB, 128 KiB was the fastest
/// for both; the resident window releases what is filled.
pub const CHUNK: usize = 128 << 10;

/// Bytes filled from a [`Source`] on first read (see the module's doc).
pub struct Pager {
    map: MmapMut,
    len: usize,
    source: Arc<Source>,
    stop: Arc<OwnedFd>,
    /// Whether the handler serves faults (cleared when it ends).
    serving: Arc<AtomicBool>,
    handler: Option<JoinHandle<()>>,
}

impl Pager {
    /// Maps `source`'s bytes, to be filled on first read. `Err` says why
    /// `userfaultfd` cannot serve it here.
    pub(crate) fn new(source: Source) -> Result<Pager, String> {
        let len = usize::try_from(source.len()).map_err(|_| "bytes larger than memory")?;
        let uffd = open_userfaultfd()?;
        let mut map = MmapOptions::new()
            .len(len.div_ceil(PAGE).max(1) * PAGE)
            .map_anon()
            .map_err(|e| format!("no address space for {len} bytes: {e}"))?;
        // A child process must not see the mapping (unregistered there, its
        // missing pages would read as zeros).
        let _ = map.advise(Advice::DontFork);
        let mut register = uffdio_register {
            range: uffdio_range {
                start: map.as_mut_ptr() as u64,
                len: map.len() as u64,
            },
            mode: u64::from(UFFDIO_REGISTER_MODE_MISSING),
            ioctls: 0,
        };
        // SAFETY: UFFDIO_REGISTER takes a `struct uffdio_register` (the
        // kernel's own layout, from linux-raw-sys), read and written back;
        // the range is this process's private anonymous mapping above,
        // which nothing has read or written yet.
        unsafe {
            ioctl(
                &uffd,
                Updater::<{ UFFDIO_REGISTER as Opcode }, _>::new(&mut register),
            )
        }
        .map_err(|e| format!("userfaultfd refused the mapping: {e}"))?;
        let stop =
            Arc::new(eventfd(0, EventfdFlags::CLOEXEC).map_err(|e| format!("no eventfd: {e}"))?);
        let source = Arc::new(source);
        let serving = Arc::new(AtomicBool::new(true));
        let handler = Handler {
            uffd,
            stop: Arc::clone(&stop),
            serving: Arc::clone(&serving),
            source: Arc::clone(&source),
            len,
            base: map.as_mut_ptr() as u64,
            mapped: map.len(),
            buffer: vec![0; CHUNK],
        };
        let handler = std::thread::Builder::new()
            .name("tracetree-pager".into())
            .spawn(move || handler.run())
            .map_err(|e| format!("no thread for the pager: {e}"))?;
        Ok(Pager {
            map,
            len,
            source,
            stop,
            serving,
            handler: Some(handler),
        })
    }

    /// The entry's bytes (pages not read yet are filled on first read).
    pub fn as_slice(&self) -> &[u8] {
        &self.map[..self.len]
    }

    /// Copies bytes from `offset` on into `buffer` straight from the file,
    /// without filling pages.
    pub fn copy_at(&self, offset: u64, buffer: &mut [u8]) -> usize {
        self.source.copy_at(offset, buffer)
    }

    /// Drops the pages of `start..end` (page-aligned, within the
    /// mapping); they are filled again from the file when read. Nothing is
    /// dropped once the handler has ended (see the module's doc).
    pub fn release(&self, start: usize, end: usize) -> bool {
        if !self.serving.load(Ordering::Acquire) {
            return false;
        }
        // SAFETY: on a private anonymous mapping `MADV_DONTNEED` discards
        // the pages' contents (memmap2 calls it unchecked for that). This
        // mapping is registered with the handler's userfaultfd for missing
        // pages, so a discarded page is missing again and its next read is
        // filled by the handler with the same bytes from the file: its
        // contents are never lost, only refetched, and no reference into
        // the mapping is invalidated (the addresses stay mapped). The
        // handler serves every such read until `drop` stops it, when no
        // reference is left, unless it failed: then `serving` is false
        // (cleared before it unregisters), and nothing is released. A
        // release racing with that failure drops pages that then read as
        // zeros: damage the decoders report, as a failed fill gives.
        // `start..end` lies inside the mapping (checked by the caller,
        // `TraceBytes::release`).
        unsafe {
            self.map
                .unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start)
                .is_ok()
        }
    }

    /// The mapping's length (the entry's, rounded up to a page).
    pub fn mapped_len(&self) -> usize {
        self.map.len()
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        let _ = rustix::io::write(&*self.stop, &1u64.to_ne_bytes());
        if let Some(handler) = self.handler.take() {
            let _ = handler.join();
        }
    }
}

/// Whether a `userfaultfd` can be made here (`Err` says why not).
pub fn available() -> Result<(), String> {
    open_userfaultfd().map(drop)
}

/// Opens a `userfaultfd` and agrees on its API: one that handles the
/// kernel's faults too where allowed, else user-mode faults only.
fn open_userfaultfd() -> Result<OwnedFd, String> {
    let flags = UserfaultfdFlags::CLOEXEC | UserfaultfdFlags::NONBLOCK;
    let user_only = flags | UserfaultfdFlags::from_bits_retain(UFFD_USER_MODE_ONLY);
    // SAFETY: creating a userfaultfd touches no memory; the descriptor can
    // only affect ranges registered with it, and this module registers
    // only its own anonymous mappings.
    let uffd = unsafe { rustix::mm::userfaultfd(flags) }
        .or_else(|_| unsafe { rustix::mm::userfaultfd(user_only) })
        .map_err(|e| format!("userfaultfd is not available: {e}"))?;
    let mut api = uffdio_api {
        api: u64::from(UFFD_API),
        features: 0,
        ioctls: 0,
    };
    // SAFETY: UFFDIO_API takes a `struct uffdio_api` (linux-raw-sys's,
    // the kernel's layout), read and written back; no memory is touched.
    unsafe { ioctl(&uffd, Updater::<{ UFFDIO_API as Opcode }, _>::new(&mut api)) }
        .map_err(|e| format!("userfaultfd's API was refused: {e}"))?;
    Ok(uffd)
}

/// The handler thread's state.
struct Handler {
    uffd: OwnedFd,
    stop: Arc<OwnedFd>,
    serving: Arc<AtomicBool>,
    source: Arc<Source>,
    /// The bytes served (the mapping's tail after them reads as zeros).
    len: usize,
    base: u64,
    mapped: usize,
    buffer: Vec<u8>,
}

/// The size of one `uffd_msg`, and where a page fault's address is in it.
const MESSAGE: usize = size_of::<uffd_msg>();
const ADDRESS_AT: usize = std::mem::offset_of!(uffd_msg, arg)
    + std::mem::offset_of!(uffd_msg__bindgen_ty_1__bindgen_ty_1, address);

impl Handler {
    /// Serves faults until told to stop or an error; then unregisters the
    /// mapping, which wakes any thread still waiting (see the module's doc).
    fn run(mut self) {
        let _ = self.serve();
        self.serving.store(false, Ordering::Release);
        let mut range = uffdio_range {
            start: self.base,
            len: self.mapped as u64,
        };
        // SAFETY: UFFDIO_UNREGISTER takes a `struct uffdio_range`, read
        // only; the range is the mapping this handler was made for, which
        // outlives this thread (`Pager::drop` joins it first).
        let _ = unsafe {
            ioctl(
                &self.uffd,
                Updater::<{ UFFDIO_UNREGISTER as Opcode }, _>::new(&mut range),
            )
        };
    }

    fn serve(&mut self) -> Result<(), Errno> {
        let mut messages = [0u8; MESSAGE * 16];
        loop {
            let mut fds = [
                PollFd::new(&self.uffd, PollFlags::IN),
                PollFd::new(&*self.stop, PollFlags::IN),
            ];
            match poll(&mut fds, None) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
            if !fds[1].revents().is_empty() {
                return Ok(());
            }
            let read = match rustix::io::read(&self.uffd, &mut messages) {
                Ok(read) => read,
                Err(Errno::AGAIN | Errno::INTR) => continue,
                Err(e) => return Err(e),
            };
            for message in messages[..read].chunks_exact(MESSAGE) {
                if u32::from(message[0]) != UFFD_EVENT_PAGEFAULT {
                    continue;
                }
                let address = u64::from_ne_bytes(
                    message[ADDRESS_AT..ADDRESS_AT + 8]
                        .try_into()
                        .expect("eight bytes"),
                );
                self.fill(address)?;
            }
        }
    }

    /// Fills the chunk holding the faulting `address` from the file.
    fn fill(&mut self, address: u64) -> Result<(), Errno> {
        let Some(offset) = address
            .checked_sub(self.base)
            .map(|o| o as usize)
            .filter(|&o| o < self.mapped)
        else {
            return Ok(());
        };
        let start = offset / CHUNK * CHUNK;
        let end = (start + CHUNK).min(self.mapped);
        let buffer = &mut self.buffer[..end - start];
        let copied = self.source.copy_at(start as u64, buffer);
        // A file cut short meanwhile: bytes no decoder accepts; past the
        // end (the last page's tail): zeros.
        let whole = self.len.saturating_sub(start).min(buffer.len());
        buffer[copied.min(whole)..whole].fill(CUT_SHORT);
        buffer[whole.max(copied)..].fill(0);
        // The faulting page and the rest of the chunk after it, up to a
        // page still there (a release may have dropped part of the chunk);
        // several faults on one chunk can arrive before it is filled, and
        // for those the page is there already.
        let page = offset / PAGE * PAGE;
        let mut retries = 0;
        loop {
            match self.install(page, end) {
                (Ok(()), _) => break,
                (Err(Errno::AGAIN), copied) if copied > 0 => break,
                (Err(Errno::EXIST), _) => return self.wake(page),
                // The mapping is being changed: again.
                (Err(Errno::AGAIN), _) if retries < 1000 => {
                    retries += 1;
                    std::thread::yield_now();
                }
                (Err(e), _) => return Err(e),
            }
        }
        // The chunk before the page, as far as it is missing (a hint:
        // where part of it is there, its other pages fault on their own).
        if page > start {
            let _ = self.install(start, page);
        }
        Ok(())
    }

    /// Wakes the threads waiting on the page at `page` (filled meanwhile).
    fn wake(&self, page: usize) -> Result<(), Errno> {
        let mut range = uffdio_range {
            start: self.base + page as u64,
            len: PAGE as u64,
        };
        // SAFETY: UFFDIO_WAKE takes a `struct uffdio_range`, read only; it
        // wakes the threads waiting on one page of the mapping.
        unsafe {
            ioctl(
                &self.uffd,
                Updater::<{ UFFDIO_WAKE as Opcode }, _>::new(&mut range),
            )
        }
    }

    /// Installs the buffer's bytes for `start..end` of the mapping (offsets
    /// from its start, page-aligned) up to the first page already there,
    /// waking the threads waiting there; and how many bytes it installed.
    fn install(&mut self, start: usize, end: usize) -> (Result<(), Errno>, usize) {
        let chunk = start / CHUNK * CHUNK;
        let source = &self.buffer[start - chunk..end - chunk];
        let mut copy = uffdio_copy {
            dst: self.base + start as u64,
            src: source.as_ptr() as u64,
            len: (end - start) as u64,
            mode: 0,
            copy: 0,
        };
        // SAFETY: UFFDIO_COPY takes a `struct uffdio_copy` (the kernel's
        // layout), read and written back (`copy`). It copies `len` bytes
        // from `src` (this thread's buffer, borrowed for the call) into
        // pages of the registered mapping that are *missing*: it never
        // changes a page that is there, so no byte a reader has seen
        // changes; a missing page has not been read (its reader waits for
        // this copy). `dst..dst + len` is page-aligned and inside the
        // mapping (`fill` clips it to `mapped`), which outlives this thread.
        let result = unsafe {
            ioctl(
                &self.uffd,
                Updater::<{ UFFDIO_COPY as Opcode }, _>::new(&mut copy),
            )
        };
        // `copy` is the bytes copied, or a negative error when none were.
        (result, usize::try_from(copy.copy).unwrap_or(0))
    }
}

impl std::fmt::Debug for Pager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pager({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::TraceBytes;
    use std::io::Write;

    /// `data` deflated at level 0, as the bytes of a file.
    fn stored(data: &[u8]) -> TraceBytes {
        let mut out = Vec::new();
        let mut encoder = flate2::write::DeflateEncoder::new(&mut out, flate2::Compression::none());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap();
        TraceBytes::from_vec(out)
    }

    /// Pages a level-0 stream of `data` in place: `None`, said on stderr,
    /// where userfaultfd is not available.
    fn paged(data: &[u8]) -> Option<TraceBytes> {
        let file = stored(data);
        let blocks = StoredBlocks::walk(&file, 0, file.len(), data.len() as u64).unwrap();
        match TraceBytes::paged(blocks) {
            Ok(bytes) => Some(bytes),
            Err(why) => {
                eprintln!("SKIPPED: {why}");
                None
            }
        }
    }

    #[test]
    fn pages_read_released_and_read_again_are_the_entry() {
        let data: Vec<u8> = (0..3 * CHUNK + 12_345)
            .map(|i| (i * 7 % 253) as u8)
            .collect();
        let Some(bytes) = paged(&data) else { return };
        assert!(bytes.is_mapped());
        assert_eq!(bytes.len(), data.len() as u64);
        // From several threads at once, in different orders.
        std::thread::scope(|scope| {
            for step in [1, 3, 7, 11] {
                let (bytes, data) = (&bytes, &data);
                scope.spawn(move || {
                    for i in (0..data.len()).rev().step_by(step * 997) {
                        assert_eq!(bytes.as_slice()[i], data[i], "byte {i}");
                    }
                });
            }
        });
        assert_eq!(bytes.as_slice(), &data[..]);
        assert!(bytes.release(PAGE as u64..2 * CHUNK as u64 + 5));
        assert!(bytes.release_all());
        assert_eq!(bytes.as_slice(), &data[..]);
        let mut copy = vec![0; 1000];
        assert_eq!(bytes.copy_at(CHUNK as u64 - 10, &mut copy), 1000);
        assert_eq!(copy, data[CHUNK - 10..CHUNK + 990]);
        let slice = bytes.slice(5..CHUNK as u64 * 2).unwrap();
        assert_eq!(slice.as_slice(), &data[5..CHUNK * 2]);
        drop(bytes);
        assert_eq!(
            slice.as_slice()[..],
            data[5..CHUNK * 2],
            "a slice keeps the pages"
        );
    }

    #[test]
    fn released_pages_leave_the_resident_set() {
        let data: Vec<u8> = (0..32 << 20).map(|i| (i % 241) as u8).collect();
        let Some(bytes) = paged(&data) else { return };
        // The mapping's own resident bytes (other tests' memory aside).
        let start = format!("{:x}-", bytes.as_slice().as_ptr() as usize);
        let anon = || {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let mapping = &smaps[smaps.find(&start).unwrap()..];
            let line = mapping.lines().find(|l| l.starts_with("Rss:")).unwrap();
            line.split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<u64>()
                .unwrap()
                << 10
        };
        let before = anon();
        let sum: u64 = bytes.as_slice().iter().map(|&b| u64::from(b)).sum();
        assert_eq!(sum, data.iter().map(|&b| u64::from(b)).sum::<u64>());
        let read = anon();
        assert!(bytes.release_all());
        let released = anon();
        assert!(
            before == 0 && read == data.len() as u64 && released == 0,
            "resident: {before} before, {read} read, {released} released"
        );
    }
}
