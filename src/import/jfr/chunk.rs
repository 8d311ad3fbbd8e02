//! Chunk headers, and the chunks of a file found from them.
//!
//! A chunk starts with a 68-byte header: `FLR\0`, major and minor version
//! (`u16` each), then big-endian `u64`s: the chunk's size, the offset of
//! its last checkpoint, the offset of its metadata, its start (ns since the
//! epoch), its duration (ns), its start in ticks and the ticks per second;
//! byte 64 is the file state (0 once the chunk is finished; the JVM sets it
//! while it rewrites the header) and byte 67 the flags (bit 0 compressed
//! integers, bit 1 final chunk, bit 2 compressed ticks). Chunks follow each
//! other; the next starts where the size says this one ends.
//!
//! [`find_chunks`] walks the headers over the whole file. A header that is
//! cut, lacks the magic, names an unknown version, is still marked as being
//! written, or gives a size or offset outside the bytes left ends the walk
//! (or, when its size still fits, skips that chunk), and is reported as
//! damage; every whole chunk before it is kept.

use std::fmt;

/// The size of a chunk header.
pub const HEADER_SIZE: usize = 68;
/// The magic every chunk starts with.
pub const MAGIC: &[u8; 4] = b"FLR\0";
/// Flag bit: integers are packed.
const FLAG_COMPRESSED_INTS: u8 = 1;
/// Flag bit: the last chunk of a recording.
const FLAG_FINAL: u8 = 2;

/// A chunk's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkHeader {
    /// Where the chunk starts in the file.
    pub offset: u64,
    /// Major format version (2 in current JDKs).
    pub major: u16,
    /// Minor format version.
    pub minor: u16,
    /// The chunk's size in bytes, header included.
    pub size: u64,
    /// The offset of the last checkpoint, from the chunk's start.
    pub constant_pool: u64,
    /// The offset of the metadata, from the chunk's start.
    pub metadata: u64,
    /// The chunk's start, in ns since the epoch.
    pub start_nanos: i64,
    /// The chunk's duration in ns.
    pub duration_nanos: i64,
    /// The chunk's start in ticks.
    pub start_ticks: i64,
    /// Ticks per second.
    pub ticks_per_second: i64,
    /// The file state byte (0: finished).
    pub state: u8,
    /// The flags byte.
    pub flags: u8,
}

impl ChunkHeader {
    /// Parses the header at the start of `bytes` (which starts at file
    /// offset `offset`); `None` when fewer than 68 bytes are left.
    pub fn parse(bytes: &[u8], offset: u64) -> Option<ChunkHeader> {
        let b = bytes.get(..HEADER_SIZE)?;
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let u64_at = |i: usize| {
            let mut a = [0; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_be_bytes(a)
        };
        Some(ChunkHeader {
            offset,
            major: u16_at(4),
            minor: u16_at(6),
            size: u64_at(8),
            constant_pool: u64_at(16),
            metadata: u64_at(24),
            start_nanos: u64_at(32) as i64,
            duration_nanos: u64_at(40) as i64,
            start_ticks: u64_at(48) as i64,
            ticks_per_second: u64_at(56) as i64,
            state: b[64],
            flags: b[67],
        })
    }

    /// Whether integers are packed.
    pub fn compressed_ints(&self) -> bool {
        self.flags & FLAG_COMPRESSED_INTS != 0
    }

    /// The feature flag bits (byte 67) other than the two the JDK's writer
    /// and reader know (compressed integers, final chunk); 0 for every
    /// recording a JDK writes.
    pub fn unknown_flags(&self) -> u8 {
        self.flags & !(FLAG_COMPRESSED_INTS | FLAG_FINAL)
    }

    /// `ticks` as ns since the epoch, as the JDK converts them (the
    /// divisor is whole ticks per ns, at least 1).
    pub fn timestamp_nanos(&self, ticks: i64) -> i64 {
        let divisor = self.divisor();
        self.start_nanos
            .wrapping_add((ticks.wrapping_sub(self.start_ticks) as f64 / divisor) as i64)
    }

    /// A span of `ticks` in ns, as the JDK converts it.
    pub fn span_nanos(&self, ticks: i64) -> i64 {
        (ticks as f64 / self.divisor()) as i64
    }

    fn divisor(&self) -> f64 {
        ((self.ticks_per_second / 1_000_000_000) as f64).max(1.0)
    }
}

/// Why the walk over chunk headers stopped or skipped a chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkDamage {
    /// Bytes after the last chunk too few for a header.
    CutHeader {
        /// Where they start.
        offset: u64,
        /// How many there are.
        len: u64,
    },
    /// No `FLR\0` where a chunk should start.
    BadMagic {
        /// Where.
        offset: u64,
    },
    /// A major version this reader does not know.
    Version {
        /// Where the chunk starts.
        offset: u64,
        /// The version.
        major: u16,
        /// The minor version.
        minor: u16,
    },
    /// The header is still marked as being written (a crashed JVM's).
    InProgress {
        /// Where the chunk starts.
        offset: u64,
        /// The state byte.
        state: u8,
    },
    /// The size runs past the end of the file (a cut recording).
    Cut {
        /// Where the chunk starts.
        offset: u64,
        /// The size its header gives.
        size: u64,
        /// The bytes left from its start.
        left: u64,
    },
    /// The size or an offset of the header is impossible.
    BadHeader {
        /// Where the chunk starts.
        offset: u64,
        /// What is wrong.
        what: String,
    },
}

impl fmt::Display for ChunkDamage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChunkDamage::CutHeader { offset, len } => write!(
                f,
                "{len} bytes at offset {offset} are too few for a chunk header; ignored"
            ),
            ChunkDamage::BadMagic { offset } => {
                write!(
                    f,
                    "no chunk magic FLR\\0 at offset {offset}; the rest is ignored"
                )
            }
            ChunkDamage::Version {
                offset,
                major,
                minor,
            } => write!(
                f,
                "chunk at offset {offset} has unknown version {major}.{minor}; the rest is ignored"
            ),
            ChunkDamage::InProgress { offset, state } => write!(
                f,
                "chunk at offset {offset} is still marked as being written (state {state}); skipped"
            ),
            ChunkDamage::Cut { offset, size, left } => write!(
                f,
                "chunk at offset {offset} of {size} bytes is cut after {left} bytes; skipped"
            ),
            ChunkDamage::BadHeader { offset, what } => {
                write!(f, "chunk at offset {offset}: {what}; the rest is ignored")
            }
        }
    }
}

/// The whole chunks of a file and what stopped the walk over them.
#[derive(Debug, Clone, Default)]
pub struct ChunkScan {
    /// Whole, finished chunks, in file order.
    pub chunks: Vec<ChunkHeader>,
    /// Chunks skipped or the reason the walk stopped.
    pub damage: Vec<ChunkDamage>,
}

/// Walks the chunk headers of `bytes` (a whole file).
pub fn find_chunks(bytes: &[u8]) -> ChunkScan {
    let mut scan = ChunkScan::default();
    let mut at = 0usize;
    while at < bytes.len() {
        let offset = at as u64;
        let left = (bytes.len() - at) as u64;
        let rest = &bytes[at..];
        if rest.len() >= 4 && &rest[..4] != MAGIC {
            scan.damage.push(ChunkDamage::BadMagic { offset });
            break;
        }
        let Some(header) = ChunkHeader::parse(rest, offset) else {
            scan.damage
                .push(ChunkDamage::CutHeader { offset, len: left });
            break;
        };
        if header.major != 1 && header.major != 2 {
            scan.damage.push(ChunkDamage::Version {
                offset,
                major: header.major,
                minor: header.minor,
            });
            break;
        }
        let size = header.size;
        if size <= HEADER_SIZE as u64 {
            let what = format!("size {size} leaves no room for data");
            scan.damage.push(ChunkDamage::BadHeader { offset, what });
            break;
        }
        if size > left {
            scan.damage.push(ChunkDamage::Cut { offset, size, left });
            break;
        }
        at += size as usize;
        if header.state != 0 {
            scan.damage.push(ChunkDamage::InProgress {
                offset,
                state: header.state,
            });
            continue;
        }
        let inside = |position: u64| position >= HEADER_SIZE as u64 && position < size;
        if !inside(header.metadata) || !inside(header.constant_pool) {
            let what = format!(
                "metadata offset {} or checkpoint offset {} lies outside the chunk's {size} bytes",
                header.metadata, header.constant_pool
            );
            scan.damage.push(ChunkDamage::BadHeader { offset, what });
            continue;
        }
        scan.chunks.push(header);
    }
    scan
}
