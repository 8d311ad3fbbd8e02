//! [`StreamingThread`]: a producer's handle, recording one thread into its
//! buffer, and the sink that hands its cut blocks to the queue (in its turn,
//! for a round-robin writer). A [`ThreadBatch`] holds the buffer's lock
//! for a run of pushes, which write what the handle's pushes write.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use crate::common::{EventId, LogicalOffset, ThreadId};
use crate::error::{Error, Result};
use crate::format::{ByteReader, Object, ObjectKind};
use crate::model::{DiffStatus, Footer, Tracepoint, TracepointHeader, TracepointType};
use crate::write::build::{BuildTarget, OpenContainer};
use crate::write::check::{check_footer, check_tracepoint};
use crate::write::pool::ReferencePool;
#[cfg(any(test, feature = "generate"))]
use crate::write::recorder::PushRecorder;

use super::block::{BlockBuffers, BlockSink, Context};
use super::{BlockOrder, Shared, ThreadSlot, ThreadState, closed_error, lock};

/// A producer's sink: its blocks go to the queue in its turn, if the writer
/// takes turns.
struct Producer<'a> {
    shared: &'a Shared,
    slot: &'a ThreadSlot,
}

impl BlockSink for Producer<'_> {
    fn cut(
        &self,
        thread: ThreadId,
        logical_start: LogicalOffset,
        block: BlockBuffers,
    ) -> Result<BlockBuffers> {
        let shared = self.shared;
        match shared.options.order {
            BlockOrder::Arrival => shared.cut(thread, logical_start, block),
            BlockOrder::RoundRobin => shared.rotation.in_turn(self.slot, false, || {
                shared.cut(thread, logical_start, block)
            }),
        }
    }
}

/// A producer handle: records one thread of a [`StreamingWriter`](super::StreamingWriter)'s trace
/// into that thread's buffer, cutting a block whenever the buffer fills.
///
/// Handles are owned and `Send`: move each to the thread that records
/// through it. Handles of different threads never wait for each other,
/// except for a full queue and, in a
/// [`BlockOrder::RoundRobin`] writer, for their turn. Record by name through [`ThreadRecorder`](crate::write::ThreadRecorder), or
/// push tracepoints that already carry their ids with
/// [`push_tracepoint`](Self::push_tracepoint) and
/// [`push_footer`](Self::push_footer).
pub struct StreamingThread {
    pub(super) shared: Arc<Shared>,
    pub(super) slot: Arc<ThreadSlot>,
}

impl std::fmt::Debug for StreamingThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamingThread")
            .field("thread", &self.slot.thread)
            .finish_non_exhaustive()
    }
}

impl Drop for StreamingThread {
    fn drop(&mut self) {
        if self.shared.options.order == BlockOrder::RoundRobin {
            self.shared.rotation.leave_now(&self.slot);
        }
    }
}

impl StreamingThread {
    /// The sink of the thread's blocks.
    fn context(&self) -> Context<'_, Producer<'_>> {
        Context {
            pool: &self.shared.pool,
            on_disk: &self.shared.on_disk,
            sink: Producer {
                shared: &self.shared,
                slot: &self.slot,
            },
        }
    }

    /// Payload bytes the thread has recorded so far: the length of its
    /// logical stream (reference objects included, block framing not), in
    /// blocks handed over and in its buffer.
    pub fn recorded_bytes(&self) -> u64 {
        lock(&self.slot.state).block.logical_position().0
    }

    /// The thread's state, unless the writer is closed.
    fn state(&self) -> Result<MutexGuard<'_, ThreadState>> {
        let state = lock(&self.slot.state);
        // Read under the lock: `close` sets the flag before it takes the
        // lock to flush, so a write seen here as open is flushed by it.
        if self.shared.closed.load(Ordering::SeqCst) {
            return Err(closed_error());
        }
        Ok(state)
    }

    /// Adds a tracepoint that keeps its ids (event, code location, thread,
    /// …): a leaf, or a container's header which
    /// [`push_footer`](Self::push_footer) closes. The reference objects it
    /// names must have been added ([`StreamingWriter::add_reference`](super::StreamingWriter::add_reference)) or
    /// interned. Event ids are not checked for uniqueness (that would take
    /// memory growing with the trace); the builder methods go on after the
    /// largest pushed id, except for ids pushed by another thread at the very
    /// same time.
    pub fn push_tracepoint(&mut self, tracepoint: &Tracepoint<'_>) -> Result<()> {
        let pushed_events = pushed_events(&self.shared, tracepoint)?;
        self.write_tracepoint(tracepoint, pushed_events)
    }

    /// Writes a tracepoint; `pushed_events` is greater than its event id if
    /// the caller chose that id.
    #[inline]
    fn write_tracepoint(&mut self, tracepoint: &Tracepoint<'_>, pushed_events: i64) -> Result<()> {
        let mut state = self.state()?;
        write_tracepoint(self, &mut state, tracepoint, pushed_events)
    }

    /// Closes the innermost open container with `footer`, which must be of
    /// its type.
    pub fn push_footer(&mut self, footer: &Footer<'_>) -> Result<()> {
        let mut state = self.state()?;
        write_footer(self, &mut state, footer)
    }

    /// Writes reference object `object` with its own id (which this
    /// writer's pool must hold with the same content), unless this thread's
    /// block holds it or it is on disk: what the objects of
    /// [`push_raw_subtree`](Self::push_raw_subtree) name is written this way
    /// first.
    pub(crate) fn push_reference(&mut self, object: &Object<'_>) -> Result<()> {
        let context = self.context();
        let mut state = self.state()?;
        state.block.reference_object(&context, object)
    }

    /// Copies one whole subtree from its encoded objects as `next` hands
    /// them out in stream order (a trace's own bytes: tracepoints, footers
    /// and reference objects): each tracepoint with this thread's id, the
    /// event id `event` gives for its own, and `status`, its child diff
    /// statuses left out; footers as they are; reference objects left out.
    /// The reference objects the subtree names must be this writer's under
    /// the same ids and written before
    /// ([`push_reference`](Self::push_reference)): only the root is
    /// decoded. Returns how many tracepoints it wrote.
    pub(crate) fn push_raw_subtree<'a>(
        &mut self,
        mut next: impl FnMut() -> Result<Option<&'a [u8]>>,
        status: DiffStatus,
        mut event: impl FnMut(EventId) -> Result<EventId>,
    ) -> Result<u64> {
        let damaged = || Error::invalid("subtree", "its encoded objects are not one whole subtree");
        let context = self.context();
        let thread = self.slot.thread;
        let mut state = self.state()?;
        let (mut depth, mut count) = (0usize, 0u64);
        while let Some(object) = next()? {
            let kind = *object.first().ok_or_else(damaged)?;
            if kind <= ObjectKind::CodeLocation as u8 {
                continue;
            }
            if kind == ObjectKind::TracepointFooter as u8 {
                depth = depth.checked_sub(1).ok_or_else(damaged)?;
                state.block.raw_footer(&context, object)?;
                if depth == 0 {
                    state.open.pop_checked()?;
                }
            } else if kind == ObjectKind::Tracepoint as u8 && (count == 0 || depth > 0) {
                let header = object
                    .get(1..=TracepointHeader::LEN)
                    .and_then(|bytes| TracepointHeader::from_bytes(bytes.try_into().ok()?))
                    .ok_or_else(damaged)?;
                let container = header.tracepoint_type.is_container();
                if count == 0 {
                    // The root is pushed as a tracepoint is: its parent may
                    // count it (a loop's iterations).
                    let root = match Object::decode(&mut ByteReader::new(object, 0), None) {
                        Ok(Object::Tracepoint(root)) => root,
                        _ => return Err(damaged()),
                    };
                    state.open.push(&root);
                }
                let id = event(header.event)?;
                let ids = (thread, id, status);
                if !state
                    .block
                    .raw_tracepoint(&context, object, container, ids)?
                {
                    return Err(damaged());
                }
                depth += usize::from(container);
                count += 1;
                state.pushed_events = state.pushed_events.max(i64::from(id.0) + 1);
                if container {
                    continue;
                }
            } else {
                return Err(damaged());
            }
            if state.block.is_full() {
                state.block.flush(&context)?;
            }
        }
        if depth != 0 || count == 0 {
            return Err(damaged());
        }
        state.tracepoints += count;
        Ok(count)
    }

    /// Takes the thread's buffer for a run of
    /// [`push_tracepoint`](ThreadBatch::push_tracepoint) and
    /// [`push_footer`](ThreadBatch::push_footer) calls, which then write
    /// the same bytes as the handle's own without taking the buffer's lock
    /// each time. The buffer is given back when the batch is dropped; until
    /// then [`close`](super::StreamingWriter::close) waits for it.
    pub fn batch(&mut self) -> Result<ThreadBatch<'_>> {
        let state = self.state()?;
        Ok(ThreadBatch {
            handle: self,
            state,
        })
    }

    /// Cuts the thread's block now (if it holds anything) and queues it.
    pub fn flush(&mut self) -> Result<()> {
        let context = self.context();
        self.state()?.block.flush(&context)
    }

    /// Cuts the thread's last block and gives the handle up. A thread that
    /// is done should finish, so its data reaches the files before the trace
    /// ends (the thread's name is written by
    /// [`StreamingWriter::close`](super::StreamingWriter::close)). Dropping a handle keeps its buffer for
    /// `close`. In a [`BlockOrder::RoundRobin`] writer the thread then
    /// leaves the turns (in its turn).
    pub fn finish(mut self) -> Result<()> {
        self.flush()?;
        if self.shared.options.order == BlockOrder::RoundRobin {
            self.shared.rotation.in_turn(&self.slot, true, || ());
        }
        Ok(())
    }
}

/// A run of pushes into one thread, holding its buffer:
/// [`StreamingThread::batch`].
pub struct ThreadBatch<'a> {
    handle: &'a StreamingThread,
    state: MutexGuard<'a, ThreadState>,
}

impl std::fmt::Debug for ThreadBatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadBatch")
            .field("thread", &self.handle.slot.thread)
            .finish_non_exhaustive()
    }
}

impl ThreadBatch<'_> {
    /// The thread being recorded.
    pub fn thread_id(&self) -> ThreadId {
        self.handle.slot.thread
    }

    /// [`StreamingThread::recorded_bytes`], in the batch.
    pub fn recorded_bytes(&self) -> u64 {
        self.state.block.logical_position().0
    }

    /// [`StreamingWriter::add_reference`](super::StreamingWriter::add_reference),
    /// in the batch.
    pub fn add_reference(&mut self, object: &Object<'_>) -> Result<()> {
        self.handle.shared.pool.insert(object)
    }

    /// [`StreamingThread::push_tracepoint`], in the batch. Inlined where
    /// it is called: a caller that builds one kind of tracepoint there
    /// gets that kind's encoding alone, with no dispatch on the body.
    #[inline(always)]
    pub fn push_tracepoint(&mut self, tracepoint: &Tracepoint<'_>) -> Result<()> {
        let pushed_events = pushed_events(&self.handle.shared, tracepoint)?;
        write_tracepoint(self.handle, &mut self.state, tracepoint, pushed_events)
    }

    /// [`StreamingThread::push_footer`], in the batch (inlined, as
    /// [`push_tracepoint`](Self::push_tracepoint)).
    #[inline(always)]
    pub fn push_footer(&mut self, footer: &Footer<'_>) -> Result<()> {
        write_footer(self.handle, &mut self.state, footer)
    }
}

/// For a tracepoint pushed with its own event id: one more than that id,
/// having noted that ids are pushed; an error for a negative id.
#[inline(always)]
fn pushed_events(shared: &Shared, tracepoint: &Tracepoint<'_>) -> Result<i64> {
    let event = tracepoint.event().0;
    if event < 0 {
        return Err(negative_event(event));
    }
    if !shared.pushed_ids.load(Ordering::Relaxed) {
        shared.pushed_ids.store(true, Ordering::Relaxed);
    }
    Ok(i64::from(event) + 1)
}

/// Writes a tracepoint into the buffer of `handle`'s thread;
/// `pushed_events` is greater than its event id if the caller chose that
/// id. The writer's context is built only off the fast path.
#[inline(always)]
fn write_tracepoint(
    handle: &StreamingThread,
    state: &mut ThreadState,
    tracepoint: &Tracepoint<'_>,
    pushed_events: i64,
) -> Result<()> {
    if !state.block.try_tracepoint(tracepoint) {
        write_tracepoint_slowly(handle, state, tracepoint)?;
    }
    state.open.push(tracepoint);
    state.tracepoints += 1;
    state.pushed_events = state.pushed_events.max(pushed_events);
    if !tracepoint.is_container() && state.block.is_full() {
        flush_full(handle, state)?;
    }
    Ok(())
}

/// The general path of [`write_tracepoint`]: reference objects to write
/// first, a block to cut, or an error. Kept out of the fast path, whose
/// frame and registers it would otherwise take.
#[cold]
#[inline(never)]
fn write_tracepoint_slowly(
    handle: &StreamingThread,
    state: &mut ThreadState,
    tracepoint: &Tracepoint<'_>,
) -> Result<()> {
    // Encoding checks the tracepoint: the detailed check runs only to name
    // what is wrong.
    state.block.tracepoint(&handle.context(), tracepoint, || {
        rejected(check_tracepoint(tracepoint), tracepoint.encoded_len())
    })
}

/// Cuts a full block (once a megabyte or so: out of the fast path).
#[cold]
#[inline(never)]
fn flush_full(handle: &StreamingThread, state: &mut ThreadState) -> Result<()> {
    state.block.flush(&handle.context())
}

/// Closes the innermost open container of the buffer of `handle`'s
/// thread with `footer`, which must be of its type.
#[inline(always)]
fn write_footer(
    handle: &StreamingThread,
    state: &mut ThreadState,
    footer: &Footer<'_>,
) -> Result<()> {
    state.open.check_footer(footer, handle.slot.thread)?;
    if !state.block.try_footer(footer) {
        write_footer_slowly(handle, state, footer)?;
    }
    state.open.pop_checked()?;
    if state.block.is_full() {
        flush_full(handle, state)?;
    }
    Ok(())
}

/// The general path of [`write_footer`], as [`write_tracepoint_slowly`].
#[cold]
#[inline(never)]
fn write_footer_slowly(
    handle: &StreamingThread,
    state: &mut ThreadState,
    footer: &Footer<'_>,
) -> Result<()> {
    state.block.footer(&handle.context(), footer, || {
        rejected(check_footer(footer), footer.encoded_len())
    })
}

impl BuildTarget for StreamingThread {
    fn thread(&self) -> ThreadId {
        self.slot.thread
    }

    fn open_depth(&self) -> usize {
        lock(&self.slot.state).open.depth()
    }

    fn pool(&self) -> &ReferencePool {
        &self.shared.pool
    }

    fn expect_open(&self, expected: TracepointType, action: &str) -> Result<OpenContainer> {
        lock(&self.slot.state)
            .open
            .expect(expected, action, self.slot.thread)
    }

    fn next_event(&mut self) -> Result<EventId> {
        if self.shared.pushed_ids.load(Ordering::Relaxed) {
            // Rare: ids pushed and built in one trace. Each thread keeps the
            // largest id it pushed, so pushing costs no shared write.
            let slots = lock(&self.shared.threads).slots.clone();
            let pushed = slots
                .iter()
                .map(|slot| lock(&slot.state).pushed_events)
                .max()
                .unwrap_or(0);
            self.shared.next_event.fetch_max(pushed, Ordering::Relaxed);
        }
        let event = self.shared.next_event.fetch_add(1, Ordering::Relaxed);
        i32::try_from(event)
            .map(EventId)
            .map_err(|_| Error::limit("event ids", event, i32::MAX))
    }

    fn add_tracepoint(&mut self, tracepoint: Tracepoint<'static>) -> Result<()> {
        self.write_tracepoint(&tracepoint, 0)
    }

    fn add_footer(&mut self, footer: Footer<'static>) -> Result<()> {
        self.push_footer(&footer)
    }
}

#[cfg(any(test, feature = "generate"))]
impl PushRecorder for StreamingThread {
    fn add_reference(&mut self, object: &Object<'_>) -> Result<()> {
        self.shared.pool.insert(object)
    }

    fn push_tracepoint(&mut self, tracepoint: &Tracepoint<'_>) -> Result<()> {
        StreamingThread::push_tracepoint(self, tracepoint)
    }

    fn push_footer(&mut self, footer: &Footer<'_>) -> Result<()> {
        StreamingThread::push_footer(self, footer)
    }
}

#[cold]
fn negative_event(event: i32) -> Error {
    Error::invalid("event id", format!("{event} is negative"))
}

/// The error for a tracepoint or footer that cannot be encoded: the
/// writer's own check's, which names what is wrong, or else the encoder's.
#[cold]
fn rejected(check: Result<()>, size: std::io::Result<usize>) -> Error {
    match (check, size) {
        (Err(error), _) => error,
        (Ok(()), Err(error)) => error.into(),
        (Ok(()), Ok(_)) => Error::internal("an object the encoder rejected"),
    }
}
