//! The lookup sidecar: a trace's lookup structures persisted in a sidecar
//! directory (`NAME-HASH.ttlookup`, never beside the trace; the recorder's
//! `.idx` is never written), so that a later open costs O(1) in the trace's
//! size: map it, check it, and use its arrays as the container tables.
//! Layout: `docs/FORMAT.md`, "The lookup sidecar".
//!
//! **Trust.** A sidecar records the data and index files' lengths, times,
//! inodes, a checksum of the index's edges and one of the data's framing
//! (its edges, each block's header and the bytes up to its `BLOCK_END`).
//! Open checks, in order, and ignores the sidecar at the first failure
//! (the report says why): its shape (magic, version, lengths that follow
//! from the counts); its stamps; the blocks' arithmetic and their framing
//! in the data; the references' kinds and ids. When the data's ctime is
//! well before the stamps were taken ([`SAMPLED_BLOCKS`] then suffice) only
//! a sample of blocks is framed; otherwise every block is, and the first
//! read-write open that could vouch re-stamps the header in place, the one
//! in-place write to a sidecar. The container arrays' values are not
//! checked: they are only ever offsets inside a thread's stream, so
//! altered values give wrong or failed lookups as typed errors, never a
//! panic. An edit that keeps length, times and inode is not detected.
//!
//! **Deferred.** A first open that uses the index, with tables small enough
//! for the heap (`LazyOptions::defer_sidecar`), builds nothing up front and
//! leaves a note instead (a header alone, magic `TTOPENED`); the next
//! open that finds a matching note writes the sidecar. A rebuild writes it
//! at once.
//!
//! **Writing.** With `SidecarPolicy::ReadWrite` the sidecar goes to a
//! temporary name, synced and renamed over the old one, so a reader that
//! maps the old one keeps it. From a valid index each thread's arrays are
//! written straight from its cells, last container first, with no table on
//! the heap; cells that do not nest fall back to tables built the usual way,
//! and both ways write the same bytes. A read-only directory is left alone
//! and a failed write is reported, never an error.
//!
//! **Scratch.** Where no sidecar is written and the policy is not `Off`, the
//! same bytes go to an unlinked file in the temporary directory, mapped and
//! loaded like a sidecar (`IndexReport::scratch`): the tables stay page
//! cache, not heap.

mod layout;
mod load;
#[cfg(test)]
mod tests;
mod write;

pub(crate) use layout::{Files, LoadedSidecar, Stamp};
pub(crate) use load::load;
pub(crate) use write::{Summary, write, write_opened, write_scratch};

use std::path::{Path, PathBuf};

use crate::format::sidecar::SIDECAR_VERSION;

/// [`LazyTraceReader::sidecar_path`](crate::read::LazyTraceReader::sidecar_path).
pub(crate) fn sidecar_path(dir: &Path, data: &Path) -> PathBuf {
    use std::hash::Hasher;
    let canonical = std::fs::canonicalize(data).unwrap_or_else(|_| data.to_path_buf());
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(canonical.as_os_str().as_encoded_bytes());
    let name: String = data
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .take(64)
        .collect();
    dir.join(format!("{name}-{:016x}.ttlookup", hasher.finish()))
}

/// Removes the least recently written sidecars of `kept`'s directory
/// until those left add up to at most `budget` bytes; `kept` itself stays.
pub(crate) fn evict_oldest(kept: &Path, budget: u64) {
    let Some(dir) = kept.parent() else {
        return;
    };
    crate::storage::evict_oldest(dir, kept, budget, |path| {
        (path.extension()? == "ttlookup").then(Vec::new)
    });
}

/// Whether a reader uses and writes the lookup sidecar.
///
/// Where the lookups are, for memory: a sidecar (in the sidecar directory, or a
/// scratch one) is mapped, so the container tables are page cache the
/// kernel can drop; without one they are on the heap, 4 bytes per
/// container (about 38 MB per GB of trace), for the reader's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SidecarPolicy {
    /// Use a valid sidecar; write one after building the lookups otherwise
    /// (failures to write are reported, never an error). If it cannot be
    /// written (a read-only sidecar directory), the same bytes go to an
    /// unlinked scratch file in the temporary directory
    /// ([`std::env::temp_dir`]), mapped from there: the heap stays bounded
    /// ([`IndexReport::scratch`](crate::read::IndexReport::scratch)). With no sidecar directory, tables
    /// within [`LazyOptions::defer_sidecar`](crate::read::LazyOptions::defer_sidecar)
    /// are built on first use, on the heap; larger ones go to the scratch file.
    #[default]
    ReadWrite,
    /// Use a valid sidecar; never write one. Without a valid one, tables
    /// within [`LazyOptions::defer_sidecar`](crate::read::LazyOptions::defer_sidecar)
    /// are built on first use, on the heap, and larger ones go to an
    /// unlinked scratch file, as for [`ReadWrite`](Self::ReadWrite) in a
    /// read-only directory.
    ReadOnly,
    /// Neither read nor write one, nor a scratch file: the container
    /// tables stay on the heap (memory grows with the trace).
    Off,
}

/// Why a sidecar was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SidecarProblem {
    /// There is none (or it could not be opened).
    #[error("missing ({0})")]
    Missing(String),
    /// Its bytes do not follow the layout.
    #[error("malformed at byte {at}: {what}")]
    Malformed {
        /// Where in the sidecar.
        at: u64,
        /// What is wrong.
        what: String,
    },
    /// Written by another layout version.
    #[error("version {0}, expected {SIDECAR_VERSION}")]
    Version(u32),
    /// The data or index file changed since it was written.
    #[error("stale: {0}")]
    Stale(String),
    /// It describes a rebuild, and the caller requires the index file.
    #[error("made by a rebuild, and the index is required")]
    Rebuilt,
    /// In its place is the note of an earlier open of the same files
    /// ([`SidecarOutcome::Deferred`]): the trace is being opened again, so
    /// the sidecar is written now.
    #[error("none yet: an earlier open deferred it")]
    Deferred,
}

/// What happened to the sidecar when a trace was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SidecarOutcome {
    /// It was valid and the lookups came from it.
    Used,
    /// The lookups were built, and a new sidecar was written.
    Written,
    /// Writing one failed (a read-only directory, a full disk); the trace
    /// opened anyway.
    NotWritten(String),
    /// None was written: the policy is read-only, or a rebuild was asked
    /// for.
    Skipped,
    /// None was written yet: this is the first open of the trace (its
    /// index is used), so the lookups are built on demand, on the heap, as
    /// they are needed; a note of the files' stamps was left in the
    /// sidecar's place, and the next open of the same files writes the
    /// sidecar ([`LazyOptions::defer_sidecar`](crate::read::LazyOptions::defer_sidecar)).
    Deferred,
}
