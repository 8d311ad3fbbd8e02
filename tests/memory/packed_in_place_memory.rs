//! A packed trace deflated at level 0 (the recorder's form) is read in
//! place: walking all of it through the lazy reader keeps about its
//! resident window of the entry in memory, where inflating it would hold
//! all of it.

use tracetree::generate::Shape;
use tracetree::print::write_jsonl;
use tracetree::read::LazyTraceReader;
use tracetree::storage::TraceBytes;
use tracetree::storage::packed::PackedTrace;
use tracetree_testkit::files::{generated, jdk_pack};
use tracetree_testkit::memory::{self, peak_growth};
use tracetree_testkit::stream::Count;

#[test]
fn walking_a_level_0_pack_keeps_a_window_of_it_resident() {
    let _alone = memory::alone();
    if let Err(why) = TraceBytes::paging_available() {
        eprintln!("SKIPPED: level-0 packs are not read in place here: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = generated(dir.path(), Shape::Mixed, 2, 96 << 20, None);
    let path = dir.path().join("t.packedtrace");
    // Packed by the JDK's `ZipOutputStream` at level 0, as the recorder packs.
    if !jdk_pack(
        "deflate0",
        &path,
        "test\n",
        &trace,
        Some(&LazyTraceReader::index_path(&trace)),
        None,
    ) {
        return;
    }
    let pack = PackedTrace::open(&path).unwrap();
    assert!(!pack.entry(PackedTrace::DATA_ENTRY).unwrap().stored);
    assert!(pack.in_place(), "{:?}", pack.why_inflated());
    let data_len = pack.entry(PackedTrace::DATA_ENTRY).unwrap().size;
    drop(pack);

    let window = 4 << 20;
    let options = LazyTraceReader::options().resident_window(Some(window));
    let (written, grown) = peak_growth(|| {
        let reader = options.open(&path).unwrap();
        let mut counted = Count::default();
        write_jsonl(&reader, None, &mut counted).unwrap();
        counted.0
    });
    let (expected, plain) = peak_growth(|| {
        let mut expected = Count::default();
        write_jsonl(&options.open(&trace).unwrap(), None, &mut expected).unwrap();
        expected
    });
    assert_eq!(written, expected.0, "the pack dumps as its trace");
    let Some(grown) = grown else { return };
    eprintln!(
        "walking a {data_len}-byte level-0 pack raised the peak resident set by {grown} bytes \
         (its plain trace: {plain:?})"
    );
    assert!(
        grown < data_len / 3,
        "walking {data_len} bytes grew the resident set by {grown}"
    );
}
