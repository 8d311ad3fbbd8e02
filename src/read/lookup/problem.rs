//! What became of an index file: used, or why not (the rules of the index
//! policy, one variant each; the table of rules is in the `index` module).

pub use crate::error::IndexProblem;

/// What a reader did with a trace's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexStatus {
    /// The index file was valid and used.
    Used {
        /// Whether it ended with its footer (a crashed recorder leaves none).
        complete: bool,
    },
    /// The index was missing or broken (or a rebuild was asked for): the
    /// lookup structures were rebuilt from the data file (in parallel).
    Rebuilt(IndexProblem),
}
