//! A node's subtree as its encoded objects: what a consumer that compares
//! or copies bytes reads instead of decoded tracepoints (the trace diff
//! recognises strictly equal subtrees this way).
//!
//! The subtree runs from the node's tracepoint to the end of its footer in
//! its thread's logical stream; its objects are handed out one by one, as
//! they lie in their blocks (objects never span blocks), reference objects
//! included. Only finished nodes have one: an unfinished container's
//! content runs to the stream's end, where the index, not the bytes, says
//! what is inside.
//!
//! A reading that hands out every object can record their lengths
//! ([`RawSubtree::recording`]); a second reading of the same subtree given
//! that record ([`RawSubtree::replaying`]) cuts its objects from the blocks
//! by it instead of decoding each again (a consumer that checks a subtree
//! before it copies it reads it twice). The record keeps at most
//! [`RECORD_MAX`] bytes; past them it notes where it stopped and which
//! containers were open there, and the second reading decodes on from
//! that point.

use crate::common::{LogicalOffset, ObjectKind};
use crate::error::{Error, NodeProblem, Result};
use crate::model::TracepointType;
use crate::read::lookup::stream::Stream;

use super::{LazyNode, LazyTraceReader};

/// The encoded objects of one finished node's subtree, in stream order
/// ([`TraceTree::raw_subtree`](crate::tree::TraceTree::raw_subtree)).
pub struct RawSubtree<'r> {
    stream: Stream<'r>,
    at: LogicalOffset,
    end: LogicalOffset,
    /// The types of the containers open at `at`, for their footers (not
    /// kept while objects are cut by a record).
    open: Vec<TracepointType>,
    lengths: Lengths<'r>,
}

/// Bytes of object lengths a record keeps (about one an object).
const RECORD_MAX: usize = 32 << 20;

/// The lengths of a subtree's objects as one reading handed them out
/// ([`RawSubtree::recording`]), for a second reading of it
/// ([`RawSubtree::replaying`]).
#[derive(Debug)]
pub(crate) struct ObjectLengths {
    /// The subtree's bounds.
    start: LogicalOffset,
    end: LogicalOffset,
    /// Each object's length, LEB128, up to `max` bytes.
    lengths: Vec<u8>,
    max: usize,
    /// Where the record stopped short of the subtree's end (at
    /// [`RECORD_MAX`]), and the containers open there.
    stopped: Option<(LogicalOffset, Vec<TracepointType>)>,
}

impl ObjectLengths {
    /// Records the length of the object at `at`, where the containers
    /// `open` are open, unless the record stopped.
    #[inline(always)]
    fn note(&mut self, at: LogicalOffset, open: &[TracepointType], len: u64) {
        if len < 0x80 && self.stopped.is_none() && self.lengths.len() < self.max {
            self.lengths.push(len as u8);
        } else {
            self.note_rare(at, open, len);
        }
    }

    #[cold]
    #[inline(never)]
    fn note_rare(&mut self, at: LogicalOffset, open: &[TracepointType], mut len: u64) {
        if self.stopped.is_some() {
            return;
        }
        if self.lengths.len() >= self.max {
            self.stopped = Some((at, open.to_vec()));
            return;
        }
        while len >= 0x80 {
            self.lengths.push(len as u8 | 0x80);
            len >>= 7;
        }
        self.lengths.push(len as u8);
    }

    /// The length at `read`, moving `read` past it.
    #[inline]
    fn next(&self, read: &mut usize) -> Option<usize> {
        let (mut len, mut shift) = (0usize, 0u32);
        loop {
            let byte = *self.lengths.get(*read)?;
            *read += 1;
            len |= usize::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(len);
            }
            shift += 7;
        }
    }
}

/// Whether a reading records its objects' lengths or cuts them by a record.
enum Lengths<'r> {
    Off,
    Recording(ObjectLengths),
    /// The record, the read position in it, and the rest of the current
    /// block's bytes.
    Replaying(ObjectLengths, usize, &'r [u8]),
}

impl std::fmt::Debug for RawSubtree<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawSubtree")
            .field("at", &self.at)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl<'r> RawSubtree<'r> {
    /// The bytes of the subtree not yet handed out (its whole length
    /// before the first [`next_object`](Self::next_object)), reference
    /// objects among them included.
    pub fn remaining(&self) -> u64 {
        self.end.0.saturating_sub(self.at.0)
    }

    /// The next run of the subtree's bytes that lie together (up to its
    /// block's end), reference objects and all, with no object decoded;
    /// `None` past the subtree's end. A subtree read by runs is read by runs
    /// to its end: [`next_object`](Self::next_object) does not follow one.
    pub fn next_run(&mut self) -> Result<Option<&'r [u8]>> {
        if self.at >= self.end {
            return Ok(None);
        }
        let (bytes, _) = self.stream.bytes_at(self.at)?;
        let len =
            usize::try_from(self.end.0 - self.at.0).map_or(bytes.len(), |n| n.min(bytes.len()));
        if len == 0 {
            return Err(Error::internal("an empty block inside a subtree"));
        }
        self.at = self.at + len as u64;
        Ok(Some(&bytes[..len]))
    }

    /// The next object's bytes, its kind byte first (tracepoints, footers
    /// and reference objects, as they lie in the stream); `None` past the
    /// subtree's end. A malformed object is the decoder's error.
    #[inline]
    pub fn next_object(&mut self) -> Result<Option<&'r [u8]>> {
        // A length of one byte, cut from the block's rest: a replayed
        // object, in a few instructions.
        if let Lengths::Replaying(record, read, run) = &mut self.lengths
            && let Some(&len) = record.lengths.get(*read)
            && (1..0x80).contains(&len)
            && let Some((object, rest)) = run.split_at_checked(usize::from(len))
        {
            *read += 1;
            *run = rest;
            self.at = self.at + u64::from(len);
            return Ok(Some(object));
        }
        self.next_decoded()
    }

    /// [`next_object`](Self::next_object) but for its fast path.
    #[inline(never)]
    fn next_decoded(&mut self) -> Result<Option<&'r [u8]>> {
        if self.at >= self.end {
            return Ok(None);
        }
        if let Some(object) = self.replayed()? {
            return Ok(Some(object));
        }
        let open = self.open.last().copied();
        let (skipped, len) = self.stream.skip(self.at, open)?;
        let (bytes, _) = self.stream.bytes_at(self.at)?;
        let object = usize::try_from(len)
            .ok()
            .and_then(|len| bytes.get(..len))
            .ok_or_else(|| Error::internal("an object longer than its block"))?;
        if let Lengths::Recording(record) = &mut self.lengths {
            record.note(self.at, &self.open, len);
        }
        match skipped.kind {
            ObjectKind::Tracepoint => {
                if let Some(header) = skipped.header
                    && header.tracepoint_type.is_container()
                {
                    self.open.push(header.tracepoint_type);
                }
            }
            ObjectKind::TracepointFooter => {
                self.open.pop();
            }
            _ => {}
        }
        self.at = self.at + len;
        if self.at > self.end || (self.at == self.end && !self.open.is_empty()) {
            // The index's bounds disagree with the bytes: the data (or
            // its index) is damaged, not tracetree.
            return Err(Error::NoSuchNode(NodeProblem::Contradicted(format!(
                "a subtree's objects end at {} inside its bounds ending at {}",
                self.at, self.end
            ))));
        }
        Ok(Some(object))
    }

    /// The next object cut by the record being replayed; `None` where the
    /// record stopped, the reading then decoding on.
    #[inline]
    fn replayed(&mut self) -> Result<Option<&'r [u8]>> {
        let Lengths::Replaying(record, read, run) = &mut self.lengths else {
            return Ok(None);
        };
        let Some(len) = record.next(read) else {
            let stopped = record.stopped.take();
            self.lengths = Lengths::Off;
            return match stopped {
                Some((at, open)) if at == self.at => {
                    self.open = open;
                    Ok(None)
                }
                _ => Err(Error::internal(
                    "a record of a subtree's objects ends early",
                )),
            };
        };
        if run.is_empty() {
            *run = self.stream.bytes_at(self.at)?.0;
        }
        let Some((object, rest)) = run.split_at_checked(len).filter(|_| len > 0) else {
            return Err(Error::internal("a recorded object not within its block"));
        };
        *run = rest;
        self.at = self.at + len as u64;
        Ok(Some(object))
    }

    /// This reading, not yet started, recording the length of each object
    /// it hands out, for [`into_record`](Self::into_record).
    pub(crate) fn recording(self) -> Self {
        self.recording_at_most(RECORD_MAX)
    }

    /// [`recording`](Self::recording) at most `max` bytes of lengths.
    fn recording_at_most(mut self, max: usize) -> Self {
        self.lengths = Lengths::Recording(ObjectLengths {
            start: self.at,
            end: self.end,
            lengths: Vec::new(),
            max,
            stopped: None,
        });
        self
    }

    /// The record of a recording reading that handed out every object.
    pub(crate) fn into_record(mut self) -> Option<ObjectLengths> {
        match std::mem::replace(&mut self.lengths, Lengths::Off) {
            Lengths::Recording(record) if self.at >= self.end => Some(record),
            _ => None,
        }
    }

    /// This reading, not yet started, cutting its objects by `record` (of
    /// a reading of the same subtree) instead of decoding them.
    pub(crate) fn replaying(mut self, record: ObjectLengths) -> Self {
        if (record.start, record.end) == (self.at, self.end)
            && matches!(self.lengths, Lengths::Off)
            && self.open.is_empty()
        {
            self.lengths = Lengths::Replaying(record, 0, &[]);
        }
        self
    }
}

impl LazyTraceReader {
    /// The encoded objects of `node`'s subtree; `None` for a container
    /// that never finished.
    pub fn raw_subtree(&self, node: LazyNode) -> Result<Option<RawSubtree<'_>>> {
        let slot = self.own(node)?;
        let mut scan = self.forward_scan(slot)?;
        let at = node.at;
        let (skipped, len) = scan.stream.skip(at, None)?;
        let Some(header) = skipped.header else {
            return Ok(None);
        };
        let end = match self.content_of(&mut scan, at + len, &header)? {
            None => at + len,
            Some(content) if !content.finished => return Ok(None),
            Some(content) => {
                content.end
                    + scan
                        .stream
                        .footer_len(content.end, header.tracepoint_type)?
            }
        };
        Ok(Some(RawSubtree {
            stream: self.forward_scan(slot)?.stream,
            at,
            end,
            open: Vec::new(),
            lengths: Lengths::Off,
        }))
    }
}

#[cfg(all(test, feature = "generate"))]
mod tests {
    use super::*;
    use crate::tree::TraceTree;

    /// Every object of `subtree`, in order.
    fn objects<'r>(subtree: &mut RawSubtree<'r>) -> Vec<&'r [u8]> {
        std::iter::from_fn(|| subtree.next_object().unwrap()).collect()
    }

    /// A reading cut by a record hands out the objects a decoding one
    /// does, whole or stopped part way (then decoding on), and a record
    /// of another subtree, or of a reading not read to its end, is not
    /// used.
    #[test]
    fn a_replayed_reading_hands_out_the_decoded_objects() {
        let scratch = tempfile::tempdir().unwrap();
        let path = scratch.path().join("t.trace");
        crate::generate::samples::all_types()
            .unwrap()
            .save(&path)
            .unwrap();
        let reader = LazyTraceReader::open(&path).unwrap();
        let mut replayed = 0;
        for thread in reader.thread_ids() {
            for root in TraceTree::roots(&reader, thread).unwrap() {
                let subtree = || reader.raw_subtree(root).unwrap().unwrap();
                let expected = objects(&mut subtree());
                for max in [0, 1, 3, RECORD_MAX] {
                    let mut recording = subtree().recording_at_most(max);
                    assert_eq!(objects(&mut recording), expected);
                    let record = recording.into_record().unwrap();
                    if max < expected.len() {
                        assert!(record.stopped.is_some());
                    }
                    if max == RECORD_MAX {
                        assert!(record.stopped.is_none());
                    }
                    let mut replaying = subtree().replaying(record);
                    assert!(matches!(replaying.lengths, Lengths::Replaying(..)));
                    assert_eq!(objects(&mut replaying), expected);
                    replayed += 1;
                }
                let mut partial = subtree().recording();
                partial.next_object().unwrap();
                assert!(expected.len() == 1 || partial.into_record().is_none());
            }
        }
        assert!(replayed > 0);
        let (root, child) = reader
            .thread_ids()
            .into_iter()
            .flat_map(|thread| TraceTree::roots(&reader, thread).unwrap())
            .find_map(|root| Some((root, *TraceTree::children(&reader, root).ok()?.first()?)))
            .expect("a root with a child");
        let mut recording = reader.raw_subtree(root).unwrap().unwrap().recording();
        objects(&mut recording);
        let other = reader.raw_subtree(child).unwrap().unwrap();
        let other = other.replaying(recording.into_record().unwrap());
        assert!(matches!(other.lengths, Lengths::Off));
    }
}
