//! `jdk.ExecutionSample` events as one merged call tree per thread.
//!
//! Each chunk (in parallel) counts its samples by (thread key, stack key)
//! and resolves every distinct pair once, so the work per sample is one
//! event decode and one hash update. The counts are then merged, in chunk
//! order, into a trie per Java thread: a path of methods (class, name,
//! descriptor) from the outermost frame, each node counting the samples
//! passing through it; a truncated stack hangs under a root named
//! `<truncated>`. Samples that name no Java thread (a null `sampledThread`,
//! as the JVM records for a thread it is shutting down, or a thread without
//! a Java id) are kept in one more trie, written as the thread
//! [`UNKNOWN_THREAD`] after the others, so that the roots count every
//! sample with a stack. The trie is written in pre-order with children sorted by
//! `package.Class.method` then descriptor (byte order), each node a call
//! flagged [`SAMPLE_COUNT_FLAG`] whose result is its count.
//!
//! [`SAMPLE_COUNT_FLAG`]: crate::model::SAMPLE_COUNT_FLAG

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::input::JfrError;
use super::reader::Chunk;
use super::resolve::{MethodName, Resolver, StackTrace, ThreadInfo};
use super::value::Value;

/// The event type of a sample.
pub const EXECUTION_SAMPLE: &str = "jdk.ExecutionSample";

/// The name of the thread that samples naming no Java thread are kept in.
pub const UNKNOWN_THREAD: &str = "<unknown thread>";

/// The samples of one chunk, counted by distinct thread and stack.
#[derive(Debug, Default)]
pub struct ChunkSamples {
    /// Distinct (thread, stack) with their sample counts; the thread is
    /// `None` where the sample names no Java thread.
    pub counts: Vec<(Option<Arc<ThreadInfo>>, Arc<StackTrace>, u64)>,
    /// Samples, counted in `counts`, that name no Java thread.
    pub without_thread: u64,
    /// Samples whose stack trace is missing or empty.
    pub without_stack: u64,
    /// What stopped the chunk's events early.
    pub damage: Option<JfrError>,
}

/// Counts the samples of `chunk`.
pub fn chunk_samples(chunk: &Chunk<'_>) -> ChunkSamples {
    let mut result = ChunkSamples::default();
    let Some(class) = chunk.metadata.class_named(EXECUTION_SAMPLE) else {
        return result;
    };
    let sample = chunk.metadata.class(class);
    let (Some(thread_field), Some(stack_field)) =
        (sample.field("sampledThread"), sample.field("stackTrace"))
    else {
        return result;
    };
    // Keyed by (thread, stack) references; `None` for a null thread.
    let mut keys: FxHashMap<(Option<i64>, i64), u64> = FxHashMap::default();
    result.damage = chunk.for_each_event(class, |_, fields| {
        let thread = fields.get(thread_field).and_then(Value::as_ref_key);
        match fields.get(stack_field).and_then(Value::as_ref_key) {
            Some(stack) => *keys.entry((thread, stack)).or_default() += 1,
            None => result.without_stack += 1,
        }
    });
    let mut resolver = Resolver::new(chunk);
    let mut counts: Vec<_> = keys.into_iter().collect();
    counts.sort_unstable();
    for ((thread, stack), count) in counts {
        let Some(stack) = resolver.stack(stack).filter(|s| !s.frames.is_empty()) else {
            result.without_stack += count;
            continue;
        };
        let thread = thread
            .and_then(|key| resolver.thread(key))
            .filter(|t| t.java_id.is_some());
        if thread.is_none() {
            result.without_thread += count;
        }
        result.counts.push((thread, stack, count));
    }
    result
}

/// A node of a merged sample tree.
#[derive(Debug)]
pub struct SampleNode {
    /// The method (`None` for the `<truncated>` root).
    pub method: Option<Arc<MethodName>>,
    /// Samples passing through the node.
    pub samples: u64,
    /// Children by method.
    children: FxHashMap<Option<Arc<MethodName>>, usize>,
}

/// The merged sample tree of one thread.
#[derive(Debug)]
pub struct SampleTree {
    /// The name of the thread it is written as.
    pub name: String,
    /// Node 0 is a virtual root above the thread's outermost frames.
    nodes: Vec<SampleNode>,
}

impl SampleTree {
    /// An empty tree, for the thread `name`.
    pub fn new(name: String) -> Self {
        SampleTree {
            name,
            nodes: vec![SampleNode {
                method: None,
                samples: 0,
                children: FxHashMap::default(),
            }],
        }
    }

    /// Adds `count` samples of `stack`.
    pub fn add(&mut self, stack: &StackTrace, count: u64) {
        let mut node = 0;
        if stack.truncated {
            node = self.child(node, None, count);
        }
        for method in stack.frames.iter().rev() {
            node = self.child(node, Some(method.clone()), count);
        }
    }

    fn child(&mut self, parent: usize, method: Option<Arc<MethodName>>, count: u64) -> usize {
        let next = self.nodes.len();
        let index = *self.nodes[parent]
            .children
            .entry(method.clone())
            .or_insert(next);
        if index == next {
            self.nodes.push(SampleNode {
                method,
                samples: 0,
                children: FxHashMap::default(),
            });
        }
        self.nodes[index].samples += count;
        index
    }

    /// Visits the nodes in pre-order, children sorted by full name then
    /// descriptor: `enter(node)` then, after its subtree, `leave(node)`.
    pub fn walk<E>(
        &self,
        mut enter: impl FnMut(&SampleNode) -> Result<(), E>,
        mut leave: impl FnMut(&SampleNode) -> Result<(), E>,
    ) -> Result<(), E> {
        // Each entry: a node and its sorted children still to visit.
        let mut stack: Vec<(usize, std::vec::IntoIter<usize>)> =
            vec![(0, self.sorted_children(0).into_iter())];
        while let Some((node, children)) = stack.last_mut() {
            let node = *node;
            match children.next() {
                Some(child) => {
                    enter(&self.nodes[child])?;
                    stack.push((child, self.sorted_children(child).into_iter()));
                }
                None => {
                    stack.pop();
                    if node != 0 {
                        leave(&self.nodes[node])?;
                    }
                }
            }
        }
        Ok(())
    }

    fn sorted_children(&self, node: usize) -> Vec<usize> {
        let mut children: Vec<_> = self.nodes[node].children.values().copied().collect();
        let key = |i: &usize| {
            let node = &self.nodes[*i];
            match &node.method {
                Some(m) => (format!("{}.{}", m.class, m.name), m.descriptor.clone()),
                None => (TRUNCATED.to_string(), String::new()),
            }
        };
        children.sort_by_cached_key(key);
        children
    }
}

/// The name of the root a truncated stack hangs under.
pub const TRUNCATED: &str = "<truncated>";
