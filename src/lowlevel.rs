//! The byte-level pieces the readers are built from, gathered for tools
//! that check, repair or rewrite trace files at the level of their bytes
//! (and for the tests that check the readers independently). The readers
//! and writers of [`read`](crate::read) and [`write`](crate::write) are
//! the API; these are their parts.

/// Big-endian primitives over byte slices and writers: the decoders'
/// [`ByteReader`](bytes::ByteReader).
pub mod bytes {
    pub use crate::format::bytes::*;
}

/// Objects: decoding one at a time, peeking at an object's kind and id.
pub mod object {
    pub use crate::format::object::*;
}

/// The skipper: finds where an object ends without building it.
pub mod skip {
    pub use crate::format::skip::*;
}

/// Blocks: the one block-framing step every reader shares.
pub mod block {
    pub use crate::read::block::*;
}

/// The lookup sidecar's layout constants.
pub mod sidecar {
    pub use crate::read::lookup::sidecar::{
        OPENED_MAGIC, SAMPLED_BLOCKS, SIDECAR_MAGIC, SIDECAR_VERSION,
    };
}
