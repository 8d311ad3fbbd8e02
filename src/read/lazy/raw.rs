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
    /// The types of the containers open at `at`, for their footers.
    open: Vec<TracepointType>,
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
    pub fn next_object(&mut self) -> Result<Option<&'r [u8]>> {
        if self.at >= self.end {
            return Ok(None);
        }
        let open = self.open.last().copied();
        let (skipped, len) = self.stream.skip(self.at, open)?;
        let (bytes, _) = self.stream.bytes_at(self.at)?;
        let object = usize::try_from(len)
            .ok()
            .and_then(|len| bytes.get(..len))
            .ok_or_else(|| Error::internal("an object longer than its block"))?;
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
        }))
    }
}
