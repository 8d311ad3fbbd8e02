//! The process's resident memory, as the memory tests measure it, and the
//! lock that keeps those tests from running at once.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// Held by each memory test for its whole run: they measure the process's
/// resident memory, which tests running at once would share (the 1 GB
/// traversal's heap tables once showed as +38 MB in the heap test beside it).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Takes the lock that runs the memory tests one at a time (a failed test
/// before does not matter).
pub fn alone() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
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
/// holds [`alone`]: other tests' memory would share the process's mark.
pub fn open_peak(
    path: &Path,
    policy: tracetree::read::SidecarPolicy,
    window: u64,
) -> Option<(tracetree::read::LazyTraceReader, u64)> {
    let _ = std::fs::remove_file(crate::lazy::sidecar_of(path));
    let (reader, grown) = peak_growth(|| {
        crate::lazy::with_sidecar(path)
            .sidecar(policy)
            .resident_window(Some(window))
            .open(path)
            .unwrap()
    });
    Some((reader, grown?))
}

/// What `f` gives, and how far it raised the process's peak resident set
/// above the resident set before it (`VmHWM`, reset through
/// `/proc/self/clear_refs`); `None` for the growth, said on stderr, where
/// that cannot be measured (not Linux).
pub fn peak_growth<T>(f: impl FnOnce() -> T) -> (T, Option<u64>) {
    let before = std::fs::write("/proc/self/clear_refs", "5")
        .ok()
        .and_then(|()| proc_status("VmRSS:"));
    let value = f();
    let grown = before.and_then(|before| Some(proc_status("VmHWM:")?.saturating_sub(before)));
    if grown.is_none() {
        eprintln!(
            "/proc/self has no writable clear_refs or no VmHWM here: the peak is not measured"
        );
    }
    (value, grown)
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
