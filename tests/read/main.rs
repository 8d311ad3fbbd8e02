//! The readers: the lazy reader against the eager one, the index policy and
//! its repair, the sidecar, the rebuild, and damaged or hostile input.

mod damaged_agreement;
mod diff_search;
mod heldout_lazy;
mod hostile_input;
mod iterate;
mod lazy_concurrency;
mod lazy_deferred_sidecar;
mod lazy_equivalence;
mod lazy_hostile;
mod lazy_index_policy;
mod lazy_random_access;
mod lazy_sidecar;
mod navigate;
mod opening;
mod packed;
mod random_mutations;
mod random_reads;
mod rebuild;
mod refresh;
mod search;
mod sibling_cuts;
mod stream_lazy;
mod unmapped;
mod zero_tail;
