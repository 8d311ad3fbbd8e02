//! Unpacking a packed trace whose data entry is deflated (the recorder
//! deflates at level 0, into stored blocks) reads the ZIP by `pread`: the
//! process's resident memory stays the copy buffer's, where reading the
//! ZIP through its mapping would make every page of the entry resident.

use std::io::Write;

use tracetree::storage::packed::PackedTrace;
use tracetree_testkit::lazy::Rng;
use tracetree_testkit::memory::{self, peak_growth};
use tracetree_testkit::stream::Count;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// The data entry's size.
const ENTRY: usize = 32 << 20;

#[test]
fn unpacking_a_deflated_pack_keeps_none_of_it_resident() {
    let _alone = memory::alone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.packedtrace");
    {
        let mut zip = ZipWriter::new(std::fs::File::create(&path).unwrap());
        let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
        zip.start_file(PackedTrace::INFO_ENTRY, stored).unwrap();
        zip.write_all(b"test\n").unwrap();
        // Random bytes do not compress: the deflater stores them, in
        // stored blocks, as the recorder's level 0 does.
        let deflated = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .compression_level(Some(1));
        zip.start_file(PackedTrace::DATA_ENTRY, deflated).unwrap();
        let mut rng = Rng(7);
        let chunk: Vec<u8> = (0..1 << 20).map(|_| rng.below(256) as u8).collect();
        for _ in 0..ENTRY >> 20 {
            zip.write_all(&chunk).unwrap();
        }
        zip.finish().unwrap();
    }
    let pack = PackedTrace::open(&path).unwrap();
    let entry = pack.entry(PackedTrace::DATA_ENTRY).unwrap();
    assert!(!entry.stored);
    assert!(
        entry.packed_size >= ENTRY as u64,
        "the deflater stores the bytes"
    );

    let (written, grown) = peak_growth(|| {
        let mut counted = Count::default();
        let had_index = pack.unpack(&mut counted, &mut std::io::sink()).unwrap();
        (counted.0, had_index)
    });
    assert_eq!(written, (ENTRY as u64, false));
    let Some(grown) = grown else { return };
    eprintln!("unpacking {ENTRY} deflated bytes raised the peak resident set by {grown} bytes");
    assert!(
        grown < (ENTRY / 4) as u64,
        "unpacking {ENTRY} bytes grew the resident set by {grown}"
    );
}
