//! The model of a trace: reference objects, tracepoints, values. (The
//! per-trace table that resolves ids to objects is `format::TraceContext`.)

mod reference;
mod string;
mod tracepoint;
mod types;
mod value;

pub use reference::{
    AccessPath, ClassDescriptor, CodeLocation, CodeLocationKind, FieldDescriptor, LocalKind,
    LocalName, MethodDescriptor, StringObject, ThreadName, VariableDescriptor,
};
pub use string::JavaStr;
pub(crate) use tracepoint::SAMPLE_COUNT_FLAG;
pub use tracepoint::{
    DiffStatus, Footer, Tracepoint, TracepointBody, TracepointHeader, TracepointName,
    TracepointType,
};
pub use types::{AccessLocation, Type};
pub use value::Value;
