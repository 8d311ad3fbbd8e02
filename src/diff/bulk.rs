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
//! The walk asks this of every aligned pair of strictly equal containers
//! large enough ([`ByBytes`]), the roots of a thread first: the nodes
//! themselves are equal by their keys, their descendants by the bytes of
//! their sources ([`TraceTree::subtree_source`]). The post-processing
//! shows a node's descendants from the raw subtree of the node it shows
//! alone (each raw child by its content and its own children, the peeked
//! slots from the list): two such subtrees of the same bytes look the same
//! through it, so their views are copied alike.
//! The subtrees are compared first as runs of bytes (a comparison of
//! memory per block run, nothing decoded), ids and all: the same bytes
//! give the left event ids as the right ones. Only where the runs differ
//! are they compared object by object, but for the ids.
//! Anything the comparison cannot read says "not equal": the ordinary walk
//! then reads it and gives its error.

use crate::common::ObjectKind;
use crate::error::{Error, Result};
use crate::format::skip::try_skip;
use crate::format::{ByteReader, Object, TraceContext};
use crate::model::TracepointHeader;
use crate::read::RawSubtree;
use crate::tree::TraceTree;

/// A tracepoint's header bytes before its thread id (kind, type, code
/// location), and where its diff status starts (after the event id).
const BEFORE_THREAD: usize = TracepointHeader::THREAD_AT;
const AFTER_EVENT: usize = TracepointHeader::EVENT_AT + 4;

/// Whether every reference object both contexts hold under one id is the
/// same bytes in both: ids in one trace's tracepoints then name in the
/// other what they name in it, where it holds them. (A subtree names only
/// ids its trace holds, so two subtrees of the same bytes name ids both
/// hold; a writer that writes objects as they are first used leaves out
/// those only left-out tracepoints named.)
pub(crate) fn tables_agree(left: &TraceContext, right: &TraceContext) -> bool {
    if std::ptr::eq(left, right) {
        return true;
    }
    let (left_bytes, right_bytes) = (left.data().as_slice(), right.data().as_slice());
    (ObjectKind::ClassDescriptor as u8..=ObjectKind::CodeLocation as u8).all(|kind| {
        let Some(kind) = ObjectKind::from_byte(kind) else {
            return false;
        };
        left.ids(kind).iter().all(|&id| {
            right.offset(kind, id).is_none()
                || match (
                    object(left_bytes, left, kind, id),
                    object(right_bytes, right, kind, id),
                ) {
                    (Some(l), Some(r)) => l == r,
                    _ => false,
                }
        })
    })
}

/// Calls `f` with every reference object of `context` (thread names
/// aside), decoded from its bytes, and its encoded length, kind by kind.
pub(crate) fn reference_objects(
    context: &TraceContext,
    mut f: impl FnMut(&Object<'_>, u64) -> Result<()>,
) -> Result<()> {
    let bytes = context.data().as_slice();
    for kind in ObjectKind::ClassDescriptor as u8..=ObjectKind::CodeLocation as u8 {
        let Some(kind) = ObjectKind::from_byte(kind) else {
            continue;
        };
        for &id in context.ids(kind) {
            let missing = || Error::MissingReference { kind, id };
            let start = context.offset(kind, id).ok_or_else(missing)?.0;
            let rest = usize::try_from(start)
                .ok()
                .and_then(|start| bytes.get(start..))
                .ok_or_else(missing)?;
            let mut reader = ByteReader::new(rest, start);
            let object = Object::decode(&mut reader, None)?;
            if object.kind() != kind || object.reference_id() != Some(id) {
                return Err(missing());
            }
            f(&object, reader.offset() - start)?;
        }
    }
    Ok(())
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

/// Decides which aligned pairs of strictly equal containers the diff
/// copies by their bytes: those whose sources
/// ([`TraceTree::subtree_source`]) are the same bytes over tables that
/// agree, of at least `min_bytes`. A comparison that fails is charged its
/// bytes read against a budget of a few times the thread's size, so that
/// a difference deep down a long chain of large calls is not compared to
/// once per call without end.
pub(crate) struct ByBytes {
    agree: bool,
    min_bytes: u64,
    budget: u64,
}

/// The budget of bytes compared in vain, in threads' sizes.
const BUDGET_THREADS: u64 = 4;
/// Bytes of `min_bytes` per tracepoint a subtree is seen to hold before its
/// size is asked for, up to `PROBE_MAX` tracepoints.
const PROBE_BYTES: u64 = 1024;
const PROBE_MAX: usize = 64;

impl ByBytes {
    /// Comparing when the tables agree, subtrees of `min_bytes` or more.
    pub(crate) fn new(agree: bool, min_bytes: u64) -> Self {
        ByBytes {
            agree,
            min_bytes,
            budget: 0,
        }
    }

    /// How many tracepoints a subtree must be seen to hold, in the
    /// streams, before its size is asked for (which costs a lookup): a
    /// subtree of fewer is smaller than `min_bytes` but for very large
    /// tracepoints, and is compared node by node.
    pub(crate) fn probe(&self) -> usize {
        usize::try_from(self.min_bytes / PROBE_BYTES)
            .unwrap_or(usize::MAX)
            .min(PROBE_MAX)
    }

    /// Starts a thread's diff: its budget from its roots' sizes.
    pub(crate) fn start<L: TraceTree, R: TraceTree>(
        &mut self,
        left: &L,
        l: L::Node,
        right: &R,
        r: R::Node,
    ) {
        let size = |source: Result<Option<RawSubtree<'_>>>| {
            source.ok().flatten().map_or(0, |s| s.remaining())
        };
        let bytes = size(left.subtree_source(l)).max(size(right.subtree_source(r)));
        self.budget = bytes.saturating_mul(BUDGET_THREADS);
    }

    /// Whether the subtrees of `l` and `r`, a strictly equal pair, are the
    /// same trees by their bytes: first the whole of both as runs of bytes
    /// (one comparison of memory per run, nothing decoded), then, where
    /// those differ, object by object but for the ids.
    pub(crate) fn same<L: TraceTree, R: TraceTree>(
        &mut self,
        left: &L,
        l: L::Node,
        right: &R,
        r: R::Node,
    ) -> Same {
        if !self.agree {
            return Same::No;
        }
        let sources = || match (left.subtree_source(l), right.subtree_source(r)) {
            (Ok(Some(l)), Ok(Some(r))) => Some((l, r)),
            _ => None,
        };
        let Some((mut left_runs, mut right_runs)) = sources() else {
            return Same::No;
        };
        let (before, size) = (
            left_runs.remaining(),
            left_runs.remaining().max(right_runs.remaining()),
        );
        if size < self.min_bytes || size > self.budget {
            return Same::No;
        }
        if same_runs(&mut left_runs, &mut right_runs) {
            return Same::Bytes;
        }
        self.budget = self.budget.saturating_sub(before - left_runs.remaining());
        let Some((mut l, mut r)) = sources() else {
            return Same::No;
        };
        if same_bytes(&mut l, &mut r) {
            Same::ButIds
        } else {
            self.budget = self.budget.saturating_sub(before - l.remaining());
            Same::No
        }
    }
}

/// How two subtrees were found the same ([`ByBytes::same`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Same {
    /// Not the same, or not compared.
    No,
    /// The same but for their tracepoints' thread and event ids.
    ButIds,
    /// The same bytes, ids included: each left tracepoint's event id is its
    /// right counterpart's.
    Bytes,
}

/// Whether two subtrees are the same bytes, ids and all, compared run by
/// run as they lie in their blocks (runs of one mapping at one place are
/// not read at all). Anything unreadable says "not equal".
pub(crate) fn same_runs(left: &mut RawSubtree<'_>, right: &mut RawSubtree<'_>) -> bool {
    if left.remaining() != right.remaining() {
        return false;
    }
    let (mut l, mut r): (&[u8], &[u8]) = (&[], &[]);
    loop {
        if l.is_empty() {
            l = match left.next_run() {
                Ok(Some(run)) => run,
                Ok(None) => return r.is_empty() && matches!(right.next_run(), Ok(None)),
                Err(_) => return false,
            };
        }
        if r.is_empty() {
            r = match right.next_run() {
                Ok(Some(run)) => run,
                _ => return false,
            };
        }
        let n = l.len().min(r.len());
        let (a, b) = (&l[..n], &r[..n]);
        if !std::ptr::eq(a, b) && a != b {
            return false;
        }
        (l, r) = (&l[n..], &r[n..]);
    }
}

/// Whether two subtrees are the same bytes but for their tracepoints'
/// thread and event ids (reference objects among them aside).
pub(crate) fn same_bytes(left: &mut RawSubtree<'_>, right: &mut RawSubtree<'_>) -> bool {
    loop {
        let (Some(l), Some(r)) = (next_node(left), next_node(right)) else {
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

    /// Whether each thread's first roots are the same bytes but for ids;
    /// each found so run by run too is asserted to be.
    fn root_bytes_equal(left: &LazyTraceReader, right: &LazyTraceReader) -> Vec<bool> {
        left.thread_ids()
            .into_iter()
            .map(|thread| {
                let l = TraceTree::roots(left, thread).unwrap()[0];
                let r = TraceTree::roots(right, thread).unwrap()[0];
                let runs = match (left.raw_subtree(l).unwrap(), right.raw_subtree(r).unwrap()) {
                    (Some(mut l), Some(mut r)) => same_runs(&mut l, &mut r),
                    _ => false,
                };
                let same = match (left.raw_subtree(l).unwrap(), right.raw_subtree(r).unwrap()) {
                    (Some(mut l), Some(mut r)) => same_bytes(&mut l, &mut r),
                    _ => false,
                };
                assert!(same || !runs, "the same runs but not the same objects");
                same
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
        for thread in a.thread_ids() {
            let root = TraceTree::roots(&a, thread).unwrap()[0];
            let (mut l, mut r) = (
                a.raw_subtree(root).unwrap().unwrap(),
                b.raw_subtree(root).unwrap().unwrap(),
            );
            assert!(same_runs(&mut l, &mut r), "one trace's threads run by run");
        }
        assert!(same.len() > 1 && same.iter().all(|&s| s), "{same:?}");
        let mutations = crate::generate::mutate(&a, 1.0, 1, &c).unwrap();
        assert!(mutations.edited > 0 || mutations.removed > 0);
        let c = LazyTraceReader::open(&c).unwrap();
        assert!(root_bytes_equal(&a, &c).iter().any(|&s| !s));
        let other = crate::generate::samples::all_types().unwrap();
        let d = scratch.path().join("d.trace");
        other.save(&d).unwrap();
        let d = LazyTraceReader::open(&d).unwrap();
        assert!(!tables_agree(a.context(), d.context()));
    }
}
