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
//!   vs [`common::PhysicalOffset`] never mix), object kinds; and `mutf8`
//!   (modified UTF-8, internal).
//! - [`model`]: what the bytes mean: tracepoints, values, reference objects.
//! - `format` (internal; [`lowlevel`] names its parts tools use): the bytes:
//!   one codec per object kind, index cells read in place, and the
//!   per-trace [`read::TraceContext`] of reference objects decoded on first
//!   use.
//! - [`write`](mod@write): the builder API ([`write::TraceRecorder`],
//!   [`write::ThreadRecorder`]) and the writers.
//! - [`read`]: the eager loader, the lookups (`read::lookup`: index,
//!   sidecar, block and container tables) and the lazy reader on top of
//!   them, the parallel index rebuild.
//! - [`tree`]: any reader seen as one tree per thread; [`print`](mod@print)
//!   renders it.
//! - [`import`]: foreign traces (`.flow`, Blinky, TPTP, JFR) made into v22
//!   traces; [`search`](mod@search) finds tracepoints by name or text;
//!   [`export`] writes traces in the forms other tools read.
//! - [`open`](mod@open): any input opened as every front end opens it
//!   ([`TraceCache`]): imported once into a cache, with its status and
//!   warnings, or refused when strict.
//! - `generate` (feature `generate`, off by default): synthetic traces for
//!   the tests, the benchmarks and `tracetree gen`.
//!
//! [`storage`] maps files; [`error`] holds the typed errors;
//! [`lowlevel`] gathers the byte-level parts the readers are built from,
//! with no promise of stability.
//!
//! # The front door
//!
//! The crate root re-exports what an embedder uses: opening any trace
//! ([`TraceCache`], [`TracePath::for_input`], [`LazyTraceReader`] and [`LazyOptions`],
//! [`EagerTrace`]),
//! its nodes ([`LazyNode`], [`NodeHandle`]) and any reader as a tree
//! ([`TraceTree`]); the writers ([`DumpWriter`], [`StreamingWriter`]) with
//! the recorder traits and specs they take; printing and dumping
//! ([`PrintOptions::print`], [`node_text`], [`write_jsonl`]); importing
//! ([`ImportOptions::import_file`]), searching ([`SearchOptions::search`]) and exporting
//! ([`StackOptions::export`]); their options; and [`Error`] and [`Result`].
//!
//! # Reading
//!
//! Open any trace (a v22 trace as it is; a `.flow`, Blinky, TPTP or JFR
//! recording imported once into the per-user cache), then, as an IDE
//! would: its roots, a page of a call's children, a node's line, its
//! ancestors, and a search that another thread can cancel:
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::AtomicBool;
//!
//! use tracetree::{LazyTraceReader, SearchOptions, TracePath, node_text};
//! # use tracetree::model::Type;
//! # use tracetree::{
//! #     CallOutcome, CallSpec, CodeLocationSpec, DumpWriter, MethodSpec, ThreadRecorder,
//! #     TraceRecorder, ValueSpec, VariableSpec,
//! # };
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("app.trace");
//! # let mut writer = DumpWriter::new();
//! # let main = writer.add_thread("main")?;
//! # {
//! #     let mut thread = writer.thread(main)?;
//! #     let run = MethodSpec::new("app.MainKt", "main", vec![], Type::Void);
//! #     let work = MethodSpec::new("app.Worker", "compute", vec![], Type::Void);
//! #     thread.enter_call(None, CallSpec::new(&run))?;
//! #     thread.enter_call(None, CallSpec::new(&work))?;
//! #     let x = VariableSpec::new("x", Type::Int);
//! #     for i in 0..3 {
//! #         let at = CodeLocationSpec::line("Worker.kt", "app.Worker", "compute", 10 + i);
//! #         thread.write_local(Some(&at), &x, ValueSpec::Int(i))?;
//! #     }
//! #     thread.exit_call(CallOutcome::VOID)?;
//! #     thread.exit_call(CallOutcome::VOID)?;
//! # }
//! # writer.save(&path)?;
//! let trace = TracePath::for_input(&path, &|_bytes_imported| {})?;
//! let reader = LazyTraceReader::open(&trace.path)?;
//!
//! let thread = reader.thread_ids()[0];
//! let main_call = reader.roots(thread)?[0];
//! // The first page of 100 children (a call may have millions):
//! let page = reader.children_range(main_call, 0, 100)?;
//! let compute = page[0];
//! let local = reader.children_range(compute, 0, 100)?[0];
//! let line = node_text(&reader, local, false)?;
//! assert!(line.contains('x'), "{line}");
//! // The calls above a node, outermost first:
//! assert_eq!(reader.ancestors(local)?, [main_call, compute]);
//!
//! // Setting `stop` from another thread ends the search early, with the
//! // hits found so far.
//! let stop = Arc::new(AtomicBool::new(false));
//! let mut options = SearchOptions::new("compute");
//! options.stop = Some(Arc::clone(&stop));
//! let found = options.search(&reader, &|_scanned| {})?;
//! assert_eq!(found.hits[0].node, compute);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Writing
//!
//! Record a small trace, save it, and read it back, eagerly and lazily (the
//! lazy reader maps the file and loads a call's children when asked, one
//! page at a time, as an IDE expanding a node would):
//!
//! ```
//! use tracetree::model::Type;
//! use tracetree::{
//!     CallOutcome, CallSpec, CodeLocationSpec, DumpWriter, EagerTrace, LazyTraceReader,
//!     MethodSpec, ThreadRecorder, TraceRecorder, TraceTree, ValueSpec, VariableSpec,
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
pub mod diff;
pub mod error;
pub mod export;
pub(crate) mod format;
#[cfg(any(test, feature = "generate"))]
pub mod generate;
pub mod import;
pub mod lowlevel;
pub mod model;
pub(crate) mod mutf8;
pub mod open;
pub mod print;
pub mod read;
pub mod search;
pub mod storage;
pub mod tree;
mod turns;
pub mod write;

pub use diff::{DiffInput, DiffOptions, DiffSummary, diff_traces};
pub use error::{DecodeError, DecodeErrorKind, Error, NodeProblem, Position, Result};
pub use export::stacks::{StackFormat, StackOptions};
pub use format::FORMAT_VERSION;
pub use import::{ImportOptions, ImportSummary, SourceFormat, TracePath};
pub use open::{OpenedTrace, TraceCache, TraceStatus};
pub use print::{PrintOptions, node_text, write_jsonl};
pub use read::{
    EagerOptions, EagerTrace, IndexChoice, LazyNode, LazyOptions, LazyTraceReader, NodeHandle,
};
pub use search::{SearchOptions, SearchResult};
pub use storage::{FileAccess, TraceBytes};
pub use tree::TraceTree;
pub use write::{
    CallOutcome, CallSpec, CodeLocationSpec, DumpWriter, MethodSpec, StreamingOptions,
    StreamingWriter, ThreadRecorder, TraceRecorder, ValueSpec, VariableSpec,
};

/// The README's examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
