//! The wire: LSP's base protocol (`Content-Length` headers, then a JSON-RPC
//! 2.0 message) on standard input and output. Messages are read and parsed
//! by the `lsp-server` crate, on the thread that dispatches them (no
//! hand-off between reading and dispatching). Unlike that crate's
//! transport, the reader survives a bad message:
//! its bytes are kept while it is read, so a body that is not JSON is
//! answered `-32700`, one that is JSON but no request `-32600` (with its
//! id when it has one), and the next message is read. A header that
//! cannot be read, or a `Content-Length` over the limit (checked before
//! the body is allocated), ends the session after a `-32700`.
//!
//! What the server sends is written as JSON text once: a result is
//! serialized from its type into a [`Reply`] by the worker that computed
//! it, and framed with its header into one buffer written in one call,
//! by that worker ([`Output`]: standard output under a lock held only
//! for the write) or by the writer thread for what the dispatcher answers
//! itself.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::sync::Mutex;
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;
use lsp_server::{Message, RequestId};
use serde_json::{Value, json};

use super::errors::{ServeError, code};

/// What the reader hands the dispatcher.
pub enum Incoming {
    /// A well-formed message.
    Message(Message),
    /// A message that is not one: answered with this error (and the id the
    /// message had, if any), then the session goes on.
    Invalid(ServeError, Option<RequestId>),
    /// The input ended (cleanly when `None`; after an unreadable header
    /// or an oversized message, answered with the error).
    End(Option<ServeError>),
}

/// A result, or a notification's parameters, written as JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply(String);

impl Reply {
    /// `value` as JSON text.
    pub fn of(value: &impl serde::Serialize) -> Result<Reply, ServeError> {
        serde_json::to_string(value)
            .map(Reply)
            .map_err(|e| ServeError::new(code::INTERNAL_ERROR, format!("result not encoded: {e}")))
    }

    /// `null`.
    pub fn null() -> Reply {
        Reply("null".into())
    }

    /// The JSON text.
    pub fn json(&self) -> &str {
        &self.0
    }
}

/// What the server sends.
pub enum Outgoing {
    /// The answer to a request.
    Response(RequestId, Result<Reply, ServeError>),
    /// A notification: its method and parameters.
    Notification(&'static str, Reply),
    /// An error answer to a message whose id could not be read: JSON-RPC
    /// wants `"id": null`.
    NullIdError(ServeError),
}

impl Outgoing {
    /// The message's JSON-RPC body, in the pieces it is framed from (a
    /// result is not copied into a string of its own first).
    pub fn body_parts(&self) -> [std::borrow::Cow<'_, str>; 3] {
        use std::borrow::Cow::{Borrowed, Owned};
        let id_text = |id: &RequestId| serde_json::to_string(id).unwrap_or_else(|_| "null".into());
        match self {
            Outgoing::Response(id, Ok(result)) => [
                Owned(format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":"#,
                    id_text(id)
                )),
                Borrowed(result.json()),
                Borrowed("}"),
            ],
            Outgoing::Response(id, Err(error)) => [
                Owned(format!(
                    r#"{{"jsonrpc":"2.0","id":{},"error":"#,
                    id_text(id)
                )),
                Owned(error_json(error).to_string()),
                Borrowed("}"),
            ],
            Outgoing::Notification(method, params) => [
                Owned(format!(
                    r#"{{"jsonrpc":"2.0","method":{},"params":"#,
                    Value::from(*method)
                )),
                Borrowed(params.json()),
                Borrowed("}"),
            ],
            Outgoing::NullIdError(error) => [
                Borrowed(r#"{"jsonrpc":"2.0","id":null,"error":"#),
                Owned(error_json(error).to_string()),
                Borrowed("}"),
            ],
        }
    }

    /// The message's JSON-RPC body.
    pub fn body(&self) -> String {
        self.body_parts().concat()
    }

    /// The message framed: its header and body, in one buffer.
    fn framed(&self) -> Vec<u8> {
        let parts = self.body_parts();
        let length: usize = parts.iter().map(|part| part.len()).sum();
        let mut framed = Vec::with_capacity(length + 32);
        let _ = write!(framed, "Content-Length: {length}\r\n\r\n");
        for part in &parts {
            framed.extend_from_slice(part.as_bytes());
        }
        framed
    }
}

/// A JSON-RPC error object.
pub fn error_json(error: &ServeError) -> Value {
    let mut body = json!({"code": error.code, "message": error.message});
    if let Some(data) = &error.data {
        body["data"] = data.clone();
    }
    body
}

/// Standard output, written by whoever has a message: each message is
/// one write of its framed bytes under the lock (never interleaved), by
/// the thread that has it (no hand-off to a writer). Unbuffered: a
/// message leaves in one system call, not a header first. After a failed
/// write (the client is gone) it writes nothing more.
pub struct Output {
    file: Mutex<Option<File>>,
}

impl Output {
    /// Standard output (its descriptor duplicated, so that each message
    /// is written unbuffered).
    pub fn stdout() -> io::Result<Output> {
        let file = File::from(io::stdout().as_fd().try_clone_to_owned()?);
        Ok(Output {
            file: Mutex::new(Some(file)),
        })
    }

    /// Writes `message`; `false` when the client is gone.
    pub fn send(&self, message: &Outgoing) -> bool {
        let framed = message.framed();
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let Some(out) = file.as_mut() else {
            return false;
        };
        if out.write_all(&framed).is_err() {
            *file = None;
            return false;
        }
        true
    }
}

/// Reads standard input's messages on this thread, handing each to
/// `handle` until it returns `Some` (whether the session ended cleanly)
/// or the input ends (handed over as [`Incoming::End`]); messages over
/// `max_bytes` end the input.
pub fn read_stdin(max_bytes: usize, mut handle: impl FnMut(Incoming) -> Option<bool>) -> bool {
    let stdin = io::stdin();
    let mut input = Recording::new(BufReader::new(stdin.lock()), max_bytes);
    loop {
        input.start_message();
        let incoming = match Message::read(&mut input) {
            Ok(Some(message)) => Incoming::Message(message),
            Ok(None) => Incoming::End(None),
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => Incoming::End(None),
            Err(error) => match input.whole_body() {
                Some(body) => invalid(body),
                None => Incoming::End(Some(ServeError::new(
                    code::PARSE_ERROR,
                    format!("unreadable message header, the session ends: {error}"),
                ))),
            },
        };
        let end = matches!(incoming, Incoming::End(_));
        if let Some(clean) = handle(incoming) {
            return clean;
        }
        if end {
            return true;
        }
    }
}

/// The error for a whole message `body` that is not a JSON-RPC message.
fn invalid(body: &[u8]) -> Incoming {
    match serde_json::from_slice::<Value>(body) {
        Err(error) => Incoming::Invalid(
            ServeError::new(
                code::PARSE_ERROR,
                format!("the message is not JSON: {error}"),
            ),
            None,
        ),
        Ok(value) => {
            let id = value
                .get("id")
                .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
            Incoming::Invalid(
                ServeError::new(
                    code::INVALID_REQUEST,
                    "the message is JSON but not a JSON-RPC request, notification or \
                     response (a method name string, an integer or string id, params)",
                ),
                id,
            )
        }
    }
}

/// Starts the writer of what the dispatcher answers itself, writing
/// what `from` gives to `output` until every sender is gone or the
/// client is.
pub fn writer(from: Receiver<Outgoing>, output: std::sync::Arc<Output>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("serve-writer".into())
        .spawn(move || {
            for outgoing in from {
                if !output.send(&outgoing) {
                    // The client is gone: what is left is dropped.
                    return;
                }
            }
        })
        .expect("a thread can be started")
}

/// Standard input, keeping the bytes of the message being read (its
/// header and body) so that a bad one can be answered, and refusing a
/// `Content-Length` over the limit before `lsp-server` allocates it.
struct Recording<R> {
    inner: BufReader<R>,
    seen: Vec<u8>,
    /// Where the header's blank line ends in `seen`, once read.
    body_at: Option<usize>,
    max_bytes: usize,
}

impl<R: Read> Recording<R> {
    fn new(inner: BufReader<R>, max_bytes: usize) -> Self {
        Recording {
            inner,
            seen: Vec::new(),
            body_at: None,
            max_bytes,
        }
    }

    fn start_message(&mut self) {
        self.seen.clear();
        self.body_at = None;
    }

    /// The body of the message just read, when it was read whole (its
    /// length the header's): the input is then at the next message.
    fn whole_body(&self) -> Option<&[u8]> {
        let at = self.body_at?;
        let body = &self.seen[at..];
        (Some(body.len()) == content_length(&self.seen[..at])).then_some(body)
    }
}

/// The `Content-Length` of complete header lines, if one says it.
fn content_length(header: &[u8]) -> Option<usize> {
    header.split(|&b| b == b'\n').find_map(|line| {
        let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

impl<R: Read> Read for Recording<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Recording<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let in_header = self.body_at.is_none();
        if in_header && content_length(&self.seen).is_some_and(|n| n > self.max_bytes) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a message of more than {} bytes (limits.maxMessageBytes)",
                    self.max_bytes
                ),
            ));
        }
        if in_header && self.seen.len() > 64 * 1024 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a message header of more than 64 KiB",
            ));
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        let n = n.min(self.inner.buffer().len());
        let from = self.seen.len().saturating_sub(3);
        self.seen.extend_from_slice(&self.inner.buffer()[..n]);
        self.inner.consume(n);
        if self.body_at.is_none()
            && let Some(end) = self.seen[from..].windows(4).position(|w| w == b"\r\n\r\n")
        {
            self.body_at = Some(from + end + 4);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    #[test]
    fn a_bad_body_is_answered_and_the_next_message_read() {
        let mut bytes = framed("{not json");
        bytes.extend(framed(r#"{"id":7,"foo":1}"#));
        bytes.extend(framed(r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#));
        let mut input = Recording::new(BufReader::new(&bytes[..]), 1 << 20);
        input.start_message();
        assert!(Message::read(&mut input).is_err());
        let Incoming::Invalid(error, None) = invalid(input.whole_body().unwrap()) else {
            panic!("not answered as invalid");
        };
        assert_eq!(error.code, code::PARSE_ERROR);
        input.start_message();
        assert!(Message::read(&mut input).is_err());
        let Incoming::Invalid(error, Some(id)) = invalid(input.whole_body().unwrap()) else {
            panic!("not answered with its id");
        };
        assert_eq!(
            (error.code, id),
            (code::INVALID_REQUEST, RequestId::from(7))
        );
        input.start_message();
        assert!(matches!(
            Message::read(&mut input),
            Ok(Some(Message::Request(request))) if request.method == "shutdown"
        ));
    }

    #[test]
    fn an_oversized_message_is_refused_before_its_body() {
        let bytes = b"Content-Length: 99999999999999\r\n\r\n{}".to_vec();
        let mut input = Recording::new(BufReader::new(&bytes[..]), 1 << 20);
        input.start_message();
        let error = Message::read(&mut input).unwrap_err();
        assert!(error.to_string().contains("maxMessageBytes"), "{error}");
        assert!(input.whole_body().is_none());
    }
}
