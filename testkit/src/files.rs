//! Where the tests' input traces are: the bundled `testdata/` and the
//! reference recorder's traces beside the repository.

use std::path::{Path, PathBuf};

use tracetree::generate::{GenerateOptions, Shape, generate_file};

/// The reference traces that the recorder finished (each with an index
/// and printed output), by name (`NAME.trace` in [`reference_traces`]).
/// `crashed` is the one it did not finish.
pub const COMPLETE_REFERENCE_TRACES: [&str; 5] = [
    "all-types-stream",
    "all-types-dump",
    "small-stream",
    "small-dump",
    "medium-stream",
];

/// The folder of reference traces written by the reference recorder, or
/// `None` when it is absent and skipping is allowed (otherwise the test
/// fails: see [`crate::skip`]).
pub fn reference_traces() -> Option<PathBuf> {
    let dir = repository().join("../shared/reference-traces");
    if dir.is_dir() {
        Some(dir)
    } else {
        crate::skip::cannot_run(&format!(
            "the reference traces folder {} is missing",
            dir.display()
        ));
        None
    }
}

/// A sample recording of a foreign format beside the repository
/// (`../shared/samples/REL`), or `None` when it is absent and skipping is
/// allowed (otherwise the test fails: see [`crate::skip`]).
pub fn shared_sample(rel: &str) -> Option<PathBuf> {
    let path = repository().join("../shared/samples").join(rel);
    if path.exists() {
        Some(path)
    } else {
        crate::skip::cannot_run(&format!("the sample {} is missing", path.display()));
        None
    }
}

/// The repository's root: the parent of this test-support package.
pub fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The path of a bundled test trace.
pub fn testdata(name: &str) -> PathBuf {
    repository().join("testdata").join(name)
}

/// Generates `dir/SHAPE.trace` and its index: about `size` bytes of `shape`
/// recorded by `threads` threads, in blocks of `block_size` payload bytes
/// (`None`: the generator's default); returns the data file's path.
pub fn generated(
    dir: &Path,
    shape: Shape,
    threads: usize,
    size: u64,
    block_size: Option<usize>,
) -> PathBuf {
    let path = dir.join(format!("{shape}.trace"));
    let options = GenerateOptions {
        threads,
        block_size,
        ..GenerateOptions::new(size, shape)
    };
    generate_file(&path, &options, |_| {}).unwrap();
    path
}

/// Packs `data` (and `index`, when there is one) into `out` with the JDK's
/// own ZIP classes, as the trace recorder packs (`tests/read/Pack.java`):
/// `mode` is `deflate0` (the recorder's level 0: stored deflate blocks),
/// `deflate` (the default level) or `stored`; `extra` names one more
/// entry. `false` when `java` does not run and skipping is allowed (see
/// [`crate::skip`]); a failing `java` panics.
pub fn jdk_pack(
    mode: &str,
    out: &Path,
    info: &str,
    data: &Path,
    index: Option<&Path>,
    extra: Option<&str>,
) -> bool {
    let info_path = out.with_extension("info.txt");
    std::fs::write(&info_path, info).unwrap();
    let mut command = std::process::Command::new("java");
    command
        .arg(repository().join("tests/read/Pack.java"))
        .arg(mode)
        .args([out, &info_path, data, index.unwrap_or(Path::new("-"))])
        .args(extra);
    let output = command.output();
    let _ = std::fs::remove_file(&info_path);
    let Ok(output) = output else {
        crate::skip::cannot_run("no `java` on PATH to pack a trace as the recorder does");
        return false;
    };
    assert!(
        output.status.success(),
        "java Pack.java {mode} {}: {}",
        out.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    true
}
