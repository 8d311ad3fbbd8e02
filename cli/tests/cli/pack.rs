//! `tracetree pack`, and packed traces given to the other commands.

use std::path::Path;
use tracetree::LazyTraceReader;
use tracetree_testkit::files;

use super::tracetree_cached;

#[test]
fn packed_traces_answer_every_command_as_their_trace() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let source = files::testdata("multi-thread.trace");
    let trace = dir.path().join("multi-thread.trace");
    std::fs::copy(&source, &trace).unwrap();
    std::fs::copy(
        LazyTraceReader::index_path(&source),
        LazyTraceReader::index_path(&trace),
    )
    .unwrap();
    let trace = trace.to_str().unwrap();
    let packed = dir.path().join("multi.packedtrace");
    let packed = packed.to_str().unwrap();

    let (ok, said, err) = tracetree_cached(&cache, &["pack", trace, "-o", packed]);
    assert!(ok, "{err}");
    assert!(said.starts_with(&format!("wrote {packed} (")), "{said}");
    let commands = [
        &["dump"][..],
        &["print"],
        &["print", "--eager"],
        &["children", "--node", "3"],
    ];
    assert_same_answers(&cache, packed, trace, &commands);
    let (ok, info, err) = tracetree_cached(&cache, &["info", packed]);
    assert!(ok, "{err}");
    assert!(info.contains("packed trace: info.txt"), "{info}");
    assert!(info.contains("read in place"), "{info}");
    // `print` and `dump` read the data through and kept those lookups.
    assert!(
        info.contains("!trace.idx not needed: the lookups were made by reading"),
        "{info}"
    );

    // Packing again needs --force; the refusal is one line.
    let (ok, _, err) = tracetree_cached(&cache, &["pack", trace, "-o", packed]);
    assert!(!ok && err.trim_end().lines().count() == 1 && err.contains("--force"));

    // Unpacked by `import`, to the same bytes.
    let unpacked = dir.path().join("unpacked.trace");
    let (ok, _, err) = tracetree_cached(
        &cache,
        &["import", packed, "-o", unpacked.to_str().unwrap()],
    );
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read(&unpacked).unwrap(),
        std::fs::read(&source).unwrap()
    );
    assert_eq!(
        std::fs::read(LazyTraceReader::index_path(&unpacked)).unwrap(),
        std::fs::read(LazyTraceReader::index_path(&source)).unwrap()
    );
}

/// Runs each of `commands` on `packed` and on `trace`: the same output.
fn assert_same_answers(cache: &Path, packed: &str, trace: &str, commands: &[&[&str]]) {
    for command in commands {
        let run = |file: &str| {
            let mut args = vec![command[0], file];
            args.extend(&command[1..]);
            let (ok, out, err) = tracetree_cached(cache, &args);
            assert!(ok, "{args:?}: {err}");
            out
        };
        assert_eq!(run(packed), run(trace), "{command:?}");
    }
}

/// Runs `tracetree pack TRACE -o PACKED`, which must succeed; its stderr.
fn pack(cache: &Path, trace: &Path, packed: &Path) -> String {
    let (ok, _, err) = tracetree_cached(
        cache,
        &[
            "pack",
            trace.to_str().unwrap(),
            "-o",
            packed.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    err
}

#[test]
fn a_trace_without_its_index_is_packed_with_a_rebuilt_one() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let trace = dir.path().join("bare.trace");
    std::fs::copy(files::testdata("multi-thread.trace"), &trace).unwrap();
    let packed = dir.path().join("bare.packedtrace");
    let err = pack(&cache, &trace, &packed);
    assert!(err.contains("has no index"), "{err}");
    assert!(
        !LazyTraceReader::index_path(&trace).exists(),
        "nothing written beside the trace"
    );
    let (ok, info, err) = tracetree_cached(&cache, &["info", packed.to_str().unwrap()]);
    assert!(ok && info.contains("(valid, used)"), "{info}{err}");
}

#[test]
fn a_damaged_pack_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let packed = dir.path().join("cut.packedtrace");
    let trace = files::testdata("multi-thread.trace");
    pack(&cache, &trace, &packed);
    let bytes = std::fs::read(&packed).unwrap();
    std::fs::write(&packed, &bytes[..bytes.len() / 2]).unwrap();
    for command in ["info", "dump", "print"] {
        let (ok, _, err) = tracetree_cached(&cache, &[command, packed.to_str().unwrap()]);
        assert!(!ok, "{command}");
        assert_eq!(err.trim_end().lines().count(), 1, "{command}: {err}");
        assert!(err.contains("cut.packedtrace"), "{err}");
    }
}

/// The recorder's own packs (entries deflated at level 0, made here by the
/// JDK's `ZipOutputStream`, as the recorder makes them) are read in place
/// too: every command answers as for the trace, and nothing is unpacked
/// into the cache.
#[test]
fn recorder_packs_are_read_in_place_without_a_copy_in_the_cache() {
    if let Err(why) = tracetree::storage::TraceBytes::paging_available() {
        eprintln!("SKIPPED: level-0 packs are not read in place here: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let trace = files::testdata("multi-thread.trace");
    let packed = dir.path().join("recorded.packedtrace");
    let index = LazyTraceReader::index_path(&trace);
    if !files::jdk_pack(
        "deflate0",
        &packed,
        "recorded\n",
        &trace,
        Some(&index),
        None,
    ) {
        return;
    }
    let (packed, trace) = (packed.to_str().unwrap(), trace.to_str().unwrap());
    let commands = [
        &["dump"][..],
        &["print", "--verbose"],
        &["children", "--node", "3"],
    ];
    assert_same_answers(&cache, packed, trace, &commands);
    let (ok, said, err) = tracetree_cached(&cache, &["info", packed]);
    assert!(ok, "{err}");
    assert!(
        said.contains("trace.trace (") && said.contains("deflated)"),
        "{said}"
    );
    assert!(said.contains("; read in place"), "{said}");
    assert!(!err.contains("imported"), "{err}");
    let cached: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(cached, ["lookups"], "nothing but lookups in the cache");
}
