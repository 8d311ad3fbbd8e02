//! The documents name only paths that exist. Every repository path named
//! in README.md, ARCHITECTURE.md, CONTRIBUTING.md, docs/*.md and the module
//! docs (`//!`) of src/ and cli/src/ must be a file or folder of the
//! repository: a path from the root (`src/…`, `cli/…`, `tests/…`,
//! `benches/…`, `docs/…`, `testdata/…`, `testkit/…`, `examples/…`,
//! `.ci/…`) exactly, a shorter one in a code span (`lazy/open.rs`,
//! `mod.rs`) as the end of some path. Spans with a placeholder in capitals
//! (`DIR/lookups/`, `NAME.trace`) name no one file and are not checked.
//! And every module doc stays within 40 lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Folders at the repository's root that a path from the root starts with.
const ROOTS: [&str; 9] = [
    "src/",
    "cli/",
    "tests/",
    "benches/",
    "docs/",
    "testdata/",
    "testkit/",
    "examples/",
    ".ci/",
];

/// Words the documents use for any name in a path pattern.
const PLACEHOLDERS: [&str; 14] = [
    "CACHE", "DIR", "NAME", "HASH", "FILE", "OUT", "REL", "PID", "N", "X", "SHAPE", "TEMP",
    "TRACE", "INODE",
];

/// The namespace of the service's method names (`docs/PROTOCOL.md`): a
/// code span in it names a method, not a path.
const METHOD_NAMESPACE: &str = "trace/";

/// File endings that make a code span without a `/` a path.
const EXTENSIONS: [&str; 4] = [".rs", ".md", ".java", ".toml"];

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file and folder of the repository (without `target/`, `.git/`),
/// relative to its root; folders end with `/`.
fn all_paths(root: &Path, relative: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(root.join(relative)).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if relative.is_empty() && (name == "target" || name == ".git") {
            continue;
        }
        let path = format!("{relative}{name}");
        if entry.file_type().unwrap().is_dir() {
            out.push(format!("{path}/"));
            all_paths(root, &format!("{path}/"), out);
        } else {
            out.push(path);
        }
    }
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/')
}

/// Whether `path` holds a placeholder word (`DIR`, `NAME`) rather than a
/// name.
fn has_placeholder(path: &str) -> bool {
    path.split(|c: char| !c.is_ascii_alphabetic())
        .any(|word| PLACEHOLDERS.contains(&word))
}

/// The paths `line` names: code spans that look like paths, and words
/// that start with a root folder. Each is `(path, from_root)`.
fn named_paths(line: &str) -> Vec<(String, bool)> {
    let mut paths = Vec::new();
    for (i, span) in line.split('`').enumerate() {
        let is_code = i % 2 == 1;
        if is_code
            && !span.is_empty()
            && span.chars().all(is_path_char)
            && (span.contains('/') || EXTENSIONS.iter().any(|e| span.ends_with(e)))
            && !span.starts_with(['/', '.', '-'])
            && !span.contains("..")
            && !span.starts_with(METHOD_NAMESPACE)
        {
            let from_root = ROOTS.iter().any(|r| span.starts_with(r));
            paths.push((span.to_string(), from_root));
        }
        // Words from the root, in prose or code.
        for word in span.split(|c: char| !is_path_char(c)) {
            let word = word.trim_end_matches('.');
            let at_root = word.starts_with(".ci/") || !word.starts_with('.');
            if at_root && ROOTS.iter().any(|r| word.starts_with(r)) {
                paths.push((word.to_string(), true));
            }
        }
    }
    paths
}

#[test]
fn every_path_the_documents_name_exists() {
    let root = repository();
    let mut documents: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|name| root.join(name))
        .collect();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            documents.push(path);
        }
    }
    let mut sources = Vec::new();
    rust_files(&root.join("src"), &mut sources);
    rust_files(&root.join("cli/src"), &mut sources);
    let mut existing = Vec::new();
    all_paths(&root, "", &mut existing);
    let exists = |path: &str, from_root: bool| {
        if from_root {
            root.join(path).exists()
        } else {
            existing
                .iter()
                .any(|p| p == path || p.ends_with(&format!("/{path}")))
        }
    };

    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut checked = 0;
    let mut check = |text: &str, file: &Path, line: usize| {
        for (path, from_root) in named_paths(text) {
            if has_placeholder(&path) {
                continue;
            }
            checked += 1;
            if !exists(&path, from_root) {
                let place = format!("{}:{line}", file.strip_prefix(&root).unwrap().display());
                missing.entry(path).or_default().push(place);
            }
        }
    };
    for document in &documents {
        let text = std::fs::read_to_string(document).unwrap();
        for (n, line) in text.lines().enumerate() {
            check(line, document, n + 1);
        }
    }
    for source in &sources {
        let text = std::fs::read_to_string(source).unwrap();
        for (n, line) in text.lines().enumerate() {
            if let Some(doc) = line.trim_start().strip_prefix("//!") {
                check(doc, source, n + 1);
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} paths found: is the scan broken?"
    );
    let report: Vec<String> = missing
        .iter()
        .map(|(path, places)| format!("{path} (named in {})", places.join(", ")))
        .collect();
    assert!(
        report.is_empty(),
        "{} named paths do not exist:\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn the_scan_finds_paths_in_code_spans_and_prose() {
    let found = named_paths("see `lazy/open.rs` and src/read/mod.rs, `a b`, `crate::x`.");
    assert_eq!(
        found,
        [
            ("lazy/open.rs".to_string(), false),
            ("src/read/mod.rs".to_string(), true)
        ]
    );
    assert!(has_placeholder("DIR/lookups/"));
    assert!(!has_placeholder("docs/IMPORTS.md"));
}

/// Module docs over 40 lines, each still to be rewritten: the list may
/// only shrink (a file here that is short enough, or gone, must leave it).
const LONG_MODULE_DOCS_TO_REWRITE: [&str; 1] = ["src/lib.rs"];

/// The longest a module doc may be: the idea and its invariants.
const MAX_MODULE_DOC_LINES: usize = 40;

#[test]
fn module_docs_are_at_most_40_lines() {
    let root = repository();
    let mut sources = Vec::new();
    rust_files(&root.join("src"), &mut sources);
    rust_files(&root.join("cli/src"), &mut sources);
    let mut long = Vec::new();
    for source in &sources {
        let text = std::fs::read_to_string(source).unwrap();
        let lines = text
            .lines()
            .take_while(|line| line.trim_start().starts_with("//!"))
            .count();
        if lines > MAX_MODULE_DOC_LINES {
            let name = source.strip_prefix(&root).unwrap().display().to_string();
            long.push((name, lines));
        }
    }
    let unexpected: Vec<_> = long
        .iter()
        .filter(|(name, _)| !LONG_MODULE_DOCS_TO_REWRITE.contains(&name.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "module docs over {MAX_MODULE_DOC_LINES} lines (file, lines): {unexpected:?}"
    );
    let done: Vec<_> = LONG_MODULE_DOCS_TO_REWRITE
        .iter()
        .filter(|name| !long.iter().any(|(n, _)| n == *name))
        .collect();
    assert!(
        done.is_empty(),
        "no longer over {MAX_MODULE_DOC_LINES} lines: remove {done:?} from the list"
    );
}
