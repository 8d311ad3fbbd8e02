//! The `sizes` benchmark's measuring parts: its child processes, criterion's
//! results read back, and the table's numbers.

use std::path::PathBuf;
use std::process::Command;
use std::time::SystemTime;

use super::CHILD;

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` gives them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// What one run in its own process measured.
#[derive(Clone, Copy, Default)]
pub struct ChildRun {
    pub seconds: f64,
    pub peak_rss: u64,
    pub peak_anon: u64,
    pub reset: bool,
    pub written: u64,
}

/// Runs case `id` in a child process of this benchmark (`CHILD=id`) and
/// reads back what it measured.
pub fn child(id: &str) -> ChildRun {
    let output = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, id)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Some(line) = stdout.lines().find(|l| l.starts_with("SIZES ")) else {
        panic!(
            "case {id} failed: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let fields: Vec<&str> = line.split_whitespace().collect();
    ChildRun {
        seconds: fields[2].parse().unwrap(),
        peak_rss: fields[3].parse().unwrap(),
        peak_anon: fields[4].parse().unwrap(),
        reset: fields[5] == "true",
        written: fields[6].parse().unwrap(),
    }
}

/// `64MB`, `1GB`: how a size is named in file names and tables.
pub fn size_label(size: u64) -> String {
    if size >= 1 << 30 && size.is_multiple_of(1 << 30) {
        format!("{}GB", size >> 30)
    } else {
        format!("{}MB", size >> 20)
    }
}

/// The comma-separated list in environment variable `name`, if set.
pub fn list_env(name: &str) -> Option<Vec<String>> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
}

/// Criterion's median for `group`/`id`, written by this run.
pub fn criterion_median(group: &str, id: &str, since: SystemTime) -> Option<f64> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let file = target
        .join("criterion")
        .join(group)
        .join(id)
        .join("new/estimates.json");
    if std::fs::metadata(&file).ok()?.modified().ok()? < since {
        return None;
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    Some(json["median"]["point_estimate"].as_f64()? / 1e9)
}

/// `seconds` with the unit that suits it: s, ms or µs.
pub fn duration(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.2} µs", seconds * 1e6)
    }
}
