//! Where the tests' input traces are: the bundled `testdata/` and the
//! reference recorder's traces beside the repository.

use std::path::{Path, PathBuf};

use tracetree::generate::{GenerateOptions, Shape, generate_file};

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

/// The repository's root: the parent of this test-support package.
pub fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The path of a bundled test trace.
pub fn testdata(name: &str) -> PathBuf {
    repository().join("testdata").join(name)
}

/// Generates `dir/SHAPE.trace` and its index: about `size` bytes of `shape`
/// recorded by `threads` threads, in blocks of `block_size` payload bytes
/// (`None`: the generator's default); returns the data file's path.
pub fn generated(
    dir: &Path,
    shape: Shape,
    threads: usize,
    size: u64,
    block_size: Option<usize>,
) -> PathBuf {
    let path = dir.join(format!("{shape}.trace"));
    let options = GenerateOptions {
        threads,
        block_size,
        ..GenerateOptions::new(size, shape)
    };
    generate_file(&path, &options, |_| {}).unwrap();
    path
}
