//! The command line's edges: stdin and pipes, folders, event ids from
//! `print` to `children`, one thread numbering, plain words, and `index`'s
//! workers and temporary files.

use std::path::Path;
use std::process::{Command, Stdio};
use tracetree::LazyTraceReader;
use tracetree_testkit::files;

use crate::commands::bundled;
use crate::tracetree;

/// Runs the binary with `stdin` written to its standard input and its
/// cache in `cache`: whether it succeeded, its stdout and stderr.
fn with_stdin(cache: &Path, args: &[&str], stdin: &[u8]) -> (bool, String, String) {
    let output = crate::tracetree_with_stdin(cache, args, stdin);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn stdin_reads_like_the_file_and_caches_nothing() {
    let (dir, file) = bundled();
    let cache = dir.path().join("cache");
    let bytes = std::fs::read(&file).unwrap();
    let before = crate::listing(dir.path());
    for command in [
        &["print", "--verbose"][..],
        &["dump"],
        &["search", "-", "start"],
    ] {
        let mut from_file: Vec<&str> = command.to_vec();
        let mut from_stdin: Vec<&str> = command.to_vec();
        if command[0] == "search" {
            from_file[1] = &file;
        } else {
            from_file.push(&file);
            from_stdin.push("-");
        }
        let (ok, expected, err) = tracetree(&from_file);
        assert!(ok, "{err}");
        let (ok, out, err) = with_stdin(&cache, &from_stdin, &bytes);
        assert!(ok, "{from_stdin:?}: {err}");
        assert_eq!(out, expected, "{from_stdin:?}");
    }
    let (ok, out, err) = with_stdin(&cache, &["info", "-"], &bytes);
    assert!(ok, "{err}");
    assert!(out.starts_with("file: - (stdin)\n"), "{out}");
    assert!(
        out.contains("index: none (the trace was read from a pipe)"),
        "{out}"
    );
    // Nothing beside the trace, nothing in the cache.
    assert_eq!(crate::listing(dir.path()), before);
    assert!(
        !cache.exists() || crate::listing(&cache).is_empty(),
        "{:?}",
        crate::listing(&cache)
    );
}

#[test]
fn a_fifo_reads_like_the_file() {
    let (dir, file) = bundled();
    let fifo = dir.path().join("trace.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no mkfifo");
        return;
    }
    let bytes = std::fs::read(&file).unwrap();
    let (_, expected, _) = tracetree(&["print", &file]);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, bytes).unwrap())
    };
    let (ok, out, err) = tracetree(&["print", fifo.to_str().unwrap()]);
    // The writer blocks until a reader opens the FIFO: joined only when
    // the command read it, so that a failure fails rather than hangs.
    assert!(ok, "{err}");
    writer.join().unwrap();
    assert_eq!(out, expected);
}

#[test]
fn index_refuses_stdin_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(files::testdata("multi-thread.trace")).unwrap();
    let (ok, out, err) = with_stdin(dir.path(), &["index", "-"], &bytes);
    assert!(!ok && out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not stdin or a pipe"), "{err}");
}

/// Runs `tracetree` on `file` with each reading command, lazy and eager,
/// and checks it fails with the one line `FILE: not a trace: FOUND`.
fn refused_as_not_a_trace(cache: &Path, file: &str, shown: &str, found: &str) {
    for args in [
        &["print", file][..],
        &["print", "--eager", file],
        &["info", file],
        &["dump", file],
        &["search", file, "main"],
    ] {
        let (ok, out, err) = crate::tracetree_cached(cache, args);
        assert!(!ok && out.is_empty(), "{args:?}: {out}");
        assert_eq!(
            err,
            format!("tracetree: {shown}: not a trace: {found}\n"),
            "{args:?}"
        );
    }
}

#[test]
fn an_empty_file_is_said_to_be_one() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.trace");
    std::fs::write(&empty, b"").unwrap();
    let cache = dir.path().join("cache");
    let name = empty.to_str().unwrap();
    refused_as_not_a_trace(&cache, name, name, "an empty file");
}

#[test]
fn dev_null_and_empty_stdin_are_named_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    if Path::new("/dev/null").exists() {
        refused_as_not_a_trace(&cache, "/dev/null", "/dev/null", "an empty file");
    }
    let (ok, out, err) = with_stdin(&cache, &["print", "-"], b"");
    assert!(!ok && out.is_empty());
    assert_eq!(err, "tracetree: -: not a trace: an empty file\n");
}

#[test]
fn a_text_file_is_said_to_be_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("x.txt");
    std::fs::write(&text, "hello, world\nthis is no trace\n").unwrap();
    let cache = dir.path().join("cache");
    let name = text.to_str().unwrap();
    refused_as_not_a_trace(
        &cache,
        name,
        name,
        "neither the v22 magic nor a .flow, Blinky, TPTP or JFR recording",
    );
    // `index` reads the file as a trace without asking what it is.
    let (ok, _, err) = crate::tracetree_cached(&cache, &["index", name]);
    assert!(!ok);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("tracetree: {name}: not a trace")),
        "{err}"
    );
}

#[test]
fn a_folder_is_said_to_be_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    for eager in [false, true] {
        let mut args = vec!["print", dir.path().to_str().unwrap()];
        if eager {
            args.push("--eager");
        }
        let (ok, _, err) = tracetree(&args);
        assert!(!ok);
        assert!(err.contains("is a directory"), "{err}");
        assert!(!err.contains("No such device"), "{err}");
    }
}

/// The event ids `print --ids` puts before the lines, and the lines
/// without them.
fn split_ids(text: &str) -> (Vec<i32>, String) {
    let mut ids = Vec::new();
    let mut plain = String::new();
    for line in text.lines() {
        let line = match line.split_once('\t') {
            Some((id, rest)) if id.starts_with('#') => {
                ids.push(id[1..].parse().unwrap());
                rest
            }
            Some(("", rest)) => rest,
            _ => line,
        };
        plain.push_str(line);
        plain.push('\n');
    }
    (ids, plain)
}

#[test]
fn print_ids_leads_to_children() {
    let (_dir, file) = bundled();
    let (_, reference, _) = tracetree(&["print", &file, "--verbose"]);
    let expected = std::fs::read_to_string(files::testdata("multi-thread.trace.txt")).unwrap();
    assert_eq!(reference, expected, "the default stays the reference text");
    for depth in [None, Some("1")] {
        let mut args = vec!["print", &file, "--ids"];
        let mut plain_args = vec!["print", &file];
        if let Some(depth) = depth {
            args.extend(["--depth", depth]);
            plain_args.extend(["--depth", depth]);
        }
        let (ok, out, err) = tracetree(&args);
        assert!(ok, "{err}");
        let (ids, plain) = split_ids(&out);
        let (_, reference, _) = tracetree(&plain_args);
        assert_eq!(plain, reference, "--ids adds prefixes only ({depth:?})");
        if depth.is_none() {
            let (_, dump, _) = tracetree(&["dump", &file]);
            let dumped: Vec<i32> = dump
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .map(|v| v["event_id"].as_i64().unwrap() as i32)
                .collect();
            assert_eq!(ids, dumped);
        }
    }
    // The second line's id opens that call.
    let (_, out, _) = tracetree(&["print", &file, "--ids"]);
    let (ids, _) = split_ids(&out);
    let (ok, children, err) = tracetree(&["children", &file, "--node", &ids[0].to_string()]);
    assert!(ok, "{err}");
    assert!(children.contains("children 0.."), "{children}");
}

#[test]
fn children_pages_on_and_counts_one_child() {
    let (_dir, file) = bundled();
    // Event 0 calls 8 things.
    let (ok, out, err) = tracetree(&["children", &file, "--node", "0", "--count", "3"]);
    assert!(ok, "{err}");
    assert!(out.contains("children 0..3 of 8:"), "{out}");
    assert!(out.ends_with("... 5 more: --from 3\n"), "{out}");
    let (_, last, _) = tracetree(&["children", &file, "--node", "0", "--from", "3"]);
    assert!(
        last.contains("children 3..8 of 8:") && !last.contains("more:"),
        "{last}"
    );
    // The loop with event id 7 runs 3 iterations of one call each.
    let (ok, out, err) = tracetree(&["children", &file, "--node", "7"]);
    assert!(ok, "{err}");
    assert!(out.contains("(1 child)"), "{out}");
    assert!(!out.contains("(1 children)"), "{out}");
}

#[test]
fn negative_event_ids_reach_the_command() {
    let (_dir, file) = bundled();
    let (ok, _, err) = tracetree(&["children", &file, "--node", "-1"]);
    assert!(!ok);
    assert!(err.contains("event id -1"), "{err}");
    assert!(!err.contains("unexpected argument"), "{err}");
}

#[test]
fn every_command_numbers_threads_alike() {
    let (dir, file) = bundled();
    let out_file = dir.path().join("stacks.folded");
    let out_file = out_file.to_str().unwrap();
    let commands: [&[&str]; 5] = [
        &["print", &file],
        &["print", &file, "--eager"],
        &["dump", &file],
        &["search", &file, "start"],
        &["export", &file, "--format", "folded", "-o", out_file],
    ];
    let mut errors = Vec::new();
    for command in commands {
        let mut args = command.to_vec();
        args.extend(["--thread", "99"]);
        let (ok, out, err) = tracetree(&args);
        assert!(!ok, "{args:?} accepted an unknown thread: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        errors.push(err);
    }
    assert!(errors.iter().all(|e| *e == errors[0]), "{errors:#?}");
    assert!(errors[0].contains("no thread 99 (its threads: 0, 1, 2, 3;"));
    // `info`'s thread 0 is `print`'s `# Thread 1`, which `--thread 0` selects.
    let (_, info, _) = tracetree(&["info", &file]);
    assert!(
        info.contains("  thread 0 (main): 1 block; printed as `# Thread 1`"),
        "{info}"
    );
    let (ok, out, _) = tracetree(&["print", &file, "--thread", "0"]);
    assert!(ok && out.starts_with("# Thread 1 (main)\n"), "{out}");
    for command in ["print", "dump", "search", "export", "info"] {
        let (_, help, _) = tracetree(&[command, "--help"]);
        assert!(help.contains("# Thread N"), "{command} --help: {help}");
    }
}

#[test]
fn index_caps_its_workers() {
    let (dir, file) = bundled();
    let (ok, _, err) = tracetree(&["index", &file, "--threads", "5000"]);
    assert!(ok, "{err}");
    assert!(err.contains("instead of 5000"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!crate::listing(dir.path()).iter().any(|n| n.contains("tmp")));
}

#[test]
fn a_failed_index_write_leaves_no_temporary_file() {
    let (dir, file) = bundled();
    // The index's place is taken by a folder: the rename fails.
    let index = LazyTraceReader::index_path(Path::new(&file));
    std::fs::remove_file(&index).unwrap();
    std::fs::create_dir(&index).unwrap();
    std::fs::write(index.join("keep"), b"").unwrap();
    let before = crate::listing(dir.path());
    let (ok, _, err) = tracetree(&["index", &file]);
    assert!(!ok, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(crate::listing(dir.path()), before);
}

/// Sends `signal` (a `kill` name: `STOP`, `INT`) to process `pid`; whether
/// the process was there to receive it.
fn send(pid: u32, signal: &str) -> bool {
    Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Whether process `pid` has a file of `dir` open that has no name yet
/// (Linux lists an `O_TMPFILE` file as `DIR/#INODE (deleted)`).
fn writes_unnamed_file_in(pid: u32, dir: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .any(|target| {
            target.parent() == Some(dir) && target.to_string_lossy().ends_with(" (deleted)")
        })
}

#[test]
fn an_interrupted_index_leaves_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let real_dir = dir.path().canonicalize().unwrap();
    let trace = dir.path().join("big.trace");
    let trace_name = trace.to_str().unwrap();
    let (ok, _, err) = tracetree(&["gen", trace_name, "--size", "64MB"]);
    assert!(ok, "{err}");
    let index = LazyTraceReader::index_path(&trace);
    std::fs::remove_file(&index).unwrap();
    let data = std::fs::read(&trace).unwrap();
    // SIGKILL too: the index has no name until it is whole.
    for (signal, number) in [("INT", 2), ("TERM", 15), ("KILL", 9)] {
        // The signal goes to a child stopped while it writes the index
        // (the file open, no name yet, nothing in place): it then arrives
        // mid-work, however fast the rebuild is. A child that ends first
        // is run again.
        let mut caught = None;
        for _ in 0..50 {
            let mut child = Command::new(env!("CARGO_BIN_EXE_tracetree"))
                .env("TRACETREE_CACHE_DIR", dir.path().join("cache"))
                .args(["index", trace_name])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let pid = child.id();
            while child.try_wait().unwrap().is_none() && !writes_unnamed_file_in(pid, &real_dir) {
                std::thread::yield_now();
            }
            let mid_work = send(pid, "STOP")
                && writes_unnamed_file_in(pid, &real_dir)
                && !index.exists()
                && !crate::listing(dir.path()).iter().any(|n| n.contains("tmp"));
            if !mid_work {
                send(pid, "CONT");
                child.wait().unwrap();
                let _ = std::fs::remove_file(&index);
                continue;
            }
            assert!(send(pid, signal), "kill -{signal} {pid} failed");
            send(pid, "CONT");
            caught = Some(child.wait().unwrap());
            break;
        }
        let Some(status) = caught else {
            panic!("`index` ended each time before SIG{signal} could reach it mid-work");
        };
        // The handler removed what was named and ended the process as the
        // signal does by default.
        assert_eq!(status.signal(), Some(number), "SIG{signal}: {status}");
        let left: Vec<String> = crate::listing(dir.path())
            .into_iter()
            .filter(|n| n.contains("tmp"))
            .collect();
        assert!(left.is_empty(), "SIG{signal} left {left:?}");
        if signal == "KILL" {
            assert!(!index.exists(), "SIGKILL mid-work left an index");
        } else if index.exists() {
            // The write ended before the handler did: then it is whole.
            let (ok, _, err) = tracetree(&["index", trace_name, "--check"]);
            assert!(ok, "SIG{signal}: the index in place is not whole: {err}");
            std::fs::remove_file(&index).unwrap();
        }
        assert!(
            std::fs::read(&trace).unwrap() == data,
            "SIG{signal} changed the trace"
        );
    }
}

#[test]
fn index_check_says_what_differs_in_words() {
    let (_dir, file) = bundled();
    let index = LazyTraceReader::index_path(Path::new(&file));
    let bytes = std::fs::read(&index).unwrap();
    // Without its last three cells (the footer kept).
    let footer = 21 + 8;
    let mut cut = bytes[..bytes.len() - footer - 3 * 21].to_vec();
    cut.extend_from_slice(&bytes[bytes.len() - footer..]);
    std::fs::write(&index, cut).unwrap();
    let (ok, _, err) = tracetree(&["index", &file, "--check"]);
    assert!(!ok);
    assert!(err.contains("broken index: it does not list"), "{err}");
    assert!(!err.contains("IndexCell") && !err.contains('{'), "{err}");
}

#[test]
fn info_describes_the_index_on_disk_now() {
    let (dir, file) = bundled();
    let cache = dir.path().join("cache");
    let info = || {
        let (ok, out, err) = crate::tracetree_cached(&cache, &["info", &file]);
        assert!(ok, "{err}");
        out
    };
    assert!(info().contains("(valid, used)"));
    let index = LazyTraceReader::index_path(Path::new(&file));
    let good = std::fs::read(&index).unwrap();
    // Replaced by a broken one: not the cached description of the old one.
    std::fs::write(&index, b"not an index").unwrap();
    let out = info();
    assert!(
        out.contains("not used") && out.contains("rebuilt from the data"),
        "{out}"
    );
    let out = info();
    assert!(
        out.contains("an earlier run rebuilt it from the data"),
        "{out}"
    );
    assert!(!out.contains("sidecar of a rebuild"), "{out}");
    std::fs::write(&index, &good).unwrap();
    assert!(info().contains("(valid, used)"));
}
