//! `tracetree diff`: the reference's cases through the command, its
//! summary, and its refusals.

use tracetree_testkit::files;

use super::tracetree_cached;

#[test]
fn diff_writes_the_references_diff_and_a_summary() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let dir = dir.join("diff");
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("cache");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let out = scratch.path().join("edits.packedtrace");
    let out = out.to_str().unwrap();
    let (left, right) = (path("edits.left.trace"), path("edits.right.trace"));

    let (ok, said, err) = tracetree_cached(&cache, &["diff", &left, &right, "-o", out]);
    assert!(ok, "{err}");
    assert!(said.is_empty(), "the summary goes to stderr: {said}");
    assert!(err.contains(&format!("wrote {out} (")), "{err}");
    assert!(err.contains("thread 0 (worker-0): "), "{err}");
    assert!(err.contains("first divergence: EditedOld at diff event 99 (left event 198, right event 198) in Thread.run"), "{err}");

    let (ok, printed, err) = tracetree_cached(&cache, &["print", "--verbose", out]);
    assert!(ok, "{err}");
    assert!(printed == std::fs::read_to_string(dir.join("edits.diff.txt")).unwrap());

    // dump names each status.
    let (ok, dumped, err) = tracetree_cached(&cache, &["dump", out]);
    assert!(ok, "{err}");
    for status in ["unchanged", "removed", "added", "edited_old", "edited_new"] {
        assert!(
            dumped.contains(&format!(",\"diff\":\"{status}\"")),
            "{status}"
        );
    }

    // Again: refused without --force, then replaced, the summary on stdout.
    let (ok, _, err) = tracetree_cached(&cache, &["diff", &left, &right, "-o", out]);
    assert!(
        !ok && err.trim_end().lines().count() == 1 && err.contains("--force"),
        "{err}"
    );
    let (ok, said, err) = tracetree_cached(
        &cache,
        &["diff", &left, &right, "-o", out, "--force", "--summary"],
    );
    assert!(ok, "{err}");
    assert!(said.contains("thread 1 (worker-1): "), "{said}");

    // A diff is not diffed unless --force says so.
    let (ok, _, err) = tracetree_cached(&cache, &["diff", out, &right, "-o", &format!("{out}.2")]);
    assert!(!ok && err.contains("is a diff itself"), "{err}");
    let (ok, _, err) = tracetree_cached(
        &cache,
        &["diff", out, out, "-o", &format!("{out}.2"), "--force"],
    );
    assert!(ok, "{err}");

    // Unmatched threads refused, with --match index by index.
    let (l, r) = (
        path("renamed-thread.left.trace"),
        path("renamed-thread.right.trace"),
    );
    let o = format!("{out}.3");
    let (ok, _, err) =
        tracetree_cached(&cache, &["diff", &l, &r, "-o", &o, "--unmatched", "error"]);
    assert!(!ok && err.contains("was not matched"), "{err}");
    let (ok, _, err) = tracetree_cached(
        &cache,
        &["diff", &l, &r, "-o", &o, "--match", "index", "--map", "x=1"],
    );
    assert!(!ok && err.contains("is not a thread index"), "{err}");
    let (ok, _, err) = tracetree_cached(
        &cache,
        &[
            "diff",
            &l,
            &r,
            "-o",
            &o,
            "--map",
            "worker-1=worker-1-rerun",
            "--force",
        ],
    );
    assert!(ok, "{err}");
    assert!(
        err.contains("(left: worker-1, right: worker-1-rerun)"),
        "{err}"
    );
}

/// A one-thread trace: `run()` calling `callMe(3)`, through
/// `callMe$default` when `wrapped`.
pub(crate) fn write_call(path: &std::path::Path, wrapped: bool) {
    use tracetree::model::{CodeLocationKind, Type};
    use tracetree::write::{
        CallOutcome, CallSpec, CodeLocationSpec, DumpWriter, MethodSpec, ThreadRecorder,
        TraceRecorder,
    };
    let at = |line| CodeLocationSpec::new(CodeLocationKind::Line, "A.kt", "A", "op", line);
    let run = MethodSpec::new("Main", "run", vec![], Type::Void);
    let wrapper = MethodSpec::new("A", "callMe$default", vec![Type::Int], Type::Void);
    let call_me = MethodSpec::new("A", "callMe", vec![Type::Int], Type::Void);
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    let mut t = writer.thread(main).unwrap();
    t.enter_call(None, CallSpec::new(&run)).unwrap();
    if wrapped {
        t.enter_call(Some(&at(1)), CallSpec::new(&wrapper).with_argument(3))
            .unwrap();
    }
    t.enter_call(Some(&at(1)), CallSpec::new(&call_me).with_argument(3))
        .unwrap();
    t.exit_call(CallOutcome::VOID).unwrap();
    if wrapped {
        t.exit_call(CallOutcome::VOID).unwrap();
    }
    t.exit_call(CallOutcome::VOID).unwrap();
    writer.save(path).unwrap();
}

#[test]
fn postprocess_shows_and_diffs_a_default_wrapper_as_its_call() {
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("cache");
    let file = |name: &str| scratch.path().join(name).to_str().unwrap().to_string();
    let (left, right) = (file("left.trace"), file("right.trace"));
    write_call(std::path::Path::new(&left), true);
    write_call(std::path::Path::new(&right), false);

    let (ok, raw, err) = tracetree_cached(&cache, &["print", &left]);
    assert!(ok, "{err}");
    assert_eq!(
        raw,
        "# Thread 1\nMain.run()\n  A.callMe$default(3)\n    callMe(3)\n"
    );
    let (ok, viewed, err) = tracetree_cached(&cache, &["print", "--postprocess", &left]);
    assert!(ok, "{err}");
    assert_eq!(viewed, "# Thread 1\nMain.run()\n  A.callMe(3)\n");
    let (ok, dumped, err) = tracetree_cached(&cache, &["dump", "--postprocess", &left]);
    assert!(ok, "{err}");
    assert_eq!(dumped.lines().count(), 2, "{dumped}");

    // Diffed through the view by default: all unchanged; as recorded, not.
    let through = file("through.packedtrace");
    let (ok, _, err) = tracetree_cached(&cache, &["diff", &left, &right, "-o", &through]);
    assert!(ok, "{err}");
    let (ok, printed, err) = tracetree_cached(&cache, &["print", &through]);
    assert!(ok, "{err}");
    // Unchanged lines carry the diff printer's blank marker.
    assert_eq!(printed, "# Thread 1\n  Main.run()\n    A.callMe(3)\n");
    let raw_diff = file("raw.packedtrace");
    let (ok, _, err) = tracetree_cached(
        &cache,
        &["diff", &left, &right, "-o", &raw_diff, "--no-postprocess"],
    );
    assert!(ok, "{err}");
    let (ok, printed, err) = tracetree_cached(&cache, &["print", &raw_diff]);
    assert!(ok, "{err}");
    assert_ne!(printed, "# Thread 1\n  Main.run()\n    A.callMe(3)\n");
}

#[test]
fn search_postprocess_finds_what_print_postprocess_shows() {
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("cache");
    let path = scratch.path().join("wrapped.trace");
    write_call(&path, true);
    let file = path.to_str().unwrap();
    // As recorded, the wrapper is a hit and `callMe` is under it.
    let (ok, raw, err) = tracetree_cached(&cache, &["search", file, "callMe"]);
    assert!(ok, "{err}");
    assert_eq!(
        raw,
        "thread 0, event 1, depth 1: Main.run > A.callMe$default(3)\n\
         thread 0, event 2, depth 2: Main.run > A.callMe$default > callMe(3)\n"
    );
    // Through the view, the pair is one call at the wrapper's place.
    let (ok, seen, err) = tracetree_cached(&cache, &["search", file, "callMe", "--postprocess"]);
    assert!(ok, "{err}");
    assert_eq!(seen, "thread 0, event 2, depth 1: Main.run > A.callMe(3)\n");
    assert!(err.contains("1 hits in 2 tracepoints"), "{err}");
    let (ok, none, err) = tracetree_cached(
        &cache,
        &["search", file, "callMe$default", "--postprocess", "--json"],
    );
    assert!(!ok && none.is_empty(), "{none}");
    assert!(err.contains("0 hits"), "{err}");
}
