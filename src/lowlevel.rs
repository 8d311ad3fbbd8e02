//! The byte-level pieces the readers are built from, gathered for tools
//! that check, repair or rewrite trace files at the level of their bytes
//! (and for the tests that check the readers independently). The readers
//! and writers of [`read`](crate::read) and [`write`](crate::write) are
//! the API; these are their parts.
//!
//! **No stability promise**: what this module holds, and how, may change
//! in any release, as the readers' internals do. It names each item it
//! gives; the modules they come from stay private.

pub use crate::common::{IndexCell, ObjectKind};
pub use crate::format::Object;
pub use crate::read::block::DecodedBlock;
pub use crate::read::rebuild::RebuiltIndex;
