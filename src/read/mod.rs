//! Readers: the eager loader, and the shared block decoder readers walk a
//! data file with.

pub mod block;
pub mod block_table;
pub mod containers;
pub mod eager;
pub mod index;
pub mod lazy;
pub mod rebuild;
pub mod reindex;
pub mod sidecar;

pub use block_table::{BlockInfo, BlockSpan, BlockTable};
pub use eager::{EagerNode, EagerThread, EagerTrace, LoadReport, NodeId};
pub use index::{IndexProblem, IndexReport, IndexStatus, index_path};
pub use lazy::{
    CacheStats, ContentRange, IndexChoice, LazyNode, LazyOptions, LazyTraceReader, NodeData,
    ThreadInfo, WalkDetail, WalkNode,
};
pub use reindex::{IndexCheck, WrittenIndex, check_index, write_index};
pub use sidecar::{SidecarOutcome, SidecarPolicy, SidecarProblem, SidecarReport, sidecar_path};
