//! Output forms of a trace: the reference text form and a JSON-lines dump.
//! Both walk any [`TraceTree`](crate::tree::TraceTree).

pub mod jsonl;

pub use jsonl::write_jsonl;
