//! A fast hasher for the writers' tables, keyed by what a recorder hands
//! over (names, ids): a multiply-rotate hash over 8-byte words, like the Rust
//! compiler's own. Not resistant to chosen collisions, which no trace is a
//! source of.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A hash map with [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
/// A hash set with [`FastHasher`].
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// Hashes words by rotating, xoring and multiplying.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u16(&mut self, value: u16) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, BuildHasherDefault};

    fn hash(bytes: &[u8]) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(bytes)
    }

    #[test]
    fn different_bytes_hash_apart() {
        let samples: [&[u8]; 6] = [b"", b"a", b"b", b"ab", b"abcdefgh", b"abcdefghi"];
        let hashes: FastSet<u64> = samples.iter().map(|s| hash(s)).collect();
        assert_eq!(hashes.len(), samples.len());
        // Trailing zero bytes still count (the length is hashed too).
        assert_ne!(hash(b"a"), hash(b"a\0"));
    }
}
