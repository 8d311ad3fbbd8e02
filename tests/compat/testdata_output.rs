//! The bundled traces print exactly as their committed expected output
//! (`testdata/NAME.trace.txt` verbose, `NAME.trace.brief.txt` brief).
//! Regenerate both after changing a sample:
//! `cargo run --release -- print testdata/NAME.trace --verbose > testdata/NAME.trace.txt`.

use tracetree::print::PrintOptions;
use tracetree::read::EagerTrace;

use tracetree_testkit::files;

const TRACES: [&str; 2] = ["all-types", "multi-thread"];

fn printed(trace: &EagerTrace, verbose: bool) -> Vec<u8> {
    let mut options = PrintOptions::default();
    options.verbose = verbose;
    let mut out = Vec::new();
    options.print(trace, &mut out).unwrap();
    out
}

#[test]
fn bundled_traces_print_as_expected() {
    for name in TRACES {
        let trace = EagerTrace::open(files::testdata(&format!("{name}.trace"))).unwrap();
        for (verbose, suffix) in [(true, "txt"), (false, "brief.txt")] {
            let expected =
                std::fs::read(files::testdata(&format!("{name}.trace.{suffix}"))).unwrap();
            let ours = printed(&trace, verbose);
            assert!(ours == expected, "{name}.trace.{suffix} differs");
        }
    }
}
