//! Output forms of a trace: the reference text form and a JSON-lines dump.
//! Both walk any [`TraceTree`](crate::tree::TraceTree), on all cores: the
//! trace is cut into parts formatted in parallel and written in order.

pub(crate) mod jsonl;
mod ordered;
mod parent;
mod plan;
mod text;

pub(crate) use text::adorn;

pub use jsonl::{write_jsonl, write_jsonl_with};
pub use ordered::{OrderedStats, Parallelism};
pub use text::{
    Parent, PrintOptions, TextFormatter, node_text, print_trace, print_trace_with, tracepoint_text,
};
