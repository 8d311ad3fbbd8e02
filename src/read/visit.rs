//! [`Visit`]: what a whole-trace walk hands its visitor at each step,
//! whichever reader walks.

use crate::model::{Footer, Tracepoint};

/// One step of [`TraceTree::walk_visit`](crate::tree::TraceTree::walk_visit): a node with what it holds, or the
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
    /// `count` children of a node at `depth - 1` that the walk does not
    /// enter because of its depth limit.
    Folded {
        /// How many children were not entered.
        count: usize,
        /// The depth they would have had.
        depth: usize,
    },
}
