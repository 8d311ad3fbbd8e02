//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The folder of reference traces written by the reference recorder, or
/// `None` (with a message saying the tests using it are skipped) when absent.
pub fn reference_traces() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/reference-traces");
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

/// The path of a bundled test trace.
pub fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}
