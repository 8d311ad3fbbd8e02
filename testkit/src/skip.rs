//! Tests that cannot run here: the reference traces beside the repository
//! (`../shared`), a JDK, tmux, or a parser that is not ours (DuckDB,
//! Perfetto, speedscope) missing. Such a test fails with a one-line reason,
//! so that the test summary shows what did not run; with
//! `TRACETREE_ALLOW_SKIP=1` it passes instead and writes `SKIPPED TEST:
//! REASON` to the test run's standard error past the test harness's
//! capture, so the line shows beside the summary. `.ci/run` installs
//! everything and never sets the variable.

use std::io::Write;

/// The environment variable that allows skipping (set to `1`).
pub const ALLOW_SKIP: &str = "TRACETREE_ALLOW_SKIP";

/// Whether `TRACETREE_ALLOW_SKIP=1` is set.
pub fn allowed() -> bool {
    std::env::var_os(ALLOW_SKIP).is_some_and(|value| value == "1")
}

/// The running test cannot run (or one part of it cannot): `reason` says
/// what is missing (on one line: its lines are joined). Fails the test with
/// that reason unless skipping is allowed; then says `SKIPPED` on standard
/// error and returns, for the caller to skip.
#[track_caller]
pub fn cannot_run(reason: &str) {
    let reason = reason
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let current = std::thread::current();
    let test = current.name().unwrap_or("a test");
    if allowed() {
        // `eprintln!` would be captured (and hidden) by the test harness.
        let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
    } else {
        panic!("{test} cannot run: {reason} ({ALLOW_SKIP}=1 skips it instead)");
    }
}
