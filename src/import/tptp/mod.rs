//! Eclipse TPTP binary traces (`.trcbin`, seed `002`).
//!
//! A 12-byte header (magic `0TBF`, `OTBF` accepted too; version major and
//! minor; platform; endianness, 0 big and 1 little, governing every number
//! of the file; a u32 offset from the file's start to the first message),
//! then messages: a u16 id, a u32 length of the attributes that follow
//! (the 6-byte header not counted), and the attributes in the seed's order
//! ([`messages::MESSAGES`]). Strings are NUL-terminated in the encoding
//! named by message 1 (UTF-8 when none; ISO-8859-1 decoded as Latin-1).
//!
//! Mapping (`docs/IMPORTS.md`): `classDef` names classes (stored
//! dotted), `methodDef` methods (name, signature, class id), `threadStart`
//! threads (by "Thread ID"); `methodEntry` calls its method on its thread
//! (`unknown.Method#<id>` when no `methodDef` names it); `methodExit`
//! returns from the thread's innermost open call, a ticket unlike the
//! entry's counted; every other message, unknown ids included, is skipped
//! by its length and counted by id.
//!
//! Where the seed leaves a reading open and the bytes tell the readings
//! apart, both are accepted: numbers little-endian under a big-endian
//! header, and lengths that count the message header, are taken when they
//! walk strictly more known messages from the start than the mapping's
//! reading does.
//!
//! A message whose length runs past the end of the file is a damaged tail:
//! the import stops there, keeps everything before and reports the offset.
//! The file is mapped and read twice (threads are numbered by ascending
//! source id, so the first pass finds them), releasing pages behind.

pub mod messages;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;

use rustc_hash::FxHashMap;

use crate::common::{MethodId, ThreadId};
use crate::error::{Error, Result};
use crate::import::ImportSummary;
use crate::import::names::{Descriptors, call, void_return};
use crate::storage::TraceBytes;
use crate::write::{StreamingThread, StreamingWriter};
use messages::{
    Attributes, CLASS_DEF, ENCODING, METHOD_DEF, METHOD_ENTRY, METHOD_EXIT, THREAD_START,
    message_name,
};

/// The header's length.
pub const HEADER: usize = 12;
/// A message header's length: id and length.
pub const MESSAGE_HEADER: usize = 6;
/// Bytes read between two releases of the pages behind the reader.
const RELEASE_STRIDE: usize = 32 << 20;

/// Whether `path` is a file starting with TPTP's magic.
pub fn looks_like_tptp(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0; 4];
    path.is_file()
        && std::fs::File::open(path).is_ok_and(|mut f| f.read_exact(&mut magic).is_ok())
        && (&magic == b"0TBF" || &magic == b"OTBF")
}

/// One message: its id, its attributes and where it starts.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// The id.
    pub id: u16,
    /// The attributes' bytes.
    pub body: &'a [u8],
}

/// The messages of a file, in order, releasing pages behind.
pub struct Messages<'a> {
    bytes: &'a TraceBytes,
    big_endian: bool,
    /// Whether a message's length counts its own 6-byte header.
    counts_header: bool,
    at: usize,
    released: usize,
    /// Set when the file ends inside a message.
    pub damage: Option<String>,
}

impl<'a> Messages<'a> {
    /// Reads the header; a file too short or without the magic is an error.
    pub fn new(bytes: &'a TraceBytes) -> Result<Self> {
        let slice = bytes.as_slice();
        if slice.len() < HEADER || !(slice[..4] == *b"0TBF" || slice[..4] == *b"OTBF") {
            return Err(Error::Unsupported {
                path: None,
                expected: "a TPTP binary trace",
                found: "no 0TBF header".to_string(),
            });
        }
        let header_big = slice[7] == 0;
        let offset = Attributes::new(&slice[8..12], header_big).integer() as usize;
        let (big_endian, counts_header) = reading(slice, offset, header_big);
        let mut messages = Messages {
            bytes,
            big_endian,
            counts_header,
            at: offset,
            released: 0,
            damage: None,
        };
        if offset < HEADER || offset > slice.len() {
            messages.damage = Some(format!(
                "the header's offset to data ({offset}) is outside the file"
            ));
            messages.at = slice.len();
        }
        Ok(messages)
    }

    /// Whether numbers are big-endian.
    pub fn big_endian(&self) -> bool {
        self.big_endian
    }

    /// The next message, or `None` at the end or at a damaged tail.
    #[inline]
    pub fn next_message(&mut self) -> Option<Message<'a>> {
        let slice = self.bytes.as_slice();
        let offset = self.at;
        if offset >= slice.len() {
            return None;
        }
        let Some(header) = slice.get(offset..offset + MESSAGE_HEADER) else {
            self.damage = Some(format!(
                "the file ends inside the message header at offset {offset}"
            ));
            return None;
        };
        let (id, length) = message_header(header, self.big_endian);
        let Some(length) = body_length(length, self.counts_header) else {
            self.damage = Some(format!(
                "message {id} at offset {offset} is shorter than its header (length {length})"
            ));
            return None;
        };
        let start = offset + MESSAGE_HEADER;
        let Some(body) = start
            .checked_add(length)
            .and_then(|end| slice.get(start..end))
        else {
            self.damage = Some(format!(
                "message {id} at offset {offset} runs past the end of the file (length {length})"
            ));
            return None;
        };
        self.at = start + length;
        if self.at - self.released >= RELEASE_STRIDE {
            self.bytes
                .release_around(self.released as u64..self.at as u64);
            self.released = self.at;
        }
        Some(Message { id, body })
    }
}

/// A message header's id and length.
fn message_header(header: &[u8], big: bool) -> (u16, usize) {
    let mut fields = Attributes::new(header, big);
    let id = if big {
        u16::from_be_bytes([header[0], header[1]])
    } else {
        u16::from_le_bytes([header[0], header[1]])
    };
    fields.skip(messages::Attribute::Short);
    (id, fields.integer() as usize)
}

/// The attributes' length of a message of `length`; `None` when a length
/// that counts the header is shorter than it.
fn body_length(length: usize, counts_header: bool) -> Option<usize> {
    if counts_header {
        length.checked_sub(MESSAGE_HEADER)
    } else {
        Some(length)
    }
}

/// How the messages from `offset` are read: (big-endian, whether lengths
/// count the message header). The mapping's reading (the header's byte
/// order for every number, lengths without the header) holds unless
/// another reading of the seed's open questions walks strictly more known
/// messages from the start.
fn reading(slice: &[u8], offset: usize, header_big: bool) -> (bool, bool) {
    let candidates = [
        (header_big, false),
        (false, false),
        (header_big, true),
        (false, true),
    ];
    let mut best = (candidates[0], known_messages(slice, offset, candidates[0]));
    for candidate in &candidates[1..] {
        let score = known_messages(slice, offset, *candidate);
        if score > best.1 {
            best = (*candidate, score);
        }
    }
    best.0
}

/// How many of the first 64 messages from `offset` have known ids when
/// read as `(big_endian, counts_header)`; one more when they end exactly
/// at the end of the file.
fn known_messages(slice: &[u8], offset: usize, (big, counts_header): (bool, bool)) -> usize {
    let mut at = offset;
    let mut known = 0;
    for _ in 0..64 {
        if at == slice.len() {
            return known + 1;
        }
        let Some(header) = slice.get(at..at.saturating_add(MESSAGE_HEADER)) else {
            break;
        };
        let (id, length) = message_header(header, big);
        let Some(length) = body_length(length, counts_header) else {
            break;
        };
        if !messages::MESSAGES.iter().any(|m| m.0 == id) {
            break;
        }
        known += 1;
        at = at.saturating_add(MESSAGE_HEADER + length);
    }
    known
}

/// Decodes a string in the file's encoding.
fn text(bytes: &[u8], latin1: bool) -> String {
    if latin1 {
        bytes.iter().map(|&b| b as char).collect()
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// Whether an encoding name is ISO-8859-1.
fn is_latin1(name: &[u8]) -> bool {
    let name = String::from_utf8_lossy(name).to_ascii_uppercase();
    name.contains("8859-1") || name.contains("LATIN1") || name.contains("LATIN-1")
}

/// The source thread ids that enter a method, with their names.
fn threads_with_calls(bytes: &TraceBytes) -> Result<BTreeMap<u64, String>> {
    let mut messages = Messages::new(bytes)?;
    let big = messages.big_endian();
    let mut names = FxHashMap::default();
    let mut threads = BTreeMap::new();
    let mut latin1 = false;
    while let Some(message) = messages.next_message() {
        let mut attributes = Attributes::new(message.body, big);
        match message.id {
            ENCODING => latin1 = is_latin1(attributes.string()),
            THREAD_START => {
                attributes.skip_longs(1);
                let thread = attributes.long();
                attributes.skip_longs(1);
                attributes.string();
                attributes.string();
                attributes.skip_longs(2);
                names.insert(thread, text(attributes.string(), latin1));
            }
            METHOD_ENTRY => {
                attributes.skip_longs(1);
                threads.entry(attributes.long()).or_insert_with(String::new);
            }
            _ => {}
        }
    }
    for (thread, name) in threads.iter_mut() {
        *name = match names.get(thread) {
            Some(known) if !known.is_empty() => known.clone(),
            _ => format!("thread-{thread}"),
        };
    }
    Ok(threads)
}

/// A thread's handle and the tickets of its open calls.
struct ThreadState {
    handle: StreamingThread,
    tickets: Vec<u32>,
}

/// A method as `methodDef` gave it.
struct MethodDef {
    name: String,
    signature: String,
    class: u64,
}

/// Imports a TPTP binary trace into `writer`.
pub(crate) fn import(
    input: &Path,
    writer: &StreamingWriter,
    progress: &dyn Fn(u64),
) -> Result<ImportSummary> {
    let bytes = TraceBytes::map(input)?;
    let sources = threads_with_calls(&bytes)?;
    bytes.release_around(0..bytes.len());
    let mut threads = FxHashMap::default();
    for (rank, (&source, name)) in sources.iter().enumerate() {
        let handle = writer.new_thread_with_id(ThreadId(rank as _), name.as_str())?;
        let state = ThreadState {
            handle,
            tickets: Vec::new(),
        };
        threads.insert(source, (ThreadId(rank as _), state));
    }
    let mut reading = Reading {
        writer,
        names: Descriptors::default(),
        classes: FxHashMap::default(),
        methods: FxHashMap::default(),
        method_ids: FxHashMap::default(),
        latin1: false,
        skipped: vec![0; 1 << 16],
        summary: ImportSummary::default(),
    };
    let mut messages = Messages::new(&bytes)?;
    let big = messages.big_endian();
    while let Some(message) = messages.next_message() {
        reading.message(message, big, &mut threads)?;
    }
    let mut summary = reading.summary;
    for (id, &count) in reading.skipped.iter().enumerate() {
        summary.skip(&message_name(id as u16), count);
    }
    summary.map("method_call", summary.calls);
    let mut states: Vec<_> = threads.into_values().collect();
    states.sort_by_key(|(id, _)| id.0);
    for (_, state) in states {
        summary.unfinished_calls += state.tickets.len() as u64;
        summary.threads += 1;
        state.handle.finish()?;
    }
    if let Some(what) = messages.damage {
        summary.damaged(input.display(), what);
    }
    progress(bytes.len());
    Ok(summary)
}

/// The pass that writes.
struct Reading<'w> {
    writer: &'w StreamingWriter,
    names: Descriptors,
    classes: FxHashMap<u64, String>,
    methods: FxHashMap<u64, MethodDef>,
    method_ids: FxHashMap<u64, MethodId>,
    latin1: bool,
    skipped: Vec<u64>,
    summary: ImportSummary,
}

impl Reading<'_> {
    #[inline]
    fn message(
        &mut self,
        message: Message<'_>,
        big: bool,
        threads: &mut FxHashMap<u64, (ThreadId, ThreadState)>,
    ) -> Result<()> {
        let mut attributes = Attributes::new(message.body, big);
        match message.id {
            METHOD_ENTRY => {
                attributes.skip_longs(1);
                let thread = attributes.long();
                attributes.skip_longs(1);
                let method = attributes.long();
                let ticket = attributes.integer();
                let Some((id, state)) = threads.get_mut(&thread) else {
                    return Ok(()); // the first pass found every entering thread
                };
                let method = self.method(method)?;
                let event = self.names.next_event()?;
                state.handle.push_tracepoint(&call(*id, event, method))?;
                state.tickets.push(ticket);
                self.summary.calls += 1;
                return Ok(());
            }
            METHOD_EXIT => {
                attributes.skip_longs(1);
                let thread = attributes.long();
                attributes.skip_longs(1);
                let ticket = attributes.integer();
                match threads.get_mut(&thread) {
                    Some((_, state)) if !state.tickets.is_empty() => {
                        let entered = state.tickets.pop().expect("not empty");
                        if entered != ticket {
                            self.summary.unmatched_tickets += 1;
                        }
                        state.handle.push_footer(&void_return())?;
                    }
                    _ => self.summary.skipped_exits += 1,
                }
                return Ok(());
            }
            ENCODING => self.latin1 = is_latin1(attributes.string()),
            CLASS_DEF => self.class_def(attributes),
            METHOD_DEF => self.method_def(attributes),
            _ => {}
        }
        self.skipped[message.id as usize] += 1;
        Ok(())
    }

    fn class_def(&mut self, mut attributes: Attributes<'_>) {
        attributes.skip_longs(3);
        attributes.integer();
        attributes.string();
        attributes.skip_longs(1);
        let class = attributes.long();
        for _ in 0..3 {
            attributes.string();
        }
        attributes.skip_longs(2);
        let name = text(attributes.string(), self.latin1).replace('/', ".");
        self.classes.insert(class, name);
    }

    fn method_def(&mut self, mut attributes: Attributes<'_>) {
        let name = text(attributes.string(), self.latin1);
        let signature = text(attributes.string(), self.latin1);
        for _ in 0..4 {
            attributes.skip(messages::Attribute::Byte);
        }
        attributes.string();
        attributes.skip_longs(2);
        attributes.string();
        attributes.skip_longs(1);
        let class = attributes.long();
        let method = attributes.long();
        self.methods.insert(
            method,
            MethodDef {
                name,
                signature,
                class,
            },
        );
    }

    /// The trace's method for source method `id`, added on first call.
    fn method(&mut self, id: u64) -> Result<MethodId> {
        if let Some(&method) = self.method_ids.get(&id) {
            return Ok(method);
        }
        let method = match self.methods.get(&id) {
            Some(def) => {
                let class = self
                    .classes
                    .get(&def.class)
                    .map_or("unknown", String::as_str);
                let signature = (!def.signature.is_empty()).then_some(def.signature.as_str());
                self.names
                    .add_method(class, &def.name, signature, self.writer)?
            }
            None => self
                .names
                .add_method("unknown", &format!("Method#{id}"), None, self.writer)?,
        };
        self.method_ids.insert(id, method);
        Ok(method)
    }
}
