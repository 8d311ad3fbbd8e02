//! Index files: a header, fixed 21-byte cells, and a footer (an `EOF` cell
//! and the index magic again). Cells are read in place as [`RawIndexCell`]s
//! of unaligned big-endian fields.

use std::io::{self, Write};

use zerocopy::byteorder::{BigEndian, I32, I64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::{FILE_HEADER_LEN, INDEX_MAGIC, ObjectKind};

/// One index cell exactly as stored: kind, id, start, end.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct RawIndexCell {
    /// The object kind byte.
    pub kind: u8,
    /// The object's id (thread id for blocks, event id for containers).
    pub id: I32<BigEndian>,
    /// Start offset (physical, or logical for containers).
    pub start: I64<BigEndian>,
    /// End offset (block end, container footer; unused otherwise).
    pub end: I64<BigEndian>,
}

/// Bytes in one cell.
pub const CELL_LEN: usize = std::mem::size_of::<RawIndexCell>();
const _: () = assert!(CELL_LEN == 21);

/// Bytes after the last cell: the `EOF` cell and the magic.
pub const INDEX_FOOTER_LEN: usize = CELL_LEN + 8;

/// A decoded index cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexCell {
    /// The object kind.
    pub kind: ObjectKind,
    /// The id.
    pub id: i32,
    /// The start offset.
    pub start: i64,
    /// The end offset.
    pub end: i64,
}

impl IndexCell {
    /// The cell with only the fields that carry meaning: a reference cell's
    /// `end` is unused (writers store various values there), so it becomes −1.
    /// Two indexes describe the same trace when their canonical cells are
    /// the same set.
    pub fn canonical(mut self) -> IndexCell {
        if self.kind.is_reference() {
            self.end = -1;
        }
        self
    }

    /// The on-disk form.
    pub fn to_raw(self) -> RawIndexCell {
        RawIndexCell {
            kind: self.kind as u8,
            id: I32::new(self.id),
            start: I64::new(self.start),
            end: I64::new(self.end),
        }
    }

    /// Encodes the cell.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.write_all(self.to_raw().as_bytes())
    }
}

impl RawIndexCell {
    /// Decodes the kind; `offset` is the cell's offset in the index file.
    pub fn decode(&self, offset: u64) -> Result<IndexCell, DecodeError> {
        let kind = ObjectKind::from_byte(self.kind).ok_or_else(|| {
            DecodeError::new(offset, DecodeErrorKind::UnknownObjectKind(self.kind))
        })?;
        Ok(IndexCell {
            kind,
            id: self.id.get(),
            start: self.start.get(),
            end: self.end.get(),
        })
    }
}

/// In words, for users: what the cell says is where (`the block of thread
/// 2 at bytes 10..2,700 of the data file`, `the call or loop with event id
/// 7, bytes 12..340 of its thread's stream`, `thread name 3 at byte 120
/// of the data file`).
impl std::fmt::Display for IndexCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let IndexCell {
            kind,
            id,
            start,
            end,
        } = *self;
        match kind {
            ObjectKind::BlockStart => write!(
                f,
                "the block of thread {id} at bytes {start}..{} of the data file",
                end.saturating_add(1)
            ),
            ObjectKind::Tracepoint => write!(
                f,
                "the call or loop with event id {id}, bytes {start}..{end} of its thread's stream"
            ),
            kind if kind.is_reference() => {
                let name = kind.name().to_ascii_lowercase().replace('_', " ");
                write!(f, "{name} {id} at byte {start} of the data file")
            }
            kind => write!(f, "a {kind} cell (id {id}, {start}..{end})"),
        }
    }
}

/// The cells of an index file, read in place.
#[derive(Debug, Clone, Copy)]
pub struct IndexCells<'a> {
    /// The cells, without the footer's `EOF` cell.
    pub cells: &'a [RawIndexCell],
    /// Whether the file ended with a complete footer (`EOF` cell and magic).
    pub has_footer: bool,
}

impl IndexCells<'_> {
    /// The file offset of cell `n`: cells follow the file header back to back.
    pub fn cell_offset(n: usize) -> u64 {
        FILE_HEADER_LEN + (n * CELL_LEN) as u64
    }

    /// Decodes every cell; an error names the offset of the first bad one.
    pub fn decode_all(&self) -> Result<Vec<IndexCell>, DecodeError> {
        self.cells
            .iter()
            .enumerate()
            .map(|(n, raw)| raw.decode(Self::cell_offset(n)))
            .collect()
    }
}

/// Splits an index file into its cells. A file without a footer (a crashed
/// recorder's) yields every complete cell and `has_footer == false`.
pub fn parse_index(bytes: &[u8]) -> Result<IndexCells<'_>, DecodeError> {
    crate::format::check_file_header(bytes, INDEX_MAGIC)?;
    let body = &bytes[FILE_HEADER_LEN as usize..];
    let has_footer = body.len() >= INDEX_FOOTER_LEN
        && (body.len() - INDEX_FOOTER_LEN).is_multiple_of(CELL_LEN)
        && body[body.len() - 8..] == INDEX_MAGIC.to_be_bytes()
        && body[body.len() - INDEX_FOOTER_LEN] == ObjectKind::Eof as u8;
    let cell_bytes = if has_footer {
        &body[..body.len() - INDEX_FOOTER_LEN]
    } else {
        &body[..body.len() - body.len() % CELL_LEN]
    };
    let cells = <[RawIndexCell]>::ref_from_bytes(cell_bytes)
        .expect("a whole number of unaligned cells always fits");
    Ok(IndexCells { cells, has_footer })
}

/// Writes an index footer: the `EOF` cell with `start`/`end` (the streaming
/// writer uses −1/−1) and the magic.
pub fn encode_index_footer<W: Write + ?Sized>(out: &mut W, start: i64, end: i64) -> io::Result<()> {
    IndexCell {
        kind: ObjectKind::Eof,
        id: -1,
        start,
        end,
    }
    .encode(out)?;
    out.write_all(&INDEX_MAGIC.to_be_bytes())
}

/// Writes a whole index file: header, `cells`, and a streaming-style footer.
pub fn encode_index<'a, W: Write + ?Sized>(
    out: &mut W,
    cells: impl IntoIterator<Item = &'a IndexCell>,
) -> io::Result<()> {
    out.write_all(&crate::format::file_header(INDEX_MAGIC))?;
    for cell in cells {
        cell.encode(out)?;
    }
    encode_index_footer(out, -1, -1)
}
