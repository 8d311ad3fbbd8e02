//! Diff traces for the tests of what shows a diff (search, export, the
//! viewer, the service): two made-up runs of one generated program, and
//! their diff.

use std::path::{Path, PathBuf};

use tracetree::diff::{DiffInput, DiffOptions, DiffSummary, diff_traces};
use tracetree::generate::{Shape, mutate};
use tracetree::read::LazyTraceReader;

/// Two runs and their diff, as files in one folder.
pub struct DiffPair {
    /// The left (old) run.
    pub left: PathBuf,
    /// The right (new) run.
    pub right: PathBuf,
    /// Their diff pack (`diff.packedtrace`).
    pub diff: PathBuf,
    /// What the diff counted.
    pub summary: DiffSummary,
}

/// Generates a mixed trace of about `size` bytes and `threads` threads in
/// `dir`, two mutated copies of it (each leaf edited or left out with
/// probability `rate`, different seeds: so the diff of the two has
/// removed, added and edited tracepoints) and their diff.
pub fn diff_pair(dir: &Path, size: u64, threads: usize, rate: f64) -> DiffPair {
    let base = crate::files::generated(dir, Shape::Mixed, threads, size, None);
    let base = LazyTraceReader::open(&base).unwrap();
    let run = |name: &str, seed: u64| {
        let path = dir.join(name);
        mutate(&base, rate, seed, &path).unwrap();
        path
    };
    let (left, right) = (run("left.trace", 1), run("right.trace", 2));
    let diff = dir.join("diff.packedtrace");
    let (l, r) = (
        LazyTraceReader::open(&left).unwrap(),
        LazyTraceReader::open(&right).unwrap(),
    );
    let input = |trace, name| DiffInput::new(trace, name);
    let summary = diff_traces(
        input(&l, "left"),
        input(&r, "right"),
        &DiffOptions::default(),
        &diff,
    )
    .unwrap();
    DiffPair {
        left,
        right,
        diff,
        summary,
    }
}
