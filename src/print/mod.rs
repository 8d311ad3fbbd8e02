//! Output forms of a trace: the reference text form and a JSON-lines dump.
//! Both walk any [`TraceTree`](crate::tree::TraceTree), on all cores: the
//! trace is cut into parts formatted in parallel and written in order.

pub(crate) mod jsonl;
mod ordered;
#[cfg(test)]
mod parallel_tests;
mod parent;
pub(crate) mod plan;
mod text;

pub(crate) use text::adorn;

pub use jsonl::write_jsonl;
pub use text::{Parent, PrintOptions, TextFormatter, node_text};

/// `n` with its thousands separated by commas (`2,663`), as every message
/// and summary of the project writes counts (the command line's are
/// indicatif's `HumanCount`, the same).
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut text = String::with_capacity(digits.len() + digits.len() / 3);
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

#[cfg(test)]
mod grouped_tests {
    #[test]
    fn thousands_are_separated_by_commas() {
        assert_eq!(super::grouped(1_234_567), "1,234,567");
        assert_eq!(super::grouped(999), "999");
        assert_eq!(super::grouped(0), "0");
    }
}
