//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The reference traces that the recorder finished (each with an index
/// and printed output), by name (`NAME.trace` in [`reference_traces`]).
/// `crashed` is the one it did not finish.
pub const COMPLETE_REFERENCE_TRACES: [&str; 5] = [
    "all-types-stream",
    "all-types-dump",
    "small-stream",
    "small-dump",
    "medium-stream",
];

/// The folder of reference traces written by the reference recorder, or
/// `None` (with a message saying the tests using it are skipped) when absent.
pub fn reference_traces() -> Option<PathBuf> {
    let dir = repository().join("../shared/reference-traces");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: reference traces folder {} not found",
            dir.display()
        );
        None
    }
}

/// The repository's root: the library's package, or the parent of the
/// command-line tool's.
pub fn repository() -> PathBuf {
    let package = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if package.join("testdata").is_dir() {
        package
    } else {
        package.join("..")
    }
}

/// The path of a bundled test trace.
pub fn testdata(name: &str) -> PathBuf {
    repository().join("testdata").join(name)
}

/// Panics with the offset of the first differing byte, and the bytes around it.
pub fn assert_same_bytes(what: &str, written: &[u8], expected: &[u8]) {
    if written == expected {
        return;
    }
    let first = written
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(written.len().min(expected.len()));
    let around =
        |bytes: &[u8]| bytes[first.saturating_sub(8)..(first + 24).min(bytes.len())].to_vec();
    panic!(
        "{what}: {} bytes written, {} expected; first difference at offset {first}\n written: {:02x?}\nexpected: {:02x?}",
        written.len(),
        expected.len(),
        around(written),
        around(expected),
    );
}

/// A field of /proc/self/status in bytes (Linux), or `None`.
pub fn proc_status(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Opens `path` for the first time (its sidecar removed) with `policy` and
/// a resident `window`, and returns the reader with how much the process's
/// peak resident set (`VmHWM`, reset through `/proc/self/clear_refs`
/// first) grew above the resident set before the open; `None` (said on
/// stderr) where the kernel offers neither (not Linux). A test using it
/// should be alone in its file: other tests' memory would share the
/// process's mark.
pub fn open_peak(
    path: &Path,
    policy: tracetree::read::SidecarPolicy,
    window: u64,
) -> Option<(tracetree::read::LazyTraceReader, u64)> {
    let _ = std::fs::remove_file(tracetree::read::sidecar_path(path));
    let before = std::fs::write("/proc/self/clear_refs", "5")
        .ok()
        .and_then(|()| proc_status("VmRSS:"));
    let reader = tracetree::read::LazyTraceReader::options()
        .sidecar(policy)
        .resident_window(Some(window))
        .open(path)
        .unwrap();
    let grown = before.and_then(|before| Some(proc_status("VmHWM:")?.saturating_sub(before)));
    if grown.is_none() {
        eprintln!(
            "/proc/self has no writable clear_refs or no VmHWM here: the peak is not measured"
        );
    }
    Some((reader, grown?))
}

/// The process's resident anonymous memory (heap) in bytes, or `None`.
pub fn rss_anon() -> Option<u64> {
    proc_status("RssAnon:")
}

/// The process's resident file-backed pages (mapped trace, index and
/// sidecar pages, and the program's own) in bytes, or `None`.
pub fn rss_file() -> Option<u64> {
    proc_status("RssFile:")
}

/// A generated two-thread trace of about `bytes` with 1 MiB blocks, made
/// once as `NAME.trace` under `target/test-traces`.
pub fn synth_trace(name: &str, bytes: u64, seed: u64) -> PathBuf {
    synth_trace_ending(name, bytes, seed, None)
}

/// [`synth_trace`], ending as `crash` says.
pub fn synth_trace_ending(
    name: &str,
    bytes: u64,
    seed: u64,
    crash: Option<tracetree::generate::raw::Crash>,
) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-traces");
    let options = tracetree::generate::raw::SynthOptions {
        threads: 2,
        bytes,
        block_bytes: 1 << 20,
        seed,
        block_cell_last: false,
        crash,
    };
    tracetree::generate::raw::cached(&dir, name, &options).unwrap()
}
