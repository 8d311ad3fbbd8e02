//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

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

/// Runs the `tracetree` binary: whether it succeeded, its stdout and stderr.
pub fn tracetree(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_tracetree"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
