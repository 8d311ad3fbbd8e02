//! The `tracetree` command: its commands, `--help`, one-line errors, and
//! its handling of damaged and hostile files.

mod commands;
mod edges;
mod heldout;
mod outputs;
mod pack;
mod view;

/// Runs the `tracetree` binary: whether it succeeded, its stdout and stderr.
fn tracetree(args: &[&str]) -> (bool, String, String) {
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_tracetree"));
    tracetree_testkit::cli::run(binary, args)
}

/// Runs the `tracetree` binary with its cache in `cache`.
fn tracetree_cached(cache: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_tracetree"));
    tracetree_testkit::cli::run_with_env(binary, &[("TRACETREE_CACHE_DIR", cache)], args)
}
