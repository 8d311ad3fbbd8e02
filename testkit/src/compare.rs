//! Comparisons that name the first difference, for readable failures.

/// Panics with the offset of the first differing byte, and the bytes around it.
pub fn assert_same_bytes(what: &str, written: &[u8], expected: &[u8]) {
    if written == expected {
        return;
    }
    let first = written
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(written.len().min(expected.len()));
    let around =
        |bytes: &[u8]| bytes[first.saturating_sub(8)..(first + 24).min(bytes.len())].to_vec();
    panic!(
        "{what}: {} bytes written, {} expected; first difference at offset {first}\n written: {:02x?}\nexpected: {:02x?}",
        written.len(),
        expected.len(),
        around(written),
        around(expected),
    );
}

/// The first line where `ours` and `expected` differ.
pub fn first_difference(ours: &[u8], expected: &[u8]) -> String {
    let lines = ours
        .split(|&b| b == b'\n')
        .zip(expected.split(|&b| b == b'\n'));
    for (i, (a, b)) in lines.enumerate() {
        if a != b {
            return format!(
                "line {}:\n  ours:     {}\n  expected: {}",
                i + 1,
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(b)
            );
        }
    }
    format!("lengths differ: {} vs {} bytes", ours.len(), expected.len())
}
