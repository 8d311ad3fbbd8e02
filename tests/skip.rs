//! `skip_object` reads exactly the bytes `Object::decode` reads, reports the
//! same kind, id and event, and fails with the same error on corrupt bytes.

mod common;

use std::collections::HashMap;

use tracetree::format::offset::PhysicalOffset;
use tracetree::format::skip::{Skipped, skip_object};
use tracetree::format::{ByteReader, Object};
use tracetree::model::TracepointType;
use tracetree::read::block::{BlockStep, decode_block};

/// Every object of a data file with the open container type it decodes under.
fn objects(data: &[u8]) -> Vec<(u64, Option<TracepointType>)> {
    let mut stacks: HashMap<i32, Vec<TracepointType>> = HashMap::new();
    let mut before: HashMap<i32, Vec<TracepointType>> = HashMap::new();
    let mut out = Vec::new();
    let mut at = PhysicalOffset(16);
    loop {
        let mut thread = None;
        let step = decode_block(data, at, |t| {
            thread = Some(t.0);
            before.insert(t.0, stacks.entry(t.0).or_default().clone());
            stacks.get_mut(&t.0).unwrap()
        })
        .unwrap();
        let BlockStep::Block(block) = step else { break };
        let mut open = before.remove(&thread.unwrap()).unwrap();
        for (offset, object) in &block.objects {
            out.push((offset.0, open.last().copied()));
            match object {
                Object::Tracepoint(t) if t.is_container() => open.push(t.tracepoint_type()),
                Object::Footer(_) => {
                    open.pop();
                }
                _ => {}
            }
        }
        at = block.next();
    }
    out
}

fn both(data: &[u8], offset: u64, open: Option<TracepointType>) {
    let slice = &data[offset as usize..];
    let mut decoder = ByteReader::new(slice, offset);
    let mut skipper = ByteReader::new(slice, offset);
    let decoded = Object::decode(&mut decoder, open);
    let skipped = skip_object(&mut skipper, open);
    match (decoded, skipped) {
        (Ok(object), Ok(summary)) => {
            assert_eq!(decoder.offset(), skipper.offset(), "length at {offset}");
            match (&object, summary) {
                (
                    Object::Tracepoint(t),
                    Skipped::Tracepoint {
                        tracepoint_type,
                        event,
                    },
                ) => {
                    assert_eq!((t.tracepoint_type(), t.event()), (tracepoint_type, event));
                }
                (Object::Footer(_), Skipped::Footer) => {}
                (_, Skipped::Reference { kind, id }) => {
                    assert_eq!((object.kind(), object.reference_id()), (kind, Some(id)));
                }
                (a, b) => panic!("at {offset}: decoded {a:?}, skipped {b:?}"),
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "error at {offset}"),
        (a, b) => panic!("at {offset}: decode {:?} but skip {:?}", a.map(|_| ()), b),
    }
}

#[test]
fn skip_reads_what_decode_reads_in_every_reference_trace() {
    let Some(dir) = common::reference_traces() else {
        return;
    };
    for name in [
        "all-types-stream",
        "all-types-dump",
        "small-stream",
        "medium-stream",
        "crashed",
    ] {
        let data = std::fs::read(dir.join(format!("{name}.trace"))).unwrap();
        for (offset, open) in objects(&data) {
            both(&data, offset, open);
        }
    }
}

#[test]
fn skip_fails_like_decode_on_every_corrupted_byte() {
    let Some(dir) = common::reference_traces() else {
        return;
    };
    let data = std::fs::read(dir.join("all-types-stream.trace")).unwrap();
    let objects = objects(&data);
    let mut bytes = data.clone();
    for window in objects.windows(2) {
        let [(start, open), (end, _)] = [window[0], window[1]];
        for position in start..end {
            for flip in [0xFF, 0x80, 0x01] {
                bytes[position as usize] ^= flip;
                both(&bytes, start, open);
                bytes[position as usize] ^= flip;
            }
        }
    }
}
