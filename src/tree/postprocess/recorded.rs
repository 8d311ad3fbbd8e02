//! Whether the view shows a subtree exactly as recorded: then its bytes are
//! the view's own ([`TraceTree::raw_subtree`] of the view), and a consumer
//! that copies or compares bytes (the trace diff) reads them instead of
//! walking the view.
//!
//! The chain changes a tracepoint only where one of its rules applies, and
//! each rule starts from something a tracepoint's first bytes or a
//! container's footer tell: a call whose method's name could qualify with a
//! pattern, a coverage access, a loop with no iterations, a loop or an
//! iteration with no raw children. A subtree none of whose descendants
//! starts a rule has every raw child kept, so no slot is peeked again and
//! no loop counts fewer iterations: the view shows it as its bytes are. The
//! scan is conservative: a call that could qualify but would not, or
//! anything it cannot read, says "not as recorded", and the view is walked.
//! The subtree's root is the view's node, decided already: it shows as
//! recorded when the node's location, status and iterations are its own.
//! The subtree handed out is cut by the scan's record of its objects'
//! lengths: a consumer that copies it does not decode them again.

use crate::common::ObjectKind;
use crate::error::Result;
use crate::format::ByteReader;
use crate::model::{Footer, TracepointHeader, TracepointName, TracepointType};
use crate::read::RawSubtree;
use crate::tree::TraceTree;

use super::{PostNode, Postprocessed, loop_iterations};

impl<T: TraceTree> Postprocessed<T> {
    /// The raw subtree of `node` when the view shows it as recorded (see
    /// the module doc), else `None`.
    pub(super) fn recorded_subtree(
        &self,
        node: PostNode<T::Node>,
    ) -> Result<Option<RawSubtree<'_>>> {
        let root_as_recorded = !node.fewer_iterations
            && self.inner.visit(node.inner, |tp, _| {
                tp.header.code_location == node.location && tp.header.diff_status == node.status
            })?;
        if !root_as_recorded {
            return Ok(None);
        }
        let Some(scan) = self.inner.raw_subtree(node.inner)? else {
            return Ok(None);
        };
        let mut scan = scan.recording();
        if !self.shows_as_recorded(&mut scan) {
            return Ok(None);
        }
        // The subtree handed out is cut by the scan's record of its
        // objects, not decoded a second time.
        let record = scan.into_record();
        Ok(self
            .inner
            .raw_subtree(node.inner)?
            .map(|subtree| match record {
                Some(record) => subtree.replaying(record),
                None => subtree,
            }))
    }

    /// Whether no descendant of the subtree's root starts a rule of the
    /// chain (anything unreadable: no), having read all of `objects` if so.
    fn shows_as_recorded(&self, objects: &mut RawSubtree<'_>) -> bool {
        // The open containers: their type and raw children so far.
        let mut open: Vec<(TracepointType, u32)> = Vec::new();
        loop {
            let object = match objects.next_object() {
                Ok(Some(object)) => object,
                Ok(None) => return open.is_empty(),
                Err(_) => return false,
            };
            let Some((&kind, rest)) = object.split_first() else {
                return false;
            };
            if kind == ObjectKind::TracepointFooter as u8 {
                let Some((container, children)) = open.pop() else {
                    return false;
                };
                // The root's own children were decided with it.
                let root = open.is_empty();
                let kept = match container {
                    _ if root => true,
                    TracepointType::LoopIteration => children > 0,
                    TracepointType::Loop => {
                        let footer = Footer::decode(&mut ByteReader::new(rest, 0), container);
                        children > 0 && footer.is_ok_and(|f| loop_iterations(Some(&f)) != 0)
                    }
                    _ => true,
                };
                if !kept {
                    return false;
                }
                continue;
            }
            if kind != ObjectKind::Tracepoint as u8 {
                continue;
            }
            let Some(header) = rest.first_chunk().and_then(TracepointHeader::from_bytes) else {
                return false;
            };
            if let Some((_, children)) = open.last_mut() {
                *children = children.saturating_add(1);
                if !self.kept_as_recorded(object, &header) {
                    return false;
                }
            }
            if header.tracepoint_type.is_container() {
                open.push((header.tracepoint_type, 0));
            }
        }
    }

    /// Whether a descendant's own tracepoint (`object`, kind byte first)
    /// starts no rule: no call that could qualify, no coverage access.
    fn kept_as_recorded(&self, object: &[u8], header: &TracepointHeader) -> bool {
        let context = self.context();
        let memo = &self.memo;
        let starts_rule = match header.tracepoint_type {
            TracepointType::ReadArray | TracepointType::WriteArray => {
                memo.coverage_path(context, header.code_location)
            }
            TracepointType::MethodCall => match TracepointName::peek(object) {
                Some(TracepointName::Method(method)) => {
                    memo.names(context, method).map(|names| names.any())
                }
                _ => Ok(true),
            },
            TracepointType::ReadLocal | TracepointType::WriteLocal => {
                match TracepointName::peek(object) {
                    Some(TracepointName::Variable(variable)) => {
                        memo.coverage_local(context, variable)
                    }
                    _ => Ok(true),
                }
            }
            TracepointType::ReadField | TracepointType::WriteField => {
                match TracepointName::peek(object) {
                    Some(TracepointName::Field(field)) => memo.coverage_field(context, field),
                    _ => Ok(true),
                }
            }
            _ => Ok(false),
        };
        starts_rule.is_ok_and(|starts| !starts)
    }
}
