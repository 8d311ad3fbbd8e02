//! Synthetic traces of any size, for tests and benchmarks: a few threads,
//! each with a root call around one wide call whose children are a
//! pseudo-random mix of leaves, small calls, loops and call chains.
//!
//! The writer imitates the streaming recorder: per-thread block buffers
//! flushed when full (so blocks of threads interleave, calls span blocks,
//! and a container header can be a block's last object), reference objects
//! written before first use and rewritten by a thread that needs one not yet
//! on disk (so duplicates occur), and per block a `BLOCK_START` cell then
//! the block's cells, containers in post-order. It can also put block cells
//! last (as the dump writer does) and stop as a crashed recorder does.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::common::{
    ClassId, CodeLocationId, EventId, FieldId, LogicalOffset, MethodId, PhysicalOffset, StringId,
    ThreadId, VariableId,
};
use crate::format::index::encode_index_footer;
use crate::format::{DATA_MAGIC, INDEX_MAGIC, IndexCell, Object, ObjectKind, file_header};
use crate::model::{
    ClassDescriptor, CodeLocation, CodeLocationKind, DiffStatus, FieldDescriptor, Footer, JavaStr,
    MethodDescriptor, StringObject, ThreadName, Tracepoint, TracepointBody, TracepointHeader,
    TracepointType, Type, Value, VariableDescriptor,
};
use crate::read::index_path;

/// How a synthetic trace ends when it does not end normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crash {
    /// Whether to leave one half-written block at the end.
    pub half_written_block: bool,
}

/// The shape of a synthetic trace.
#[derive(Debug, Clone)]
pub struct SynthOptions {
    /// Recorded threads (ids 1, 4, 7, …).
    pub threads: usize,
    /// Approximate size of the data file.
    pub bytes: u64,
    /// Payload bytes after which a thread's block is flushed.
    pub block_bytes: usize,
    /// Seed of the pseudo-random choices.
    pub seed: u64,
    /// List each block's cell after the block's other cells (dump order).
    pub block_cell_last: bool,
    /// Stop like a crashed recorder: open calls keep no footer, buffered
    /// blocks are lost, no `EOF`, no index footer, no thread names.
    pub crash: Option<Crash>,
}

impl Default for SynthOptions {
    fn default() -> Self {
        SynthOptions {
            threads: 2,
            bytes: 1 << 20,
            block_bytes: 64 << 10,
            seed: 1,
            block_cell_last: false,
            crash: None,
        }
    }
}

/// Writes the trace to `path` and its index to `path.idx`.
pub fn write_files(options: &SynthOptions, path: &Path) -> io::Result<()> {
    let data = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let index = BufWriter::with_capacity(1 << 20, File::create(index_path(path))?);
    let (mut data, mut index) = Writer::new(options, data, index)?.run()?;
    data.flush()?;
    index.flush()
}

/// The trace of `options` as `dir/NAME.trace` (and `.idx`), generated
/// only when not already there (benchmarks and large tests reuse it).
pub fn cached(dir: &Path, name: &str, options: &SynthOptions) -> io::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{name}.trace"));
    if !path.exists() || !index_path(&path).exists() {
        // Written under another name first, so an interrupted run leaves
        // no half-written trace behind under the final name; a name of its
        // own per call, so that tests asking for the same trace at once
        // each write theirs and the last rename wins (same bytes).
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let partial = dir.join(format!("{name}.partial-{}-{call}", std::process::id()));
        write_files(options, &partial)?;
        std::fs::rename(index_path(&partial), index_path(&path))?;
        std::fs::rename(&partial, &path)?;
    }
    Ok(path)
}

/// The trace's data and index bytes.
pub fn generate(options: &SynthOptions) -> (Vec<u8>, Vec<u8>) {
    Writer::new(options, Vec::new(), Vec::new())
        .and_then(Writer::run)
        .expect("writing to memory does not fail")
}

/// A reference object of the fixed synthetic program, by kind and id.
type RefKey = (ObjectKind, i32);

const STRINGS: [&str; 7] = ["Main.kt", "Main", "main", "run", "step", "helper", "value"];

/// The object `key` and the objects it refers to.
fn reference(key: RefKey) -> (Object<'static>, Vec<RefKey>) {
    let (kind, id) = key;
    let s = |text: &str| JavaStr::new(text);
    match kind {
        ObjectKind::String => (
            Object::String(StringObject {
                id: StringId(id),
                value: s(STRINGS[id as usize]),
            }),
            vec![],
        ),
        ObjectKind::ClassDescriptor => (
            Object::ClassDescriptor(ClassDescriptor {
                id: ClassId(id),
                name: s(["Main", "Cell", "[I"][id as usize]),
            }),
            vec![],
        ),
        ObjectKind::MethodDescriptor => {
            let (class, name, parameters) = [
                (0, "main", vec![]),
                (0, "run", vec![Type::Int]),
                (
                    0,
                    "step",
                    vec![Type::Int, Type::Object(s("java.lang.String"))],
                ),
                (1, "helper", vec![]),
            ][id as usize]
                .clone();
            (
                Object::MethodDescriptor(MethodDescriptor {
                    id: MethodId(id),
                    class: ClassId(class),
                    name: s(name),
                    return_type: if id == 0 { Type::Void } else { Type::Int },
                    parameter_types: parameters,
                }),
                vec![(ObjectKind::ClassDescriptor, class)],
            )
        }
        ObjectKind::FieldDescriptor => (
            Object::FieldDescriptor(FieldDescriptor {
                id: FieldId(id),
                class: ClassId(1),
                name: s("value"),
                field_type: Type::Int,
                is_static: false,
                is_final: false,
                is_volatile: id == 1,
            }),
            vec![(ObjectKind::ClassDescriptor, 1)],
        ),
        ObjectKind::VariableDescriptor => (
            Object::VariableDescriptor(VariableDescriptor {
                id: VariableId(id),
                name: s("i"),
                variable_type: Type::Int,
            }),
            vec![],
        ),
        ObjectKind::CodeLocation => {
            let method = [2, 3, 3, 3, 4, 4, 5, 5][id as usize];
            (
                Object::CodeLocation(CodeLocation {
                    kind: CodeLocationKind::Line,
                    id: CodeLocationId(id),
                    file_name: StringId(0),
                    class_name: StringId(1),
                    method_name: StringId(method),
                    line: 10 + id,
                    access_path: None,
                    argument_paths: vec![],
                    locals: vec![],
                }),
                vec![
                    (ObjectKind::String, 0),
                    (ObjectKind::String, 1),
                    (ObjectKind::String, method),
                ],
            )
        }
        _ => unreachable!("the synthetic program has no {kind}"),
    }
}

/// A cell waiting for its block's physical position.
enum PendingCell {
    /// A reference object at this payload offset.
    Reference(ObjectKind, i32, usize),
    /// A finished container.
    Container(IndexCell),
}

struct ThreadBuffer {
    id: ThreadId,
    payload: Vec<u8>,
    cells: Vec<PendingCell>,
    /// Logical offset of `payload[0]`.
    base: u64,
    /// Open containers: type, event id, content start.
    open: Vec<(TracepointType, i32, u64)>,
    in_block: HashSet<RefKey>,
}

impl ThreadBuffer {
    fn logical(&self) -> u64 {
        self.base + self.payload.len() as u64
    }
}

struct Writer<'o, D: Write, I: Write> {
    options: &'o SynthOptions,
    data: D,
    index: I,
    position: u64,
    threads: Vec<ThreadBuffer>,
    on_disk: HashSet<RefKey>,
    next_event: i32,
    rng: u64,
}

impl<'o, D: Write, I: Write> Writer<'o, D, I> {
    fn new(options: &'o SynthOptions, mut data: D, mut index: I) -> io::Result<Self> {
        data.write_all(&file_header(DATA_MAGIC))?;
        index.write_all(&file_header(INDEX_MAGIC))?;
        let threads = (0..options.threads.max(1))
            .map(|i| ThreadBuffer {
                id: ThreadId(1 + 3 * i as i32),
                payload: Vec::with_capacity(options.block_bytes + 4096),
                cells: Vec::new(),
                base: 0,
                open: Vec::new(),
                in_block: HashSet::new(),
            })
            .collect();
        Ok(Writer {
            options,
            data,
            index,
            position: 16,
            threads,
            on_disk: HashSet::new(),
            next_event: 100,
            rng: options.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        })
    }

    fn random(&mut self, below: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % below.max(1)
    }

    fn written(&self) -> u64 {
        self.position
            + self
                .threads
                .iter()
                .map(|t| t.payload.len() as u64)
                .sum::<u64>()
    }

    fn run(mut self) -> io::Result<(D, I)> {
        let count = self.threads.len();
        for t in 0..count {
            self.enter(t, 0, 0, vec![])?;
            self.enter(t, 1, 1, vec![Value::Int(t as i32)])?;
        }
        while self.written() < self.options.bytes {
            let t = self.random(count as u64) as usize;
            self.item(t)?;
        }
        if let Some(crash) = self.options.crash {
            if crash.half_written_block {
                let thread = &self.threads[0];
                let half = thread.payload.len() / 2;
                self.data.put_block_start(thread.id)?;
                self.data.write_all(&thread.payload[..half])?;
            }
            return Ok((self.data, self.index));
        }
        for t in 0..count {
            self.leaf(t, 3)?;
            self.exit(
                t,
                Footer::MethodCall {
                    result: Value::Void,
                    exception: JavaStr::new(""),
                },
            )?;
            self.exit(
                t,
                Footer::MethodCall {
                    result: Value::Void,
                    exception: JavaStr::new(""),
                },
            )?;
            self.flush(t)?;
        }
        // Names last, in one extra block per thread, as the streaming writer does.
        for t in 0..count {
            let id = self.threads[t].id;
            let name = Object::ThreadName(ThreadName {
                thread: id,
                name: JavaStr::new(&format!("worker-{t}")),
            });
            self.object(t, &name)?;
            self.flush(t)?;
        }
        self.data.write_all(&[ObjectKind::Eof as u8])?;
        encode_index_footer(&mut self.index, -1, -1)?;
        Ok((self.data, self.index))
    }

    /// One child of the wide call.
    fn item(&mut self, t: usize) -> io::Result<()> {
        match self.random(100) {
            0..=59 => {
                let location = self.random(3) as i32 + 2;
                self.leaf(t, location)
            }
            60..=84 => {
                self.enter(
                    t,
                    2,
                    5,
                    vec![Value::Int(7), Value::String(JavaStr::new("step"))],
                )?;
                let children = self.random(4);
                for _ in 0..children {
                    self.leaf(t, 2)?;
                }
                let threw = self.random(10) == 0;
                self.exit(
                    t,
                    Footer::MethodCall {
                        result: if threw { Value::Null } else { Value::Int(1) },
                        exception: JavaStr::new(if threw { "IllegalStateException" } else { "" }),
                    },
                )
            }
            85..=94 => {
                self.open_container(t, TracepointBody::Loop { loop_id: 1 }, 6)?;
                let iterations = 1 + self.random(3) as i32;
                for iteration in 0..iterations {
                    let body = TracepointBody::LoopIteration {
                        loop_id: 1,
                        iteration,
                    };
                    self.open_container(t, body, 6)?;
                    self.leaf(t, 3)?;
                    self.exit(t, Footer::LoopIteration)?;
                }
                self.exit(t, Footer::Loop { iterations })
            }
            _ => {
                let depth = 2 + self.random(4);
                for _ in 0..depth {
                    self.enter(t, 3, 7, vec![])?;
                    self.leaf(t, 4)?;
                }
                for _ in 0..depth {
                    self.exit(
                        t,
                        Footer::MethodCall {
                            result: Value::Int(2),
                            exception: JavaStr::new(""),
                        },
                    )?;
                }
                Ok(())
            }
        }
    }

    fn header(
        &mut self,
        t: usize,
        tracepoint_type: TracepointType,
        location: i32,
    ) -> TracepointHeader {
        self.next_event += 1 + if self.random(4) == 0 { 3 } else { 0 };
        TracepointHeader {
            tracepoint_type,
            code_location: CodeLocationId(location),
            thread: self.threads[t].id,
            event: EventId(self.next_event),
            diff_status: DiffStatus::None,
        }
    }

    fn need(&mut self, t: usize, key: RefKey) -> io::Result<()> {
        if self.on_disk.contains(&key) || self.threads[t].in_block.contains(&key) {
            return Ok(());
        }
        let (object, dependencies) = reference(key);
        for dependency in dependencies {
            self.need(t, dependency)?;
        }
        let thread = &mut self.threads[t];
        thread
            .cells
            .push(PendingCell::Reference(key.0, key.1, thread.payload.len()));
        thread.in_block.insert(key);
        object.encode(&mut thread.payload)
    }

    fn tracepoint(&mut self, t: usize, tracepoint: Tracepoint<'_>) -> io::Result<()> {
        self.need(
            t,
            (ObjectKind::CodeLocation, tracepoint.header.code_location.0),
        )?;
        match &tracepoint.body {
            TracepointBody::MethodCall { method, .. } => {
                self.need(t, (ObjectKind::MethodDescriptor, method.0))?;
                self.need(t, (ObjectKind::ClassDescriptor, 0))?;
            }
            TracepointBody::WriteField { field, .. } => {
                self.need(t, (ObjectKind::FieldDescriptor, field.0))?;
                self.need(t, (ObjectKind::ClassDescriptor, 1))?;
            }
            TracepointBody::ReadLocal { variable, .. } => {
                self.need(t, (ObjectKind::VariableDescriptor, variable.0))?;
            }
            TracepointBody::WriteArray { .. } => self.need(t, (ObjectKind::ClassDescriptor, 2))?,
            _ => {}
        }
        if tracepoint.is_container() {
            let thread = &mut self.threads[t];
            tracepoint.encode(&mut thread.payload)?;
            let start = thread.logical();
            thread
                .open
                .push((tracepoint.tracepoint_type(), tracepoint.event().0, start));
            self.maybe_flush(t)
        } else {
            self.object(t, &Object::Tracepoint(tracepoint))
        }
    }

    fn enter(
        &mut self,
        t: usize,
        method: i32,
        location: i32,
        arguments: Vec<Value<'_>>,
    ) -> io::Result<()> {
        let header = self.header(t, TracepointType::MethodCall, location);
        let receiver = Value::Object {
            class: ClassId(0),
            identity_hash: 17,
            fields: vec![],
        };
        self.tracepoint(
            t,
            Tracepoint {
                header,
                child_diff_statuses: vec![],
                body: TracepointBody::MethodCall {
                    method: MethodId(method),
                    receiver,
                    arguments,
                    flags: 0,
                },
            },
        )
    }

    fn open_container(
        &mut self,
        t: usize,
        body: TracepointBody<'_>,
        location: i32,
    ) -> io::Result<()> {
        let kind = match body {
            TracepointBody::Loop { .. } => TracepointType::Loop,
            _ => TracepointType::LoopIteration,
        };
        let header = self.header(t, kind, location);
        self.tracepoint(
            t,
            Tracepoint {
                header,
                child_diff_statuses: vec![],
                body,
            },
        )
    }

    fn leaf(&mut self, t: usize, location: i32) -> io::Result<()> {
        let value = Value::Int(self.random(1000) as i32);
        let hash = self.random(1 << 30) as i32;
        let (kind, body) = match location % 3 {
            0 => (
                TracepointType::ReadLocal,
                TracepointBody::ReadLocal {
                    variable: VariableId(0),
                    value,
                },
            ),
            1 => (
                TracepointType::WriteField,
                TracepointBody::WriteField {
                    field: FieldId(self.random(2) as i32),
                    receiver: Value::Object {
                        class: ClassId(1),
                        identity_hash: hash,
                        fields: vec![],
                    },
                    value,
                },
            ),
            _ => (
                TracepointType::WriteArray,
                TracepointBody::WriteArray {
                    array: Value::Array {
                        class: ClassId(2),
                        identity_hash: hash,
                        elements: vec![],
                        total_size: 10,
                    },
                    index: self.random(10) as i32,
                    value,
                },
            ),
        };
        let header = self.header(t, kind, location);
        self.tracepoint(
            t,
            Tracepoint {
                header,
                child_diff_statuses: vec![],
                body,
            },
        )
    }

    fn exit(&mut self, t: usize, footer: Footer<'_>) -> io::Result<()> {
        let thread = &mut self.threads[t];
        let (_, event, start) = thread.open.pop().expect("exit matches an enter");
        let cell = IndexCell::Container {
            event: EventId(event),
            start: LogicalOffset(start),
            end: LogicalOffset(thread.logical()),
        };
        thread.cells.push(PendingCell::Container(cell));
        self.object(t, &Object::Footer(footer))
    }

    fn object(&mut self, t: usize, object: &Object<'_>) -> io::Result<()> {
        object.encode(&mut self.threads[t].payload)?;
        self.maybe_flush(t)
    }

    fn maybe_flush(&mut self, t: usize) -> io::Result<()> {
        if self.threads[t].payload.len() >= self.options.block_bytes {
            self.flush(t)?;
        }
        Ok(())
    }

    fn flush(&mut self, t: usize) -> io::Result<()> {
        let thread = &mut self.threads[t];
        if thread.payload.is_empty() {
            return Ok(());
        }
        let start = self.position;
        let payload_start = start + 5;
        let end = payload_start + thread.payload.len() as u64;
        self.data.put_block_start(thread.id)?;
        self.data.write_all(&thread.payload)?;
        self.data.write_all(&[ObjectKind::BlockEnd as u8])?;
        let block_cell = IndexCell::Block {
            thread: thread.id,
            start: PhysicalOffset(start),
            end: PhysicalOffset(end),
        };
        if !self.options.block_cell_last {
            block_cell.encode(&mut self.index)?;
        }
        for cell in thread.cells.drain(..) {
            let cell = match cell {
                PendingCell::Reference(kind, id, at) => IndexCell::Reference {
                    kind,
                    id,
                    at: PhysicalOffset(payload_start + at as u64),
                    end: -1,
                },
                PendingCell::Container(cell) => cell,
            };
            cell.encode(&mut self.index)?;
        }
        if self.options.block_cell_last {
            block_cell.encode(&mut self.index)?;
        }
        self.position = end + 1;
        thread.base += thread.payload.len() as u64;
        thread.payload.clear();
        self.on_disk.extend(thread.in_block.drain());
        Ok(())
    }
}

trait PutBlockStart: Write {
    fn put_block_start(&mut self, thread: ThreadId) -> io::Result<()> {
        self.write_all(&[ObjectKind::BlockStart as u8])?;
        self.write_all(&thread.0.to_be_bytes())
    }
}

impl<W: Write> PutBlockStart for W {}
