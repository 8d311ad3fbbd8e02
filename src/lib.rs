//! tracetree reads and writes execution traces of JVM programs in the
//! two-file format of the Lincheck trace recorder (format version 22).

pub mod cli;
pub mod error;
pub mod format;
pub mod model;
pub mod print;
pub mod read;
pub mod storage;
pub mod tree;
pub mod write;

pub use error::{DecodeError, DecodeErrorKind, Error, Result};
pub use storage::TraceBytes;
