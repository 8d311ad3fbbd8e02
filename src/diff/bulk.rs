//! Strictly equal subtrees recognised by their bytes, without keys.
//!
//! Two subtrees are the same tree, tracepoint for tracepoint, when their
//! tracepoints and footers are the same bytes in the same order (reference
//! objects among them aside), but for each tracepoint's thread and event
//! id, and when the reference objects those bytes name by id are the same
//! in both traces ([`tables_agree`]: every table holds the same ids with
//! the same bytes). Then each tracepoint is strictly and edit-equal to its
//! counterpart, so the reference's walk pairs the two subtrees node by node
//! (each list is its own common prefix): every tracepoint is `Unchanged`,
//! and the diff copies one side without computing keys or aligning lists.
//! The post-processing sees a thread by its content alone (method names,
//! children, footers), so two threads of the same bytes also look the same
//! through it: their views are copied alike.
//! Anything the comparison cannot read says "not equal": the ordinary walk
//! then reads it and gives its error.

use crate::common::ObjectKind;
use crate::format::TraceContext;
use crate::format::skip::try_skip;
use crate::model::TracepointHeader;
use crate::read::RawSubtree;

/// A tracepoint's header bytes before its thread id (kind, type, code
/// location), and where its diff status starts (after the event id).
const BEFORE_THREAD: usize = TracepointHeader::THREAD_AT;
const AFTER_EVENT: usize = TracepointHeader::EVENT_AT + 4;

/// Whether the two contexts hold the same reference objects under the
/// same ids (byte for byte): ids in one trace's tracepoints then name in
/// the other what they name in it.
pub(crate) fn tables_agree(left: &TraceContext, right: &TraceContext) -> bool {
    if std::ptr::eq(left, right) {
        return true;
    }
    let (left_bytes, right_bytes) = (left.data().as_slice(), right.data().as_slice());
    (ObjectKind::ClassDescriptor as u8..=ObjectKind::CodeLocation as u8).all(|kind| {
        let Some(kind) = ObjectKind::from_byte(kind) else {
            return false;
        };
        let ids = left.ids(kind);
        ids == right.ids(kind)
            && ids.iter().all(|&id| {
                match (
                    object(left_bytes, left, kind, id),
                    object(right_bytes, right, kind, id),
                ) {
                    (Some(l), Some(r)) => l == r,
                    _ => false,
                }
            })
    })
}

/// The bytes of the reference object of `kind` and `id` in `context`,
/// whose data file is `bytes`.
fn object<'b>(
    bytes: &'b [u8],
    context: &TraceContext,
    kind: ObjectKind,
    id: i32,
) -> Option<&'b [u8]> {
    let start = usize::try_from(context.offset(kind, id)?.0).ok()?;
    let rest = bytes.get(start..)?;
    let (skipped, len) = try_skip(rest, None)?;
    (skipped.kind == kind).then(|| &rest[..len])
}

/// The next tracepoint or footer of a subtree, `None` at its end or where
/// it cannot be read.
fn next_node<'r>(objects: &mut RawSubtree<'r>) -> Option<Option<&'r [u8]>> {
    loop {
        match objects.next_object() {
            Ok(Some(object)) if object[0] <= ObjectKind::CodeLocation as u8 => continue,
            Ok(found) => return Some(found),
            Err(_) => return None,
        }
    }
}

/// Whether two subtrees are the same bytes but for their tracepoints'
/// thread and event ids (reference objects among them aside).
pub(crate) fn same_bytes(mut left: RawSubtree<'_>, mut right: RawSubtree<'_>) -> bool {
    loop {
        let (Some(l), Some(r)) = (next_node(&mut left), next_node(&mut right)) else {
            return false;
        };
        let (l, r) = match (l, r) {
            (None, None) => return true,
            (Some(l), Some(r)) => (l, r),
            _ => return false,
        };
        let same = if l[0] == ObjectKind::Tracepoint as u8 {
            l.len() == r.len()
                && l.len() > AFTER_EVENT
                && l[..BEFORE_THREAD] == r[..BEFORE_THREAD]
                && l[AFTER_EVENT..] == r[AFTER_EVENT..]
        } else {
            l == r
        };
        if !same {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::LazyTraceReader;
    use crate::tree::TraceTree;

    fn root_bytes_equal(left: &LazyTraceReader, right: &LazyTraceReader) -> Vec<bool> {
        left.thread_ids()
            .into_iter()
            .map(|thread| {
                let l = TraceTree::roots(left, thread).unwrap()[0];
                let r = TraceTree::roots(right, thread).unwrap()[0];
                match (left.raw_subtree(l).unwrap(), right.raw_subtree(r).unwrap()) {
                    (Some(l), Some(r)) => same_bytes(l, r),
                    _ => false,
                }
            })
            .collect()
    }

    /// Two files of the same trace: the same tables, the same subtrees; a
    /// copy with every leaf's value changed has the same tables and
    /// different subtrees.
    #[cfg(feature = "generate")]
    #[test]
    fn same_bytes_are_found_and_changed_ones_are_not() {
        let scratch = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            scratch.path().join("a.trace"),
            scratch.path().join("b.trace"),
            scratch.path().join("c.trace"),
        );
        crate::generate::samples::multi_thread()
            .unwrap()
            .save(&a)
            .unwrap();
        crate::generate::samples::multi_thread()
            .unwrap()
            .save(&b)
            .unwrap();
        let (a, b) = (
            LazyTraceReader::open(&a).unwrap(),
            LazyTraceReader::open(&b).unwrap(),
        );
        assert!(tables_agree(a.context(), b.context()));
        let same = root_bytes_equal(&a, &b);
        assert!(same.len() > 1 && same.iter().all(|&s| s), "{same:?}");
        let (mutated, mutations) = crate::generate::mutate(&a, 1.0, 1).unwrap();
        assert!(mutations.edited > 0 || mutations.removed > 0);
        mutated.save(&c).unwrap();
        let c = LazyTraceReader::open(&c).unwrap();
        assert!(root_bytes_equal(&a, &c).iter().any(|&s| !s));
        let other = crate::generate::samples::all_types().unwrap();
        let d = scratch.path().join("d.trace");
        other.save(&d).unwrap();
        let d = LazyTraceReader::open(&d).unwrap();
        assert!(!tables_agree(a.context(), d.context()));
    }
}
