//! Synthetic traces, in one place (cargo feature `generate`, off by
//! default: the command's `gen` and the tests turn it on):
//!
//! - `shapes`: traces of a chosen shape ([`Shape`], [`ThreadGenerator`]), deterministic for a seed,
//!   recorded through any writer; [`generate_file`] writes one of a given
//!   size through the streaming writer, the same bytes for the same
//!   options: the benchmarks' multi-GB traces and `tracetree gen`.
//! - [`samples`]: the small sample traces kept in `testdata/`, recorded
//!   through the builder API.
//! - [`raw`]: a byte-level writer that imitates the recorder itself
//!   (interleaved blocks, rewritten reference objects, crashes), for the
//!   readers' tests of what a real recorder leaves behind.

mod file;
mod mutate;
pub mod raw;
pub mod samples;
mod shapes;

pub use file::{GenerateOptions, generate_file};
pub use mutate::{Mutations, mutate};
pub use shapes::{Shape, ThreadGenerator, parse_size};
