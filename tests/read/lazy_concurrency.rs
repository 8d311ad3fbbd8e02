//! Concurrency: eight threads expanding different and the same nodes of one
//! reader, with forgets and a small cache, all see what the eager loader
//! sees; readers of different traces coexist.

use std::sync::Arc;

use tracetree::TraceBytes;
use tracetree::common::EventId;
use tracetree::generate::raw::{self, SynthOptions};
use tracetree::read::{EagerTrace, LazyNode, LazyTraceReader, SidecarPolicy, WalkDetail};
use tracetree::tree::TraceTree;

use tracetree_testkit::lazy::{EagerIndex, Rng, open_in_memory, reference_traces};

/// The pre-order list of (event, child count) of a tree, from the eager loader.
fn eager_digest(trace: &EagerTrace) -> Vec<(EventId, usize)> {
    let mut out = Vec::new();
    for thread in trace.threads() {
        let mut stack: Vec<_> = trace.roots(thread.id).unwrap().into_iter().rev().collect();
        while let Some(id) = stack.pop() {
            let node = trace.node(id);
            out.push((node.tracepoint().event(), node.children().len()));
            stack.extend(node.children().iter().rev().copied());
        }
    }
    out
}

/// The same from the lazy reader; `variant` varies the order of requests
/// (children by pages of different sizes, forgets) without changing the
/// result.
fn lazy_digest(reader: &LazyTraceReader, variant: usize) -> Vec<(EventId, usize)> {
    let mut out = Vec::new();
    let mut rng = Rng(variant as u64 * 7919 + 1);
    for thread in reader.thread_ids() {
        let mut stack: Vec<LazyNode> = reader.roots(thread).unwrap().into_iter().rev().collect();
        while let Some(node) = stack.pop() {
            let event = reader.node(node).unwrap().tracepoint().event();
            let count = reader.child_count(node).unwrap();
            out.push((event, count));
            let page = 1 + variant * 97;
            let mut children = Vec::with_capacity(count);
            while children.len() < count {
                children.extend(reader.children_range(node, children.len(), page).unwrap());
            }
            if rng.below(50) == 0 {
                reader.forget_children(node).unwrap();
            }
            stack.extend(children.into_iter().rev());
        }
    }
    out
}

fn check_concurrent(name: &str, reader: &LazyTraceReader, eager: &EagerTrace) {
    let expected = eager_digest(eager);
    let index = EagerIndex::new(eager);
    std::thread::scope(|scope| {
        let mut workers = Vec::new();
        for variant in 0..8 {
            let expected = &expected;
            let index = &index;
            workers.push(scope.spawn(move || {
                if variant % 2 == 0 {
                    assert_eq!(
                        &lazy_digest(reader, variant),
                        expected,
                        "{name}: worker {variant}"
                    );
                } else {
                    // Random nodes by event id, racing on the same entries.
                    let mut rng = Rng(variant as u64 + 3);
                    for _ in 0..150 {
                        let id = rng.below(index.events.len());
                        let node = reader.node_by_event(index.events[id]).unwrap().unwrap();
                        let count = reader.child_count(node).unwrap();
                        assert_eq!(
                            count,
                            eager
                                .node(tracetree::read::NodeId(id as u32))
                                .children()
                                .len(),
                            "{name}"
                        );
                        let parent = reader.parent(node).unwrap();
                        assert_eq!(
                            parent.is_some(),
                            eager
                                .node(tracetree::read::NodeId(id as u32))
                                .parent()
                                .is_some(),
                            "{name}"
                        );
                    }
                }
            }));
        }
        for worker in workers {
            worker.join().unwrap();
        }
    });
}

#[test]
fn eight_threads_expand_one_reader() {
    let (data, index) = raw::generate(&SynthOptions {
        threads: 3,
        bytes: 1 << 20,
        block_bytes: 16 << 10,
        seed: 21,
        ..SynthOptions::default()
    });
    let eager = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
    for cache_bytes in [64 << 20, 32 << 10] {
        let reader = open_in_memory(&data, Some(&index), cache_bytes).unwrap();
        check_concurrent("generated", &reader, &eager);
    }
}

#[test]
fn eight_threads_expand_reference_traces_and_readers_coexist() {
    let traces: Vec<_> = reference_traces()
        .into_iter()
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name.starts_with("small") || name.starts_with("all-types")
        })
        .collect();
    let readers: Vec<(String, Arc<LazyTraceReader>, EagerTrace)> = traces
        .iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let reader = LazyTraceReader::options()
                .cache_bytes(64 << 10)
                .open(path)
                .unwrap();
            (name, Arc::new(reader), EagerTrace::open(path).unwrap())
        })
        .collect();
    // Every reader, each from its own OS thread, at once.
    std::thread::scope(|scope| {
        for (name, reader, eager) in &readers {
            scope.spawn(move || check_concurrent(name, reader, eager));
        }
    });
}

/// Pre-order (event, depth) of every thread, from `walk_thread`.
fn walked(reader: &LazyTraceReader, detail: WalkDetail) -> Vec<(EventId, usize)> {
    let mut out = Vec::new();
    for thread in reader.thread_ids() {
        reader
            .walk_thread(thread, detail, |walked| {
                out.push((walked.header.event, walked.depth));
                Ok(true)
            })
            .unwrap();
    }
    out
}

#[test]
fn expansions_and_walks_race_with_page_releases() {
    // A mapped trace with small blocks, opened with a one-byte resident
    // window: every forward read releases the pages behind it at each block
    // it enters, and the index's pages with them, while other threads read
    // the same pages.
    let (data, index) = raw::generate(&SynthOptions {
        threads: 3,
        bytes: 2 << 20,
        block_bytes: 16 << 10,
        seed: 22,
        ..SynthOptions::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("released.trace");
    std::fs::write(&path, &data).unwrap();
    std::fs::write(LazyTraceReader::index_path(&path), &index).unwrap();
    let eager = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
    let keep = LazyTraceReader::options()
        .sidecar(SidecarPolicy::Off)
        .resident_window(None)
        .open(&path)
        .unwrap();
    let expected_walk = walked(&keep, WalkDetail::Full);
    for sidecar in [SidecarPolicy::Off, SidecarPolicy::ReadWrite] {
        let reader = LazyTraceReader::options()
            .sidecar(sidecar)
            .resident_window(Some(1))
            .cache_bytes(32 << 10)
            .open(&path)
            .unwrap();
        std::thread::scope(|scope| {
            scope.spawn(|| check_concurrent("released", &reader, &eager));
            scope.spawn(|| {
                for detail in [WalkDetail::Headers, WalkDetail::Full] {
                    assert_eq!(walked(&reader, detail), expected_walk);
                }
            });
            scope.spawn(|| {
                // Every thread at once, each walker releasing.
                let per_thread = reader
                    .walk_threads(
                        WalkDetail::Full,
                        |_| Vec::new(),
                        |out, walked| {
                            out.push((walked.header.event, walked.depth));
                            Ok(true)
                        },
                    )
                    .unwrap();
                assert_eq!(per_thread.concat(), expected_walk);
            });
        });
        assert_eq!(
            reader.count_tracepoints().unwrap(),
            keep.count_tracepoints().unwrap()
        );
    }
}

/// Threads that miss the same entries at once build each of them once:
/// eight threads asking for a wide call's child count right after the
/// cache was cleared build what one thread alone builds (the first page of
/// its children and its child index), not eight times that.
#[test]
fn concurrent_misses_build_each_entry_once() {
    use std::sync::Barrier;
    use tracetree::generate::Shape;

    let dir = tempfile::tempdir().unwrap();
    let path = tracetree_testkit::files::generated(dir.path(), Shape::Wide, 1, 4 << 20, None);
    let reader = LazyTraceReader::options()
        .sidecar(SidecarPolicy::Off)
        .open(&path)
        .unwrap();
    let root = reader.roots(reader.thread_ids()[0]).unwrap()[0];
    let wide = std::iter::once(root)
        .chain(reader.children_range(root, 0, 16).unwrap())
        .max_by_key(|&node| reader.child_count(node).unwrap())
        .unwrap();
    reader.clear_cache();
    let builds = || reader.cache_stats().builds;
    let before = builds();
    let count = reader.child_count(wide).unwrap();
    let alone = builds() - before;
    assert!(
        count > 10_000 && alone >= 2,
        "{count} children, {alone} builds"
    );

    reader.clear_cache();
    let before = builds();
    let barrier = Barrier::new(8);
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                barrier.wait();
                assert_eq!(reader.child_count(wide).unwrap(), count);
            });
        }
    });
    assert_eq!(builds() - before, alone, "{:?}", reader.cache_stats());
}

/// A cache budget below the floor is raised to it, and still reads right.
#[test]
fn a_tiny_cache_budget_is_raised_to_the_floor() {
    use tracetree::read::LazyOptions;

    for path in tracetree_testkit::lazy::testdata_traces() {
        let reader = LazyTraceReader::options()
            .sidecar(SidecarPolicy::Off)
            .cache_bytes(0)
            .open(&path)
            .unwrap();
        assert_eq!(reader.cache_stats().budget, LazyOptions::MIN_CACHE_BYTES);
        let eager = EagerTrace::open(&path).unwrap();
        tracetree_testkit::lazy::assert_same_tree(&eager, &reader, "0-byte cache");
    }
}
