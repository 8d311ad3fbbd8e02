//! Held-out-style checks of the `tracetree` command on damaged and hostile
//! files: `index` then `index --check` passes and rebuilds exactly the
//! cells the independent validator finds; `info` reports what a crashed
//! recorder's trace lost; `print` shows unfinished calls; every failure is
//! a non-zero exit with a one-line error, never a panic.

use std::path::Path;

use tracetree::LazyTraceReader;
use tracetree::generate::Shape;

use tracetree_testkit::heldout;
use tracetree_testkit::heldout::validator;

use crate::tracetree;

/// Runs a command that may fail: no panic, and a failure is one line.
fn run_any(args: &[&str], what: &str) -> (bool, String) {
    let (ok, out, err) = tracetree(args);
    assert!(
        !err.contains("panicked"),
        "{what}: {args:?} panicked: {err}"
    );
    if !ok {
        // Warnings about what the open left out may come first.
        let mut lines = err.trim_end().lines();
        let error = lines.next_back().unwrap_or_default();
        assert!(
            error.starts_with("tracetree: ")
                && !error.starts_with("tracetree: warning: ")
                && lines.all(|line| line.starts_with("tracetree: warning: ")),
            "{what}: {args:?}: not a one-line error: {err:?}"
        );
    }
    (ok, out)
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `index` rebuilds the cells of the data's complete blocks, and `--check`
/// then passes.
fn rebuild_and_check(path: &Path, walked: &validator::Walked, what: &str) {
    let p = path_str(path);
    let (ok, _, err) = tracetree(&["index", p]);
    assert!(ok, "{what}: index: {err}");
    let (ok, out, err) = tracetree(&["index", p, "--check"]);
    assert!(ok, "{what}: index --check: {out}{err}");
    let (cells, footer) =
        validator::index_cells(&std::fs::read(LazyTraceReader::index_path(path)).unwrap()).unwrap();
    assert!(footer, "{what}: the rebuilt index has its footer");
    validator::same_cells(&cells, &walked.cells).unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn index_rebuilds_what_the_validator_finds_and_info_reports_losses() {
    let dir = tempfile::tempdir().unwrap();
    let source = heldout::streamed(dir.path(), "src", Shape::Mixed, 5, 96, 30_000, 9);
    let data = std::fs::read(&source).unwrap();
    let index = std::fs::read(LazyTraceReader::index_path(&source)).unwrap();
    let full = validator::validate(&data, &index).unwrap();
    let path = dir.path().join("t.trace");
    let p = path_str(&path);

    // Index deleted, cut, or with a bad cell.
    let cut = index.len() / 3;
    let mut flipped = index.clone();
    flipped[16 + 21 * 40 + 7] ^= 0x10;
    for (what, index) in [
        ("deleted", None),
        ("cut", Some(&index[..cut])),
        ("flipped", Some(&flipped[..])),
    ] {
        std::fs::write(&path, &data).unwrap();
        match index {
            Some(index) => std::fs::write(LazyTraceReader::index_path(&path), index).unwrap(),
            None => {
                let _ = std::fs::remove_file(LazyTraceReader::index_path(&path));
            }
        }
        let (ok, out) = run_any(&["dump", p], what);
        assert!(ok, "{what}");
        let found = heldout::parse_jsonl(out.as_bytes());
        heldout::assert_same(&found, &full.nodes, what);
        rebuild_and_check(&path, &full, what);
    }

    // Data cut at points spread over the file: a crashed recorder's trace.
    let mut seen_unfinished = false;
    for k in 1..12 {
        let len = 16 + (data.len() - 16) * k / 12 + k;
        let walked = validator::walk(&data[..len]).unwrap();
        let what = format!("data cut to {len}");
        std::fs::write(&path, &data[..len]).unwrap();
        std::fs::write(LazyTraceReader::index_path(&path), &index).unwrap();
        let (ok, info) = run_any(&["info", p], &what);
        assert!(ok, "{what}");
        let dropped = len - walked.complete_end;
        assert!(info.contains("no end marker"), "{what}: {info}");
        if dropped > 0 {
            // The streamed trace's block order follows its threads'
            // timing: a cut may leave a single byte of a block.
            let bytes = match dropped {
                1 => "1 byte".to_string(),
                _ => format!("{dropped} bytes"),
            };
            assert!(
                info.contains(&format!("its {bytes} to the end of the data were not")),
                "{what}: {info}"
            );
        }
        if walked.unfinished > 0 {
            seen_unfinished = true;
            assert!(
                info.contains(&format!(
                    "{} call(s) or loop(s) not finished",
                    walked.unfinished
                )),
                "{what}: {info}"
            );
            let (ok, text) = run_any(&["print", p], &what);
            assert!(ok && text.contains("<unfinished method>"), "{what}");
        }
        let (ok, out) = run_any(&["dump", p], &what);
        assert!(ok, "{what}");
        heldout::assert_same(&heldout::parse_jsonl(out.as_bytes()), &walked.nodes, &what);
        let (ok, out) = run_any(&["dump", "--eager", p], &what);
        assert!(ok, "{what}");
        heldout::assert_same(&heldout::parse_jsonl(out.as_bytes()), &walked.nodes, &what);
        rebuild_and_check(&path, &walked, &what);
    }
    assert!(seen_unfinished);
}

/// Hostile files: every command fails cleanly or succeeds, never panics.
#[test]
fn hostile_files_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.trace");
    let p = path_str(&path);
    let header = {
        let mut h = 0x706E_5471_24EE_5F70i64.to_be_bytes().to_vec();
        h.extend(22i64.to_be_bytes());
        h
    };
    let mut files: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("header only", header.clone()),
        ("header + EOF", [&header[..], &[12]].concat()),
        (
            "bad version",
            [&header[..8], &23i64.to_be_bytes()[..], &[12]].concat(),
        ),
    ];
    // A block with a string of a huge length, an access path of a huge
    // count, a method call with a huge argument count, deep values.
    let block = |payload: &[u8]| [&header[..], &[10, 0, 0, 0, 0], payload, &[11, 12]].concat();
    files.push(("huge utf", block(&[5, 0, 0, 0, 1, 0xFF, 0xFF, b'a'])));
    files.push((
        "huge count",
        block(&[6, 0, 0, 0, 1, 0x7F, 0xFF, 0xFF, 0xFF, 0]),
    ));
    let mut call = vec![
        8, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF, 0,
    ];
    call.extend([0, 0, 0, 0]); // method 0 (never written)
    call.extend([0xFF, 0xFF, 0xFF, 0xFF]); // receiver null
    call.extend([0x7F, 0xFF, 0xFF, 0xFF]); // arguments
    files.push(("huge argument count", block(&call)));
    let mut deep = vec![8, 10, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF];
    for _ in 0..100_000 {
        deep.extend([0, 0, 0, 0, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFE]); // array of 1 element
    }
    files.push(("deeply nested values", block(&deep)));
    let mut rng = 0x1234_5678_9ABC_DEF1u64;
    for n in [1usize, 7, 100, 5000] {
        let mut bytes = header.clone();
        for _ in 0..n {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            bytes.push(rng as u8);
        }
        files.push(("random bytes after the header", bytes.clone()));
        files.push(("random bytes", bytes[16..].to_vec()));
    }
    for (what, bytes) in &files {
        for index in [None, Some(vec![0u8; 10]), Some(bytes.clone())] {
            std::fs::write(&path, bytes).unwrap();
            let _ = std::fs::remove_file(dir.path().join("h.trace.ttlookup"));
            match &index {
                Some(index) => std::fs::write(LazyTraceReader::index_path(&path), index).unwrap(),
                None => {
                    let _ = std::fs::remove_file(LazyTraceReader::index_path(&path));
                }
            }
            for args in [
                &["info", p][..],
                &["info", "--eager", p],
                &["print", p],
                &["dump", p],
                &["dump", "--eager", p],
                &["children", "--node", "0", p],
                &["children", "--node=-1", "--from", "99999999999", p],
                &["index", p, "--check"],
                &["index", p],
            ] {
                run_any(args, what);
            }
        }
    }
    let (ok, _) = run_any(
        &["info", path_str(&dir.path().join("missing.trace"))],
        "missing",
    );
    assert!(!ok);
}
