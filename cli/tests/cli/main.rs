//! The `tracetree` command: its commands, `--help`, one-line errors, and
//! its handling of damaged and hostile files.

mod commands;
mod heldout;

/// Runs the `tracetree` binary: whether it succeeded, its stdout and stderr.
fn tracetree(args: &[&str]) -> (bool, String, String) {
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_tracetree"));
    tracetree_testkit::cli::run(binary, args)
}
