//! Event ids moved after the fact: threads diffed in parallel each number
//! their tracepoints from 0, and once all are done each thread's ids are
//! raised by the count of the threads before it: in the written index, in
//! place, and in the data file as it is copied into the pack.
//!
//! The files are the streaming writer's own: its index lists each block's
//! `BLOCK_START` cell and then that block's cells, in the data file's
//! order, so a container cell belongs to the thread of the block cell
//! before it. A block of a thread to renumber is read whole (a block is
//! about a megabyte), its tracepoints found by skipping, their event ids
//! raised, and written on; the threads' open containers are carried from
//! block to block, for their footers. The rest of the data passes as it
//! is. Memory: a block, a chunk of cells, the blocks to renumber and the
//! open containers.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use rustc_hash::FxHashMap;

use crate::common::ObjectKind;
use crate::error::{Error, Result};
use crate::format::FILE_HEADER_LEN;
use crate::format::index::CELL_LEN;
use crate::format::skip::try_skip;
use crate::model::{TracepointHeader, TracepointType};

/// Bytes of an index cell (kind, id, start, end) and of the index's
/// header (magic, version).
const CELL: usize = CELL_LEN;
const HEADER: u64 = FILE_HEADER_LEN;
/// Cells read at a time.
const CHUNK: usize = 4096;
/// Bytes of the data file read at a time.
const PASSED: usize = 1 << 20;

/// One block of a thread to renumber: its thread, where its kind byte and
/// its `BLOCK_END` byte are.
struct Block {
    thread: i32,
    start: u64,
    end: u64,
}

/// The data file of a diff whose index is renumbered, with what raises
/// its event ids as it is copied ([`write_data`](Self::write_data)).
pub(crate) struct Renumbered<'p> {
    data: &'p Path,
    blocks: Vec<Block>,
    bases: &'p FxHashMap<i32, i32>,
}

/// Raises the event ids of each thread in `bases` (thread id → amount) in
/// the index `index` of the data file `data`, both as the streaming writer
/// wrote them; the data file is raised as it is written on.
pub(crate) fn renumber<'p>(
    data: &'p Path,
    index: &Path,
    bases: &'p FxHashMap<i32, i32>,
) -> Result<Renumbered<'p>> {
    let blocks = if bases.values().all(|&base| base == 0) {
        Vec::new()
    } else {
        renumber_index(index, bases)?
    };
    Ok(Renumbered {
        data,
        blocks,
        bases,
    })
}

fn raised(event: i32, base: i32) -> Result<i32> {
    event
        .checked_add(base)
        .ok_or_else(|| Error::limit("event ids", i64::from(event) + i64::from(base), i32::MAX))
}

/// Raises the container cells' ids of the threads in `bases`; the blocks
/// of those threads, in file order.
fn renumber_index(path: &Path, bases: &FxHashMap<i32, i32>) -> Result<Vec<Block>> {
    let io = |e| Error::io(path, e);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut reader = std::io::BufReader::with_capacity(1 << 16, &file);
    let mut skipped = [0u8; HEADER as usize];
    reader.read_exact(&mut skipped).map_err(io)?;
    let cells = len.saturating_sub(HEADER) / CELL as u64;
    let (mut at, mut left) = (HEADER, cells);
    let mut chunk = vec![0u8; CHUNK * CELL];
    let mut blocks = Vec::new();
    let mut base = 0;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        let chunk = &mut chunk[..n * CELL];
        reader.read_exact(chunk).map_err(io)?;
        let mut changed = false;
        for cell in chunk.chunks_exact_mut(CELL) {
            let id = i32::from_be_bytes([cell[1], cell[2], cell[3], cell[4]]);
            let int64 = |at: usize| {
                let mut bytes = [0u8; 8];
                bytes.copy_from_slice(&cell[at..at + 8]);
                i64::from_be_bytes(bytes)
            };
            match cell[0] {
                kind if kind == ObjectKind::BlockStart as u8 => {
                    base = bases.get(&id).copied().unwrap_or(0);
                    if base != 0 {
                        let (start, end) = (int64(5), int64(13));
                        let (Ok(start), Ok(end)) = (u64::try_from(start), u64::try_from(end))
                        else {
                            return Err(Error::internal("a block cell of the diff out of range"));
                        };
                        blocks.push(Block {
                            thread: id,
                            start,
                            end,
                        });
                    }
                }
                kind if kind == ObjectKind::Tracepoint as u8 && base != 0 => {
                    cell[1..5].copy_from_slice(&raised(id, base)?.to_be_bytes());
                    changed = true;
                }
                _ => {}
            }
        }
        if changed {
            file.write_all_at(chunk, at).map_err(io)?;
        }
        at += chunk.len() as u64;
        left -= n as u64;
    }
    Ok(blocks)
}

impl Renumbered<'_> {
    /// The data file's length.
    pub(crate) fn len(&self) -> Result<u64> {
        let metadata = std::fs::metadata(self.data).map_err(|e| Error::io(self.data, e))?;
        Ok(metadata.len())
    }

    /// Writes the data file to `out`, the event ids of the tracepoints in
    /// its blocks to renumber raised.
    pub(crate) fn write_data(&self, out: &mut dyn Write) -> Result<()> {
        let path = self.data;
        let io = |e| Error::io(path, e);
        let file = File::open(path).map_err(io)?;
        let mut reader = BufReader::with_capacity(PASSED, file);
        let mut open: FxHashMap<i32, Vec<TracepointType>> = FxHashMap::default();
        let mut buffer = Vec::new();
        let damaged =
            || Error::internal("the diff's data file does not parse where it was renumbered");
        let mut passed_to = 0u64;
        for block in &self.blocks {
            let base = self.bases.get(&block.thread).copied().unwrap_or(0);
            let gap = block.start.checked_sub(passed_to).ok_or_else(damaged)?;
            let passed = std::io::copy(&mut (&mut reader).take(gap), out).map_err(io)?;
            if passed != gap {
                return Err(damaged());
            }
            let len = block
                .end
                .checked_sub(block.start)
                .and_then(|len| usize::try_from(len).ok())
                .filter(|&len| len >= 5)
                .ok_or_else(damaged)?;
            buffer.resize(len, 0);
            reader.read_exact(&mut buffer).map_err(io)?;
            let stack = open.entry(block.thread).or_default();
            let mut at = 5;
            while at < len {
                let (skipped, size) =
                    try_skip(&buffer[at..], stack.last().copied()).ok_or_else(damaged)?;
                match (skipped.kind, skipped.header) {
                    (ObjectKind::Tracepoint, Some(header)) => {
                        let event = raised(header.event.0, base)?;
                        let ids = at + TracepointHeader::EVENT_AT;
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
                at += size;
            }
            out.write_all(&buffer).map_err(io)?;
            passed_to = block.end;
        }
        std::io::copy(&mut reader, out).map_err(io)?;
        Ok(())
    }
}
