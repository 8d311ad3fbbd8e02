//! Random mutations of every importer's input — bits flipped, bytes
//! overwritten with extreme values (0, 0xFF, lengths and counts such as
//! 0x7FFFFFFF in either byte order, or as decimal text), files cut, ranges
//! deleted or duplicated, one short range repeated thousands of times
//! (thousands of nested entries) — imported through [`import_file`] and the
//! result read back: each case gives a summary whose trace reads whole, or
//! a typed error; never a panic, a hang or a runaway allocation.
//!
//! Each format's tests call [`campaign`] with small inputs of their own
//! (generated ones, and the shared recordings where present). A case runs
//! on a worker thread under a watchdog: one that takes over
//! [`CASE_LIMIT`] fails with its seed, as does one that panics or whose
//! import raises the process's peak resident set over [`MEMORY_LIMIT`]
//! (reading the result back is the readers' own, and not bounded here). A run tries
//! `TRACETREE_IMPORT_MUTATIONS` cases per format (150 by default); the
//! long campaign:
//!
//! ```sh
//! TRACETREE_IMPORT_MUTATIONS=20000 cargo test --release --lib random_mutations -- --nocapture
//! ```
//!
//! One case again: `TRACETREE_IMPORT_MUTATION_CASE=N` (with the format's
//! test name as the filter).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::import::test_rows::Rng;
use crate::import::{SourceFormat, import_file};
use crate::read::{LazyTraceReader, SidecarPolicy, WalkDetail};

/// The longest a case may take before it counts as a hang.
pub const CASE_LIMIT: Duration = Duration::from_secs(10);

/// The most a case's import may raise the process's peak resident set.
pub const MEMORY_LIMIT: u64 = 200 << 20;

/// One input: its files (written into an empty folder) and which of them
/// is imported (`None`: the folder).
#[derive(Debug, Clone)]
pub struct Input {
    /// What it is, for the failure messages.
    pub name: String,
    /// File names and contents.
    pub files: Vec<(String, Vec<u8>)>,
    /// The file imported, or the folder when `None`.
    pub entry: Option<usize>,
}

impl Input {
    /// An input of one file.
    pub fn file(name: &str, bytes: Vec<u8>) -> Self {
        Input {
            name: name.to_string(),
            files: vec![(name.to_string(), bytes)],
            entry: Some(0),
        }
    }
}

/// Numbers a parser may take as lengths or counts, big-endian.
const EXTREMES: [[u8; 8]; 7] = [
    [0xFF; 8],
    [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
    [0x80, 0, 0, 0, 0, 0, 0, 0],
    [0; 8],
    [0, 0, 0, 0, 0x7F, 0xFF, 0xFF, 0xFF],
    [0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF],
    [0, 0, 0, 1, 0, 0, 0, 0],
];

/// The same as text, for the text formats.
const EXTREME_TEXT: [&str; 6] = [
    "2147483647",
    "-1",
    "18446744073709551616",
    "99999999999999999999999",
    "-9223372036854775808",
    "0",
];

/// Applies one random change to `bytes`.
pub fn mutate(bytes: &mut Vec<u8>, rng: &mut Rng) {
    let len = bytes.len();
    if len == 0 {
        bytes.push(rng.below(256) as u8);
        return;
    }
    let at = rng.below(len as u64) as usize;
    let upto = |rng: &mut Rng, n: u64| (at + 1 + rng.below(n) as usize).min(len);
    match rng.below(9) {
        // Bits flipped.
        0 => {
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(len as u64) as usize;
                bytes[at] ^= 1 << rng.below(8);
            }
        }
        // Bytes at random.
        1 => {
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(len as u64) as usize;
                bytes[at] = rng.below(256) as u8;
            }
        }
        // A length or count, 1 to 8 bytes wide, in either byte order.
        2 => {
            let mut value = EXTREMES[rng.below(EXTREMES.len() as u64) as usize];
            let width = [1, 2, 4, 8][rng.below(4) as usize];
            if rng.chance(50) {
                value.reverse();
            }
            let value = &value[8 - width..];
            let end = (at + width).min(len);
            bytes[at..end].copy_from_slice(&value[..end - at]);
        }
        // The same as text, over a run of digits or anywhere.
        3 => {
            let text = EXTREME_TEXT[rng.below(EXTREME_TEXT.len() as u64) as usize];
            let start = bytes[at..]
                .iter()
                .position(u8::is_ascii_digit)
                .map_or(at, |i| at + i);
            let end = start
                + bytes[start..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
            bytes.splice(start..end, text.bytes());
        }
        // Cut.
        4 => bytes.truncate(at),
        // A range deleted.
        5 => {
            let end = upto(rng, 64);
            bytes.drain(at..end);
        }
        // A range duplicated in place.
        6 => {
            let end = upto(rng, 64);
            let copy = bytes[at..end].to_vec();
            bytes.splice(at..at, copy);
        }
        // A short range (an entry, a line) repeated thousands of times.
        7 => {
            let end = match bytes[at..].iter().position(|&b| b == b'\n') {
                Some(i) if i < 200 && rng.chance(50) => at + i + 1,
                _ => upto(rng, 24),
            };
            let times = 1_000 + rng.below(9_000) as usize;
            let copy = bytes[at..end].repeat(times);
            bytes.splice(at..at, copy);
        }
        // A range copied over another.
        _ => {
            let from = rng.below(len as u64) as usize;
            let n = (1 + rng.below(48) as usize).min(len - from).min(len - at);
            let copy = bytes[from..from + n].to_vec();
            bytes[at..at + n].copy_from_slice(&copy);
        }
    }
}

/// The number of cases a campaign tries.
fn cases() -> u64 {
    std::env::var("TRACETREE_IMPORT_MUTATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(150)
}

/// The seed of case `case` of a campaign over `format`.
fn seed(format: SourceFormat, case: u64) -> u64 {
    let salt = format.name().bytes().fold(0u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x1000_0000_01B3)
    });
    0x9E37_79B9_7F4A_7C15 ^ salt ^ case.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// Runs the campaign over `format` from `inputs`: every case imports or
/// fails typed, within [`CASE_LIMIT`] and [`MEMORY_LIMIT`].
pub fn campaign(format: SourceFormat, inputs: Vec<Input>) {
    assert!(!inputs.is_empty());
    let inputs = Arc::new(inputs);
    let only: Option<u64> = std::env::var("TRACETREE_IMPORT_MUTATION_CASE")
        .ok()
        .and_then(|n| n.parse().ok());
    let range = match only {
        Some(case) => case..case + 1,
        None => 0..cases(),
    };
    // The peak resident set is the process's: one campaign at a time.
    let _alone = tracetree_testkit::memory::alone();
    let (mut imported, mut refused) = (0u64, 0u64);
    // The largest growth of the peak resident set, and its case.
    let mut largest: Option<(u64, u64)> = None;
    for case in range.clone() {
        let seed = seed(format, case);
        let before = std::fs::write("/proc/self/clear_refs", "5")
            .ok()
            .and_then(|()| tracetree_testkit::memory::proc_status("VmRSS:"));
        let (send, receive) = mpsc::channel();
        let worker_inputs = Arc::clone(&inputs);
        let import_peak = Arc::new(AtomicU64::new(0));
        let worker_peak = Arc::clone(&import_peak);
        std::thread::Builder::new()
            .name(format!("{format} mutation {case}"))
            .spawn(move || {
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    run_case(format, &worker_inputs, seed, &worker_peak)
                }));
                let _ = send.send(outcome);
            })
            .unwrap();
        let what = || format!("{format} case {case} (seed {seed:#x})");
        let outcome = match receive.recv_timeout(CASE_LIMIT) {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => panic!("{} panicked", what()),
            Err(_) => panic!("{} took over {CASE_LIMIT:?}", what()),
        };
        let name = match &outcome {
            Ok((name, _)) | Err((name, _)) => name.clone(),
        };
        if let Some(before) = before {
            let grown = import_peak.load(Ordering::Relaxed).saturating_sub(before);
            assert!(
                grown < MEMORY_LIMIT,
                "{} ({name}): the import raised the peak resident set by {} MB",
                what(),
                grown >> 20
            );
            if largest.is_none_or(|(most, _)| grown > most) {
                largest = Some((grown, case));
            }
        }
        match outcome {
            Ok((_, true)) => imported += 1,
            Ok((_, false)) => refused += 1,
            Err((name, problem)) => panic!("{} ({name}): {problem}", what()),
        }
    }
    eprintln!(
        "{format}: {} mutated inputs: {imported} imported, {refused} refused with a typed error",
        range.end - range.start
    );
    match largest {
        Some((grown, case)) => eprintln!(
            "{format}: an import raised the peak resident set by {} MB at most (case {case})",
            grown >> 20
        ),
        None => eprintln!("{format}: the peak resident set is not measured here (no clear_refs)"),
    }
}

/// One case: the input mutated, imported and read back. `Ok(true)` when
/// it imported, `Ok(false)` when it was refused; `Err` says what was
/// wrong. Both carry the input's name.
fn run_case(
    format: SourceFormat,
    inputs: &[Input],
    seed: u64,
    import_peak: &AtomicU64,
) -> Result<(String, bool), (String, String)> {
    let mut rng = Rng::new(seed);
    let input = &inputs[rng.below(inputs.len() as u64) as usize];
    let mut files = input.files.clone();
    for _ in 0..1 + rng.below(3) {
        let file = rng.below(files.len() as u64) as usize;
        mutate(&mut files[file].1, &mut rng);
    }
    let detect = rng.chance(25);
    let name = input.name.clone();
    let fail = |problem: String| (name.clone(), problem);

    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("source");
    std::fs::create_dir(&folder).unwrap();
    for (file, bytes) in &files {
        std::fs::write(folder.join(file), bytes).unwrap();
    }
    let source = match input.entry {
        Some(i) => folder.join(&files[i].0),
        None => folder,
    };
    let trace = dir.path().join("out.trace");
    let given = (!detect).then_some(format);
    let imported = import_file(&source, &trace, given, &|_| {});
    let peak = tracetree_testkit::memory::proc_status("VmHWM:").unwrap_or(0);
    import_peak.store(peak, Ordering::Relaxed);
    let summary = match imported {
        Ok(summary) => summary,
        Err(error) => {
            if error.to_string().is_empty() {
                return Err(fail("an import error that says nothing".into()));
            }
            if trace.exists() {
                return Err(fail(format!("a failed import left {}", trace.display())));
            }
            return Ok((name, false));
        }
    };
    let calls = match read_back(&trace) {
        Ok(calls) => calls,
        // A packed trace is unpacked as it is: its damage stays, and reads
        // as a typed error.
        Err(error) if format == SourceFormat::Packed && !error.to_string().is_empty() => {
            return Ok((name, true));
        }
        Err(error) => return Err(fail(format!("the imported trace: {error}"))),
    };
    if calls != summary.calls {
        return Err(fail(format!(
            "the summary says {} calls, the trace holds {calls}",
            summary.calls
        )));
    }
    for damage in &summary.damage {
        let said = damage.split_once(": ");
        if said.is_none_or(|(source, what)| source.is_empty() || what.is_empty()) {
            return Err(fail(format!("damage that says nothing: {damage:?}")));
        }
    }
    Ok((name, true))
}

/// Reads all of an imported trace (every thread walked, every node
/// printed); its calls.
fn read_back(trace: &Path) -> crate::Result<u64> {
    let reader = LazyTraceReader::options()
        .sidecar(SidecarPolicy::Off)
        .open(trace)?;
    let mut calls = 0;
    for thread in reader.thread_ids() {
        reader.walk_thread(thread, WalkDetail::Full, |_| Ok(true))?;
    }
    crate::print::PrintOptions::default().print(&reader, &mut std::io::sink())?;
    for (kind, count) in reader.count_tracepoints()? {
        if kind == crate::model::TracepointType::MethodCall {
            calls = count;
        }
    }
    Ok(calls)
}

/// The bundled traces and a generated one, packed as the recorder packs
/// (stored) and deflated.
fn packed_inputs() -> crate::Result<Vec<Input>> {
    let dir = tempfile::tempdir().unwrap();
    let mut traces = vec![
        tracetree_testkit::files::testdata("all-types.trace"),
        tracetree_testkit::files::testdata("multi-thread.trace"),
    ];
    let options = crate::generate::raw::SynthOptions {
        threads: 2,
        bytes: 6 << 10,
        block_bytes: 512,
        seed: 7,
        ..Default::default()
    };
    traces.push(crate::generate::raw::cached(dir.path(), "generated", &options).unwrap());
    let mut inputs = Vec::new();
    for trace in traces {
        let index = crate::read::index_path(&trace);
        let name = trace.file_name().unwrap().to_string_lossy().into_owned();
        let stored = dir.path().join(format!("{name}.packedtrace"));
        crate::storage::packed::write_packed(&stored, "info\n", &trace, &index)?;
        inputs.push(Input::file(
            &format!("{name}.packedtrace"),
            std::fs::read(&stored).unwrap(),
        ));
        inputs.push(Input::file(
            &format!("{name}.deflated.packedtrace"),
            deflated_pack(&[
                ("info.txt", b"info\n".to_vec()),
                ("trace.trace", std::fs::read(&trace).unwrap()),
                ("trace.idx", std::fs::read(&index).unwrap()),
            ]),
        ));
    }
    Ok(inputs)
}

/// A ZIP of `entries`, deflated.
fn deflated_pack(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    use std::io::Write;
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    for (name, bytes) in entries {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
    out.into_inner()
}

#[test]
fn random_mutations_of_packed_traces_unpack_or_fail_typed() {
    campaign(SourceFormat::Packed, packed_inputs().unwrap());
}
