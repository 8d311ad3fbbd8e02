//! The `tracetree` command: its commands, `--help`, one-line errors, and
//! its handling of damaged and hostile files.

mod commands;
mod diff;
mod edges;
mod heldout;
mod outputs;
mod pack;
mod serve;
mod view;
mod web;

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

/// Runs the `tracetree` binary with its cache in `cache` and `stdin`
/// written to its standard input (the command may refuse before reading
/// it: a broken pipe is fine).
fn tracetree_with_stdin(
    cache: &std::path::Path,
    args: &[&str],
    stdin: &[u8],
) -> std::process::Output {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracetree"))
        .env("TRACETREE_CACHE_DIR", cache)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

/// The names in `dir`, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
