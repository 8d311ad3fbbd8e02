//! [`Visit`]: what a whole-trace walk hands its visitor at each step,
//! whichever reader walks, and [`VisitDetail`]: what the walk is asked for.

use crate::model::{Footer, Tracepoint, TracepointHeader};

/// One step of [`TraceTree::walk_visit`](crate::tree::TraceTree::walk_visit): a node with what it holds, a
/// leaf by its header (when the walk asked for no leaf bodies), or the
/// children a depth limit folds.
#[derive(Debug, Clone, Copy)]
pub enum Visit<'a, N> {
    /// A node at `depth` (a thread's top-level tracepoints are at depth 0).
    Node {
        /// The node.
        node: N,
        /// Its depth.
        depth: usize,
        /// Its tracepoint.
        tracepoint: &'a Tracepoint<'a>,
        /// Its footer (`None` for leaves and unfinished containers).
        footer: Option<&'a Footer<'a>>,
        /// How many direct children it has, when asked for.
        children: Option<usize>,
    },
    /// A leaf at `depth`, by its header only: given instead of
    /// [`Node`](Visit::Node) to walks that asked for no leaf bodies
    /// ([`VisitDetail::leaf_bodies`]) by readers that skip them.
    Leaf {
        /// The node.
        node: N,
        /// Its depth.
        depth: usize,
        /// Its common header.
        header: TracepointHeader,
    },
    /// `count` children of a node at `depth - 1` that the walk does not
    /// enter because of its depth limit.
    Folded {
        /// How many children were not entered.
        count: usize,
        /// The depth they would have had.
        depth: usize,
    },
}

/// What a [`Visit`] walk gives with each node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VisitDetail {
    /// Each node's direct child count ([`Visit::Node`]'s `children`).
    pub child_counts: bool,
    /// Leaves whole. When false, a reader that can skip a leaf's body (the
    /// lazy reader: most tracepoints are leaves, and decoding their values
    /// is most of a walk's work) gives it as [`Visit::Leaf`], its header
    /// only; others give [`Visit::Node`] as ever. Containers always come
    /// whole.
    pub leaf_bodies: bool,
}

impl Default for VisitDetail {
    /// Every node whole, no child counts.
    fn default() -> Self {
        VisitDetail {
            child_counts: false,
            leaf_bodies: true,
        }
    }
}

impl VisitDetail {
    /// Every node whole, with its direct child count.
    pub fn with_child_counts() -> Self {
        VisitDetail {
            child_counts: true,
            ..VisitDetail::default()
        }
    }
}
