//! What the benchmarks share: the trace size asked for, the trace itself
//! (generated once into `target/bench-traces/`), and the raw-scan baseline.
#![allow(dead_code)]

use std::path::PathBuf;

use tracetree::read::synth::{self, SynthOptions};

/// The size of the benchmark trace: `TRACETREE_BENCH_SIZE` (`100MB`, `1GB`,
/// `10GB`), 64 MiB by default.
pub fn bench_size() -> u64 {
    let text = std::env::var("TRACETREE_BENCH_SIZE").unwrap_or_else(|_| "64MB".into());
    tracetree::generate::parse_size(&text).expect("TRACETREE_BENCH_SIZE like 1GB")
}

/// The benchmark trace of about `bytes` (2 threads, 1 MiB blocks; each
/// thread's root holds one wide call), generated on first use.
pub fn trace(bytes: u64) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-traces");
    let options = SynthOptions {
        threads: 2,
        bytes,
        block_bytes: 1 << 20,
        seed: 42,
        ..SynthOptions::default()
    };
    synth::cached(&dir, &format!("lazy-{bytes}"), &options).unwrap()
}

/// The baseline: every byte of the mapping read once, as u64 words.
pub fn raw_scan(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(8)
        .map(|word| u64::from_le_bytes(word.try_into().unwrap()))
        .fold(0, u64::wrapping_add)
}
