//! Sidecars written and read back, stale, corrupt, racy and scratch.

use zerocopy::FromBytes;

use super::layout::*;
use super::write::*;
use super::*;
use crate::format::index::CELL_LEN;
use crate::format::{FILE_HEADER_LEN, ObjectKind};
use crate::read::lookup::problem::IndexStatus;
use crate::storage::TraceBytes;

/// The sidecar of `data` and `index` written both ways: streamed from
/// the cells (`None` if that was refused) and from built tables.
fn both_ways(data: Vec<u8>, index: Vec<u8>) -> (Option<Vec<u8>>, Vec<u8>) {
    let index = TraceBytes::from_vec(index);
    lookups_both_ways(TraceBytes::from_vec(data), Some(&index), |data| {
        crate::read::lookup::load_index(data, index.clone(), Some(1 << 16)).expect("a valid index")
    })
}

/// The sidecar of the lookups `load` makes, written both ways.
fn lookups_both_ways(
    data: TraceBytes,
    index: Option<&TraceBytes>,
    load: impl Fn(&TraceBytes) -> crate::read::lookup::LoadedIndex,
) -> (Option<Vec<u8>>, Vec<u8>) {
    let files = Files {
        data: &data,
        stamped_at: 7,
        data_stamp: Stamp::default(),
        index: index.map(|index| (index, Stamp::default())),
    };
    let status = IndexStatus::Used { complete: true };
    let write = |built: bool| {
        let loaded = load(&data);
        let context = loaded.context.build(data.clone());
        let summary = Summary {
            status: &status,
            references: loaded.references,
            repaired: 0,
            data: &loaded.data,
        };
        let file = tempfile::tempfile().unwrap();
        if built {
            loaded.lookup.build_all(data.as_slice());
        }
        if !encode(&file, &files, &loaded.lookup, &context, &summary, built).unwrap() {
            return None;
        }
        Some(TraceBytes::map_file(&file).unwrap().as_slice().to_vec())
    };
    (write(false), write(true).unwrap())
}

#[test]
fn streamed_arrays_equal_those_of_built_tables() {
    use crate::generate::raw::{SynthOptions, generate};
    let mut cases = Vec::new();
    // The last case has more containers per thread than a section
    // writer buffers.
    for (threads, bytes, block_bytes, block_cell_last, seed) in [
        (1, 1 << 20, 1 << 10, false, 1),
        (3, 1 << 20, 4 << 10, false, 2),
        (5, 1 << 20, 512, true, 3),
        (2, 1 << 20, 64 << 10, true, 4),
        (1, 6 << 20, 256 << 10, false, 5),
    ] {
        cases.push(generate(&SynthOptions {
            threads,
            bytes,
            block_bytes,
            seed,
            block_cell_last,
            crash: None,
        }));
    }
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    for name in ["all-types.trace", "multi-thread.trace"] {
        let path = testdata.join(name);
        let index = crate::read::index_path(&path);
        cases.push((std::fs::read(path).unwrap(), std::fs::read(index).unwrap()));
    }
    for (case, (data, index)) in cases.into_iter().enumerate() {
        let (streamed, built) = both_ways(data, index);
        let streamed = streamed.unwrap_or_else(|| panic!("case {case}: not streamed"));
        if case == 4 {
            let header = Header::ref_from_prefix(&built).unwrap().0;
            let thread = HEADER_LEN + 24 * header.blocks.get() as usize;
            let record = ThreadRecord::ref_from_prefix(&built[thread..]).unwrap().0;
            assert!(record.containers.get() as usize > 2 * SectionWriter::BUFFER);
        }
        assert_eq!(streamed.len(), built.len(), "case {case}");
        assert!(streamed == built, "case {case}: the sidecars differ");
    }
}

#[test]
fn a_crashed_recorders_missing_containers_stream_with_the_cells() {
    use crate::generate::raw::{Crash, SynthOptions, generate};
    for (threads, block_bytes, half_written_block, seed) in [
        (1, 1 << 10, false, 1),
        (3, 700, true, 2),
        (4, 16 << 10, false, 3),
        (2, 64 << 10, true, 4),
        (2, 700, false, 5),
    ] {
        let (data, index) = generate(&SynthOptions {
            threads,
            bytes: 1 << 20,
            block_bytes,
            seed,
            block_cell_last: false,
            crash: Some(Crash { half_written_block }),
        });
        let data = TraceBytes::from_vec(data);
        // Without the index: the rebuild's calls that never finished.
        let (streamed, built) = lookups_both_ways(data.clone(), None, |data| {
            crate::read::rebuild::rebuild_to_scratch(data, Some(1 << 16), &|_| {}, None)
                .unwrap()
                .expect("a scratch index")
        });
        // Every thread has a call never finished (its root at least).
        let header = Header::ref_from_prefix(&built).unwrap().0;
        assert!(header.unfinished.get() >= threads as u64, "seed {seed}");
        let streamed = streamed.unwrap_or_else(|| panic!("seed {seed}: not streamed"));
        assert!(streamed == built, "seed {seed}: the sidecars differ");
        // With the recorder's index (no footer; it covers every block
        // unless one was half written): the repair's finds.
        if half_written_block {
            continue;
        }
        let index = TraceBytes::from_vec(index);
        let (streamed, built) = lookups_both_ways(data, Some(&index), |data| {
            let mut loaded =
                crate::read::lookup::load_index(data, index.clone(), Some(1 << 16)).unwrap();
            let (repaired, unfinished) = loaded.lookup.repair_all(data.as_slice()).unwrap();
            assert!(
                unfinished >= threads && repaired >= unfinished,
                "seed {seed}"
            );
            loaded
        });
        let streamed = streamed.unwrap_or_else(|| panic!("seed {seed}: repair not streamed"));
        assert!(
            streamed == built,
            "seed {seed}: the repaired sidecars differ"
        );
    }
}

#[test]
fn cells_that_do_not_nest_are_not_streamed() {
    use crate::generate::raw::{SynthOptions, generate};
    let (data, mut index) = generate(&SynthOptions {
        threads: 2,
        bytes: 256 << 10,
        block_bytes: 4 << 10,
        ..SynthOptions::default()
    });
    // Swap two neighbouring container cells (one thread's): the cells
    // are no longer in post-order, which a build sorts out and a stream
    // cannot.
    let cells = &mut index[FILE_HEADER_LEN as usize..];
    let container = |k: usize| cells[CELL_LEN * k] == ObjectKind::Tracepoint as u8;
    let k = (0..cells.len() / CELL_LEN - 1)
        .find(|&k| container(k) && container(k + 1))
        .unwrap();
    let (first, second) = cells[CELL_LEN * k..CELL_LEN * (k + 2)].split_at_mut(CELL_LEN);
    first.swap_with_slice(second);
    let (streamed, _) = both_ways(data, index);
    assert!(streamed.is_none());
}

#[test]
fn records_reject_lengths_that_do_not_fit() {
    let bytes = [0u8; 64];
    let mut at = 8;
    assert!(records::<BlockRecord>(&bytes, &mut at, 3, "blocks").is_err());
    assert_eq!(at, 8);
    assert!(records::<BlockRecord>(&bytes, &mut at, u64::MAX, "blocks").is_err());
    assert!(records::<BlockRecord>(&bytes, &mut at, 2, "blocks").is_ok());
    assert_eq!(at, 56);
    // A byte count pads to 8.
    assert!(records::<u8>(&bytes, &mut at, 3, "bytes").is_ok());
    assert_eq!(at, 64);
}

#[test]
fn checksum_sees_every_byte_and_the_length() {
    let mut a = Checksum::new();
    a.bytes(b"block header and tail");
    for i in 0..21 {
        let mut changed = *b"block header and tail";
        changed[i] ^= 1;
        let mut b = Checksum::new();
        b.bytes(&changed);
        assert_ne!(a.0, b.0, "byte {i}");
    }
    let mut shorter = Checksum::new();
    shorter.bytes(b"block header and tai");
    assert_ne!(a.0, shorter.0);
}
