//! The library's errors as Python exceptions: each variant by its meaning
//! to one class of `tracetree.errors`, the message the library's.

use pyo3::prelude::*;
use pyo3::types::PyType;
use tracetree::Error;

/// The name of the class of `tracetree.errors` that `error` raises.
fn class_name(error: &Error) -> &'static str {
    match error {
        Error::Decode(_)
        | Error::BrokenIndex { .. }
        | Error::MissingReference { .. }
        | Error::BadSource { .. } => "DamagedTraceError",
        Error::Unsupported { .. } => "NotATraceError",
        Error::Io { .. } => "TraceOSError",
        Error::InFile { source, .. } => class_name(source),
        Error::InvalidArgument { .. } => "InvalidArgumentError",
        Error::NoSuchNode(_) => "NoSuchNodeError",
        Error::LimitExceeded { .. }
        | Error::OverMemoryBudget { .. }
        | Error::StringTooLong { .. } => "LimitExceededError",
        Error::Internal(_) => "InternalError",
        _ => "TraceError",
    }
}

/// The exception `error` raises in Python.
pub fn to_py(error: Error) -> PyErr {
    raise(class_name(&error), error.to_string())
}

/// An exception of the class `name` of `tracetree.errors` with `message`.
pub fn raise(name: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let class = py
            .import("tracetree.errors")
            .and_then(|module| module.getattr(name))
            .and_then(|class| class.cast_into::<PyType>().map_err(PyErr::from));
        match class {
            Ok(class) => PyErr::from_type(class, message),
            Err(error) => error,
        }
    })
}

/// `Result` with the library's errors raised as Python's.
pub trait OrRaise<T> {
    /// The value, or the error as a Python exception.
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for tracetree::Result<T> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
