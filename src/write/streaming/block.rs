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
//! Most tracepoints and footers need no reference object and fit the block:
//! [`try_tracepoint`](BlockBuilder::try_tracepoint) and
//! [`try_footer`](BlockBuilder::try_footer) write those with a few inlined
//! tests (a stamp per id, see [`BlockBuilder::ensured`]) and one store per
//! field; everything else takes the general path, which writes the same
//! bytes.
//!
//! Offsets: container cells carry logical offsets (the thread's running
//! payload length) and are final here; reference cells carry their offset in
//! the block's payload, which the I/O thread turns into a physical one.
//! Cells are encoded here as the index file holds them ([`BlockCells`]),
//! after room for the block's own cell, which the I/O thread fills in once
//! the block has its place; a block's bytes and cells go to the I/O thread
//! and come back for reuse together ([`BlockBuffers`]).

use std::ops::ControlFlow;

use zerocopy::IntoBytes;

use crate::common::{EventId, LogicalOffset, PhysicalOffset, ThreadId};
use crate::error::{Error, Result};
use crate::format::bytes::{SliceWriter, Unwritten};
use crate::format::index::{CELL_LEN, RawIndexCell};
use crate::format::{BLOCK_HEADER_LEN, IndexCell, Object, ObjectKind};
use crate::model::{DiffStatus, Footer, Tracepoint, TracepointHeader};
use crate::write::deps::{self, ReferenceSink};
use crate::write::hash::FastSet;
use crate::write::pool::ReferencePool;
use crate::write::streaming::registry::OnDisk;

/// Bytes of the block header at the start of every buffer.
const HEADER: usize = BLOCK_HEADER_LEN as usize;

/// A `(kind, id)` key for the set of objects in a block.
fn key(kind: ObjectKind, id: i32) -> u64 {
    (kind as u64) << 32 | u64::from(id as u32)
}

/// A block's index cells in write order, encoded as the index file holds
/// them, after room for the block's own cell (`BLOCK_START`), which
/// [`place`](Self::place) fills in once the block's place in the data file
/// is known. Until then reference cells hold their offset in the block's
/// payload; [`references`](Self::references) lists them.
#[derive(Debug, Default)]
pub(crate) struct BlockCells {
    bytes: Vec<u8>,
    references: Vec<ReferenceCell>,
}

/// A reference object's cell among a block's [`BlockCells`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReferenceCell {
    /// The cell's number in the block (0 is the block's own).
    cell: usize,
    pub(crate) kind: ObjectKind,
    pub(crate) id: i32,
    /// The object's offset in the block's payload.
    at: u64,
}

impl BlockCells {
    /// Empties the cells, keeping room for the block's own.
    fn start(&mut self) {
        self.bytes.clear();
        self.bytes.extend_from_slice(&[0; CELL_LEN]);
        self.references.clear();
    }

    #[inline(always)]
    fn push(&mut self, kind: ObjectKind, id: i32, start: i64, end: i64) {
        self.bytes
            .extend_from_slice(RawIndexCell::new(kind, id, start, end).as_bytes());
    }

    /// Adds the cell of a reference object at payload offset `at`.
    fn push_reference(&mut self, kind: ObjectKind, id: i32, at: u64) {
        self.references.push(ReferenceCell {
            cell: self.bytes.len() / CELL_LEN,
            kind,
            id,
            at,
        });
        self.push(kind, id, 0, 0);
    }

    /// The reference objects' cells, in write order.
    pub(crate) fn references(&self) -> &[ReferenceCell] {
        &self.references
    }

    /// The cells as the index file takes them, the block placed: `block`
    /// first, then the others, reference cells at `payload` (the physical
    /// offset of the block's payload) plus their payload offset, their end
    /// field `reference_end`.
    pub(crate) fn place(
        &mut self,
        block: IndexCell,
        payload: PhysicalOffset,
        reference_end: i64,
    ) -> &[u8] {
        self.bytes[..CELL_LEN].copy_from_slice(block.to_raw().as_bytes());
        for reference in &self.references {
            let cell = IndexCell::Reference {
                kind: reference.kind,
                id: reference.id,
                at: payload + reference.at,
                end: reference_end,
            };
            self.bytes[reference.cell * CELL_LEN..][..CELL_LEN]
                .copy_from_slice(cell.to_raw().as_bytes());
        }
        &self.bytes
    }
}

/// The memory of one block: its bytes (`BLOCK_START` to `BLOCK_END` once
/// cut: the first `len`) and its cells, handed to the sink and back for
/// reuse together. The vector keeps its whole length: a reused buffer is
/// overwritten, never zeroed again.
#[derive(Debug, Default)]
pub(crate) struct BlockBuffers {
    pub(crate) bytes: Vec<u8>,
    /// Bytes of `bytes` in the block once it is cut.
    pub(crate) len: usize,
    pub(crate) cells: BlockCells,
}

impl BlockBuffers {
    /// The cut block, `BLOCK_START` to `BLOCK_END`.
    pub(crate) fn block(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Where a block goes when it is cut.
pub(crate) trait BlockSink {
    /// Takes a cut block: `block.block()` is the whole block, `BLOCK_START`
    /// to `BLOCK_END`; `logical_start` is the thread's logical offset of its
    /// first payload byte. Returns buffers for the next block.
    fn cut(
        &self,
        thread: ThreadId,
        logical_start: LogicalOffset,
        block: BlockBuffers,
    ) -> Result<BlockBuffers>;
}

impl<S: BlockSink> BlockSink for &S {
    fn cut(
        &self,
        thread: ThreadId,
        logical_start: LogicalOffset,
        block: BlockBuffers,
    ) -> Result<BlockBuffers> {
        (**self).cut(thread, logical_start, block)
    }
}

/// What a block builder needs of its writer off its fast paths.
pub(crate) struct Context<'a, S> {
    pub(crate) pool: &'a ReferencePool,
    pub(crate) on_disk: &'a OnDisk,
    pub(crate) sink: S,
}

/// Ids below this get a stamp per thread ([`BlockBuilder::ensured`]):
/// 4 MiB per kind at most, and every id an interning writer hands out in
/// practice. Larger ids take the slower way (the shared registry, a set per
/// block).
const STAMPED_IDS: usize = 1 << 20;

/// The stamp of an object this thread found on disk.
const ON_DISK: u32 = u32::MAX;

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
    cells: BlockCells,
    /// Per kind byte, a stamp per id below [`STAMPED_IDS`]: [`ON_DISK`]
    /// once this thread found the object on disk (on disk stays on disk, so
    /// the shared registry need not be asked again), `block` while this
    /// block holds it, 0 (or an older block's number) otherwise.
    stamps: [Vec<u32>; 8],
    /// This block's number (from 1), for [`stamps`](Self::stamps).
    block: u32,
    /// The reference objects with larger (or negative) ids in this block.
    written: FastSet<u64>,
    /// `HEADER +` the payload bytes a block holds before it is cut.
    limit: usize,
    /// After a leaf or footer, the block is cut when `end` is past this.
    cut_after: usize,
    /// The thread's logical offset of this block's first payload byte.
    logical_start: LogicalOffset,
    /// Event id and logical content start of each open container.
    open: Vec<(EventId, LogicalOffset)>,
    /// While writing a group: whether it may still cut the block.
    may_cut: bool,
    /// While writing a group: it did not fit and was rolled back.
    overflowed: bool,
    /// Whether only this thread's own blocks count as on disk (the shared
    /// registry is not asked): what the thread writes then depends on
    /// nothing but what it records.
    own_registry: bool,
}

impl BlockBuilder {
    /// An empty block of `thread` in `buffer` (any capacities), cut after
    /// `block_size` payload bytes, or after a leaf or footer once fewer than
    /// `flush_threshold` of them are left.
    pub(crate) fn new(
        thread: ThreadId,
        buffer: BlockBuffers,
        block_size: usize,
        flush_threshold: usize,
    ) -> Self {
        // `block_size - payload < flush_threshold` (saturating), as `end`.
        let cut_after = if flush_threshold == 0 {
            usize::MAX
        } else if flush_threshold > block_size {
            0
        } else {
            HEADER + block_size - flush_threshold
        };
        let mut builder = BlockBuilder {
            thread,
            bytes: buffer.bytes,
            end: 0,
            scratch: Vec::new(),
            cells: buffer.cells,
            stamps: Default::default(),
            block: 0,
            written: FastSet::default(),
            limit: HEADER.saturating_add(block_size),
            cut_after,
            logical_start: LogicalOffset(0),
            open: Vec::new(),
            may_cut: false,
            overflowed: false,
            own_registry: false,
        };
        builder.start_block();
        builder
    }

    fn start_block(&mut self) {
        // Whatever a reused buffer holds is overwritten before it counts;
        // one handed back keeps its whole length (nothing to zero).
        let room = self.bytes.capacity().max(HEADER);
        self.bytes.resize(room, 0);
        self.end = 0;
        self.cells.start();
        let thread = self.thread.0.to_be_bytes();
        let header = self.reserve(HEADER);
        header[0] = ObjectKind::BlockStart as u8;
        header[1..].copy_from_slice(&thread);
        self.written.clear();
        self.block += 1;
        if self.block == ON_DISK {
            // After four billion blocks: no stamp may name this block yet.
            for stamps in &mut self.stamps {
                stamps
                    .iter_mut()
                    .for_each(|s| *s = if *s == ON_DISK { ON_DISK } else { 0 });
            }
            self.block = 1;
        }
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

    /// Whether object `id` of `kind` needs no writing: this block holds it,
    /// or this thread found it on disk. One load and one comparison: a
    /// stamp is [`ON_DISK`], this block's number, or lower. Objects with
    /// ids out of the stamps' range are never "ensured" here.
    #[inline(always)]
    fn ensured(&self, kind: ObjectKind, id: i32) -> bool {
        self.stamps[kind as usize & 7]
            .get(id as u32 as usize)
            .is_some_and(|&stamp| stamp >= self.block)
    }

    /// [`ensured`](Self::ensured) for the reference visitors: breaks at an
    /// object that may need writing.
    #[inline(always)]
    fn needs(&self, kind: ObjectKind, id: i32) -> ControlFlow<()> {
        if self.ensured(kind, id) {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    }

    /// Stamps object `id` of `kind` (`ON_DISK` or this block's number);
    /// false if its id is out of the stamps' range.
    fn stamp(&mut self, kind: ObjectKind, id: i32, stamp: u32) -> bool {
        let Ok(index) = usize::try_from(id) else {
            return false;
        };
        if index >= STAMPED_IDS {
            return false;
        }
        let stamps = &mut self.stamps[kind as usize & 7];
        if stamps.len() <= index {
            stamps.resize(index + 1, 0);
        }
        stamps[index] = stamp;
        true
    }

    /// Makes only this thread's own blocks count as on disk: each reference
    /// object is written in the first block of this thread that needs it,
    /// whatever other threads wrote (its later blocks follow it in the file).
    pub(crate) fn keep_own_registry(&mut self) {
        self.own_registry = true;
    }

    fn payload_len(&self) -> usize {
        self.end - HEADER
    }

    /// The thread's logical offset of the next byte: its logical length,
    /// payload bytes in blocks cut and in this one.
    pub(crate) fn logical_position(&self) -> LogicalOffset {
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
        if self.own_registry {
            // Ids out of the stamps' range are written again in each block
            // that needs them.
            for index in 0..self.cells.references().len() {
                let ReferenceCell { kind, id, .. } = self.cells.references()[index];
                self.stamp(kind, id, ON_DISK);
            }
        }
        let logical_start = self.logical_start;
        self.logical_start = self.logical_position();
        self.reserve(1)[0] = ObjectKind::BlockEnd as u8;
        let block = BlockBuffers {
            bytes: std::mem::take(&mut self.bytes),
            len: self.end,
            cells: std::mem::take(&mut self.cells),
        };
        let result = context.sink.cut(self.thread, logical_start, block);
        // Start a clean block even when the sink failed.
        let (buffers, result) = match result {
            Ok(buffers) => (buffers, Ok(())),
            Err(error) => (BlockBuffers::default(), Err(error)),
        };
        self.bytes = buffers.bytes;
        self.cells = buffers.cells;
        self.start_block();
        result
    }

    /// Whether the block must be cut after the leaf or footer just written
    /// (callers [`flush`](Self::flush) it once they updated their own
    /// state: the object is written even if handing the block over fails).
    #[inline(always)]
    pub(crate) fn is_full(&self) -> bool {
        self.end > self.cut_after
    }

    /// The room at the block's end for an object that fits the block (so
    /// the general path would store it there too, with nothing cut first);
    /// [`fitted`](Self::fitted) counts what was written into it. Not a
    /// closure taking the writer: the encoder inlines into the fast paths.
    #[inline(always)]
    fn room(&mut self) -> Option<SliceWriter<'_>> {
        let limit = self.limit.min(self.bytes.len());
        Some(SliceWriter::new(self.bytes.get_mut(self.end..limit)?))
    }

    /// Counts an object written into [`room`](Self::room), if it fit and
    /// could be encoded; returns its payload offset.
    #[inline(always)]
    fn fitted(&mut self, written: Result<usize, Unwritten>) -> Option<usize> {
        let start = self.end;
        self.end = start + written.ok()?;
        Some(start - HEADER)
    }

    /// The fast path of [`tracepoint`](Self::tracepoint): writes
    /// `tracepoint` if the block holds (or the disk has) every reference
    /// object it names and it fits. Returns false, having written nothing,
    /// when the general path must do the work (or name the error).
    #[inline(always)]
    pub(crate) fn try_tracepoint(&mut self, tracepoint: &Tracepoint<'_>) -> bool {
        let missing = deps::tracepoint_references(tracepoint, &mut |kind, id| self.needs(kind, id));
        if missing.is_break() {
            return false;
        }
        let Some(mut out) = self.room() else {
            return false;
        };
        tracepoint.write_to(&mut out);
        let written = out.written();
        if self.fitted(written).is_none() {
            return false;
        }
        if tracepoint.is_container() {
            self.open
                .push((tracepoint.event(), self.logical_position()));
        }
        true
    }

    /// The fast path of [`footer`](Self::footer), as
    /// [`try_tracepoint`](Self::try_tracepoint)'s.
    #[inline(always)]
    pub(crate) fn try_footer(&mut self, footer: &Footer<'_>) -> bool {
        let missing = deps::footer_references(footer, &mut |kind, id| self.needs(kind, id));
        if missing.is_break() {
            return false;
        }
        let Some(mut out) = self.room() else {
            return false;
        };
        footer.write_to(&mut out);
        let written = out.written();
        match self.fitted(written) {
            Some(at) => {
                self.close_container(at);
                true
            }
            None => false,
        }
    }

    /// Adds the cell of the innermost open container, whose footer was
    /// written at payload offset `at`.
    #[inline(always)]
    fn close_container(&mut self, at: usize) {
        if let Some((event, content_start)) = self.open.pop() {
            let end = self.logical_start + at as u64;
            self.cells.push(
                ObjectKind::Tracepoint,
                event.0,
                content_start.0 as i64,
                end.0 as i64,
            );
        }
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
                if self.exceeds(start, len) {
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
    fn exceeds(&self, start: usize, len: usize) -> bool {
        self.may_cut && start + len > self.limit && start > HEADER
    }

    /// Writes `tracepoint` and the reference objects it needs; fails with
    /// `rejected()` if it cannot be encoded. After a leaf, ask
    /// [`is_full`](Self::is_full).
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
    /// `rejected()` if it cannot be encoded. Then ask
    /// [`is_full`](Self::is_full).
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
        self.close_container(at);
        Ok(())
    }

    /// Writes a reference object with its own id unless this block holds
    /// it or it is on disk, cutting the block first when it does not fit.
    /// Its dependencies are the caller's: every object it names must be
    /// written by the time a reader reads the trace.
    pub(crate) fn reference_object<S: BlockSink>(
        &mut self,
        context: &Context<'_, S>,
        object: &Object<'_>,
    ) -> Result<()> {
        let (kind, id) = (object.kind(), object.reference_id().unwrap_or(-1));
        for first_try in [true, false] {
            self.may_cut = first_try;
            self.overflowed = false;
            let mut sink = GroupSink {
                block: self,
                on_disk: context.on_disk,
            };
            if !sink.first_use(kind, id) {
                return Ok(());
            }
            sink.reference(object)?;
            if !self.overflowed {
                return Ok(());
            }
            self.flush(context)?;
        }
        unreachable!("an object written without cutting always fits")
    }

    /// Writes `len` bytes made by `write` as one object, cutting the block
    /// first when they do not fit it (as [`group`](Self::group) does);
    /// returns its payload offset.
    fn raw_object<S: BlockSink>(
        &mut self,
        context: &Context<'_, S>,
        len: usize,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<usize> {
        self.may_cut = true;
        if self.exceeds(self.end, len) {
            self.flush(context)?;
        }
        let start = self.end;
        write(self.reserve(len));
        Ok(start - HEADER)
    }

    /// Writes an encoded tracepoint (`bytes`, kind byte first) with
    /// `thread`, `event` and `status` in place of its own, and a
    /// container's child diff statuses left out; its reference objects
    /// are the caller's, as [`reference_object`](Self::reference_object)'s
    /// dependencies are. Returns false, having written nothing, for bytes
    /// too short to be a tracepoint.
    pub(crate) fn raw_tracepoint<S: BlockSink>(
        &mut self,
        context: &Context<'_, S>,
        bytes: &[u8],
        container: bool,
        (thread, event, status): (ThreadId, EventId, DiffStatus),
    ) -> Result<bool> {
        const HEAD: usize = TracepointHeader::ENCODED_LEN;
        const THREAD: usize = TracepointHeader::THREAD_AT;
        const EVENT: usize = TracepointHeader::EVENT_AT;
        let body = if container {
            match bytes.get(HEAD) {
                Some(&statuses) => HEAD + 1 + usize::from(statuses),
                None => return Ok(false),
            }
        } else {
            HEAD
        };
        let Some(rest) = bytes.get(body..) else {
            return Ok(false);
        };
        let head = HEAD + usize::from(container);
        self.raw_object(context, head + rest.len(), |out| {
            out[..HEAD].copy_from_slice(&bytes[..HEAD]);
            out[THREAD..THREAD + 4].copy_from_slice(&thread.0.to_be_bytes());
            out[EVENT..EVENT + 4].copy_from_slice(&event.0.to_be_bytes());
            out[EVENT + 4] = status as u8;
            if container {
                out[HEAD] = 0;
            }
            out[head..].copy_from_slice(rest);
        })?;
        if container {
            self.open.push((event, self.logical_position()));
        }
        Ok(true)
    }

    /// Writes an encoded footer (`bytes`, kind byte first) of the innermost
    /// open container, and the container's cell.
    pub(crate) fn raw_footer<S: BlockSink>(
        &mut self,
        context: &Context<'_, S>,
        bytes: &[u8],
    ) -> Result<()> {
        let at = self.raw_object(context, bytes.len(), |out| out.copy_from_slice(bytes))?;
        self.close_container(at);
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
        }
        .reference(name)
    }
}

/// Reference objects written into a block during a group.
pub(crate) struct GroupSink<'b, 'c> {
    block: &'b mut BlockBuilder,
    on_disk: &'c OnDisk,
}

impl GroupSink<'_, '_> {
    /// [`ReferenceSink::first_use`] for an object this thread has not seen
    /// on disk: it may be there now, or in this block.
    #[inline(never)]
    fn first_use_here(&mut self, kind: ObjectKind, id: i32) -> bool {
        if self.block.overflowed {
            return false;
        }
        if !self.block.own_registry && self.on_disk.contains(kind, id) {
            self.block.stamp(kind, id, ON_DISK);
            return false;
        }
        // A stamped id not ensured is not in this block.
        usize::try_from(id).is_ok_and(|index| index < STAMPED_IDS)
            || !self.block.written.contains(&key(kind, id))
    }
}

impl ReferenceSink for GroupSink<'_, '_> {
    /// Mostly answered by the object's stamp.
    #[inline]
    fn first_use(&mut self, kind: ObjectKind, id: i32) -> bool {
        if self.block.ensured(kind, id) {
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
        if block.exceeds(start, block.scratch.len()) {
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
        let number = block.block;
        if !block.stamp(kind, id, number) {
            block.written.insert(key(kind, id));
        }
        // At its offset in the payload until the block is placed.
        block
            .cells
            .push_reference(kind, id, (start - HEADER) as u64);
        Ok(())
    }
}
