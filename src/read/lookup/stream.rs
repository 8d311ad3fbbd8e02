//! Reading one thread's logical stream at any offset: the object there,
//! decoded from the contiguous bytes of its block, and the scan that finds
//! the content ranges of containers the index has no cell for.

use std::ops::Range;

use crate::common::{LogicalOffset, PhysicalOffset};
use crate::error::{Error, NodeProblem, Result};
use crate::format::skip::{Skipped, skip_footer, skip_object, try_skip, try_skip_footer};
use crate::format::{ByteReader, Object, ObjectKind};
use crate::model::{Footer, TracepointHeader, TracepointType};
use crate::read::lookup::block_table::ThreadBlocks;
use crate::storage::{ByteSource, Resident};

/// The bytes [`Stream::object_alone`] copies first: most objects are
/// shorter.
const FIRST_COPY: u64 = 1 << 10;

/// The most bytes [`Stream::object_alone`] copies; a longer object is
/// read through the mapping.
const MAX_COPIED: u64 = 1 << 20;

/// A thread's logical stream over the data file's bytes; remembers the last
/// block it read from, so consecutive reads skip the block search.
pub(crate) struct Stream<'r> {
    data: &'r [u8],
    blocks: &'r ThreadBlocks,
    /// Logical start, logical end and physical start of the current block.
    block: (u64, u64, u64),
    /// Where a releasing stream releases what it left behind, and the first
    /// block it has not released (`None` before the first read).
    resident: Option<(&'r Resident, Option<usize>)>,
    /// Where a stream that does not release counts the blocks it enters
    /// ([`Resident::entered_at_random`]).
    counted: Option<&'r Resident>,
    /// Where objects read on their own take their bytes, when they are
    /// copied rather than lent ([`Stream::reading`]).
    copies: Option<ByteSource<'r>>,
    /// Whether a releasing stream also releases the blocks it kept when it
    /// is dropped (a walk's: the walk is over).
    release_at_end: bool,
    /// The physical offsets of a releasing stream's first read in the
    /// blocks it kept (`u64::MAX` before any) and of its last read: what
    /// it counts as entered at random when dropped (its kept blocks whole
    /// would count regions a short scan never reached).
    first_read: u64,
    last_read: u64,
}

impl Drop for Stream<'_> {
    /// A releasing stream's kept blocks (its last window) are released now
    /// when it was made [`released_at_end`](Stream::released_at_end), else
    /// what it read of them is counted as entered at random
    /// ([`Resident::entered_at_random`]): a scan of a call's children,
    /// asked for anywhere in the file, is released with the other random
    /// reads.
    fn drop(&mut self) {
        let Some((resident, Some(first))) = self.resident else {
            return;
        };
        let Some(last) = self.blocks.block_of(LogicalOffset(self.block.0)) else {
            return;
        };
        if self.release_at_end {
            release_blocks(resident, self.blocks, first..last + 1);
            return;
        }
        // What it read: from its first read in the kept blocks to its last,
        // and the 64 KiB after that read (an object rarely runs further).
        let (from, to) = (self.first_read, self.last_read);
        resident.entered_at_random(from.min(to)..from.max(to) + (64 << 10));
    }
}

/// Releases `blocks` of a thread, and every page of the lookups' mappings.
fn release_blocks(resident: &Resident, thread: &ThreadBlocks, blocks: std::ops::Range<usize>) {
    resident.left_behind(blocks.map(|block| {
        let (start, end, physical) = thread.block_bounds(block);
        physical..physical + (end - start)
    }));
}

impl<'r> Stream<'r> {
    /// The stream of the thread `blocks` describes.
    pub(crate) fn new(data: &'r [u8], blocks: &'r ThreadBlocks) -> Self {
        Stream {
            data,
            blocks,
            block: (0, 0, 0),
            resident: None,
            counted: None,
            copies: None,
            release_at_end: false,
            first_read: u64::MAX,
            last_read: 0,
        }
    }

    /// Makes this stream count the blocks it enters against `resident`'s
    /// window for random reads ([`Resident::entered_at_random`]).
    pub(crate) fn counted(mut self, resident: Option<&'r Resident>) -> Self {
        self.counted = resident;
        self
    }

    /// Makes the objects this stream reads on their own
    /// ([`object_alone`](Self::object_alone),
    /// [`footer_alone`](Self::footer_alone)) take their bytes as `source`
    /// does (the data file's bytes, read as the reader's random reads are).
    pub(crate) fn reading(mut self, source: ByteSource<'r>) -> Self {
        self.copies = source.copies().then_some(source);
        self
    }

    /// Makes this stream release the blocks it leaves behind when it moves
    /// forward, `resident.window` bytes at a time. For streams read front
    /// to back (walks, scans of a call's children); moving backwards
    /// releases nothing.
    pub(crate) fn releasing(mut self, resident: Option<&'r Resident>) -> Self {
        self.resident = resident.map(|resident| (resident, None));
        // What it reads stays within its window: lent, never copied.
        self.counted = None;
        self.copies = None;
        self
    }

    /// Makes a releasing stream also release the blocks it kept (its last
    /// window) when it is dropped: for a walk, which will not come back,
    /// so that walks one after another do not each leave a window behind.
    pub(crate) fn released_at_end(mut self) -> Self {
        self.release_at_end = true;
        self
    }

    /// The stream moves to block `next`: releases the blocks behind it once
    /// they span the window.
    #[cold]
    fn moved_to(&mut self, next: usize) {
        let Some((resident, kept)) = &mut self.resident else {
            return;
        };
        let first = match *kept {
            Some(first) if first < next => first,
            Some(_) => return,
            None => {
                *kept = Some(next);
                return;
            }
        };
        // Physical bytes: the pages mapped behind the stream are its blocks
        // and, in large page-cache folios, the other threads' blocks
        // between them, so the window is counted in the file, not in the
        // thread's logical stream.
        let behind = self.blocks.block_bounds(next).2 - self.blocks.block_bounds(first).2;
        if behind < resident.window {
            return;
        }
        release_blocks(resident, self.blocks, first..next);
        *kept = Some(next);
        self.first_read = self.blocks.block_bounds(next).2;
    }

    /// The stream's length.
    #[inline]
    pub(crate) fn len(&self) -> LogicalOffset {
        LogicalOffset(self.blocks.len)
    }

    /// The bytes from `at` to the end of its block (objects never span
    /// blocks), and the physical offset of the first.
    #[inline(always)]
    pub(crate) fn bytes_at(&mut self, at: LogicalOffset) -> Result<(&'r [u8], u64)> {
        let (mut start, mut end, mut physical) = self.block;
        if !(start <= at.0 && at.0 < end) {
            let block = self.block_of(at)?;
            if self.resident.is_some() {
                self.moved_to(block);
            }
            self.block = self.blocks.block_bounds(block);
            (start, end, physical) = self.block;
            if let Some(resident) = self.counted {
                resident.entered_at_random(physical..physical + (end - start));
            }
            if self.first_read == u64::MAX {
                self.first_read = physical + (at.0 - start);
            }
        }
        let from = physical + (at.0 - start);
        self.last_read = from;
        let to = from + (end - at.0);
        let bytes = usize::try_from(from)
            .ok()
            .zip(usize::try_from(to).ok())
            .and_then(|(from, to)| self.data.get(from..to));
        match bytes {
            Some(bytes) => Ok((bytes, from)),
            None => Err(Error::NoSuchNode(NodeProblem::BlockOutsideData(
                PhysicalOffset(physical),
            ))),
        }
    }

    /// The block holding `at`; an error past the stream's end.
    fn block_of(&self, at: LogicalOffset) -> Result<usize> {
        self.blocks
            .block_of(at)
            .ok_or(Error::NoSuchNode(NodeProblem::PastStreamEnd {
                thread: self.blocks.thread,
                at,
                end: LogicalOffset(self.blocks.len),
            }))
    }

    /// Where the bytes from `at` to the end of its block lie in the data
    /// file, without entering the block (nothing is counted or released).
    fn physical_span(&self, at: LogicalOffset) -> Result<Range<u64>> {
        let (start, end, physical) = self.blocks.block_bounds(self.block_of(at)?);
        let from = physical + (at.0 - start);
        let to = from + (end - at.0);
        if to > self.data.len() as u64 {
            return Err(Error::NoSuchNode(NodeProblem::BlockOutsideData(
                PhysicalOffset(physical),
            )));
        }
        Ok(from..to)
    }

    /// The object at `at` read on its own (a node asked for anywhere in
    /// the file): its bytes copied into `buffer` when the stream's objects
    /// read alone are ([`reading`](Self::reading)), which then fault in no
    /// page that must later be released; else [`object`](Self::object).
    pub(crate) fn object_alone<'b>(
        &mut self,
        at: LogicalOffset,
        open: Option<TracepointType>,
        buffer: &'b mut Vec<u8>,
    ) -> Result<(Object<'b>, u64)>
    where
        'r: 'b,
    {
        let measure = |bytes: &[u8], physical| Ok(skipped_in(bytes, physical, open)?.1);
        self.alone(at, buffer, measure, |mut reader| {
            let object = Object::decode(&mut reader, open)?;
            Ok((object, reader.position() as u64))
        })
    }

    /// The footer at `at` read on its own, as
    /// [`object_alone`](Self::object_alone) reads an object.
    pub(crate) fn footer_alone<'b>(
        &mut self,
        at: LogicalOffset,
        container: TracepointType,
        buffer: &'b mut Vec<u8>,
    ) -> Result<(Footer<'b>, u64)>
    where
        'r: 'b,
    {
        let measure = |bytes: &[u8], physical| footer_len_in(bytes, physical, container);
        self.alone(at, buffer, measure, |reader| {
            let mut reader = past_footer_kind(reader)?;
            let footer = Footer::decode(&mut reader, container)?;
            Ok((footer, reader.position() as u64))
        })
    }

    /// What `decode` makes of the object at `at`, given a reader at its
    /// start. When this stream's objects read alone are copied
    /// ([`reading`](Self::reading)), the reader is over a copy in `buffer`
    /// of enough of its block for `measure` (its length, given bytes from
    /// its start and their physical offset) to succeed: 1 KiB first, then
    /// 16 times more until the block's end, where `measure`'s error is the
    /// object's. Otherwise, or for an object longer than [`MAX_COPIED`]
    /// bytes, it reads the object in place.
    fn alone<'b, T>(
        &mut self,
        at: LogicalOffset,
        buffer: &'b mut Vec<u8>,
        measure: impl Fn(&[u8], u64) -> Result<u64>,
        decode: impl FnOnce(ByteReader<'b>) -> Result<T>,
    ) -> Result<T>
    where
        'r: 'b,
    {
        let Some(source) = self.copies else {
            return decode(self.reader_at(at)?);
        };
        let span = self.physical_span(at)?;
        let left = span.end - span.start;
        let mut wanted = left.min(FIRST_COPY);
        loop {
            // At most `MAX_COPIED` bytes, within the data file (checked).
            buffer.resize(wanted as usize, 0);
            let copied = source.read_into(span.start, buffer);
            buffer.truncate(copied);
            match measure(buffer, span.start) {
                Ok(_) => return decode(ByteReader::new(buffer, span.start)),
                // The whole rest of the block, or of a file cut short.
                Err(error) if wanted == left || (copied as u64) < wanted => return Err(error),
                Err(_) if wanted == MAX_COPIED => return decode(self.reader_at(at)?),
                Err(_) => wanted = left.min(wanted * 16).min(MAX_COPIED),
            }
        }
    }

    /// The bytes of the block holding the byte before `at`, from the
    /// block's start up to `at` (where an object ending at `at` lies
    /// whole, since objects never span blocks); empty at the stream's
    /// start.
    pub(crate) fn bytes_before(&mut self, at: LogicalOffset) -> Result<&'r [u8]> {
        let Some(last) = at.0.checked_sub(1) else {
            return Ok(&[]);
        };
        self.bytes_at(LogicalOffset(last))?;
        let (start, _, physical) = self.block;
        let to = physical + (at.0 - start);
        usize::try_from(physical)
            .ok()
            .zip(usize::try_from(to).ok())
            .and_then(|(from, to)| self.data.get(from..to))
            .ok_or(Error::NoSuchNode(NodeProblem::BlockOutsideData(
                PhysicalOffset(physical),
            )))
    }

    /// A reader from `at` to the end of its block.
    #[inline(always)]
    pub(crate) fn reader_at(&mut self, at: LogicalOffset) -> Result<ByteReader<'r>> {
        let (bytes, physical) = self.bytes_at(at)?;
        Ok(ByteReader::new(bytes, physical))
    }

    /// The object at `at` and its length in bytes. `open` is the type of the
    /// innermost open container, needed to decode a footer.
    #[inline]
    pub(crate) fn object(
        &mut self,
        at: LogicalOffset,
        open: Option<TracepointType>,
    ) -> Result<(Object<'r>, u64)> {
        let mut reader = self.reader_at(at)?;
        let object = Object::decode(&mut reader, open)?;
        Ok((object, reader.position() as u64))
    }

    /// The common header of the tracepoint at `at`, without its fields.
    pub(crate) fn header(&mut self, at: LogicalOffset) -> Result<TracepointHeader> {
        let mut reader = self.reader_at(at)?;
        let offset = reader.offset();
        let kind = reader.u8()?;
        if kind != ObjectKind::Tracepoint as u8 {
            return Err(Error::NoSuchNode(NodeProblem::NoTracepointAt {
                thread: self.blocks.thread,
                at,
                physical: PhysicalOffset(offset),
            }));
        }
        Ok(TracepointHeader::decode(&mut reader)?)
    }

    /// Skips the object at `at` without building it: what it is, and its
    /// length in bytes.
    #[inline(always)]
    pub(crate) fn skip(
        &mut self,
        at: LogicalOffset,
        open: Option<TracepointType>,
    ) -> Result<(Skipped, u64)> {
        let (bytes, physical) = self.bytes_at(at)?;
        skipped_in(bytes, physical, open)
    }

    /// The length of the footer at `at` of a container of type `container`.
    pub(crate) fn footer_len(
        &mut self,
        at: LogicalOffset,
        container: TracepointType,
    ) -> Result<u64> {
        let (bytes, physical) = self.bytes_at(at)?;
        footer_len_in(bytes, physical, container)
    }

    /// The footer at `at`, where the index says a container of type
    /// `container` ends, and its length in bytes.
    #[inline]
    pub(crate) fn footer(
        &mut self,
        at: LogicalOffset,
        container: TracepointType,
    ) -> Result<(Footer<'r>, u64)> {
        let mut reader = self.past_footer_kind(at)?;
        let footer = Footer::decode(&mut reader, container)?;
        Ok((footer, reader.position() as u64))
    }

    /// A reader after the `TRACEPOINT_FOOTER` byte at `at`; an error naming
    /// what stands there instead.
    fn past_footer_kind(&mut self, at: LogicalOffset) -> Result<ByteReader<'r>> {
        past_footer_kind(self.reader_at(at)?)
    }
}

/// The object at the start of `bytes` (at `physical` in the file) skipped:
/// what it is, and its length.
#[inline(always)]
fn skipped_in(bytes: &[u8], physical: u64, open: Option<TracepointType>) -> Result<(Skipped, u64)> {
    if let Some((skipped, len)) = try_skip(bytes, open) {
        return Ok((skipped, len as u64));
    }
    let mut reader = ByteReader::new(bytes, physical);
    let skipped = skip_object(&mut reader, open)?;
    Ok((skipped, reader.position() as u64))
}

/// The length of the footer of a `container` at the start of `bytes` (at
/// `physical` in the file).
fn footer_len_in(bytes: &[u8], physical: u64, container: TracepointType) -> Result<u64> {
    if let Some(len) = try_skip_footer(bytes, container) {
        return Ok(len as u64);
    }
    let mut reader = past_footer_kind(ByteReader::new(bytes, physical))?;
    skip_footer(&mut reader, container)?;
    Ok(reader.position() as u64)
}

/// `reader` after the `TRACEPOINT_FOOTER` byte it starts at; an error
/// naming what stands there instead.
fn past_footer_kind(mut reader: ByteReader<'_>) -> Result<ByteReader<'_>> {
    let offset = reader.offset();
    let kind = reader.u8()?;
    if kind != ObjectKind::TracepointFooter as u8 {
        return Err(crate::DecodeError::new(
            PhysicalOffset(offset),
            match ObjectKind::from_byte(kind) {
                Some(found) => crate::DecodeErrorKind::UnexpectedObject {
                    found,
                    context: "expected the footer the index points at",
                },
                None => crate::DecodeErrorKind::UnknownObjectKind(kind),
            },
        )
        .into());
    }
    Ok(reader)
}

/// An error for an object of `kind` where it may not stand.
pub(crate) fn unexpected(
    stream: &mut Stream<'_>,
    at: LogicalOffset,
    kind: ObjectKind,
    context: &'static str,
) -> Error {
    let offset = stream.reader_at(at).map_or(0, |reader| reader.offset());
    crate::DecodeError::new(
        PhysicalOffset(offset),
        crate::DecodeErrorKind::UnexpectedObject {
            found: kind,
            context,
        },
    )
    .into()
}

/// A container whose range the index lacked, found by scanning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unindexed {
    /// Its type (a footer's layout depends on it).
    pub(crate) container: TracepointType,
    /// Its event id.
    pub(crate) event: i32,
    /// Its content start.
    pub(crate) start: LogicalOffset,
    /// Its footer's offset, or the stream's end when it has none.
    pub(crate) end: LogicalOffset,
}

/// Finds the ranges of containers without a cell by scanning `stream` from
/// `from`: containers with a cell (`cell_end` gives the end of the one
/// whose content starts at an offset, asked in ascending order) are
/// skipped whole; those without are entered, and end at their footer or,
/// unfinished, at the end of the stream. Finished ones are listed in
/// post-order, then unfinished ones outermost first.
///
/// With `outer` (the type and event id of a container whose content starts
/// at `from`) the scan stops at that container's footer; without, `from`
/// must be at the thread's top level and the scan runs to the end of the
/// stream.
pub(crate) fn scan_unindexed(
    stream: &mut Stream<'_>,
    cell_end: &mut dyn FnMut(LogicalOffset) -> Option<LogicalOffset>,
    from: LogicalOffset,
    outer: Option<(TracepointType, i32)>,
) -> Result<Vec<Unindexed>> {
    let open = outer.map(|(container, event)| Unindexed {
        container,
        event,
        start: from,
        end: from,
    });
    scan_open(
        stream,
        cell_end,
        from,
        open.into_iter().collect(),
        outer.is_some(),
    )
}

/// [`scan_unindexed`] from `from` with the containers of `open` (outermost
/// first; their `end` is not read) still open there: a scan resumed where
/// an earlier one ended, over data appended since. With `stop`, the scan
/// ends when the last of them is closed.
pub(crate) fn scan_open(
    stream: &mut Stream<'_>,
    cell_end: &mut dyn FnMut(LogicalOffset) -> Option<LogicalOffset>,
    from: LogicalOffset,
    mut open: Vec<Unindexed>,
    stop: bool,
) -> Result<Vec<Unindexed>> {
    let len = stream.len();
    let mut found = Vec::new();
    let mut at = from;
    while at < len {
        let (skipped, object_len) = stream.skip(at, open.last().map(|o| o.container))?;
        match (skipped.kind, skipped.header) {
            (ObjectKind::Tracepoint, Some(header)) if header.tracepoint_type.is_container() => {
                let start = at + object_len;
                let container = header.tracepoint_type;
                match cell_end(start) {
                    Some(end) => {
                        at = if end < len {
                            end + stream.footer_len(end, container)?
                        } else {
                            len
                        };
                    }
                    None => {
                        open.push(Unindexed {
                            container,
                            event: header.event.0,
                            start,
                            end: start,
                        });
                        at = start;
                    }
                }
            }
            (ObjectKind::TracepointFooter, _) => {
                let closed = open.pop().expect("a footer decodes only when open");
                found.push(Unindexed { end: at, ..closed });
                at = at + object_len;
                if open.is_empty() && stop {
                    return Ok(found);
                }
            }
            (kind @ (ObjectKind::BlockStart | ObjectKind::BlockEnd | ObjectKind::Eof), _) => {
                return Err(unexpected(
                    stream,
                    at,
                    kind,
                    "inside a thread's logical stream",
                ));
            }
            _ => at = at + object_len,
        }
    }
    // Containers still open at the end were never finished.
    found.extend(open.into_iter().map(|open| Unindexed { end: len, ..open }));
    Ok(found)
}
