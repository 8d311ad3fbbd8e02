//! The writers' hash tables, keyed by what a recorder hands over (names,
//! ids): `rustc-hash`'s Fx hash, much cheaper than SipHash and fine for keys
//! no attacker chooses.

pub(crate) use rustc_hash::{FxHashMap as FastMap, FxHashSet as FastSet};
