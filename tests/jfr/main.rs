//! The JFR import against the JDK's own tools, on recordings made here: a
//! small workload (`Work.java`) compiled with `javac` and recorded by the
//! default JDK (17 or later, `settings=profile`: execution samples) and, when
//! a JDK 25 sits beside it in the same JVM directory, with method tracing.
//! `jfr print --json` and `jfr summary` of the same files are the
//! reference: the sample trees and the nested method traces are rebuilt
//! here from the JSON, the counts read from the summary's table. Then
//! truncation and byte-flip campaigns over a two-chunk recording.

mod reference;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use reference::{Row, sample_rows, summary_counts, trace_rows};
use tracetree::import::jfr::{JfrSummary, Recording};
use tracetree::import::{ImportOptions, ImportSummary, SourceFormat};
use tracetree::read::LazyTraceReader;

/// Recordings made once for every test.
struct Recordings {
    _dir: tempfile::TempDir,
    /// By the default JDK: samples only.
    default: PathBuf,
    /// The default JDK's bin directory.
    default_bin: PathBuf,
    /// By JDK 25 with `Work$Traced` traced, and its bin directory.
    jdk25: Option<(PathBuf, PathBuf)>,
}

fn recordings() -> Option<&'static Recordings> {
    static RECORDINGS: OnceLock<Option<Recordings>> = OnceLock::new();
    RECORDINGS.get_or_init(make_recordings).as_ref()
}

/// The bin directory of the default `java` (from `PATH`).
fn default_bin() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let java = std::env::split_paths(&path)
        .map(|dir| dir.join("java"))
        .find(|java| java.is_file())?;
    Some(std::fs::canonicalize(java).ok()?.parent()?.to_path_buf())
}

/// A Temurin JDK 25 in the JVM directory beside the default one.
fn jdk25_bin(default_bin: &Path) -> Option<PathBuf> {
    let jvm_dir = default_bin.parent()?.parent()?;
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(jvm_dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains("-25"))
        })
        .map(|p| p.join("bin"))
        .filter(|bin| bin.join("java").is_file() && bin.join("jfr").is_file())
        .collect();
    candidates.sort();
    candidates.pop()
}

fn run(command: &mut Command) {
    let output = command.output().expect("the JDK tool starts");
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn make_recordings() -> Option<Recordings> {
    let Some(bin) = default_bin().filter(|b| b.join("javac").is_file() && b.join("jfr").is_file())
    else {
        tracetree_testkit::skip::cannot_run(
            "no JDK (java, javac, jfr) on PATH; the JFR tests need one",
        );
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("Work.java");
    std::fs::write(&source, include_str!("Work.java")).unwrap();
    run(Command::new(bin.join("javac"))
        .arg("--release")
        .arg("11")
        .arg("-d")
        .arg(dir.path())
        .arg(&source));
    let default = dir.path().join("default.jfr");
    run(Command::new(bin.join("java"))
        .arg(format!(
            "-XX:StartFlightRecording=filename={},settings=profile",
            default.display()
        ))
        .arg("-cp")
        .arg(dir.path())
        .arg("Work")
        .arg("1500"));
    let jdk25 = match jdk25_bin(&bin) {
        None => {
            eprintln!(
                "SKIPPED (method traces): no JDK 25 beside {} in its JVM directory",
                bin.display()
            );
            None
        }
        Some(bin25) => {
            let traced = dir.path().join("traced.jfr");
            run(Command::new(bin25.join("java"))
                .arg(format!(
                    "-XX:StartFlightRecording=filename={},settings=profile,method-trace=Work$Traced",
                    traced.display()
                ))
                .arg("-cp")
                .arg(dir.path())
                .arg("Work")
                .arg("1000"));
            Some((traced, bin25))
        }
    };
    Some(Recordings {
        _dir: dir,
        default,
        default_bin: bin,
        jdk25,
    })
}

/// `jfr <args>`'s standard output.
fn jfr(bin: &Path, args: &[&str], file: &Path) -> String {
    let output = Command::new(bin.join("jfr"))
        .args(args)
        .arg(file)
        .output()
        .expect("jfr starts");
    assert!(output.status.success(), "jfr {args:?} failed");
    String::from_utf8(output.stdout).unwrap()
}

/// Imports `source` and returns the summary and the dump's rows.
fn import(source: &Path, samples: bool) -> (ImportSummary, Vec<Row>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.trace");
    let mut options = ImportOptions::default();
    options.samples = samples;
    let summary = options.import_file(source, &out, None, &|_| {}).unwrap();
    let reader = LazyTraceReader::open(&out).unwrap();
    let mut dump = Vec::new();
    tracetree::print::write_jsonl(&reader, None, &mut dump).unwrap();
    let rows = String::from_utf8(dump)
        .unwrap()
        .lines()
        .map(|line| Row::from_dump(&serde_json::from_str(line).unwrap()))
        .collect();
    (summary, rows)
}

fn assert_rows_equal(ours: &[Row], reference: &[Row]) {
    assert!(!reference.is_empty(), "the reference holds no rows");
    for (i, (a, b)) in ours.iter().zip(reference).enumerate() {
        assert_eq!(a, b, "row {i} differs");
    }
    assert_eq!(ours.len(), reference.len(), "row counts differ");
}

#[test]
fn a_recording_is_detected_by_its_magic() {
    let Some(recordings) = recordings() else {
        return;
    };
    assert_eq!(
        SourceFormat::detect(&recordings.default),
        Some(SourceFormat::Jfr)
    );
}

#[test]
fn sample_trees_equal_the_ones_built_from_jfr_print() {
    let Some(recordings) = recordings() else {
        return;
    };
    let mut files = vec![(recordings.default.clone(), recordings.default_bin.clone())];
    files.extend(recordings.jdk25.clone());
    for (file, bin) in files {
        let json = jfr(
            &bin,
            &[
                "print",
                "--json",
                "--stack-depth",
                "100000",
                "--events",
                "jdk.ExecutionSample",
            ],
            &file,
        );
        let reference = sample_rows(&serde_json::from_str(&json).unwrap());
        let (summary, ours) = import(&file, true);
        assert!(summary.damage.is_empty(), "{:?}", summary.damage);
        assert_rows_equal(&ours, &reference);
        assert!(
            ours.iter().any(|r| r.method == "Work.a"),
            "the hot method was sampled"
        );
    }
}

#[test]
fn method_traces_equal_the_nesting_of_the_jdk_events() {
    let Some(recordings) = recordings() else {
        return;
    };
    let Some((file, bin)) = &recordings.jdk25 else {
        tracetree_testkit::skip::cannot_run(
            "no JDK 25 beside the default JDK in its JVM directory, for jdk.MethodTrace",
        );
        return;
    };
    let json = jfr(
        bin,
        &["print", "--json", "--events", "jdk.MethodTrace"],
        file,
    );
    let reference = trace_rows(&serde_json::from_str(&json).unwrap());
    let (summary, ours) = import(file, false);
    assert!(summary.damage.is_empty(), "{:?}", summary.damage);
    assert_rows_equal(&ours, &reference);
    // fib(7) nests 7 deep under run.
    assert!(
        ours.iter()
            .any(|r| r.method == "Work$Traced.fib" && r.depth >= 7)
    );
}

#[test]
fn info_counts_equal_jfr_summary() {
    let Some(recordings) = recordings() else {
        return;
    };
    let mut files = vec![(recordings.default.clone(), recordings.default_bin.clone())];
    files.extend(recordings.jdk25.clone());
    for (file, bin) in files {
        let text = jfr(&bin, &["summary"], &file);
        let (chunks, reference) = summary_counts(&text);
        let summary = JfrSummary::read(&file).unwrap();
        assert_eq!(summary.chunks, chunks);
        let ours: std::collections::BTreeMap<String, u64> = summary
            .types()
            .map(|(name, count, _)| (name.to_string(), count))
            .collect();
        assert_eq!(ours, reference);
        assert!(summary.damage.is_empty());
    }
}

/// The default recording twice, back to back: a valid two-chunk file.
fn two_chunks(dir: &Path) -> (PathBuf, usize) {
    let recordings = recordings().unwrap();
    let one = std::fs::read(&recordings.default).unwrap();
    let mut two = one.clone();
    two.extend_from_slice(&one);
    let path = dir.join("two.jfr");
    std::fs::write(&path, &two).unwrap();
    (path, one.len())
}

fn total_samples(rows: &[Row]) -> i64 {
    rows.iter()
        .filter(|r| r.depth == 0)
        .map(|r| r.samples)
        .sum()
}

#[test]
fn a_recording_cut_anywhere_keeps_every_whole_chunk() {
    if recordings().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (two, chunk_len) = two_chunks(dir.path());
    let bytes = std::fs::read(&two).unwrap();
    let (_, whole) = import(&two, true);
    let one_chunk = total_samples(&whole) / 2;
    let cut = dir.path().join("cut.jfr");
    let step = bytes.len() / 61;
    let mut lengths: Vec<usize> = (1..61).map(|i| i * step).collect();
    lengths.extend([
        4,
        67,
        68,
        69,
        chunk_len,
        chunk_len + 1,
        chunk_len + 68,
        bytes.len() - 1,
    ]);
    for len in lengths {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let out = dir.path().join("cut.trace");
        let mut options = ImportOptions::default();
        options.samples = true;
        let result = options.import_file(&cut, &out, None, &|_| {});
        if len < chunk_len {
            assert!(result.is_err(), "cut at {len}: no whole chunk, an error");
            continue;
        }
        let summary = result.unwrap_or_else(|e| panic!("cut at {len}: {e}"));
        let reader = LazyTraceReader::open(&out).unwrap();
        let mut dump = Vec::new();
        tracetree::print::write_jsonl(&reader, None, &mut dump).unwrap();
        let rows: Vec<Row> = String::from_utf8(dump)
            .unwrap()
            .lines()
            .map(|line| Row::from_dump(&serde_json::from_str(line).unwrap()))
            .collect();
        if len == chunk_len {
            assert!(summary.damage.is_empty());
        } else {
            assert_eq!(
                summary.damage.len(),
                1,
                "cut at {len}: {:?}",
                summary.damage
            );
        }
        assert_eq!(total_samples(&rows), one_chunk, "cut at {len}");
        let info = JfrSummary::read(&cut).unwrap();
        assert_eq!(info.chunks, 1);
    }
}

#[test]
fn a_header_still_being_written_or_a_corrupt_size_is_damage() {
    if recordings().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (two, chunk_len) = two_chunks(dir.path());
    let bytes = std::fs::read(&two).unwrap();
    let (_, whole) = import(&two, true);
    let one_chunk = total_samples(&whole) / 2;
    // The second chunk's state byte set as while the JVM rewrites it.
    let mut in_progress = bytes.clone();
    in_progress[chunk_len + 64] = 255;
    // The second chunk's size larger than the file.
    let mut oversized = bytes.clone();
    oversized[chunk_len + 8] = 0x7F;
    for (name, damaged) in [("in-progress", in_progress), ("oversized", oversized)] {
        let path = dir.path().join(format!("{name}.jfr"));
        std::fs::write(&path, &damaged).unwrap();
        let (summary, rows) = import(&path, true);
        assert_eq!(summary.damage.len(), 1, "{name}: {:?}", summary.damage);
        assert_eq!(total_samples(&rows), one_chunk, "{name}");
        assert_eq!(JfrSummary::read(&path).unwrap().damage.len(), 1);
    }
}

#[test]
fn every_byte_flip_imports_or_fails_typed() {
    if recordings().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (two, _) = two_chunks(dir.path());
    let bytes = std::fs::read(&two).unwrap();
    // The first chunk header's offsets of the last checkpoint (bytes
    // 16..24) and of the metadata (24..32), big-endian.
    let offset = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
    // Every header byte, the metadata's and last checkpoint's first bytes,
    // and a spread over the rest.
    let mut positions: Vec<usize> = (0..68).collect();
    for at in [offset(24), offset(16)] {
        positions.extend((at as usize..at as usize + 48).filter(|&p| p < bytes.len()));
    }
    positions.extend((0..400).map(|i| i * (bytes.len() / 400) + 7));
    let flipped = dir.path().join("flipped.jfr");
    let out = dir.path().join("flipped.trace");
    for position in positions {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut damaged = bytes.clone();
            damaged[position] ^= mask;
            std::fs::write(&flipped, &damaged).unwrap();
            for samples in [true, false] {
                let mut options = ImportOptions::default();
                options.samples = samples;
                // Either result is fine; a panic fails the test.
                let _ = options.import_file(&flipped, &out, None, &|_| {});
            }
            let _ = JfrSummary::read(&flipped);
        }
    }
}

/// Decoding a recording leaves none of it resident: each chunk's mapped
/// pages are released once it is decoded, so the file pages the process
/// holds after decoding copies of the default recording back to back (at
/// least 32 MB) are far fewer than the file's. Other tests of this binary
/// map only small recordings meanwhile.
#[test]
fn decoding_releases_each_chunk() {
    let Some(recordings) = recordings() else {
        return;
    };
    let one = std::fs::read(&recordings.default).unwrap();
    let copies = (32usize << 20).div_ceil(one.len()).min(4096);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.jfr");
    std::fs::write(&path, one.repeat(copies)).unwrap();
    let size = (one.len() * copies) as u64;

    let before = tracetree_testkit::memory::rss_file();
    let recording = Recording::open(&path).unwrap();
    assert_eq!(recording.chunk_count(), copies);
    let opened = tracetree_testkit::memory::rss_file();
    let (events, _) = recording.decode_all();
    let after = tracetree_testkit::memory::rss_file();
    assert!(events > 0);
    let (Some(before), Some(opened), Some(after)) = (before, opened, after) else {
        eprintln!("no RssFile in /proc/self/status here: residency not measured");
        return;
    };
    for (what, now) in [("opening", opened), ("decoding", after)] {
        let grown = now.saturating_sub(before);
        eprintln!("{what} {size} bytes of {copies} chunks: {grown} more bytes of files resident");
        assert!(
            grown < size / 4,
            "{what}: {grown} of {size} bytes stayed resident"
        );
    }
}
