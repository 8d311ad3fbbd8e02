//! Coverage instrumentation (`removeCoverageInstructions`): accesses to
//! the locals, fields and arrays coverage tools add (`__$coverage_local$__`,
//! `__$hits$__`, …) are dropped.
//!
//! Deviation: the access path of a coverage array access is matched step
//! by step (the reference matches its whole rendered text); paths by name
//! are followed a few steps deep.

use crate::common::CodeLocationId;
use crate::error::Result;
use crate::format::TraceContext;
use crate::model::{AccessLocation, Tracepoint, TracepointBody};

use crate::tree::TraceTree;

use super::Postprocessed;
use super::calls::contains;

pub(super) const COVERAGE_LOCALS: [&[u8]; 2] = [b"__$coverage_local$__", b"__$hits$__"];
pub(super) const COVERAGE_FIELDS: [&[u8]; 3] =
    [b"__$hits$__", b"__$traceMask$__", b"__$classData$__"];
pub(super) const COVERAGE_ARRAYS: [&[u8]; 4] = [
    b"__$coverage_local$__",
    b"__$hits$__",
    b"__$traceMask$__",
    b"__$classData$__",
];

pub(super) fn is_coverage(name: &[u8], set: &[&[u8]]) -> bool {
    set.contains(&name)
}

/// Whether an access path names a coverage array (any step's name
/// containing one of the names, paths by name followed a few steps deep).
pub(super) fn coverage_path(context: &TraceContext, location: CodeLocationId) -> Result<bool> {
    if location.0 < 0 {
        return Ok(false);
    }
    let Ok(location) = context.code_location(location) else {
        return Ok(false);
    };
    // Paths by name are rare: the list of those left allocates only then.
    let mut next = location.access_path.map(|path| (path, 0));
    let mut pending: Vec<(crate::common::AccessPathId, u32)> = Vec::new();
    while let Some((path, depth)) = next.take().or_else(|| pending.pop()) {
        let Ok(path) = context.access_path(path) else {
            continue;
        };
        for step in &path.locations {
            let name = match step {
                AccessLocation::Local(variable) => context.variable(*variable)?.name.as_bytes(),
                AccessLocation::StaticField(field) | AccessLocation::ObjectField(field) => {
                    context.field(*field)?.name.as_bytes()
                }
                AccessLocation::ArrayElementByName(inner) => {
                    if depth < 8 {
                        pending.push((*inner, depth + 1));
                    }
                    continue;
                }
                AccessLocation::ArrayIndex(_) => continue,
            };
            if COVERAGE_ARRAYS.iter().any(|set| contains(name, set)) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

impl<T: TraceTree> Postprocessed<T> {
    /// A leaf's coverage test (`removeCoverageInstructions`), on its raw
    /// body at the code location it shows.
    #[inline]
    pub(super) fn coverage_leaf(
        &self,
        tp: &Tracepoint<'_>,
        location: CodeLocationId,
    ) -> Result<bool> {
        let context = self.context();
        match &tp.body {
            TracepointBody::ReadArray { .. } | TracepointBody::WriteArray { .. } => {
                self.memo.coverage_path(context, location)
            }
            TracepointBody::ReadLocal { variable, .. }
            | TracepointBody::WriteLocal { variable, .. } => {
                self.memo.coverage_local(context, *variable)
            }
            TracepointBody::ReadField { field, .. } | TracepointBody::WriteField { field, .. } => {
                self.memo.coverage_field(context, *field)
            }
            _ => Ok(false),
        }
    }
}
