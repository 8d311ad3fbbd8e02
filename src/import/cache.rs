//! Foreign traces opened directly: the first open imports the source into
//! the per-user cache directory, later opens reuse that import while the
//! source is unchanged.
//!
//! An import is keyed by the source's canonical path and its stamp (the
//! size and modification time of the file, or of every file in a
//! recording's folder), hashed with a fixed hash, so a changed source is
//! imported again and an unchanged one never is. Imports are written under
//! a temporary name and renamed, so two processes opening the same source
//! at once both end with a whole trace. Nothing is written beside the
//! source. Each import's summary (what was mapped, skipped and
//! inconsistent) is kept beside the cached trace, for `info`.

use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use rustc_hash::FxHasher;

use crate::error::{Error, Result};
use crate::import::{ImportSummary, SourceFormat, import_file};
use crate::read::index_path;
use crate::storage::cache_dir;
use crate::storage::packed::PackedTrace;
use crate::storage::write_file_atomically;

/// A v22 trace standing for an input.
#[derive(Debug, Clone)]
pub struct TracePath {
    /// The data file to open.
    pub path: PathBuf,
    /// The input's format when it was imported (now or earlier).
    pub imported_from: Option<SourceFormat>,
    /// What the import found, when it ran now.
    pub imported_now: Option<ImportSummary>,
}

impl TracePath {
    /// The v22 trace for `input`: `input` itself unless it is a foreign
    /// trace; then its import in the per-user cache
    /// ([`TraceCache::per_user`](crate::TraceCache::per_user)), made
    /// now when absent or stale. `progress` receives the bytes of source read by an
    /// import.
    pub fn for_input(input: &Path, progress: &dyn Fn(u64)) -> Result<TracePath> {
        if foreign_format(input)?.is_none() {
            return trace_in(input, Path::new(""), progress);
        }
        trace_in(input, &cache_dir()?, progress)
    }
}

/// [`TracePath::for_input`] with the cache in `dir`.
pub(crate) fn trace_in(input: &Path, dir: &Path, progress: &dyn Fn(u64)) -> Result<TracePath> {
    trace_in_as(input, dir, None, progress)
}

/// [`trace_in`] reading `input` as `from` says when it is given (the
/// command line's `--from`) instead of the format its layout shows.
/// A format other than the detected one is cached apart from it.
pub(crate) fn trace_in_as(
    input: &Path,
    dir: &Path,
    from: Option<SourceFormat>,
    progress: &dyn Fn(u64),
) -> Result<TracePath> {
    let found = foreign_format(input)?;
    let Some(format) = from.or(found) else {
        check_v22(input)?;
        return Ok(TracePath {
            path: input.to_path_buf(),
            imported_from: None,
            imported_now: None,
        });
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let stem = input
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("trace")
        .replace(
            |c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_',
            "_",
        );
    let mut key = source_key(input)?;
    if let Some(forced) = from.filter(|&forced| Some(forced) != found) {
        // `--from` may read a source as another format than its layout
        // shows: its import is another trace.
        let mut hash = FxHasher::default();
        hash.write_u64(key);
        hash.write(forced.name().as_bytes());
        key = hash.finish();
    }
    let path = dir.join(format!("{stem}-{key:016x}.trace"));
    let imported_now = if path.is_file() && index_path(&path).is_file() {
        // Dates the import's last use, for `evict_imports`.
        let _ = std::fs::File::options()
            .write(true)
            .open(summary_path(&path))
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        None
    } else {
        let summary = import_file(input, &path, Some(format), progress)?;
        let report = summary.report();
        write_file_atomically(&summary_path(&path), |out| {
            out.write_all(report.as_bytes())
                .map_err(|e| Error::io(&path, e))
        })?;
        evict_imports(dir, &path, IMPORT_BUDGET);
        Some(summary)
    };
    Ok(TracePath {
        path,
        imported_from: Some(format),
        imported_now,
    })
}

/// The bytes the imports kept in a cache directory may add up to: 16 GiB.
/// Past it, the least recently used are removed after each new import,
/// never the one just made. An import another process has open stays
/// readable by it (the files are unlinked, not truncated).
pub const IMPORT_BUDGET: u64 = 16 << 30;

/// Removes the least recently used imports of `dir` until they add up to
/// at most `budget` bytes; the import cached as `kept` stays. An import is
/// its summary file (dated at each use: the trace's own times key its
/// lookup sidecar, so they stay), its trace and the trace's index.
fn evict_imports(dir: &Path, kept: &Path, budget: u64) {
    let kept = summary_path(kept);
    crate::storage::evict_oldest(dir, &kept, budget, |path| {
        let name = path.to_str()?.strip_suffix(SUMMARY_SUFFIX)?;
        let trace = PathBuf::from(name);
        Some(vec![index_path(&trace), trace])
    });
}

/// Fails with [`Error::Unsupported`] when the file `input`, of no foreign
/// format, does not start with the v22 magic either (an empty file, a text
/// file): the readers would only say the bytes are wrong. A packed trace
/// read in place, a folder or a file that cannot be read passes: the
/// readers name those problems.
fn check_v22(input: &Path) -> Result<()> {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(input) else {
        return Ok(());
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) || PackedTrace::is_packed(input) {
        return Ok(());
    }
    let mut magic = Vec::with_capacity(8);
    file.take(8)
        .read_to_end(&mut magic)
        .map_err(|e| Error::io(input, e))?;
    if magic[..] == crate::format::DATA_MAGIC.to_be_bytes() {
        return Ok(());
    }
    Err(Error::Unsupported {
        path: Some(input.to_path_buf()),
        expected: "a trace",
        found: crate::error::not_a_trace(input),
    })
}

/// The format `input` must be imported from before a reader opens it:
/// `None` for a v22 trace, and for a packed trace whose data and index the
/// readers open in place (`PackedTrace::in_place`: stored, or deflated at
/// level 0); any other is unpacked.
fn foreign_format(input: &Path) -> Result<Option<SourceFormat>> {
    match SourceFormat::detect(input) {
        Some(SourceFormat::Packed) if PackedTrace::open(input)?.in_place() => Ok(None),
        format => Ok(format),
    }
}

/// Where the summary of the import cached as `trace` is kept.
pub fn summary_path(trace: &Path) -> PathBuf {
    let mut path = trace.as_os_str().to_owned();
    path.push(SUMMARY_SUFFIX);
    PathBuf::from(path)
}

/// What [`summary_path`] adds to a cached trace's name.
const SUMMARY_SUFFIX: &str = ".import-summary";

impl ImportSummary {
    /// The summary of the import cached as `trace` ([`report`](Self::report)'s
    /// lines, as the import that made it wrote them), when `trace` is a
    /// cached import that kept one.
    pub fn stored_report(trace: &Path) -> Option<String> {
        stored_summary(trace)
    }
}

/// [`ImportSummary::stored_report`].
pub(crate) fn stored_summary(trace: &Path) -> Option<String> {
    std::fs::read_to_string(summary_path(trace)).ok()
}

/// What made the import cached as `trace` incomplete or damaged, from its
/// stored summary ([`ImportSummary::problem`] of the import made earlier);
/// `None` when it was whole, or `trace` is no cached import.
pub(crate) fn stored_problem(trace: &Path) -> Option<String> {
    let stored = stored_summary(trace)?;
    let line = stored.lines().next()?.strip_prefix("imported: ")?;
    let problems: Vec<&str> = line
        .split(", ")
        .filter(|part| {
            let mut words = part.splitn(2, ' ');
            let n = words
                .next()
                .and_then(|n| n.replace(',', "").parse::<u64>().ok());
            let what = words.next().unwrap_or("");
            n.is_some_and(|n| n > 0)
                && (what.starts_with("unfinished call")
                    || what.starts_with("damaged tail")
                    || what.starts_with("skipped exit"))
        })
        .collect();
    (!problems.is_empty()).then(|| problems.join(", "))
}

/// The hash of the source's canonical path and stamp.
fn source_key(input: &Path) -> Result<u64> {
    let io = |e| Error::io(input, e);
    // A file without a name (a pipe or stdin copied into an unlinked
    // file, read through `/proc/self/fd/N`) has no canonical path: it is
    // keyed by the path it is read through.
    let canonical = std::fs::canonicalize(input)
        .ok()
        .filter(|path| path.exists())
        .unwrap_or_else(|| input.to_path_buf());
    let mut hash = FxHasher::default();
    hash.write(canonical.as_os_str().as_encoded_bytes());
    let mut files = Vec::new();
    if canonical.is_dir() {
        for entry in std::fs::read_dir(&canonical).map_err(io)? {
            files.push(entry.map_err(io)?.path());
        }
        files.sort();
    } else {
        files.push(canonical);
    }
    for file in files {
        let meta = std::fs::metadata(&file).map_err(|e| Error::io(&file, e))?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        hash.write(file.as_os_str().as_encoded_bytes());
        hash.write_u64(meta.len());
        hash.write_u128(modified);
    }
    Ok(hash.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_is_imported_once_and_again_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let recording = dir.path().join("rec");
        std::fs::create_dir(&recording).unwrap();
        std::fs::write(recording.join("ids.properties"), "demo.A#run()V=0\n").unwrap();
        // run() { run() }, twice.
        std::fs::write(recording.join("thread-1.flow"), [0x80, 0x80, 0x01, 0x80]).unwrap();
        let cache = dir.path().join("cache");
        let trace = trace_in(&recording, &cache, &|_| {}).unwrap();
        assert_eq!(trace.imported_from, Some(SourceFormat::Flow));
        assert_eq!(trace.imported_now.as_ref().unwrap().calls, 3);
        assert!(trace.path.starts_with(&cache));
        let stored = stored_summary(&trace.path).unwrap();
        assert!(
            stored.starts_with("imported: 1 thread, 3 calls"),
            "{stored}"
        );
        assert!(
            stored.contains("\ninconsistent: 0 depth disagreements"),
            "{stored}"
        );
        let again = trace_in(&recording, &cache, &|_| {}).unwrap();
        assert_eq!(again.path, trace.path);
        assert!(again.imported_now.is_none());
        std::fs::write(recording.join("thread-1.flow"), [0x80, 0x80]).unwrap();
        let changed = trace_in(&recording, &cache, &|_| {}).unwrap();
        assert_ne!(changed.path, trace.path);
        assert_eq!(changed.imported_now.as_ref().unwrap().unfinished_calls, 2);
        // Past the budget, the least recently used import goes, never
        // the one just made; the imports are a trace, index and summary.
        let files = |trace: &Path| [trace.to_path_buf(), index_path(trace), summary_path(trace)];
        assert!(files(&trace.path).iter().all(|f| f.is_file()));
        evict_imports(&cache, &changed.path, 0);
        assert!(files(&trace.path).iter().all(|f| !f.exists()));
        assert!(files(&changed.path).iter().all(|f| f.is_file()));
        // Nothing was written beside the source.
        let mut beside: Vec<_> = std::fs::read_dir(&recording)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        beside.sort();
        assert_eq!(beside, ["ids.properties", "thread-1.flow"]);
    }
}
