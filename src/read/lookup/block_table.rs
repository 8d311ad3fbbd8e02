//! [`BlockTable`]: where each thread's blocks lie in the data file, and the
//! translation between a thread's [`LogicalOffset`]s and the data file's
//! [`PhysicalOffset`]s.
//!
//! A thread's logical stream is the concatenation of its blocks' payloads, so
//! translating is a binary search over the logical starts of its blocks. An
//! object never spans two blocks, so a decoder only ever needs the contiguous
//! bytes from a position to the end of that position's block
//! ([`BlockTable::span`]).

use crate::common::{LogicalOffset, PhysicalOffset, ThreadId};
use crate::format::BLOCK_HEADER_LEN;
use crate::storage::ByteSource;

/// One block as an index cell or a scan gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockInfo {
    /// The block's thread.
    pub thread: ThreadId,
    /// Offset of its `BLOCK_START` kind byte.
    pub start: PhysicalOffset,
    /// Offset of its `BLOCK_END` byte.
    pub end: PhysicalOffset,
}

impl BlockInfo {
    /// Offset of the first payload byte.
    pub fn payload_start(&self) -> PhysicalOffset {
        self.start + BLOCK_HEADER_LEN
    }

    /// Bytes of payload.
    pub fn payload_len(&self) -> u64 {
        self.end.0.saturating_sub(self.payload_start().0)
    }
}

/// The bytes available from a logical position to the end of its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockSpan {
    /// Where the position lies in the data file.
    pub physical: PhysicalOffset,
    /// Contiguous payload bytes from there to the block's `BLOCK_END`.
    pub len: u64,
    /// The logical offset of the position.
    pub logical: LogicalOffset,
}

/// One thread's blocks, in file order.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadBlocks {
    pub(crate) thread: ThreadId,
    /// Every block, empty ones included.
    pub(crate) block_count: usize,
    /// Logical start of each non-empty block (ascending).
    logical_starts: Vec<u64>,
    /// Physical payload start of each non-empty block.
    payload_starts: Vec<u64>,
    /// The length of the logical stream.
    pub(crate) len: u64,
}

impl ThreadBlocks {
    /// The index (among non-empty blocks) of the block holding `at`.
    #[inline]
    pub(crate) fn block_of(&self, at: LogicalOffset) -> Option<usize> {
        if at.0 >= self.len {
            return None;
        }
        // The last block starting at or before `at`; empty blocks are not
        // listed, so its payload holds `at`.
        Some(self.logical_starts.partition_point(|&start| start <= at.0) - 1)
    }

    /// Logical start, logical end and physical payload start of block `block`.
    #[inline]
    pub(crate) fn block_bounds(&self, block: usize) -> (u64, u64, u64) {
        let start = self.logical_starts[block];
        let end = self
            .logical_starts
            .get(block + 1)
            .copied()
            .unwrap_or(self.len);
        (start, end, self.payload_starts[block])
    }

    /// A copy of the bytes of `range` of this stream, read from the data
    /// file through `source` (lent, or by `pread`: nothing mapped), with blocks
    /// that find the same logical offsets in the copy, and the stream's
    /// length; offsets outside `range` lie past the copy's end (reading
    /// them is an error). `None` when `range` is empty or not in
    /// the stream, or a read falls short.
    pub(crate) fn read_range(
        &self,
        source: ByteSource<'_>,
        range: std::ops::Range<LogicalOffset>,
    ) -> Option<(Vec<u8>, ThreadBlocks)> {
        let (from, to) = (range.start.0, range.end.0);
        if from >= to || to > self.len {
            return None;
        }
        let len = usize::try_from(to - from).ok()?;
        let mut bytes = vec![0; len];
        // The copy's own block, one per block it spans (one or two,
        // mostly) and the one after: room for the usual four up front.
        let starts = |first: u64| {
            let mut starts = Vec::with_capacity(4);
            starts.push(first);
            starts
        };
        let mut copy = ThreadBlocks {
            thread: self.thread,
            block_count: 0,
            logical_starts: starts(0),
            payload_starts: starts(len as u64),
            len: self.len,
        };
        let (mut block, mut at) = (self.block_of(range.start)?, from);
        while at < to {
            if block >= self.logical_starts.len() {
                return None;
            }
            let (start, end, physical) = self.block_bounds(block);
            if end <= at || start > at {
                return None;
            }
            let filled = (at - from) as usize;
            let piece = &mut bytes[filled..(end.min(to) - from) as usize];
            if source.read_into(physical + (at - start), piece) != piece.len() {
                return None;
            }
            copy.logical_starts.push(at);
            copy.payload_starts.push(filled as u64);
            (block, at) = (block + 1, end.min(to));
        }
        if to < self.len {
            copy.logical_starts.push(to);
            copy.payload_starts.push(len as u64);
        }
        copy.block_count = copy.logical_starts.len();
        Some((bytes, copy))
    }

    /// The contiguous span at `at`.
    #[inline]
    pub(crate) fn span(&self, at: LogicalOffset) -> Option<BlockSpan> {
        let block = self.block_of(at)?;
        let (start, end, physical) = self.block_bounds(block);
        Some(BlockSpan {
            physical: PhysicalOffset(physical + (at.0 - start)),
            len: end - at.0,
            logical: at,
        })
    }
}

/// Every thread's blocks, and translation between logical and physical offsets.
#[derive(Debug, Clone, Default)]
pub(crate) struct BlockTable {
    /// Ascending by thread id.
    threads: Vec<ThreadBlocks>,
    /// Every block, in file order.
    blocks: Vec<BlockInfo>,
}

impl BlockTable {
    /// A table of `blocks`, given in file order.
    pub fn new(blocks: impl IntoIterator<Item = BlockInfo>) -> Self {
        let mut blocks: Vec<BlockInfo> = blocks.into_iter().collect();
        blocks.sort_by_key(|block| block.start);
        let mut ids: Vec<ThreadId> = blocks.iter().map(|block| block.thread).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut threads: Vec<ThreadBlocks> = ids
            .iter()
            .map(|&thread| ThreadBlocks {
                thread,
                ..ThreadBlocks::default()
            })
            .collect();
        for block in &blocks {
            let slot = ids
                .binary_search(&block.thread)
                .expect("every thread listed");
            let thread = &mut threads[slot];
            thread.block_count += 1;
            let len = block.payload_len();
            if len > 0 {
                thread.logical_starts.push(thread.len);
                thread.payload_starts.push(block.payload_start().0);
                thread.len += len;
            }
        }
        BlockTable { threads, blocks }
    }

    /// The threads, ascending.
    pub fn thread_ids(&self) -> impl ExactSizeIterator<Item = ThreadId> + '_ {
        self.threads.iter().map(|thread| thread.thread)
    }

    /// Every block, in file order.
    pub fn blocks(&self) -> &[BlockInfo] {
        &self.blocks
    }

    /// How many threads have blocks.
    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// The position of `thread` among the threads, ascending by id.
    pub(crate) fn slot(&self, thread: ThreadId) -> Option<usize> {
        self.threads
            .binary_search_by_key(&thread, |blocks| blocks.thread)
            .ok()
    }

    pub(crate) fn thread(&self, slot: usize) -> &ThreadBlocks {
        &self.threads[slot]
    }

    /// The length of `thread`'s logical stream.
    pub fn logical_len(&self, thread: ThreadId) -> LogicalOffset {
        LogicalOffset(self.slot(thread).map_or(0, |slot| self.threads[slot].len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Reads, TraceBytes};

    fn block(thread: i32, start: u64, payload: u64) -> BlockInfo {
        BlockInfo {
            thread: ThreadId(thread),
            start: PhysicalOffset(start),
            end: PhysicalOffset(start + BLOCK_HEADER_LEN + payload),
        }
    }

    /// Thread 1: payloads of 10 and 7 bytes; thread 0: 4, an empty block, 3.
    fn table() -> BlockTable {
        BlockTable::new([
            block(1, 16, 10), // payload 21..31, end 31
            block(0, 32, 4),  // payload 37..41
            block(0, 42, 0),  // empty
            block(1, 48, 7),  // payload 53..60
            block(0, 61, 3),  // payload 66..69
        ])
    }

    #[test]
    fn threads_ascend_and_count_every_block() {
        let table = table();
        assert_eq!(
            table.thread_ids().collect::<Vec<_>>(),
            [ThreadId(0), ThreadId(1)]
        );
        assert_eq!(table.thread(0).block_count, 3);
        assert_eq!(table.thread(1).block_count, 2);
        assert_eq!(table.logical_len(ThreadId(0)), LogicalOffset(7));
        assert_eq!(table.logical_len(ThreadId(1)), LogicalOffset(17));
    }

    #[test]
    fn logical_offsets_translate_across_block_boundaries() {
        let table = table();
        let (t0, t1) = (table.thread(0), table.thread(1));
        let physical = |at| t1.span(LogicalOffset(at)).map(|span| span.physical);
        assert_eq!(physical(0), Some(PhysicalOffset(21)));
        assert_eq!(physical(9), Some(PhysicalOffset(30)));
        // The end of the first block is the start of the second.
        let span = t1.span(LogicalOffset(10)).unwrap();
        assert_eq!((span.physical, span.len), (PhysicalOffset(53), 7));
        assert_eq!(physical(17), None);
        // Thread 0 skips its empty block.
        let span = t0.span(LogicalOffset(4)).unwrap();
        assert_eq!((span.physical, span.len), (PhysicalOffset(66), 3));
        let span = t0.span(LogicalOffset(1)).unwrap();
        assert_eq!((span.physical, span.len), (PhysicalOffset(38), 3));
        assert_eq!(table.slot(ThreadId(7)), None);
    }

    #[test]
    fn a_range_read_at_once_has_the_same_logical_bytes() {
        let table = table();
        // Byte `i` of the file is `i`.
        let data = TraceBytes::from_vec((0..80u8).collect());
        let t1 = table.thread(table.slot(ThreadId(1)).unwrap());
        // Logical 6..14 of thread 1: the end of its first block, the
        // start of its second, with thread 0's blocks between them.
        let (bytes, copy) = t1
            .read_range(
                ByteSource::new(&data, Reads::Copy),
                LogicalOffset(6)..LogicalOffset(14),
            )
            .unwrap();
        assert_eq!(bytes, [27, 28, 29, 30, 53, 54, 55, 56]);
        for at in 6..14 {
            let (start, _, physical) = copy.block_bounds(copy.block_of(LogicalOffset(at)).unwrap());
            let original = t1.span(LogicalOffset(at)).unwrap().physical;
            assert_eq!(bytes[(physical + at - start) as usize] as u64, original.0);
        }
        // Outside the range: past the copy's end; the stream keeps its length.
        for at in [5, 14, 16] {
            let (start, _, physical) = copy.block_bounds(copy.block_of(LogicalOffset(at)).unwrap());
            assert!(physical + at - start >= bytes.len() as u64, "{at}");
        }
        assert_eq!(copy.len, 17);
        assert_eq!(copy.block_of(LogicalOffset(17)), None);
        // Empty or outside the stream: no copy.
        assert!(
            t1.read_range(
                ByteSource::new(&data, Reads::Copy),
                LogicalOffset(3)..LogicalOffset(3)
            )
            .is_none()
        );
        assert!(
            t1.read_range(
                ByteSource::new(&data, Reads::Copy),
                LogicalOffset(3)..LogicalOffset(18)
            )
            .is_none()
        );
        // A file shorter than the blocks say: no copy.
        let short = TraceBytes::from_vec((0..40u8).collect());
        assert!(
            t1.read_range(
                ByteSource::new(&short, Reads::Copy),
                LogicalOffset(6)..LogicalOffset(14)
            )
            .is_none()
        );
    }
}
