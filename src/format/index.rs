//! Index files: a header, fixed 21-byte cells, and a footer (an `EOF` cell
//! and the index magic again). Cells are read in place as [`RawIndexCell`]s
//! of unaligned big-endian fields.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use zerocopy::byteorder::{BigEndian, I32, I64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

pub use crate::common::IndexCell;
use crate::common::{EventId, LogicalOffset, ObjectKind, PhysicalOffset, ThreadId};
use crate::error::{DecodeError, IndexProblem};
use crate::format::{FILE_HEADER_LEN, INDEX_MAGIC};

/// One index cell exactly as stored: kind, id, start, end.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub(crate) struct RawIndexCell {
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

impl IndexCell {
    /// The on-disk form.
    #[inline]
    pub(crate) fn to_raw(self) -> RawIndexCell {
        let (kind, id, start, end) = match self {
            IndexCell::Reference { kind, id, at, end } => (kind, id, at.get() as i64, end),
            IndexCell::Block { thread, start, end } => (
                ObjectKind::BlockStart,
                thread.get(),
                start.get() as i64,
                end.get() as i64,
            ),
            IndexCell::Container { event, start, end } => (
                ObjectKind::Tracepoint,
                event.get(),
                start.get() as i64,
                end.get() as i64,
            ),
        };
        RawIndexCell::new(kind, id, start, end)
    }

    /// Encodes the cell.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.write_all(self.to_raw().as_bytes())
    }

    /// Appends the encoded `cells` to `bytes`: for writers of many cells,
    /// which write `bytes` in large pieces (a write per cell costs a call
    /// and a copy of 21 bytes of unknown length each).
    pub fn encode_all_into(cells: &[IndexCell], bytes: &mut Vec<u8>) {
        bytes.reserve(cells.len() * CELL_LEN);
        for cell in cells {
            bytes.extend_from_slice(cell.to_raw().as_bytes());
        }
    }
}

impl RawIndexCell {
    /// A cell of `kind` with these fields as stored.
    #[inline]
    pub fn new(kind: ObjectKind, id: i32, start: i64, end: i64) -> Self {
        RawIndexCell {
            kind: kind as u8,
            id: I32::new(id),
            start: I64::new(start),
            end: I64::new(end),
        }
    }

    /// Decodes cell number `cell` (0 = the first after the header): its
    /// kind must be one an index lists, its offsets not negative.
    pub fn decode(&self, cell: usize) -> Result<IndexCell, IndexProblem> {
        let kind = ObjectKind::from_byte(self.kind).ok_or(IndexProblem::UnknownKind {
            cell,
            kind: self.kind,
        })?;
        let (id, start, end) = (self.id.get(), self.start.get(), self.end.get());
        let offset = |value: i64| {
            u64::try_from(value).map_err(|_| IndexProblem::OutOfBounds {
                cell,
                offset: value,
            })
        };
        Ok(match kind {
            ObjectKind::BlockStart => IndexCell::Block {
                thread: ThreadId::new(id),
                start: PhysicalOffset::new(offset(start)?),
                end: PhysicalOffset::new(offset(end)?),
            },
            ObjectKind::Tracepoint => IndexCell::Container {
                event: EventId::new(id),
                start: LogicalOffset::new(offset(start)?),
                end: LogicalOffset::new(offset(end)?),
            },
            kind if kind.is_reference() => IndexCell::Reference {
                kind,
                id,
                at: PhysicalOffset::new(offset(start)?),
                end,
            },
            kind => return Err(IndexProblem::UnexpectedKind { cell, kind }),
        })
    }
}

/// The cells of an index file, read in place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexCells<'a> {
    /// The cells, without the footer's `EOF` cell.
    pub(crate) cells: &'a [RawIndexCell],
    /// Whether the file ended with a complete footer (`EOF` cell and magic).
    pub(crate) has_footer: bool,
}

impl IndexCells<'_> {
    /// Decodes every cell; an error names the first bad one.
    pub fn decode_all(&self) -> Result<Vec<IndexCell>, IndexProblem> {
        self.cells
            .iter()
            .enumerate()
            .map(|(n, raw)| raw.decode(n))
            .collect()
    }
}

/// The index file of a data file: its path plus `.idx`
/// ([`LazyTraceReader::index_path`](crate::read::LazyTraceReader::index_path)).
pub(crate) fn index_path(data: &Path) -> PathBuf {
    let mut path = data.as_os_str().to_owned();
    path.push(".idx");
    PathBuf::from(path)
}

impl IndexCell {
    /// Reads the cells of an index file. A file without a whole footer (a
    /// crashed recorder's, or one cut inside its footer) gives every
    /// complete cell before the footer and `false`. A bad header or cell is
    /// an [`Error::BrokenIndex`](crate::Error::BrokenIndex) naming it.
    pub fn parse_file(bytes: &[u8]) -> crate::Result<(Vec<IndexCell>, bool)> {
        let parsed = cells_of_file(bytes)?;
        let cells = parsed
            .decode_all()
            .map_err(|problem| crate::Error::BrokenIndex {
                index: None,
                problem,
            })?;
        Ok((cells, parsed.has_footer))
    }

    /// Counts the cells of an index file without decoding them, and says
    /// whether the footer is whole: what [`parse_file`](Self::parse_file)
    /// gives, in place, for an index too large to hold decoded. A bad
    /// header is an [`Error::BrokenIndex`](crate::Error::BrokenIndex).
    pub fn count_file(bytes: &[u8]) -> crate::Result<(usize, bool)> {
        let parsed = cells_of_file(bytes)?;
        Ok((parsed.cells.len(), parsed.has_footer))
    }
}

/// The cells of index file `bytes` in place, an `EOF` cell left by a footer
/// cut short not among them.
fn cells_of_file(bytes: &[u8]) -> crate::Result<IndexCells<'_>> {
    let mut parsed = parse_index(bytes).map_err(|e| crate::Error::BrokenIndex {
        index: None,
        problem: IndexProblem::Header(e),
    })?;
    if let Some((last, before)) = parsed.cells.split_last()
        && last.kind == ObjectKind::Eof as u8
    {
        parsed.cells = before;
    }
    Ok(parsed)
}

/// The cells of index file `bytes`, read in place.
pub(crate) fn parse_index(bytes: &[u8]) -> Result<IndexCells<'_>, DecodeError> {
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
    out.write_all(RawIndexCell::new(ObjectKind::Eof, -1, start, end).as_bytes())?;
    out.write_all(&INDEX_MAGIC.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{EventId, LogicalOffset, PhysicalOffset, ThreadId};

    #[test]
    fn cells_encoded_together_equal_cells_encoded_one_by_one() {
        let cells = [
            IndexCell::Block {
                thread: ThreadId(3),
                start: PhysicalOffset(8),
                end: PhysicalOffset(1 << 40),
            },
            IndexCell::Container {
                event: EventId(-7),
                start: LogicalOffset(5),
                end: LogicalOffset(9),
            },
            IndexCell::Reference {
                kind: ObjectKind::ThreadName,
                id: 2,
                at: PhysicalOffset(77),
                end: -1,
            },
        ];
        let mut one_by_one = Vec::new();
        for cell in &cells {
            cell.encode(&mut one_by_one).unwrap();
        }
        let mut together = vec![0xAB];
        IndexCell::encode_all_into(&cells, &mut together);
        assert_eq!(together[0], 0xAB, "appended, not overwritten");
        assert_eq!(&together[1..], &one_by_one[..]);
        assert_eq!(one_by_one.len(), 3 * CELL_LEN);
    }
}
