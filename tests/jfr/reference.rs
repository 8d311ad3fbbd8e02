//! The reference rows, built from the JDK's own output: sample trees and
//! nested method traces from `jfr print --json`, event counts from `jfr
//! summary`. Written from `docs/IMPORTS.md`, independently of the import.

use std::collections::BTreeMap;

use serde_json::Value;

/// The compared keys of one dump row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub thread: i64,
    pub depth: usize,
    pub children: usize,
    pub method: String,
    pub samples: i64,
}

impl Row {
    /// The row of one line of `tracetree dump`.
    pub fn from_dump(line: &Value) -> Row {
        assert_eq!(line["kind"], "method_call");
        Row {
            thread: line["thread"].as_i64().unwrap(),
            depth: line["depth"].as_u64().unwrap() as usize,
            children: line["children"].as_u64().unwrap() as usize,
            method: line["method"].as_str().unwrap().to_string(),
            samples: line["samples"].as_i64().unwrap_or(0),
        }
    }
}

/// `(package.Class.method, descriptor)` of a JSON method.
fn method_key(method: &Value) -> Option<(String, String)> {
    let class = method["type"]["name"].as_str()?.replace('/', ".");
    let name = method["name"].as_str()?;
    let descriptor = method["descriptor"].as_str().unwrap_or("").to_string();
    Some((format!("{class}.{name}"), descriptor))
}

fn events(json: &Value) -> &[Value] {
    json["recording"]["events"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

#[derive(Default)]
struct Node {
    samples: i64,
    children: BTreeMap<(String, String), Node>,
}

fn emit(thread: i64, depth: usize, key: &(String, String), node: &Node, rows: &mut Vec<Row>) {
    rows.push(Row {
        thread,
        depth,
        children: node.children.len(),
        method: key.0.clone(),
        samples: node.samples,
    });
    for (key, child) in &node.children {
        emit(thread, depth + 1, key, child, rows);
    }
}

/// The merged sample trees of `jdk.ExecutionSample` events, in pre-order:
/// one per Java thread by id, then one for the samples that name none
/// (`sampledThread` null, or without a Java id).
pub fn sample_rows(json: &Value) -> Vec<Row> {
    let mut threads: BTreeMap<(bool, i64), Node> = BTreeMap::new();
    for event in events(json) {
        let values = &event["values"];
        let thread = values["sampledThread"]["javaThreadId"]
            .as_i64()
            .filter(|&id| id != 0);
        let thread = (thread.is_none(), thread.unwrap_or_default());
        let stack = &values["stackTrace"];
        let frames: Vec<_> = stack["frames"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            // `jfr print` leaves out the frames of methods the JVM hides.
            .filter(|f| f["method"]["hidden"].as_bool() != Some(true))
            .filter_map(|f| method_key(&f["method"]))
            .collect();
        if frames.is_empty() {
            continue;
        }
        let mut node = threads.entry(thread).or_default();
        if stack["truncated"].as_bool() == Some(true) {
            node = node
                .children
                .entry(("<truncated>".to_string(), String::new()))
                .or_default();
            node.samples += 1;
        }
        for frame in frames.into_iter().rev() {
            node = node.children.entry(frame).or_default();
            node.samples += 1;
        }
    }
    let mut rows = Vec::new();
    for (index, root) in threads.values().enumerate() {
        for (key, node) in &root.children {
            emit(index as i64, 0, key, node, &mut rows);
        }
    }
    rows
}

/// Days since 1970-01-01 of a civil date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-11-25T02:30:50.732385148Z` in ns since the epoch.
fn instant_nanos(text: &str) -> i64 {
    let text = text.strip_suffix('Z').expect("an instant in UTC");
    let (date, time) = text.split_once('T').unwrap();
    let date: Vec<i64> = date.split('-').map(|p| p.parse().unwrap()).collect();
    let (hms, fraction) = time.split_once('.').unwrap_or((time, ""));
    let hms: Vec<i64> = hms.split(':').map(|p| p.parse().unwrap()).collect();
    let seconds = days_from_civil(date[0], date[1], date[2]) * 86_400
        + hms[0] * 3600
        + hms[1] * 60
        + hms.get(2).copied().unwrap_or(0);
    seconds * 1_000_000_000 + fraction_nanos(fraction)
}

fn fraction_nanos(fraction: &str) -> i64 {
    let digits = format!("{fraction:0<9}");
    digits[..9].parse().unwrap()
}

/// `PT1M2.000000821S` in ns.
fn duration_nanos(text: &str) -> i64 {
    let mut rest = text.strip_prefix("PT").expect("a java.time.Duration");
    let mut total = 0i64;
    while !rest.is_empty() {
        let end = rest.find(|c: char| c.is_ascii_alphabetic()).unwrap();
        let (number, unit) = (&rest[..end], &rest[end..end + 1]);
        let negative = number.starts_with('-');
        let (whole, fraction) = number
            .trim_start_matches('-')
            .split_once('.')
            .unwrap_or((number.trim_start_matches('-'), ""));
        let whole: i64 = whole.parse().unwrap();
        let value = match unit {
            "H" => whole * 3_600_000_000_000,
            "M" => whole * 60_000_000_000,
            "S" => whole * 1_000_000_000 + fraction_nanos(fraction),
            other => panic!("unit {other}"),
        };
        total += if negative { -value } else { value };
        rest = &rest[end + 1..];
    }
    total
}

/// The `jdk.MethodTrace` events nested by time containment per thread, in
/// pre-order.
pub fn trace_rows(json: &Value) -> Vec<Row> {
    struct Call {
        start: i64,
        end: i64,
        order: usize,
        method: String,
    }
    let mut threads: BTreeMap<i64, Vec<Call>> = BTreeMap::new();
    for (order, event) in events(json).iter().enumerate() {
        let values = &event["values"];
        let Some(thread) = values["eventThread"]["javaThreadId"].as_i64() else {
            continue;
        };
        let Some((method, _)) = method_key(&values["method"]) else {
            continue;
        };
        let start = instant_nanos(values["startTime"].as_str().unwrap());
        let end = start + duration_nanos(values["duration"].as_str().unwrap());
        threads.entry(thread).or_default().push(Call {
            start,
            end,
            order,
            method,
        });
    }
    let mut rows = Vec::new();
    for (index, calls) in threads.values_mut().enumerate() {
        calls.sort_by(|a, b| (a.start, b.end, b.order).cmp(&(b.start, a.end, a.order)));
        // Parent of each call, found with a stack of open calls.
        let mut open: Vec<usize> = Vec::new();
        let mut depth = vec![0usize; calls.len()];
        let mut children = vec![0usize; calls.len()];
        for i in 0..calls.len() {
            while let Some(&top) = open.last() {
                if calls[top].start <= calls[i].start && calls[i].end <= calls[top].end {
                    break;
                }
                open.pop();
            }
            if let Some(&parent) = open.last() {
                children[parent] += 1;
                depth[i] = depth[parent] + 1;
            }
            open.push(i);
        }
        for (i, call) in calls.iter().enumerate() {
            rows.push(Row {
                thread: index as i64,
                depth: depth[i],
                children: children[i],
                method: call.method.clone(),
                samples: 0,
            });
        }
    }
    rows
}

/// `jfr summary`'s chunk count and counts by event type.
pub fn summary_counts(text: &str) -> (usize, BTreeMap<String, u64>) {
    let mut chunks = 0;
    let mut counts = BTreeMap::new();
    let mut in_table = false;
    for line in text.lines() {
        if let Some(n) = line.trim().strip_prefix("Chunks:") {
            chunks = n.trim().parse().unwrap();
        } else if line.starts_with("====") {
            in_table = true;
        } else if in_table {
            let parts: Vec<_> = line.split_whitespace().collect();
            if let [name, count, _size] = parts[..] {
                counts.insert(name.to_string(), count.parse().unwrap());
            }
        }
    }
    (chunks, counts)
}
