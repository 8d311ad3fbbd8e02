//! TPTP binary traces written by a writer of the tests' own from the seed's
//! message tables (every message with its full attribute list, both
//! endiannesses, unknown ids, longer messages, unbalanced ends, truncated
//! tails), each imported and compared row for row with the forest the
//! generator expects; and every truncation and byte change of a small one.

use crate::import::test_mutations::{Input, campaign};
use std::collections::BTreeMap;

use super::messages::{Attribute, MESSAGES};
use super::*;
use crate::import::SourceFormat;
use crate::import::test_rows::{Forest, Rng, Row, import_generated, mutation_campaign};

/// An attribute value.
#[derive(Debug, Clone)]
enum V {
    N(u64),
    S(Vec<u8>),
    Strings(Vec<Vec<u8>>),
    Longs(Vec<u64>),
}

/// The other readings of the seed's open questions a file may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Twist {
    /// The mapping's reading.
    None,
    /// A big-endian header over little-endian messages.
    LittleUnderBigHeader,
    /// Lengths that count the message header.
    LengthsCountHeader,
}

/// Writes messages in one byte order.
struct TraceWriter {
    big: bool,
    counts_header: bool,
    out: Vec<u8>,
}

impl TraceWriter {
    fn new(big: bool, magic: &[u8; 4], gap: usize, twist: Twist) -> Self {
        let header_big = big || twist == Twist::LittleUnderBigHeader;
        let mut writer = TraceWriter {
            big: header_big,
            counts_header: twist == Twist::LengthsCountHeader,
            out: magic.to_vec(),
        };
        writer.out.extend([1, 0, 1, u8::from(!header_big)]);
        writer.number((HEADER + gap) as u64, 4);
        writer.big = big && twist != Twist::LittleUnderBigHeader;
        writer.out.extend(vec![0xEE; gap]);
        writer
    }

    fn number_bytes(&self, value: u64, size: usize) -> Vec<u8> {
        let mut bytes = value.to_le_bytes()[..size].to_vec();
        if self.big {
            bytes.reverse();
        }
        bytes
    }

    fn number(&mut self, value: u64, size: usize) {
        let bytes = self.number_bytes(value, size);
        self.out.extend(bytes);
    }

    /// The attributes' bytes: `values` by index, the rest random.
    fn body(&self, id: u16, values: &[(usize, V)], rng: &mut Rng) -> Vec<u8> {
        let (_, _, attributes) = MESSAGES.iter().find(|m| m.0 == id).unwrap();
        let mut body = Vec::new();
        for (i, attribute) in attributes.iter().enumerate() {
            let value = match values.iter().find(|(at, _)| *at == i) {
                Some((_, value)) => value.clone(),
                None => random_value(*attribute, rng),
            };
            let size = match attribute {
                Attribute::Byte => 1,
                Attribute::Short => 2,
                Attribute::Integer => 4,
                _ => 8,
            };
            match value {
                V::N(n) => body.extend(self.number_bytes(n, size)),
                V::S(s) => {
                    body.extend(s);
                    body.push(0);
                }
                V::Strings(items) => {
                    body.extend(self.number_bytes(items.len() as u64, 4));
                    for item in items {
                        body.extend(item);
                        body.push(0);
                    }
                }
                V::Longs(items) => {
                    body.extend(self.number_bytes(items.len() as u64, 4));
                    for item in items {
                        body.extend(self.number_bytes(item, 8));
                    }
                }
            }
        }
        body
    }

    fn message(&mut self, id: u16, body: &[u8]) {
        self.number(u64::from(id), 2);
        let length = body.len()
            + if self.counts_header {
                MESSAGE_HEADER
            } else {
                0
            };
        self.number(length as u64, 4);
        self.out.extend(body);
    }
}

fn random_value(attribute: Attribute, rng: &mut Rng) -> V {
    let text = |rng: &mut Rng| format!("t{}", rng.below(1000)).into_bytes();
    match attribute {
        Attribute::String => V::S(text(rng)),
        Attribute::Strings => V::Strings((0..rng.below(3)).map(|_| text(rng)).collect()),
        Attribute::Longs => V::Longs((0..rng.below(3)).map(|_| rng.next()).collect()),
        _ => V::N(rng.next()),
    }
}

/// A generated trace and what importing it must give.
struct Generated {
    bytes: Vec<u8>,
    rows: Vec<Row>,
    skipped_exits: u64,
    unmatched: u64,
    cut: bool,
}

/// Classes and methods: (method id, class id, class name, method name).
const METHODS: [(u64, u64, &str, &str); 5] = [
    (10, 1, "demo/app/Main", "run"),
    (11, 1, "demo/app/Main", "step"),
    (12, 2, "demo.app.Outer$Inner", "hash"),
    (13, 3, "Plain", "go"),
    (14, 4, "demo/caf\u{e9}/K", "f"),
];

/// Declarations: the encoding, threads, classes and methods, and every
/// message of the table once.
fn declare(writer: &mut TraceWriter, rng: &mut Rng, latin1: bool) {
    let encoding: &[u8] = if latin1 { b"ISO-8859-1" } else { b"UTF-8" };
    let body = writer.body(1, &[(0, V::S(encoding.to_vec()))], rng);
    writer.message(1, &body);
    for &(id, ..) in MESSAGES {
        let body = writer.body(id, &[], rng);
        if ![1, 1015, 1016].contains(&id) {
            writer.message(id, &body);
        }
    }
    for (thread, name) in [(5u64, "main"), (2, "worker-1")] {
        let values = [(1, V::N(thread)), (7, V::S(name.as_bytes().to_vec()))];
        let body = writer.body(THREAD_START, &values, rng);
        writer.message(THREAD_START, &body);
    }
    for &(_, class, name, _) in &METHODS {
        let name = if latin1 {
            name.chars().map(|c| c as u8).collect()
        } else {
            name.as_bytes().to_vec()
        };
        let body = writer.body(CLASS_DEF, &[(6, V::N(class)), (12, V::S(name))], rng);
        writer.message(CLASS_DEF, &body);
    }
    for &(method, class, _, name) in &METHODS[..4] {
        let values = [
            (0, V::S(name.as_bytes().to_vec())),
            (1, V::S(b"()V".to_vec())),
            (11, V::N(class)),
            (12, V::N(method)),
        ];
        let body = writer.body(METHOD_DEF, &values, rng);
        writer.message(METHOD_DEF, &body);
    }
    // Method 14 is defined through a longer message (a new attribute).
    let (method, class, _, name) = METHODS[4];
    let values = [
        (0, V::S(name.into())),
        (11, V::N(class)),
        (12, V::N(method)),
    ];
    let mut body = writer.body(METHOD_DEF, &values, rng);
    body.extend([1, 2, 3, 4, 5]);
    writer.message(METHOD_DEF, &body);
}

fn generate(seed: u64, events: usize, twist: Twist) -> Generated {
    let mut rng = Rng::new(seed);
    let big = seed.is_multiple_of(2);
    let magic = if seed.is_multiple_of(3) {
        b"OTBF"
    } else {
        b"0TBF"
    };
    let mut writer = TraceWriter::new(big, magic, (seed % 4) as usize, twist);
    let latin1 = seed % 4 == 1;
    declare(&mut writer, &mut rng, latin1);
    let threads = [5u64, 2, 9];
    let mut forests: BTreeMap<u64, Forest> = BTreeMap::new();
    let mut tickets: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    let (mut skipped_exits, mut unmatched) = (0, 0);
    for n in 0..events {
        let thread = threads[rng.below(3) as usize];
        let open = tickets.entry(thread).or_default();
        match rng.below(10) {
            0..=3 => {
                let method = rng.below(6) as usize;
                let (id, name) = match METHODS.get(method) {
                    Some(&(id, _, class, name)) => {
                        (id, format!("{}.{name}", class.replace('/', ".")))
                    }
                    None => (99, "unknown.Method#99".to_string()),
                };
                let ticket = n as u32;
                let values = [
                    (1, V::N(thread)),
                    (3, V::N(id)),
                    (4, V::N(u64::from(ticket))),
                ];
                let body = writer.body(METHOD_ENTRY, &values, &mut rng);
                writer.message(METHOD_ENTRY, &body);
                open.push(ticket);
                forests
                    .entry(thread)
                    .or_default()
                    .push("method_call", Some(name));
            }
            4..=6 => {
                let ticket = match open.pop() {
                    Some(ticket) if rng.chance(90) => ticket,
                    Some(_) => {
                        unmatched += 1;
                        u32::MAX
                    }
                    None => {
                        skipped_exits += 1;
                        7
                    }
                };
                if let Some(forest) = forests.get_mut(&thread) {
                    forest.pop();
                }
                let values = [(1, V::N(thread)), (3, V::N(u64::from(ticket)))];
                let body = writer.body(METHOD_EXIT, &values, &mut rng);
                writer.message(METHOD_EXIT, &body);
            }
            7 => {
                let id = [77u16, 1013, 5000, 32767][rng.below(4) as usize];
                let body: Vec<u8> = (0..rng.below(20)).map(|_| rng.next() as u8).collect();
                writer.message(id, &body);
            }
            _ => {
                let (id, ..) = MESSAGES[rng.below(MESSAGES.len() as u64) as usize];
                if ![1015, 1016].contains(&id) {
                    let body = writer.body(id, &[], &mut rng);
                    writer.message(id, &body);
                }
            }
        }
    }
    let cut = seed % 3 == 2;
    if cut {
        let body = writer.body(METHOD_ENTRY, &[(1, V::N(5))], &mut rng);
        writer.message(METHOD_ENTRY, &body);
        let keep = writer.out.len() - 10;
        writer.out.truncate(keep);
    }
    let mut rows = Vec::new();
    for (rank, (_, forest)) in forests
        .iter()
        .filter(|(_, f)| !f.nodes.is_empty())
        .enumerate()
    {
        rows.extend(forest.rows(rank as u64));
    }
    Generated {
        bytes: writer.out,
        rows,
        skipped_exits,
        unmatched,
        cut,
    }
}

#[test]
fn the_table_lists_every_message_of_the_seed() {
    assert_eq!(MESSAGES.len(), 32);
    assert!(MESSAGES.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(messages::message_name(1015), "methodEntry (1015)");
    assert_eq!(messages::message_name(77), "unknown message 77");
}

#[test]
fn generated_traces_import_as_the_generator_expects() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..12 {
        let twist = [
            Twist::None,
            Twist::LittleUnderBigHeader,
            Twist::LengthsCountHeader,
        ][(seed / 2 % 3) as usize];
        let generated = generate(seed, 200 + seed as usize * 100, twist);
        let name = format!("run-{seed}.trcbin");
        let (bytes, rows) = (&generated.bytes, &generated.rows);
        let summary = import_generated(dir.path(), &name, bytes, SourceFormat::Tptp, rows);
        assert_eq!(
            summary.skipped_exits, generated.skipped_exits,
            "seed {seed}"
        );
        assert_eq!(
            summary.unmatched_tickets, generated.unmatched,
            "seed {seed}"
        );
        assert_eq!(
            summary.damage.len(),
            usize::from(generated.cut),
            "seed {seed}"
        );
        assert!(summary.skipped["gcStart (1023)"] > 0, "seed {seed}");
        assert!(summary.skipped.contains_key("custom (1041)"), "seed {seed}");
    }
}

#[test]
fn every_truncation_and_byte_change_imports_or_fails_typed() {
    mutation_campaign(
        &generate(4, 12, Twist::None).bytes,
        SourceFormat::Tptp,
        1,
        &[0xFF, 0x80],
    );
}

#[test]
fn random_mutations_import_or_fail_typed() {
    let twists = [
        Twist::None,
        Twist::LittleUnderBigHeader,
        Twist::LengthsCountHeader,
    ];
    let inputs = (0..6)
        .map(|seed| {
            let bytes = generate(100 + seed, 120, twists[seed as usize % 3]).bytes;
            Input::file(&format!("run-{seed}.trcbin"), bytes)
        })
        .collect();
    campaign(SourceFormat::Tptp, inputs);
}
