//! The `sizes` benchmark's setup: the nodes its cases visit, the files
//! they open, and the readers they open them with.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tracetree::read::{LazyNode, LazyOptions, LazyTraceReader, SidecarOutcome, SidecarPolicy};

use super::EXPANSIONS;
use super::support::{self, trace_dir};

/// The wide call: the root's only child in the first thread.
pub fn wide_call(reader: &LazyTraceReader) -> LazyNode {
    let thread = reader.thread_ids()[0];
    let root = reader.root(thread).unwrap().unwrap();
    reader.children_range(root, 0, 1).unwrap()[0]
}

pub fn wide_call_bytes(reader: &LazyTraceReader) -> u64 {
    let content = reader.node(wide_call(reader)).unwrap().content().unwrap();
    content.end.get() - content.start.get()
}

/// `EXPANSIONS` containers chosen uniformly, the same for a trace every
/// run ([`support::random_containers`]).
pub fn random_containers(reader: &LazyTraceReader) -> Vec<LazyNode> {
    support::random_containers(reader, EXPANSIONS)
}

/// Waits until `path` last changed over 2 s ago, so that the files' stamps
/// can vouch for its data (see `read::sidecar`).
pub fn settle(path: &Path) {
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    let age = SystemTime::now()
        .duration_since(modified)
        .unwrap_or_default();
    if let Some(wait) = Duration::from_millis(2500).checked_sub(age) {
        std::thread::sleep(wait);
    }
}

/// Options for the cases on the index path: the lookup sidecar is neither
/// read nor written (`open_sidecar` measures it).
pub fn index_path_options() -> LazyOptions {
    LazyTraceReader::options().sidecar(SidecarPolicy::Off)
}

/// The mixed trace and its index linked into a directory of their own, so
/// that the sidecar a first open writes is not the one `open_sidecar`
/// reads; and that sidecar's path (removing it, a few ms, is part of the
/// timed runs).
pub fn first_open_link(mixed: &Path) -> (PathBuf, PathBuf) {
    let dir = trace_dir().join("first-open");
    std::fs::create_dir_all(&dir).unwrap();
    let linked = dir.join(mixed.file_name().unwrap());
    for (from, to) in [
        (mixed.to_path_buf(), linked.clone()),
        (
            LazyTraceReader::index_path(mixed),
            LazyTraceReader::index_path(&linked),
        ),
    ] {
        let _ = std::fs::remove_file(&to);
        std::os::unix::fs::symlink(from, to).unwrap();
    }
    let sidecar = tracetree::LazyTraceReader::sidecar_path(&support::sidecar_dir(), &linked);
    (linked, sidecar)
}

/// Opens `linked` with `options` after removing its `sidecar`, as a first
/// open, which must have the `expected` outcome.
pub fn first_open(
    options: LazyOptions,
    linked: &Path,
    sidecar: &Path,
    expected: SidecarOutcome,
) -> LazyTraceReader {
    let _ = std::fs::remove_file(sidecar);
    let reader = options.open(linked).unwrap();
    let outcome = reader.report().sidecar.as_ref();
    assert_eq!(outcome, Some(&expected));
    reader
}

/// Removes a written trace when dropped (outside the timed part).
pub struct Scratch(pub PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(LazyTraceReader::index_path(&self.0));
    }
}

pub fn boxed<T: 'static>(value: T) -> Box<dyn Any> {
    Box::new(value)
}
