//! A flame graph whose one walk (a thread's, a node's) is cut into parts
//! on several cores is the one walk's, frame for frame and field for
//! field: on generated traces of wide, deep and mixed calls, for threads
//! and nodes, pruned or whole, and past `max_paths`.

use std::path::{Path, PathBuf};

use super::sandwich::{cut_sandwich, sandwich};
use super::*;
use crate::generate::{GenerateOptions, Shape, generate_file};
use crate::read::{LazyTraceReader, WalkDetail};

/// A one-thread trace of `shape` and about `size` bytes in `dir`.
fn generated(dir: &Path, shape: Shape, size: u64) -> PathBuf {
    let path = dir.join(format!("{shape}.trace"));
    let options = GenerateOptions {
        threads: 1,
        block_size: Some(64 * 1024),
        ..GenerateOptions::new(size, shape)
    };
    generate_file(&path, &options, |_| {}).unwrap();
    path
}

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap()
}

fn every_frame(node: Option<LazyNode>) -> FlameOptions {
    FlameOptions {
        node,
        min_fraction: 0.0,
        max_frames: FlameOptions::MAX_FRAMES,
        ..FlameOptions::default()
    }
}

/// Whether the walk `options` names is cut (not left whole).
fn cut(reader: &LazyTraceReader, options: &FlameOptions) -> bool {
    pool().install(|| {
        let scope = Scope::new(reader, options).unwrap();
        let frames = Frames::default();
        let [walk] = scope.walks.as_slice() else {
            panic!("one walk expected");
        };
        let root = scope
            .root_frame(reader, &mut FrameCache::new(&frames), walk)
            .unwrap();
        let Some(plan) = Plan::new(reader, std::slice::from_ref(walk), &frames).unwrap() else {
            return false;
        };
        cut_walk(reader, &plan, &frames, root, options, &|_| {})
            .unwrap()
            .is_some()
    })
}

/// The cut walk's summary equals the one walk's; returns it.
fn same(reader: &LazyTraceReader, options: &FlameOptions) -> FlameGraph {
    let walked = AtomicUsize::new(0);
    let progress = |n: u64| {
        walked.fetch_add(n as usize, Ordering::Relaxed);
    };
    let parallel = pool().install(|| flame_graph(reader, options, &progress, true).unwrap());
    let serial = flame_graph(reader, options, &|_| {}, false).unwrap();
    assert_eq!(parallel, serial);
    // Where the parts' tries reach `max_paths` together, the one walk
    // runs after the cut one.
    let walked = walked.into_inner() as u64;
    match cut(reader, options) {
        true => assert_eq!(walked, parallel.tracepoints),
        false => assert!(walked >= parallel.tracepoints),
    }
    parallel
}

#[test]
fn a_thread_cut_into_parts_gives_the_one_walk_s_graph() {
    let dir = tempfile::tempdir().unwrap();
    // Mixed: runs of siblings (the thread's call is over 4 MiB); wide: one
    // call of leaves, cut by child number; deep: recursion below the cuts.
    for (shape, size) in [
        (Shape::Mixed, 12 << 20),
        (Shape::Wide, 3 << 20),
        (Shape::Deep, 6 << 20),
    ] {
        let reader = LazyTraceReader::open(generated(dir.path(), shape, size)).unwrap();
        for options in [every_frame(None), FlameOptions::default()] {
            assert!(cut(&reader, &options), "{shape}: the walk was not cut");
            let graph = same(&reader, &options);
            assert!(graph.frames.len() > 1, "{shape}");
            assert!(!graph.truncated);
        }
    }
}

#[test]
fn a_node_cut_into_parts_gives_the_one_walk_s_graph() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, size) in [(Shape::Mixed, 12 << 20), (Shape::Wide, 3 << 20)] {
        let reader = LazyTraceReader::open(generated(dir.path(), shape, size)).unwrap();
        let thread = reader.thread_ids()[0];
        let root = reader.roots(thread).unwrap()[0];
        let options = every_frame(Some(root));
        assert!(
            cut(&reader, &options),
            "{shape}: the node's walk was not cut"
        );
        same(&reader, &options);
        // A call a few levels down, with children of its own.
        let mut inner = None;
        reader
            .walk_subtree(root, WalkDetail::Headers, |walked| {
                if walked.depth >= 2 && walked.header.tracepoint_type.is_container() {
                    inner = Some(walked.node);
                }
                Ok(inner.is_none())
            })
            .unwrap();
        if let Some(inner) = inner {
            same(&reader, &every_frame(Some(inner)));
        }
    }
}

#[test]
fn past_max_paths_the_cut_walk_gives_the_one_walk_s_graph() {
    let dir = tempfile::tempdir().unwrap();
    let reader = LazyTraceReader::open(generated(dir.path(), Shape::Mixed, 12 << 20)).unwrap();
    let whole = same(&reader, &every_frame(None));
    let paths = whole.frames.len();
    // The merged trie keeps the one walk's paths: the walk stays cut
    // where the parts in flight have room. With little room they have
    // none, and the one walk runs; either way the graphs agree.
    for max_paths in [paths - 1, paths, paths + 1, paths / 2, 7, 1] {
        let options = FlameOptions {
            max_paths,
            ..every_frame(None)
        };
        if max_paths >= paths - 1 {
            assert!(cut(&reader, &options), "{max_paths}: not cut");
        }
        let graph = same(&reader, &options);
        assert_eq!(graph.truncated, max_paths < paths - 1, "{max_paths}");
        assert_eq!(graph.total(), whole.total());
    }
}

/// The sandwich of `method` cut across cores equals the one walk's, and
/// was cut.
fn same_sandwich(reader: &LazyTraceReader, method: &str, options: &FlameOptions) {
    let parallel = pool().install(|| sandwich(reader, method, options, &|_| {}).unwrap());
    let one_core = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let serial = one_core.install(|| sandwich(reader, method, options, &|_| {}).unwrap());
    assert_eq!(parallel, serial, "{method}");
    let was_cut = pool().install(|| {
        let scope = Scope::new(reader, options).unwrap();
        let frames = Frames::default();
        let target = frames.named(method).0;
        let [walk] = scope.walks.as_slice() else {
            panic!("one walk expected");
        };
        let outer = match scope.node {
            Some(_) => None,
            None => Some(
                scope
                    .root_frame(reader, &mut FrameCache::new(&frames), walk)
                    .unwrap(),
            ),
        };
        cut_sandwich(reader, walk, &frames, target, outer, options, &|_| {})
            .unwrap()
            .is_some()
    });
    assert!(was_cut, "{method}: the sandwich's walk was not cut");
}

#[test]
fn a_sandwich_cut_into_parts_gives_the_one_walk_s() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, size) in [
        (Shape::Mixed, 12 << 20),
        (Shape::Wide, 3 << 20),
        (Shape::Deep, 6 << 20),
    ] {
        let reader = LazyTraceReader::open(generated(dir.path(), shape, size)).unwrap();
        let thread = reader.thread_ids()[0];
        let root = reader.roots(thread).unwrap()[0];
        let graph = flame_graph(&reader, &every_frame(None), &|_| {}, false).unwrap();
        // Methods at every depth: the cut nodes' own (open above parts),
        // those inside the parts, and recursive ones.
        let mut methods: Vec<String> = Vec::new();
        for depth in 1..6 {
            if let Some(frame) = graph
                .frames
                .iter()
                .filter(|f| f.depth == depth)
                .max_by_key(|f| f.total)
            {
                methods.push(frame.name.to_string());
            }
        }
        methods.dedup();
        assert!(methods.len() >= 2, "{shape}: {methods:?}");
        for method in &methods {
            for options in [
                every_frame(None),
                FlameOptions::default(),
                every_frame(Some(root)),
            ] {
                same_sandwich(&reader, method, &options);
            }
        }
        // A method the scope never calls: empty on both sides.
        same_sandwich(&reader, "no.Such.method", &every_frame(None));
    }
}

/// A zoom's calls (a path's end), planned and cut as one node's subtree,
/// give the one walk's graph, rooted at the path's frame.
#[test]
fn a_path_s_calls_cut_into_parts_give_the_one_walk_s_graph() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, size) in [(Shape::Mixed, 12 << 20), (Shape::Deep, 6 << 20)] {
        let reader = LazyTraceReader::open(generated(dir.path(), shape, size)).unwrap();
        let whole = flame_graph(&reader, &every_frame(None), &|_| {}, false).unwrap();
        let mut cut_paths = 0;
        // The widest frame at each depth: many calls, or one.
        for depth in 1..6 {
            let Some(at) = (0..whole.frames.len())
                .filter(|&i| whole.frames[i].depth == depth)
                .max_by_key(|&i| whole.frames[i].total)
            else {
                continue;
            };
            let mut path = Vec::new();
            let mut frame = &whole.frames[at];
            while let Some(parent) = frame.parent {
                path.push(frame.name.to_string());
                frame = &whole.frames[parent as usize];
            }
            path.reverse();
            let options = FlameOptions {
                path,
                ..every_frame(None)
            };
            let parallel =
                pool().install(|| flame_graph(&reader, &options, &|_| {}, true).unwrap());
            let serial = flame_graph(&reader, &options, &|_| {}, false).unwrap();
            assert_eq!(parallel, serial, "{shape} {:?}", options.path);
            assert_eq!(parallel.total(), whole.frames[at].total);
            let planned = pool().install(|| {
                let frames = Frames::default();
                let scope = Scope::new(&reader, &options)
                    .unwrap()
                    .on_path(&reader, &options.path, &frames, None)
                    .unwrap();
                Plan::new(&reader, &scope.walks, &frames).unwrap().is_some()
            });
            cut_paths += usize::from(planned);
        }
        assert!(cut_paths > 0, "{shape}: no path's calls were cut");
    }
}
