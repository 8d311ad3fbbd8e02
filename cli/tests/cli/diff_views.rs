//! Seeing a diff from the command line: `search --diff` and `export
//! --diff`, the folded export's two columns, and the one-line error on a
//! trace that is not a diff.

use tracetree_testkit::diffs::diff_pair;

use super::tracetree_cached;

#[test]
fn search_and_export_keep_the_changes_of_a_diff() {
    let scratch = tempfile::tempdir().unwrap();
    let pair = diff_pair(scratch.path(), 80_000, 2, 0.03);
    let cache = scratch.path().join("cache");
    let diff = pair.diff.to_str().unwrap();
    let left = pair.left.to_str().unwrap();
    let sum = |f: fn(&tracetree::diff::ThreadSummary) -> u64| -> u64 {
        pair.summary.threads.iter().map(f).sum()
    };
    let (added, removed, edited) = (sum(|t| t.added), sum(|t| t.removed), sum(|t| t.edited));

    // A bare --diff after the trace lists every change, no pattern needed.
    let (ok, every, err) = tracetree_cached(&cache, &["search", diff, "--diff", "--max", "100000"]);
    assert!(ok, "{err}");
    let changes = added + removed + 2 * edited;
    assert_eq!(every.lines().count() as u64, changes, "{err}");
    assert!(err.contains(&format!("{changes} hits")), "{err}");
    // Repeated or a comma list: the same.
    let (ok, listed, _) = tracetree_cached(&cache, &["search", diff, "--diff", "added,removed"]);
    let (ok2, repeated, _) = tracetree_cached(
        &cache,
        &["search", diff, "--diff", "added", "--diff", "removed"],
    );
    assert!(ok && ok2);
    assert_eq!(listed, repeated);
    assert_eq!(listed.lines().count() as u64, added + removed);
    let (ok, json, _) = tracetree_cached(&cache, &["search", diff, "--diff", "edited", "--json"]);
    assert!(ok);
    assert_eq!(json.lines().count() as u64, 2 * edited);
    for line in json.lines() {
        let hit: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(hit["line"].as_str().unwrap().starts_with("! "), "{line}");
    }

    // The folded export of a diff has two columns, LEFT and RIGHT.
    let folded = scratch.path().join("diff.folded");
    let out = folded.to_str().unwrap();
    let (ok, _, err) = tracetree_cached(&cache, &["export", diff, "--format", "folded", "-o", out]);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&folded).unwrap();
    let columns = |text: &str| -> (u64, u64) {
        text.lines().fold((0, 0), |(l, r), line| {
            let mut words = line.rsplitn(3, ' ');
            let right: u64 = words.next().unwrap().parse().unwrap();
            let left: u64 = words.next().unwrap().parse().unwrap();
            (l + left, r + right)
        })
    };
    let unchanged = sum(|t| t.unchanged);
    let (l, r) = columns(&text);
    assert_eq!(
        (l - unchanged, r - unchanged),
        (removed + edited, added + edited)
    );
    // With --diff added: only the right column, the added tracepoints.
    let (ok, _, err) = tracetree_cached(
        &cache,
        &[
            "export", diff, "--format", "folded", "--diff", "added", "-o", out, "--force",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(
        columns(&std::fs::read_to_string(&folded).unwrap()),
        (0, added)
    );

    // A trace that is not a diff: a one-line error.
    for args in [
        &["search", left, "--diff", "added"][..],
        &[
            "export", left, "--format", "chrome", "--diff", "-o", out, "--force",
        ][..],
    ] {
        let (ok, said, err) = tracetree_cached(&cache, args);
        assert!(!ok && said.is_empty(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("not a diff trace"), "{err}");
    }
    let (ok, _, err) = tracetree_cached(&cache, &["search", diff, "--diff", "moved"]);
    assert!(!ok);
    assert!(
        err.contains("no change \"moved\"") && err.contains("added, removed, edited"),
        "{err}"
    );
    // Without --diff, the pattern is required.
    let (ok, _, err) = tracetree_cached(&cache, &["search", diff]);
    assert!(!ok && err.contains("PATTERN"), "{err}");
    // --help shows how.
    let (ok, help, _) = tracetree_cached(&cache, &["search", "--help"]);
    assert!(
        ok && help.contains("--diff        (every change of a diff)"),
        "{help}"
    );
}
