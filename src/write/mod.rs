//! Writers: the builder API ([`TraceRecorder`], [`ThreadRecorder`]) through
//! which a trace is recorded by name and value, the specs callers describe
//! classes, methods, fields, code locations and values with, and two
//! writers: [`DumpWriter`], which collects a trace in memory and writes it as
//! the reference collect-and-dump writer does, and [`StreamingWriter`],
//! which writes it while it is recorded, from many threads, as the
//! reference streaming writer does.
//!
//! Writers intern every reference object themselves and number tracepoints
//! from one trace-wide counter; the format's codecs in
//! `format` do the encoding.

mod build;
mod check;
mod deps;
mod dump;
mod hash;
mod pool;
mod recorder;
mod resolve;
mod spec;
mod streaming;

pub(crate) use build::BuildTarget;
#[cfg(feature = "generate")]
pub(crate) use dump::for_each_reference;
pub use dump::{DumpOptions, DumpThread, DumpWriter};
#[cfg(any(test, feature = "generate"))]
pub(crate) use recorder::PushRecorder;
pub use recorder::{ThreadRecorder, TraceRecorder};
pub use spec::{
    AccessPathSpec, AccessStep, BreakpointSpec, CallOutcome, CallSpec, CodeLocationSpec, FieldSpec,
    LocalSpec, MethodSpec, ValueSpec, VariableSpec,
};
#[cfg(any(test, feature = "generate"))]
pub(crate) use spec::{array_type, class_type};
pub use streaming::{
    BlockOrder, StreamingOptions, StreamingSummary, StreamingThread, StreamingWriter, ThreadBatch,
};
