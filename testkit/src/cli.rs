//! Running the `tracetree` command as a user would.

use std::path::Path;
use std::process::Command;

/// Runs the `tracetree` binary at `binary` (the test's
/// `env!("CARGO_BIN_EXE_tracetree")`): whether it succeeded, its stdout
/// and stderr.
pub fn run(binary: &Path, args: &[&str]) -> (bool, String, String) {
    run_with_env(binary, &[], args)
}

/// [`run`] with these environment variables set.
pub fn run_with_env(binary: &Path, env: &[(&str, &Path)], args: &[&str]) -> (bool, String, String) {
    let output = Command::new(binary)
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
