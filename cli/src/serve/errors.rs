//! The errors a client can branch on: JSON-RPC's and LSP's codes, and the
//! service's own in the range JSON-RPC leaves to servers. Each error's
//! message names the method, the trace and the node it is about; its `data`
//! repeats them as fields (`trace`, `node`, `field`).

use serde_json::{Value, json};
use tracetree::Error;

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeError {
    /// What kind of failure: one of the [`code`] constants.
    pub code: i32,
    /// What went wrong, naming the trace and the node.
    pub message: String,
    /// The same as fields, when there are any.
    pub data: Option<Value>,
}

/// The codes, as `docs/PROTOCOL.md` lists them.
pub mod code {
    /// The message is not JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// JSON, but not a JSON-RPC request or notification; or a request
    /// after `shutdown`.
    pub const INVALID_REQUEST: i32 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// A parameter missing or of the wrong type or value (`data.field`
    /// names it).
    pub const INVALID_PARAMS: i32 = -32602;
    /// A bug in the service.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// A request before `initialize` (LSP's code).
    pub const SERVER_NOT_INITIALIZED: i32 = -32002;
    /// The client cancelled the request (LSP's code).
    pub const REQUEST_CANCELLED: i32 = -32800;
    /// No open trace has this id (never opened, or closed).
    pub const UNKNOWN_TRACE: i32 = -32010;
    /// A handle, event id or thread that names no node of the trace.
    pub const NO_SUCH_NODE: i32 = -32011;
    /// The trace's bytes are malformed or cut where the request read them.
    pub const DAMAGED_TRACE: i32 = -32012;
    /// The file is not a trace or recording tracetree reads.
    pub const NOT_A_TRACE: i32 = -32013;
    /// A file could not be read or written (missing, no permission, cut
    /// short under the reader).
    pub const FILE_ERROR: i32 = -32014;
    /// A limit of `initialize`'s `limits` was reached (open traces,
    /// requests in flight).
    pub const LIMIT_REACHED: i32 = -32015;
}

impl ServeError {
    /// An error of `code` saying `message`.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        ServeError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// A wrong parameter: `field` (a JSON path under `params`) and why.
    pub fn invalid_params(method: &str, field: &str, problem: impl std::fmt::Display) -> Self {
        ServeError {
            code: code::INVALID_PARAMS,
            message: format!("{method}: params.{field}: {problem}"),
            data: Some(json!({ "field": field })),
        }
    }

    /// This error with `field: value` added to its data.
    pub fn with(mut self, field: &str, value: impl Into<Value>) -> Self {
        let data = self.data.get_or_insert_with(|| json!({}));
        if let Some(fields) = data.as_object_mut() {
            fields.insert(field.to_string(), value.into());
        }
        self
    }

    /// A library error met by `method` on `trace` (its id and file):
    /// its code by meaning, its message prefixed with what it was about.
    pub fn from_library(method: &str, about: &str, error: &Error) -> Self {
        let code = match error.unwrapped() {
            Error::NoSuchNode(_) => code::NO_SUCH_NODE,
            Error::Decode(_) | Error::MissingReference { .. } | Error::BrokenIndex { .. } => {
                code::DAMAGED_TRACE
            }
            Error::BadSource { .. } => code::DAMAGED_TRACE,
            Error::Unsupported { .. } => code::NOT_A_TRACE,
            Error::Io { .. } => code::FILE_ERROR,
            Error::InvalidArgument { .. } | Error::LimitExceeded { .. } => code::INVALID_PARAMS,
            Error::Cancelled(_) => code::REQUEST_CANCELLED,
            _ => code::INTERNAL_ERROR,
        };
        ServeError::new(code, format!("{method}: {about}: {error}"))
    }
}
