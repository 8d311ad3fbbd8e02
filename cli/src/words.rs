//! Numbers in the words the commands print.

/// `n` with thousands separated by commas.
pub fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The plural ending for `count` things.
pub fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}
