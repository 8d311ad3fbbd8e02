//! Readers: the eager loader, and the shared block decoder readers walk a
//! data file with.

pub mod block;
pub mod eager;
pub mod rebuild;

pub use eager::{EagerNode, EagerThread, EagerTrace, LoadReport, NodeId};
