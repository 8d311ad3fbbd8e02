//! Writing a sidecar: from built tables, or streamed from the index's
//! cells thread by thread (no table on the heap), to a temporary file
//! renamed into place, or to an unlinked scratch file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use zerocopy::little_endian::{I32, U32, U64};
use zerocopy::{FromZeros, IntoBytes};

use super::layout::*;
use super::load::load_mapped;
use crate::format::ObjectKind;
use crate::format::TraceContext;
use crate::format::index::CELL_LEN;
use crate::read::eager::LoadReport;
use crate::read::lookup::containers::{Placed, chunk_count};
use crate::read::lookup::problem::{IndexProblem, IndexStatus};
use crate::read::lookup::table::Lookup;
use crate::storage::TraceBytes;

/// What a sidecar records besides the lookups.
pub(crate) struct Summary<'a> {
    pub(crate) status: &'a IndexStatus,
    pub(crate) references: usize,
    pub(crate) repaired: usize,
    pub(crate) data: &'a LoadReport,
}

pub(super) static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes the sidecar of `lookup` (every thread's table is built first) to
/// `path`, atomically: a temporary file beside it, then a rename.
pub(crate) fn write(
    path: &Path,
    files: &Files<'_>,
    lookup: &Lookup,
    context: &TraceContext,
    summary: &Summary<'_>,
) -> std::io::Result<()> {
    rename_into_place(path, |temp| {
        encode_to(temp, files, lookup, context, summary)?.sync_all()
    })
}

/// Leaves at `path` the note that the files were opened once: a sidecar
/// header with their stamps, magic [`OPENED_MAGIC`], and no sections. It
/// is not synced: lost in a crash, it only makes the next open a first one
/// again.
pub(crate) fn write_opened(path: &Path, files: &Files<'_>) -> std::io::Result<()> {
    let note = Header {
        file_len: U64::new(HEADER_LEN as u64),
        ..stamped_header(OPENED_MAGIC, files)
    };
    rename_into_place(path, |temp| std::fs::write(temp, note.as_bytes()))
}

/// A header with `magic` and the stamps of `files`, its other fields zero.
fn stamped_header(magic: [u8; 8], files: &Files<'_>) -> Header {
    let [index_len, index_mtime, index_hash, index_ctime, index_inode] = files.index_fields();
    Header {
        magic,
        version: U32::new(SIDECAR_VERSION),
        data_len: U64::new(files.data.len()),
        data_mtime: U64::new(files.data_stamp.mtime),
        data_ctime: U64::new(files.data_stamp.ctime),
        data_inode: U64::new(files.data_stamp.inode),
        index_len: U64::new(index_len),
        index_mtime: U64::new(index_mtime),
        index_hash: U64::new(index_hash),
        index_ctime: U64::new(index_ctime),
        index_inode: U64::new(index_inode),
        stamped_at: U64::new(files.stamped_at),
        ..Header::new_zeroed()
    }
}

/// Writes a new file beside `path` with `write`, then renames it over
/// `path`; a failure leaves nothing behind.
fn rename_into_place(
    path: &Path,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let temp = temporary_beside(path)?;
    let _listed = crate::storage::TemporaryName::new(&temp);
    let result = write(&temp).and_then(|()| std::fs::rename(&temp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// A new temporary name beside `path`, whose directory is created if
/// missing and must be writable: one without write permission is left
/// alone, even by a user (root) whom the system would let write there.
fn temporary_beside(path: &Path) -> std::io::Result<PathBuf> {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
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
    Ok(PathBuf::from(temp))
}

/// Creates `path` (which must not exist) and writes the sidecar of
/// `lookup` to it.
pub(super) fn encode_to(
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
pub(super) fn pad(out: &mut impl Write, len: usize) -> std::io::Result<()> {
    out.write_all(&[0u8; 8][..pad8(len) - len])
}

/// Writes the sidecar of `lookup` to `file` (new and empty). When no
/// thread's table is built yet and every thread's cells stream
/// ([`Lookup::stream_containers`]), each thread's arrays are written
/// straight from the index's cells and no table is ever held on the heap;
/// otherwise (or when a thread's cells fail the checks on the way) every
/// table is built first and the arrays are written from the tables.
pub(super) fn encode_file(
    file: &std::fs::File,
    files: &Files<'_>,
    lookup: &Lookup,
    context: &TraceContext,
    summary: &Summary<'_>,
) -> std::io::Result<()> {
    if encode(file, files, lookup, context, summary, false)? {
        return Ok(());
    }
    file.set_len(0)?;
    lookup.build_all(files.data.as_slice());
    encode(file, files, lookup, context, summary, true).map(|_| ())
}

/// Everything of a sidecar but the threads' records and arrays, and where
/// those go.
pub(super) struct Layout {
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
    pub(super) fn new(
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
            IndexStatus::Rebuilt(IndexProblem::Requested) => (STATUS_READ_THROUGH, String::new()),
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
        let header = Header {
            status: U32::new(status),
            file_len: U64::new(file_len as u64),
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
            ..stamped_header(SIDECAR_MAGIC, files)
        };
        Layout {
            header,
            references,
            problem,
            sections,
        }
    }

    /// Where thread `slot`'s record is.
    pub(super) fn thread_record_at(&self, slot: usize) -> u64 {
        (HEADER_LEN + (self.header.blocks.get() as usize + slot) * 24) as u64
    }

    /// Writes everything up to the threads' arrays, with `threads`' records.
    pub(super) fn write_prefix(
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
pub(super) fn section_len(n: usize) -> usize {
    16 * n + pad8(4 * n) + 8 * chunk_count(n)
}

/// Thread `slot`'s record.
pub(super) fn thread_record(
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

/// Writes the sidecar, each thread's arrays (threads in parallel) from
/// its table when `from_tables`, else streamed from the index's cells with
/// no table built; false, with the file in any state, when a thread cannot
/// be streamed ([`Lookup::stream_containers`]).
pub(super) fn encode(
    file: &std::fs::File,
    files: &Files<'_>,
    lookup: &Lookup,
    context: &TraceContext,
    summary: &Summary<'_>,
    from_tables: bool,
) -> std::io::Result<bool> {
    use rayon::prelude::*;
    let data = files.data.as_slice();
    let threads = lookup.blocks.thread_count();
    // A thread whose table could not be made (its cells were not trusted
    // and the scan met corrupt data) has nothing to persist.
    let tables = match from_tables {
        true => (0..threads)
            .map(|slot| lookup.containers(data, slot).map(Some))
            .collect::<crate::Result<Vec<_>>>()
            .map_err(std::io::Error::other)?,
        false if (0..threads).all(|slot| lookup.streams(slot)) => vec![None; threads],
        false => return Ok(false),
    };
    let counts: Vec<usize> = (0..threads)
        .map(|slot| match &tables[slot] {
            Some((table, _)) => table.len(),
            None => lookup.container_count(slot),
        })
        .collect();
    let layout = Layout::new(files, lookup, context, summary, &counts);
    // The records are written again once each thread's flags are known.
    let mut records: Vec<ThreadRecord> = (0..threads)
        .map(|slot| thread_record(lookup, slot, counts[slot], false))
        .collect();
    let mut prefix = Vec::new();
    layout.write_prefix(&mut prefix, lookup, &records)?;
    write_at(file, &prefix, 0)?;
    // A table reads its cells in the index: released every window's worth.
    let mappings = lookup.mappings();
    let release_every =
        (lookup.release_window()).map(|window| (window / CELL_LEN as u64).max(1) as usize);
    let streamed = (0..threads)
        .into_par_iter()
        .map(|slot| {
            let mut arrays = SectionWriter::new(file, layout.sections[slot], counts[slot]);
            let Some((table, cells)) = tables[slot] else {
                let converted = lookup.stream_containers(data, slot, |placed| arrays.place(placed));
                return match converted {
                    Some(converted) if arrays.finish(&converted.chunk_max_end)? => {
                        Ok(Some(converted.events_ascend))
                    }
                    _ => Ok(None),
                };
            };
            for k in (0..table.len()).rev() {
                arrays.place(Placed {
                    at: k,
                    id: 0,
                    start: table.start(cells, k).0,
                    end: table.end(cells, k).0,
                    event: table.event(cells, k).0,
                });
                if release_every.is_some_and(|every| k % every == 0) {
                    mappings
                        .iter()
                        .for_each(|mapping| _ = mapping.release_all());
                }
            }
            let maxima: Vec<u64> = table.chunk_max_ends().collect();
            Ok(arrays.finish(&maxima)?.then_some(table.events_ascend()))
        })
        .collect::<std::io::Result<Vec<Option<bool>>>>()?;
    for (slot, events_ascend) in streamed.into_iter().enumerate() {
        let Some(events_ascend) = events_ascend else {
            return Ok(false);
        };
        records[slot] = thread_record(lookup, slot, counts[slot], events_ascend);
    }
    write_at(file, records.as_bytes(), layout.thread_record_at(0))?;
    file.set_len(layout.header.file_len.get())?;
    Ok(true)
}

/// Writes all of `bytes` at offset `at` of `file`.
fn write_at(file: &std::fs::File, bytes: &[u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::write_all_at(file, bytes, at);
    #[cfg(windows)]
    {
        let (mut bytes, mut at) = (bytes, at);
        while !bytes.is_empty() {
            let n = std::os::windows::fs::FileExt::seek_write(file, bytes, at)?;
            (bytes, at) = (&bytes[n..], at + n as u64);
        }
        Ok(())
    }
}

/// Writes one thread's arrays (content starts, content ends, event ids,
/// chunk maxima) at their place in the sidecar as containers arrive in
/// start order, last first: each array is filled from its end, a buffer
/// of [`SectionWriter::BUFFER`] entries at a time.
pub(super) struct SectionWriter<'f> {
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

impl<'f> SectionWriter<'f> {
    pub(super) const BUFFER: usize = 1 << 13;

    pub(super) fn new(file: &'f std::fs::File, at: u64, n: usize) -> Self {
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

    pub(super) fn place(&mut self, placed: Placed) {
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
    pub(super) fn flush(&mut self, at: usize) -> std::io::Result<()> {
        let (starts, ends, events) = &mut self.buffered;
        for (buffer, base, width) in [
            (starts, self.starts, 8),
            (ends, self.ends, 8),
            (events, self.events, 4),
        ] {
            buffer.reverse();
            write_at(self.file, buffer, base + (width * at) as u64)?;
            buffer.clear();
        }
        Ok(())
    }

    /// Writes what is buffered and the chunk maxima; false if a container
    /// came out of turn or not every position was filled.
    pub(super) fn finish(mut self, chunk_max_end: &[u64]) -> std::io::Result<bool> {
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
        write_at(self.file, &maxima, self.chunks)?;
        Ok(true)
    }
}
