//! `tracetree._native`: the Python bindings of the tracetree library, a
//! thin layer over its front door (`TracePath::for_input`'s cache, the lazy reader,
//! `node_text`, `search`, the Parquet export's Arrow batches).
//!
//! A `Trace` shares its reader with its nodes through `trace::Shared`; closing
//! the trace drops the reader there, and a node used afterwards raises
//! `TraceError`. Work that may take long (opening, searching, printing,
//! exporting) runs with the GIL released; a search runs on a thread of its
//! own while the calling thread checks for signals, so Ctrl-C stops it.
//! Errors are the library's, mapped by meaning to the exception classes
//! of `tracetree.errors` (Python classes, so that they can also derive
//! from `ValueError`, `OSError` or `LookupError`), with its messages.

mod errors;
mod node;
mod trace;
mod tree;

use pyo3::prelude::*;

/// The Rust part of the `tracetree` package; use `tracetree` itself.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<trace::Trace>()?;
    m.add_class::<trace::Thread>()?;
    m.add_class::<trace::SearchHits>()?;
    m.add_class::<trace::Hit>()?;
    m.add_class::<node::Node>()?;
    m.add_class::<node::Children>()?;
    m.add_class::<node::ChildrenIter>()?;
    m.add_function(wrap_pyfunction!(trace::open, m)?)?;
    m.add_function(wrap_pyfunction!(trace::import_trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace::export, m)?)?;
    m.add_function(wrap_pyfunction!(trace::print, m)?)?;
    m.add_function(wrap_pyfunction!(trace::dump, m)?)?;
    m.add_function(wrap_pyfunction!(trace::diff, m)?)?;
    m.add(
        "KINDS",
        tracetree::model::TracepointType::ALL.map(|k| k.name()),
    )?;
    Ok(())
}
