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
