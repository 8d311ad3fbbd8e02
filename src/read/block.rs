//! A data file decoded block by block, every object built: for tools and
//! tests that check a file at the level of its objects
//! ([`DecodedBlock::decode_all`]). The
//! readers find blocks through the rebuild's discovery instead.

use std::collections::HashMap;

use crate::common::{PhysicalOffset, ThreadId};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::{
    BLOCK_HEADER_LEN, ByteReader, DATA_MAGIC, FILE_HEADER_LEN, Object, ObjectKind,
    check_file_header,
};
use crate::model::TracepointType;

/// A complete block of a data file, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedBlock<'a> {
    /// The block's thread.
    pub thread: ThreadId,
    /// Offset of its `BLOCK_START` kind byte.
    pub start: PhysicalOffset,
    /// Offset of its `BLOCK_END` byte.
    pub end: PhysicalOffset,
    /// Its objects (between `BLOCK_START` and `BLOCK_END`), each with the
    /// offset of its kind byte.
    pub objects: Vec<(PhysicalOffset, Object<'a>)>,
}

impl<'a> DecodedBlock<'a> {
    /// The complete blocks of data file `data`, in file order, every
    /// object decoded, and what ended them: `None` for `EOF`, the end of
    /// the data or a half-written block; else the error met (a bad header,
    /// bad bytes, an object where a block must start), which names its
    /// offset.
    pub fn decode_all(data: &'a [u8]) -> (Vec<DecodedBlock<'a>>, Option<DecodeError>) {
        let mut blocks = Vec::new();
        let error = decode_into(data, &mut blocks).err();
        (blocks, error)
    }

    /// Offset of the first payload byte (after the block header).
    pub fn payload_start(&self) -> PhysicalOffset {
        self.start.add(BLOCK_HEADER_LEN)
    }
}

/// [`DecodedBlock::decode_all`], into `blocks`.
fn decode_into<'a>(data: &'a [u8], blocks: &mut Vec<DecodedBlock<'a>>) -> Result<(), DecodeError> {
    check_file_header(data, DATA_MAGIC)?;
    // Each thread's open containers, innermost last, as its blocks so far
    // left them: a footer needs the type of the container it closes.
    let mut open: HashMap<ThreadId, Vec<TracepointType>> = HashMap::new();
    let mut reader = ByteReader::new(&data[FILE_HEADER_LEN as usize..], FILE_HEADER_LEN);
    while !reader.is_empty() {
        let start = PhysicalOffset(reader.offset());
        let thread = match Object::decode(&mut reader, None) {
            Ok(Object::BlockStart(thread)) => thread,
            Ok(Object::Eof)
            | Err(DecodeError {
                kind: DecodeErrorKind::UnexpectedEnd { .. },
                ..
            }) => {
                break;
            }
            Ok(other) => {
                return Err(unexpected(
                    start,
                    other.kind(),
                    "expected BLOCK_START or EOF between blocks",
                ));
            }
            Err(error) => return Err(error),
        };
        let open = open.entry(thread).or_default();
        let Some(block) = read_block(&mut reader, thread, start, open)? else {
            break;
        };
        blocks.push(block);
    }
    Ok(())
}

/// The block of `thread` whose `BLOCK_START`, at `start`, the reader just
/// read, up to its `BLOCK_END`; `None` when the data ends first. `open`
/// (the thread's open containers) is updated only for a complete block, so
/// a half-written block leaves no trace.
fn read_block<'a>(
    reader: &mut ByteReader<'a>,
    thread: ThreadId,
    start: PhysicalOffset,
    open: &mut Vec<TracepointType>,
) -> Result<Option<DecodedBlock<'a>>, DecodeError> {
    // Containers opened in this block, and how many of the thread's
    // previously open containers this block closed.
    let mut opened: Vec<TracepointType> = Vec::new();
    let mut closed_before = 0usize;
    let mut objects = Vec::new();
    loop {
        let at = PhysicalOffset(reader.offset());
        let innermost = opened.last().copied().or_else(|| {
            open.len()
                .checked_sub(closed_before + 1)
                .map(|index| open[index])
        });
        let object = match Object::decode(reader, innermost) {
            Ok(object) => object,
            Err(DecodeError {
                kind: DecodeErrorKind::UnexpectedEnd { .. },
                ..
            }) => return Ok(None),
            Err(error) => return Err(error),
        };
        match &object {
            Object::BlockEnd => {
                open.truncate(open.len() - closed_before);
                open.extend(opened);
                return Ok(Some(DecodedBlock {
                    thread,
                    start,
                    end: at,
                    objects,
                }));
            }
            Object::BlockStart(_) | Object::Eof => {
                return Err(unexpected(at, object.kind(), "inside a block"));
            }
            // A footer closes a container of this block, or else one the
            // thread's earlier blocks left open.
            Object::Footer(_) => closed_before += usize::from(opened.pop().is_none()),
            Object::Tracepoint(tracepoint) if tracepoint.is_container() => {
                opened.push(tracepoint.tracepoint_type());
            }
            _ => {}
        }
        objects.push((at, object));
    }
}

/// An object of kind `found` where it may not stand.
fn unexpected(at: PhysicalOffset, found: ObjectKind, context: &'static str) -> DecodeError {
    DecodeError::new(at, DecodeErrorKind::UnexpectedObject { found, context })
}
