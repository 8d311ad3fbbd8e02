//! Synthetic traces, in one place (cargo feature `generate`, on by
//! default):
//!
//! - [`shapes`]: traces of a chosen shape and size, deterministic for a
//!   seed, recorded through the streaming writer: the benchmarks' multi-GB
//!   traces and `tracetree gen` (re-exported here).
//! - [`samples`]: the small sample traces kept in `testdata/`, recorded
//!   through the builder API.
//! - [`raw`]: a byte-level writer that imitates the recorder itself
//!   (interleaved blocks, rewritten reference objects, crashes), for the
//!   readers' tests of what a real recorder leaves behind.

pub mod raw;
pub mod samples;
pub mod shapes;

pub use shapes::{
    DEEP_RECURSION, GenerateOptions, Shape, ThreadGenerator, generate_file, parse_size,
};
