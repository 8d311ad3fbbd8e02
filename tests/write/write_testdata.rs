//! The committed sample traces in `testdata/` are exactly what
//! `tracetree::generate::samples` writes (regenerate them with
//! `cargo run --example gen_testdata`), and they load back complete.

use tracetree::TraceBytes;
use tracetree::generate::samples;
use tracetree::model::TracepointType;
use tracetree::read::EagerTrace;

use tracetree_testkit::files;

#[test]
fn committed_samples_are_what_the_generator_writes() {
    for (name, generate) in samples::all() {
        let (data, index) = generate().expect("generate").to_bytes().expect("write");
        let committed = std::fs::read(files::testdata(name)).expect("committed data file");
        let committed_index =
            std::fs::read(files::testdata(&format!("{name}.idx"))).expect("committed index file");
        assert!(
            data == committed && index == committed_index,
            "testdata/{name} is stale: run `cargo run --example gen_testdata`"
        );
    }
}

#[test]
fn all_types_sample_has_every_tracepoint_type() {
    let (data, _) = samples::all_types().unwrap().to_bytes().unwrap();
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    assert!(trace.report().is_complete());
    for tracepoint_type in TracepointType::ALL {
        assert!(
            trace
                .nodes()
                .any(|node| node.tracepoint().tracepoint_type() == tracepoint_type),
            "no {} tracepoint",
            tracepoint_type.name()
        );
    }
}
