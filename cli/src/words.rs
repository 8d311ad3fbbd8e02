//! Numbers in the words the commands print.

/// `n` with thousands separated by commas.
pub fn group(n: impl TryInto<u64>) -> String {
    // usize and u64 both convert: 64-bit counts at most.
    indicatif::HumanCount(n.try_into().unwrap_or(u64::MAX)).to_string()
}

/// The plural ending for `count` things.
pub fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// `n` things in words, `n` grouped: `1 thread`, `2,663 threads`.
pub fn count(n: u64, thing: &str) -> String {
    format!("{} {thing}{}", group(n), plural(n))
}

/// `bytes` in the largest unit of 1024 that keeps a whole number before
/// the point: `512 bytes`, `1.0 KiB`, `2.5 GiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} byte{}", plural(bytes));
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `n` calls or loops in words: `1 call or loop`, `12 calls or loops`.
pub fn calls_or_loops(n: u64) -> String {
    match n {
        1 => "1 call or loop".to_string(),
        n => format!("{} calls or loops", group(n)),
    }
}
