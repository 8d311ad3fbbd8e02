//! `tracetree` on a JFR recording made here by the default JDK (`java`,
//! `javac`, `jfr` on `PATH`; without them the test fails, or says SKIPPED
//! with `TRACETREE_ALLOW_SKIP=1`): `info` prints the recording's counts as
//! `jfr summary` does, `import --samples` writes a trace whose `print` and
//! `dump` show the sample counts, and the roots together count every
//! sample of the recording that has a stack.

use std::path::Path;
use std::process::Command;

fn tracetree(cache: &Path, args: &[&str]) -> (bool, String, String) {
    let binary = Path::new(env!("CARGO_BIN_EXE_tracetree"));
    tracetree_testkit::cli::run_with_env(binary, &[("TRACETREE_CACHE_DIR", cache)], args)
}

#[test]
fn info_import_print_and_dump_of_a_recording() {
    let have = |tool: &str| Command::new(tool).arg("--version").output().is_ok();
    if !have("javac") || !have("java") || !have("jfr") {
        tracetree_testkit::skip::cannot_run("no JDK (java, javac, jfr) on PATH");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("Spin.java");
    std::fs::copy(tracetree_testkit::files::testdata("Spin.java"), &source).unwrap();
    let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
    assert!(ok(Command::new("javac")
        .arg("-d")
        .arg(dir.path())
        .arg(&source)));
    let recording = dir.path().join("spin.jfr");
    assert!(ok(Command::new("java")
        .arg(format!(
            "-XX:StartFlightRecording=filename={},settings=profile",
            recording.display()
        ))
        .arg("-cp")
        .arg(dir.path())
        .arg("Spin")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())));
    let file = recording.to_str().unwrap();
    let cache = dir.path().join("cache");

    let (success, info, stderr) = tracetree(&cache, &["info", file]);
    assert!(success, "{stderr}");
    assert!(info.contains("\njfr chunks: 1\n"), "{info}");
    let summary = Command::new("jfr")
        .arg("summary")
        .arg(&recording)
        .output()
        .unwrap();
    let summary = String::from_utf8(summary.stdout).unwrap();
    let samples = summary
        .lines()
        .find_map(|l| l.trim().strip_prefix("jdk.ExecutionSample"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap();
    assert!(
        info.contains(&format!("\n  jdk.ExecutionSample {samples} ")),
        "{info}"
    );

    let out = dir.path().join("spin.trace");
    let output = out.to_str().unwrap();
    let (success, _, import_stderr) =
        tracetree(&cache, &["import", file, "-o", output, "--samples"]);
    assert!(success, "{import_stderr}");
    let (success, text, stderr) = tracetree(&cache, &["print", output]);
    assert!(success, "{stderr}");
    // The JIT decides whether `hot` keeps a frame of its own, so the checks
    // rest on `main`, which every sample of the spinning thread passes.
    assert!(text.contains("Spin.main(): "), "{text}");
    assert!(text.contains(" samples\n"), "{text}");
    let (success, dump, stderr) = tracetree(&cache, &["dump", output]);
    assert!(success, "{stderr}");
    let rows: Vec<serde_json::Value> = dump
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let main = rows
        .iter()
        .find(|row| row["method"] == "Spin.main")
        .expect("Spin.main was sampled");
    assert!(main["samples"].as_i64().unwrap() > 0, "{main}");
    // A node counts the samples whose stacks pass through it, so the roots
    // of all threads together (samples naming no thread among them, under
    // a thread of their own) count every sample of the recording but
    // those without a stack, which the import warns about.
    let roots: i64 = rows
        .iter()
        .filter(|row| row["depth"] == 0)
        .map(|row| row["samples"].as_i64().unwrap())
        .sum();
    let stackless: i64 = import_stderr
        .lines()
        .filter_map(|line| line.split_once(": ").map(|(_, rest)| rest))
        .filter_map(|rest| {
            rest.strip_suffix(" jdk.ExecutionSample events have no stack trace: skipped")
        })
        .filter_map(|count| count.rsplit(' ').next()?.parse::<i64>().ok())
        .sum();
    assert_eq!(
        (roots + stackless).to_string(),
        samples,
        "{import_stderr}\n{dump}"
    );
}
