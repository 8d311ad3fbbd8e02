//! Hostile bytes: every truncation and every single-byte corruption of a
//! sample trace gives `Ok` or a typed error, never a panic.

use tracetree::TraceBytes;
use tracetree::lowlevel::IndexCell;
use tracetree::lowlevel::RebuiltIndex;
use tracetree::read::EagerTrace;
use tracetree::read::RebuildOptions;

use tracetree_testkit::files;

/// A multi-block, multi-thread sample: a bundled trace when present, else
/// the reference streaming trace.
fn sample() -> Option<(Vec<u8>, Vec<u8>)> {
    let bundled = files::testdata("all-types.trace");
    let path = if bundled.exists() {
        bundled
    } else {
        files::reference_traces()?.join("all-types-stream.trace")
    };
    let data = std::fs::read(&path).unwrap();
    let mut index_path = path.into_os_string();
    index_path.push(".idx");
    let index = std::fs::read(index_path).unwrap();
    Some((data, index))
}

/// Small chunks, so corruption also hits the speculative block discovery.
const REBUILD: RebuildOptions = RebuildOptions::new().with_chunk_size(509);

#[test]
fn every_truncation_of_the_data_file_loads_what_is_complete() {
    let Some((data, _)) = sample() else { return };
    let full = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
    for len in 0..data.len() {
        let result = EagerTrace::load(TraceBytes::from_vec(data[..len].to_vec()));
        if len < 16 {
            assert!(result.is_err(), "a {len}-byte file has no header");
            continue;
        }
        // A cut file is a crashed recorder's: it opens with its complete blocks.
        let trace = result.unwrap_or_else(|e| panic!("cut at {len}: {e}"));
        assert!(trace.report().missing_eof);
        let rebuilt = RebuiltIndex::build(&data[..len], REBUILD).unwrap();
        assert_eq!(rebuilt.report, *trace.report(), "cut at {len}");
        assert!(trace.nodes().len() <= full.nodes().len());
    }
}

#[test]
fn every_single_byte_corruption_of_the_data_file_is_ok_or_a_typed_error() {
    let Some((data, _)) = sample() else { return };
    let mut bytes = data.clone();
    for position in 0..data.len() {
        let original = data[position];
        for replacement in [
            original ^ 0xFF,
            original ^ 0x80,
            original.wrapping_add(1),
            0,
            0x7F,
        ] {
            if replacement == original {
                continue;
            }
            bytes[position] = replacement;
            // Either outcome is fine; the error must render with an offset.
            let eager = EagerTrace::load(TraceBytes::from_vec(bytes.clone()));
            if let Err(error) = &eager {
                assert!(error.to_string().contains("offset"), "{error}");
            }
            // The rebuild reads the same bytes the same way.
            let rebuilt = RebuiltIndex::build(&bytes, REBUILD);
            assert_eq!(rebuilt.is_ok(), eager.is_ok(), "corrupted byte {position}");
        }
        bytes[position] = original;
    }
}

#[test]
fn every_truncation_and_corruption_of_the_index_file_parses_or_fails_cleanly() {
    let Some((_, index)) = sample() else { return };
    for len in 0..index.len() {
        let _ = IndexCell::parse_file(&index[..len]);
    }
    let mut bytes = index.clone();
    for position in 0..index.len() {
        bytes[position] ^= 0xFF;
        let _ = IndexCell::parse_file(&bytes);
        bytes[position] ^= 0xFF;
    }
}
