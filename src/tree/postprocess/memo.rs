//! The chain's questions about reference objects, answered once per object:
//! which patterns a method's name could qualify with ([`Names`]), whether a
//! local's or a field's name is a coverage one, whether a code location's
//! access path names a coverage array.
//!
//! Each kind keeps one byte per id, allocated on first use: the answer
//! with [`KNOWN`] set once it was worked out. Ids past the table (at most
//! twice the objects the context holds, plus a margin, so a trace with
//! sparse or huge ids allocates no more than its objects justify) are
//! worked out each time. An answer depends only on its object, which a
//! context never changes for a known id, so the bytes are shared by every
//! walk of the view, with relaxed atomics: two walks working out the same
//! answer store the same byte.
//!
//! The navigation's child counts (a scan of up to a page of raw children
//! each) are kept too, by the raw container's handle, the most recent
//! [`COUNTS_KEPT`] of them ([`Counts`]): a view's tree never changes, so a
//! count kept is the count.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use lru::LruCache;

use crate::common::{CodeLocationId, FieldId, MethodId, ObjectKind, VariableId};
use crate::error::Result;
use crate::format::TraceContext;
use crate::read::NodeHandle;

use super::calls::{Names, names_of};
use super::coverage::{COVERAGE_FIELDS, COVERAGE_LOCALS, coverage_path, is_coverage};

/// Set in a byte whose answer is known.
const KNOWN: u8 = 0x80;
/// Ids past twice the context's objects by more than this are not kept.
const ID_MARGIN: usize = 1024;
/// Child counts kept at most.
const COUNTS_KEPT: usize = 4096;

/// One answer byte per id of one kind of object.
struct Table {
    kind: ObjectKind,
    bytes: OnceLock<Box<[AtomicU8]>>,
}

impl Table {
    fn new(kind: ObjectKind) -> Self {
        Table {
            kind,
            bytes: OnceLock::new(),
        }
    }

    /// The answer for `id`, worked out by `answer` (in the low 7 bits)
    /// unless it is known.
    #[inline]
    fn get(
        &self,
        context: &TraceContext,
        id: i32,
        answer: impl FnOnce() -> Result<u8>,
    ) -> Result<u8> {
        if let Some(slot) = self.slot(id) {
            let known = slot.load(Ordering::Relaxed);
            if known & KNOWN != 0 {
                return Ok(known & !KNOWN);
            }
        }
        self.work_out(context, id, answer)
    }

    /// The byte of `id`, once the table is allocated.
    #[inline]
    fn slot(&self, id: i32) -> Option<&AtomicU8> {
        let bytes = self.bytes.get()?;
        usize::try_from(id).ok().and_then(|id| bytes.get(id))
    }

    /// Works the answer for `id` out, and keeps it if `id` has a byte.
    #[cold]
    #[inline(never)]
    fn work_out(
        &self,
        context: &TraceContext,
        id: i32,
        answer: impl FnOnce() -> Result<u8>,
    ) -> Result<u8> {
        let bytes = self.bytes.get_or_init(|| self.allocate(context));
        let Some(slot) = usize::try_from(id).ok().and_then(|id| bytes.get(id)) else {
            return answer();
        };
        let value = answer()? & !KNOWN;
        slot.store(value | KNOWN, Ordering::Relaxed);
        Ok(value)
    }

    #[cold]
    fn allocate(&self, context: &TraceContext) -> Box<[AtomicU8]> {
        let limit = context
            .count(self.kind)
            .saturating_mul(2)
            .saturating_add(ID_MARGIN);
        let len = context
            .ids(self.kind)
            .last()
            .and_then(|&max| usize::try_from(max).ok())
            .map_or(0, |max| max.saturating_add(1).min(limit));
        (0..len).map(|_| AtomicU8::new(0)).collect()
    }
}

/// The navigation's child counts, by the raw container's handle.
pub(super) struct Counts {
    kept: Mutex<LruCache<NodeHandle, usize>>,
}

impl Counts {
    fn new() -> Self {
        let kept = NonZeroUsize::new(COUNTS_KEPT).unwrap_or(NonZeroUsize::MIN);
        Counts {
            kept: Mutex::new(LruCache::new(kept)),
        }
    }

    /// The count kept for `container`, or worked out by `count` and kept.
    pub(super) fn get(
        &self,
        container: NodeHandle,
        count: impl FnOnce() -> Result<usize>,
    ) -> Result<usize> {
        let lock = || self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&n) = lock().get(&container) {
            return Ok(n);
        }
        // Counted unlocked: another request may count the same list.
        let n = count()?;
        lock().put(container, n);
        Ok(n)
    }
}

/// The answers of one view (see the module doc).
pub(super) struct Memo {
    methods: Table,
    fields: Table,
    variables: Table,
    locations: Table,
    pub(super) counts: Counts,
}

impl Memo {
    pub(super) fn new() -> Self {
        Memo {
            methods: Table::new(ObjectKind::MethodDescriptor),
            fields: Table::new(ObjectKind::FieldDescriptor),
            variables: Table::new(ObjectKind::VariableDescriptor),
            locations: Table::new(ObjectKind::CodeLocation),
            counts: Counts::new(),
        }
    }

    /// [`names_of`] the method's name.
    #[inline]
    pub(super) fn names(&self, context: &TraceContext, method: MethodId) -> Result<Names> {
        let bits = self.methods.get(context, method.0, || {
            Ok(names_of(context.method(method)?.name.as_bytes()).bits())
        })?;
        Ok(Names::from_bits(bits))
    }

    /// Whether the local is one coverage tools add.
    #[inline]
    pub(super) fn coverage_local(
        &self,
        context: &TraceContext,
        variable: VariableId,
    ) -> Result<bool> {
        let answer = self.variables.get(context, variable.0, || {
            let name = context.variable(variable)?.name.as_bytes();
            Ok(u8::from(is_coverage(name, &COVERAGE_LOCALS)))
        })?;
        Ok(answer != 0)
    }

    /// Whether the field is one coverage tools add.
    #[inline]
    pub(super) fn coverage_field(&self, context: &TraceContext, field: FieldId) -> Result<bool> {
        let answer = self.fields.get(context, field.0, || {
            let name = context.field(field)?.name.as_bytes();
            Ok(u8::from(is_coverage(name, &COVERAGE_FIELDS)))
        })?;
        Ok(answer != 0)
    }

    /// [`coverage_path`] of the code location.
    #[inline]
    pub(super) fn coverage_path(
        &self,
        context: &TraceContext,
        location: CodeLocationId,
    ) -> Result<bool> {
        let answer = self.locations.get(context, location.0, || {
            Ok(u8::from(coverage_path(context, location)?))
        })?;
        Ok(answer != 0)
    }
}
