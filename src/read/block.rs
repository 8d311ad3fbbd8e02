//! Decoding one block: the shared step of every reader that walks a data
//! file from start to end (the eager loader and the index rebuild).

use crate::common::{PhysicalOffset, ThreadId};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::skip::{Skipped, skip_object};
use crate::format::{ByteReader, Object, ObjectKind};
use crate::model::TracepointType;

/// How a block's objects are read: decoded ([`Object`]) or only skipped
/// ([`Skipped`]: kind and tracepoint header, nothing built). Both accept
/// and refuse the same bytes, with the same errors.
pub trait BlockObject<'a>: Sized {
    /// Reads the object at the reader's position; `open_container` is the
    /// type of the innermost open container, which a footer needs.
    fn read(
        reader: &mut ByteReader<'a>,
        open_container: Option<TracepointType>,
    ) -> Result<Self, DecodeError>;
    /// The object's kind.
    fn object_kind(&self) -> ObjectKind;
    /// The type of a container tracepoint (`None` for anything else).
    fn container_type(&self) -> Option<TracepointType>;
}

impl<'a> BlockObject<'a> for Object<'a> {
    fn read(
        reader: &mut ByteReader<'a>,
        open_container: Option<TracepointType>,
    ) -> Result<Self, DecodeError> {
        Object::decode(reader, open_container)
    }

    fn object_kind(&self) -> ObjectKind {
        self.kind()
    }

    fn container_type(&self) -> Option<TracepointType> {
        match self {
            Object::Tracepoint(tracepoint) if tracepoint.is_container() => {
                Some(tracepoint.tracepoint_type())
            }
            _ => None,
        }
    }
}

impl<'a> BlockObject<'a> for Skipped {
    #[inline]
    fn read(
        reader: &mut ByteReader<'a>,
        open_container: Option<TracepointType>,
    ) -> Result<Self, DecodeError> {
        skip_object(reader, open_container)
    }

    fn object_kind(&self) -> ObjectKind {
        self.kind
    }

    fn container_type(&self) -> Option<TracepointType> {
        self.header
            .map(|header| header.tracepoint_type)
            .filter(|kind| kind.is_container())
    }
}

/// A complete block and its objects, between (not including) its
/// `BLOCK_START` and `BLOCK_END`: decoded ([`Object`], the default) or
/// skipped (`Skipped`).
#[derive(Debug)]
pub struct DecodedBlock<O> {
    /// The block's thread.
    pub thread: ThreadId,
    /// Offset of the `BLOCK_START` kind byte.
    pub start: PhysicalOffset,
    /// Offset of the `BLOCK_END` byte.
    pub end: PhysicalOffset,
    /// The objects, each with the offset of its kind byte.
    pub objects: Vec<(PhysicalOffset, O)>,
}

impl<O> DecodedBlock<O> {
    /// Offset of the first payload byte (after the block header).
    pub fn payload_start(&self) -> PhysicalOffset {
        self.start.add(crate::format::BLOCK_HEADER_LEN)
    }

    /// Offset just after the `BLOCK_END` byte.
    pub fn next(&self) -> PhysicalOffset {
        self.end.add(1)
    }
}

/// What stands at a block boundary.
#[derive(Debug)]
pub enum BlockStep<O> {
    /// A complete block.
    Block(DecodedBlock<O>),
    /// The `EOF` object, at this offset.
    Eof(PhysicalOffset),
    /// The data ended at a block boundary without `EOF`.
    End,
    /// The data ended inside the block starting here: a half-written block.
    Truncated {
        /// Offset of the unfinished block's `BLOCK_START`.
        start: PhysicalOffset,
    },
}

impl<'a, O: BlockObject<'a>> BlockStep<O> {
    /// Decodes the block starting at `at`. `open_stacks` gives, once the
    /// block's thread is known, the stack of the types of that thread's
    /// open containers, innermost last, as the previous blocks left it; it
    /// is updated only when the block is complete, so a half-written block
    /// leaves no trace. `O` says whether the objects are decoded
    /// ([`Object`]) or skipped (`Skipped`).
    pub fn decode<'s>(
        data: &'a [u8],
        at: PhysicalOffset,
        open_stacks: impl FnOnce(ThreadId) -> &'s mut Vec<TracepointType>,
    ) -> Result<Self, DecodeError> {
        decode_block(data, at, open_stacks)
    }
}

/// [`BlockStep::decode`].
pub(crate) fn decode_block<'a, 's, O: BlockObject<'a>>(
    data: &'a [u8],
    at: PhysicalOffset,
    open_stacks: impl FnOnce(ThreadId) -> &'s mut Vec<TracepointType>,
) -> Result<BlockStep<O>, DecodeError> {
    let start = usize::try_from(at.0).unwrap_or(usize::MAX).min(data.len());
    let mut reader = ByteReader::new(&data[start..], at.0);
    if reader.is_empty() {
        return Ok(BlockStep::End);
    }
    match Object::decode(&mut reader, None) {
        Ok(Object::BlockStart(thread)) => {
            let open = open_stacks(thread);
            decode_block_body(&mut reader, at, thread, open)
        }
        Ok(Object::Eof) => Ok(BlockStep::Eof(at)),
        Ok(other) => Err(DecodeError::new(
            PhysicalOffset(at.0),
            DecodeErrorKind::UnexpectedObject {
                found: other.kind(),
                context: "expected BLOCK_START or EOF between blocks",
            },
        )),
        Err(DecodeError {
            kind: DecodeErrorKind::UnexpectedEnd { .. },
            ..
        }) => Ok(BlockStep::Truncated { start: at }),
        Err(error) => Err(error),
    }
}

fn decode_block_body<'a, O: BlockObject<'a>>(
    reader: &mut ByteReader<'a>,
    start: PhysicalOffset,
    thread: ThreadId,
    open: &mut Vec<TracepointType>,
) -> Result<BlockStep<O>, DecodeError> {
    // Containers opened in this block, and how many of the thread's
    // previously open containers this block closed.
    let mut opened: Vec<TracepointType> = Vec::new();
    let mut closed_before = 0usize;
    let mut objects = Vec::new();
    loop {
        let offset = PhysicalOffset(reader.offset());
        let innermost = opened.last().copied().or_else(|| {
            open.len()
                .checked_sub(closed_before + 1)
                .map(|index| open[index])
        });
        let object = match O::read(reader, innermost) {
            Ok(object) => object,
            Err(DecodeError {
                kind: DecodeErrorKind::UnexpectedEnd { .. },
                ..
            }) => return Ok(BlockStep::Truncated { start }),
            Err(error) => return Err(error),
        };
        match object.object_kind() {
            ObjectKind::BlockEnd => {
                open.truncate(open.len() - closed_before);
                open.extend(opened);
                return Ok(BlockStep::Block(DecodedBlock {
                    thread,
                    start,
                    end: offset,
                    objects,
                }));
            }
            kind @ (ObjectKind::BlockStart | ObjectKind::Eof) => {
                return Err(DecodeError::new(
                    PhysicalOffset(offset.0),
                    DecodeErrorKind::UnexpectedObject {
                        found: kind,
                        context: "inside a block",
                    },
                ));
            }
            ObjectKind::TracepointFooter => {
                // A footer closes a container of this block, or else one the
                // thread's earlier blocks left open.
                closed_before += usize::from(opened.pop().is_none());
            }
            _ => {
                if let Some(container) = object.container_type() {
                    opened.push(container);
                }
            }
        }
        objects.push((offset, object));
    }
}
