//! The `tracetree` binary: commands, `--help`, one-line errors.

use tracetree::read::{IndexStatus, LazyTraceReader};

use tracetree_testkit::compare::first_difference;
use tracetree_testkit::files;
use tracetree_testkit::synth::blocks_trace;

use crate::{tracetree, tracetree_cached};

/// The bundled multi-thread trace (data and index), copied into a
/// temporary folder: opening it may write a lookup sidecar beside it.
pub(crate) fn bundled() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("multi-thread.trace");
    let source = files::testdata("multi-thread.trace");
    std::fs::copy(&source, &trace).unwrap();
    std::fs::copy(
        LazyTraceReader::index_path(&source),
        LazyTraceReader::index_path(&trace),
    )
    .unwrap();
    let trace = trace.display().to_string();
    (dir, trace)
}

#[test]
fn every_command_has_help() {
    let commands = [
        "info", "print", "dump", "index", "children", "import", "gen", "search", "export", "pack",
        "view", "serve", "diff",
    ];
    for command in commands {
        let (ok, out, _) = tracetree(&[command, "--help"]);
        assert!(ok && out.contains("Usage:"), "{command} --help");
    }
}

#[test]
fn lazy_and_eager_agree_on_print_dump_and_counts() {
    let (_dir, file) = bundled();
    for command in [
        &["print", "--verbose"][..],
        &["dump", "--format", "jsonl"][..],
    ] {
        let mut lazy = vec![command[0], &file];
        lazy.extend(&command[1..]);
        let mut eager = lazy.clone();
        eager.push("--eager");
        let (ok_lazy, out_lazy, _) = tracetree(&lazy);
        let (ok_eager, out_eager, _) = tracetree(&eager);
        assert!(ok_lazy && ok_eager);
        assert_eq!(out_lazy, out_eager, "{command:?}");
    }
    let (_, lazy, _) = tracetree(&["info", &file]);
    let (_, eager, _) = tracetree(&["info", &file, "--eager"]);
    let counts = |s: &str| {
        s.lines()
            .skip_while(|l| !l.starts_with("tracepoints:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(counts(&lazy), counts(&eager));
    assert!(lazy.contains("(valid, used)"), "{lazy}");
}

#[test]
fn no_mmap_reads_the_same_trace() {
    let (_dir, file) = bundled();
    for command in [
        &["print", "--verbose"][..],
        &["print", "--eager"],
        &["dump"],
        &["search", "run"],
    ] {
        let mut args = command.to_vec();
        args.insert(1, &file);
        let mapped = tracetree(&args);
        args.push("--no-mmap");
        let unmapped = tracetree(&args);
        assert!(mapped.0, "{args:?}: {}", mapped.2);
        assert_eq!(unmapped, mapped, "{args:?}");
    }
}

#[test]
fn children_shows_one_page() {
    let (_dir, file) = bundled();
    let (_, dump, _) = tracetree(&["dump", &file]);
    // The first top-level call with children.
    let root: serde_json::Value = dump
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["depth"] == 0 && v["children"].as_u64().unwrap() >= 2)
        .unwrap();
    let event = root["event_id"].to_string();
    let (ok, out, _) = tracetree(&[
        "children", &file, "--node", &event, "--from", "1", "--count", "1",
    ]);
    assert!(ok);
    let total = root["children"].as_u64().unwrap();
    assert!(out.contains(&format!("children 1..2 of {total}:")), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("  [1] #")).count(),
        1,
        "{out}"
    );
}

#[test]
fn failures_print_one_line_and_exit_non_zero() {
    for command in ["print", "dump", "info", "index"] {
        for eager in [false, true] {
            let mut args = vec![command, "/no/such/file.trace"];
            if eager && command != "index" {
                args.push("--eager");
            }
            let (ok, out, err) = tracetree(&args);
            assert!(!ok, "{args:?}");
            assert!(out.is_empty(), "{args:?} printed {out}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.starts_with("tracetree: "), "{args:?}: {err}");
        }
    }
    let (_dir, file) = bundled();
    let (ok, _, err) = tracetree(&["children", &file, "--node", "2147483647"]);
    assert!(!ok && err.lines().count() == 1, "{err}");
}

#[test]
fn gen_writes_traces_that_check_and_read_alike_lazily_and_eagerly() {
    let dir = tempfile::tempdir().unwrap();
    for shape in ["mixed", "wide", "deep", "threads"] {
        let path = dir.path().join(format!("{shape}.trace"));
        let file = path.display().to_string();
        let (ok, out, err) = tracetree(&[
            "gen",
            &file,
            "--size",
            "300KB",
            "--shape",
            shape,
            "--threads",
            "3",
            "--block-size",
            "16KB",
        ]);
        assert!(ok, "{shape}: {err}");
        assert!(out.starts_with("wrote "), "{out}");
        let (ok, _, err) = tracetree(&["index", &file, "--check"]);
        assert!(ok, "{shape}: {err}");
        let (_, lazy, _) = tracetree(&["dump", &file]);
        let (_, eager, _) = tracetree(&["dump", &file, "--eager"]);
        assert!(lazy == eager && lazy.lines().count() > 1000, "{shape}");
    }
    let (ok, _, err) = tracetree(&["gen", "/tmp/x.trace", "--size", "ten"]);
    assert!(!ok && err.contains("not a size"), "{err}");
}

#[test]
fn gen_replaces_only_with_force_the_same_bytes_and_leaves_nothing_on_failure() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    let file = path.to_str().unwrap();
    let files = || std::fs::read_dir(dir.path()).unwrap().count();
    let read = || {
        let index = dir.path().join("t.trace.idx");
        (std::fs::read(&path).unwrap(), std::fs::read(index).unwrap())
    };
    let (ok, _, err) = tracetree(&["gen", file, "--size", "1MB", "--block-size", "0"]);
    assert!(!ok && err.trim_end().lines().count() == 1, "{err}");
    assert_eq!(files(), 0, "a failed gen left files");

    let gen_args = |seed, force: bool| {
        let mut args = vec!["gen", file, "--size", "1MB", "--threads", "3"];
        args.extend(["--block-size", "64KB", "--seed", seed]);
        if force {
            args.push("--force");
        }
        tracetree(&args)
    };
    let (ok, _, err) = gen_args("7", false);
    assert!(ok, "{err}");
    let first = read();
    let off = (first.0.len() as f64 / (1 << 20) as f64 - 1.0).abs();
    assert!(off < 0.02, "{} bytes for 1MB", first.0.len());

    // Not again without --force: one line, and the trace as it was.
    let (ok, _, err) = gen_args("7", false);
    assert!(!ok && err.trim_end().lines().count() == 1 && err.contains("--force"));
    assert!(read() == first);
    // With --force, the same seed gives the same bytes, another seed others.
    let (ok, _, err) = gen_args("7", true);
    assert!(ok, "{err}");
    assert!(read() == first);
    let (ok, _, err) = gen_args("8", true);
    assert!(ok, "{err}");
    assert!(read().0 != first.0);
    assert_eq!(files(), 2);
}

#[test]
fn info_says_when_the_lookups_went_to_a_scratch_file() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let source = files::testdata("multi-thread.trace");
    std::fs::copy(&source, &trace).unwrap();
    std::fs::copy(
        LazyTraceReader::index_path(&source),
        LazyTraceReader::index_path(&trace),
    )
    .unwrap();
    let sidecar_line = |out: &str| {
        out.lines()
            .find(|line| line.starts_with("lookup sidecar:"))
            .unwrap_or_else(|| panic!("no sidecar line in {out}"))
            .to_string()
    };
    let scratch_line = |out: &str| {
        let line = sidecar_line(out);
        assert!(
            line.ends_with("; lookups mapped from an unlinked scratch file instead)"),
            "{line}"
        );
        line
    };
    // --no-cache keeps none, and its tables (small) are built on first
    // use: no scratch file.
    let (ok, out, err) = tracetree(&["info", "--no-cache", trace.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        sidecar_line(&out)
            .ends_with("none kept (--no-cache, or the trace came from a pipe) (not written)"),
        "{out}"
    );
    // A sidecar directory that may not be written.
    let cache = dir.path().join("cache");
    let lookups = cache.join("lookups");
    std::fs::create_dir_all(&lookups).unwrap();
    let mut permissions = std::fs::metadata(&lookups).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(&lookups, permissions.clone()).unwrap();
    let (ok, out, err) = tracetree(&[
        "info",
        "--cache-dir",
        cache.to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(&lookups, permissions).unwrap();
    assert!(ok, "{err}");
    assert!(scratch_line(&out).contains("not written: "), "{out}");
}

#[test]
fn reads_add_nothing_beside_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let source = files::testdata("multi-thread.trace");
    std::fs::copy(&source, &trace).unwrap();
    std::fs::copy(
        LazyTraceReader::index_path(&source),
        LazyTraceReader::index_path(&trace),
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let file = trace.to_str().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    for args in [
        &["info", file][..],
        &["print", file],
        &["dump", file],
        &["children", file, "--node", "0"],
    ] {
        let mut args = args.to_vec();
        args.extend(["--cache-dir", cache_dir]);
        let (_, _, err) = tracetree(&args);
        assert!(!err.contains("panicked"), "{err}");
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["t.trace", "t.trace.idx"], "after {args:?}");
    }
    // The sidecar went to the cache.
    let lookups: Vec<_> = std::fs::read_dir(cache.path().join("lookups"))
        .unwrap()
        .collect();
    assert_eq!(lookups.len(), 1);
}

#[test]
fn info_reports_the_sidecar_through_index_and_deferral() {
    let dir = tempfile::tempdir().unwrap();
    let path = blocks_trace(dir.path(), None, 256 << 10);
    std::fs::remove_file(LazyTraceReader::index_path(&path)).unwrap();
    let cache = dir.path().join("cache");
    let file = path.to_str().unwrap();
    let with_cache = |command: &str| {
        // Before the command: `index` has no cache of its own to name.
        let (ok, out, err) = tracetree(&["--cache-dir", cache.to_str().unwrap(), command, file]);
        assert!(ok, "{err}");
        out
    };
    // Without an index the lookups are rebuilt, and the sidecar is written
    // at once.
    let out = with_cache("info");
    assert!(out.contains("rebuilt"), "{out}");
    assert!(out.contains(".ttlookup (written)"), "{out}");
    let out = with_cache("info");
    assert!(out.contains(".ttlookup (valid, used)"), "{out}");
    assert!(
        out.contains("an earlier run rebuilt it from the data"),
        "{out}"
    );
    // `index` writes the index only.
    let out = with_cache("index");
    assert!(out.starts_with("wrote "), "{out}");
    assert!(!out.contains("sidecar"), "{out}");
    // The first open with it leaves the sidecar to the next one.
    let out = with_cache("info");
    assert!(out.contains(".ttlookup (not written yet: "), "{out}");
    assert!(out.contains("the old one was not used: stale"), "{out}");
    let out = with_cache("info");
    assert!(
        out.contains(".ttlookup (written; the old one was not used: none yet"),
        "{out}"
    );
    let out = with_cache("info");
    assert!(out.contains(".ttlookup (valid, used)\n"), "{out}");
    let reader = LazyTraceReader::options()
        .sidecar_dir(Some(cache.join("lookups")))
        .open(&path)
        .unwrap();
    assert!(reader.report().sidecar_used());
    assert_eq!(reader.report().status, IndexStatus::Used { complete: true });
}

#[test]
fn the_print_command_writes_the_reference_text() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let trace = dir.join("all-types-stream.trace");
    let tracetree = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tracetree"))
            .arg("print")
            .arg(&trace)
            .args(args)
            .output()
            .unwrap()
    };
    let output = tracetree(&["--verbose"]);
    assert!(output.status.success());
    let expected = std::fs::read(dir.join("all-types-stream.trace.txt")).unwrap();
    assert!(
        output.stdout == expected,
        "{}",
        first_difference(&output.stdout, &expected)
    );

    let output = tracetree(&["--thread", "1", "--depth", "0"]);
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "# Thread 2 (Поток-β 线程 🧵 №1)\nmain()\n  ... <unloaded child>\n"
    );

    let output = tracetree(&["--thread", "3"]);
    assert!(!output.status.success());
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(error.contains("no thread 3"), "{error}");
}

#[test]
fn import_writes_a_trace_and_any_command_opens_a_recording_directly() {
    let Some(recording) = files::shared_sample("flow/exit-running") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let trace = dir.path().join("exit.trace");
    let (input, output) = (recording.to_str().unwrap(), trace.to_str().unwrap());
    let (ok, _, err) = tracetree_cached(&cache, &["import", input, "-o", output]);
    assert!(ok, "{err}");
    assert!(err.contains("219,723 calls, 12 unfinished calls"), "{err}");
    assert!(
        err.contains("ends inside the event at offset 202957"),
        "{err}"
    );
    // No overwrite without --force; one line; the trace is untouched.
    let before = std::fs::read(&trace).unwrap();
    let (ok, _, err) = tracetree_cached(&cache, &["import", input, "-o", output]);
    assert!(!ok && err.trim_end().lines().count() == 1, "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&trace).unwrap(), before);
    let (ok, _, _) = tracetree_cached(&cache, &["import", input, "-o", output, "--force"]);
    assert!(ok);
    // Printing the recording itself imports it into the cache once.
    let (ok, printed, err) = tracetree_cached(&cache, &["print", output]);
    assert!(ok && err.is_empty(), "{err}");
    let (ok, direct, err) = tracetree_cached(&cache, &["print", input]);
    assert!(ok, "{err}");
    assert!(
        err.contains("imported") && err.contains("later opens reuse it"),
        "{err}"
    );
    assert_eq!(direct, printed);
    let (ok, again, err) = tracetree_cached(&cache, &["print", input]);
    assert!(ok && err.is_empty(), "{err}");
    assert_eq!(again, printed);
    // Nothing beside the recording changed; the cache holds the import.
    assert!(std::fs::read_dir(&cache).unwrap().count() >= 2);
    // A source that is no known format is a one-line error.
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, b"not a trace").unwrap();
    let (ok, _, err) = tracetree_cached(
        &cache,
        &["import", junk.to_str().unwrap(), "-o", output, "--force"],
    );
    assert!(
        !ok && err.starts_with("tracetree: ") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn info_on_a_blinky_trace_shows_what_its_import_mapped_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let source = dir.path().join("run.log");
    std::fs::write(
        &source,
        b"$$method$$,1,run,demo/A,1\n$enter$,10,1,-1,0,-2,,,\n$exit$,11,1,-1,0,-4,,,\n\
          $field$,12,1,7,3,180,demo/A,n,I;\nprogram says hi \xff\n$line$,13,1,7,0,-1,,,\n\
          $$$,1,4,0,1,x,10,$enter$,()V\n$$$,2,4,0,1,x,12,$field$,a,b\n\
          $$$,3,4,0,1,x,13,$line$\n$$$,4,4,0,1,x,11,$exit$\n$$$,5,4,0,0,x,11,$exit$\n",
    )
    .unwrap();
    let (ok, info, err) = tracetree_cached(&cache, &["info", source.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(err.contains("(blinky)"), "{err}");
    assert!(
        info.contains("mapped: method_call 1, read_field 1"),
        "{info}"
    );
    assert!(info.contains("$line$ 1"), "{info}");
    assert!(info.contains("program output lines 1"), "{info}");
    assert!(info.contains("1 exit with no open call"), "{info}");
    let (ok, rows, err) = tracetree_cached(
        &cache,
        &["dump", "--format", "jsonl", source.to_str().unwrap()],
    );
    assert!(ok, "{err}");
    assert_eq!(rows.lines().count(), 2, "{rows}");
    assert!(rows.contains("\"method\":\"demo.A.run\""), "{rows}");
}

#[cfg(feature = "parquet")]
#[test]
fn export_writes_a_parquet_dataset_of_any_input() {
    let recording = files::shared_sample("flow/exit-running");
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let dataset = dir.path().join("dataset");
    let out = dataset.to_str().unwrap();
    let (_bundled_dir, bundled) = bundled();
    let mut inputs = vec![bundled];
    inputs.extend(recording.map(|r| r.display().to_string()));
    for input in &inputs {
        let (ok, dump, err) = tracetree_cached(&cache, &["dump", input]);
        assert!(ok, "{err}");
        let (ok, said, err) =
            tracetree_cached(&cache, &["export", input, "--format", "parquet", "-o", out]);
        assert!(ok, "{err}");
        let rows = format!("({} rows in ", grouped(dump.lines().count()));
        assert!(said.contains(&rows), "{said} vs {rows}");
        let name = std::path::Path::new(input).file_stem().unwrap();
        let partition = dataset.join(format!("trace={}", name.to_string_lossy()));
        assert!(partition.join("threads.parquet").is_file());
        let threads = std::fs::read_dir(&partition)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().is_dir())
            .count();
        assert!(threads >= 1 && said.contains(&format!("rows in {threads} thread")));
        // Exporting again needs --force; the answer is one line.
        let (ok, _, err) =
            tracetree_cached(&cache, &["export", input, "--format", "parquet", "-o", out]);
        assert!(!ok && err.trim_end().lines().count() == 1 && err.contains("--force"));
    }
    // Both traces sit side by side in one dataset.
    assert_eq!(std::fs::read_dir(&dataset).unwrap().count(), inputs.len());
}

#[test]
fn export_writes_call_stacks_for_profilers_viewers() {
    let (dir, trace) = bundled();
    let (ok, dump, err) = tracetree(&["dump", &trace]);
    assert!(ok, "{err}");
    let tracepoints = dump.lines().count();
    for (format, starts) in [
        ("folded", &b"main;"[..]),
        ("speedscope", b"{\"$schema\":\"https://www.speedscope.app/"),
        ("chrome", b"{\"traceEvents\":["),
        ("perfetto", b"\x0a"),
    ] {
        let out = dir.path().join(format!("out.{format}"));
        let out = out.to_str().unwrap();
        let (ok, said, err) = tracetree(&["export", &trace, "--format", format, "-o", out]);
        assert!(ok, "{format}: {err}");
        assert!(
            said.contains(&format!("({tracepoints} tracepoints in 4 threads")),
            "{said}"
        );
        let written = std::fs::read(out).unwrap();
        assert!(written.starts_with(starts), "{format}");
        // Not again without --force; the answer is one line.
        let (ok, _, err) = tracetree(&["export", &trace, "--format", format, "-o", out]);
        assert!(!ok && err.trim_end().lines().count() == 1 && err.contains("--force"));
        let (ok, _, err) = tracetree(&["export", &trace, "--format", format, "-o", out, "--force"]);
        assert!(ok, "{err}");
    }
    // One thread; one subtree (event 0 is main's root call).
    let out = dir.path().join("one.folded");
    let out = out.to_str().unwrap();
    let (ok, _, err) = tracetree(&[
        "export", &trace, "--format", "folded", "-o", out, "--thread", "0",
    ]);
    assert!(ok, "{err}");
    let folded = std::fs::read_to_string(out).unwrap();
    assert!(folded.lines().all(|l| l.starts_with("main;")), "{folded}");
    let (ok, said, err) = tracetree(&[
        "export", &trace, "--format", "folded", "-o", out, "--root", "0", "--force",
    ]);
    assert!(ok && said.contains("in 1 thread,"), "{said} {err}");
    let (ok, _, err) = tracetree(&[
        "export", &trace, "--format", "chrome", "-o", out, "--root", "999999", "--force",
    ]);
    assert!(!ok && err.trim_end().lines().count() == 1, "{err}");
}

#[test]
fn search_prints_hits_with_paths_and_counts_the_rest() {
    let (_dir, trace) = bundled();
    let (ok, all, err) = tracetree(&["search", &trace, "run"]);
    assert!(ok, "{err}");
    let hits = all.lines().count();
    assert!(hits > 1, "{all}");
    assert!(
        all.lines()
            .all(|l| l.starts_with("thread ") && l.contains(", event ")),
        "{all}"
    );
    assert!(err.contains(&format!("{hits} hits in ")), "{err}");
    let (ok, first, err) = tracetree(&["search", &trace, "run", "--max", "1"]);
    assert!(ok && first.lines().count() == 1, "{first}");
    assert_eq!(first.lines().next(), all.lines().next());
    assert!(err.contains("the first 1 shown"), "{err}");
    let (ok, calls, _) = tracetree(&["search", &trace, "run", "--kind", "method_call"]);
    assert!(ok && calls.lines().count() <= hits);
    let (ok, _, err) = tracetree(&["search", &trace, "run", "--kind", "calls"]);
    assert!(
        !ok && err.lines().count() == 1 && err.contains("method_call"),
        "{err}"
    );
}

#[test]
fn chrome_exports_above_what_browsers_load_warn_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("big.trace");
    let trace = trace.to_str().unwrap();
    let (ok, _, err) = tracetree(&[
        "gen",
        trace,
        "--size",
        "96MB",
        "--threads",
        "1",
        "--seed",
        "3",
    ]);
    assert!(ok, "{err}");
    let out = dir.path().join("big.json");
    let (ok, said, err) = tracetree(&[
        "export",
        trace,
        "--format",
        "chrome",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let events: u64 = said
        .split(", ")
        .find_map(|part| part.strip_suffix(" events"))
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no event count in {said:?}"));
    assert!(events > 1_000_000, "{said}");
    assert!(
        err.contains(&format!("warning: {} events", grouped(events as usize)))
            && err.contains("--root"),
        "{err}"
    );
    // A small trace: no warning.
    let (_bundled_dir, bundled) = bundled();
    let (ok, said, err) = tracetree(&[
        "export",
        &bundled,
        "--format",
        "chrome",
        "-o",
        out.to_str().unwrap(),
        "--force",
    ]);
    assert!(ok, "{err}");
    assert!(!err.contains("warning"), "{said} {err}");
}

#[test]
fn zeros_after_the_data_are_reported_and_change_nothing() {
    let (_dir, trace) = bundled();
    let (ok, before, _) = tracetree(&["print", &trace]);
    assert!(ok);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&trace)
        .unwrap();
    let len = file.metadata().unwrap().len();
    file.set_len(len + (64 << 20)).unwrap();
    drop(file);
    let (ok, after, stderr) = tracetree(&["print", &trace]);
    assert!(ok, "{stderr}");
    assert_eq!(after, before);
    let warning = format!("its last {} bytes are zeros", 64 << 20);
    assert!(stderr.contains(&warning), "{stderr}");
    for eager in [false, true] {
        let args: &[&str] = if eager {
            &["info", "--eager", &trace]
        } else {
            &["info", &trace]
        };
        let (ok, info, stderr) = tracetree(args);
        assert!(ok, "{stderr}");
        let line = format!("status: complete: its last {} bytes are zeros", 64 << 20);
        assert!(info.contains(&line), "{info}");
    }
}

#[test]
fn damaged_and_cut_traces_warn_read_alike_and_fail_under_strict() {
    let (dir, trace) = bundled();
    let data = std::fs::read(&trace).unwrap();
    let damaged = dir.path().join("damaged.trace");
    // A half-written last block, then an unknown object kind where the
    // middle block starts.
    let index = std::fs::read(LazyTraceReader::index_path(std::path::Path::new(&trace))).unwrap();
    let blocks = tracetree_testkit::layout::index_blocks(&index);
    let (middle, _) = blocks[blocks.len() / 2];
    let mut flipped = data.clone();
    flipped[middle as usize] = 0xEE;
    let cases = [
        (&data[..data.len() - data.len() / 5], "is cut short"),
        (
            &flipped[..],
            &format!("the block at offset {middle} is damaged (unknown object kind")[..],
        ),
    ];
    for (bytes, said) in cases {
        std::fs::write(&damaged, bytes).unwrap();
        let path = damaged.to_str().unwrap();
        for command in ["print", "dump"] {
            let (ok, lazy, lazy_err) = tracetree(&[command, path]);
            let (eager_ok, eager, eager_err) = tracetree(&[command, "--eager", path]);
            assert!(ok && eager_ok, "{lazy_err} {eager_err}");
            assert_eq!(lazy, eager, "{command} {said}");
            assert_eq!(lazy_err, eager_err, "{command} {said}");
            let warning = lazy_err.trim_end();
            assert!(
                warning.starts_with("tracetree: warning: ") && warning.contains(said),
                "{warning}"
            );
            assert_eq!(warning.lines().count(), 1, "{warning}");
            let (ok, out, err) = tracetree(&["--strict", command, path]);
            assert!(!ok && out.is_empty(), "{out}");
            assert!(err.contains(said) && err.contains("--strict"), "{err}");
        }
    }
}

/// `n` as the commands print counts: thousands separated by commas.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut text = String::new();
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}
