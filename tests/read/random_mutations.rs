//! Random multi-byte mutations of whole traces — bytes overwritten with
//! random or extreme values, ranges deleted, duplicated or copied over,
//! files cut — in the data file, the index file or both: opening them
//! (lazily with the index, lazily rebuilding, eagerly) and reading
//! everything (expanding every node, walking every thread, printing,
//! dumping) gives `Ok` or a typed error, never a panic.
//!
//! The single-byte and truncation sweeps (`hostile_input`, `lazy_hostile`)
//! try every position once; this tries what they cannot: several changes
//! at once, and values chosen to be lengths and counts. Each case's seed
//! is printed if it panics. A run tries `TRACETREE_MUTATIONS` cases (400
//! by default); a longer campaign:
//!
//! ```sh
//! TRACETREE_MUTATIONS=200000 cargo test --release --test read random_mutations -- --nocapture
//! ```

use std::panic::{AssertUnwindSafe, catch_unwind};

use tracetree::LazyTraceReader;
use tracetree::TraceBytes;
use tracetree::generate::raw::{self, Crash, SynthOptions};
use tracetree::print::{PrintOptions, write_jsonl};
use tracetree::read::{EagerTrace, WalkDetail};

use tracetree_testkit::lazy::{Rng, expand_all, open_in_memory, reference_traces, testdata_traces};

/// The traces mutated: small generated ones of several shapes (crashed
/// ones among them), the bundled ones and, when present, the reference
/// recorder's.
fn corpus() -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let mut traces = Vec::new();
    for (threads, block_bytes, crash, seed) in [
        (2, 512, None, 1),
        (3, 300, None, 2),
        (1, 4 << 10, Some(false), 3),
        (2, 700, Some(true), 4),
    ] {
        let (data, index) = raw::generate(&SynthOptions {
            threads,
            bytes: 8 << 10,
            block_bytes,
            seed,
            block_cell_last: seed % 2 == 0,
            crash: crash.map(|half_written_block| Crash { half_written_block }),
        });
        traces.push((format!("generated {seed}"), data, index));
    }
    let mut files = testdata_traces();
    files.extend(reference_traces());
    for path in files {
        let (Ok(data), Ok(index)) = (
            std::fs::read(&path),
            std::fs::read(LazyTraceReader::index_path(&path)),
        ) else {
            continue;
        };
        // Large files make slow cases; the small ones cover the format.
        if data.len() <= 256 << 10 {
            traces.push((path.display().to_string(), data, index));
        }
    }
    traces
}

/// Applies one random change to `bytes`.
fn mutate(bytes: &mut Vec<u8>, rng: &mut Rng) {
    let len = bytes.len();
    if len == 0 {
        bytes.push(rng.below(256) as u8);
        return;
    }
    let at = rng.below(len);
    match rng.below(6) {
        // A few bytes at random.
        0 => {
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(len);
                bytes[at] = rng.below(256) as u8;
            }
        }
        // A value that reads as a length or count, 4 or 8 bytes wide.
        1 => {
            let extremes: [&[u8]; 6] = [
                &[0xFF; 8],
                &[0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
                &[0x80, 0, 0, 0, 0, 0, 0, 0],
                &[0; 8],
                &[0, 0, 0, 0, 0x7F, 0xFF, 0xFF, 0xFF],
                &[0, 0, 0, 1, 0, 0, 0, 0],
            ];
            let value = extremes[rng.below(extremes.len())];
            let width = [4, 8][rng.below(2)];
            let value = &value[8 - width..];
            let end = (at + width).min(len);
            bytes[at..end].copy_from_slice(&value[..end - at]);
        }
        // Cut.
        2 => bytes.truncate(at),
        // A range deleted.
        3 => {
            let end = (at + 1 + rng.below(64)).min(len);
            bytes.drain(at..end);
        }
        // A range duplicated in place.
        4 => {
            let end = (at + 1 + rng.below(64)).min(len);
            let copy = bytes[at..end].to_vec();
            bytes.splice(at..at, copy);
        }
        // A range copied over another (a cell or an object elsewhere).
        _ => {
            let from = rng.below(len);
            let n = (1 + rng.below(48)).min(len - from).min(len - at);
            let copy = bytes[from..from + n].to_vec();
            bytes[at..at + n].copy_from_slice(&copy);
        }
    }
}

/// Reads everything of the mutated trace every way; errors are fine as
/// long as they say something.
fn read_every_way(data: &[u8], index: &[u8], rebuild: bool) {
    let said = |error: tracetree::Error| assert!(!error.to_string().is_empty());
    let index = (!rebuild).then_some(index);
    for cache_bytes in [1 << 20, 4 << 10] {
        let Ok(reader) = open_in_memory(data, index, cache_bytes).map_err(said) else {
            continue;
        };
        let _ = expand_all(&reader).map_err(said);
        for thread in reader.thread_ids() {
            let _ = reader
                .walk_thread(thread, WalkDetail::Full, |_| Ok(true))
                .map_err(said);
        }
        let _ = PrintOptions::default()
            .print(&reader, &mut std::io::sink())
            .map_err(said);
    }
    if let Ok(eager) = EagerTrace::load(TraceBytes::from_vec(data.to_vec())).map_err(said) {
        let _ = PrintOptions::default()
            .print(&eager, &mut std::io::sink())
            .map_err(said);
        let _ = write_jsonl(&eager, None, &mut std::io::sink()).map_err(said);
    }
}

#[test]
fn random_mutations_give_ok_or_typed_errors() {
    let cases: u64 = std::env::var("TRACETREE_MUTATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(400);
    let corpus = corpus();
    assert!(corpus.len() >= 4);
    for case in 0..cases {
        let seed = 0x9E37_79B9_7F4A_7C15 ^ case.wrapping_mul(0x1000_0000_01B3);
        let mut rng = Rng(seed | 1);
        let (name, data, index) = &corpus[rng.below(corpus.len())];
        let (mut data, mut index) = (data.clone(), index.clone());
        let target = rng.below(3);
        for _ in 0..1 + rng.below(3) {
            if target != 1 {
                mutate(&mut data, &mut rng);
            }
            if target != 0 {
                mutate(&mut index, &mut rng);
            }
        }
        let rebuild = rng.below(4) == 0;
        let outcome = catch_unwind(AssertUnwindSafe(|| read_every_way(&data, &index, rebuild)));
        assert!(
            outcome.is_ok(),
            "case {case} (seed {seed:#x}, {name}, rebuild {rebuild}) panicked"
        );
    }
    eprintln!("{cases} mutated traces read without a panic");
}
