//! What became of an index file: used, or why not (the rules of the index
//! policy, one variant each; the table of rules is in the `index` module).

use crate::common::PhysicalOffset;
use crate::error::DecodeError;
use crate::format::ObjectKind;

/// Why an index file was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    /// The caller asked for a rebuild (or to read the data through, as
    /// `print` does).
    #[error("the data was read through instead")]
    Requested,
    /// The lookups come from a sidecar written after a rebuild; this was
    /// the problem then.
    #[error("{0} (when the lookup sidecar was written)")]
    Recorded(String),
}

/// What a reader did with a trace's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexStatus {
    /// The index file was valid and used.
    Used {
        /// Whether it ended with its footer (a crashed recorder leaves none).
        complete: bool,
    },
    /// The index was missing or broken (or a rebuild was asked for): the
    /// lookup structures were rebuilt from the data file (in parallel).
    Rebuilt(IndexProblem),
}
