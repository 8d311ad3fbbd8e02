//! Event ids moved after the fact: threads diffed in parallel each number
//! their tracepoints from 0, and once all are done each thread's ids are
//! raised by the count of the threads before it: in the index as it is
//! copied into the pack, and in place in the data already there.
//!
//! The files are the streaming writer's own: its index lists each block's
//! `BLOCK_START` cell and then that block's cells, in the data file's
//! order, so a container cell belongs to the thread of the block cell
//! before it. The copy of the index hands each block of a thread to
//! renumber to a second thread as it meets it; that one reads the block
//! whole (a block is about a megabyte), finds its tracepoints by skipping,
//! raises their event ids and writes it back with its new CRC-32 (the
//! pack's entry combines it); the threads' open containers are carried
//! from block to block, for their footers. The rest of the data is not
//! read. The two overlap each other and what the caller copies meanwhile
//! (the id map). Memory: a block, a chunk of cells, the blocks not yet
//! raised and the open containers.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::mpsc;

use rustc_hash::FxHashMap;
use zerocopy::FromBytes;

use crate::common::ObjectKind;
use crate::error::{Error, Result};
use crate::format::FILE_HEADER_LEN;
use crate::format::index::{CELL_LEN, RawIndexCell};
use crate::format::skip::try_skip;
use crate::model::{TracepointHeader, TracepointType};

/// Bytes of an index cell (kind, id, start, end) and of the index's
/// header (magic, version).
const CELL: usize = CELL_LEN;
const HEADER: u64 = FILE_HEADER_LEN;
/// Cells read at a time.
const CHUNK: usize = 4096;

/// One block of a thread to renumber: its thread, where its kind byte and
/// its `BLOCK_END` byte are.
struct Block {
    thread: i32,
    start: u64,
    end: u64,
}

/// Raises the event ids of each thread in `bases` (thread id → amount) in
/// the index `index` as it is copied to `index_out`, and in the data it
/// indexes, in `pack` from `at`, both as the streaming writer wrote them.
/// The data's blocks are raised on a thread of their own as the copy
/// finds them, and `meanwhile` runs on a third. Returns the ranges of
/// `pack` rewritten (start, end, in file order), each with its CRC-32.
pub(crate) fn renumber(
    pack: &File,
    at: u64,
    (index, index_out): (&Path, &mut impl Write),
    bases: &FxHashMap<i32, i32>,
    meanwhile: impl FnOnce() -> Result<()> + Send,
) -> Result<Vec<(u64, u64, u32)>> {
    let (found, blocks) = mpsc::channel();
    fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
    std::thread::scope(|scope| {
        let raising = scope.spawn(move || raise_blocks(pack, at, blocks, bases));
        let other = scope.spawn(meanwhile);
        let copied = copy_index(index, index_out, bases, found);
        let raised = joined(raising);
        copied.and(joined(other)).and(raised)
    })
}

fn raised(event: i32, base: i32) -> Result<i32> {
    event
        .checked_add(base)
        .ok_or_else(|| Error::limit("event ids", i64::from(event) + i64::from(base), i32::MAX))
}

/// Copies the index at `path` to `out`, the container cells' ids of the
/// threads in `bases` raised; sends the blocks of those threads to `found`,
/// in file order.
fn copy_index(
    path: &Path,
    out: &mut impl Write,
    bases: &FxHashMap<i32, i32>,
    found: mpsc::Sender<Block>,
) -> Result<()> {
    let io = |e| Error::io(path, e);
    let file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut reader = std::io::BufReader::with_capacity(1 << 16, &file);
    let mut header = [0u8; HEADER as usize];
    reader.read_exact(&mut header).map_err(io)?;
    out.write_all(&header)?;
    let cells = len.saturating_sub(HEADER) / CELL as u64;
    let mut left = cells;
    let mut chunk = vec![0u8; CHUNK * CELL];
    let mut base = 0;
    // Once the raising thread stops (an error), blocks are no longer sent.
    let mut sending = true;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        let chunk = &mut chunk[..n * CELL];
        reader.read_exact(chunk).map_err(io)?;
        let raw = <[RawIndexCell]>::mut_from_bytes(chunk)
            .map_err(|_| Error::internal("a chunk of the diff's index is not whole cells"))?;
        for cell in raw {
            let id = cell.id.get();
            match cell.kind {
                kind if kind == ObjectKind::BlockStart as u8 => {
                    base = bases.get(&id).copied().unwrap_or(0);
                    if base != 0 && sending {
                        let (Ok(start), Ok(end)) = (
                            u64::try_from(cell.start.get()),
                            u64::try_from(cell.end.get()),
                        ) else {
                            return Err(Error::internal("a block cell of the diff out of range"));
                        };
                        let block = Block {
                            thread: id,
                            start,
                            end,
                        };
                        sending = found.send(block).is_ok();
                    }
                }
                kind if kind == ObjectKind::Tracepoint as u8 && base != 0 => {
                    cell.id.set(raised(id, base)?);
                }
                _ => {}
            }
        }
        out.write_all(chunk)?;
        left -= n as u64;
    }
    // The index's footer, past its last whole cell.
    let copied = std::io::copy(&mut reader, out).map_err(io)?;
    if HEADER + cells * CELL as u64 + copied != len {
        return Err(Error::internal(
            "the diff's index changed while it was packed",
        ));
    }
    Ok(())
}

/// Raises the event ids of the tracepoints in `blocks` (offsets in the
/// data, which starts at `at` in `pack`), in place.
fn raise_blocks(
    pack: &File,
    at: u64,
    blocks: mpsc::Receiver<Block>,
    bases: &FxHashMap<i32, i32>,
) -> Result<Vec<(u64, u64, u32)>> {
    let mut open: FxHashMap<i32, Vec<TracepointType>> = FxHashMap::default();
    let mut buffer = Vec::new();
    let mut changed = Vec::new();
    let damaged = || Error::internal("the diff's data does not parse where it was renumbered");
    for block in blocks {
        let base = bases.get(&block.thread).copied().unwrap_or(0);
        // The block as it was written: `BLOCK_START` to `BLOCK_END`.
        let len = block
            .end
            .checked_sub(block.start)
            .and_then(|len| usize::try_from(len).ok())
            .filter(|&len| len >= 5)
            .ok_or_else(damaged)?;
        let start = at.checked_add(block.start).ok_or_else(damaged)?;
        buffer.resize(len + 1, 0);
        pack.read_exact_at(&mut buffer, start)?;
        let stack = open.entry(block.thread).or_default();
        let mut next = 5;
        while next < len {
            let (skipped, size) =
                try_skip(&buffer[next..len], stack.last().copied()).ok_or_else(damaged)?;
            match (skipped.kind, skipped.header) {
                (ObjectKind::Tracepoint, Some(header)) => {
                    let event = raised(header.event.0, base)?;
                    let ids = next + TracepointHeader::EVENT_AT;
                    buffer[ids..ids + 4].copy_from_slice(&event.to_be_bytes());
                    if header.tracepoint_type.is_container() {
                        stack.push(header.tracepoint_type);
                    }
                }
                (ObjectKind::TracepointFooter, _) => {
                    stack.pop();
                }
                _ => {}
            }
            next += size;
        }
        pack.write_all_at(&buffer, start)?;
        changed.push((start, start + buffer.len() as u64, crc32fast::hash(&buffer)));
    }
    Ok(changed)
}
