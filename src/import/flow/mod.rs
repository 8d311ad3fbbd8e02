//! `.flow` recordings (seed `000`): one file per thread of ENTER and EXIT
//! events, method names in `ids.properties` beside them.
//!
//! Each event is a *packed varint*: the first byte holds the event's flag
//! (bit 7: 1 ENTER, 0 EXIT), a continuation bit (bit 6) and the value's
//! lowest 6 bits; while continuation bits are set, LEB128 groups of 7 bits
//! follow (bit 7 of each is its continuation). ENTER's value is a method id;
//! EXIT's value `k` stands for `k + 1` consecutive returns (the recorder
//! run-length encodes them). So 8192 as an ENTER is `C0 80 01` (the seed's
//! own example is wrong). Files have no header.
//!
//! `ids.properties` lines are `pkg.Class#name(descriptor)=id`, in any order.
//!
//! Mapping (`docs/IMPORTS.md`): threads numbered by ascending source id
//! (`thread-<id>.flow`), named `thread-<id>`, empty ones left out; ENTER is a
//! call of `pkg.Class.name` with the descriptor's types, or of
//! `unknown.Method#<id>` when the id has no name; each return closes the
//! innermost open call with the void result; a return with no open call is
//! skipped and counted; calls open at the end of a file stay unfinished.
//!
//! Damage: a file cut inside an event (the agent closes files while threads
//! still run) or an event whose value overflows 64 bits stops that thread at
//! the last whole event, reported with its offset; everything before is
//! kept. Each thread file is mapped and decoded in place, its pages released
//! behind the decoder, so memory holds the open calls and the names only.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::common::{ClassId, EventId, MethodId, ThreadId};
use crate::error::{Error, Result};
use crate::format::Object;
use crate::import::ImportSummary;
use crate::model::{ClassDescriptor, Footer, JavaStr, MethodDescriptor, Tracepoint, Type, Value};
use crate::storage::TraceBytes;
use crate::write::{StreamingThread, StreamingWriter};

/// The flag bit of an event's first byte: set for ENTER.
const ENTER_FLAG: u8 = 0x80;
/// The continuation bit of an event's first byte.
const FIRST_CONTINUES: u8 = 0x40;
/// The payload bits of an event's first byte.
const FIRST_PAYLOAD: u8 = 0x3F;
/// The continuation bit of the following LEB128 bytes.
const CONTINUES: u8 = 0x80;
/// The payload bits of the following LEB128 bytes.
const PAYLOAD: u8 = 0x7F;
/// The name of the method-name file.
pub const IDS_FILE: &str = "ids.properties";
/// Bytes decoded between two releases of the pages behind the decoder.
const RELEASE_STRIDE: usize = 32 << 20;

/// One event of a `.flow` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowEvent {
    /// A call of this method id.
    Enter(u64),
    /// This many returns (at least one).
    Exit(u64),
}

/// Why a `.flow` file's events stop before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowDamage {
    /// The file ends inside the event starting at `offset`.
    CutEvent {
        /// Where the cut event starts.
        offset: u64,
    },
    /// The event starting at `offset` holds a value wider than 64 bits.
    Overflow {
        /// Where the event starts.
        offset: u64,
    },
}

impl fmt::Display for FlowDamage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowDamage::CutEvent { offset } => {
                write!(f, "the file ends inside the event at offset {offset}")
            }
            FlowDamage::Overflow { offset } => {
                write!(f, "the event at offset {offset} overflows 64 bits")
            }
        }
    }
}

/// Decodes the events of one `.flow` file's bytes, in order.
#[derive(Debug, Clone)]
pub struct FlowDecoder<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> FlowDecoder<'a> {
    /// A decoder at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        FlowDecoder { bytes, position: 0 }
    }

    /// The offset of the next event.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The next event, `None` at the end, or the damage that ends the file.
    /// After an error the decoder stays at the damaged event.
    #[inline]
    pub fn next_event(&mut self) -> std::result::Result<Option<FlowEvent>, FlowDamage> {
        let start = self.position;
        let Some(&first) = self.bytes.get(start) else {
            return Ok(None);
        };
        let mut value = u64::from(first & FIRST_PAYLOAD);
        let mut at = start + 1;
        if first & FIRST_CONTINUES != 0 {
            let mut shift = 6;
            loop {
                let Some(&byte) = self.bytes.get(at) else {
                    return Err(FlowDamage::CutEvent {
                        offset: start as u64,
                    });
                };
                at += 1;
                let group = u64::from(byte & PAYLOAD);
                if shift >= 64 || (shift > 57 && group >> (64 - shift) != 0) {
                    return Err(FlowDamage::Overflow {
                        offset: start as u64,
                    });
                }
                value |= group << shift;
                shift += 7;
                if byte & CONTINUES == 0 {
                    break;
                }
            }
        }
        self.position = at;
        Ok(Some(if first & ENTER_FLAG != 0 {
            FlowEvent::Enter(value)
        } else {
            FlowEvent::Exit(value.saturating_add(1))
        }))
    }
}

/// A method named in `ids.properties`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowMethod {
    /// The dotted class name (`pkg.Outer$Inner`).
    pub class: String,
    /// The method name.
    pub name: String,
    /// The JVM descriptor (`(I)V`), when the line gives one.
    pub descriptor: Option<String>,
}

/// A `.flow` recording: its method names and its thread files.
#[derive(Debug)]
pub struct FlowRecording {
    /// Method names by id.
    pub methods: HashMap<u64, FlowMethod>,
    /// `(source thread id, file)`, by ascending id.
    pub threads: Vec<(u64, PathBuf)>,
    /// Lines of `ids.properties` that were not `name=id` (line numbers).
    pub bad_name_lines: Vec<usize>,
}

impl FlowRecording {
    /// Opens a recording: a folder holding `ids.properties` and
    /// `thread-<id>.flow` files, or one `.flow` file (its names looked for
    /// beside it). A missing `ids.properties` leaves every method unnamed.
    pub fn open(path: &Path) -> Result<Self> {
        let io = |e| Error::io(path, e);
        let (dir, threads) = if path.is_dir() {
            let mut threads = Vec::new();
            for entry in std::fs::read_dir(path).map_err(io)? {
                let entry = entry.map_err(io)?;
                let name = entry.file_name();
                if let Some(id) = name.to_str().and_then(thread_file_id) {
                    threads.push((id, entry.path()));
                }
            }
            (path.to_path_buf(), threads)
        } else {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let id = thread_file_id(name).unwrap_or(0);
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            (dir.to_path_buf(), vec![(id, path.to_path_buf())])
        };
        let mut threads = threads;
        threads.sort();
        let ids = dir.join(IDS_FILE);
        let (methods, bad_name_lines) = if ids.is_file() {
            let text = std::fs::read(&ids).map_err(|e| Error::io(&ids, e))?;
            parse_ids(&text)
        } else {
            (HashMap::new(), Vec::new())
        };
        Ok(FlowRecording {
            methods,
            threads,
            bad_name_lines,
        })
    }
}

/// Whether `path` looks like a `.flow` recording: a `.flow` file, or a
/// folder holding `ids.properties` or a `thread-<id>.flow` file.
pub fn looks_like_flow(path: &Path) -> bool {
    if path.is_dir() {
        path.join(IDS_FILE).is_file()
            || std::fs::read_dir(path).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| e.file_name().to_str().and_then(thread_file_id).is_some())
            })
    } else {
        path.extension().is_some_and(|e| e == "flow")
    }
}

/// The source thread id of a file named `thread-<id>.flow`.
fn thread_file_id(name: &str) -> Option<u64> {
    name.strip_prefix("thread-")?
        .strip_suffix(".flow")?
        .parse()
        .ok()
}

/// Parses `ids.properties`: the methods, and the numbers of lines that
/// were neither blank, comments nor `pkg.Class#name(descriptor)=id`.
pub fn parse_ids(text: &[u8]) -> (HashMap<u64, FlowMethod>, Vec<usize>) {
    let mut methods = HashMap::new();
    let mut bad = Vec::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = String::from_utf8_lossy(line);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        match parse_id_line(line) {
            Some((id, method)) => {
                methods.insert(id, method);
            }
            None => bad.push(n + 1),
        }
    }
    (methods, bad)
}

fn parse_id_line(line: &str) -> Option<(u64, FlowMethod)> {
    let (signature, id) = line.rsplit_once('=')?;
    let id = id.trim().parse().ok()?;
    let (class, rest) = signature.trim().split_once('#')?;
    let (name, descriptor) = match rest.find('(') {
        Some(paren) => (&rest[..paren], Some(rest[paren..].to_string())),
        None => (rest, None),
    };
    if class.is_empty() || name.is_empty() {
        return None;
    }
    let method = FlowMethod {
        class: class.replace('/', "."),
        name: name.to_string(),
        descriptor,
    };
    Some((id, method))
}

/// Parses a JVM method descriptor into parameter and return types; `None`
/// when it is malformed.
pub fn parse_descriptor(descriptor: &str) -> Option<(Vec<Type<'static>>, Type<'static>)> {
    let rest = descriptor.strip_prefix('(')?;
    let (parameters, result) = rest.split_once(')')?;
    let mut types = Vec::new();
    let mut parameters = parameters;
    while !parameters.is_empty() {
        let (parameter, rest) = parse_type(parameters, false)?;
        types.push(parameter);
        parameters = rest;
    }
    let (result, rest) = parse_type(result, true)?;
    rest.is_empty().then_some((types, result))
}

/// One type at the start of `text` (`V` only where `void` is allowed), and
/// what follows it.
fn parse_type(text: &str, void: bool) -> Option<(Type<'static>, &str)> {
    let mut dimensions = 0;
    let mut text = text;
    while let Some(rest) = text.strip_prefix('[') {
        dimensions += 1;
        text = rest;
    }
    let (mut parsed, rest) = match text.as_bytes().first()? {
        b'Z' => (Type::Boolean, &text[1..]),
        b'B' => (Type::Byte, &text[1..]),
        b'C' => (Type::Char, &text[1..]),
        b'D' => (Type::Double, &text[1..]),
        b'F' => (Type::Float, &text[1..]),
        b'I' => (Type::Int, &text[1..]),
        b'J' => (Type::Long, &text[1..]),
        b'S' => (Type::Short, &text[1..]),
        b'V' if void && dimensions == 0 => (Type::Void, &text[1..]),
        b'L' => {
            let end = text.find(';')?;
            let class = text[1..end].replace('/', ".");
            (Type::Object(JavaStr::new(&class)), &text[end + 1..])
        }
        _ => return None,
    };
    for _ in 0..dimensions {
        parsed = Type::Array(Box::new(parsed));
    }
    Some((parsed, rest))
}

/// Imports a `.flow` recording into `writer`, thread by thread.
pub(crate) fn import(
    input: &Path,
    writer: &StreamingWriter,
    progress: &dyn Fn(u64),
) -> Result<ImportSummary> {
    let recording = FlowRecording::open(input)?;
    let mut summary = ImportSummary::default();
    for line in &recording.bad_name_lines {
        summary.warnings.push(format!(
            "{}: line {line} is not `pkg.Class#name(descriptor)=id`; skipped",
            IDS_FILE
        ));
    }
    let mut names = Names::new(&recording.methods);
    let mut next_event = 0i64;
    for (source, path) in &recording.threads {
        let bytes = TraceBytes::map(path)?;
        if bytes.is_empty() {
            continue;
        }
        let mut thread = writer.new_thread(format!("thread-{source}").as_str())?;
        let imported = import_thread(&bytes, &mut thread, &mut names, writer, &mut next_event)?;
        thread.finish()?;
        progress(bytes.len());
        summary.threads += 1;
        summary.calls += imported.calls;
        summary.unfinished_calls += imported.open;
        summary.skipped_exits += imported.skipped_exits;
        if let Some(damage) = imported.damage {
            summary.damaged(path.display(), damage);
        }
    }
    Ok(summary)
}

/// What one thread's file held.
#[derive(Debug, Default)]
struct ThreadImport {
    calls: u64,
    open: u64,
    skipped_exits: u64,
    damage: Option<FlowDamage>,
}

fn import_thread(
    bytes: &TraceBytes,
    thread: &mut StreamingThread,
    names: &mut Names<'_>,
    writer: &StreamingWriter,
    next_event: &mut i64,
) -> Result<ThreadImport> {
    let mut decoder = FlowDecoder::new(bytes.as_slice());
    let mut imported = ThreadImport::default();
    let mut depth = 0u64;
    let returned = Footer::MethodCall {
        result: Value::Void,
        exception: JavaStr::new(""),
    };
    let thread_id = thread_id(thread);
    let mut released = 0;
    loop {
        let event = match decoder.next_event() {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(damage) => {
                imported.damage = Some(damage);
                break;
            }
        };
        match event {
            FlowEvent::Enter(id) => {
                let method = names.method(id, writer)?;
                let event =
                    EventId(i32::try_from(*next_event).map_err(|_| {
                        Error::limit("calls in a v22 trace", *next_event, i32::MAX)
                    })?);
                *next_event += 1;
                thread.push_tracepoint(&Tracepoint::bare_call(thread_id, event, method))?;
                imported.calls += 1;
                depth += 1;
            }
            FlowEvent::Exit(count) => {
                let closed = count.min(depth);
                for _ in 0..closed {
                    thread.push_footer(&returned)?;
                }
                depth -= closed;
                imported.skipped_exits += count - closed;
            }
        }
        if decoder.position() - released >= RELEASE_STRIDE {
            bytes.release_around(released as u64..decoder.position() as u64);
            released = decoder.position();
        }
    }
    imported.open = depth;
    Ok(imported)
}

fn thread_id(thread: &StreamingThread) -> ThreadId {
    use crate::write::ThreadRecorder;
    thread.thread_id()
}

/// Source method ids below this are looked up in a table, not a map.
const DENSE_IDS: u64 = 1 << 16;

/// The trace's method and class ids, handed out on first use.
struct Names<'m> {
    named: &'m HashMap<u64, FlowMethod>,
    /// By source id below [`DENSE_IDS`] (the agent numbers from 0).
    dense: Vec<Option<MethodId>>,
    methods: HashMap<u64, MethodId>,
    classes: HashMap<String, ClassId>,
}

impl<'m> Names<'m> {
    fn new(named: &'m HashMap<u64, FlowMethod>) -> Self {
        Names {
            named,
            dense: Vec::new(),
            methods: HashMap::new(),
            classes: HashMap::new(),
        }
    }

    /// The trace's id of source method `id`, adding its descriptors on
    /// first use.
    #[inline]
    fn method(&mut self, id: u64, writer: &StreamingWriter) -> Result<MethodId> {
        let known = match self.dense.get(id as usize) {
            Some(&known) if id < DENSE_IDS => known,
            _ => self.methods.get(&id).copied(),
        };
        match known {
            Some(method) => Ok(method),
            None => self.add_method(id, writer),
        }
    }

    /// Adds the descriptors of source method `id` (and its class).
    fn add_method(&mut self, id: u64, writer: &StreamingWriter) -> Result<MethodId> {
        let unknown;
        let named = match self.named.get(&id) {
            Some(named) => named,
            None => {
                unknown = FlowMethod {
                    class: "unknown".to_string(),
                    name: format!("Method#{id}"),
                    descriptor: None,
                };
                &unknown
            }
        };
        let class = match self.classes.get(&named.class) {
            Some(&class) => class,
            None => {
                let class = ClassId(next_id(self.classes.len())?);
                writer.add_reference(&Object::ClassDescriptor(ClassDescriptor {
                    id: class,
                    name: JavaStr::new(&named.class),
                }))?;
                self.classes.insert(named.class.clone(), class);
                class
            }
        };
        let (parameter_types, return_type) = named
            .descriptor
            .as_deref()
            .and_then(parse_descriptor)
            .unwrap_or((Vec::new(), Type::Void));
        let method = MethodId(next_id(self.methods.len())?);
        writer.add_reference(&Object::MethodDescriptor(MethodDescriptor {
            id: method,
            class,
            name: JavaStr::new(&named.name),
            return_type,
            parameter_types,
        }))?;
        self.methods.insert(id, method);
        if id < DENSE_IDS {
            let slot = id as usize;
            if self.dense.len() <= slot {
                self.dense.resize(slot + 1, None);
            }
            self.dense[slot] = Some(method);
        }
        Ok(method)
    }
}

fn next_id(count: usize) -> Result<i32> {
    i32::try_from(count).map_err(|_| Error::limit("methods in a v22 trace", count, i32::MAX))
}

#[cfg(test)]
mod tests;
