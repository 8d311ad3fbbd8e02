//! [`StreamingWriter`]: writes a trace while it is recorded, from any number
//! of producer threads, as the reference recorder's streaming writer lays it
//! out, in memory bounded by the buffers and the queue. `block.rs` builds a
//! thread's blocks, `io.rs` is the I/O thread, `registry.rs` knows which
//! reference objects are on disk, `turns.rs` orders the blocks of a
//! [`BlockOrder::RoundRobin`] writer.

mod block;
mod io;
mod registry;
#[cfg(test)]
mod tests;
mod thread;
mod turns;

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::common::{LogicalOffset, ThreadId};
use crate::error::{Error, Result};
use crate::format::Object;
use crate::model::{JavaStr, ThreadName};
use crate::write::build::ContainerStack;
use crate::write::check::check_str;
use crate::write::pool::ReferencePool;
use crate::write::recorder::TraceRecorder;

use self::block::{BlockBuffers, BlockBuilder, BlockSink, Context};
use self::io::{BlockJob, Failure, Job, Output, Target, Written};
use self::registry::OnDisk;
use self::turns::Rotation;

pub use self::thread::{StreamingThread, ThreadBatch};

/// How a [`StreamingWriter`] cuts and queues blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamingOptions {
    /// Payload bytes a block holds before it is cut (the reference
    /// recorder's per-thread buffer: 1 MiB). A single object larger than
    /// this gets a block of its own, as large as it needs.
    pub block_size: usize,
    /// After a leaf or footer, the block is cut when fewer than this many
    /// bytes of `block_size` are left (the reference recorder's: 1024).
    pub flush_threshold: usize,
    /// Cut blocks waiting for the I/O thread; a producer cutting a block
    /// while the queue is full waits. Memory is bounded by about
    /// `(producers + queue_capacity + 2) × block_size`.
    pub queue_capacity: usize,
    /// The order the threads' blocks go to the files in.
    pub order: BlockOrder,
}

impl Default for StreamingOptions {
    /// The reference recorder's block size and threshold; 16 queued blocks,
    /// in the order they are cut.
    fn default() -> Self {
        StreamingOptions {
            block_size: 1 << 20,
            flush_threshold: 1024,
            queue_capacity: 16,
            order: BlockOrder::Arrival,
        }
    }
}

/// The order in which a [`StreamingWriter`] writes the threads' blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlockOrder {
    /// As they are cut, whichever thread cut them: the recorder's order,
    /// which depends on the threads' timing. Reference objects one thread
    /// wrote are not written again by another once they are on disk.
    #[default]
    Arrival,
    /// The threads take turns, in the order they were added: each hands over
    /// its next block (or finishes) in its turn, and a thread that cut a
    /// block out of turn waits for its turn. Each thread writes the reference
    /// objects it uses itself (once), whatever the others wrote. So the
    /// files depend only on what each thread records, never on timing.
    ///
    /// Each thread must be recorded through the one handle
    /// [`StreamingWriter::new_thread`] returns (no
    /// [`thread_handle`](StreamingWriter::thread_handle)), and must
    /// [`finish`](StreamingThread::finish) it: a thread that neither cuts a
    /// block nor finishes keeps the others waiting. A handle dropped
    /// unfinished leaves the turns at once (its remaining buffer is written by
    /// `close`, in no fixed place).
    RoundRobin,
}

/// What a closed [`StreamingWriter`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamingSummary {
    /// Threads recorded.
    pub threads: usize,
    /// Tracepoints written.
    pub tracepoints: u64,
    /// Blocks written (thread-name blocks included).
    pub blocks: u64,
    /// Bytes of the data file.
    pub data_bytes: u64,
    /// Bytes of the index file.
    pub index_bytes: u64,
}

/// What the writer, its producer handles and its I/O thread share.
pub(crate) struct Shared {
    options: StreamingOptions,
    pool: ReferencePool,
    on_disk: OnDisk,
    /// The next event id the builder methods hand out.
    next_event: AtomicI64,
    /// Whether a tracepoint was pushed with its own id: then the builder
    /// methods first move `next_event` past every pushed id.
    pushed_ids: AtomicBool,
    threads: Mutex<Threads>,
    queue: SyncSender<Job>,
    /// Empty block buffers (bytes and cells), reused.
    spare: Mutex<Vec<BlockBuffers>>,
    failure: Mutex<Option<Failure>>,
    failed: AtomicBool,
    /// The turns of [`BlockOrder::RoundRobin`] (unused otherwise).
    rotation: Rotation,
    /// Set by `close` (or drop) before it flushes the threads.
    closed: AtomicBool,
}

/// The threads of a trace, in the order they were added.
#[derive(Default)]
struct Threads {
    slots: Vec<Arc<ThreadSlot>>,
    /// Greater than every thread id used.
    next_id: i64,
}

/// One recorded thread: its name, and its state behind a lock that only its
/// producer takes — and `close`, once.
struct ThreadSlot {
    thread: ThreadId,
    /// The thread's number: how many threads were added before it.
    order: usize,
    name: JavaStr<'static>,
    state: Mutex<ThreadState>,
    /// Wakes the thread when its turn comes ([`BlockOrder::RoundRobin`]).
    turn: Condvar,
}

struct ThreadState {
    block: BlockBuilder,
    open: ContainerStack,
    tracepoints: u64,
    /// Greater than every event id pushed with its own id.
    pushed_events: i64,
}

#[cold]
fn closed_error() -> Error {
    Error::invalid("writer", "the streaming writer is closed")
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn context(&self) -> Context<'_, &Shared> {
        Context {
            pool: &self.pool,
            on_disk: &self.on_disk,
            sink: self,
        }
    }

    /// Room for a block's bytes (an object that overflows the block size
    /// rarely needs more) and cells.
    fn buffer(&self) -> BlockBuffers {
        lock(&self.spare).pop().unwrap_or_else(|| {
            let slack = self.options.block_size.min(64 << 10);
            BlockBuffers {
                // Zeroed at once (fresh pages from the allocator need no
                // memset): the block builder uses the whole length.
                bytes: vec![0; self.options.block_size + slack],
                len: 0,
                cells: Default::default(),
            }
        })
    }

    /// Keeps a written block's buffers for reuse, unless enough are kept or
    /// they grew for an oversized object.
    pub(crate) fn recycle(&self, block: BlockBuffers) {
        let mut spare = lock(&self.spare);
        if spare.len() <= self.options.queue_capacity
            && block.bytes.capacity() <= 2 * (self.options.block_size + (64 << 10))
        {
            // Not cleared nor shortened: the next block overwrites its
            // bytes (and need not zero them again).
            spare.push(block);
        }
    }

    /// The error for a job the I/O thread can no longer take.
    fn stopped_error(&self) -> Error {
        self.failure().unwrap_or_else(closed_error)
    }
}

impl BlockSink for Shared {
    fn cut(
        &self,
        thread: ThreadId,
        logical_start: LogicalOffset,
        block: BlockBuffers,
    ) -> Result<BlockBuffers> {
        if let Some(error) = self.failure() {
            return Err(error);
        }
        let job = Job::Block(BlockJob {
            thread,
            logical_start,
            block,
        });
        self.queue.send(job).map_err(|_| self.stopped_error())?;
        Ok(self.buffer())
    }
}

/// A trace written while it is recorded: the shared writer. Each recorded
/// thread writes through its own [`StreamingThread`], which any thread may
/// own; [`close`](Self::close) ends the trace.
///
/// ```text
/// producer threads            StreamingThread (one per recorded thread, Send)
///   enter/leaf/exit  ──►  per-thread buffer: reference objects + tracepoints
///                          │ full? cut a block (BLOCK_START … BLOCK_END)
///                          ▼ with its index cells (logical container offsets)
///                     bounded queue (back-pressure: a producer waits when full)
///                          │
///                          ▼
///                     I/O thread: block → data file, cells → index file
///                     (BLOCK_START cell first, reference cells made physical),
///                     then marks the block's reference objects as on disk
/// ```
///
/// - **Blocks** are cut where the reference recorder cuts them: after a leaf
///   or a footer once fewer than [`StreamingOptions::flush_threshold`] bytes
///   of [`StreamingOptions::block_size`] are left, or before an object that
///   does not fit (which may leave a container's header last in a block). A
///   container's content may span many blocks; its cell goes with the block
///   holding its footer.
/// - **Reference objects** are written before the first object of a block
///   that needs them, unless the block has them or they are on disk already
///   (a registry the I/O thread updates after each block). Two threads
///   needing one new object at once both write it: duplicates, which the
///   format allows.
/// - **Order**: blocks go to the files as they are cut
///   ([`BlockOrder::Arrival`]), or in turns, thread by thread
///   ([`BlockOrder::RoundRobin`]: the same files for the same recording,
///   whatever the timing).
/// - **Thread names** are written by [`close`](Self::close), in
///   one last block per thread, as the reference writer does; **event ids**
///   come from one trace-wide counter.
/// - **Safe to kill**: the I/O thread writes each block straight to the
///   files (the page cache), data before cells; a killed process loses only
///   what producers had not cut yet and the blocks still queued (at most
///   [`StreamingOptions::queue_capacity`]), and leaves a trace the readers
///   open as a crashed recorder's (no `EOF`, no index footer, no thread
///   names), with an index that is a prefix of the rebuilt one.
///
/// ```
/// use tracetree::model::Type;
/// use tracetree::write::{CallOutcome, CallSpec, MethodSpec, StreamingWriter, ThreadRecorder};
///
/// # let dir = tempfile::tempdir().unwrap();
/// # let path = dir.path().join("run.trace");
/// let writer = StreamingWriter::create(&path)?;
/// let work = MethodSpec::new("Main", "work", vec![Type::Int], Type::Void);
/// std::thread::scope(|scope| {
///     let mut workers = Vec::new();
///     for i in 0..4 {
///         // An owned handle, moved to the thread that records through it.
///         let mut thread = writer.new_thread(format!("worker-{i}"))?;
///         let work = &work;
///         workers.push(scope.spawn(move || {
///             thread.enter_call(None, CallSpec::new(work).with_argument(i))?;
///             thread.exit_call(CallOutcome::VOID)?;
///             thread.finish()
///         }));
///     }
///     workers
///         .into_iter()
///         .try_for_each(|worker| worker.join().expect("a worker panicked"))
/// })?;
/// let summary = writer.close()?;
/// assert_eq!(summary.tracepoints, 4);
/// # Ok::<(), tracetree::Error>(())
/// ```
///
/// The writer also implements [`TraceRecorder`], so code written for the
/// [`DumpWriter`](crate::write::DumpWriter) records through it unchanged.
/// Dropping the writer without closing it cuts and writes every buffer but
/// does not end the trace: readers open it as a crashed recorder's.
pub struct StreamingWriter {
    shared: Arc<Shared>,
    io: Option<JoinHandle<Written>>,
}

impl std::fmt::Debug for StreamingWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamingWriter")
            .field("options", &self.shared.options)
            .field("open", &self.io.is_some())
            .finish_non_exhaustive()
    }
}

/// Creates `path` for writing. An existing regular file (or the one a
/// symbolic link at `path` names) is unlinked first rather than truncated:
/// truncating a file another process has mapped makes that process die with
/// `SIGBUS` on its next access, while an unlinked file stays whole for
/// whoever still maps it. Anything else at `path` (a device, a pipe) is
/// opened as it is.
fn create_replacing(path: &Path) -> Result<File> {
    let io = |e| Error::io(path, e);
    match std::fs::metadata(path) {
        Ok(meta) if meta.file_type().is_file() => {
            let target = std::fs::canonicalize(path).map_err(io)?;
            std::fs::remove_file(&target).map_err(io)?;
            File::create_new(&target).map_err(io)
        }
        Ok(_) => File::create(path).map_err(io),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => File::create(path).map_err(io),
        Err(e) => Err(io(e)),
    }
}

impl StreamingWriter {
    /// Starts a trace at `path`, its index at `path` + `.idx`, with
    /// [`StreamingOptions::default`]. Existing files are replaced, never
    /// rewritten in place: a reader that still maps them keeps its snapshot.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        Self::create_with_options(path, StreamingOptions::default())
    }

    /// Starts a trace at `path`, its index at `path` + `.idx`.
    pub fn create_with_options(path: impl AsRef<Path>, options: StreamingOptions) -> Result<Self> {
        let data_path = path.as_ref().to_path_buf();
        let index_path = crate::format::index::index_path(&data_path);
        let data = create_replacing(&data_path)?;
        let index = create_replacing(&index_path)?;
        Self::start(
            Target {
                out: Box::new(data),
                path: Some(data_path),
            },
            Target {
                out: Box::new(index),
                path: Some(index_path),
            },
            options,
        )
    }

    /// Starts a trace written to `data` and its index to `index` (files
    /// opened by the caller, pipes, …). Each block is written with one
    /// `write_all` per stream; a buffering writer keeps blocks from the
    /// files until it is flushed.
    pub fn from_writers(
        data: impl Write + Send + 'static,
        index: impl Write + Send + 'static,
        options: StreamingOptions,
    ) -> Result<Self> {
        Self::start(
            Target {
                out: Box::new(data),
                path: None,
            },
            Target {
                out: Box::new(index),
                path: None,
            },
            options,
        )
    }

    fn start(data: Target, index: Target, options: StreamingOptions) -> Result<Self> {
        if options.block_size == 0 {
            return Err(Error::invalid("block size", "0 bytes"));
        }
        let output = Output::start(data, index).map_err(|failure| failure.to_error())?;
        let (queue, jobs) = sync_channel(options.queue_capacity);
        let shared = Arc::new(Shared {
            options,
            pool: ReferencePool::default(),
            on_disk: OnDisk::default(),
            next_event: AtomicI64::new(0),
            pushed_ids: AtomicBool::new(false),
            threads: Mutex::new(Threads::default()),
            queue,
            spare: Mutex::new(Vec::new()),
            failure: Mutex::new(None),
            failed: AtomicBool::new(false),
            rotation: Rotation::default(),
            closed: AtomicBool::new(false),
        });
        let io_shared = Arc::clone(&shared);
        let io = std::thread::Builder::new()
            .name("tracetree-io".to_string())
            .spawn(move || output.run(jobs, io_shared))
            .map_err(Error::from)?;
        Ok(StreamingWriter {
            shared,
            io: Some(io),
        })
    }

    /// The options the trace is written with.
    pub fn options(&self) -> StreamingOptions {
        self.shared.options
    }

    /// Adds a thread named `name` with the next free id (0 for the first
    /// thread, then 1, 2, …) and returns its producer handle.
    pub fn new_thread<'n>(&self, name: impl Into<JavaStr<'n>>) -> Result<StreamingThread> {
        self.register(None, name.into())
    }

    /// Adds a thread with its own id (copied from another trace) and
    /// returns its producer handle; [`Error::InvalidArgument`] if the id is taken.
    pub fn new_thread_with_id<'n>(
        &self,
        thread: ThreadId,
        name: impl Into<JavaStr<'n>>,
    ) -> Result<StreamingThread> {
        self.register(Some(thread), name.into())
    }

    /// Another producer handle for thread `thread`, which must have been
    /// added. Handles of one thread share its buffer and its tree. Refused
    /// by a [`BlockOrder::RoundRobin`] writer.
    pub fn thread_handle(&self, thread: ThreadId) -> Result<StreamingThread> {
        if self.shared.options.order == BlockOrder::RoundRobin {
            return Err(Error::invalid(
                "thread",
                "a round-robin streaming writer records each thread through the handle \
                 new_thread returned",
            ));
        }
        let threads = lock(&self.shared.threads);
        let slot = threads
            .slots
            .iter()
            .find(|slot| slot.thread == thread)
            .ok_or_else(|| Error::invalid("thread", format!("no thread {thread} in this trace")))?;
        Ok(StreamingThread {
            shared: Arc::clone(&self.shared),
            slot: Arc::clone(slot),
        })
    }

    fn register(&self, id: Option<ThreadId>, name: JavaStr<'_>) -> Result<StreamingThread> {
        check_str(&name, "thread name")?;
        let mut threads = lock(&self.shared.threads);
        if self.shared.closed.load(Ordering::SeqCst) {
            return Err(closed_error());
        }
        let thread = match id {
            Some(thread) if thread.0 < 0 => {
                return Err(Error::invalid("thread id", format!("{thread} is negative")));
            }
            Some(thread) if threads.slots.iter().any(|slot| slot.thread == thread) => {
                return Err(Error::invalid(
                    "thread id",
                    format!("{thread} is used twice"),
                ));
            }
            Some(thread) => thread,
            None => ThreadId(
                i32::try_from(threads.next_id)
                    .map_err(|_| Error::limit("threads", threads.next_id, i32::MAX))?,
            ),
        };
        threads.next_id = threads.next_id.max(i64::from(thread.0) + 1);
        let options = &self.shared.options;
        let round_robin = options.order == BlockOrder::RoundRobin;
        let mut block = BlockBuilder::new(
            thread,
            self.shared.buffer(),
            options.block_size,
            options.flush_threshold,
        );
        if round_robin {
            block.keep_own_registry();
        }
        let slot = Arc::new(ThreadSlot {
            thread,
            order: threads.slots.len(),
            name: name.into_owned(),
            state: Mutex::new(ThreadState {
                block,
                open: ContainerStack::default(),
                tracepoints: 0,
                pushed_events: 0,
            }),
            turn: Condvar::new(),
        });
        threads.slots.push(Arc::clone(&slot));
        if round_robin {
            self.shared.rotation.add(Arc::clone(&slot));
        }
        Ok(StreamingThread {
            shared: Arc::clone(&self.shared),
            slot,
        })
    }

    /// Adds a reference object that keeps its id (any kind but
    /// `THREAD_NAME`), for tracepoints pushed with their ids through
    /// [`StreamingThread::push_tracepoint`]. Adding an equal object twice is
    /// allowed; two different objects with one kind and id are an
    /// [`Error::InvalidArgument`]. Objects are written when first used, not here.
    pub fn add_reference(&self, object: &Object<'_>) -> Result<()> {
        self.shared.pool.insert(object)
    }

    /// Waits until every block cut so far is in the files; returns the I/O
    /// error that stopped the writer, if any.
    pub fn sync(&self) -> Result<()> {
        if self.io.is_none() {
            return Err(closed_error());
        }
        let (done, wait) = std::sync::mpsc::channel();
        self.shared
            .queue
            .send(Job::Sync(done))
            .map_err(|_| self.shared.stopped_error())?;
        wait.recv().map_err(|_| self.shared.stopped_error())?;
        match self.shared.failure() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Ends the trace: cuts every thread's buffer, writes one block per
    /// thread holding its name, then `EOF` and the index footer, and waits
    /// for the I/O thread. Producer handles still alive afterwards fail with
    /// [`Error::InvalidArgument`].
    ///
    /// Fails with the first I/O error if one stopped the writer, and with
    /// [`Error::InvalidArgument`] if a thread still has open containers (exit them
    /// first; a call may exit as [`CallOutcome::Unfinished`](crate::write::CallOutcome::Unfinished)) — the files are
    /// complete even then, those containers without footers.
    pub fn close(mut self) -> Result<StreamingSummary> {
        self.end(true, false)
    }

    /// Ends the trace as [`close`](Self::close) does, but containers still
    /// open are expected: they stay without footers, unfinished, as in a
    /// recording that was cut off (an import of one, say).
    pub fn close_leaving_open(mut self) -> Result<StreamingSummary> {
        self.end(true, true)
    }

    fn end(&mut self, end_trace: bool, leave_open: bool) -> Result<StreamingSummary> {
        let Some(io) = self.io.take() else {
            return Err(closed_error());
        };
        let shared = &*self.shared;
        shared.closed.store(true, Ordering::SeqCst);
        shared.rotation.end();
        let slots = lock(&shared.threads).slots.clone();
        let context = shared.context();
        let mut first_error = None;
        let mut summary = StreamingSummary {
            threads: slots.len(),
            ..StreamingSummary::default()
        };
        let mut unfinished = Vec::new();
        for slot in &slots {
            let mut state = lock(&slot.state);
            summary.tracepoints += state.tracepoints;
            if let Some(innermost) = state.open.innermost() {
                unfinished.push(format!(
                    "thread {} has {} open container(s), innermost a {}",
                    slot.thread,
                    state.open.depth(),
                    innermost.tracepoint_type.name()
                ));
            }
            if let Err(error) = state.block.flush(&context) {
                first_error.get_or_insert(error);
            }
        }
        if end_trace {
            for slot in &slots {
                let mut state = lock(&slot.state);
                let name = Object::ThreadName(ThreadName {
                    thread: slot.thread,
                    name: slot.name.clone(),
                });
                let written = state
                    .block
                    .thread_name(&context, &name)
                    .and_then(|()| state.block.flush(&context));
                if let Err(error) = written {
                    first_error.get_or_insert(error);
                }
            }
        }
        let last = if end_trace { Job::Finish } else { Job::Stop };
        // The I/O thread takes jobs until this one, even after a failure.
        let _ = shared.queue.send(last);
        let written = io
            .join()
            .map_err(|_| Error::internal("the streaming writer's I/O thread panicked"))?;
        summary.blocks = written.blocks;
        summary.data_bytes = written.data_bytes;
        summary.index_bytes = written.index_bytes;
        if let Some(error) = shared.failure().or(first_error) {
            return Err(error);
        }
        if !unfinished.is_empty() && !leave_open {
            return Err(Error::invalid(
                "call order",
                format!(
                    "{}; exit them (a call may exit as CallOutcome::Unfinished) before closing \
                     (the trace was written with them unfinished)",
                    unfinished.join(", ")
                ),
            ));
        }
        Ok(summary)
    }
}

impl Drop for StreamingWriter {
    fn drop(&mut self) {
        if self.io.is_some() {
            let _ = self.end(false, true);
        }
    }
}

impl TraceRecorder for StreamingWriter {
    type Thread<'r> = StreamingThread;

    fn add_thread<'n>(&mut self, name: impl Into<JavaStr<'n>>) -> Result<ThreadId> {
        Ok(self.new_thread(name)?.slot.thread)
    }

    fn thread(&mut self, thread: ThreadId) -> Result<StreamingThread> {
        self.thread_handle(thread)
    }
}
