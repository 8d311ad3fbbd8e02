//! An independent validator of a trace (data + index), written from
//! `FORMAT-NOTES.md` alone: its own byte walker, sharing no code with the
//! crate's readers (it decodes nothing through `tracetree`), so a bug in a
//! reader's decoder cannot hide the same bug in the check.
//!
//! [`walk`] reads a data file's complete blocks (stopping at a half-written
//! one, as a reader must) and returns the structure they hold and the cells
//! a correct index has for them; [`validate`] additionally requires a
//! complete trace and compares the index file cell for cell (as a set; a
//! reference cell's `end` is unused).

use std::collections::{BTreeMap, HashSet};

const DATA_MAGIC: i64 = 0x706E_5471_24EE_5F70;
const VERSION: i64 = 22;

/// One tracepoint, as a JSON-lines dump shows its structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flat {
    pub thread: i32,
    pub depth: usize,
    pub event: i32,
    pub kind: &'static str,
    pub children: usize,
    pub unfinished: bool,
}

/// An index cell with the fields that carry meaning.
pub type Cell = (u8, i32, i64, i64);

/// What the complete blocks of a data file hold.
#[derive(Debug, Default)]
pub struct Walked {
    /// Every tracepoint, threads ascending, each in pre-order.
    pub nodes: Vec<Flat>,
    /// The cells a correct index has (reference cells' end = −1).
    pub cells: Vec<Cell>,
    /// Complete blocks.
    pub blocks: usize,
    /// Offset after the last complete block.
    pub complete_end: usize,
    /// Whether an `EOF` byte follows the last complete block.
    pub eof: bool,
    /// Containers without a footer.
    pub unfinished: usize,
    /// Reference objects written again (same kind and id).
    pub duplicates: usize,
    /// Blocks whose last object is a container's header.
    pub blocks_ending_in_a_header: usize,
}

/// Why a walk failed.
#[derive(Debug)]
struct Short;

type R<T> = Result<T, String>;

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        let end = self.pos.checked_add(n).ok_or(Short)?;
        let bytes = self.data.get(self.pos..end).ok_or(Short)?;
        self.pos = end;
        Ok(bytes)
    }
    fn u8(&mut self) -> Result<u8, Short> {
        Ok(self.take(1)?[0])
    }
    fn i8(&mut self) -> Result<i8, Short> {
        Ok(self.u8()? as i8)
    }
    fn i16(&mut self) -> Result<i16, Short> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn i32(&mut self) -> Result<i32, Short> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i64(&mut self) -> Result<i64, Short> {
        Ok(i64::from_be_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn utf(&mut self) -> Result<(), Short> {
        let n = u16::from_be_bytes(self.take(2)?.try_into().unwrap());
        self.take(n as usize).map(|_| ())
    }
}

/// A problem of the data itself (not a truncation).
#[derive(Debug)]
enum Bad {
    Short,
    Format(String),
}

impl From<Short> for Bad {
    fn from(_: Short) -> Self {
        Bad::Short
    }
}

fn bad<T>(at: usize, what: impl Into<String>) -> Result<T, Bad> {
    Err(Bad::Format(format!("offset {at}: {}", what.into())))
}

/// Reference-object kinds by byte (0–7).
const CLASS: u8 = 1;
const METHOD: u8 = 2;
const FIELD: u8 = 3;
const VARIABLE: u8 = 4;
const STRING: u8 = 5;
const ACCESS_PATH: u8 = 6;
const CODE_LOCATION: u8 = 7;

/// What an object refers to: (kind, id).
type Uses = Vec<(u8, i32)>;

fn skip_type(c: &mut Cursor<'_>, depth: usize) -> Result<(), Bad> {
    let at = c.pos;
    match c.u8()? {
        0 if depth < 64 => skip_type(c, depth + 1),
        1..=7 | 9 | 10 => Ok(()),
        8 => Ok(c.utf()?),
        tag => bad(at, format!("type tag {tag}")),
    }
}

fn skip_value(c: &mut Cursor<'_>, uses: &mut Uses, depth: usize) -> Result<(), Bad> {
    let at = c.pos;
    let code = c.i32()?;
    match code {
        -1 | -2 | -11 => {}
        -3 => c.take(1).map(drop)?,
        -4 | -9 => c.take(2).map(drop)?,
        -5 | -7 => c.take(4).map(drop)?,
        -6 | -8 => c.take(8).map(drop)?,
        -10 | -12 | -14 | -15 => c.utf()?,
        -13 => c.take(1).map(drop)?,
        -16 => {
            c.i32()?;
            c.utf()?
        }
        code if code >= 0 => {
            if depth > 64 {
                return bad(at, "values nest too deep");
            }
            uses.push((CLASS, code));
            c.i32()?;
            let n = c.i32()?;
            if n >= 0 {
                for _ in 0..n {
                    c.utf()?;
                    skip_value(c, uses, depth + 1)?;
                }
            } else {
                let n = -(n as i64) - 1;
                for _ in 0..n {
                    skip_value(c, uses, depth + 1)?;
                }
                c.i32()?;
            }
        }
        code => return bad(at, format!("value code {code}")),
    }
    Ok(())
}

fn count(c: &mut Cursor<'_>) -> Result<usize, Bad> {
    let at = c.pos;
    let n = c.i32()?;
    if n < 0 || n as usize > c.data.len() {
        return bad(at, format!("count {n}"));
    }
    Ok(n as usize)
}

fn use_id(uses: &mut Uses, kind: u8, id: i32) {
    if id >= 0 {
        uses.push((kind, id));
    }
}

/// A reference object (kinds 0–7): its id and what it refers to.
fn reference(c: &mut Cursor<'_>, kind: u8) -> Result<(i32, Uses), Bad> {
    let mut uses = Vec::new();
    let id = match kind {
        0 | CLASS | STRING => {
            let id = c.i32()?;
            c.utf()?;
            id
        }
        METHOD => {
            let id = c.i32()?;
            uses.push((CLASS, c.i32()?));
            c.utf()?;
            skip_type(c, 0)?;
            for _ in 0..count(c)? {
                skip_type(c, 0)?;
            }
            id
        }
        FIELD => {
            let id = c.i32()?;
            uses.push((CLASS, c.i32()?));
            c.utf()?;
            skip_type(c, 0)?;
            c.take(3)?;
            id
        }
        VARIABLE => {
            let id = c.i32()?;
            c.utf()?;
            skip_type(c, 0)?;
            id
        }
        ACCESS_PATH => {
            let id = c.i32()?;
            for _ in 0..count(c)? {
                let at = c.pos;
                let tag = c.u8()?;
                let target = c.i32()?;
                match tag {
                    0 => uses.push((VARIABLE, target)),
                    1 | 2 => uses.push((FIELD, target)),
                    3 => {}
                    4 => uses.push((ACCESS_PATH, target)),
                    tag => return bad(at, format!("access location tag {tag}")),
                }
            }
            id
        }
        CODE_LOCATION => {
            c.u8()?;
            let id = c.i32()?;
            for _ in 0..3 {
                use_id(&mut uses, STRING, c.i32()?);
            }
            c.i32()?;
            use_id(&mut uses, ACCESS_PATH, c.i32()?);
            for _ in 0..count(c)? {
                use_id(&mut uses, ACCESS_PATH, c.i32()?);
            }
            let locals = count(c)?;
            for _ in 0..locals {
                use_id(&mut uses, STRING, c.i32()?);
            }
            for _ in 0..locals {
                c.i32()?;
            }
            id
        }
        _ => unreachable!("reference kinds only"),
    };
    Ok((id, uses))
}

/// A tracepoint after its kind byte: (type, event id, uses).
fn tracepoint(c: &mut Cursor<'_>) -> Result<(u8, i32, Uses), Bad> {
    let at = c.pos;
    let mut uses = Vec::new();
    let ty = c.u8()?;
    use_id(&mut uses, CODE_LOCATION, c.i32()?);
    c.i32()?;
    let event = c.i32()?;
    c.i8()?;
    if matches!(ty, 0 | 7 | 8) {
        let k = c.u8()?;
        c.take(k as usize)?;
    }
    match ty {
        0 => {
            uses.push((METHOD, c.i32()?));
            skip_value(c, &mut uses, 0)?;
            for _ in 0..count(c)? {
                skip_value(c, &mut uses, 0)?;
            }
            c.i16()?;
        }
        1 | 4 => {
            skip_value(c, &mut uses, 0)?;
            c.i32()?;
            skip_value(c, &mut uses, 0)?;
        }
        2 | 5 => {
            uses.push((VARIABLE, c.i32()?));
            skip_value(c, &mut uses, 0)?;
        }
        3 | 6 => {
            uses.push((FIELD, c.i32()?));
            skip_value(c, &mut uses, 0)?;
            skip_value(c, &mut uses, 0)?;
        }
        7 => {
            c.i32()?;
        }
        8 => {
            c.i32()?;
            c.i32()?;
        }
        9 => {
            c.take(16)?;
            for _ in 0..count(c)? {
                use_id(&mut uses, CODE_LOCATION, c.i32()?);
            }
            c.i64()?;
            for _ in 0..count(c)? {
                skip_value(c, &mut uses, 0)?;
            }
            if c.u8()? != 0 {
                c.utf()?;
            }
        }
        10 | 11 => skip_value(c, &mut uses, 0)?,
        ty => return bad(at, format!("tracepoint type {ty}")),
    }
    Ok((ty, event, uses))
}

fn footer(c: &mut Cursor<'_>, ty: u8, uses: &mut Uses) -> Result<(), Bad> {
    match ty {
        0 => {
            skip_value(c, uses, 0)?;
            c.utf()?;
        }
        7 => {
            c.i32()?;
        }
        _ => {}
    }
    Ok(())
}

const KINDS: [&str; 12] = [
    "method_call",
    "read_array",
    "read_local",
    "read_field",
    "write_array",
    "write_local",
    "write_field",
    "loop",
    "loop_iteration",
    "snapshot_breakpoint",
    "throw",
    "catch",
];

/// A tree node while walking.
struct Node {
    ty: u8,
    event: i32,
    children: Vec<usize>,
    /// Logical offset after the header.
    start: i64,
    finished: bool,
}

#[derive(Default)]
struct Thread {
    /// Bytes of the logical stream so far.
    len: i64,
    nodes: Vec<Node>,
    roots: Vec<usize>,
    open: Vec<usize>,
}

/// Walks the complete blocks of `data`. Errors on a malformed header or
/// object (anything but a cut-off end), on a footer without an open
/// container, and on a use of a reference object never written before.
pub fn walk(data: &[u8]) -> R<Walked> {
    let mut c = Cursor { data, pos: 0 };
    let header = (|| Ok::<_, Short>((c.i64()?, c.i64()?)))();
    match header {
        Ok((DATA_MAGIC, VERSION)) => {}
        other => return Err(format!("bad data header {other:?}")),
    }
    let mut out = Walked {
        complete_end: 16,
        ..Walked::default()
    };
    let mut threads: BTreeMap<i32, Thread> = BTreeMap::new();
    let mut written: HashSet<(u8, i32)> = HashSet::new();
    loop {
        let block_at = c.pos;
        let Ok(kind) = c.u8() else { break };
        if kind == 12 {
            out.eof = true;
            if c.pos != data.len() {
                return Err(format!("{} bytes after EOF", data.len() - c.pos));
            }
            break;
        }
        if kind != 10 {
            return Err(format!(
                "offset {block_at}: kind {kind} where a block starts"
            ));
        }
        // Parse the whole block into a scratch copy of the thread, so a
        // half-written block leaves nothing behind.
        let Ok(thread_id) = c.i32() else { break };
        let mut thread = threads.remove(&thread_id).unwrap_or_default();
        let saved = (
            thread.len,
            thread.nodes.len(),
            thread.roots.len(),
            thread.open.clone(),
            thread
                .open
                .iter()
                .map(|&n| thread.nodes[n].children.len())
                .collect::<Vec<_>>(),
        );
        let mut cells = vec![(10u8, thread_id, block_at as i64, 0i64)];
        let mut new_written = Vec::new();
        let mut last_was_header = false;
        let payload = c.pos;
        let result = (|| -> Result<(), Bad> {
            loop {
                let at = c.pos;
                let logical = thread.len + (at - payload) as i64;
                let kind = c.u8()?;
                if kind != 11 {
                    last_was_header = false;
                }
                let check = |uses: &Uses, new: &[(u8, i32)]| -> Result<(), Bad> {
                    for u in uses {
                        if !written.contains(u) && !new.contains(u) {
                            return bad(at, format!("uses {u:?} before it is written"));
                        }
                    }
                    Ok(())
                };
                match kind {
                    0..=7 => {
                        let (id, uses) = reference(&mut c, kind)?;
                        check(&uses, &new_written)?;
                        if written.contains(&(kind, id)) || new_written.contains(&(kind, id)) {
                            out.duplicates += 1;
                        } else {
                            new_written.push((kind, id));
                        }
                        cells.push((kind, id, at as i64, -1));
                    }
                    8 => {
                        let (ty, event, uses) = tracepoint(&mut c)?;
                        check(&uses, &new_written)?;
                        let index = thread.nodes.len();
                        let container = matches!(ty, 0 | 7 | 8);
                        thread.nodes.push(Node {
                            ty,
                            event,
                            children: Vec::new(),
                            start: thread.len + (c.pos - payload) as i64,
                            finished: !container,
                        });
                        match thread.open.last() {
                            Some(&parent) => thread.nodes[parent].children.push(index),
                            None => thread.roots.push(index),
                        }
                        if container {
                            thread.open.push(index);
                            last_was_header = true;
                        }
                    }
                    9 => {
                        let Some(n) = thread.open.pop() else {
                            return bad(at, "a footer without an open container");
                        };
                        let mut uses = Vec::new();
                        footer(&mut c, thread.nodes[n].ty, &mut uses)?;
                        check(&uses, &new_written)?;
                        let node = &mut thread.nodes[n];
                        node.finished = true;
                        cells.push((8, node.event, node.start, logical));
                    }
                    11 => {
                        cells[0].3 = at as i64;
                        thread.len += (at - payload) as i64;
                        return Ok(());
                    }
                    kind => return bad(at, format!("kind {kind} inside a block")),
                }
            }
        })();
        match result {
            Ok(()) => {
                out.blocks += 1;
                out.complete_end = c.pos;
                out.blocks_ending_in_a_header += last_was_header as usize;
                out.cells.extend(cells);
                written.extend(new_written);
                threads.insert(thread_id, thread);
            }
            Err(Bad::Short) => {
                // Half-written: undo the block.
                let (len, nodes, roots, open, counts) = saved;
                thread.len = len;
                thread.nodes.truncate(nodes);
                thread.roots.truncate(roots);
                for (&n, &k) in open.iter().zip(&counts) {
                    thread.nodes[n].children.truncate(k);
                    thread.nodes[n].finished = false;
                }
                thread.open = open;
                threads.insert(thread_id, thread);
                break;
            }
            Err(Bad::Format(message)) => return Err(message),
        }
    }
    for (&id, thread) in &threads {
        out.unfinished += thread.open.len();
        let mut stack: Vec<(usize, usize)> = thread.roots.iter().rev().map(|&n| (n, 0)).collect();
        while let Some((n, depth)) = stack.pop() {
            let node = &thread.nodes[n];
            out.nodes.push(Flat {
                thread: id,
                depth,
                event: node.event,
                kind: KINDS[node.ty as usize],
                children: node.children.len(),
                unfinished: !node.finished,
            });
            stack.extend(node.children.iter().rev().map(|&c| (c, depth + 1)));
        }
    }
    Ok(out)
}

/// The cells of an index file (reference cells' end = −1), and whether it
/// has the footer.
pub fn index_cells(index: &[u8]) -> R<(Vec<Cell>, bool)> {
    let mut c = Cursor {
        data: index,
        pos: 0,
    };
    let header = (|| Ok::<_, Short>((c.i64()?, c.i64()?)))();
    if header.map_err(|_| "short index")? != (!DATA_MAGIC, VERSION) {
        return Err("bad index header".into());
    }
    let mut cells = Vec::new();
    while let Ok(bytes) = c.take(21) {
        let mut cell = Cursor {
            data: bytes,
            pos: 0,
        };
        let (kind, id, start, end) =
            (|| Ok::<_, Short>((cell.u8()?, cell.i32()?, cell.i64()?, cell.i64()?)))().unwrap();
        if kind == 12 {
            let magic = c.i64().map_err(|_| "no magic after the EOF cell")?;
            if magic != !DATA_MAGIC || c.pos != index.len() {
                return Err("bad index footer".into());
            }
            return Ok((cells, true));
        }
        cells.push((kind, id, start, if kind < 8 { -1 } else { end }));
    }
    Ok((cells, false))
}

/// Checks a complete trace: framing (header, blocks, `EOF` last), every
/// reference object written before its first use, thread streams (every
/// footer closes an open container; none left open), and the index: header,
/// footer, and exactly the cells the data calls for (as a multiset).
pub fn validate(data: &[u8], index: &[u8]) -> R<Walked> {
    let walked = walk(data)?;
    if !walked.eof || walked.complete_end + 1 != data.len() {
        return Err(format!(
            "data not complete: blocks end at {}, EOF {}, length {}",
            walked.complete_end,
            walked.eof,
            data.len()
        ));
    }
    if walked.unfinished != 0 {
        return Err(format!("{} containers never closed", walked.unfinished));
    }
    let (cells, footer) = index_cells(index)?;
    if !footer {
        return Err("index without footer".into());
    }
    same_cells(&cells, &walked.cells)?;
    Ok(walked)
}

/// Compares two cell lists as multisets.
pub fn same_cells(found: &[Cell], expected: &[Cell]) -> R<()> {
    let mut found = found.to_vec();
    let mut expected = expected.to_vec();
    found.sort_unstable();
    expected.sort_unstable();
    if found == expected {
        return Ok(());
    }
    let (f, e): (HashSet<_>, HashSet<_>) = (found.iter().collect(), expected.iter().collect());
    let extra: Vec<_> = f.difference(&e).take(5).collect();
    let missing: Vec<_> = e.difference(&f).take(5).collect();
    Err(format!(
        "index cells differ ({} found, {} expected); extra {extra:?}; missing {missing:?}",
        found.len(),
        expected.len()
    ))
}
