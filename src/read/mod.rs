//! Readers: the eager loader, and the shared block decoder readers walk a
//! data file with.

pub(crate) mod block;
mod eager;
pub mod lazy;
pub(crate) mod lookup;
pub(crate) mod rebuild;
mod reindex;
mod visit;

pub use eager::{EagerNode, EagerOptions, EagerThread, EagerTrace, LoadReport, NodeId};
pub use lazy::{
    CacheStats, ChildCount, Children, ContentRange, IndexChoice, LazyNode, LazyOptions,
    LazyTraceReader, NodeData, NodeHandle, PreOrder, RefreshReport, Refreshed, ThreadInfo,
    TracepointName, WalkDetail, WalkNode,
};
pub use lookup::block_table::{BlockInfo, BlockSpan, BlockTable};
pub use lookup::index::{IndexReport, index_path};
pub use lookup::problem::{IndexProblem, IndexStatus};
pub use lookup::sidecar::{
    SidecarOutcome, SidecarPolicy, SidecarProblem, SidecarReport, sidecar_path,
};
pub use reindex::{IndexCheck, WrittenIndex, check_index, write_index, write_index_to};
pub use visit::{Visit, VisitDetail};

pub use crate::format::TraceContext;
pub use rebuild::RebuildOptions;
