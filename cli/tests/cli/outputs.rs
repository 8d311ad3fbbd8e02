//! Where commands write and read: devices, FIFOs and links written in
//! place, `-o -`, inputs from pipes, exit codes, `--strict`, messages.

use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::process::Command;

use crate::commands::bundled;
use crate::tracetree;

/// Runs the binary with `stdin` as its standard input: its exit code,
/// stdout and stderr.
fn run_with_stdin(args: &[&str], stdin: &[u8]) -> (i32, Vec<u8>, String) {
    let cache = tempfile::tempdir().unwrap();
    let output = crate::tracetree_with_stdin(cache.path(), args, stdin);
    (
        output.status.code().unwrap_or(-1),
        output.stdout,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs the binary: its exit code, stdout and stderr.
fn run_code(args: &[&str]) -> (i32, String, String) {
    let (code, out, err) = run_with_stdin(args, b"");
    (code, String::from_utf8_lossy(&out).into_owned(), err)
}

/// A Blinky text trace whose one call, `demo.A.run()`, never returns.
const OPEN_CALL: &[u8] =
    b"$$method$$,1,run,demo/A,1\n$enter$,10,1,-1,0,-2,,,\n$$$,1,4,0,1,x,10,$enter$,()V\n";

/// A Blinky text trace of one call, `demo.A.run()`.
const BLINKY: &[u8] = b"$$method$$,1,run,demo/A,1\n$enter$,10,1,-1,0,-2,,,\n\
    $exit$,11,1,-1,0,-4,,,\n$$$,1,4,0,1,x,10,$enter$,()V\n$$$,4,4,0,1,x,11,$exit$\n";

#[test]
fn dev_null_is_written_through_and_stays_a_device() {
    let (_dir, file) = bundled();
    for args in [
        &[
            "export",
            &file,
            "--format",
            "folded",
            "-o",
            "/dev/null",
            "--force",
        ][..],
        &["export", &file, "--format", "chrome", "-o", "/dev/null"][..],
        &["pack", &file, "-o", "/dev/null", "--force"][..],
    ] {
        let (ok, out, err) = tracetree(args);
        assert!(ok, "{args:?}: {err}");
        assert!(out.starts_with("wrote /dev/null"), "{out}");
        let kind = std::fs::symlink_metadata("/dev/null").unwrap().file_type();
        assert!(kind.is_char_device(), "{args:?} replaced /dev/null");
    }
    let (ok, out, _) = tracetree(&["export", &file, "--format", "folded", "-o", "/dev/null"]);
    let folded = out.split(", ").last().unwrap().to_string();
    assert!(ok && folded == "811 bytes)\n", "bytes counted: {out}");
    // A trace is two files: not written to a device.
    let (ok, _, err) = tracetree(&["gen", "/dev/null", "--size", "1MB", "--force"]);
    assert!(
        !ok && err.contains("/dev/null: not a regular file"),
        "{err}"
    );
    assert!(
        std::fs::symlink_metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
}

#[test]
fn a_fifo_is_written_through_to_its_reader() {
    let (dir, file) = bundled();
    let fifo = dir.path().join("stacks.fifo");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let (_, expected, _) = {
        let out = dir.path().join("stacks.folded");
        let result = tracetree(&[
            "export",
            &file,
            "--format",
            "folded",
            "-o",
            out.to_str().unwrap(),
        ]);
        (result.0, std::fs::read(&out).unwrap(), result.2)
    };
    for force in [false, true] {
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                std::fs::File::open(&fifo)
                    .unwrap()
                    .read_to_end(&mut bytes)
                    .unwrap();
                bytes
            })
        };
        let mut args = vec![
            "export",
            &file,
            "--format",
            "folded",
            "-o",
            fifo.to_str().unwrap(),
        ];
        if force {
            args.push("--force");
        }
        let (ok, _, err) = tracetree(&args);
        assert!(ok, "{err}");
        assert_eq!(reader.join().unwrap(), expected, "--force {force}");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }
}

#[test]
fn a_link_is_followed_and_its_target_replaced() {
    let (dir, file) = bundled();
    let target = dir.path().join("target.folded");
    let link = dir.path().join("link.folded");
    std::fs::write(&target, b"old").unwrap();
    std::os::unix::fs::symlink("target.folded", &link).unwrap();
    let link_arg = link.to_str().unwrap();
    let args = ["export", &file, "--format", "folded", "-o", link_arg];
    let (ok, _, err) = tracetree(&args);
    assert!(!ok && err.contains("exists (give --force"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    let (ok, _, err) = tracetree(&[&args[..], &["--force"]].concat());
    assert!(ok, "{err}");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(std::fs::read_to_string(&target).unwrap().contains("main;"));
    // A link to nothing yet: its target is made.
    std::fs::remove_file(&target).unwrap();
    let (ok, _, err) = tracetree(&["pack", &file, "-o", link_arg]);
    assert!(ok, "{err}");
    assert!(target.is_file() && link.is_symlink());
    let (ok, out, err) = tracetree(&["info", link_arg]);
    assert!(ok && out.contains("packed trace"), "{out}{err}");
}

#[test]
fn dash_o_dash_writes_standard_output_or_says_why_not() {
    let (dir, file) = bundled();
    let folded = dir.path().join("stacks.folded");
    let (ok, _, _) = tracetree(&[
        "export",
        &file,
        "--format",
        "folded",
        "-o",
        folded.to_str().unwrap(),
    ]);
    assert!(ok);
    let (code, out, err) = run_with_stdin(&["export", &file, "--format", "folded", "-o", "-"], b"");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, std::fs::read(&folded).unwrap());
    assert!(
        err.contains("wrote - ("),
        "the summary goes to stderr: {err}"
    );
    let (code, out, err) = run_with_stdin(
        &[
            "export",
            &file,
            "--format",
            "folded",
            "-o",
            "/dev/stdout",
            "--force",
        ],
        b"",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        std::fs::read(&folded).unwrap(),
        "no summary in the data"
    );
    assert!(
        std::fs::symlink_metadata("/dev/stdout")
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let (code, out, err) = run_with_stdin(&["pack", &file, "-o", "-"], b"");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(b"PK\x03\x04"), "a ZIP on stdout");
    for args in [
        &["export", &file, "--format", "parquet", "-o", "-"][..],
        &["gen", "-o", "-", "--size", "1MB"][..],
        &["import", &file, "-o", "-"][..],
    ] {
        let (code, _, err) = run_code(args);
        assert_eq!(code, 1, "{args:?}");
        assert!(
            err.starts_with("tracetree: ") && err.contains("-o - (standard output) cannot take"),
            "{err}"
        );
    }
    assert!(!dir.path().join("-").exists(), "no file named -");
}

#[test]
fn missing_output_folders_fail_for_every_format() {
    let (dir, file) = bundled();
    let missing = dir.path().join("missing/out");
    let missing = missing.to_str().unwrap();
    for format in ["folded", "speedscope", "parquet"] {
        let (ok, _, err) = tracetree(&["export", &file, "--format", format, "-o", missing]);
        assert!(!ok && err.contains("does not exist"), "{format}: {err}");
    }
    let (ok, _, err) = tracetree(&["pack", &file, "-o", missing]);
    assert!(!ok && err.contains("does not exist"), "{err}");
    assert!(!dir.path().join("missing").exists());
}

#[test]
fn foreign_inputs_are_read_from_pipes_and_named_as_given() {
    let (code, out, err) = run_with_stdin(&["print", "-"], BLINKY);
    assert_eq!(code, 0, "{err}");
    assert_eq!(String::from_utf8_lossy(&out), "# Thread 1\nA.run()\n");
    assert!(err.contains("imported - (blinky)"), "{err}");
    assert!(!err.contains("/proc/self"), "{err}");
    let (code, out, err) = run_with_stdin(&["search", "-", "run"], BLINKY);
    assert_eq!(code, 0, "{err}");
    assert!(String::from_utf8_lossy(&out).contains("A.run()"));
    // An empty stdin, /dev/null: named as given, said not to be a trace.
    let (code, _, err) = run_with_stdin(&["print", "-"], b"");
    assert_eq!(code, 1);
    assert_eq!(err, "tracetree: -: not a trace: an empty file\n");
    let (code, _, err) = run_code(&["import", "/dev/null", "-o", "x.trace"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("/dev/null:") && !err.contains("/proc/self"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello world\n").unwrap();
    let (code, _, err) = run_code(&["info", text.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("notes.txt: not a trace"), "{err}");
    assert_eq!(crate::listing(dir.path()), ["notes.txt"]);
}

#[test]
fn search_exits_as_grep_does() {
    let (_dir, file) = bundled();
    let (code, out, _) = run_code(&["search", &file, "run"]);
    assert!(code == 0 && !out.is_empty());
    let (code, out, _) = run_code(&["search", &file, "no-such-name-anywhere"]);
    assert!(code == 1 && out.is_empty());
    let (code, _, err) = run_code(&["search", "/no/such/trace", "run"]);
    assert_eq!(code, 2, "{err}");
    let (_, help, _) = tracetree(&["search", "--help"]);
    assert!(help.contains("Exit status"), "{help}");
}

#[test]
fn strict_fails_an_import_with_unfinished_calls() {
    let dir = tempfile::tempdir().unwrap();
    // run() entered and never left.
    let blinky = dir.path().join("open.blinky");
    std::fs::write(&blinky, OPEN_CALL).unwrap();
    let source = blinky.to_str().unwrap();
    let cache = dir.path().join("cache");
    for _ in 0..2 {
        // Imported now, then from the cache: the same verdict.
        let (ok, _, err) = crate::tracetree_cached(&cache, &["--strict", "print", source]);
        assert!(!ok, "{err}");
        assert!(err.contains("1 unfinished call"), "{err}");
        let (ok, out, _) = crate::tracetree_cached(&cache, &["print", source]);
        assert!(ok && out.contains("A.run()"));
    }
    let output = dir.path().join("out.trace");
    let (ok, _, err) = tracetree(&["--strict", "import", source, "-o", output.to_str().unwrap()]);
    assert!(!ok && err.contains("--strict"), "{err}");
    assert!(!output.exists(), "nothing left behind");
    let (code, _, _) = run_with_stdin(&["--strict", "info", "-"], &std::fs::read(&blinky).unwrap());
    assert_eq!(code, 1);
}

#[test]
fn gen_refuses_what_it_cannot_write_in_one_line_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("h.trace");
    let out = out.to_str().unwrap();
    for (args, said) in [
        (&["--threads", "1000000"][..], "out of 1..=4096"),
        (&["--threads", "1000"][..], "each of the 1,000 threads"),
        (&["--block-size", "1"][..], "out of 1 KB..=64 MB"),
    ] {
        let (ok, _, err) = tracetree(&[&["gen", out, "--size", "1MB"][..], args].concat());
        assert!(
            !ok && err.lines().count() == 1 && err.contains(said),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(crate::listing(dir.path()), Vec::<String>::new(), "{args:?}");
    }
    let (ok, _, err) = tracetree(&["gen", out, "--size", "99999999999999999999999"]);
    assert!(
        !ok && err.contains("more bytes than a 64-bit count holds"),
        "{err}"
    );
    let (ok, _, err) = tracetree(&["gen", out, "--size", "100TB"]);
    assert!(!ok && err.contains("over 64 TB"), "{err}");
    // Small blocks: written, with a warning that the size is off.
    let (ok, said, err) = tracetree(&["gen", "-o", out, "--size", "1MB", "--block-size", "1KB"]);
    assert!(ok, "{err}");
    assert!(
        said.contains("2 threads") && said.contains("blocks of 1,024 bytes"),
        "{said}"
    );
    assert!(
        err.contains("warning: wrote") && err.contains("--size asked 1,048,576"),
        "{err}"
    );
    assert_eq!(crate::listing(dir.path()), ["h.trace", "h.trace.idx"]);
}

#[test]
fn search_hits_stay_one_line_and_json_has_one_object_per_hit() {
    let dir = tempfile::tempdir().unwrap();
    // A Blinky trace whose call's argument holds a line feed.
    let blinky = dir.path().join("nl.blinky");
    std::fs::write(
        &blinky,
        b"$$method$$,1,run,demo/A,1\n$enter$,10,1,-1,0,-2,,,\n$exit$,11,1,-1,0,-4,,,\n\
          $$$,1,4,0,1,x,10,$enter$,()V\n$$$,4,4,0,1,x,11,$exit$\n",
    )
    .unwrap();
    let source = blinky.to_str().unwrap();
    let (code, out, err) = run_code(&["search", source, "run", "--json"]);
    assert_eq!(code, 0, "{err}");
    let hit: serde_json::Value = serde_json::from_str(out.trim_end()).unwrap();
    assert_eq!(hit["thread"], 0);
    assert_eq!(hit["depth"], 0);
    assert!(hit["eventId"].is_i64() && hit["path"].as_array().unwrap().is_empty());
    assert_eq!(hit["line"], "A.run()");
    // The bundled trace: one line per hit in both forms.
    let (_dir, file) = bundled();
    let (_, text, _) = run_code(&["search", &file, "run"]);
    let (_, json, _) = run_code(&["search", &file, "run", "--json"]);
    assert_eq!(text.lines().count(), json.lines().count());
    for line in json.lines() {
        let hit: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(text.contains(hit["line"].as_str().unwrap()));
    }
}

#[test]
fn info_counts_unfinished_calls_and_words_read_right() {
    let dir = tempfile::tempdir().unwrap();
    let blinky = dir.path().join("open.blinky");
    std::fs::write(&blinky, OPEN_CALL).unwrap();
    let source = blinky.to_str().unwrap();
    let cache = dir.path().join("cache");
    let (ok, _, err) = crate::tracetree_cached(&cache, &["print", source]);
    assert!(ok, "{err}");
    assert!(
        err.contains("imported 1 thread, 1 call, 1 unfinished call"),
        "{err}"
    );
    let trace = dir.path().join("open.trace");
    let (ok, _, err) = tracetree(&["import", source, "-o", trace.to_str().unwrap()]);
    assert!(ok, "{err}");
    for eager in [false, true] {
        let mut args = vec!["info", trace.to_str().unwrap()];
        if eager {
            args.push("--eager");
        }
        let (ok, out, err) = tracetree(&args);
        assert!(ok, "{err}");
        assert!(
            out.contains("unfinished: 1 call or loop"),
            "--eager {eager}: {out}"
        );
    }
    // A v22 trace with a call left open: whole, but unfinished. Every
    // command that reads it fails under --strict, and writes nothing.
    let path = trace.to_str().unwrap();
    let written = dir.path().join("written");
    let out = written.to_str().unwrap();
    let commands: [&[&str]; 8] = [
        &["info"],
        &["print"],
        &["dump"],
        &["children", "--node", "0"],
        &["search", "run"],
        &["export", "--format", "folded", "-o", out],
        &["pack", "-o", out],
        &["print", "--eager"],
    ];
    for command in commands {
        let mut args = vec![command[0], path, "--strict"];
        args.extend(&command[1..]);
        let (ok, _, err) = tracetree(&args);
        assert!(
            !ok && err.contains("1 call or loop never ended"),
            "{command:?}: {err}"
        );
        assert!(!written.exists(), "{command:?} wrote its output");
    }
    let (_, info, _) = crate::tracetree_cached(&cache, &["info", source]);
    assert!(!info.contains("unmatched tickets"), "{info}");
    let (_bundled_dir, bundled) = bundled();
    let (ok, _, err) = tracetree(&["info", &bundled, "--eager", "--memory-budget", "1KB"]);
    assert!(!ok && err.contains("--memory-budget of 1.0 KiB"), "{err}");
}

#[test]
fn help_lists_every_command_and_flags_only_where_they_act() {
    let (_, top, _) = tracetree(&["--help"]);
    for command in [
        "info", "print", "dump", "index", "children", "import", "gen", "search", "export", "pack",
        "view", "diff",
    ] {
        let (_, help, _) = tracetree(&[command, "--help"]);
        assert!(help.contains("Examples:\n  tracetree "), "{command}");
        let about = top.lines().next().unwrap();
        assert!(about.contains(command), "{command} in {about:?}");
        let reads = !matches!(command, "gen" | "index" | "import");
        assert_eq!(help.contains("--cache-dir"), reads, "{command}");
        assert_eq!(
            help.contains("--memory-budget"),
            matches!(command, "info" | "print" | "dump")
        );
    }
    let (_, gen_help, _) = tracetree(&["gen", "--help"]);
    assert!(gen_help.contains("-o, --output"), "{gen_help}");
    assert!(!gen_help.contains("--strict"), "{gen_help}");
}
