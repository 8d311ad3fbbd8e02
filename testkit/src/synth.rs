//! Generated traces on disk, for the tests that need large files.

use std::path::{Path, PathBuf};

use tracetree::generate::raw::{Crash, SynthOptions, cached, write_files};

/// A generated two-thread trace of about `bytes` with 1 MiB blocks, made
/// as `NAME.trace` in `dir` unless it is there already.
pub fn synth_trace(dir: &Path, name: &str, bytes: u64, seed: u64) -> PathBuf {
    synth_trace_ending(dir, name, bytes, seed, None)
}

/// [`synth_trace`], ending as `crash` says.
pub fn synth_trace_ending(
    dir: &Path,
    name: &str,
    bytes: u64,
    seed: u64,
    crash: Option<Crash>,
) -> PathBuf {
    let options = SynthOptions {
        threads: 2,
        bytes,
        block_bytes: 1 << 20,
        seed,
        block_cell_last: false,
        crash,
    };
    cached(dir, name, &options).unwrap()
}

/// A generated three-thread trace of about `bytes` in about 32 blocks,
/// written as `synth.trace` in `dir` (seed 11), ending as `crash` says.
pub fn blocks_trace(dir: &Path, crash: Option<Crash>, bytes: u64) -> PathBuf {
    let path = dir.join("synth.trace");
    let options = SynthOptions {
        threads: 3,
        bytes,
        block_bytes: (bytes / 32).max(1024) as usize,
        seed: 11,
        block_cell_last: false,
        crash,
    };
    write_files(&options, &path).unwrap();
    path
}
