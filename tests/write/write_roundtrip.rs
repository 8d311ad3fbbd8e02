//! Write → eager load → the same trace: random trees of every tracepoint
//! type and random values of every code go through the dump writer, load
//! back with the same shape, the same event ids and, resolved through the
//! trace's context, the same names and values; the files follow every dump
//! layout rule.

use proptest::prelude::*;
use tracetree::TraceBytes;
use tracetree::common::EventId;
use tracetree::generate::samples;
use tracetree::lowlevel::ObjectKind;
use tracetree::read::EagerTrace;
use tracetree::tree::TraceTree;
use tracetree::write::{DumpOptions, ValueSpec};

use tracetree_testkit::write::strategies::{check_property, threads};
use tracetree_testkit::write::{Leaf, Node, Thread, check_dump_layout, load, write};

/// Dump options that keep NaN payloads as they are.
fn keep_nan() -> DumpOptions {
    let mut options = DumpOptions::default();
    options.canonicalize_nan = false;
    options
}

#[test]
fn random_traces_load_back_the_same() {
    check_property(96, file!(), threads, |threads| {
        let (data, index, events) = write(&threads, keep_nan()).unwrap();
        check_dump_layout(&data, &index);
        let (loaded, loaded_events) = load(data).unwrap();
        prop_assert_eq!(&loaded, &threads);
        prop_assert_eq!(&loaded_events, &events);
        // One trace-wide counter, in recording order.
        let expected: Vec<EventId> = (0..events.len() as i32).map(EventId::new).collect();
        prop_assert_eq!(events, expected);
        Ok(())
    });
}

fn float_bits() -> impl Strategy<Value = (u32, u64)> {
    (
        prop_oneof![any::<u32>(), Just(0x7FC0_0001), Just(0xFF80_0001)],
        prop_oneof![any::<u64>(), Just(0x7FF0_0000_0000_0001)],
    )
}

#[test]
fn nan_payloads_are_canonicalised_by_default() {
    check_property(64, file!(), float_bits, |(float, double)| {
        let thread = Thread {
            name: "main".into(),
            roots: vec![Node::Leaf {
                at: None,
                leaf: Leaf::Throw(
                    ValueSpec::array("[D", 1, 2)
                        .with_element(ValueSpec::Float(float))
                        .with_element(ValueSpec::Double(double)),
                ),
            }],
        };
        let (data, _, _) = write(std::slice::from_ref(&thread), DumpOptions::default()).unwrap();
        let (loaded, _) = load(data).unwrap();
        let canonical_float = if f32::from_bits(float).is_nan() {
            0x7FC0_0000
        } else {
            float
        };
        let canonical_double = if f64::from_bits(double).is_nan() {
            0x7FF8_0000_0000_0000
        } else {
            double
        };
        let expected = ValueSpec::array("[D", 1, 2)
            .with_element(ValueSpec::Float(canonical_float))
            .with_element(ValueSpec::Double(canonical_double));
        prop_assert_eq!(
            &loaded[0].roots[0],
            &Node::Leaf {
                at: None,
                leaf: Leaf::Throw(expected)
            }
        );
        Ok(())
    });
}

/// A trace recorded from the names its samples resolve to loads back equal:
/// copying a trace by name loses nothing.
#[test]
fn samples_copied_by_name_are_equal() {
    for (name, generate) in samples::all() {
        let writer = generate().unwrap();
        let (data, index) = writer.to_bytes().unwrap();
        check_dump_layout(&data, &index);
        let (threads, _) = load(data).unwrap();
        let (copy, copy_index, _) = write(&threads, writer.options()).unwrap();
        check_dump_layout(&copy, &copy_index);
        assert_eq!(load(copy).unwrap().0, threads, "{name}");
    }
}

/// Equal specs are interned once: the sample that uses one class, field and
/// code location in dozens of tracepoints writes each once.
#[test]
fn equal_specs_are_interned_once() {
    let (data, _) = samples::multi_thread().unwrap().to_bytes().unwrap();
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    let context = trace.context();
    // Thread, Counter.
    assert_eq!(context.count(ObjectKind::ClassDescriptor), 2);
    assert_eq!(context.count(ObjectKind::FieldDescriptor), 1);
    // run, start, join, increment.
    assert_eq!(context.count(ObjectKind::MethodDescriptor), 4);
}

/// Event ids come from one counter for all threads, in recording order, so
/// threads recorded interleaved get interleaved ids.
#[test]
fn event_ids_interleave_across_threads() {
    let (data, _) = samples::multi_thread().unwrap().to_bytes().unwrap();
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    let mut ids: Vec<i32> = trace
        .nodes()
        .map(|n| n.tracepoint().event().get())
        .collect();
    let per_thread_sorted = trace.threads().iter().all(|thread| {
        let mut previous = -1;
        let mut ok = true;
        trace
            .walk(&trace.roots(thread.id).unwrap(), |node, _| {
                let id = trace.node(node).tracepoint().event().get();
                ok &= id > previous;
                previous = id;
                Ok(())
            })
            .unwrap();
        ok
    });
    assert!(per_thread_sorted, "ids grow in each thread's pre-order");
    // Interleaved: the file order (thread by thread) is not the id order.
    assert!(ids.windows(2).any(|w| w[0] > w[1]));
    ids.sort_unstable();
    assert_eq!(ids, (0..ids.len() as i32).collect::<Vec<_>>());
}
