//! The v22 layout's numbers, as `FORMAT-NOTES.md` gives them. Tests that
//! take files apart check the library's bytes against these, not against
//! the library's own constants, so a changed constant cannot pass its own
//! check.

/// The magic number a data file starts with.
pub const DATA_MAGIC: u64 = 0x706E_5471_24EE_5F70;
/// The magic number an index file starts and ends with: the data magic,
/// bitwise NOT.
pub const INDEX_MAGIC: u64 = !DATA_MAGIC;
/// The format version after either magic.
pub const FORMAT_VERSION: i64 = 22;
/// Bytes of a file header: magic and version, big-endian.
pub const FILE_HEADER_LEN: u64 = 16;
/// Bytes of a `BLOCK_START` object: its kind and thread id.
pub const BLOCK_HEADER_LEN: u64 = 5;
/// Bytes of one index cell.
pub const CELL_LEN: usize = 21;
/// Bytes after an index's last cell: the `EOF` cell and the magic.
pub const INDEX_FOOTER_LEN: usize = CELL_LEN + 8;
/// The kind byte of `BLOCK_START`, which also marks an index's block cells.
pub const BLOCK_START: u8 = 10;

/// The blocks an index file lists, in file order: the offsets of each
/// block's `BLOCK_START` and `BLOCK_END` bytes in the data file (a block
/// cell is the kind, the thread id, then both offsets, big-endian).
pub fn index_blocks(index: &[u8]) -> Vec<(u64, u64)> {
    let offset = |bytes: &[u8]| i64::from_be_bytes(bytes.try_into().unwrap()) as u64;
    let mut blocks: Vec<(u64, u64)> = index[FILE_HEADER_LEN as usize..]
        .chunks_exact(CELL_LEN)
        .filter(|cell| cell[0] == BLOCK_START)
        .map(|cell| (offset(&cell[5..13]), offset(&cell[13..21])))
        .collect();
    blocks.sort_unstable();
    blocks
}

/// A file header: `magic`, then the format version, big-endian.
pub fn file_header(magic: u64) -> [u8; 16] {
    let mut header = [0u8; 16];
    header[..8].copy_from_slice(&magic.to_be_bytes());
    header[8..].copy_from_slice(&FORMAT_VERSION.to_be_bytes());
    header
}
