//! Tests that cannot run here: the reference traces beside the repository
//! (`../shared`), a JDK, tmux, or a parser that is not ours (DuckDB,
//! Perfetto, speedscope) missing. Such a test fails with a one-line reason,
//! so that the test summary shows what did not run; with
//! `TRACETREE_ALLOW_SKIP=1` it passes instead and writes `SKIPPED TEST:
//! REASON` to the test run's standard error past the test harness's
//! capture, so the line shows beside the summary. A value other than `1`
//! lists, comma-separated, the words of the reasons that may skip
//! (`TRACETREE_ALLOW_SKIP="JDK 25"`). `.ci/run` installs everything and
//! allows only what its system has no package for.

use std::io::Write;

/// The environment variable that allows skipping (`1`: any test; else
/// the comma-separated words a reason must hold).
pub const ALLOW_SKIP: &str = "TRACETREE_ALLOW_SKIP";

/// Whether `TRACETREE_ALLOW_SKIP=1` is set.
pub fn allowed() -> bool {
    std::env::var_os(ALLOW_SKIP).is_some_and(|value| value == "1")
}

/// Whether a test that cannot run for `reason` may skip.
pub fn allowed_for(reason: &str) -> bool {
    let Some(value) = std::env::var(ALLOW_SKIP).ok() else {
        return false;
    };
    value == "1"
        || value
            .split(',')
            .map(str::trim)
            .any(|words| !words.is_empty() && reason.contains(words))
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
    if allowed_for(&reason) {
        // `eprintln!` would be captured (and hidden) by the test harness.
        let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
    } else {
        panic!("{test} cannot run: {reason} ({ALLOW_SKIP}=1 skips it instead)");
    }
}
