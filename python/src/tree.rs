//! The tree a `Trace` is read as: its lazy reader, or the reader's
//! post-processed view (`open(..., postprocess=True)`, what `print
//! --postprocess` prints). Nodes, pages and searches are written once,
//! generic over [`Tree`]; [`on_tree!`] picks the tree per call (a view is
//! a borrow of the reader, made per call). A view node's handle is its raw
//! node's, so handles name the same node in both.

use tracetree::tree::{Navigate, PostNode, Postprocessed};
use tracetree::{Error, LazyNode, LazyTraceReader};

/// A node of either tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnyNode {
    /// A node of the trace as recorded.
    Raw(LazyNode),
    /// A node of the post-processed view.
    Post(PostNode<LazyNode>),
}

/// A tree a trace is read as, its nodes carried as [`AnyNode`]s.
pub trait Tree: Navigate {
    /// `node` as carried.
    fn wrap(node: Self::Node) -> AnyNode;

    /// The tree's node carried as `node`; an internal error for a node of
    /// the other tree (a trace is read as one of them from its open on).
    fn unwrap(node: AnyNode) -> tracetree::Result<Self::Node>;

    /// [`unwrap`](Self::unwrap), on the tree.
    fn own(&self, node: AnyNode) -> tracetree::Result<Self::Node> {
        Self::unwrap(node)
    }
}

impl Tree for LazyTraceReader {
    fn wrap(node: LazyNode) -> AnyNode {
        AnyNode::Raw(node)
    }

    fn unwrap(node: AnyNode) -> tracetree::Result<LazyNode> {
        match node {
            AnyNode::Raw(node) => Ok(node),
            AnyNode::Post(_) => Err(Error::Internal("a view's node read as recorded".into())),
        }
    }
}

impl Tree for Postprocessed<&LazyTraceReader> {
    fn wrap(node: PostNode<LazyNode>) -> AnyNode {
        AnyNode::Post(node)
    }

    fn unwrap(node: AnyNode) -> tracetree::Result<PostNode<LazyNode>> {
        match node {
            AnyNode::Post(node) => Ok(node),
            AnyNode::Raw(_) => Err(Error::Internal(
                "a recorded node read through the view".into(),
            )),
        }
    }
}

/// Runs `$body` with `$tree` bound to the reader `$reader` (an
/// `Arc<LazyTraceReader>` or a reference to one) as a [`Tree`]: its
/// post-processed view when `$post`, else the reader itself.
macro_rules! on_tree {
    ($post:expr, $reader:expr, |$tree:ident| $body:expr) => {{
        let reader: &tracetree::LazyTraceReader = &$reader;
        if $post {
            let view = tracetree::tree::Postprocessed::new(reader);
            let $tree = &view;
            $body
        } else {
            let $tree = reader;
            $body
        }
    }};
}

pub(crate) use on_tree;
