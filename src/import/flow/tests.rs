//! The decoder on hand-made bytes; the importer on the real agent's
//! recordings (`../shared/samples/flow/`), checked against an independent
//! reading of the same files; and on every truncation and single-byte
//! change of one of them.

use crate::import::test_mutations::{Input, campaign};
use std::path::{Path, PathBuf};

use super::*;
use crate::import::{SourceFormat, import_file};

fn events(bytes: &[u8]) -> (Vec<FlowEvent>, Option<FlowDamage>) {
    let mut decoder = FlowDecoder::new(bytes);
    let mut out = Vec::new();
    loop {
        match decoder.next_event() {
            Ok(Some(event)) => out.push(event),
            Ok(None) => return (out, None),
            Err(damage) => return (out, Some(damage)),
        }
    }
}

#[test]
fn packed_varints_decode_as_the_recorder_writes_them() {
    assert_eq!(events(&[0x81]).0, [FlowEvent::Enter(1)]);
    assert_eq!(events(&[0xC0, 0x80, 0x01]).0, [FlowEvent::Enter(8192)]);
    assert_eq!(events(&[0x00]).0, [FlowEvent::Exit(1)]);
    assert_eq!(events(&[0x02]).0, [FlowEvent::Exit(3)]);
    // 2,000 returns: k = 1999 = 0b11111_001111.
    assert_eq!(events(&[0x4F, 0x1F]).0, [FlowEvent::Exit(2000)]);
    assert_eq!(
        events(&[0x81, 0xC0]),
        (
            vec![FlowEvent::Enter(1)],
            Some(FlowDamage::CutEvent { offset: 1 })
        )
    );
    let mut huge = vec![0xC0];
    huge.extend([0xFF; 9]);
    huge.push(0x01);
    assert_eq!(events(&huge).1, Some(FlowDamage::Overflow { offset: 0 }));
    // The widest value fits: 6 + 8 × 7 + 2 bits.
    let mut max = vec![0xFF];
    max.extend([0xFF; 8]);
    max.push(0x03);
    assert_eq!(events(&max).0, [FlowEvent::Enter(u64::MAX)]);
}

#[test]
fn names_and_descriptors_parse() {
    let (methods, bad) =
        parse_ids(b"demo.A#run()V=0\n\ndemo.A$B#f(I[Ljava/lang/String;)J=7\nnonsense\n");
    assert_eq!(bad, [4]);
    assert_eq!(methods[&7].class, "demo.A$B");
    assert_eq!(
        parse_descriptor(methods[&7].descriptor.as_deref().unwrap()),
        Some((
            vec![
                Type::Int,
                Type::Array(Box::new(Type::Object(JavaStr::new("java.lang.String"))))
            ],
            Type::Long
        ))
    );
    assert_eq!(parse_descriptor("(V)V"), None);
    assert_eq!(parse_descriptor("(I"), None);
}

/// The shared recordings, or `None` when the folder is absent and skipping
/// is allowed (otherwise the test fails: see `tracetree_testkit::skip`).
fn samples() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/samples/flow");
    if dir.is_dir() {
        Some(dir)
    } else {
        tracetree_testkit::skip::cannot_run(&format!(
            "the .flow samples folder {} is missing",
            dir.display()
        ));
        None
    }
}

/// A row the checks compare: thread, depth, children, method, unfinished.
type Row = (u64, u64, u64, String, bool);

/// The rows of `tracetree dump` of an imported trace (read without
/// writing a sidecar beside it).
fn dumped(trace: &Path) -> Vec<Row> {
    crate::import::test_rows::dumped(trace)
        .into_iter()
        .map(|(thread, depth, kind, children, method, unfinished)| {
            assert_eq!(kind, "method_call");
            (thread, depth, children, method.unwrap(), unfinished)
        })
        .collect()
}

/// An independent reading of a recording, straight from the seed's
/// description: bit by bit, a tree per thread file, rows in pre-order.
fn expected(recording: &Path) -> (Vec<Row>, u64) {
    struct Node {
        method: String,
        children: Vec<usize>,
        done: bool,
    }
    let names = std::fs::read_to_string(recording.join("ids.properties")).unwrap_or_default();
    let name = |id: u64| {
        names
            .lines()
            .find_map(|line| {
                let (signature, n) = line.rsplit_once('=')?;
                (n.trim().parse::<u64>().ok()? == id).then(|| {
                    let (class, rest) = signature.split_once('#').unwrap();
                    format!("{class}.{}", &rest[..rest.find('(').unwrap_or(rest.len())])
                })
            })
            .unwrap_or(format!("unknown.Method#{id}"))
    };
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(recording)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            let id = n
                .strip_prefix("thread-")?
                .strip_suffix(".flow")?
                .parse()
                .ok()?;
            Some((id, e.path()))
        })
        .collect();
    files.sort();
    let (mut rows, mut cut) = (Vec::new(), 0);
    let mut thread = 0;
    for (_, file) in files {
        let bytes = std::fs::read(file).unwrap();
        let (mut nodes, mut roots, mut open) =
            (Vec::<Node>::new(), Vec::new(), Vec::<usize>::new());
        let mut at = 0;
        'events: while at < bytes.len() {
            let first = bytes[at];
            let mut value = u64::from(first % 64);
            let mut more = first / 64 % 2 == 1;
            let mut bits = 6;
            let mut next = at + 1;
            while more {
                let Some(&b) = bytes.get(next) else {
                    cut += 1;
                    break 'events;
                };
                value += u64::from(b % 128) << bits;
                bits += 7;
                more = b >= 128;
                next += 1;
            }
            at = next;
            if first >= 128 {
                nodes.push(Node {
                    method: name(value),
                    children: Vec::new(),
                    done: false,
                });
                let n = nodes.len() - 1;
                match open.last() {
                    Some(&parent) => nodes[parent].children.push(n),
                    None => roots.push(n),
                }
                open.push(n);
            } else {
                for _ in 0..=value {
                    if let Some(n) = open.pop() {
                        nodes[n].done = true;
                    }
                }
            }
        }
        if nodes.is_empty() {
            continue;
        }
        let mut stack: Vec<(usize, u64)> = roots.iter().rev().map(|&n| (n, 0)).collect();
        while let Some((n, depth)) = stack.pop() {
            let node = &nodes[n];
            rows.push((
                thread,
                depth,
                node.children.len() as u64,
                node.method.clone(),
                !node.done,
            ));
            stack.extend(node.children.iter().rev().map(|&c| (c, depth + 1)));
        }
        thread += 1;
    }
    (rows, cut)
}

#[test]
fn the_agents_recordings_import_as_an_independent_reading_says() {
    let Some(samples) = samples() else { return };
    let dir = tempfile::tempdir().unwrap();
    // (recording, calls, unfinished calls, damaged tails), from the samples' README.
    let facts = [
        ("workers", 67_185, 0, 0),
        ("recursion", 5_834, 0, 0),
        ("hotloop", 420_303, 0, 0),
        ("exit-running", 219_723, 12, 1),
    ];
    for (name, calls, unfinished, damaged) in facts {
        let recording = samples.join(name);
        assert_eq!(SourceFormat::detect(&recording), Some(SourceFormat::Flow));
        let trace = dir.path().join(format!("{name}.trace"));
        let summary = import_file(&recording, &trace, None, &|_| {}).unwrap();
        assert_eq!(
            (
                summary.calls,
                summary.unfinished_calls,
                summary.damage.len()
            ),
            (calls, unfinished, damaged),
            "{name}"
        );
        let (rows, cut) = expected(&recording);
        assert_eq!(cut as usize, damaged, "{name}");
        let imported = dumped(&trace);
        assert_eq!(imported.len(), rows.len(), "{name}");
        if let Some(i) = (0..rows.len()).find(|&i| imported[i] != rows[i]) {
            panic!("{name}: row {i}: {:?} != {:?}", imported[i], rows[i]);
        }
        assert_eq!(imported.iter().filter(|r| r.4).count() as u64, unfinished);
    }
    let exit = dumped(&dir.path().join("exit-running.trace"));
    assert_eq!(exit.iter().map(|r| r.1).max(), Some(30));
    let recursion = dumped(&dir.path().join("recursion.trace"));
    assert_eq!(recursion.iter().map(|r| r.1).max(), Some(2_001));
    let hotloop = dumped(&dir.path().join("hotloop.trace"));
    assert!(hotloop.iter().any(|r| r.2 == 300_000));
}

#[test]
fn every_truncation_and_byte_change_imports_or_fails_typed() {
    let Some(samples) = samples() else { return };
    // The first 1,500 bytes: calls 1,400 deep, and runs of returns.
    let mut original = std::fs::read(samples.join("recursion/thread-1.flow")).unwrap();
    original.truncate(1_500);
    let names = std::fs::read(samples.join("recursion/ids.properties")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(IDS_FILE), names).unwrap();
    let source = dir.path().join("thread-1.flow");
    let trace = dir.path().join("out.trace");
    let mut damaged = 0;
    let mut check = |bytes: &[u8]| {
        std::fs::write(&source, bytes).unwrap();
        // Every outcome is a summary or a typed error; the trace is whole.
        if let Ok(summary) = import_file(&source, &trace, None, &|_| {}) {
            damaged += summary.damage.len();
            let rows = dumped(&trace);
            assert_eq!(rows.len() as u64, summary.calls);
        }
    };
    for len in 0..original.len() {
        check(&original[..len]);
    }
    let mut changed = original.clone();
    for at in 0..original.len() {
        for mask in [0xFF, 0x40] {
            changed[at] ^= mask;
            check(&changed);
            changed[at] ^= mask;
        }
    }
    assert!(damaged > 0, "some changes cut the last event");
}

#[test]
fn random_mutations_import_or_fail_typed() {
    let Some(samples) = samples() else { return };
    let mut inputs = Vec::new();
    for recording in ["recursion", "workers", "exit-running", "hotloop"] {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(samples.join(recording)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".java") {
                continue;
            }
            // The first 3 KB of each thread: small cases that still nest.
            let mut bytes = std::fs::read(&path).unwrap();
            if name.ends_with(".flow") {
                bytes.truncate(3 << 10);
            }
            files.push((name, bytes));
        }
        files.sort();
        inputs.push(Input {
            name: recording.to_string(),
            files,
            entry: None,
        });
    }
    campaign(SourceFormat::Flow, inputs);
}
