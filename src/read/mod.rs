//! Reading v22 traces. Two readers answer the same questions through
//! [`TraceTree`](crate::tree::TraceTree):
//!
//! - `eager`: [`EagerTrace`] reads the whole data file once and keeps one
//!   small record per tracepoint; for traces that fit in memory, and the
//!   reference the lazy reader is tested against.
//! - [`lazy`]: [`LazyTraceReader`] keeps only the lookups in memory and
//!   decodes nodes and pages of children when asked, in bounded memory
//!   whatever the trace's size.
//!
//! What they stand on, layer by layer: `lookup`, what
//! finds blocks, reference objects and containers without reading the data
//! (the recorder's index checked against the data, or the lookup sidecar);
//! `rebuild`, everything built from the data alone (the parallel index
//! rebuild, an index file written or checked, a reader's lookups rebuilt or
//! extended); `visit`, what a whole-trace walk hands its visitor; and
//! `block`, a data file decoded block by block for tools and tests.
//!
//! Invariants: a reader never writes beside the trace; bad bytes give typed
//! errors, never a panic; both readers give the same tree for the same data
//! file (`tests/read/lazy_equivalence.rs`).

pub(crate) mod block;
mod eager;
pub mod lazy;
pub(crate) mod lookup;
pub(crate) mod rebuild;
mod visit;

pub use eager::{EagerNode, EagerOptions, EagerTrace, LoadReport, NodeId};
pub(crate) use lazy::Flow;
pub use lazy::{
    CacheStats, ChildCount, IndexChoice, LazyNode, LazyOptions, LazyTraceReader, NodeData,
    NodeHandle, RawSubtree, RefreshReport, ThreadInfo, WalkDetail, WalkNode,
};
pub use lookup::index::IndexReport;
pub(crate) use lookup::index::index_path;
pub use lookup::problem::{IndexProblem, IndexStatus};
pub use lookup::sidecar::{SidecarOutcome, SidecarPolicy, SidecarProblem};
pub use rebuild::{IndexFile, UnfinishedContainer};
pub use visit::{Visit, VisitDetail};

pub use crate::format::TraceContext;
pub use rebuild::RebuildOptions;
