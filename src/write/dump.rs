//! [`DumpWriter`]: collects every thread's tree in memory, then writes the
//! two files at once, laid out as the reference collect-and-dump writer lays
//! them out:
//!
//! - one block per thread, in the order threads were added; the block's
//!   thread id and its `THREAD_NAME` (written right after `BLOCK_START`) carry
//!   the thread's position;
//! - before each tracepoint or footer, every reference object it refers to
//!   that is not yet in the file, dependencies first (a method's class before
//!   the method; a code location's file, class and method names, then its
//!   access path, argument paths and local names; an access path's variables
//!   and fields, nested paths first);
//! - an index cell for each reference object (physical start; its end field
//!   holds the offset of the block header's last byte, as the reference
//!   writer's does), one for each container when its footer is written
//!   (logical start after the header, logical offset of the footer), and the
//!   block's `BLOCK_START` cell after the block's other cells;
//! - `EOF`, and an index footer whose `EOF` cell holds the last block's
//!   header-end offset (−1 when there are no threads).

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::common::{
    AccessPathId, ClassId, CodeLocationId, EventId, FieldId, LogicalOffset, MethodId,
    PhysicalOffset, StringId, ThreadId, VariableId,
};
use crate::error::{Error, Result};
use crate::format::TraceContext;
use crate::format::index::encode_index_footer;
use crate::format::{DATA_MAGIC, INDEX_MAGIC, IndexCell, Object, ObjectKind, file_header};
use crate::model::{
    Footer, JavaStr, StringObject, ThreadName, Tracepoint, TracepointBody, TracepointType, Value,
};
use crate::write::build::{BuildTarget, ContainerStack, OpenContainer};
use crate::write::check::{check_footer, check_str, check_tracepoint};
use crate::write::deps::{self, ReferenceSink};
use crate::write::pool::ReferencePool;
#[cfg(any(test, feature = "generate"))]
use crate::write::recorder::PushRecorder;
use crate::write::recorder::TraceRecorder;

/// How a [`DumpWriter`] writes values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DumpOptions {
    /// Write every NaN `float` as `7FC00000` and every NaN `double` as
    /// `7FF8000000000000`, as the reference dump writer does (Java's
    /// `writeFloat`/`writeDouble`). When `false`, NaN payloads are kept.
    pub canonicalize_nan: bool,
}

impl Default for DumpOptions {
    /// The reference dump writer's behaviour: NaNs canonicalised.
    fn default() -> Self {
        DumpOptions {
            canonicalize_nan: true,
        }
    }
}

/// One object of a thread's tree, in pre-order: a tracepoint (a leaf or a
/// container's header) or the footer closing the innermost open container.
#[derive(Debug, Clone)]
enum Entry {
    Tracepoint(Tracepoint<'static>),
    Footer(Footer<'static>),
}

/// One thread's name and tree.
#[derive(Debug, Clone)]
struct ThreadLog {
    name: JavaStr<'static>,
    entries: Vec<Entry>,
    open: ContainerStack,
}

/// A trace collected in memory and written as one block per thread.
///
/// Record through [`TraceRecorder`] (names and values; the writer interns
/// reference objects and numbers events), or copy tracepoints that already
/// carry ids with [`add_reference`](Self::add_reference),
/// [`push_tracepoint`](Self::push_tracepoint) and
/// [`push_footer`](Self::push_footer) (as [`from_trace`](Self::from_trace)
/// does). Then [`save`](Self::save) to a path or [`save_to`](Self::save_to)
/// any writers.
///
/// ```
/// use tracetree::write::{CallOutcome, CallSpec, CodeLocationSpec, DumpWriter, MethodSpec, ThreadRecorder, TraceRecorder};
/// use tracetree::model::Type;
///
/// let mut writer = DumpWriter::new();
/// let main = writer.add_thread("main")?;
/// let run = MethodSpec::new("Main", "run", vec![Type::Int], Type::Int);
/// let at = CodeLocationSpec::call("Main.kt", "MainKt", "main", 3);
/// let mut thread = writer.thread(main)?;
/// thread.enter_call(Some(&at), CallSpec::new(&run).with_argument(41))?;
/// thread.exit_call(CallOutcome::returned(42))?;
/// let (data, index) = writer.to_bytes()?;
/// # assert!(data.len() > 16 && index.len() > 16);
/// # Ok::<(), tracetree::Error>(())
/// ```
#[derive(Debug)]
pub struct DumpWriter {
    options: DumpOptions,
    pool: ReferencePool,
    threads: Vec<ThreadLog>,
    events: HashSet<i32>,
    /// Greater than every event id used.
    next_event: i64,
}

impl Default for DumpWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl DumpWriter {
    /// An empty trace with [`DumpOptions::default`].
    pub fn new() -> Self {
        Self::with_options(DumpOptions::default())
    }

    /// An empty trace.
    pub fn with_options(options: DumpOptions) -> Self {
        DumpWriter {
            options,
            pool: ReferencePool::default(),
            threads: Vec::new(),
            events: HashSet::new(),
            next_event: 0,
        }
    }

    pub(crate) fn copy_references(&mut self, context: &TraceContext) -> Result<()> {
        for_each_reference(context, |object| self.add_reference(object))
    }

    /// The options the trace is written with.
    pub fn options(&self) -> DumpOptions {
        self.options
    }

    /// How many threads the trace has.
    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// How many tracepoints the trace has.
    pub fn tracepoint_count(&self) -> usize {
        self.events.len()
    }

    /// Adds a reference object that keeps its id (any kind but `THREAD_NAME`,
    /// which threads carry). Adding an equal object twice is allowed; two
    /// different objects with one kind and id are an [`Error::InvalidArgument`]. Objects
    /// no tracepoint refers to are not written.
    pub fn add_reference(&mut self, object: &Object<'_>) -> Result<()> {
        self.pool.insert(object)
    }

    fn thread_log(&mut self, thread: ThreadId) -> Result<&mut ThreadLog> {
        usize::try_from(thread.0)
            .ok()
            .and_then(|index| self.threads.get_mut(index))
            .ok_or_else(|| Error::invalid("thread", format!("no thread {thread} in this trace")))
    }

    /// Adds a tracepoint that keeps its ids (event, code location, thread,
    /// …) to `thread`'s tree: a leaf, or a container's header which
    /// [`push_footer`](Self::push_footer) closes. Its event id must be unused.
    pub fn push_tracepoint(&mut self, thread: ThreadId, tracepoint: &Tracepoint<'_>) -> Result<()> {
        check_tracepoint(tracepoint)?;
        let event = tracepoint.event().0;
        if event < 0 {
            return Err(Error::invalid("event id", format!("{event} is negative")));
        }
        if self.events.contains(&event) {
            return Err(Error::invalid("event id", format!("{event} is used twice")));
        }
        let mut tracepoint = tracepoint.clone().into_owned();
        if self.options.canonicalize_nan {
            canonicalize_tracepoint(&mut tracepoint);
        }
        let log = self.thread_log(thread)?;
        log.open.push(&tracepoint);
        log.entries.push(Entry::Tracepoint(tracepoint));
        self.events.insert(event);
        self.next_event = self.next_event.max(event as i64 + 1);
        Ok(())
    }

    /// Closes the innermost open container of `thread` with `footer`, which
    /// must be of the container's type.
    pub fn push_footer(&mut self, thread: ThreadId, footer: &Footer<'_>) -> Result<()> {
        check_footer(footer)?;
        let canonicalize = self.options.canonicalize_nan;
        let log = self.thread_log(thread)?;
        log.open.pop(footer, thread)?;
        let mut footer = footer.clone().into_owned();
        if canonicalize && let Footer::MethodCall { result, .. } = &mut footer {
            canonicalize_value(result);
        }
        log.entries.push(Entry::Footer(footer));
        Ok(())
    }

    fn next_event_id(&mut self) -> Result<EventId> {
        i32::try_from(self.next_event)
            .map(EventId)
            .map_err(|_| Error::limit("event ids", self.next_event, i32::MAX))
    }

    /// Writes the trace to `path` and its index to `path` + `.idx`. Both are
    /// written to temporary files in the same directory first and renamed
    /// into place, so a failure leaves no half-written file behind.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let data_path = path.as_ref().to_path_buf();
        let index_path = crate::format::index::index_path(&data_path);
        self.check_finished()?;
        let data_temp = TempFile::create(&data_path)?;
        let index_temp = TempFile::create(&index_path)?;
        let written = self.write(
            &mut BufWriter::new(&data_temp.file),
            &mut BufWriter::new(&index_temp.file),
        );
        match written {
            Ok(()) => {}
            // The data file's path names the pair.
            Err(Error::Io { path: None, source }) => return Err(Error::io(&data_path, source)),
            Err(other) => return Err(other),
        }
        data_temp.persist(&data_path)?;
        index_temp.persist(&index_path)?;
        Ok(())
    }

    /// Writes the data file to `data` and the index file to `index`.
    pub fn save_to(&self, data: impl Write, index: impl Write) -> Result<()> {
        self.check_finished()?;
        self.write(&mut BufWriter::new(data), &mut BufWriter::new(index))
    }

    /// The data file and the index file, in memory.
    pub fn to_bytes(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let (mut data, mut index) = (Vec::new(), Vec::new());
        self.check_finished()?;
        self.write(&mut data, &mut index)?;
        Ok((data, index))
    }

    fn check_finished(&self) -> Result<()> {
        for (position, log) in self.threads.iter().enumerate() {
            if let Some(open) = log.open.innermost() {
                return Err(Error::invalid(
                    "call order",
                    format!(
                        "thread {position} ({}) has {} open container(s), innermost a {}; \
                     exit them (a call may exit as CallOutcome::Unfinished) before saving",
                        log.name,
                        log.open.depth(),
                        open.tracepoint_type.name()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn write<D: Write, I: Write>(&self, data: &mut D, index: &mut I) -> Result<()> {
        let mut emitter = Emitter {
            pool: &self.pool,
            data: Counting {
                inner: data,
                position: 0,
            },
            index,
            saved: Default::default(),
            data_start: 0,
            open: Vec::new(),
        };
        emitter.data.write_all(&file_header(DATA_MAGIC))?;
        emitter.index.write_all(&file_header(INDEX_MAGIC))?;
        for (position, log) in self.threads.iter().enumerate() {
            let thread = ThreadId(
                i32::try_from(position).map_err(|_| Error::limit("threads", position, i32::MAX))?,
            );
            emitter.block(thread, log)?;
        }
        emitter.data.write_all(&[ObjectKind::Eof as u8])?;
        let eof = emitter.data_start as i64 - 1;
        encode_index_footer(emitter.index, eof, eof)?;
        emitter.data.flush()?;
        emitter.index.flush()?;
        Ok(())
    }
}

/// Sets every NaN in `value` to Java's canonical NaN.
fn canonicalize_value(value: &mut Value<'_>) {
    match value {
        Value::Float(bits) if f32::from_bits(*bits).is_nan() => *bits = 0x7FC0_0000,
        Value::Double(bits) if f64::from_bits(*bits).is_nan() => *bits = 0x7FF8_0000_0000_0000,
        Value::Object { fields, .. } => {
            fields.iter_mut().for_each(|(_, v)| canonicalize_value(v));
        }
        Value::Array { elements, .. } => elements.iter_mut().for_each(canonicalize_value),
        _ => {}
    }
}

fn canonicalize_tracepoint(tracepoint: &mut Tracepoint<'_>) {
    match &mut tracepoint.body {
        TracepointBody::MethodCall {
            receiver,
            arguments,
            ..
        } => {
            canonicalize_value(receiver);
            arguments.iter_mut().for_each(canonicalize_value);
        }
        TracepointBody::ReadArray { array, value, .. }
        | TracepointBody::WriteArray { array, value, .. } => {
            canonicalize_value(array);
            canonicalize_value(value);
        }
        TracepointBody::ReadLocal { value, .. } | TracepointBody::WriteLocal { value, .. } => {
            canonicalize_value(value)
        }
        TracepointBody::ReadField {
            receiver, value, ..
        }
        | TracepointBody::WriteField {
            receiver, value, ..
        } => {
            canonicalize_value(receiver);
            canonicalize_value(value);
        }
        TracepointBody::SnapshotBreakpoint { values, .. } => {
            values.iter_mut().for_each(canonicalize_value)
        }
        TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
            canonicalize_value(exception)
        }
        TracepointBody::Loop { .. } | TracepointBody::LoopIteration { .. } => {}
    }
}

/// A file created next to its destination, removed unless persisted.
struct TempFile {
    path: PathBuf,
    file: File,
    persisted: bool,
}

impl TempFile {
    fn create(destination: &Path) -> Result<Self> {
        let directory = destination
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = destination.file_name().ok_or_else(|| {
            Error::invalid("path", format!("{} names no file", destination.display()))
        })?;
        let mut attempt = 0u32;
        loop {
            let mut temp_name = std::ffi::OsString::from(".");
            temp_name.push(name);
            temp_name.push(format!(".{}.{attempt}.tmp", std::process::id()));
            let path = directory.join(temp_name);
            match File::options().write(true).create_new(true).open(&path) {
                Ok(file) => {
                    return Ok(TempFile {
                        path,
                        file,
                        persisted: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 1000 => {
                    attempt += 1;
                }
                Err(e) => return Err(Error::io(path, e)),
            }
        }
    }

    fn persist(mut self, destination: &Path) -> Result<()> {
        self.file.sync_all().map_err(|e| Error::io(&self.path, e))?;
        fs::rename(&self.path, destination).map_err(|e| Error::io(destination, e))?;
        self.persisted = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.persisted {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A writer that counts the bytes written through it.
struct Counting<W> {
    inner: W,
    position: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.position += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<D: Write, I: Write> ReferenceSink for Emitter<'_, D, I> {
    /// Whether `id` of `kind` still has to be written (and marks it written).
    fn first_use(&mut self, kind: ObjectKind, id: i32) -> bool {
        self.saved[kind as usize].insert(id)
    }

    /// Writes a reference object and its cell.
    fn reference(&mut self, object: &Object<'_>) -> Result<()> {
        let at = PhysicalOffset(self.data.position);
        object.encode(&mut self.data)?;
        let (kind, id) = (object.kind(), object.reference_id().unwrap_or(-1));
        // The reference writer stores −1 relative to the block's payload.
        self.cell(IndexCell::Reference {
            kind,
            id,
            at,
            end: self.data_start as i64 - 1,
        })
    }
}

/// Writes blocks: reference objects on first use, tracepoints, cells.
struct Emitter<'a, D: Write, I: Write> {
    pool: &'a ReferencePool,
    data: Counting<&'a mut D>,
    index: &'a mut I,
    /// Ids written so far, per reference kind.
    saved: [HashSet<i32>; 8],
    /// Physical offset of the current block's first payload byte.
    data_start: u64,
    /// Event id and logical start of each open container.
    open: Vec<(EventId, u64)>,
}

impl<D: Write, I: Write> Emitter<'_, D, I> {
    fn cell(&mut self, cell: IndexCell) -> Result<()> {
        cell.encode(self.index)?;
        Ok(())
    }

    fn logical_position(&self) -> u64 {
        self.data.position - self.data_start
    }

    fn block(&mut self, thread: ThreadId, log: &ThreadLog) -> Result<()> {
        let block_start = self.data.position;
        Object::BlockStart(thread).encode(&mut self.data)?;
        self.data_start = self.data.position;
        self.reference(&Object::ThreadName(ThreadName {
            thread,
            name: log.name.clone(),
        }))?;
        for entry in &log.entries {
            match entry {
                Entry::Tracepoint(tracepoint) => self.tracepoint(tracepoint)?,
                Entry::Footer(footer) => self.footer(footer)?,
            }
        }
        let block_end = self.data.position;
        Object::BlockEnd.encode(&mut self.data)?;
        self.cell(IndexCell::Block {
            thread,
            start: PhysicalOffset(block_start),
            end: PhysicalOffset(block_end),
        })
    }

    fn tracepoint(&mut self, tracepoint: &Tracepoint<'_>) -> Result<()> {
        deps::before_tracepoint(self.pool, self, tracepoint)?;
        tracepoint.encode(&mut self.data)?;
        if tracepoint.is_container() {
            let start = self.logical_position();
            self.open.push((tracepoint.event(), start));
        }
        Ok(())
    }

    fn footer(&mut self, footer: &Footer<'_>) -> Result<()> {
        deps::before_footer(self.pool, self, footer)?;
        let footer_position = self.logical_position();
        footer.encode(&mut self.data)?;
        let (event, start) = self
            .open
            .pop()
            .ok_or_else(|| Error::internal("a footer without an open container"))?;
        self.cell(IndexCell::Container {
            event,
            start: LogicalOffset(start),
            end: LogicalOffset(footer_position),
        })
    }
}

/// The recorder of one thread of a [`DumpWriter`].
#[derive(Debug)]
pub struct DumpThread<'w> {
    writer: &'w mut DumpWriter,
    thread: ThreadId,
}

impl TraceRecorder for DumpWriter {
    type Thread<'r> = DumpThread<'r>;

    fn add_thread<'n>(&mut self, name: impl Into<JavaStr<'n>>) -> Result<ThreadId> {
        let name = name.into();
        check_str(&name, "thread name")?;
        let id = i32::try_from(self.threads.len())
            .map_err(|_| Error::limit("threads", self.threads.len(), i32::MAX))?;
        self.threads.push(ThreadLog {
            name: name.into_owned(),
            entries: Vec::new(),
            open: ContainerStack::default(),
        });
        Ok(ThreadId(id))
    }

    fn thread(&mut self, thread: ThreadId) -> Result<DumpThread<'_>> {
        self.thread_log(thread)?;
        Ok(DumpThread {
            writer: self,
            thread,
        })
    }
}

impl DumpThread<'_> {
    fn log(&self) -> Option<&ThreadLog> {
        usize::try_from(self.thread.0)
            .ok()
            .and_then(|index| self.writer.threads.get(index))
    }
}

impl BuildTarget for DumpThread<'_> {
    fn thread(&self) -> ThreadId {
        self.thread
    }

    fn open_depth(&self) -> usize {
        self.log().map_or(0, |log| log.open.depth())
    }

    fn pool(&self) -> &ReferencePool {
        &self.writer.pool
    }

    fn expect_open(&self, expected: TracepointType, action: &str) -> Result<OpenContainer> {
        match self.log() {
            Some(log) => log.open.expect(expected, action, self.thread),
            None => ContainerStack::default().expect(expected, action, self.thread),
        }
    }

    fn next_event(&mut self) -> Result<EventId> {
        self.writer.next_event_id()
    }

    fn add_tracepoint(&mut self, tracepoint: Tracepoint<'static>) -> Result<()> {
        self.writer.push_tracepoint(self.thread, &tracepoint)
    }

    fn add_footer(&mut self, footer: Footer<'static>) -> Result<()> {
        self.writer.push_footer(self.thread, &footer)
    }
}

#[cfg(any(test, feature = "generate"))]
impl PushRecorder for DumpThread<'_> {
    fn add_reference(&mut self, object: &Object<'_>) -> Result<()> {
        self.writer.add_reference(object)
    }

    fn push_tracepoint(&mut self, tracepoint: &Tracepoint<'_>) -> Result<()> {
        self.writer.push_tracepoint(self.thread, tracepoint)
    }

    fn push_footer(&mut self, footer: &Footer<'_>) -> Result<()> {
        self.writer.push_footer(self.thread, footer)
    }
}

/// Hands every reference object of `context` to `f`, kind by kind (classes,
/// methods, fields, variables, strings, access paths, code locations), for
/// a copy that keeps their ids.
pub(crate) fn for_each_reference(
    context: &TraceContext,
    mut f: impl FnMut(&Object<'_>) -> Result<()>,
) -> Result<()> {
    for &id in context.ids(ObjectKind::ClassDescriptor) {
        f(&Object::ClassDescriptor(
            context.class(ClassId(id))?.clone(),
        ))?;
    }
    for &id in context.ids(ObjectKind::MethodDescriptor) {
        f(&Object::MethodDescriptor(
            context.method(MethodId(id))?.clone(),
        ))?;
    }
    for &id in context.ids(ObjectKind::FieldDescriptor) {
        f(&Object::FieldDescriptor(
            context.field(FieldId(id))?.clone(),
        ))?;
    }
    for &id in context.ids(ObjectKind::VariableDescriptor) {
        f(&Object::VariableDescriptor(
            context.variable(VariableId(id))?.clone(),
        ))?;
    }
    for &id in context.ids(ObjectKind::String) {
        let value = context.string(StringId(id))?.clone();
        f(&Object::String(StringObject {
            id: StringId(id),
            value,
        }))?;
    }
    for &id in context.ids(ObjectKind::AccessPath) {
        f(&Object::AccessPath(
            context.access_path(AccessPathId(id))?.clone(),
        ))?;
    }
    for &id in context.ids(ObjectKind::CodeLocation) {
        f(&Object::CodeLocation(
            context.code_location(CodeLocationId(id))?.clone(),
        ))?;
    }
    Ok(())
}
