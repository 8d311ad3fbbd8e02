//! Loading a sidecar: every section checked against the layout, the
//! stamps and a sample of blocks against the data, before anything in it
//! is trusted.

use std::path::Path;

use zerocopy::little_endian::{I32, U64};
use zerocopy::{FromBytes, IntoBytes};

use super::layout::*;
use super::*;
use crate::common::{PhysicalOffset, ThreadId};
use crate::format::ContextBuilder;
use crate::format::object::peek_kind_and_id;
use crate::format::{FILE_HEADER_LEN, ObjectKind};
use crate::read::eager::LoadReport;
use crate::read::lookup::block_table::{BlockInfo, BlockTable};
use crate::read::lookup::containers::{
    ContainerTable, Containers, MappedCells, Words, chunk_count,
};
use crate::read::lookup::problem::{IndexProblem, IndexStatus};
use crate::read::lookup::table::Lookup;
use crate::storage::TraceBytes;

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
// Long: every section is checked in file order against the ones before
// it; nothing is trusted until the last check passed.
pub(super) fn load_mapped(
    sidecar: TraceBytes,
    restamp: Option<&Path>,
    files: &Files<'_>,
) -> Result<LoadedSidecar, SidecarProblem> {
    let bytes = sidecar.as_slice();
    let (header, _) = Header::read_from_prefix(bytes)
        .map_err(|_| malformed(0, format!("{} bytes, shorter than a header", bytes.len())))?;
    if header.magic == OPENED_MAGIC {
        // An earlier open's note: the same files mean a second open.
        if header.file_len.get() != bytes.len() as u64 {
            return Err(malformed(16, "a note with sections"));
        }
        check_stamps(&header, files)?;
        return Err(SidecarProblem::Deferred);
    }
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
    check_stamps(&header, files)?;
    let data = files.data.as_slice();
    let stale = |what: String| Err(SidecarProblem::Stale(what));
    let stamp = files.data_stamp;
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
    if status > STATUS_READ_THROUGH {
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
        damage: None,
        // Measured again at every open (the bytes are cut before this).
        zero_filled_bytes: 0,
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
        STATUS_READ_THROUGH => IndexStatus::Rebuilt(IndexProblem::Requested),
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

/// Whether `header` records the files as they are: the data file's length
/// and stamps, and the index's (cheapest checks first); `Stale` says which
/// differ.
fn check_stamps(header: &Header, files: &Files<'_>) -> Result<(), SidecarProblem> {
    let stale = |what: String| Err(SidecarProblem::Stale(what));
    let data_len = files.data.len();
    if header.data_len.get() != data_len {
        return stale(format!(
            "data file length {data_len} differs from the recorded {}",
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
    Ok(())
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
pub(super) fn restamp_header(path: &Path, header: &Header, stamped_at: u64) -> std::io::Result<()> {
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
pub(super) fn restamp_header(_: &Path, _: &Header, _: u64) -> std::io::Result<()> {
    Ok(())
}
