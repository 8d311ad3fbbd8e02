//! The tree a `Trace` is read as: its lazy reader, or the reader's
//! post-processed view (`open(..., postprocess=True)`, what `print
//! --postprocess` prints). Nodes, pages and searches are written once,
//! generic over [`Tree`]; [`on_tree!`] picks the tree per call. A trace
//! opened with `postprocess=True` has one view, made with it and shared by
//! every call ([`Reading`]), so the view's answers about reference objects
//! are worked out once; a call asking for the view of a trace opened
//! without it makes one for itself. A view node's handle is its raw node's,
//! so handles name the same node in both.

use std::ops::Deref;
use std::sync::Arc;

use tracetree::tree::{Navigate, PostNode, Postprocessed};
use tracetree::{Error, LazyNode, LazyTraceReader};

/// The post-processed view of a shared reader.
pub type View = Postprocessed<Arc<LazyTraceReader>>;

/// A trace's reader, with its post-processed view when the trace was
/// opened with `postprocess=True`.
#[derive(Clone)]
pub struct Reading {
    pub reader: Arc<LazyTraceReader>,
    pub view: Option<Arc<View>>,
}

impl Reading {
    /// `reader`, with its view when `postprocess`.
    pub fn new(reader: Arc<LazyTraceReader>, postprocess: bool) -> Self {
        let view = postprocess.then(|| Arc::new(Postprocessed::new(Arc::clone(&reader))));
        Reading { reader, view }
    }
}

impl Deref for Reading {
    type Target = LazyTraceReader;

    fn deref(&self) -> &LazyTraceReader {
        &self.reader
    }
}

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

impl Tree for View {
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

/// Runs `$body` with `$tree` bound to the [`Reading`] `$reader` (or a
/// reference to one) as a [`Tree`]: its post-processed view when `$post`
/// (the trace's own, else one made for the call), else the reader itself.
macro_rules! on_tree {
    ($post:expr, $reader:expr, |$tree:ident| $body:expr) => {{
        let reading: &crate::tree::Reading = &$reader;
        if $post {
            let made: crate::tree::View;
            let $tree: &crate::tree::View = match &reading.view {
                Some(view) => view,
                None => {
                    made =
                        tracetree::tree::Postprocessed::new(std::sync::Arc::clone(&reading.reader));
                    &made
                }
            };
            $body
        } else {
            let $tree: &tracetree::LazyTraceReader = &reading.reader;
            $body
        }
    }};
}

pub(crate) use on_tree;
