//! The rows the checks compare, read back from an imported trace, and the
//! pre-order rows of an expected forest, for the importers' tests.

use std::path::Path;

use crate::import::{ImportSummary, SourceFormat, import_file};
use crate::read::{LazyTraceReader, SidecarPolicy};

/// Thread, depth, kind, children, method (calls only), unfinished.
pub type Row = (u64, u64, String, u64, Option<String>, bool);

/// The rows of `tracetree dump --format jsonl` of a trace (read without
/// writing a sidecar beside it).
pub fn dumped(trace: &Path) -> Vec<Row> {
    let reader = LazyTraceReader::options()
        .sidecar(SidecarPolicy::ReadOnly)
        .open(trace)
        .unwrap();
    let mut out = Vec::new();
    crate::print::write_jsonl(&reader, None, &mut out).unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let kind = row["kind"].as_str().unwrap().to_string();
            let method =
                (kind == "method_call").then(|| row["method"].as_str().unwrap().to_string());
            (
                row["thread"].as_u64().unwrap(),
                row["depth"].as_u64().unwrap(),
                kind,
                row["children"].as_u64().unwrap(),
                method,
                row.get("unfinished").is_some_and(|u| u == true),
            )
        })
        .collect()
}

/// A node of an expected tree.
#[derive(Debug, Clone)]
pub struct Node {
    /// `method_call`, `read_field`, ….
    pub kind: &'static str,
    /// The call's method, `package.Class.method`.
    pub method: Option<String>,
    /// Children, as indexes into the thread's nodes.
    pub children: Vec<usize>,
}

/// Builds one thread's expected forest as events arrive.
#[derive(Debug, Default, Clone)]
pub struct Forest {
    /// Every node.
    pub nodes: Vec<Node>,
    /// The roots.
    pub roots: Vec<usize>,
    /// The open calls.
    pub open: Vec<usize>,
}

impl Forest {
    /// Adds a node under the innermost open call; a call opens.
    pub fn push(&mut self, kind: &'static str, method: Option<String>) {
        let n = self.nodes.len();
        self.nodes.push(Node {
            kind,
            method,
            children: Vec::new(),
        });
        match self.open.last() {
            Some(&parent) => self.nodes[parent].children.push(n),
            None => self.roots.push(n),
        }
        if kind == "method_call" {
            self.open.push(n);
        }
    }

    /// Closes the innermost open call; false when none is open.
    pub fn pop(&mut self) -> bool {
        self.open.pop().is_some()
    }

    /// The pre-order rows of thread `thread`.
    pub fn rows(&self, thread: u64) -> Vec<Row> {
        let mut unfinished = vec![false; self.nodes.len()];
        for &n in &self.open {
            unfinished[n] = true;
        }
        let mut rows = Vec::new();
        let mut stack: Vec<(usize, u64)> = self.roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((n, depth)) = stack.pop() {
            let node = &self.nodes[n];
            rows.push((
                thread,
                depth,
                node.kind.to_string(),
                node.children.len() as u64,
                node.method.clone(),
                unfinished[n],
            ));
            stack.extend(node.children.iter().rev().map(|&c| (c, depth + 1)));
        }
        rows
    }
}

/// Asserts that two row lists are equal, naming the first difference.
pub fn assert_rows(imported: &[Row], expected: &[Row], what: &str) {
    if let Some(i) = (0..imported.len().min(expected.len())).find(|&i| imported[i] != expected[i]) {
        panic!("{what}: row {i}: {:?} != {:?}", imported[i], expected[i]);
    }
    assert_eq!(imported.len(), expected.len(), "{what}: row count");
}

/// A small seeded generator (xorshift64*), so the tests need no crate.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent` %.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Writes `bytes` as `name` in `dir`, checks that it is detected as
/// `format`, imports it and compares its rows with `expected`.
pub fn import_generated(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    format: SourceFormat,
    expected: &[Row],
) -> ImportSummary {
    let source = dir.join(name);
    std::fs::write(&source, bytes).unwrap();
    assert_eq!(SourceFormat::detect(&source), Some(format), "{name}");
    let trace = dir.join(format!("{name}.trace"));
    let summary = import_file(&source, &trace, None, &|_| {}).unwrap();
    assert_rows(&dumped(&trace), expected, name);
    summary
}

/// Imports every `step`-th truncation and every `step`-th byte changed by
/// each of `masks`: each gives a summary whose calls are the trace's, or
/// a typed error; never a panic.
pub fn mutation_campaign(original: &[u8], format: SourceFormat, step: usize, masks: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    let trace = dir.path().join("out.trace");
    let check = |bytes: &[u8]| {
        std::fs::write(&source, bytes).unwrap();
        if let Ok(summary) = import_file(&source, &trace, Some(format), &|_| {}) {
            let rows = dumped(&trace);
            let calls = rows.iter().filter(|r| r.2 == "method_call").count();
            assert_eq!(calls as u64, summary.calls);
        }
    };
    for len in (0..original.len()).step_by(step) {
        check(&original[..len]);
    }
    let mut changed = original.to_vec();
    for at in (0..original.len()).step_by(step) {
        for &mask in masks {
            changed[at] ^= mask;
            check(&changed);
            changed[at] ^= mask;
        }
    }
}
