//! Synthetic traces of a chosen shape, deterministic for a seed, recorded
//! through any [`PushRecorder`]: the source of the benchmarks' multi-GB
//! traces and of `tracetree gen` (through [`generate_file`](super::generate_file)).
//!
//! The generator interns its vocabulary (classes, methods, fields,
//! variables, code locations) once, as reference objects with fixed ids,
//! and pushes tracepoints that carry those ids: recording by name would
//! intern every tracepoint's specs again and cost several times the
//! writer's own work.
//!
//! Shapes:
//! - [`Shape::Mixed`]: like a recorded program: calls with arguments and
//!   results of their methods' types, field and local reads and writes,
//!   array writes, loops of one to three iterations (the recorder makes a
//!   loop's tracepoint at its first iteration, so never writes an empty
//!   one), objects and strings; moderate depth and fan-out.
//! - [`Shape::Wide`]: one call with as many direct children as the size allows.
//! - [`Shape::Deep`]: recursion [`DEEP_RECURSION`] calls deep, repeated.
//! - [`Shape::Threads`]: the mixed shape, meant for many threads and small blocks.

use std::fmt;
use std::str::FromStr;

use crate::common::{
    AccessPathId, ClassId, CodeLocationId, EventId, FieldId, MethodId, StringId, ThreadId,
    VariableId,
};
use crate::error::{Error, Result};
use crate::format::Object;
use crate::model::{
    AccessLocation, AccessPath, ClassDescriptor, CodeLocation, CodeLocationKind, DiffStatus,
    FieldDescriptor, Footer, JavaStr, LocalKind, LocalName, MethodDescriptor, StringObject,
    Tracepoint, TracepointBody, TracepointHeader, TracepointType, Type, Value, VariableDescriptor,
};
use crate::write::{PushRecorder, StreamingThread, ThreadBatch, ThreadRecorder};

const DEEP_RECURSION: usize = Shape::DEEP_RECURSION;

/// The shape of a generated trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A realistic mix of tracepoints.
    Mixed,
    /// One call with a huge number of direct children.
    Wide,
    /// Very deep recursion.
    Deep,
    /// The mixed shape for many interleaved threads.
    Threads,
}

impl Shape {
    /// How deep [`Shape::Deep`] recurses before unwinding.
    pub const DEEP_RECURSION: usize = 200_000;
}

impl FromStr for Shape {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Ok(match s {
            "mixed" => Shape::Mixed,
            "wide" => Shape::Wide,
            "deep" => Shape::Deep,
            "threads" => Shape::Threads,
            other => {
                return Err(format!(
                    "unknown shape {other:?} (mixed, wide, deep, threads)"
                ));
            }
        })
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Shape::Mixed => "mixed",
            Shape::Wide => "wide",
            Shape::Deep => "deep",
            Shape::Threads => "threads",
        })
    }
}

/// Parses a size such as `100MB`, `1.5GB`, `4096` (bytes; units KB, MB, GB,
/// TB are powers of 1024).
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let upper = text.trim().to_ascii_uppercase();
    let split = upper
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(upper.len());
    let (number, unit) = upper.split_at(split);
    let number: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("not a size: {text:?} (try 100MB or 10GB)"))?;
    let unit: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        other => return Err(format!("unknown size unit {other:?} in {text:?}")),
    };
    if !(number >= 0.0 && number.is_finite()) {
        return Err(format!("not a size: {text:?}"));
    }
    let bytes = number * unit as f64;
    // 2^64 bytes and over do not fit (a cast would saturate silently).
    if bytes >= u64::MAX as f64 {
        return Err(format!("{text:?} is more bytes than a 64-bit count holds"));
    }
    Ok(bytes as u64)
}

/// SplitMix64: a small generator whose output is fixed for a seed forever
/// (a library RNG may change its stream between versions, and generated
/// traces must stay identical for a seed).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent / 100`.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

// The generator's reference objects, by id (each kind numbered from 0).
const THREAD_CLASS: ClassId = ClassId(0);
const ITEM: ClassId = ClassId(1);
const WORKER: ClassId = ClassId(2);
const WORKER_KT: ClassId = ClassId(3);
const INT_ARRAY: ClassId = ClassId(4);

const RUN: MethodId = MethodId(0);
const PROCESS: MethodId = MethodId(1);
const COMPUTE: MethodId = MethodId(2);
const FILL: MethodId = MethodId(3);
const RECURSE: MethodId = MethodId(4);
const NAME_OF: MethodId = MethodId(5);
const ITEM_AT: MethodId = MethodId(6);

const VALUE_FIELD: FieldId = FieldId(0);
const COUNT_FIELD: FieldId = FieldId(1);
const NAME_FIELD: FieldId = FieldId(2);

const I: VariableId = VariableId(0);
const SUM: VariableId = VariableId(1);
const ITEMS: VariableId = VariableId(2);
const ITEM_VARIABLE: VariableId = VariableId(3);

const CALL_SITE: CodeLocationId = CodeLocationId(0);
const FIELD_SITE: CodeLocationId = CodeLocationId(1);
const STATIC_SITE: CodeLocationId = CodeLocationId(2);
const LOCAL_SITE: CodeLocationId = CodeLocationId(3);
const ARRAY_SITE: CodeLocationId = CodeLocationId(4);
const LOOP_SITE: CodeLocationId = CodeLocationId(5);
/// The root call's location: unknown.
const NO_SITE: CodeLocationId = CodeLocationId(-1);

/// The classes, methods, fields, variables, strings, access paths and code
/// locations a generated program uses, with the ids above: a `bench.Worker`
/// processing `bench.Item`s in `Worker.kt`.
// Long: one table of reference objects, read top to bottom.
fn vocabulary() -> Vec<Object<'static>> {
    let text = JavaStr::new;
    let class = |id, name| {
        Object::ClassDescriptor(ClassDescriptor {
            id,
            name: text(name),
        })
    };
    let method = |id, class, name, parameter_types, return_type| {
        Object::MethodDescriptor(MethodDescriptor {
            id,
            class,
            name: text(name),
            return_type,
            parameter_types,
        })
    };
    let field = |id, class, name, field_type, is_static| {
        Object::FieldDescriptor(FieldDescriptor {
            id,
            class,
            name: text(name),
            field_type,
            is_static,
            is_final: false,
            is_volatile: false,
        })
    };
    let variable = |id, name, variable_type| {
        Object::VariableDescriptor(VariableDescriptor {
            id,
            name: text(name),
            variable_type,
        })
    };
    let string = |id, value| {
        Object::String(StringObject {
            id: StringId(id),
            value: text(value),
        })
    };
    let path = |id, variable| {
        Object::AccessPath(AccessPath {
            id: AccessPathId(id),
            locations: vec![AccessLocation::Local(variable)],
        })
    };
    // Strings 0–4: "Worker.kt", "bench.Worker", "process", "this", "i".
    let location = |id, kind, line, access_path, argument_paths, locals| {
        Object::CodeLocation(CodeLocation {
            kind,
            id,
            file_name: StringId(0),
            class_name: StringId(1),
            method_name: StringId(2),
            line,
            access_path,
            argument_paths,
            locals,
        })
    };
    let access = |id, line, access_path| {
        let locals = vec![
            LocalName {
                name: StringId(3),
                kind: LocalKind::This,
            },
            LocalName {
                name: StringId(4),
                kind: LocalKind::Variable,
            },
        ];
        location(
            id,
            CodeLocationKind::Access,
            line,
            access_path,
            Vec::new(),
            locals,
        )
    };
    let item = || Type::Object(text("bench.Item"));
    vec![
        class(THREAD_CLASS, "java.lang.Thread"),
        class(ITEM, "bench.Item"),
        class(WORKER, "bench.Worker"),
        class(WORKER_KT, "bench.WorkerKt"),
        class(INT_ARRAY, "[I"),
        method(RUN, THREAD_CLASS, "run", vec![], Type::Void),
        method(
            PROCESS,
            WORKER,
            "process",
            vec![item(), Type::Int],
            Type::Long,
        ),
        method(COMPUTE, WORKER_KT, "compute", vec![Type::Int], Type::Int),
        method(FILL, WORKER, "fill", vec![], Type::Void),
        method(RECURSE, WORKER_KT, "recurse", vec![Type::Int], Type::Int),
        method(
            NAME_OF,
            WORKER_KT,
            "nameOf",
            vec![Type::Int],
            Type::Object(text("java.lang.String")),
        ),
        method(ITEM_AT, WORKER, "itemAt", vec![Type::Int], item()),
        field(VALUE_FIELD, ITEM, "value", Type::Int, false),
        field(COUNT_FIELD, WORKER, "count", Type::Long, true),
        field(
            NAME_FIELD,
            ITEM,
            "name",
            Type::Object(text("java.lang.String")),
            false,
        ),
        variable(I, "i", Type::Int),
        variable(SUM, "sum", Type::Long),
        variable(ITEMS, "items", Type::Array(Box::new(Type::Int))),
        variable(ITEM_VARIABLE, "item", item()),
        string(0, "Worker.kt"),
        string(1, "bench.Worker"),
        string(2, "process"),
        string(3, "this"),
        string(4, "i"),
        path(0, I),
        path(1, ITEM_VARIABLE),
        path(2, ITEMS),
        location(
            CALL_SITE,
            CodeLocationKind::MethodCall,
            12,
            None,
            vec![Some(AccessPathId(0))],
            Vec::new(),
        ),
        access(FIELD_SITE, 20, Some(AccessPathId(1))),
        // A static field has no owner: no access path.
        access(STATIC_SITE, 21, None),
        access(LOCAL_SITE, 22, None),
        access(ARRAY_SITE, 23, Some(AccessPathId(2))),
        access(LOOP_SITE, 24, None),
    ]
}

fn object(class: ClassId, identity_hash: i32) -> Value<'static> {
    Value::Object {
        class,
        identity_hash,
        fields: Vec::new(),
    }
}

/// A call's footer: returned `result`.
fn returned(result: Value<'_>) -> Footer<'_> {
    Footer::MethodCall {
        result,
        exception: JavaStr::from_validated(b""),
    }
}

/// Pushes one thread's tracepoints with their ids, numbering events and
/// counting open containers.
///
/// Its pushes are inlined where the generator builds each kind of
/// tracepoint: the encoder and the drop then see the body's variant (and
/// the values') where it is built, instead of matching on them once more
/// per tracepoint; and a call's arguments are collected in one vector,
/// taken back after each call (no allocation per call). What it pushed is
/// then forgotten, not dropped ([`forget_pushed`]).
struct Emitter<'r, R> {
    out: &'r mut R,
    thread: ThreadId,
    /// The next event id.
    next_event: i64,
    /// Added to the event id after each tracepoint: the number of threads.
    event_stride: i64,
    /// Containers open.
    depth: usize,
    /// An open container's footer's bytes, about.
    footer_len: u64,
    /// The memory of the last call's arguments, empty.
    arguments: Vec<Value<'static>>,
}

impl<R: Pushes> Emitter<'_, R> {
    /// Pushes a tracepoint of the body `body` makes; `taken` takes what it
    /// must keep of the tracepoint (a call's arguments) before the rest is
    /// forgotten. Built here, where it is pushed from, and the body made in
    /// its place: a body made before and moved in, or given back to the
    /// caller, would be copied once more.
    #[inline(always)]
    fn push<'b>(
        &mut self,
        tracepoint_type: TracepointType,
        code_location: CodeLocationId,
        body: impl FnOnce() -> TracepointBody<'b>,
        taken: impl FnOnce(&mut Self, &mut TracepointBody<'b>),
    ) -> Result<()> {
        let Ok(event) = i32::try_from(self.next_event) else {
            return Err(too_many_events(self.next_event));
        };
        self.next_event += self.event_stride;
        let mut tracepoint = Tracepoint {
            header: TracepointHeader {
                tracepoint_type,
                code_location,
                thread: self.thread,
                event: EventId(event),
                diff_status: DiffStatus::None,
            },
            child_diff_statuses: Vec::new(),
            body: body(),
        };
        self.out.push_tracepoint(&tracepoint)?;
        if tracepoint_type.is_container() {
            self.depth += 1;
        }
        taken(self, &mut tracepoint.body);
        forget_pushed(tracepoint);
        Ok(())
    }

    /// Pushes a leaf or a container other than a call, of the body `body`
    /// makes.
    #[inline(always)]
    fn add<'b>(
        &mut self,
        tracepoint_type: TracepointType,
        code_location: CodeLocationId,
        body: impl FnOnce() -> TracepointBody<'b>,
    ) -> Result<()> {
        self.push(tracepoint_type, code_location, body, |_, _| {})
    }

    /// Asks `stop` with the bytes the open containers' footers will take.
    fn stopped(&self, stop: &mut impl FnMut(&R, u64) -> bool) -> bool {
        stop(self.out, self.depth as u64 * self.footer_len)
    }

    #[inline(always)]
    fn exit(&mut self, footer: Footer<'_>) -> Result<()> {
        self.out.push_footer(&footer)?;
        forget_pushed(footer);
        self.depth -= 1;
        Ok(())
    }

    #[inline(always)]
    fn enter_call<const N: usize>(
        &mut self,
        at: CodeLocationId,
        method: MethodId,
        receiver: Value<'static>,
        arguments: [Value<'static>; N],
    ) -> Result<()> {
        let mut collected = std::mem::take(&mut self.arguments);
        collected.extend(arguments);
        let body = || TracepointBody::MethodCall {
            method,
            receiver,
            arguments: collected,
            flags: 0,
        };
        self.push(TracepointType::MethodCall, at, body, |emitter, body| {
            if let TracepointBody::MethodCall { arguments, .. } = body {
                arguments.drain(..).for_each(forget_pushed);
                emitter.arguments = std::mem::take(arguments);
            }
        })
    }

    #[inline(always)]
    fn write_local(&mut self, variable: VariableId, value: Value<'_>) -> Result<()> {
        let body = || TracepointBody::WriteLocal { variable, value };
        self.add(TracepointType::WriteLocal, LOCAL_SITE, body)
    }
}

/// Forgets a body, footer or value the generator pushed rather than
/// dropping it: the generator's values own no memory (their vectors are
/// empty, their strings borrowed; a call's arguments are taken back
/// first), so nothing is left unfreed, and their drop would match on every
/// value once more (a sixth of the generator's instructions).
#[inline(always)]
fn forget_pushed<T>(pushed: T) {
    std::mem::forget(pushed);
}

#[cold]
fn too_many_events(next_event: i64) -> Error {
    Error::limit(
        "event ids (generate fewer tracepoints)",
        next_event,
        i32::MAX,
    )
}

/// What the generator records into: any [`PushRecorder`], or a streaming
/// thread's [`ThreadBatch`] (its buffer held for the whole run).
trait Pushes {
    fn thread_id(&self) -> ThreadId;
    fn add_reference(&mut self, object: &Object<'_>) -> Result<()>;
    fn push_tracepoint(&mut self, tracepoint: &Tracepoint<'_>) -> Result<()>;
    fn push_footer(&mut self, footer: &Footer<'_>) -> Result<()>;
}

impl<R: PushRecorder> Pushes for R {
    fn thread_id(&self) -> ThreadId {
        ThreadRecorder::thread_id(self)
    }
    fn add_reference(&mut self, object: &Object<'_>) -> Result<()> {
        PushRecorder::add_reference(self, object)
    }
    #[inline]
    fn push_tracepoint(&mut self, tracepoint: &Tracepoint<'_>) -> Result<()> {
        PushRecorder::push_tracepoint(self, tracepoint)
    }
    #[inline]
    fn push_footer(&mut self, footer: &Footer<'_>) -> Result<()> {
        PushRecorder::push_footer(self, footer)
    }
}

impl Pushes for ThreadBatch<'_> {
    fn thread_id(&self) -> ThreadId {
        ThreadBatch::thread_id(self)
    }
    fn add_reference(&mut self, object: &Object<'_>) -> Result<()> {
        ThreadBatch::add_reference(self, object)
    }
    #[inline(always)]
    fn push_tracepoint(&mut self, tracepoint: &Tracepoint<'_>) -> Result<()> {
        ThreadBatch::push_tracepoint(self, tracepoint)
    }
    #[inline(always)]
    fn push_footer(&mut self, footer: &Footer<'_>) -> Result<()> {
        ThreadBatch::push_footer(self, footer)
    }
}

/// Records one thread of a generated trace.
pub struct ThreadGenerator {
    shape: Shape,
    rng: SplitMix64,
    thread: u64,
    threads: u64,
    steps: u64,
    /// Scratch space for string values.
    text: String,
}

/// Steps between two checks of [`ThreadGenerator::run`]'s stop condition.
const STOP_CHECK_INTERVAL: u64 = 256;

/// Steps between two checks of [`ThreadGenerator::run_until`]'s: the
/// thread's length is one uncontended lock away, and a check every 16
/// tracepoints (~500 bytes) ends a thread within that of its share.
const SIZE_CHECK_INTERVAL: u64 = 16;

impl ThreadGenerator {
    /// A generator for thread number `thread` (0-based) of `threads` of a
    /// trace of `shape` seeded by `seed`. Its event ids are `thread`,
    /// `thread + threads`, `thread + 2 × threads`, …: unique in the trace,
    /// ascending in the thread, and independent of how the threads'
    /// recording interleaves.
    pub fn new(shape: Shape, seed: u64, thread: u64, threads: u64) -> Self {
        ThreadGenerator {
            shape,
            rng: SplitMix64(seed ^ thread.wrapping_mul(0xD1B5_4A32_D192_ED03)),
            thread,
            threads: threads.max(thread + 1),
            steps: 0,
            text: String::new(),
        }
    }

    /// Adds the generator's reference objects to `recorder` (a
    /// [`DumpThread`](crate::write::DumpThread) or a
    /// [`StreamingThread`]; their ids are fixed, numbered from 0 in each
    /// kind: the trace must hold no other objects with those ids), then
    /// records a root call and its subtree
    /// until `stop` (asked every few hundred tracepoints) says enough, and
    /// closes every container it opened.
    ///
    /// For a seed, thread number and shape, the thread's tracepoints (ids
    /// included) are a prefix of one fixed sequence; `stop` chooses where
    /// it ends.
    // The writers' id-keeping path is the crate's own: callers name the
    // writers' threads, which implement it.
    #[allow(private_bounds)]
    pub fn run(
        &mut self,
        recorder: &mut impl PushRecorder,
        mut stop: impl FnMut() -> bool,
    ) -> Result<()> {
        self.record::<_, STOP_CHECK_INTERVAL>(recorder, |_, _| stop())
    }

    /// [`run`](Self::run) into a streaming writer's thread, until `stop`
    /// says enough when given the thread's projected length: the payload
    /// bytes it recorded ([`StreamingThread::recorded_bytes`]) plus those
    /// the footers of its open containers will take. `stop` is asked every
    /// 16 tracepoints, so a thread told to stop at a length ends within a
    /// few hundred bytes of it (and of the deep shape's unwinding).
    pub fn run_until(
        &mut self,
        recorder: &mut StreamingThread,
        mut stop: impl FnMut(u64) -> bool,
    ) -> Result<()> {
        // One lock of the thread's buffer for the whole run, not one per push.
        let mut batch = recorder.batch()?;
        self.record::<_, SIZE_CHECK_INTERVAL>(&mut batch, |batch, closing| {
            stop(batch.recorded_bytes() + closing)
        })
    }

    /// Records the thread, asking `stop` every `INTERVAL` steps with the
    /// recorder and the bytes needed to close the open containers. A
    /// constant: the test each step is then a mask or a multiplication, not
    /// a division.
    fn record<R: Pushes, const INTERVAL: u64>(
        &mut self,
        recorder: &mut R,
        mut stop: impl FnMut(&R, u64) -> bool,
    ) -> Result<()> {
        for object in vocabulary() {
            recorder.add_reference(&object)?;
        }
        let thread = recorder.thread_id();
        let mut out = Emitter {
            out: recorder,
            thread,
            next_event: self.thread as i64,
            event_stride: i64::try_from(self.threads)
                .map_err(|_| Error::limit("threads", self.threads, i64::MAX))?,
            depth: 0,
            // The deep shape's many calls return ints; the others' few
            // containers are counted at the largest footer.
            arguments: Vec::new(),
            footer_len: returned(match self.shape {
                Shape::Deep => Value::Int(1),
                _ => Value::Long(0),
            })
            .encoded_len()
            .unwrap_or(16) as u64,
        };
        let thread_object = object(THREAD_CLASS, (self.rng.next() >> 33) as i32);
        out.enter_call(NO_SITE, RUN, thread_object, [])?;
        let steps = &mut self.steps;
        let mut stopped = |recorder: &R, closing: u64| {
            *steps += 1;
            steps.is_multiple_of(INTERVAL) && stop(recorder, closing)
        };
        let (rng, text) = (&mut self.rng, &mut self.text);
        match self.shape {
            Shape::Mixed | Shape::Threads => mixed(&mut out, rng, text, &mut stopped)?,
            Shape::Wide => wide(&mut out, rng, &mut stopped)?,
            Shape::Deep => deep(&mut out, &mut stopped)?,
        }
        out.exit(returned(Value::Void))
    }
}

fn item(rng: &mut SplitMix64) -> Value<'static> {
    object(ITEM, (rng.next() >> 33) as i32)
}

/// `prefix` and a number, in `text`, as a string value.
fn string_value<'t>(text: &'t mut String, prefix: &str, number: u64) -> Value<'t> {
    text.clear();
    text.push_str(prefix);
    // The number's decimal digits, as `{number}` writes them, without the
    // formatting machinery (a tenth of the tracepoints carry one).
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = number;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    text.extend(digits[at..].iter().map(|&digit| char::from(digit)));
    // ASCII without NUL is modified UTF-8 as it is.
    Value::String(JavaStr::from_validated(text.as_bytes()))
}

// Long: one weighted choice among every kind of tracepoint, kept in one match
// so the weights read side by side.
fn mixed<R: Pushes>(
    out: &mut Emitter<'_, R>,
    rng: &mut SplitMix64,
    text: &mut String,
    stopped: &mut impl FnMut(&R, u64) -> bool,
) -> Result<()> {
    const MAX_DEPTH: usize = 12;
    // The methods of the open calls, innermost last.
    let mut calls: Vec<MethodId> = Vec::with_capacity(MAX_DEPTH);
    while !out.stopped(stopped) {
        match rng.below(100) {
            0..=17 if calls.len() < MAX_DEPTH => {
                let n = Value::Int(rng.below(1000) as i32);
                let method = match rng.below(10) {
                    0 => NAME_OF,
                    1 => ITEM_AT,
                    2..=5 => PROCESS,
                    _ => COMPUTE,
                };
                match method {
                    PROCESS => {
                        let arguments = [item(rng), n];
                        out.enter_call(CALL_SITE, method, object(WORKER, 7), arguments)?
                    }
                    ITEM_AT => out.enter_call(CALL_SITE, method, object(WORKER, 7), [n])?,
                    _ => out.enter_call(CALL_SITE, method, Value::Null, [n])?,
                }
                calls.push(method);
            }
            18..=35 if !calls.is_empty() => {
                let result = match calls.pop() {
                    Some(NAME_OF) => string_value(text, "item-", rng.below(10_000)),
                    Some(ITEM_AT) => item(rng),
                    Some(PROCESS) => Value::Long(rng.below(1 << 40) as i64),
                    _ => Value::Int(rng.below(1 << 20) as i32),
                };
                out.exit(returned(result))?;
            }
            36..=38 => {
                let loop_id = rng.below(8) as i32;
                out.add(TracepointType::Loop, LOOP_SITE, || TracepointBody::Loop {
                    loop_id,
                })?;
                let iterations = 1 + rng.below(3) as i32;
                for iteration in 0..iterations {
                    let body = || TracepointBody::LoopIteration { loop_id, iteration };
                    out.add(TracepointType::LoopIteration, LOOP_SITE, body)?;
                    out.write_local(I, Value::Int(iteration))?;
                    out.write_local(SUM, Value::Long(rng.below(1 << 20) as i64))?;
                    out.exit(Footer::LoopIteration)?;
                }
                out.exit(Footer::Loop { iterations })?;
            }
            39..=58 => {
                let value = Value::Int(rng.below(1 << 16) as i32);
                let receiver = item(rng);
                let body = || TracepointBody::WriteField {
                    field: VALUE_FIELD,
                    receiver,
                    value,
                };
                out.add(TracepointType::WriteField, FIELD_SITE, body)?;
            }
            59..=64 => {
                let value = string_value(text, "name-", rng.below(100_000));
                let receiver = item(rng);
                let body = || TracepointBody::WriteField {
                    field: NAME_FIELD,
                    receiver,
                    value,
                };
                out.add(TracepointType::WriteField, FIELD_SITE, body)?;
            }
            65..=71 => {
                let value = Value::Int(rng.below(1 << 16) as i32);
                let receiver = item(rng);
                let body = || TracepointBody::ReadField {
                    field: VALUE_FIELD,
                    receiver,
                    value,
                };
                out.add(TracepointType::ReadField, FIELD_SITE, body)?;
            }
            72..=75 => {
                let value = Value::Long(rng.below(1 << 30) as i64);
                let body = || TracepointBody::WriteField {
                    field: COUNT_FIELD,
                    receiver: Value::Null,
                    value,
                };
                out.add(TracepointType::WriteField, STATIC_SITE, body)?;
            }
            76..=87 => {
                out.write_local(I, Value::Int(rng.below(1 << 10) as i32))?;
            }
            88..=93 => {
                let value = Value::Long(rng.below(1 << 30) as i64);
                let body = || TracepointBody::ReadLocal {
                    variable: SUM,
                    value,
                };
                out.add(TracepointType::ReadLocal, LOCAL_SITE, body)?;
            }
            _ => {
                let index = rng.below(16) as i32;
                let value = Value::Int(rng.below(1 << 10) as i32);
                let body = || TracepointBody::WriteArray {
                    array: Value::Array {
                        class: INT_ARRAY,
                        identity_hash: 91,
                        elements: Vec::new(),
                        total_size: 16,
                    },
                    index,
                    value,
                };
                out.add(TracepointType::WriteArray, ARRAY_SITE, body)?;
            }
        }
    }
    while let Some(method) = calls.pop() {
        let result = match method {
            NAME_OF => string_value(text, "item-", 0),
            ITEM_AT => item(rng),
            PROCESS => Value::Long(0),
            _ => Value::Int(0),
        };
        out.exit(returned(result))?;
    }
    Ok(())
}

fn wide<R: Pushes>(
    out: &mut Emitter<'_, R>,
    rng: &mut SplitMix64,
    stopped: &mut impl FnMut(&R, u64) -> bool,
) -> Result<()> {
    out.enter_call(CALL_SITE, FILL, object(WORKER, 7), [])?;
    let mut i = 0i32;
    while !out.stopped(stopped) {
        out.write_local(I, Value::Int(i))?;
        if rng.chance(10) {
            let receiver = item(rng);
            let body = || TracepointBody::WriteField {
                field: VALUE_FIELD,
                receiver,
                value: Value::Int(i),
            };
            out.add(TracepointType::WriteField, FIELD_SITE, body)?;
        }
        i = i.wrapping_add(1);
    }
    out.exit(returned(Value::Void))
}

fn deep<R: Pushes>(
    out: &mut Emitter<'_, R>,
    stopped: &mut impl FnMut(&R, u64) -> bool,
) -> Result<()> {
    let base = out.depth;
    'outer: loop {
        for n in 0..DEEP_RECURSION as i32 {
            out.enter_call(CALL_SITE, RECURSE, Value::Null, [Value::Int(n)])?;
            out.write_local(I, Value::Int(n))?;
            if out.stopped(stopped) {
                break 'outer;
            }
        }
        while out.depth > base {
            out.exit(returned(Value::Int(1)))?;
        }
    }
    while out.depth > base {
        out.exit(returned(Value::Int(1)))?;
    }
    Ok(())
}
