//! Hostile bytes through the lazy reader: corrupted or cut index and data
//! files open (or fail) with typed errors, and expanding every node gives
//! `Ok` or a typed error, never a panic.

use tracetree::generate::raw::{self, Crash, SynthOptions};

use tracetree_testkit::lazy::{expand_all, open_in_memory};

/// A small multi-block, multi-thread trace with calls spanning blocks.
fn sample(crash: Option<Crash>) -> (Vec<u8>, Vec<u8>) {
    raw::generate(&SynthOptions {
        threads: 2,
        bytes: 6 << 10,
        block_bytes: 512,
        seed: 9,
        block_cell_last: false,
        crash,
    })
}

fn open_and_expand(data: &[u8], index: &[u8], cache_bytes: usize) {
    let opened = open_in_memory(data, Some(index), cache_bytes);
    if let Ok(reader) = opened
        && let Err(error) = expand_all(&reader)
    {
        assert!(!error.to_string().is_empty());
    }
}

#[test]
fn every_index_corruption_is_rebuilt_or_read_without_panic() {
    let (data, index) = sample(None);
    let mut bytes = index.clone();
    for position in 0..index.len() {
        for flip in [0xFF, 0x01] {
            bytes[position] ^= flip;
            open_and_expand(&data, &bytes, 1 << 20);
            bytes[position] ^= flip;
        }
    }
    for len in (0..index.len()).step_by(5) {
        open_and_expand(&data, &index[..len], 1 << 20);
    }
}

#[test]
fn every_data_corruption_gives_ok_or_typed_errors() {
    for crash in [
        None,
        Some(Crash {
            half_written_block: false,
        }),
    ] {
        let (data, index) = sample(crash);
        let mut bytes = data.clone();
        for position in (0..data.len()).step_by(3) {
            let flip = [0xFF, 0x01][position % 2];
            bytes[position] ^= flip;
            open_and_expand(&bytes, &index, 1 << 20);
            bytes[position] ^= flip;
        }
        for len in (0..data.len()).step_by(7) {
            open_and_expand(&data[..len], &index, 1 << 20);
        }
    }
}
