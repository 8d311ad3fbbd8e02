//! [`StreamingWriter`]: writes a trace while it is recorded, from any number
//! of producer threads, as the reference recorder's streaming writer lays it
//! out, in memory bounded by the buffers and the queue. `block.rs` builds a
//! thread's blocks, `io.rs` is the I/O thread, `registry.rs` knows which
//! reference objects are on disk.

mod block;
mod io;
mod registry;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::common::{EventId, LogicalOffset, ThreadId};
use crate::error::{Error, Result};
use crate::format::{IndexCell, Object};
use crate::model::{Footer, JavaStr, ThreadName, Tracepoint, TracepointType};
use crate::write::build::{BuildTarget, ContainerStack, OpenContainer};
use crate::write::check::{check_footer, check_str, check_tracepoint};
use crate::write::pool::ReferencePool;
use crate::write::recorder::{PushRecorder, TraceRecorder};
use crate::write::spec::IntoJavaStr;

use self::block::{BlockBuilder, BlockSink, Context};
use self::io::{BlockJob, Failure, Job, Output, Target, Written};
use self::registry::OnDisk;

/// How a [`StreamingWriter`] cuts and queues blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

impl Default for StreamingOptions {
    /// The reference recorder's block size and threshold; 16 queued blocks.
    fn default() -> Self {
        StreamingOptions {
            block_size: 1 << 20,
            flush_threshold: 1024,
            queue_capacity: 16,
        }
    }
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
    /// Empty block buffers, reused.
    spare: Mutex<Vec<Vec<u8>>>,
    failure: Mutex<Option<Failure>>,
    failed: AtomicBool,
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
    name: JavaStr<'static>,
    state: Mutex<ThreadState>,
}

struct ThreadState {
    block: BlockBuilder,
    open: ContainerStack,
    tracepoints: u64,
    /// Greater than every event id pushed with its own id.
    pushed_events: i64,
}

#[cold]
fn negative_event(event: i32) -> Error {
    Error::Usage(format!("negative event id {event}"))
}

#[cold]
fn closed_error() -> Error {
    Error::Usage("the streaming writer is closed".to_string())
}

/// The error for a tracepoint or footer that cannot be encoded: the
/// writer's own check's, which names what is wrong, or else the encoder's.
#[cold]
fn rejected(check: Result<()>, size: std::io::Result<usize>) -> Error {
    match (check, size) {
        (Err(error), _) => error,
        (Ok(()), Err(error)) => error.into(),
        (Ok(()), Ok(_)) => Error::Usage("an object the encoder rejected".to_string()),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn context(&self) -> Context<'_, Shared> {
        Context {
            pool: &self.pool,
            on_disk: &self.on_disk,
            sink: self,
        }
    }

    /// Room for a block's bytes; an object that overflows the block size
    /// rarely needs more.
    fn buffer(&self) -> Vec<u8> {
        lock(&self.spare).pop().unwrap_or_else(|| {
            let slack = self.options.block_size.min(64 << 10);
            // Zeroed at once (fresh pages from the allocator need no
            // memset): the block builder uses the whole length.
            vec![0; self.options.block_size + slack]
        })
    }

    /// Keeps a written block's buffer for reuse, unless enough are kept or
    /// it grew for an oversized object.
    pub(crate) fn recycle(&self, bytes: Vec<u8>) {
        let mut spare = lock(&self.spare);
        if spare.len() <= self.options.queue_capacity
            && bytes.capacity() <= 2 * (self.options.block_size + (64 << 10))
        {
            // Not cleared: the next block overwrites it (and need not zero
            // it again).
            spare.push(bytes);
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
        bytes: Vec<u8>,
        cells: Vec<IndexCell>,
    ) -> Result<Vec<u8>> {
        if let Some(error) = self.failure() {
            return Err(error);
        }
        let job = Job::Block(BlockJob {
            thread,
            logical_start,
            bytes,
            cells,
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
        let mut index_path = data_path.clone().into_os_string();
        index_path.push(".idx");
        let index_path = PathBuf::from(index_path);
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
            return Err(Error::Usage("a block size of 0 bytes".to_string()));
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
            closed: AtomicBool::new(false),
        });
        let io_shared = Arc::clone(&shared);
        let io = std::thread::Builder::new()
            .name("tracetree-io".to_string())
            .spawn(move || output.run(jobs, io_shared))
            .map_err(Error::Stream)?;
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
    pub fn new_thread<'n>(&self, name: impl IntoJavaStr<'n>) -> Result<StreamingThread> {
        self.register(None, name.into_java_str())
    }

    /// Adds a thread with its own id (copied from another trace) and
    /// returns its producer handle; [`Error::Usage`] if the id is taken.
    pub fn new_thread_with_id<'n>(
        &self,
        thread: ThreadId,
        name: impl IntoJavaStr<'n>,
    ) -> Result<StreamingThread> {
        self.register(Some(thread), name.into_java_str())
    }

    /// Another producer handle for thread `thread`, which must have been
    /// added. Handles of one thread share its buffer and its tree.
    pub fn thread_handle(&self, thread: ThreadId) -> Result<StreamingThread> {
        let threads = lock(&self.shared.threads);
        let slot = threads
            .slots
            .iter()
            .find(|slot| slot.thread == thread)
            .ok_or_else(|| Error::Usage(format!("no thread {thread} in this trace")))?;
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
                return Err(Error::Usage(format!("negative thread id {thread}")));
            }
            Some(thread) if threads.slots.iter().any(|slot| slot.thread == thread) => {
                return Err(Error::Usage(format!("thread id {thread} used twice")));
            }
            Some(thread) => thread,
            None => ThreadId(
                i32::try_from(threads.next_id)
                    .map_err(|_| Error::Usage("too many threads".to_string()))?,
            ),
        };
        threads.next_id = threads.next_id.max(i64::from(thread.0) + 1);
        let slot = Arc::new(ThreadSlot {
            thread,
            name: name.into_owned(),
            state: Mutex::new(ThreadState {
                block: BlockBuilder::new(
                    thread,
                    self.shared.buffer(),
                    self.shared.options.block_size,
                    self.shared.options.flush_threshold,
                ),
                open: ContainerStack::default(),
                tracepoints: 0,
                pushed_events: 0,
            }),
        });
        threads.slots.push(Arc::clone(&slot));
        Ok(StreamingThread {
            shared: Arc::clone(&self.shared),
            slot,
        })
    }

    /// Adds a reference object that keeps its id (any kind but
    /// `THREAD_NAME`), for tracepoints pushed with their ids through
    /// [`StreamingThread::push_tracepoint`]. Adding an equal object twice is
    /// allowed; two different objects with one kind and id are an
    /// [`Error::Usage`]. Objects are written when first used, not here.
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
    /// [`Error::Usage`].
    ///
    /// Fails with the first I/O error if one stopped the writer, and with
    /// [`Error::Usage`] if a thread still has open containers (exit them
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
            .map_err(|_| Error::Usage("the streaming writer's I/O thread panicked".to_string()))?;
        summary.blocks = written.blocks;
        summary.data_bytes = written.data_bytes;
        summary.index_bytes = written.index_bytes;
        if let Some(error) = shared.failure().or(first_error) {
            return Err(error);
        }
        if !unfinished.is_empty() && !leave_open {
            return Err(Error::Usage(format!(
                "{}; exit them (a call may exit as CallOutcome::Unfinished) before closing \
                 (the trace was written with them unfinished)",
                unfinished.join(", ")
            )));
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

    fn add_thread<'n>(&mut self, name: impl IntoJavaStr<'n>) -> Result<ThreadId> {
        Ok(self.new_thread(name)?.slot.thread)
    }

    fn thread(&mut self, thread: ThreadId) -> Result<StreamingThread> {
        self.thread_handle(thread)
    }
}

/// A producer handle: records one thread of a [`StreamingWriter`]'s trace
/// into that thread's buffer, cutting a block whenever the buffer fills.
///
/// Handles are owned and `Send`: move each to the thread that records
/// through it. Handles of different threads never wait for each other,
/// except for a full queue. Record by name through [`ThreadRecorder`](crate::write::ThreadRecorder), or
/// push tracepoints that already carry their ids with
/// [`push_tracepoint`](Self::push_tracepoint) and
/// [`push_footer`](Self::push_footer).
pub struct StreamingThread {
    shared: Arc<Shared>,
    slot: Arc<ThreadSlot>,
}

impl std::fmt::Debug for StreamingThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamingThread")
            .field("thread", &self.slot.thread)
            .finish_non_exhaustive()
    }
}

impl StreamingThread {
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
    /// names must have been added ([`StreamingWriter::add_reference`]) or
    /// interned. Event ids are not checked for uniqueness (that would take
    /// memory growing with the trace); the builder methods go on after the
    /// largest pushed id, except for ids pushed by another thread at the very
    /// same time.
    pub fn push_tracepoint(&mut self, tracepoint: &Tracepoint<'_>) -> Result<()> {
        let event = tracepoint.event().0;
        if event < 0 {
            return Err(negative_event(event));
        }
        if !self.shared.pushed_ids.load(Ordering::Relaxed) {
            self.shared.pushed_ids.store(true, Ordering::Relaxed);
        }
        self.write_tracepoint(tracepoint, i64::from(event) + 1)
    }

    /// Writes a tracepoint; `pushed_events` is greater than its event id if
    /// the caller chose that id.
    #[inline]
    fn write_tracepoint(&mut self, tracepoint: &Tracepoint<'_>, pushed_events: i64) -> Result<()> {
        let mut guard = self.state()?;
        let state = &mut *guard;
        if !state.block.try_tracepoint(tracepoint) {
            // Reference objects to write first, a block to cut, or an error.
            // Encoding checks the tracepoint: the detailed check runs only to
            // name what is wrong.
            state
                .block
                .tracepoint(&self.shared.context(), tracepoint, || {
                    rejected(check_tracepoint(tracepoint), tracepoint.encoded_len())
                })?;
        }
        state.open.push(tracepoint);
        state.tracepoints += 1;
        state.pushed_events = state.pushed_events.max(pushed_events);
        if !tracepoint.is_container() && state.block.is_full() {
            state.block.flush(&self.shared.context())?;
        }
        Ok(())
    }

    /// Closes the innermost open container with `footer`, which must be of
    /// its type.
    pub fn push_footer(&mut self, footer: &Footer<'_>) -> Result<()> {
        let thread = self.slot.thread;
        let mut guard = self.state()?;
        let state = &mut *guard;
        state.open.check_footer(footer, thread)?;
        if !state.block.try_footer(footer) {
            state.block.footer(&self.shared.context(), footer, || {
                rejected(check_footer(footer), footer.encoded_len())
            })?;
        }
        state.open.pop(footer, thread)?;
        if state.block.is_full() {
            state.block.flush(&self.shared.context())?;
        }
        Ok(())
    }

    /// Cuts the thread's block now (if it holds anything) and queues it.
    pub fn flush(&mut self) -> Result<()> {
        let context = self.shared.context();
        self.state()?.block.flush(&context)
    }

    /// Cuts the thread's last block and gives the handle up. A thread that
    /// is done should finish, so its data reaches the files before the trace
    /// ends (the thread's name is written by
    /// [`StreamingWriter::close`]). Dropping a handle keeps its buffer for
    /// `close`.
    pub fn finish(mut self) -> Result<()> {
        self.flush()
    }
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
            .map_err(|_| Error::Usage("event ids exhausted".to_string()))
    }

    fn add_tracepoint(&mut self, tracepoint: Tracepoint<'static>) -> Result<()> {
        self.write_tracepoint(&tracepoint, 0)
    }

    fn add_footer(&mut self, footer: Footer<'static>) -> Result<()> {
        self.push_footer(&footer)
    }
}

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
