//! The lookups: what a random-access reader needs to find things in a data
//! file without reading it: its blocks (`block_table`), its reference
//! objects and each thread's containers (`table`, `containers`), from
//! the recorder's index checked against the data (`index`) or the
//! lookup sidecar ([`sidecar`]) (`read::rebuild` builds them from the data
//! alone); and a thread's logical stream of objects (`stream`),
//! which the scans of unindexed data walk.
//!
//! This layer sits below the lazy reader (`read::lazy`) and never imports
//! it.

pub(crate) mod block_table;
pub(crate) mod containers;
pub(crate) mod index;
pub(crate) mod problem;
pub mod sidecar;
pub(crate) mod stream;
pub(crate) mod table;
#[cfg(test)]
mod tests;

pub(crate) use index::*;
pub(crate) use problem::{IndexProblem, IndexStatus};
pub(crate) use table::*;
