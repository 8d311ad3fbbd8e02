//! Errors. Every failure to read a trace names what was wrong and where.
//!
//! # Errors
//!
//! Corrupt data gives typed `crate::Error`s with physical offsets
//! (`DecodeError`), never a panic (tests corrupt every byte of the index and
//! every third byte of the data, and cut both at many lengths). A corrupt
//! index is rebuilt per the rules above; corruption the rules cannot see (a
//! container end moved to another valid-looking offset) gives a decode error
//! when that container is used. A thread whose cells were distrusted and whose
//! rescan met corrupt data answers every call that needs its table with that
//! decode error, never with an empty table (test
//! `lazy_index_policy::a_failed_rescan_gives_the_data_error_to_every_lookup`).

use std::path::{Path, PathBuf};

use crate::common::{EventId, IndexCell, LogicalOffset, ObjectKind, PhysicalOffset, ThreadId};

/// What was wrong with a byte sequence; [`DecodeError`] adds where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The bytes ended inside an object.
    #[error("unexpected end of data: {needed} more bytes needed, {available} available")]
    UnexpectedEnd {
        /// Bytes the decoder needed.
        needed: u64,
        /// Bytes that were left.
        available: u64,
    },
    /// A file did not start with the expected magic number.
    #[error("bad magic {found:#018x}, expected {expected:#018x}")]
    BadMagic {
        /// The magic read.
        found: u64,
        /// The magic expected.
        expected: u64,
    },
    /// The format version is not 22.
    #[error("unsupported format version {0} (tracetree reads version 22)")]
    UnsupportedVersion(i64),
    /// The first byte of an object is not a known kind.
    #[error("unknown object kind byte {0}")]
    UnknownObjectKind(u8),
    /// An object of a kind that may not stand here.
    #[error("unexpected {found} object: {context}")]
    UnexpectedObject {
        /// The kind found.
        found: ObjectKind,
        /// Why it may not stand here.
        context: &'static str,
    },
    /// An unknown `Type` tag.
    #[error("unknown type tag {0}")]
    UnknownTypeTag(u8),
    /// An unknown access location tag.
    #[error("unknown access location tag {0}")]
    UnknownAccessLocationTag(u8),
    /// An unknown code location kind.
    #[error("unknown code location kind {0}")]
    UnknownCodeLocationKind(u8),
    /// An unknown local variable kind in a code location.
    #[error("unknown local variable kind {0}")]
    UnknownLocalKind(i32),
    /// An unknown tracepoint type.
    #[error("unknown tracepoint type {0}")]
    UnknownTracepointType(u8),
    /// A diff status outside -1..=4.
    #[error("invalid diff status {0}")]
    InvalidDiffStatus(i8),
    /// A negative value code that names no value kind.
    #[error("unknown value code {0}")]
    UnknownValueCode(i32),
    /// A count field that is negative or larger than the bytes that follow.
    #[error("invalid {what} count {count}")]
    InvalidCount {
        /// What is counted.
        what: &'static str,
        /// The count read.
        count: i64,
    },
    /// A string that is not valid modified UTF-8.
    #[error("malformed modified UTF-8 at byte {position} of the string")]
    MalformedUtf {
        /// Byte position inside the string's payload.
        position: usize,
    },
    /// Values or types nested deeper than the decoder allows.
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
    /// A footer that closes no open container.
    #[error("tracepoint footer without an open container")]
    UnmatchedFooter,
    /// A tracepoint whose thread differs from the block's.
    #[error("tracepoint of thread {found} in a block of thread {expected}")]
    ThreadMismatch {
        /// The block's thread.
        expected: i32,
        /// The tracepoint's thread.
        found: i32,
    },
}

/// Where a malformed byte sequence is: in which file, at which offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Position {
    /// In the data file (or bytes decoded as a data file's).
    Data(PhysicalOffset),
    /// In the index file, `n` bytes from its start.
    Index(u64),
}

impl Position {
    /// The offset in its file, whichever file that is.
    pub fn offset(self) -> u64 {
        match self {
            Position::Data(offset) => offset.0,
            Position::Index(offset) => offset,
        }
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::Data(offset) => write!(f, "offset {offset}"),
            Position::Index(offset) => write!(f, "offset {offset} of the index file"),
        }
    }
}

/// A malformed byte sequence at a known [`Position`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at {at}")]
#[non_exhaustive]
pub struct DecodeError {
    /// Where the faulty object or field starts.
    pub at: Position,
    /// What was wrong.
    pub kind: DecodeErrorKind,
}

impl DecodeError {
    /// A new error of `kind` at `offset` of the data file.
    pub fn new(offset: PhysicalOffset, kind: DecodeErrorKind) -> Self {
        DecodeError {
            at: Position::Data(offset),
            kind,
        }
    }

    /// A new error of `kind` at `offset` of the index file.
    pub fn in_index(offset: u64, kind: DecodeErrorKind) -> Self {
        DecodeError {
            at: Position::Index(offset),
            kind,
        }
    }
}

/// Any failure of tracetree's readers, writers and printer.
///
/// Each variant says what kind of failure it is, so that a caller can act
/// on it: malformed data ([`Decode`](Error::Decode)), a file that cannot be
/// read or is not what was expected ([`Io`](Error::Io),
/// [`Unsupported`](Error::Unsupported), [`InFile`](Error::InFile)), a
/// caller's mistake ([`InvalidArgument`](Error::InvalidArgument)), a limit
/// ([`LimitExceeded`](Error::LimitExceeded)), or a bug in tracetree
/// ([`Internal`](Error::Internal)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Malformed data.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// An I/O failure, on a file when `path` names it, else on a stream
    /// (a pipe, a writer given by the caller).
    #[error("{}{source}", io_prefix(.path))]
    Io {
        /// The file, when there is one.
        path: Option<PathBuf>,
        /// The failure.
        source: std::io::Error,
    },
    /// A failure while reading the file `path`, which the inner error
    /// does not name.
    #[error("{}: {source}", .path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: Box<Error>,
    },
    /// An input that is not what tracetree reads there: what was expected,
    /// and what was found instead.
    #[error("{}not {expected}: {found}", path_prefix(.path))]
    Unsupported {
        /// The file, when the input is one.
        path: Option<PathBuf>,
        /// What was expected (`a trace`, `a TPTP binary trace`, ...).
        expected: &'static str,
        /// What the input looked like.
        found: String,
    },
    /// A tracepoint refers to a reference object the trace does not hold.
    #[error("missing {kind} with id {id}")]
    MissingReference {
        /// The kind of the object.
        kind: ObjectKind,
        /// Its id.
        id: i32,
    },
    /// The index file is unusable (readers rebuild instead of failing,
    /// unless told to require it), or does not match its data file.
    #[error("{}broken index: {problem}", path_prefix(.index))]
    BrokenIndex {
        /// The index file, when the trace was opened from a path.
        index: Option<PathBuf>,
        /// What is wrong with it.
        problem: IndexProblem,
    },
    /// A caller passed an argument the call cannot take, or called in an
    /// order the API forbids (for example exited more calls than it
    /// entered): which argument, and what was wrong with it.
    #[error("invalid {argument}: {problem}")]
    InvalidArgument {
        /// The argument (`thread`, `event id`, `--threads`, `call order`, ...).
        argument: &'static str,
        /// What was wrong with it.
        problem: String,
    },
    /// A count or size past a limit of the format or of tracetree.
    #[error("too many {what}: {value}, over the limit of {limit}")]
    LimitExceeded {
        /// What was counted (`threads`, `event ids`, ...).
        what: &'static str,
        /// The most allowed.
        limit: u64,
        /// The count reached (at least).
        value: u64,
    },
    /// Work stopped because the caller asked it to (a stop flag set by
    /// another thread): nothing it would have written was left behind.
    #[error("stopped: {0} was cancelled before it finished")]
    Cancelled(&'static str),
    /// An invariant of tracetree itself was broken: a bug.
    #[error("internal error: {0} (a bug in tracetree; please report)")]
    Internal(String),
    /// Loading a whole trace eagerly would take more memory than its budget
    /// ([`EagerOptions::memory_budget`](crate::read::EagerOptions::memory_budget)):
    /// the lazy reader reads it in little memory.
    #[error(
        "loading the whole trace would need about {} MB of memory, over the budget of {} MB: \
         read it with the lazy reader (`LazyTraceReader`; on the command line, without `--eager`)",
        .needed.div_ceil(1_000_000),
        .budget / 1_000_000
    )]
    OverMemoryBudget {
        /// The memory estimated to be needed (at least), in bytes.
        needed: u64,
        /// The budget, in bytes.
        budget: u64,
    },
    /// A node, node handle or event id that names nothing in this trace.
    #[error("no such node: {0}")]
    NoSuchNode(NodeProblem),
    /// A source that is not what it claims to be, or is too damaged to
    /// read at all: a packed trace whose ZIP is broken or holds entries
    /// the recorder never writes, a recording with no whole chunk.
    #[error("{path}: {what}")]
    BadSource {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where in it.
        what: String,
    },
    /// A string given to a writer is longer than `writeUTF` can write.
    #[error("{what}: string of {len} bytes is longer than 65535 bytes of modified UTF-8")]
    StringTooLong {
        /// What the string is (`class name`, `string value`, ...).
        what: &'static str,
        /// Its length in bytes of modified UTF-8.
        len: usize,
    },
}

impl From<std::io::Error> for Error {
    /// An I/O failure on a stream without a path.
    fn from(source: std::io::Error) -> Self {
        Error::Io { path: None, source }
    }
}

/// `PATH: `, or nothing without a path.
fn path_prefix(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map(|path| format!("{}: ", path.display()))
        .unwrap_or_default()
}

/// `PATH: `, or `I/O error: ` without a path.
fn io_prefix(path: &Option<PathBuf>) -> String {
    match path {
        Some(path) => format!("{}: ", path.display()),
        None => "I/O error: ".to_string(),
    }
}

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: Some(path.into()),
            source,
        }
    }

    /// An [`InvalidArgument`](Error::InvalidArgument) error.
    pub fn invalid(argument: &'static str, problem: impl Into<String>) -> Self {
        Error::InvalidArgument {
            argument,
            problem: problem.into(),
        }
    }

    /// A [`LimitExceeded`](Error::LimitExceeded) error; `value` and
    /// `limit` are any integers (a value that does not fit `u64` is
    /// said as `u64::MAX`).
    pub fn limit<V: TryInto<u64>, L: TryInto<u64>>(what: &'static str, value: V, limit: L) -> Self {
        Error::LimitExceeded {
            what,
            limit: limit.try_into().unwrap_or(u64::MAX),
            value: value.try_into().unwrap_or(u64::MAX),
        }
    }

    /// An [`Internal`](Error::Internal) error: a broken invariant.
    pub(crate) fn internal(what: impl Into<String>) -> Self {
        Error::Internal(what.into())
    }

    /// This error, met while opening or reading the file `path` as a v22
    /// trace, made to name it: a file too short for the magic, or with
    /// another, is [`Error::Unsupported`] saying what it looks like;
    /// malformed data, a missing reference object or an I/O or index
    /// failure that names no file is wrapped in [`Error::InFile`]; any
    /// other is kept.
    pub(crate) fn in_file(self, path: &Path) -> Self {
        match self {
            Error::Decode(DecodeError {
                at: Position::Data(PhysicalOffset(0)),
                kind: DecodeErrorKind::BadMagic { .. } | DecodeErrorKind::UnexpectedEnd { .. },
            }) => Error::Unsupported {
                path: Some(path.to_path_buf()),
                expected: "a trace",
                found: not_a_trace(path),
            },
            Error::Decode(_)
            | Error::MissingReference { .. }
            | Error::Io { path: None, .. }
            | Error::BrokenIndex { index: None, .. } => Error::InFile {
                path: path.to_path_buf(),
                source: Box::new(self),
            },
            other => other,
        }
    }

    /// The error inside any [`Error::InFile`] wrappers: what went wrong,
    /// without which file.
    pub fn unwrapped(&self) -> &Error {
        match self {
            Error::InFile { source, .. } => source.unwrapped(),
            other => other,
        }
    }

    /// The same error with `shown` in place of the path `actual` (as a
    /// command that read its input from a pipe into a temporary file names
    /// the input as the user gave it).
    pub fn shown_as(self, actual: &Path, shown: &Path) -> Self {
        let swap = |path: PathBuf| {
            if path == actual {
                shown.to_path_buf()
            } else {
                path
            }
        };
        match self {
            Error::Io { path, source } => Error::Io {
                path: path.map(swap),
                source,
            },
            Error::InFile { path, source } => Error::InFile {
                path: swap(path),
                source: Box::new(source.shown_as(actual, shown)),
            },
            Error::Unsupported {
                path,
                expected,
                found,
            } => Error::Unsupported {
                path: path.map(swap),
                expected,
                found,
            },
            Error::BadSource { path, what } => Error::BadSource {
                path: swap(path),
                what,
            },
            other => other,
        }
    }

    /// A copy of this error, for each call that meets a kept one (`Error`
    /// is not `Clone`: an I/O error keeps its kind and message).
    pub(crate) fn replay(&self) -> Error {
        match self {
            Error::Decode(error) => Error::Decode(error.clone()),
            Error::Io { path, source } => Error::Io {
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::InFile { path, source } => Error::InFile {
                path: path.clone(),
                source: Box::new(source.replay()),
            },
            Error::Unsupported {
                path,
                expected,
                found,
            } => Error::Unsupported {
                path: path.clone(),
                expected,
                found: found.clone(),
            },
            Error::MissingReference { kind, id } => Error::MissingReference {
                kind: *kind,
                id: *id,
            },
            Error::BrokenIndex { index, problem } => Error::BrokenIndex {
                index: index.clone(),
                problem: problem.clone(),
            },
            Error::InvalidArgument { argument, problem } => Error::InvalidArgument {
                argument,
                problem: problem.clone(),
            },
            &Error::LimitExceeded { what, limit, value } => {
                Error::LimitExceeded { what, limit, value }
            }
            Error::Internal(what) => Error::Internal(what.clone()),
            &Error::Cancelled(what) => Error::Cancelled(what),
            Error::NoSuchNode(what) => Error::NoSuchNode(what.clone()),
            Error::BadSource { path, what } => Error::BadSource {
                path: path.clone(),
                what: what.clone(),
            },
            Error::StringTooLong { what, len } => Error::StringTooLong { what, len: *len },
            &Error::OverMemoryBudget { needed, budget } => {
                Error::OverMemoryBudget { needed, budget }
            }
        }
    }
}

/// What the file at `path`, which does not start with the v22 magic,
/// looks like to a reader (which knows no foreign format: opening one of
/// those goes through `TracePath::for_input`, which says more).
pub(crate) fn not_a_trace(path: &Path) -> String {
    if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
        "an empty file".to_string()
    } else {
        "neither the v22 magic nor a .flow, Blinky, TPTP or JFR recording".to_string()
    }
}

/// Why a node, node handle or event id names nothing in a trace
/// ([`Error::NoSuchNode`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodeProblem {
    /// No tracepoint has this event id.
    #[error("no tracepoint has event id {0}")]
    NoEvent(EventId),
    /// The trace has no such thread.
    #[error("the trace has no thread {0}")]
    NoThread(ThreadId),
    /// A node made by the reader of another trace.
    #[error("a node of another trace's reader (thread {thread}, offset {at})")]
    OtherTrace {
        /// The node's thread.
        thread: ThreadId,
        /// Its offset in that thread's stream.
        at: LogicalOffset,
    },
    /// An offset at or past the end of its thread's stream.
    #[error("offset {at} is past the end of thread {thread}'s stream ({end} bytes)")]
    PastStreamEnd {
        /// The thread.
        thread: ThreadId,
        /// The offset.
        at: LogicalOffset,
        /// The stream's length.
        end: LogicalOffset,
    },
    /// An offset where no tracepoint starts.
    #[error("no tracepoint at offset {at} of thread {thread} (physical offset {physical})")]
    NoTracepointAt {
        /// The thread.
        thread: ThreadId,
        /// The offset in its stream.
        at: LogicalOffset,
        /// The same place in the data file.
        physical: PhysicalOffset,
    },
    /// A node its parent does not list among its children.
    #[error("no child of its parent starts at offset {0}")]
    NotAChild(LogicalOffset),
    /// A child index past its parent's children.
    #[error("child {0} was not found after expanding its parent")]
    NoChild(usize),
    /// A container whose end neither the index nor a scan finds.
    #[error("no end found for the container at {0}")]
    NoContainerEnd(LogicalOffset),
    /// A block the lookups place outside the data file.
    #[error("block at {0} is outside the data")]
    BlockOutsideData(PhysicalOffset),
    /// The index's cell for a container contradicts the data (the
    /// thread's cells are distrusted from then on).
    #[error("{0}")]
    Contradicted(String),
    /// A tracepoint a view hides (the post-processing shows it as another
    /// node, or not at all).
    #[error("the post-processed view hides the tracepoint at offset {at} of thread {thread}")]
    Hidden {
        /// The thread.
        thread: ThreadId,
        /// The offset in its stream.
        at: LogicalOffset,
    },
}

/// Why an index file was not used, or does not match its data file
/// ([`Error::BrokenIndex`]; the rules are listed in `docs/FORMAT.md`,
/// "tracetree's index policy").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexProblem {
    /// The file could not be opened.
    #[error("missing ({0})")]
    Missing(String),
    /// Shorter than a header and a footer.
    #[error("{0} bytes, shorter than a header and a footer")]
    TooShort(u64),
    /// Bad magic or version.
    #[error("bad header: {0}")]
    Header(DecodeError),
    /// A cell's kind byte is no object kind.
    #[error("cell {cell}: unknown kind byte {kind}")]
    UnknownKind {
        /// The cell's number (0 = the first cell after the header).
        cell: usize,
        /// The kind byte.
        kind: u8,
    },
    /// A cell of a kind an index never lists (a footer, `BLOCK_END`, `EOF`).
    #[error("cell {cell}: an index holds no {kind} cells")]
    UnexpectedKind {
        /// The cell's number.
        cell: usize,
        /// Its kind.
        kind: ObjectKind,
    },
    /// A cell points outside the data file.
    #[error("cell {cell}: offset {offset} is outside the data file")]
    OutOfBounds {
        /// The cell's number.
        cell: usize,
        /// The offset.
        offset: i64,
    },
    /// A reference cell's target has another kind or id.
    #[error("cell {cell}: no {kind} with id {id} at offset {offset}")]
    ReferenceMismatch {
        /// The cell's number.
        cell: usize,
        /// The cell's kind.
        kind: ObjectKind,
        /// The cell's id.
        id: i32,
        /// Where it points.
        offset: u64,
    },
    /// A block cell does not frame a block of its thread.
    #[error("cell {cell}: no block of thread {thread} from offset {start} to {end}")]
    BlockMismatch {
        /// The cell's number.
        cell: usize,
        /// The cell's thread.
        thread: i32,
        /// Where it says the `BLOCK_START` is.
        start: u64,
        /// Where it says the `BLOCK_END` is.
        end: u64,
    },
    /// A container cell comes before any block cell (streaming order) or
    /// after the last (dump order), so its thread is unknown.
    #[error("cell {cell}: container cell belongs to no block cell")]
    ContainerWithoutBlock {
        /// The cell's number.
        cell: usize,
    },
    /// A container cell's range is not inside its thread's logical stream.
    #[error(
        "cell {cell}: range {start}..{end} is not inside thread {thread}'s logical stream of {len} bytes"
    )]
    ContainerOutsideThread {
        /// The cell's number.
        cell: usize,
        /// The thread of the block the cell belongs to.
        thread: i32,
        /// The cell's start.
        start: i64,
        /// The cell's end.
        end: i64,
        /// The stream's length.
        len: u64,
    },
    /// Two container ranges overlap without nesting, or share a footer.
    #[error("cell {cell}: container range overlaps another without nesting")]
    Crossing {
        /// The cell's number.
        cell: usize,
    },
    /// The block cells leave a gap: no block starts where the previous ends.
    #[error("no block cell for the block at offset {0}")]
    Gap(PhysicalOffset),
    /// After the last indexed block the data holds more than `EOF`.
    #[error("{bytes} bytes after the last indexed block (offset {at}) are not EOF")]
    Uncovered {
        /// Offset just after the last indexed block.
        at: PhysicalOffset,
        /// Bytes from there to the end of the file.
        bytes: u64,
    },
    /// A scan of the data contradicted the index.
    #[error("the data contradicts the index: {0}")]
    Inconsistent(String),
    /// The index lacks a cell the data justifies (`tracetree index
    /// --check`).
    #[error("it does not list {0}, which the data holds")]
    Lacks(IndexCell),
    /// The index has a cell the data does not justify.
    #[error("it lists {0}, which the data does not hold")]
    Unjustified(IndexCell),
    /// The caller asked for a rebuild (or to read the data through, as
    /// `print` does).
    #[error("the data was read through instead")]
    Requested,
    /// The lookups come from a sidecar written after a rebuild; this was
    /// the problem then.
    #[error("{0} (when the lookup sidecar was written)")]
    Recorded(String),
}

/// A `Result` with tracetree's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
