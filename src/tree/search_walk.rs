//! The walk a search runs: every thread of a tree walked in pre-order, the
//! threads in parallel, by names alone where the reader can (the lazy
//! reader's names walk) or every tracepoint decoded. A crate-private
//! supertrait of [`Navigate`](super::Navigate): every tree a front end
//! moves about in can be searched, and only this crate's trees are
//! `Navigate`. The implementations are the search's (`search.rs`).

use crate::common::ThreadId;
use crate::error::Result;
use crate::model::{Footer, Tracepoint};
use crate::read::WalkNode;
use crate::tree::TraceTree;

/// One tracepoint a search's walk hands over.
pub(crate) enum SearchStep<'a, N> {
    /// Read by a names walk: its header and the id it names.
    Named {
        /// The node.
        node: N,
        /// What the walk read of it.
        walked: &'a WalkNode<'a>,
    },
    /// Decoded whole.
    Visited {
        /// The node.
        node: N,
        /// Its depth (0 at the thread's top).
        depth: usize,
        /// The tracepoint.
        tracepoint: &'a Tracepoint<'a>,
        /// Its footer.
        footer: Option<&'a Footer<'a>>,
    },
}

/// Walks every thread in pre-order, the threads in parallel: `init`
/// makes each thread's state, `f` sees its nodes and returns whether
/// to go on in that thread; the states come back in thread order.
/// Names alone (`text` false) may be handed over as
/// [`SearchStep::Named`].
pub(crate) trait Walk: TraceTree + Sized {
    fn walk_searching<S: Send>(
        &self,
        text: bool,
        init: impl Fn(ThreadId) -> S + Sync,
        f: impl Fn(&mut S, SearchStep<'_, Self::Node>) -> Result<bool> + Sync,
    ) -> Result<Vec<S>>;
}
