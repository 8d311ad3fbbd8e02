//! Traces read without a mapping (`FileAccess::Read`): the same tree as
//! through the mapping, and a file cut short under the reader gives
//! errors, never a signal.

use std::sync::atomic::{AtomicBool, Ordering};

use tracetree::read::{EagerOptions, EagerTrace, LazyTraceReader, SidecarPolicy};
use tracetree::storage::FileAccess;

/// Opens `path` without a mapping, or says why this system cannot (a
/// failure unless skipping is allowed: `tracetree_testkit::skip`).
fn open_unmapped(path: &std::path::Path, window: Option<u64>) -> Option<LazyTraceReader> {
    let opened = LazyTraceReader::options()
        .sidecar(SidecarPolicy::Off)
        .resident_window(window)
        .file_access(FileAccess::Read)
        .open(path);
    match opened {
        Ok(reader) => Some(reader),
        Err(error) => {
            let reason = format!("no reading without a mapping here: {error}");
            tracetree_testkit::skip::cannot_run(&reason);
            None
        }
    }
}

#[test]
fn reads_without_a_mapping_give_the_tree_the_mapping_gives() {
    let dir = tempfile::tempdir().unwrap();
    let path = tracetree_testkit::synth::synth_trace(dir.path(), "unmapped", 4 << 20, 5);
    let mapped = LazyTraceReader::options()
        .sidecar(SidecarPolicy::Off)
        .open(&path)
        .unwrap();
    // With a small window (pages dropped and filled again) and without.
    for window in [Some(256 << 10), None] {
        let Some(unmapped) = open_unmapped(&path, window) else {
            return;
        };
        let nodes = tracetree_testkit::lazy::assert_same_tree(&mapped, &unmapped, "unmapped");
        assert!(nodes > 10_000, "{nodes} nodes");
    }
    // The eager loader too.
    let mut options = EagerOptions::default();
    options.file_access = FileAccess::Read;
    let eager = EagerTrace::open_with(&path, options).unwrap();
    tracetree_testkit::lazy::assert_same_tree(&mapped, &eager, "eager, unmapped");
}

#[test]
fn a_file_cut_under_an_unmapped_reader_gives_errors_not_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let path = tracetree_testkit::synth::synth_trace(dir.path(), "cut", 8 << 20, 9);
    let len = std::fs::metadata(&path).unwrap().len();
    let Some(reader) = open_unmapped(&path, Some(1 << 20)) else {
        return;
    };
    let nodes = tracetree_testkit::lazy::all_nodes(&reader);
    assert!(nodes.len() > 10_000, "{} nodes", nodes.len());
    // `cutting` is set before the file is cut, `cut` once it is: an
    // expansion counts as before the cut when `cutting` was still unset at
    // its end, as after it when `cut` was set at its start; one that ran
    // across the cut counts as neither.
    let (cutting, cut) = (AtomicBool::new(false), AtomicBool::new(false));
    let (before, after) = std::thread::scope(|scope| {
        let expander = scope.spawn(|| {
            // Random expansions, each from a cold cache (read by `pread`
            // or through the pages), until the file was cut, then more.
            let (mut before, mut after) = ((0u32, 0u32), (0u32, 0u32));
            let mut seed = 0x9E37_79B9_7F4A_7C15u64;
            let mut left_after_cut = 3_000;
            while left_after_cut > 0 {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let node = nodes[(seed >> 33) as usize % nodes.len()];
                reader.clear_cache();
                let after_cut = cut.load(Ordering::Acquire);
                let expanded = reader.node(node).and_then(|_| reader.children(node));
                let counts = if after_cut {
                    left_after_cut -= 1;
                    &mut after
                } else if !cutting.load(Ordering::Acquire) {
                    &mut before
                } else {
                    continue;
                };
                match expanded {
                    Ok(_) => counts.0 += 1,
                    Err(_) => counts.1 += 1,
                }
            }
            (before, after)
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        cutting.store(true, Ordering::Release);
        file.set_len(len / 2).unwrap();
        cut.store(true, Ordering::Release);
        expander
            .join()
            .expect("the expanding thread ended in a panic")
    });
    assert_eq!(before.1, 0, "errors before the cut: {before:?}");
    // Nodes in the lost half are read again (cold cache, pages dropped by
    // the window) and fail; those in the kept half still expand.
    assert!(after.1 > 0, "no error after the cut: {after:?}");
    assert!(after.0 > 0, "nothing expanded after the cut: {after:?}");
    // A whole walk (through the pages, where a mapping would fault past
    // the file's new end) meets the cut too.
    reader.clear_cache();
    assert!(tracetree_testkit::lazy::expand_all(&reader).is_err());
}
