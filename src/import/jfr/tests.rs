//! Recordings written byte by byte here: both integer encodings, every
//! string encoding, a checkpoint chain of two, truncated stacks, and
//! hostile metadata.

use crate::import::test_mutations::{Input, campaign};
use std::collections::BTreeMap;

use super::Chunk;
use super::chunk::{HEADER_SIZE, find_chunks};
use crate::import::{ImportOptions, ImportSummary, SourceFormat};
use crate::read::LazyTraceReader;

/// Writes values in a chunk's integer encoding.
struct Out {
    bytes: Vec<u8>,
    compressed: bool,
}

impl Out {
    fn new(compressed: bool) -> Self {
        Out {
            bytes: Vec::new(),
            compressed,
        }
    }

    fn long(&mut self, v: i64) -> &mut Self {
        if self.compressed {
            let mut v = v as u64;
            for _ in 0..8 {
                if v < 0x80 {
                    self.bytes.push(v as u8);
                    return self;
                }
                self.bytes.push(v as u8 | 0x80);
                v >>= 7;
            }
            self.bytes.push(v as u8);
        } else {
            self.bytes.extend_from_slice(&v.to_be_bytes());
        }
        self
    }

    fn int(&mut self, v: i64) -> &mut Self {
        if self.compressed {
            self.long(v)
        } else {
            self.bytes.extend_from_slice(&(v as i32).to_be_bytes());
            self
        }
    }

    fn byte(&mut self, b: u8) -> &mut Self {
        self.bytes.push(b);
        self
    }

    fn utf8(&mut self, s: &str) -> &mut Self {
        self.byte(3).int(s.len() as i64);
        self.bytes.extend_from_slice(s.as_bytes());
        self
    }

    fn latin1(&mut self, s: &[u8]) -> &mut Self {
        self.byte(5).int(s.len() as i64);
        self.bytes.extend_from_slice(s);
        self
    }

    fn chars(&mut self, s: &str) -> &mut Self {
        let units: Vec<u16> = s.encode_utf16().collect();
        self.byte(4).int(units.len() as i64);
        for unit in units {
            if self.compressed {
                self.long(unit.into());
            } else {
                self.bytes.extend_from_slice(&unit.to_be_bytes());
            }
        }
        self
    }

    /// A record: size (4 bytes: padded when packed), type id, body.
    fn record(&mut self, type_id: i64, body: &[u8]) -> usize {
        let at = self.bytes.len();
        let mut head = Out::new(self.compressed);
        head.long(type_id);
        let size = 4 + head.bytes.len() + body.len();
        if self.compressed {
            let s = size as u32;
            self.bytes.extend_from_slice(&[
                (s & 0x7F) as u8 | 0x80,
                (s >> 7 & 0x7F) as u8 | 0x80,
                (s >> 14 & 0x7F) as u8 | 0x80,
                (s >> 21) as u8,
            ]);
        } else {
            self.bytes.extend_from_slice(&(size as u32).to_be_bytes());
        }
        self.bytes.extend_from_slice(&head.bytes);
        self.bytes.extend_from_slice(body);
        at
    }
}

/// `(name, id, super type, fields (name, type id, pooled, array))`.
type ClassSpec = (
    &'static str,
    i64,
    Option<&'static str>,
    Vec<(&'static str, i64, bool, bool)>,
);

fn classes() -> Vec<ClassSpec> {
    vec![
        ("long", 20, None, vec![]),
        ("java.lang.String", 21, None, vec![]),
        ("boolean", 22, None, vec![]),
        ("int", 23, None, vec![]),
        (
            "java.lang.Thread",
            30,
            None,
            vec![
                ("javaName", 21, false, false),
                ("javaThreadId", 20, false, false),
            ],
        ),
        (
            "jdk.types.Symbol",
            31,
            None,
            vec![("string", 21, false, false)],
        ),
        ("java.lang.Class", 32, None, vec![("name", 31, true, false)]),
        (
            "jdk.types.Method",
            33,
            None,
            vec![
                ("type", 32, true, false),
                ("name", 31, true, false),
                ("descriptor", 31, true, false),
            ],
        ),
        (
            "jdk.types.StackFrame",
            34,
            None,
            vec![
                ("method", 33, true, false),
                ("lineNumber", 23, false, false),
            ],
        ),
        (
            "jdk.types.StackTrace",
            35,
            None,
            vec![("truncated", 22, false, false), ("frames", 34, false, true)],
        ),
        (
            "jdk.ExecutionSample",
            101,
            Some("jdk.jfr.Event"),
            vec![
                ("startTime", 20, false, false),
                ("sampledThread", 30, true, false),
                ("stackTrace", 35, true, false),
            ],
        ),
    ]
}

/// The metadata event's body.
fn metadata(out: &mut Out, classes: &[ClassSpec]) -> Vec<u8> {
    let mut strings: Vec<String> = Vec::new();
    let mut index = |s: &str| -> i64 {
        match strings.iter().position(|t| t == s) {
            Some(i) => i as i64,
            None => {
                strings.push(s.to_string());
                strings.len() as i64 - 1
            }
        }
    };
    let mut tree = Out::new(out.compressed);
    // root { metadata { class* } region {} }
    tree.int(index("root")).int(0).int(2);
    tree.int(index("metadata")).int(0).int(classes.len() as i64);
    for (name, id, super_type, fields) in classes {
        let mut attributes = vec![("name", name.to_string()), ("id", id.to_string())];
        if let Some(s) = super_type {
            attributes.push(("superType", s.to_string()));
        }
        tree.int(index("class")).int(attributes.len() as i64);
        for (k, v) in &attributes {
            tree.int(index(k)).int(index(v));
        }
        tree.int(fields.len() as i64);
        for (field, type_id, pooled, array) in fields {
            let mut attributes = vec![("name", field.to_string()), ("class", type_id.to_string())];
            if *pooled {
                attributes.push(("constantPool", "true".into()));
            }
            if *array {
                attributes.push(("dimension", "1".into()));
            }
            tree.int(index("field")).int(attributes.len() as i64);
            for (k, v) in &attributes {
                tree.int(index(k)).int(index(v));
            }
            tree.int(0);
        }
    }
    tree.int(index("region")).int(0).int(0);
    let mut body = Out::new(out.compressed);
    body.long(0).long(0).long(7).int(strings.len() as i64);
    for s in &strings {
        body.utf8(s);
    }
    body.bytes.extend_from_slice(&tree.bytes);
    body.bytes
}

/// A one-chunk recording of five samples on two threads.
fn recording(compressed: bool, classes: &[ClassSpec]) -> Vec<u8> {
    recording_of(compressed, classes, &[])
}

/// [`recording`] with `more` samples (thread key, stack key) after its own.
fn recording_of(compressed: bool, classes: &[ClassSpec], more: &[(i64, i64)]) -> Vec<u8> {
    let mut out = Out::new(compressed);
    out.bytes.resize(HEADER_SIZE, 0);
    let c = compressed;
    // Samples: thread 1: main>run>work twice, a truncated x>y once;
    // thread 2: main>run once.
    let samples = [(1, 1), (1, 1), (1, 2), (2, 3), (1, 1)];
    for &(thread, stack) in samples.iter().chain(more) {
        let mut body = Out::new(c);
        body.long(1000).long(thread).long(stack);
        out.record(101, &body.bytes);
    }
    // First checkpoint: symbols and strings.
    let mut cp1 = Out::new(c);
    cp1.long(0).long(0).long(0).byte(0).int(2);
    cp1.long(21).int(1).long(50).utf8("run");
    cp1.long(31).int(8);
    for (key, text) in [
        (1, "Main"),
        (2, "main"),
        (3, "demo/Work"),
        (4, "work"),
        (5, "()V"),
        (6, "x"),
        (7, "y"),
    ] {
        cp1.long(key).chars(text);
    }
    cp1.long(8).byte(2).long(50); // a pooled string: "run"
    let first = out.record(1, &cp1.bytes);
    // Last checkpoint: threads, classes, methods, stacks.
    let last_at = out.bytes.len();
    let mut cp2 = Out::new(c);
    cp2.long(0)
        .long(0)
        .long(first as i64 - last_at as i64)
        .byte(0)
        .int(4);
    cp2.long(30).int(2);
    cp2.long(1).latin1(b"main").long(1);
    cp2.long(2).chars("w\u{e9}").long(9);
    cp2.long(32).int(2).long(1).long(1).long(2).long(3);
    cp2.long(33).int(5);
    for (key, class, name) in [(1, 1, 2), (2, 1, 8), (3, 2, 4), (4, 2, 6), (5, 2, 7)] {
        cp2.long(key).long(class).long(name).long(5);
    }
    cp2.long(35).int(3);
    let stacks: [(i64, bool, &[i64]); 3] = [
        (1, false, &[3, 2, 1]),
        (2, true, &[5, 4]),
        (3, false, &[2, 1]),
    ];
    for (key, truncated, frames) in stacks {
        cp2.long(key).byte(truncated as u8).int(frames.len() as i64);
        for &method in frames {
            cp2.long(method).int(42);
        }
    }
    out.record(1, &cp2.bytes);
    let metadata_at = out.bytes.len();
    let body = metadata(&mut out, classes);
    out.record(0, &body);
    let size = out.bytes.len() as u64;
    let header = &mut out.bytes[..HEADER_SIZE];
    header[..4].copy_from_slice(b"FLR\0");
    header[4..8].copy_from_slice(&[0, 2, 0, 1]);
    header[8..16].copy_from_slice(&size.to_be_bytes());
    header[16..24].copy_from_slice(&(last_at as u64).to_be_bytes());
    header[24..32].copy_from_slice(&(metadata_at as u64).to_be_bytes());
    header[56..64].copy_from_slice(&1_000_000_000u64.to_be_bytes());
    header[67] = if compressed { 3 } else { 2 };
    out.bytes
}

/// `(thread, depth, method, samples)` of the import's dump.
fn dump(bytes: &[u8]) -> Vec<String> {
    import_and_dump(bytes).rows
}

/// What an import of a recording gave.
struct Imported {
    summary: ImportSummary,
    /// `(thread, depth, method, samples)` of its dump.
    rows: Vec<String>,
    /// Its threads' names, in order.
    threads: Vec<Option<String>>,
}

fn import_and_dump(bytes: &[u8]) -> Imported {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("x.jfr");
    std::fs::write(&input, bytes).unwrap();
    assert_eq!(SourceFormat::detect(&input), Some(SourceFormat::Jfr));
    let output = dir.path().join("x.trace");
    let options = ImportOptions::default();
    let summary = options.import_file(&input, &output, None, &|_| {}).unwrap();
    assert!(summary.damage.is_empty(), "{:?}", summary.damage);
    let reader = LazyTraceReader::open(&output).unwrap();
    let mut printed = Vec::new();
    crate::print::PrintOptions::default()
        .print(&reader, &mut printed)
        .unwrap();
    let printed = String::from_utf8(printed).unwrap();
    if printed.contains("<truncated>") {
        assert!(
            printed.contains("<truncated>()") && !printed.contains(".<truncated>"),
            "the truncated root has no class: {printed}"
        );
    }
    let mut text = Vec::new();
    crate::print::write_jsonl(&reader, None, &mut text).unwrap();
    let rows = String::from_utf8(text)
        .unwrap()
        .lines()
        .map(|line| {
            let row: BTreeMap<String, serde_json::Value> = serde_json::from_str(line).unwrap();
            format!(
                "{} {} {} {}",
                row["thread"], row["depth"], row["method"], row["samples"]
            )
        })
        .collect();
    let threads = reader
        .thread_ids()
        .iter()
        .map(|&id| reader.thread_name(id))
        .collect();
    Imported {
        summary,
        rows,
        threads,
    }
}

#[test]
fn both_integer_encodings_give_the_same_sample_trees() {
    let expected = [
        "0 0 \"<truncated>\" 1",
        "0 1 \"demo.Work.x\" 1",
        "0 2 \"demo.Work.y\" 1",
        "0 0 \"Main.main\" 3",
        "0 1 \"Main.run\" 3",
        "0 2 \"demo.Work.work\" 3",
        "1 0 \"Main.main\" 1",
        "1 1 \"Main.run\" 1",
    ];
    for compressed in [true, false] {
        assert_eq!(
            dump(&recording(compressed, &classes())),
            expected,
            "{compressed}"
        );
    }
}

/// Samples whose thread is null (key 0, as the JVM records while it shuts
/// down) or not in the pool are kept under one thread of their own, and a
/// sample without a stack is skipped; both are warned about.
#[test]
fn samples_naming_no_thread_are_kept_and_stackless_ones_warned_about() {
    let more = [(0, 3), (7, 1), (1, 0)];
    let Imported {
        summary,
        rows,
        threads,
    } = import_and_dump(&recording_of(false, &classes(), &more));
    let unknown: Vec<_> = rows.iter().filter(|row| row.starts_with("2 ")).collect();
    assert_eq!(
        unknown,
        [
            "2 0 \"Main.main\" 2",
            "2 1 \"Main.run\" 2",
            "2 2 \"demo.Work.work\" 1"
        ],
        "{rows:?}"
    );
    assert_eq!(rows.len(), 11, "{rows:?}");
    assert_eq!(summary.threads, 3);
    assert_eq!(summary.warnings.len(), 2, "{:?}", summary.warnings);
    assert!(
        summary.warnings[0].contains("2 jdk.ExecutionSample events name no Java thread")
            && summary.warnings[0].contains(super::samples::UNKNOWN_THREAD),
        "{:?}",
        summary.warnings
    );
    assert!(
        summary.warnings[1].contains("1 jdk.ExecutionSample events have no stack trace"),
        "{:?}",
        summary.warnings
    );
    assert_eq!(
        threads.last().cloned().flatten().as_deref(),
        Some(super::samples::UNKNOWN_THREAD),
        "{threads:?}"
    );
}

#[test]
fn threads_are_named_from_latin1_and_char_arrays() {
    let bytes = recording(false, &classes());
    let scan = find_chunks(&bytes);
    let chunk = Chunk::open(&bytes, &scan.chunks[0]).unwrap();
    let mut resolver = super::resolve::Resolver::new(&chunk);
    assert_eq!(resolver.thread(1).unwrap().name.as_deref(), Some("main"));
    assert_eq!(resolver.thread(2).unwrap().name.as_deref(), Some("w\u{e9}"));
    assert_eq!(resolver.method(2).unwrap().name, "run");
}

#[test]
fn metadata_with_a_type_containing_itself_is_refused() {
    let mut hostile = classes();
    hostile.push(("Loop", 40, None, vec![("again", 40, false, false)]));
    let bytes = recording(true, &hostile);
    let scan = find_chunks(&bytes);
    let error = Chunk::open(&bytes, &scan.chunks[0]).unwrap_err();
    assert!(error.what.contains("contains itself"), "{error}");
}

#[test]
fn metadata_expanding_too_far_is_refused() {
    let mut hostile = classes();
    let wide: Vec<_> = (0..40).map(|_| ("f", 41, false, false)).collect();
    hostile.push((
        "Wide",
        41,
        None,
        (0..40).map(|_| ("g", 20, false, false)).collect(),
    ));
    hostile.push(("Wider", 42, None, wide));
    let bytes = recording(true, &hostile);
    let scan = find_chunks(&bytes);
    let error = Chunk::open(&bytes, &scan.chunks[0]).unwrap_err();
    assert!(error.what.contains("too large"), "{error}");
}

#[test]
fn unknown_feature_flags_are_read_as_unset_with_a_warning() {
    let mut bytes = recording(true, &classes());
    bytes[67] |= 0x04;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("flags.jfr");
    std::fs::write(&input, &bytes).unwrap();
    let output = dir.path().join("flags.trace");
    let summary = ImportOptions::default()
        .import_file(&input, &output, None, &|_| {})
        .unwrap();
    assert_eq!(summary.warnings.len(), 1, "{:?}", summary.warnings);
    assert!(
        summary.warnings[0].contains("feature flags 0x04"),
        "{:?}",
        summary.warnings
    );
    assert_eq!(dump(&bytes), dump(&recording(true, &classes())));
}

#[test]
fn random_mutations_import_or_fail_typed() {
    let inputs = vec![
        Input::file("plain.jfr", recording(false, &classes())),
        Input::file("compressed.jfr", recording(true, &classes())),
        Input::file(
            "more.jfr",
            recording_of(true, &classes(), &[(2, 1), (1, 3), (9, 2)]),
        ),
    ];
    campaign(SourceFormat::Jfr, inputs);
}
