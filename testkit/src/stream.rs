//! Helpers of the streaming writer tests: streaming trees by name into
//! memory, and a checker of the streaming layout rules of `FORMAT-NOTES.md`
//! — block by block, cell for cell, and against the index the parallel
//! rebuild finds in the data alone.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Write;
use std::sync::{Arc, Mutex};

use tracetree::Result;
use tracetree::TraceBytes;
use tracetree::common::{EventId, LogicalOffset, ThreadId};
use tracetree::lowlevel::DecodedBlock;
use tracetree::lowlevel::RebuiltIndex;
use tracetree::lowlevel::{IndexCell, Object, ObjectKind};

use crate::layout::{BLOCK_HEADER_LEN, FILE_HEADER_LEN, INDEX_FOOTER_LEN};
use tracetree::read::EagerTrace;
use tracetree::read::RebuildOptions;
use tracetree::write::{StreamingOptions, StreamingWriter};

use crate::write::{Thread, record_threads, references};

/// A byte sink shared with the test.
#[derive(Clone, Default)]
pub struct Memory(pub Arc<Mutex<Vec<u8>>>);

impl Memory {
    /// The bytes written so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap().clone()
    }
}

impl Write for Memory {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A byte sink that only counts what it is given (output too large to
/// keep, or whose memory a test measures).
#[derive(Debug, Default)]
pub struct Count(pub u64);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A streaming writer writing to memory, and its two sinks.
pub fn memory_writer(options: StreamingOptions) -> (StreamingWriter, Memory, Memory) {
    let (data, index) = (Memory::default(), Memory::default());
    let writer = StreamingWriter::from_writers(data.clone(), index.clone(), options).unwrap();
    (writer, data, index)
}

/// Streams `threads` one after the other (as [`crate::write::write`] dumps
/// them); returns the files and the event ids in pre-order per thread.
pub fn stream(
    threads: &[Thread],
    options: StreamingOptions,
) -> Result<(Vec<u8>, Vec<u8>, Vec<EventId>)> {
    let (mut writer, data, index) = memory_writer(options);
    let events = record_threads(&mut writer, threads)?;
    writer.close()?;
    Ok((data.bytes(), index.bytes(), events))
}

/// Where blocks are cut, when no producer cut one on purpose.
#[derive(Debug, Clone, Copy)]
pub struct CutRule {
    pub block_size: usize,
    pub flush_threshold: usize,
}

impl From<StreamingOptions> for CutRule {
    fn from(options: StreamingOptions) -> Self {
        CutRule {
            block_size: options.block_size,
            flush_threshold: options.flush_threshold,
        }
    }
}

/// What a checked trace holds.
#[derive(Debug, Default)]
pub struct StreamLayout {
    /// Blocks, thread-name blocks included.
    pub blocks: usize,
    /// Data blocks (thread-name blocks excluded) per thread.
    pub data_blocks: BTreeMap<ThreadId, usize>,
    /// Reference objects written again after an earlier copy.
    pub duplicates: usize,
    /// Blocks whose last object is a container's header.
    pub blocks_ending_in_a_header: usize,
}

/// A reference object, by kind and id.
type Key = (ObjectKind, i32);

/// Reference objects: their size, and what they need.
type Objects = HashMap<Key, (u64, Vec<Key>)>;

/// The last data block of a thread, for the cut rule.
struct BlockShape {
    /// Its position among all blocks.
    index: usize,
    payload: usize,
    /// Whether a leaf or footer ends it.
    ends_after_leaf_or_footer: bool,
    /// Its reference objects.
    references: HashSet<(ObjectKind, i32)>,
}

/// At most the bytes the first try of writing `object` (the first
/// tracepoint or footer of a block) may have needed after the block before
/// it: the object, and every reference object it needs (transitively) that
/// the block before does not hold — any of them may not have been on disk
/// yet when it was first tried (the I/O thread marks objects as it goes).
fn group_bound(
    object: (u64, u64),
    uses: &[(ObjectKind, i32)],
    objects: &Objects,
    before: &HashSet<(ObjectKind, i32)>,
) -> u64 {
    let mut bound = object.1 - object.0;
    let mut seen = HashSet::new();
    let mut stack: Vec<(ObjectKind, i32)> = uses.to_vec();
    while let Some(key) = stack.pop() {
        if before.contains(&key) || !seen.insert(key) {
            continue;
        }
        let (size, needs) = &objects[&key];
        bound += size;
        stack.extend(needs);
    }
    bound
}

/// A cell with the fields that carry meaning (a reference cell's end is
/// unused).
fn normalized(cell: IndexCell) -> IndexCell {
    cell.canonical()
}

/// Checks every streaming layout rule of a closed trace and returns what it
/// holds:
///
/// - the data file is header, blocks, `EOF` (its last byte);
/// - the index is header, cells, and the footer `EOF` −1/−1 + magic;
/// - each block's cells follow its `BLOCK_START` cell (start: the block's
///   first byte, end: its `BLOCK_END`), in write order: a reference object's
///   at its physical offset (end: the physical offset of the thread's logical
///   −1 in this block, as the reference writer writes), a container's when
///   its footer is written (logical start after the header, logical footer
///   offset);
/// - a reference object precedes every object referring to it, and no block
///   holds one twice;
/// - every thread's last block holds its `THREAD_NAME` alone, and no other
///   block holds one;
/// - the parallel rebuild finds the very same cells in the data alone;
/// - the eager loader loads the trace complete;
/// - with `cut`, every data block but a thread's last was cut by the rule:
///   after a leaf or footer with less than the threshold left, or before a
///   group that did not fit (or may not have: which reference objects a
///   group needed depends on what the I/O thread had written by then).
pub fn check_stream_layout(data: &[u8], index: &[u8], cut: Option<CutRule>) -> StreamLayout {
    let (cells, has_footer) = IndexCell::parse_file(index).expect("index cells");
    assert!(has_footer, "index footer");
    let footer = &index[index.len() - INDEX_FOOTER_LEN..];
    assert_eq!(footer[0], ObjectKind::Eof as u8);
    assert_eq!(
        &footer[1..21],
        &[0xFF; 20],
        "EOF cell: id, start and end −1"
    );

    let mut layout = StreamLayout::default();
    let mut expected: Vec<IndexCell> = Vec::new();
    let mut written: HashSet<(ObjectKind, i32)> = HashSet::new();
    let mut logical: HashMap<ThreadId, u64> = HashMap::new();
    let mut open: HashMap<ThreadId, Vec<(EventId, u64)>> = HashMap::new();
    let mut named: BTreeSet<ThreadId> = BTreeSet::new();
    // Per reference object: its size and what it needs. Per thread: its
    // last data block.
    let mut objects: Objects = HashMap::new();
    let mut previous: HashMap<ThreadId, BlockShape> = HashMap::new();
    let (blocks, error) = DecodedBlock::decode_all(data);
    assert_eq!(error, None, "the data decodes");
    let eof = blocks
        .last()
        .map_or(FILE_HEADER_LEN, |block| block.end.get() + 1);
    assert_eq!(eof as usize, data.len() - 1, "EOF is the last byte");
    assert_eq!(data[data.len() - 1], ObjectKind::Eof as u8, "EOF");
    for block in blocks {
        let block_index = layout.blocks;
        layout.blocks += 1;
        let thread = block.thread;
        assert!(
            !named.contains(&thread),
            "block at {} after thread {thread}'s name block",
            block.start
        );
        expected.push(IndexCell::Block {
            thread,
            start: block.start,
            end: block.end,
        });
        let payload_start = block.payload_start().get();
        let logical_start = *logical.get(&thread).unwrap_or(&0);
        let to_logical = |offset: u64| offset - payload_start + logical_start;
        let shift_end = payload_start as i64 - logical_start as i64 - 1;
        let open = open.entry(thread).or_default();
        let mut in_block = HashSet::new();
        // The first tracepoint or footer: where it lies, what it uses.
        let mut first_object = None;
        let mut last_kind = None;
        for (i, (offset, object)) in block.objects.iter().enumerate() {
            let next = block.objects.get(i + 1).map_or(block.end, |o| o.0);
            for reference in references(object) {
                assert!(
                    written.contains(&reference),
                    "{reference:?} used at {offset} before it is written"
                );
            }
            match object {
                Object::Tracepoint(tp) => {
                    if tp.is_container() {
                        open.push((tp.event(), to_logical(next.get())));
                    }
                    first_object.get_or_insert(((offset.get(), next.get()), references(object)));
                    last_kind = Some(if tp.is_container() { "header" } else { "leaf" });
                }
                Object::Footer(_) => {
                    let (event, start) = open.pop().expect("footer of an open container");
                    expected.push(IndexCell::Container {
                        event,
                        start: LogicalOffset::new(start),
                        end: LogicalOffset::new(to_logical(offset.get())),
                    });
                    first_object.get_or_insert(((offset.get(), next.get()), references(object)));
                    last_kind = Some("footer");
                }
                Object::ThreadName(name) => {
                    assert_eq!(name.thread, thread, "a thread's own name");
                    assert_eq!(block.objects.len(), 1, "a name block holds the name alone");
                    named.insert(thread);
                    expected.push(IndexCell::Reference {
                        kind: ObjectKind::ThreadName,
                        id: thread.get(),
                        at: *offset,
                        end: shift_end,
                    });
                    last_kind = Some("name");
                }
                reference => {
                    let key = (reference.kind(), reference.reference_id().unwrap());
                    assert!(
                        in_block.insert(key),
                        "{key:?} twice in the block at {}",
                        block.start
                    );
                    if written.insert(key) {
                        objects.insert(key, (next.get() - offset.get(), references(reference)));
                    } else {
                        layout.duplicates += 1;
                    }
                    expected.push(IndexCell::Reference {
                        kind: key.0,
                        id: key.1,
                        at: *offset,
                        end: shift_end,
                    });
                    last_kind = Some("reference");
                }
            }
        }
        let payload = (block.end.get() - payload_start) as usize;
        *logical.entry(thread).or_default() += payload as u64;
        if last_kind != Some("name") {
            *layout.data_blocks.entry(thread).or_default() += 1;
            layout.blocks_ending_in_a_header += usize::from(last_kind == Some("header"));
            if let (Some(rule), Some(before), Some((span, uses))) =
                (cut, previous.get(&thread), first_object.as_ref())
            {
                let by_threshold = before.ends_after_leaf_or_footer
                    && rule.block_size.saturating_sub(before.payload) < rule.flush_threshold;
                let group = group_bound(*span, uses, &objects, &before.references);
                let by_overflow = before.payload as u64 + group > rule.block_size as u64;
                assert!(
                    by_threshold || by_overflow,
                    "thread {thread}'s block at {} ({} bytes; the next needed {group}) was cut \
                     neither by the threshold nor by an overflow",
                    before.index,
                    before.payload,
                );
            }
            previous.insert(
                thread,
                BlockShape {
                    index: block_index,
                    payload,
                    ends_after_leaf_or_footer: matches!(last_kind, Some("leaf" | "footer")),
                    references: in_block,
                },
            );
        }
    }
    assert_eq!(cells, expected, "index cells");
    let threads: BTreeSet<ThreadId> = logical.keys().copied().collect();
    assert_eq!(named, threads, "every thread has a name block");

    // The rebuild from the data alone agrees, cell for cell and in order.
    let rebuilt = RebuiltIndex::build(data, RebuildOptions::default()).unwrap();
    assert!(rebuilt.unfinished.is_empty());
    let rebuilt: Vec<IndexCell> = rebuilt.cells().copied().map(normalized).collect();
    let ours: Vec<IndexCell> = cells.iter().copied().map(normalized).collect();
    assert_eq!(rebuilt, ours, "the rebuilt index");

    let eager = EagerTrace::load(TraceBytes::from_vec(data.to_vec())).unwrap();
    assert!(eager.report().is_complete(), "{:?}", eager.report());

    layout
}

/// Offsets of every block of `data` that is complete, by thread: what a
/// reader of a killed writer's files must find.
pub fn complete_blocks(data: &[u8]) -> Vec<(ThreadId, u64)> {
    let (blocks, _) = DecodedBlock::decode_all(data);
    blocks
        .iter()
        .map(|block| (block.thread, block.start.get()))
        .collect()
}

/// Bytes of a block's header, for tests computing offsets.
pub const HEADER: u64 = BLOCK_HEADER_LEN;
