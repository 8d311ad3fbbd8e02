//! tracetree reads and writes execution traces of JVM programs in the
//! two-file format of the Lincheck trace recorder (format version 22), and
//! opens multi-gigabyte traces without loading them.
//!
//! A trace is a **data file** of blocks, each holding objects of one recorded
//! thread (blocks of different threads interleave), and an **index file** of
//! fixed 21-byte cells locating reference objects, blocks and the content of
//! every call. Each thread's tracepoints form a tree: method calls, loops and
//! loop iterations contain the tracepoints recorded while they ran.
//!
//! The layers, each importing only the ones above it in this list:
//!
//! - [`common`]: the ground types: ids, typed offsets ([`common::LogicalOffset`]
//!   vs [`common::PhysicalOffset`] never mix), object kinds; and [`mutf8`].
//! - [`model`]: what the bytes mean: tracepoints, values, reference objects.
//! - [`format`](mod@format): the bytes: one codec per object kind, index cells
//!   read in place, and the per-trace [`format::TraceContext`] of reference
//!   objects decoded on first use.
//! - [`write`](mod@write): the builder API ([`write::TraceRecorder`],
//!   [`write::ThreadRecorder`]) and the writers.
//! - [`read`]: the eager loader, the lookups (`read::lookup`: index,
//!   sidecar, block and container tables) and the lazy reader on top of
//!   them, the parallel index rebuild.
//! - [`tree`]: any reader seen as one tree per thread; [`print`](mod@print)
//!   renders it.
//! - [`import`]: foreign traces (`.flow`, Blinky, TPTP, JFR) made into v22
//!   traces; [`search`] finds tracepoints by name or text; [`export`] writes
//!   traces in the forms other tools read.
//! - [`generate`] (feature `generate`): synthetic traces.
//!
//! [`storage`] maps files; [`error`] holds the typed errors;
//! [`lowlevel`] gathers the byte-level parts the readers are built from.
//!
//! # Example
//!
//! Record a small trace, save it, and read it back, eagerly and lazily (the
//! lazy reader maps the file and loads a call's children when asked, one
//! page at a time, as an IDE expanding a node would):
//!
//! ```
//! use tracetree::model::Type;
//! use tracetree::read::{EagerTrace, LazyTraceReader};
//! use tracetree::tree::TraceTree;
//! use tracetree::write::{
//!     CallOutcome, CallSpec, CodeLocationSpec, DumpWriter, MethodSpec, ThreadRecorder,
//!     TraceRecorder, ValueSpec, VariableSpec,
//! };
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("demo.trace");
//!
//! let mut writer = DumpWriter::new();
//! let main = writer.add_thread("main")?;
//! {
//!     let mut thread = writer.thread(main)?;
//!     let run = MethodSpec::new("demo.MainKt", "main", vec![], Type::Void);
//!     thread.enter_call(None, CallSpec::new(&run))?;
//!     let x = VariableSpec::new("x", Type::Int);
//!     let at = CodeLocationSpec::line("Main.kt", "demo.MainKt", "main", 3);
//!     thread.write_local(Some(&at), &x, ValueSpec::Int(42))?;
//!     thread.exit_call(CallOutcome::VOID)?;
//! }
//! writer.save(&path)?; // writes demo.trace and demo.trace.idx
//!
//! let trace = EagerTrace::open(&path)?;
//! let roots = trace.roots(trace.thread_ids()[0])?;
//! assert_eq!(trace.child_count(roots[0])?, 1);
//!
//! let lazy = LazyTraceReader::open(&path)?;
//! let root = lazy.root(main)?.expect("thread main has a root call");
//! let first_page = lazy.children_range(root, 0, 1_000)?;
//! assert_eq!(first_page.len(), 1);
//! // The same node as the eager loader's, both decoded from the data on demand:
//! let eager_first = trace.node(trace.children(roots[0])?[0]);
//! let lazy_first = lazy.node(first_page[0])?;
//! assert_eq!(lazy_first.tracepoint(), &eager_first.tracepoint());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod common;
pub mod error;
pub mod export;
pub mod format;
#[cfg(any(test, feature = "generate"))]
pub mod generate;
pub mod import;
pub mod lowlevel;
pub mod model;
pub mod mutf8;
pub mod print;
pub mod read;
pub mod search;
pub mod storage;
pub mod tree;
mod turns;
pub mod write;

pub use error::{DecodeError, DecodeErrorKind, Error, NodeProblem, Position, Result};

/// The README's examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
pub use storage::TraceBytes;
