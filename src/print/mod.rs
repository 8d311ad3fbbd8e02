//! Output forms of a trace: the reference text form and a JSON-lines dump.
//! Both walk any [`TraceTree`](crate::tree::TraceTree).

pub mod jsonl;
pub mod text;

pub use jsonl::write_jsonl;
pub use text::{Parent, PrintOptions, TextFormatter, print_trace, tracepoint_text};
