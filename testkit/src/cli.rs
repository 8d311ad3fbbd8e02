//! Running the `tracetree` command as a user would.

use std::path::Path;
use std::process::Command;

/// Runs the `tracetree` binary at `binary` (the test's
/// `env!("CARGO_BIN_EXE_tracetree")`): whether it succeeded, its stdout
/// and stderr.
pub fn run(binary: &Path, args: &[&str]) -> (bool, String, String) {
    run_with_env(binary, &[], args)
}

/// [`run`] with these environment variables set. Unless they name a
/// `TRACETREE_CACHE_DIR`, the command's cache is a temporary folder of its
/// own, removed afterwards: a test never writes into the user's cache.
pub fn run_with_env(binary: &Path, env: &[(&str, &Path)], args: &[&str]) -> (bool, String, String) {
    let cache = tempfile::tempdir().expect("a temporary folder");
    let output = Command::new(binary)
        .env("TRACETREE_CACHE_DIR", cache.path())
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("the binary runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
