//! Every single-byte flip and every truncation of the testdata traces: the
//! eager loader and the lazy reader that reads a whole trace (lookups
//! rebuilt from the data, as `print` and `dump` open it) give the same rows
//! and the same outcome, and a read that gives fewer rows than the whole
//! trace always says what it left out.

use std::fmt::Write as _;

use tracetree::print::{PrintOptions, write_jsonl};
use tracetree::read::{EagerTrace, IndexChoice, LazyOptions, LoadReport};
use tracetree::storage::TraceBytes;
use tracetree::tree::TraceTree;
use tracetree_testkit::lazy::testdata_traces;

/// What a reader made of some bytes: the printed text and JSON lines with
/// the one-line summary of what was left out, or the error.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Read {
        text: String,
        jsonl: String,
        summary: Option<String>,
    },
    Failed(String),
}

fn rows<T: TraceTree>(tree: &T, report: &LoadReport, data_len: u64) -> Outcome {
    let mut text = Vec::new();
    let mut jsonl = Vec::new();
    let printed = PrintOptions::default()
        .print(tree, &mut text)
        .and_then(|()| write_jsonl(tree, None, &mut jsonl));
    match printed {
        Ok(()) => Outcome::Read {
            text: String::from_utf8_lossy(&text).into_owned(),
            jsonl: String::from_utf8_lossy(&jsonl).into_owned(),
            summary: report.summary(data_len),
        },
        Err(error) => Outcome::Failed(error.to_string()),
    }
}

fn eager(bytes: &[u8]) -> Outcome {
    match EagerTrace::load(TraceBytes::from_vec(bytes.to_vec())) {
        Ok(trace) => rows(&trace, trace.report(), trace.context().data().len()),
        Err(error) => Outcome::Failed(error.to_string()),
    }
}

fn lazy(bytes: &[u8], index: &[u8]) -> Outcome {
    let reader = LazyOptions::default()
        .index(IndexChoice::Rebuild)
        .open_bytes(
            TraceBytes::from_vec(bytes.to_vec()),
            Some(TraceBytes::from_vec(index.to_vec())),
        );
    match reader {
        Ok(reader) => rows(
            &reader,
            &reader.report().data,
            reader.context().data().len(),
        ),
        Err(error) => Outcome::Failed(error.to_string()),
    }
}

fn line_count(outcome: &Outcome) -> usize {
    match outcome {
        Outcome::Read { text, .. } => text.lines().count(),
        Outcome::Failed(_) => 0,
    }
}

#[test]
fn every_flip_and_truncation_reads_the_same_eagerly_and_lazily_and_says_what_it_left_out() {
    let traces = testdata_traces();
    assert!(traces.len() >= 2, "testdata traces missing: {traces:?}");
    let mut failures = String::new();
    let (mut cases, mut warned, mut failed) = (0, 0, 0);
    for trace in traces {
        let data = std::fs::read(&trace).unwrap();
        let index = std::fs::read(format!("{}.idx", trace.display())).unwrap();
        let whole = eager(&data);
        let whole_lines = line_count(&whole);
        assert!(
            matches!(&whole, Outcome::Read { summary: None, .. }),
            "{}: {whole:?}",
            trace.display()
        );
        // A fixed pseudo-random non-zero mask per byte, then every cut
        // after the file header.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let flips = (0..data.len()).map(|at| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mask = ((state >> 33) % 255 + 1) as u8;
            let mut bytes = data.clone();
            bytes[at] ^= mask;
            (format!("byte {at} ^ {mask:#04x}"), bytes)
        });
        let cuts = (16..data.len()).map(|len| (format!("cut to {len}"), data[..len].to_vec()));
        for (case, bytes) in flips.chain(cuts) {
            cases += 1;
            let (a, b) = (eager(&bytes), lazy(&bytes, &index));
            if a != b {
                let _ = writeln!(
                    failures,
                    "{} {case}: eager {a:?}\n  lazy {b:?}",
                    trace.display()
                );
                continue;
            }
            match &a {
                Outcome::Read { summary: None, .. } if line_count(&a) < whole_lines => {
                    let _ = writeln!(
                        failures,
                        "{} {case}: {} of {whole_lines} rows, nothing said",
                        trace.display(),
                        line_count(&a)
                    );
                }
                Outcome::Read {
                    summary: Some(_), ..
                } => warned += 1,
                Outcome::Read { .. } => {}
                Outcome::Failed(_) => failed += 1,
            }
        }
    }
    assert!(failures.is_empty(), "{failures}");
    // The cases are damaged enough to matter: most truncations warn.
    assert!(warned > cases / 3, "{warned} of {cases} warned");
    eprintln!("{cases} damaged copies: {warned} read with a warning, {failed} failed");
}
