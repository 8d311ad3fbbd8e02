//! Blinky text traces (seed `003`): one event per line on the program's
//! standard output, mixed with the program's own output.
//!
//! `$$method$$,ID,NAME,OWNER,ACCESS` declares a method,
//! `$kind$,ID,HOST,LINE,BCI,OPCODE,OP1,OP2,OP3` an instruction, and
//! `$$$,ID,THREAD,TIME,DEPTH,DYN_HOST,INSN_ID,TYPE,…` executes one. Fields
//! are split on `,` without escaping; extra trailing fields and a trailing
//! `;` are accepted; any other line is program output, skipped and counted
//! (its bytes need not be UTF-8).
//!
//! Mapping (`docs/IMPORTS.md`): executing `$enter$` calls its declaring
//! method (`OWNER.NAME`, slashes made dots); `$exit$` returns from the
//! thread's innermost open call; `$field$` reads (178, 180) or writes (179,
//! 181) a field, `$var$` reads (21–25) or writes (54–58) a local,
//! `$arrayload$`/`$arraystore$` read or write an array element, `$athrow$`
//! throws, each at its instruction's line. Every other kind, including
//! kinds the seed does not list (`$flow$`, `$$class$$`), makes no
//! tracepoint and is counted. CALL_DEPTH is informational: its offset from
//! the nesting is taken at a thread's first execution, and each later
//! execution whose offset differs is counted as a disagreement.
//!
//! The file is mapped and read twice, its lines parsed in parallel
//! (`ranges`), each time releasing the pages behind the reader: once to
//! find the threads that make tracepoints (they are numbered by ascending
//! source id), once to write them. The first reading parses little: an
//! execution of a thread already found is skipped at its THREAD field, and
//! within a range a thread's repeated executions of one instruction are
//! left out (a declaration in between lets the next one through). The
//! second reading resolves each execution in file order (declarations,
//! event ids, method and location ids, depths; instructions and threads
//! looked up by id in a vector, `IdMap`) into a command for its
//! thread; the threads' commands are pushed into the writer a batch at a
//! time, a thread per worker (`push`), since threads are independent in
//! the trace. Memory holds the declarations, the open calls and a batch of
//! commands, never the lines. A last line with no newline is a cut record:
//! dropped and reported.

pub mod line;
mod push;
mod ranges;

#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{PoisonError, RwLock};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::common::{CodeLocationId, EventId, FieldId, IdMap, MethodId, ThreadId, VariableId};
use crate::error::Result;
use crate::import::ImportSummary;
use crate::import::names::{Descriptors, Leaf, leaf};
use crate::storage::TraceBytes;
use crate::write::StreamingWriter;
use line::{ARRAYLOAD, ARRAYSTORE, ATHROW, ENTER, EXIT, FIELD, KINDS, Line, VAR};
use push::{BATCH_COMMANDS, Command, Pusher};
use ranges::{Executions, RANGE_BYTES, for_each_parsed};

/// Bytes of the file's start that detection looks at.
const DETECT_BYTES: usize = 64 << 10;

/// Whether `path` is a file whose first lines have Blinky's shapes: at
/// least two declarations or executions that parse, and more of them than
/// malformed `$$$` lines.
pub fn looks_like_blinky(path: &Path) -> bool {
    use std::io::Read;
    if !path.is_file() {
        return false;
    }
    let mut head = Vec::with_capacity(DETECT_BYTES);
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    if file
        .take(DETECT_BYTES as u64)
        .read_to_end(&mut head)
        .is_err()
    {
        return false;
    }
    let (mut shaped, mut malformed) = (0, 0);
    for text in head.split(|&b| b == b'\n') {
        match line::parse(text) {
            Line::Method { .. } | Line::Execution { .. } => shaped += 1,
            Line::Instruction(declared) if line::known_kind(declared.kind).is_some() => shaped += 1,
            Line::Malformed => malformed += 1,
            _ => {}
        }
    }
    shaped >= 2 && shaped > malformed
}

/// Ids below this are kept in a vector indexed by id ([`IdMap`]): every id
/// Blinky numbers from 0 in practice, at a few MB at most.
const DENSE_IDS: u64 = 1 << 18;

/// What executing an instruction does.
#[derive(Debug, Clone, Copy)]
enum Action {
    /// Calls the method of this source id, whose trace method is looked
    /// up on the first call and kept.
    Call(u64, Option<MethodId>),
    /// Returns from the innermost open call.
    Return,
    /// Pushes this leaf at this line, whose code location is looked up on
    /// the first push and kept.
    Leaf(Leaf, i32, Option<CodeLocationId>),
    /// Nothing: counted under this kind.
    Skip(u16),
}

/// The declarations seen so far: kinds, methods and instructions.
struct Declarations {
    /// Kind names by index: [`KINDS`], then the unlisted ones met.
    kinds: Vec<String>,
    unlisted: HashMap<Vec<u8>, u16>,
    /// Source method id → (dotted owner, name, descriptor).
    methods: FxHashMap<u64, (String, String, Option<String>)>,
    /// Source method id → trace method id, on first call.
    method_ids: FxHashMap<u64, MethodId>,
    instructions: IdMap<Action>,
}

impl Declarations {
    fn new() -> Self {
        Declarations {
            kinds: KINDS.iter().map(|k| k.to_string()).collect(),
            unlisted: HashMap::new(),
            methods: FxHashMap::default(),
            method_ids: FxHashMap::default(),
            instructions: IdMap::with_dense_below(DENSE_IDS),
        }
    }

    fn kind(&mut self, kind: &[u8]) -> u16 {
        if let Some(known) = line::known_kind(kind) {
            return known;
        }
        if let Some(&index) = self.unlisted.get(kind) {
            return index;
        }
        let index = self.kinds.len().min(u16::MAX as usize) as u16;
        self.kinds.push(String::from_utf8_lossy(kind).into_owned());
        self.unlisted.insert(kind.to_vec(), index);
        index
    }

    fn declare_method(&mut self, id: u64, name: &[u8], owner: &[u8]) {
        let owner = String::from_utf8_lossy(owner).replace('/', ".");
        let name = String::from_utf8_lossy(name);
        let (name, descriptor) = match name.find('(') {
            Some(paren) => (name[..paren].to_string(), Some(name[paren..].to_string())),
            None => (name.into_owned(), None),
        };
        self.methods.insert(id, (owner, name, descriptor));
    }

    /// Declares an instruction; with no writer (the first pass) leaves
    /// carry no descriptors.
    fn declare_instruction(
        &mut self,
        declared: &line::Instruction<'_>,
        names: Option<(&mut Descriptors, &StreamingWriter)>,
    ) -> Result<()> {
        let line::Instruction {
            kind,
            id,
            host,
            line,
            opcode,
            operands,
        } = *declared;
        let kind = self.kind(kind);
        let action = match (kind, opcode) {
            (ENTER, _) => Action::Call(host, None),
            (EXIT, _) => Action::Return,
            (ATHROW, _) => Action::Leaf(Leaf::Throw, line, None),
            (ARRAYLOAD, _) => Action::Leaf(Leaf::ReadArray, line, None),
            (ARRAYSTORE, _) => Action::Leaf(Leaf::WriteArray, line, None),
            (FIELD, 178..=181) => {
                let field = match names {
                    Some((names, writer)) => {
                        let owner = match operands[0] {
                            b"" => self
                                .methods
                                .get(&host)
                                .map_or("unknown", |m| &m.0)
                                .to_string(),
                            owner => String::from_utf8_lossy(owner).replace('/', "."),
                        };
                        let name = match operands[1] {
                            b"" => format!("field#{id}"),
                            name => String::from_utf8_lossy(name).into_owned(),
                        };
                        let descriptor = String::from_utf8_lossy(operands[2]);
                        let is_static = opcode == 178 || opcode == 179;
                        names.field(&owner, &name, &descriptor, is_static, writer)?
                    }
                    None => FieldId(0),
                };
                let leaf = match opcode {
                    178 | 180 => Leaf::ReadField(field),
                    _ => Leaf::WriteField(field),
                };
                Action::Leaf(leaf, line, None)
            }
            (VAR, 21..=25 | 54..=58) => {
                let variable = match names {
                    Some((names, writer)) => {
                        let letter = b"IJFDA"[((opcode - 21) % 33) as usize];
                        let slot = String::from_utf8_lossy(operands[0]);
                        names.variable(&format!("local{}", slot.trim()), letter, writer)?
                    }
                    None => VariableId(0),
                };
                let leaf = match opcode {
                    21..=25 => Leaf::ReadLocal(variable),
                    _ => Leaf::WriteLocal(variable),
                };
                Action::Leaf(leaf, line, None)
            }
            _ => Action::Skip(kind),
        };
        self.instructions.insert(id, action);
        Ok(())
    }

    /// The trace's method for source method `host`, added on first call.
    fn method(
        &mut self,
        host: u64,
        names: &mut Descriptors,
        writer: &StreamingWriter,
    ) -> Result<MethodId> {
        if let Some(&method) = self.method_ids.get(&host) {
            return Ok(method);
        }
        let method = match self.methods.get(&host) {
            Some((owner, name, descriptor)) => {
                names.add_method(owner, name, descriptor.as_deref(), writer)?
            }
            None => names.add_method("unknown", &format!("Method#{host}"), None, writer)?,
        };
        self.method_ids.insert(host, method);
        Ok(method)
    }
}

/// The source ids of the threads that make at least one tracepoint,
/// reading ranges of about `range_bytes`.
fn threads_with_tracepoints(bytes: &TraceBytes, range_bytes: usize) -> Result<BTreeSet<u64>> {
    let mut declarations = Declarations::new();
    let threads = RwLock::new(BTreeSet::new());
    // What `threads` holds, read without its lock.
    let mut found = FxHashSet::default();
    let distinct = Executions::Distinct(&threads);
    for_each_parsed(bytes, range_bytes, distinct, &|_| {}, |parsed| {
        match parsed {
            Line::Method { id, name, owner } => declarations.declare_method(id, name, owner),
            Line::Instruction(declared) => declarations.declare_instruction(&declared, None)?,
            Line::Execution {
                thread,
                instruction,
                ..
            } => {
                let makes = matches!(
                    declarations.instructions.get(instruction),
                    Some(Action::Call(..) | Action::Leaf(..))
                );
                if makes && found.insert(thread) {
                    threads
                        .write()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(thread);
                }
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(threads.into_inner().unwrap_or_else(PoisonError::into_inner))
}

/// Kinds of leaf: [`leaf_slot`]'s range.
const LEAF_SLOTS: usize = 7;

/// Where a leaf of this kind is counted.
fn leaf_slot(leaf: Leaf) -> usize {
    match leaf {
        Leaf::ReadField(_) => 0,
        Leaf::WriteField(_) => 1,
        Leaf::ReadLocal(_) => 2,
        Leaf::WriteLocal(_) => 3,
        Leaf::ReadArray => 4,
        Leaf::WriteArray => 5,
        Leaf::Throw => 6,
    }
}

/// A thread of the source: whether it made a tracepoint (and has a
/// handle), its open calls, and the offset of its recorded depth from the nesting.
struct ThreadState {
    source: u64,
    started: bool,
    depth: u64,
    depth_offset: Option<i64>,
}

/// The pass that writes: declarations, threads and counts.
struct Writing<'w> {
    writer: &'w StreamingWriter,
    declarations: Declarations,
    names: Descriptors,
    pusher: Pusher,
    ranks: IdMap<usize>,
    threads: Vec<ThreadState>,
    summary: ImportSummary,
    /// Counts by kind index: executions that made no tracepoint.
    skipped: Vec<u64>,
    /// Counts by [`leaf_slot`]: leaves pushed, and one of them.
    leaves: [(Option<Leaf>, u64); LEAF_SLOTS],
    calls: u64,
    /// Counts by kind index: declarations the seed does not list.
    unlisted_lines: Vec<u64>,
    output_lines: u64,
    malformed_lines: u64,
    undeclared: u64,
}

impl Writing<'_> {
    fn line(&mut self, parsed: Line<'_>) -> Result<()> {
        match parsed {
            Line::Execution {
                thread,
                depth,
                instruction,
            } => self.execute(thread, depth, instruction)?,
            Line::Method { id, name, owner } => {
                self.declarations.declare_method(id, name, owner);
            }
            Line::Instruction(declared) => self
                .declarations
                .declare_instruction(&declared, Some((&mut self.names, self.writer)))?,
            Line::Unlisted(kind) => {
                let kind = self.declarations.kind(kind);
                self.unlisted_lines[kind as usize] += 1;
            }
            Line::Malformed => self.malformed_lines += 1,
            Line::Output => self.output_lines += 1,
        }
        Ok(())
    }

    #[inline]
    fn execute(&mut self, thread: u64, depth: i64, instruction: u64) -> Result<()> {
        let Some(&action) = self.declarations.instructions.get(instruction) else {
            self.undeclared += 1;
            return Ok(());
        };
        let Some(&rank) = self.ranks.get(thread) else {
            match action {
                Action::Return => self.summary.skipped_exits += 1,
                Action::Skip(kind) => self.skipped[kind as usize] += 1,
                // The first pass ranked every thread that makes tracepoints.
                Action::Call(..) | Action::Leaf(..) => self.undeclared += 1,
            }
            return Ok(());
        };
        let state = &mut self.threads[rank];
        let nesting = match action {
            Action::Call(..) => state.depth + 1,
            _ => state.depth,
        };
        let offset = depth.wrapping_sub(nesting as i64);
        match state.depth_offset {
            None => state.depth_offset = Some(offset),
            Some(known) if known != offset => self.summary.depth_disagreements += 1,
            Some(_) => {}
        }
        if !state.started && !matches!(action, Action::Skip(_) | Action::Return) {
            let name = format!("thread-{}", state.source);
            let id = ThreadId(rank as _);
            let handle = self.writer.new_thread_with_id(id, name.as_str())?;
            self.pusher.start(rank, handle);
            state.started = true;
        }
        match action {
            Action::Call(host, known) => {
                let method = match known {
                    Some(method) => method,
                    None => {
                        let method =
                            self.declarations
                                .method(host, &mut self.names, self.writer)?;
                        if let Some(Action::Call(_, known)) =
                            self.declarations.instructions.get_mut(instruction)
                        {
                            *known = Some(method);
                        }
                        method
                    }
                };
                let event = self.names.next_event()?;
                self.pusher.push(rank, Command::Call(method, event))?;
                state.depth += 1;
                self.calls += 1;
            }
            Action::Return if state.depth == 0 => self.summary.skipped_exits += 1,
            Action::Return => {
                self.pusher.push(rank, Command::Return)?;
                state.depth -= 1;
            }
            Action::Leaf(kind, line, known) => {
                let location = match known {
                    Some(location) => location,
                    None => {
                        let location = self.names.line(line, self.writer)?;
                        if let Some(Action::Leaf(_, _, known)) =
                            self.declarations.instructions.get_mut(instruction)
                        {
                            *known = Some(location);
                        }
                        location
                    }
                };
                let event = self.names.next_event()?;
                self.pusher
                    .push(rank, Command::Leaf(kind, location, event))?;
                let count = &mut self.leaves[leaf_slot(kind)];
                *count = (Some(kind), count.1 + 1);
            }
            Action::Skip(kind) => self.skipped[kind as usize] += 1,
        }
        Ok(())
    }

    /// Finishes the threads and gathers the counts.
    fn finish(mut self) -> Result<ImportSummary> {
        let handles = self.pusher.finish()?;
        for (state, handle) in self.threads.iter().zip(handles) {
            if let Some(handle) = handle {
                handle.finish()?;
                self.summary.threads += 1;
                self.summary.unfinished_calls += state.depth;
            }
        }
        for (kind, &count) in self.skipped.iter().enumerate() {
            let name = self
                .declarations
                .kinds
                .get(kind)
                .map_or("?", |k| k.as_str());
            self.summary.skip(name, count);
        }
        for (kind, &count) in self.unlisted_lines.iter().enumerate() {
            let name = self
                .declarations
                .kinds
                .get(kind)
                .map_or("?", |k| k.as_str());
            self.summary.skip(&format!("{name} lines"), count);
        }
        self.summary.map("method_call", self.calls);
        for (kind, count) in self.leaves {
            if let Some(kind) = kind {
                let example = leaf(kind, CodeLocationId(-1), ThreadId(0), EventId(0));
                self.summary
                    .map(example.header.tracepoint_type.name(), count);
            }
        }
        self.summary.calls = self.calls;
        self.summary.skip("program output lines", self.output_lines);
        self.summary.skip("malformed lines", self.malformed_lines);
        self.summary
            .skip("executions of undeclared instructions", self.undeclared);
        Ok(self.summary)
    }
}

/// Imports a Blinky trace into `writer`.
pub(crate) fn import(
    input: &Path,
    writer: &StreamingWriter,
    progress: &dyn Fn(u64),
) -> Result<ImportSummary> {
    import_in(input, writer, progress, RANGE_BYTES, BATCH_COMMANDS)
}

/// [`import`], reading ranges of about `range_bytes` and pushing batches
/// of `batch_commands`.
fn import_in(
    input: &Path,
    writer: &StreamingWriter,
    progress: &dyn Fn(u64),
    range_bytes: usize,
    batch_commands: usize,
) -> Result<ImportSummary> {
    let bytes = TraceBytes::map(input)?;
    let threads = threads_with_tracepoints(&bytes, range_bytes)?;
    bytes.release_around(0..bytes.len());
    let mut writing = Writing {
        writer,
        declarations: Declarations::new(),
        names: Descriptors::default(),
        pusher: Pusher::new(threads.len(), batch_commands),
        ranks: {
            let mut ranks = IdMap::with_dense_below(DENSE_IDS);
            for (rank, &source) in threads.iter().enumerate() {
                ranks.insert(source, rank);
            }
            ranks
        },
        threads: threads
            .iter()
            .map(|&source| ThreadState {
                source,
                started: false,
                depth: 0,
                depth_offset: None,
            })
            .collect(),
        summary: ImportSummary::default(),
        skipped: vec![0; u16::MAX as usize + 1],
        leaves: [(None, 0); LEAF_SLOTS],
        calls: 0,
        unlisted_lines: vec![0; u16::MAX as usize + 1],
        output_lines: 0,
        malformed_lines: 0,
        undeclared: 0,
    };
    let cut = for_each_parsed(&bytes, range_bytes, Executions::All, progress, |parsed| {
        writing.line(parsed)
    })?;
    let mut summary = writing.finish()?;
    if let Some(offset) = cut {
        summary.damaged(
            input.display(),
            format!("the last line (offset {offset}) has no newline: a cut record, dropped"),
        );
    }
    Ok(summary)
}
