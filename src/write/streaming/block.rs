//! [`BlockBuilder`]: one producer thread's buffer, cut into blocks as the
//! reference recorder cuts them.
//!
//! The buffer holds the block being built, `BLOCK_START` included, and the
//! block's index cells in write order. Each tracepoint or footer is written
//! as a *group*: the reference objects it needs first (those neither in this
//! block nor on disk), then the object itself. The block is cut
//!
//! - after a leaf or a footer, when fewer than `flush_threshold` bytes of
//!   `block_size` are left (so never right after a container header);
//! - before a group that does not fit: the group is rolled back to the end
//!   of its last complete object (reference objects already written stay in
//!   the old block, so the rewrite may repeat them — duplicates the format
//!   allows), the block is cut, and the group is written again in the new
//!   block. When nothing complete precedes the group, or on that second try,
//!   the block simply grows past `block_size`.
//!
//! Offsets: container cells carry logical offsets (the thread's running
//! payload length) and are final here; reference cells carry their offset in
//! the block's payload, which the I/O thread turns into a physical one.

use crate::error::{Error, Result};
use crate::format::bytes::{SliceWriter, Unwritten};
use crate::format::offset::{EventId, LogicalOffset, ThreadId};
use crate::format::{BLOCK_HEADER_LEN, IndexCell, Object, ObjectKind};
use crate::model::{Footer, Tracepoint};
use crate::write::deps::{self, ReferenceSink};
use crate::write::hash::FastSet;
use crate::write::pool::ReferencePool;
use crate::write::streaming::registry::{DENSE_IDS, OnDisk};

/// Bytes of the block header at the start of every buffer.
const HEADER: usize = BLOCK_HEADER_LEN as usize;

/// A `(kind, id)` key for the set of objects in a block.
fn key(kind: ObjectKind, id: i32) -> u64 {
    (kind as u64) << 32 | u64::from(id as u32)
}

/// Where a block goes when it is cut.
pub(crate) trait BlockSink {
    /// Takes a cut block. `bytes` is the whole block, `BLOCK_START` to
    /// `BLOCK_END`; `logical_start` is the thread's logical offset of its
    /// first payload byte. Returns an empty buffer for the next block.
    fn cut(
        &self,
        thread: ThreadId,
        logical_start: LogicalOffset,
        bytes: Vec<u8>,
        cells: Vec<IndexCell>,
    ) -> Result<Vec<u8>>;
}

/// What a block builder needs of its writer.
pub(crate) struct Context<'a, S> {
    pub(crate) pool: &'a ReferencePool,
    pub(crate) on_disk: &'a OnDisk,
    pub(crate) sink: &'a S,
    /// Payload bytes a block holds before it is cut.
    pub(crate) block_size: usize,
    /// A block is cut after a leaf or footer when fewer bytes are left.
    pub(crate) flush_threshold: usize,
}

/// One thread's block being built.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    thread: ThreadId,
    /// `BLOCK_START`, then the payload so far (`end` bytes), then room: the
    /// vector is kept as long as its capacity, so an object is stored
    /// straight into the room without growing the vector each time.
    bytes: Vec<u8>,
    /// Bytes of `bytes` in the block.
    end: usize,
    /// A reference object being encoded (rare: once per block at most).
    scratch: Vec<u8>,
    /// The block's cells, in write order.
    cells: Vec<IndexCell>,
    /// The reference objects in this block.
    written: FastSet<u64>,
    /// Reference objects this thread found on disk, by kind byte: a bit per
    /// id below [`DENSE_IDS`] (on disk stays on disk, so this thread need
    /// not ask the shared registry again).
    on_disk: [Vec<u64>; 8],
    /// The thread's logical offset of this block's first payload byte.
    logical_start: LogicalOffset,
    /// Event id and logical content start of each open container.
    open: Vec<(EventId, LogicalOffset)>,
    /// While writing a group: whether it may still cut the block.
    may_cut: bool,
    /// While writing a group: it did not fit and was rolled back.
    overflowed: bool,
}

impl BlockBuilder {
    /// An empty block of `thread` in `buffer` (any capacity).
    pub(crate) fn new(thread: ThreadId, buffer: Vec<u8>) -> Self {
        let mut builder = BlockBuilder {
            thread,
            bytes: buffer,
            end: 0,
            scratch: Vec::new(),
            cells: Vec::new(),
            written: FastSet::default(),
            on_disk: Default::default(),
            logical_start: LogicalOffset(0),
            open: Vec::new(),
            may_cut: false,
            overflowed: false,
        };
        builder.start_block();
        builder
    }

    fn start_block(&mut self) {
        // Whatever a reused buffer holds is overwritten before it counts.
        let room = self.bytes.capacity().max(HEADER);
        self.bytes.resize(room, 0);
        self.end = 0;
        let thread = self.thread.0.to_be_bytes();
        let header = self.reserve(HEADER);
        header[0] = ObjectKind::BlockStart as u8;
        header[1..].copy_from_slice(&thread);
        self.written.clear();
    }

    /// The next `len` bytes of the block, made part of it.
    #[inline]
    fn reserve(&mut self, len: usize) -> &mut [u8] {
        let start = self.end;
        if self.bytes.len() - start < len {
            // An object larger than the room left: the block grows.
            self.bytes.resize(start + len, 0);
        }
        self.end = start + len;
        &mut self.bytes[start..start + len]
    }

    /// Whether this thread already found object `id` of `kind` on disk.
    #[inline]
    fn known_on_disk(&self, kind: ObjectKind, id: i32) -> bool {
        let index = id as u32 as usize;
        self.on_disk[kind as usize]
            .get(index / 64)
            .is_some_and(|word| word & (1 << (index % 64)) != 0)
    }

    /// Remembers that object `id` of `kind` is on disk.
    fn remember_on_disk(&mut self, kind: ObjectKind, id: i32) {
        let Ok(index) = usize::try_from(id) else {
            return;
        };
        if index >= DENSE_IDS {
            return;
        }
        let words = &mut self.on_disk[kind as usize];
        if words.len() <= index / 64 {
            words.resize(index / 64 + 1, 0);
        }
        words[index / 64] |= 1 << (index % 64);
    }

    fn payload_len(&self) -> usize {
        self.end - HEADER
    }

    /// The thread's logical offset of the next byte.
    fn logical_position(&self) -> LogicalOffset {
        self.logical_start + self.payload_len() as u64
    }

    /// Whether the block holds nothing yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.payload_len() == 0
    }

    /// Cuts the block (if it holds anything) and hands it to the sink.
    pub(crate) fn flush<S: BlockSink>(&mut self, context: &Context<'_, S>) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let logical_start = self.logical_start;
        self.logical_start = self.logical_position();
        self.bytes.truncate(self.end);
        self.bytes.push(ObjectKind::BlockEnd as u8);
        let capacity = self.cells.len();
        let cells = std::mem::replace(&mut self.cells, Vec::with_capacity(capacity));
        let bytes = std::mem::take(&mut self.bytes);
        let result = context.sink.cut(self.thread, logical_start, bytes, cells);
        // Start a clean block even when the sink failed.
        let (buffer, result) = match result {
            Ok(buffer) => (buffer, Ok(())),
            Err(error) => (Vec::new(), Err(error)),
        };
        self.bytes = buffer;
        self.start_block();
        result
    }

    /// Cuts the block if the leaf or footer just written left too little
    /// room. Callers update their own state first: the object is written
    /// even if handing the block over fails.
    pub(crate) fn after_leaf_or_footer<S: BlockSink>(
        &mut self,
        context: &Context<'_, S>,
    ) -> Result<()> {
        if context.block_size.saturating_sub(self.payload_len()) < context.flush_threshold {
            self.flush(context)?;
        }
        Ok(())
    }

    /// Writes a group — the reference objects `tracepoint` needs, then an
    /// object stored by `write` — cutting the block first if the group does
    /// not fit. Returns the payload offset of the object.
    ///
    /// The object is written straight into the room after the block, and
    /// only counts once it fits the cut rule; `size` (its exact length) is
    /// needed only when the room is too short. An object that cannot be
    /// encoded fails with `rejected()`.
    #[inline]
    fn group<S: BlockSink>(
        &mut self,
        context: &Context<'_, S>,
        references: impl Fn(&mut GroupSink<'_, '_>) -> Result<()>,
        write: impl Fn(&mut SliceWriter<'_>),
        size: impl Fn() -> std::io::Result<usize>,
        rejected: impl Fn() -> Error,
    ) -> Result<usize> {
        for first_try in [true, false] {
            self.may_cut = first_try;
            self.overflowed = false;
            let mut sink = GroupSink {
                block: self,
                on_disk: context.on_disk,
                block_size: context.block_size,
            };
            references(&mut sink)?;
            if !self.overflowed {
                let start = self.end;
                let mut out = SliceWriter::new(&mut self.bytes[start..]);
                write(&mut out);
                let len = match out.written() {
                    Ok(len) => len,
                    Err(Unwritten::Rejected) => return Err(rejected()),
                    Err(Unwritten::Short) => size().map_err(|_| rejected())?,
                };
                if self.exceeds(start, len, context.block_size) {
                    // Not counted: the next block gets it.
                    self.overflowed = true;
                } else {
                    if start + len > self.bytes.len() {
                        // Larger than the room: written again once it is made.
                        let mut out = SliceWriter::new(self.reserve(len));
                        write(&mut out);
                        if out.finish().is_err() {
                            self.end = start;
                            return Err(rejected());
                        }
                    }
                    self.end = start + len;
                    return Ok(start - HEADER);
                }
            }
            self.flush(context)?;
        }
        unreachable!("a group written without cutting always fits")
    }

    /// Whether an object of `len` bytes to be written at `start` must move
    /// to the next block: it overflows, cutting is allowed, and something
    /// complete precedes it.
    #[inline]
    fn exceeds(&self, start: usize, len: usize, block_size: usize) -> bool {
        self.may_cut && start - HEADER + len > block_size && start > HEADER
    }

    /// Writes `tracepoint` and the reference objects it needs; fails with
    /// `rejected()` if it cannot be encoded. After a leaf, call
    /// [`after_leaf_or_footer`](Self::after_leaf_or_footer).
    pub(crate) fn tracepoint<S: BlockSink>(
        &mut self,
        context: &Context<'_, S>,
        tracepoint: &Tracepoint<'_>,
        rejected: impl Fn() -> Error,
    ) -> Result<()> {
        let pool = context.pool;
        self.group(
            context,
            |sink| deps::before_tracepoint(pool, sink, tracepoint),
            |out| tracepoint.write_to(out),
            || tracepoint.encoded_len(),
            rejected,
        )?;
        if tracepoint.is_container() {
            self.open
                .push((tracepoint.event(), self.logical_position()));
        }
        Ok(())
    }

    /// Writes the footer of the innermost open container (the caller has
    /// checked it matches) and the container's cell; fails with
    /// `rejected()` if it cannot be encoded. Then call
    /// [`after_leaf_or_footer`](Self::after_leaf_or_footer).
    pub(crate) fn footer<S: BlockSink>(
        &mut self,
        context: &Context<'_, S>,
        footer: &Footer<'_>,
        rejected: impl Fn() -> Error,
    ) -> Result<()> {
        let pool = context.pool;
        let at = self.group(
            context,
            |sink| deps::before_footer(pool, sink, footer),
            |out| footer.write_to(out),
            || footer.encoded_len(),
            rejected,
        )?;
        if let Some((event, content_start)) = self.open.pop() {
            self.cells.push(IndexCell {
                kind: ObjectKind::Tracepoint,
                id: event.0,
                start: content_start.0 as i64,
                end: (self.logical_start + at as u64).0 as i64,
            });
        }
        Ok(())
    }

    /// Writes a `THREAD_NAME` (and its cell) into the block, however full.
    pub(crate) fn thread_name<S: BlockSink>(
        &mut self,
        context: &Context<'_, S>,
        name: &Object<'_>,
    ) -> Result<()> {
        self.may_cut = false;
        self.overflowed = false;
        GroupSink {
            block: self,
            on_disk: context.on_disk,
            block_size: context.block_size,
        }
        .reference(name)
    }
}

/// Reference objects written into a block during a group.
pub(crate) struct GroupSink<'b, 'c> {
    block: &'b mut BlockBuilder,
    on_disk: &'c OnDisk,
    block_size: usize,
}

impl GroupSink<'_, '_> {
    /// [`ReferenceSink::first_use`] for an object this thread has not seen
    /// on disk: it may be there now, or in this block.
    #[inline(never)]
    fn first_use_here(&mut self, kind: ObjectKind, id: i32) -> bool {
        if self.block.overflowed {
            return false;
        }
        if self.on_disk.contains(kind, id) {
            self.block.remember_on_disk(kind, id);
            return false;
        }
        !self.block.written.contains(&key(kind, id))
    }
}

impl ReferenceSink for GroupSink<'_, '_> {
    /// On a hot path the object is almost always on disk already, which a
    /// look at the thread's own bitmap tells.
    #[inline]
    fn first_use(&mut self, kind: ObjectKind, id: i32) -> bool {
        if self.block.known_on_disk(kind, id) {
            return false;
        }
        self.first_use_here(kind, id)
    }

    fn reference(&mut self, object: &Object<'_>) -> Result<()> {
        let block = &mut *self.block;
        if block.overflowed {
            return Ok(());
        }
        let start = block.end;
        block.scratch.clear();
        object.encode(&mut block.scratch)?;
        if block.exceeds(start, block.scratch.len(), self.block_size) {
            block.overflowed = true;
            return Ok(());
        }
        let len = block.scratch.len();
        let scratch = std::mem::take(&mut block.scratch);
        block.reserve(len).copy_from_slice(&scratch);
        block.scratch = scratch;
        let (kind, id) = (object.kind(), object.reference_id().unwrap_or(-1));
        // Marked only once written: an object that did not fit, or whose
        // dependencies failed, is looked for again next time.
        block.written.insert(key(kind, id));
        block.cells.push(IndexCell {
            kind,
            id,
            start: (start - HEADER) as i64,
            end: 0,
        });
        Ok(())
    }
}
