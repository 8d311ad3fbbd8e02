//! Blinky traces generated from the seed's grammar, with the noise real
//! output carries (program output, extra fields, unlisted kinds, no `;`,
//! bytes that are not UTF-8, a cut last line), each imported and compared
//! row for row with the forest the generator expects; and every truncation
//! and byte change of a small one.

use crate::import::test_mutations::{Input, campaign};
use std::collections::BTreeMap;

use super::*;
use crate::import::test_rows::{
    Forest, Rng, Row, assert_rows, dumped, import_generated, mutation_campaign,
};
use crate::import::{SourceFormat, import_file};

/// The tracepoint an instruction of `kind` with `opcode` makes, if any.
fn expected_kind(kind: &str, opcode: i32) -> Option<&'static str> {
    Some(match (kind, opcode) {
        ("$enter$", _) => "method_call",
        ("$athrow$", _) => "throw",
        ("$arrayload$", _) => "read_array",
        ("$arraystore$", _) => "write_array",
        ("$field$", 178 | 180) => "read_field",
        ("$field$", 179 | 181) => "write_field",
        ("$var$", 21..=25) => "read_local",
        ("$var$", 54..=58) => "write_local",
        _ => return None,
    })
}

/// A generated trace and what importing it must give.
struct Generated {
    text: Vec<u8>,
    rows: Vec<Row>,
    skipped_exits: u64,
    cut: bool,
}

/// One method's declarations: its name and instructions (id, kind, opcode).
struct Method {
    name: String,
    instructions: Vec<(u64, &'static str, i32)>,
}

fn declare(rng: &mut Rng, text: &mut Vec<u8>, next_id: &mut u64) -> Vec<(u64, Method)> {
    let owners = [
        "demo/app/Main",
        "demo/app/Outer$Inner",
        "Plain",
        "a/b/c/Deep",
    ];
    let mut methods = Vec::new();
    for k in 0..6 {
        let id = 100 + k * 7 + rng.below(5);
        let owner = owners[rng.below(owners.len() as u64) as usize];
        let name = format!("m{k}");
        text.extend(format!("$$method$$,{id},{name},{owner},{}\n", rng.below(16)).as_bytes());
        let mut instructions = Vec::new();
        let kinds = KINDS.iter().copied().chain(["$flow$"]);
        for kind in kinds {
            let opcode = match kind {
                "$enter$" => -2 - rng.below(2) as i32,
                "$exit$" => -4,
                "$field$" => 178 + rng.below(4) as i32,
                "$var$" => [21, 22, 23, 24, 25, 54, 55, 56, 57, 58, 169][rng.below(11) as usize],
                _ => rng.below(200) as i32,
            };
            *next_id += 1 + rng.below(3);
            let insn = *next_id;
            let operands = match kind {
                "$field$" => "demo/app/Main,count,I".to_string(),
                "$var$" => format!("{},,", rng.below(4)),
                _ => ",,".to_string(),
            };
            let end = if rng.chance(50) { ";" } else { "" };
            let line = format!(
                "{kind},{insn},{id},{},{},{opcode},{operands}{end}\n",
                rng.below(90) as i64 - 1,
                rng.below(300)
            );
            text.extend(line.as_bytes());
            instructions.push((insn, kind, opcode));
        }
        let method = Method {
            name: format!("{}.{name}", owner.replace('/', ".")),
            instructions,
        };
        methods.push((id, method));
    }
    methods
}

fn noise(rng: &mut Rng, text: &mut Vec<u8>) {
    match rng.below(7) {
        0 => text.extend(b"Hello, world\n"),
        1 => text.extend(b"\xff\xfe caf\xe9 \x80\n"),
        2 => text.extend(b"$ 5 dollars\n"),
        3 => text.extend(b"$$class$$,3,demo/app/Main,33\n"),
        4 => text.extend(b"\n"),
        5 => text.extend(b"12,34,$$$,56\n"),
        _ => text.extend(b"$$$,broken,line\n"),
    }
}

/// A trace of `events` executions over a few threads.
fn generate(seed: u64, events: usize) -> Generated {
    let mut rng = Rng::new(seed);
    let mut text = Vec::new();
    let mut next_id = 1000;
    let methods = declare(&mut rng, &mut text, &mut next_id);
    let sources = [3u64, 1, 42, 7];
    let mut forests: BTreeMap<u64, Forest> = BTreeMap::new();
    let mut stacks: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    let mut skipped_exits = 0;
    for n in 0..events {
        if rng.chance(10) {
            noise(&mut rng, &mut text);
        }
        // Thread 7 only runs instructions that make no tracepoint.
        let thread = sources[rng.below(sources.len() as u64) as usize];
        let stack = stacks.entry(thread).or_default();
        let roll = rng.below(100);
        let (method, kind_filter) = if roll < 25 && thread != 7 {
            (rng.below(methods.len() as u64) as usize, "$enter$")
        } else if roll < 45 {
            (stack.last().copied().unwrap_or(0), "$exit$")
        } else {
            (stack.last().copied().unwrap_or(0), "")
        };
        let instructions = &methods[method].1.instructions;
        let (insn, kind, opcode) = if kind_filter.is_empty() {
            let pick = instructions[2 + rng.below(instructions.len() as u64 - 2) as usize];
            if thread == 7 && expected_kind(pick.1, pick.2).is_some() {
                instructions[2]
            } else {
                pick
            }
        } else {
            *instructions.iter().find(|i| i.1 == kind_filter).unwrap()
        };
        let forest = forests.entry(thread).or_default();
        let depth = match kind {
            "$enter$" => {
                stack.push(method);
                forest.push("method_call", Some(methods[method].1.name.clone()));
                stack.len()
            }
            "$exit$" => {
                let depth = stack.len();
                if stack.pop().is_none() {
                    skipped_exits += 1;
                }
                forest.pop();
                depth
            }
            _ => {
                if let Some(leaf) = expected_kind(kind, opcode) {
                    forest.push(leaf, None);
                }
                stack.len()
            }
        };
        let extra = match rng.below(4) {
            0 => ",(I)V",
            1 => ",x,y,z,w",
            _ => "",
        };
        let end = if rng.chance(50) { ";" } else { "" };
        let host = if rng.chance(50) {
            "demo.app.Main"
        } else {
            "1234"
        };
        let line = format!("$$$,{n},{thread},{n}0,{depth},{host},{insn},{kind}{extra}{end}\n");
        text.extend(line.as_bytes());
    }
    let cut = seed % 2 == 1;
    if cut {
        text.extend(b"$$$,999999,1,5,2,x,1001");
    }
    let mut rows = Vec::new();
    let with_tracepoints = forests.iter().filter(|(_, f)| !f.nodes.is_empty());
    for (rank, (_, forest)) in with_tracepoints.enumerate() {
        rows.extend(forest.rows(rank as u64));
    }
    Generated {
        text,
        rows,
        skipped_exits,
        cut,
    }
}

#[test]
fn generated_traces_import_as_the_generator_expects() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..12 {
        let generated = generate(seed, 300 + seed as usize * 150);
        let name = format!("run-{seed}.txt");
        let (text, rows) = (&generated.text, &generated.rows);
        let summary = import_generated(dir.path(), &name, text, SourceFormat::Blinky, rows);
        assert_eq!(
            summary.skipped_exits, generated.skipped_exits,
            "seed {seed}"
        );
        assert_eq!(
            summary.damage.len(),
            usize::from(generated.cut),
            "seed {seed}"
        );
        assert_eq!(summary.depth_disagreements, 0, "seed {seed}");
        assert!(summary.skipped["program output lines"] > 0, "seed {seed}");
        assert!(summary.skipped.contains_key("$line$"), "seed {seed}");
        assert!(summary.report().contains("mapped: "), "seed {seed}");
    }
}

#[test]
fn a_depth_that_disagrees_with_the_nesting_is_counted() {
    let text = b"$$method$$,1,run,demo/A,1\n\
        $enter$,10,1,-1,0,-2,,,\n$exit$,11,1,-1,0,-4,,,\n$line$,12,1,5,0,-1,,,\n\
        $$$,1,1,0,1,x,10,$enter$\n$$$,2,1,0,1,x,12,$line$\n$$$,3,1,0,5,x,12,$line$\n\
        $$$,4,1,0,1,x,11,$exit$\n$$$,5,1,0,0,x,11,$exit$\n";
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("t.txt");
    std::fs::write(&source, text).unwrap();
    let trace = dir.path().join("t.trace");
    let summary = import_file(&source, &trace, Some(SourceFormat::Blinky), &|_| {}).unwrap();
    assert_eq!(summary.depth_disagreements, 1);
    assert_eq!(summary.skipped_exits, 1);
    assert_eq!(summary.calls, 1);
    assert_eq!(summary.skipped["$line$"], 2);
    let rows = dumped(&trace);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].4.as_deref(), Some("demo.A.run"));
}

#[test]
fn every_truncation_and_byte_change_imports_or_fails_typed() {
    mutation_campaign(
        &generate(5, 40).text,
        SourceFormat::Blinky,
        5,
        &[0xFF, 0x01],
    );
}

/// The first pass leaves out executions it has no use for (of threads
/// already found, or repeated within a range); whatever the ranges, it
/// finds the threads a line-by-line reading finds, an instruction
/// redeclared between two executions of one thread included.
#[test]
fn threads_are_found_as_a_serial_reading_finds_them() {
    let mut rng = Rng::new(7);
    // Thread 11 only runs instruction 99, which makes no tracepoint.
    let mut text = b"$$method$$,1,run,demo/A,1\n$line$,99,1,5,0,-1,,,\n".to_vec();
    let kinds = ["$enter$", "$line$", "$field$", "$var$", "$jump$"];
    for _ in 0..400 {
        match rng.below(10) {
            0 => {
                let kind = kinds[rng.below(kinds.len() as u64) as usize];
                let id = 10 + rng.below(6);
                text.extend(format!("{kind},{id},1,5,0,180,,,\n").as_bytes());
            }
            1 => text.extend(b"output\n$$$,1,11,0,1,x,99,k\n"),
            _ => {
                let (thread, id) = (rng.below(11), 10 + rng.below(6));
                text.extend(format!("$$$,1,{thread},0,1,x,{id},k\n").as_bytes());
            }
        }
    }
    let mut making = std::collections::HashMap::new();
    let mut expected = BTreeSet::new();
    for text in text.split(|&b| b == b'\n') {
        match line::parse(text) {
            Line::Instruction(declared) => {
                let makes = matches!(declared.kind, b"$enter$" | b"$field$");
                making.insert(declared.id, makes);
            }
            Line::Execution {
                thread,
                instruction,
                ..
            } if making.get(&instruction) == Some(&true) => {
                expected.insert(thread);
            }
            _ => {}
        }
    }
    assert!(expected.len() > 3 && !expected.contains(&11));
    let bytes = TraceBytes::from_vec(text);
    for range_bytes in [1, 30, 100, 1000, 1 << 20] {
        let found = threads_with_tracepoints(&bytes, range_bytes).unwrap();
        assert_eq!(found, expected, "ranges of {range_bytes}");
    }
}

/// However the file is cut into ranges and the commands into batches
/// (ranges ending inside a thread's run of lines, or mid-line before the
/// newline is found; a batch a command long), the import gives the rows
/// the generator expects: damage (garbage lines, a cut last line) stays in
/// its range.
#[test]
fn every_range_and_batch_size_gives_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    for seed in [2, 3] {
        let generated = generate(seed, 600);
        let source = dir.path().join(format!("run-{seed}.txt"));
        std::fs::write(&source, &generated.text).unwrap();
        for (range_bytes, batch) in [(1, 1), (37, 5), (500, 64), (4096, 1 << 16)] {
            let trace = dir.path().join(format!("run-{seed}-{range_bytes}.trace"));
            let writer = StreamingWriter::create(&trace).unwrap();
            let summary = import_in(&source, &writer, &|_| {}, range_bytes, batch).unwrap();
            writer.close_leaving_open().unwrap();
            let what = format!("seed {seed}, ranges of {range_bytes}, batches of {batch}");
            assert_rows(&dumped(&trace), &generated.rows, &what);
            assert_eq!(summary.skipped_exits, generated.skipped_exits, "{what}");
            assert_eq!(summary.damage.len(), usize::from(generated.cut), "{what}");
        }
    }
}

#[test]
fn random_mutations_import_or_fail_typed() {
    let inputs = (0..4)
        .map(|seed| {
            let text = generate(100 + seed, 150 + seed as usize * 50).text;
            Input::file(&format!("run-{seed}.txt"), text)
        })
        .collect();
    campaign(SourceFormat::Blinky, inputs);
}
