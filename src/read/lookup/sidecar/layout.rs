//! What a sidecar records of its files: the checksum of the data's
//! framing and the stamps that vouch for a data file (the records
//! themselves: `format::sidecar`).

use std::path::Path;
use std::time::UNIX_EPOCH;

use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

use super::*;
use crate::format::BLOCK_HEADER_LEN;
use crate::format::ContextBuilder;
pub(crate) use crate::format::sidecar::*;
use crate::read::eager::LoadReport;
use crate::read::lookup::block_table::BlockInfo;
use crate::read::lookup::problem::IndexStatus;
use crate::read::lookup::table::Lookup;
use crate::storage::TraceBytes;

/// Adds one block's framing to `sum`: its header, and the bytes up to and
/// including its `BLOCK_END` (both inside `data`: checked by the caller).
pub(super) fn add_block(sum: &mut Checksum, data: &[u8], block: &BlockInfo) {
    let (start, end) = (block.start.0 as usize, block.end.0 as usize);
    sum.bytes(&data[start..start + BLOCK_HEADER_LEN as usize]);
    let from = block
        .end
        .0
        .saturating_sub(BLOCK_TAIL)
        .max(block.payload_start().0) as usize;
    sum.bytes(&data[from..=end]);
}

/// What the file system says of a file: enough to notice any change made
/// through it. The status-change time (`ctime`) is set by the kernel on
/// every write and every metadata change — including a forged `mtime` — and
/// cannot be set back by a program.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) len: u64,
    /// Modification time, ns since the epoch (0: unknown).
    pub(crate) mtime: u64,
    /// Status-change time, ns since the epoch (0: unknown).
    pub(crate) ctime: u64,
    /// Inode number (0: unknown).
    pub(crate) inode: u64,
}

impl Stamp {
    /// The stamp of the file at `path` (zero when it cannot be read).
    pub(crate) fn of(path: &Path) -> Stamp {
        std::fs::metadata(path)
            .map(|meta| {
                #[cfg(unix)]
                let (ctime, inode) = {
                    use std::os::unix::fs::MetadataExt;
                    let ctime = (meta.ctime().max(0) as u64)
                        .saturating_mul(1_000_000_000)
                        .saturating_add(meta.ctime_nsec().max(0) as u64);
                    (ctime, meta.ino())
                };
                #[cfg(not(unix))]
                let (ctime, inode) = (0, 0);
                Stamp {
                    len: meta.len(),
                    mtime: meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_nanos() as u64),
                    ctime,
                    inode,
                }
            })
            .unwrap_or_default()
    }

    /// The time now, as stamps count it.
    pub(crate) fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    }
}

/// How close to the moment the stamps were taken a file's `ctime` may be
/// for the stamps alone to be trusted: a change in the same tick of the
/// file system's clock would leave the `ctime` as it was (ext4 and tmpfs
/// tick every few ms; some file systems every 1–2 s).
pub(super) const RACY_NS: u64 = 2_000_000_000;

/// Blocks whose framing is read at an open the stamps vouch for.
pub const SAMPLED_BLOCKS: usize = 32;

/// The data and index files a sidecar belongs to.
pub(crate) struct Files<'a> {
    pub(crate) data: &'a TraceBytes,
    /// When the stamps were taken (ns since the epoch), before mapping.
    pub(crate) stamped_at: u64,
    pub(crate) data_stamp: Stamp,
    /// The index file, if one was mapped, and its stamp.
    pub(crate) index: Option<(&'a TraceBytes, Stamp)>,
}

impl Files<'_> {
    /// The index's length, mtime, edge checksum, ctime and inode (zeros
    /// without an index).
    pub(super) fn index_fields(&self) -> [u64; 5] {
        match self.index {
            Some((bytes, stamp)) => [
                bytes.len(),
                stamp.mtime,
                edges(bytes.as_slice()).0,
                stamp.ctime,
                stamp.inode,
            ],
            None => [0; 5],
        }
    }
}

/// Lookup structures read from a sidecar.
pub(crate) struct LoadedSidecar {
    pub(crate) lookup: Lookup,
    pub(crate) context: ContextBuilder,
    pub(crate) references: usize,
    pub(crate) data: LoadReport,
    pub(crate) repaired: usize,
    pub(crate) status: IndexStatus,
    /// Blocks whose framing was read in the data file.
    pub(crate) framing_checked: usize,
}

pub(super) fn malformed(at: usize, what: impl Into<String>) -> SidecarProblem {
    SidecarProblem::Malformed {
        at: at as u64,
        what: what.into(),
    }
}

/// Reads `count` records of `T` at `*at`, moving `*at` past them (8-aligned).
pub(super) fn records<'a, T: FromBytes + KnownLayout + Immutable + Unaligned>(
    bytes: &'a [u8],
    at: &mut usize,
    count: u64,
    what: &str,
) -> Result<&'a [T], SidecarProblem> {
    let len = usize::try_from(count)
        .ok()
        .and_then(|count| count.checked_mul(std::mem::size_of::<T>()))
        .filter(|&len| len <= bytes.len().saturating_sub(*at))
        .ok_or_else(|| malformed(*at, format!("{count} {what} do not fit")))?;
    let slice = <[T]>::ref_from_bytes(&bytes[*at..*at + len])
        .map_err(|_| malformed(*at, format!("{what} are not whole records")))?;
    *at = pad8(*at + len);
    Ok(slice)
}
