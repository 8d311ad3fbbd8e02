//! What a tracepoint tells its children's lines: the text of a call
//! depends on whether its direct parent is a call of the same class. Shared
//! by the printer ([`text`](super::text)) and the plan that cuts a tree
//! into parts ([`plan`](super::plan)), which carries each part's ancestors.

use crate::common::MethodId;
use crate::model::{Tracepoint, TracepointBody};

/// What a tracepoint's text needs to know about its direct parent: whether a
/// static call is made from inside its own class decides whether the class
/// prints (`check(i ➜ 3)` inside `Account.values`, but `Account.values(…)`
/// inside `RefKt.run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Parent {
    /// None: a thread's top-level tracepoint.
    #[default]
    TopLevel,
    /// A call of this method.
    Call(MethodId),
    /// A loop or a loop iteration (or, for [`Parent::of`], any tracepoint
    /// but a call). A call directly inside one is not "called from its
    /// defining class", whatever the enclosing method.
    Other,
}

impl Parent {
    /// The parent information `tracepoint` gives its children.
    pub fn of(tracepoint: &Tracepoint<'_>) -> Parent {
        match tracepoint.body {
            TracepointBody::MethodCall { method, .. } => Parent::Call(method),
            _ => Parent::Other,
        }
    }
}
