//! One Blinky line, split on `,` without escaping: a method declaration,
//! an instruction declaration, an execution, or program output.

/// The instruction kinds the seed lists, in its order.
pub const KINDS: [&str; 22] = [
    "$enter$",
    "$exit$",
    "$line$",
    "$athrow$",
    "$return$",
    "$invoke$",
    "$complete$",
    "$var$",
    "$jump$",
    "$field$",
    "$iinc$",
    "$zero$",
    "$constant$",
    "$arrayload$",
    "$arraystore$",
    "$math$",
    "$stack$",
    "$type$",
    "$compare$",
    "$arraylen$",
    "$monitor$",
    "$switch$",
];

/// Index of `$enter$` in [`KINDS`].
pub const ENTER: u16 = 0;
/// Index of `$exit$`.
pub const EXIT: u16 = 1;
/// Index of `$athrow$`.
pub const ATHROW: u16 = 3;
/// Index of `$var$`.
pub const VAR: u16 = 7;
/// Index of `$field$`.
pub const FIELD: u16 = 9;
/// Index of `$arrayload$`.
pub const ARRAYLOAD: u16 = 13;
/// Index of `$arraystore$`.
pub const ARRAYSTORE: u16 = 14;

/// An instruction declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction<'a> {
    /// `$enter$`, `$field$`, … (or a kind the seed does not list).
    pub kind: &'a [u8],
    /// The instruction's id.
    pub id: u64,
    /// The declaring method's id.
    pub host: u64,
    /// The source line (−1 unknown).
    pub line: i32,
    /// The opcode.
    pub opcode: i32,
    /// The operands (empty when absent).
    pub operands: [&'a [u8]; 3],
}

/// A parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    /// `$$method$$,ID,NAME,OWNER,ACCESS`.
    Method {
        /// The method's id.
        id: u64,
        /// Its name (possibly with a descriptor).
        name: &'a [u8],
        /// Its owner class, slashed or dotted.
        owner: &'a [u8],
    },
    /// `KIND,ID,DECL_HOST_ID,LINE,BCI,OPCODE,OP1,OP2,OP3`.
    Instruction(Instruction<'a>),
    /// `$$$,ID,THREAD,TIME,DEPTH,DYN_HOST,INSN_ID,TYPE,…`.
    Execution {
        /// `Thread.getId()`.
        thread: u64,
        /// The recorded call depth.
        depth: i64,
        /// The executed instruction.
        instruction: u64,
    },
    /// A declaration the seed does not list (`$$class$$,…`): its kind.
    Unlisted(&'a [u8]),
    /// A line of `$`-shape whose fields do not parse.
    Malformed,
    /// The program's own output.
    Output,
}

/// Parses one line (without its newline).
#[inline]
pub fn parse(line: &[u8]) -> Line<'_> {
    let line = trim_end(line);
    if let Some(rest) = line.strip_prefix(b"$$$,") {
        return parse_execution(rest).unwrap_or(Line::Malformed);
    }
    if line.first() != Some(&b'$') {
        return Line::Output;
    }
    let Some(comma) = memchr::memchr(b',', line) else {
        return Line::Output;
    };
    let kind = &line[..comma];
    if kind.len() < 3 || kind.last() != Some(&b'$') {
        return Line::Output;
    }
    let rest = &line[comma + 1..];
    if kind == b"$$method$$" {
        return parse_method(rest).unwrap_or(Line::Malformed);
    }
    if kind.starts_with(b"$$") {
        return Line::Unlisted(kind);
    }
    parse_instruction(kind, rest).unwrap_or(Line::Malformed)
}

/// The line without trailing `\r`, blanks and one optional `;`.
fn trim_end(mut line: &[u8]) -> &[u8] {
    while let [rest @ .., b'\r' | b' ' | b'\t' | b';'] = line {
        line = rest;
    }
    line
}

/// [`plain_start`] for a line alone (without its newline).
#[cfg(test)]
pub(super) fn plain(line: &[u8]) -> Option<(u64, i64, u64)> {
    plain_start(line).map(|(numbers, _)| numbers)
}

/// The thread, depth and instruction of the execution line at the start
/// of `text` (which may go on past the line's newline), if it has the
/// common shape ([`plain_fields`]), read in one scan, and the offset just
/// past INSN_ID's `,` (the line's newline is at or after it); `None` for
/// any other line, which [`parse`] reads. Where this gives numbers,
/// [`parse`] gives an execution of the same numbers.
#[inline]
pub(super) fn plain_start(text: &[u8]) -> Option<((u64, i64, u64), usize)> {
    let (numbers, end) = plain_fields(text.strip_prefix(b"$$$,")?)?;
    Some((numbers, end + 4))
}

/// [`thread_start`] for a line alone (without its newline).
#[cfg(test)]
pub(super) fn plain_thread(line: &[u8]) -> Option<u64> {
    thread_start(line).map(|(thread, _)| thread)
}

/// The thread of the execution line at the start of `text` (which may go
/// on past the line's newline), if its THREAD is a plain decimal (as
/// [`plain_start`] reads it), read without the fields after it, and the
/// offset just past THREAD's `,`; `None` for any other line.
#[inline]
pub(super) fn thread_start(text: &[u8]) -> Option<(u64, usize)> {
    let rest = text.strip_prefix(b"$$$,")?;
    let (thread, end) = plain_field(rest, skip_field(rest, 0)?)?;
    Some((thread, end + 4))
}

/// `ID,THREAD,TIME,DEPTH,DYN_HOST,INSN_ID,TYPE,…`: the fields up to TYPE.
#[inline]
fn parse_execution(rest: &[u8]) -> Option<Line<'_>> {
    let (thread, depth, instruction) = plain_fields(rest)
        .map(|(numbers, _)| numbers)
        .or_else(|| any_execution(rest))?;
    Some(Line::Execution {
        thread,
        depth,
        instruction,
    })
}

/// The common shape of an execution, read in one scan that parses each
/// number as it looks for its `,`: THREAD, DEPTH and INSN_ID plain
/// decimals of 1 to 18 digits (DEPTH maybe negative), and the offset just
/// past INSN_ID's `,`. A newline ends the scan: `rest` may go on past the
/// line. `None` for anything else, which [`any_execution`] reads: both give
/// the same numbers wherever this one gives any.
#[inline]
fn plain_fields(rest: &[u8]) -> Option<((u64, i64, u64), usize)> {
    let at = skip_field(rest, 0)?;
    let (thread, at) = plain_field(rest, at)?;
    let at = skip_field(rest, at)?;
    let (depth, at) = match rest.get(at) {
        Some(b'-') => plain_field(rest, at + 1).map(|(n, at)| (-(n as i64), at))?,
        _ => plain_field(rest, at).map(|(n, at)| (n as i64, at))?,
    };
    let at = skip_field(rest, at)?;
    let (instruction, at) = plain_field(rest, at)?;
    Some(((thread, depth, instruction), at))
}

/// The offset just past the first `,` at or after `at`, unless a newline
/// or the end comes first.
#[inline(always)]
fn skip_field(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        match *bytes.get(at)? {
            b',' => return Some(at + 1),
            b'\n' => return None,
            _ => at += 1,
        }
    }
}

/// A decimal of 1 to 18 digits at `at` followed by `,` (one that fits an
/// `i64`), and the offset just past the `,`.
#[inline(always)]
fn plain_field(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    let mut end = at;
    loop {
        let byte = *bytes.get(end)?;
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return (byte == b',' && end > at).then_some((value, end + 1));
        }
        if end - at == 18 {
            return None;
        }
        value = value * 10 + u64::from(digit);
        end += 1;
    }
}

/// The offset of the first `byte` at or after `at`. Fields and the ends of
/// lines are a few bytes long: eight bytes at a time in a word beats a
/// vectorized search.
#[inline(always)]
pub(super) fn find(bytes: &[u8], mut at: usize, byte: u8) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let splat = u64::from_ne_bytes([byte; 8]);
    while let Some(word) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        // The lowest byte of `word` equal to `byte` sets the lowest high bit.
        let x = u64::from_le_bytes(*word) ^ splat;
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = bytes.get(at..)?;
    tail.iter().position(|&b| b == byte).map(|i| at + i)
}

/// Any execution: fields split on `,`, numbers with blanks around them.
fn any_execution(rest: &[u8]) -> Option<(u64, i64, u64)> {
    let mut fields: [&[u8]; 6] = [b""; 6];
    let mut start = 0;
    for field in &mut fields {
        let comma = start + rest.get(start..)?.iter().position(|&b| b == b',')?;
        *field = &rest[start..comma];
        start = comma + 1;
    }
    let [_id, thread, _time, depth, _host, instruction] = fields;
    Some((number(thread)?, signed(depth)?, number(instruction)?))
}

fn parse_method(rest: &[u8]) -> Option<Line<'_>> {
    let mut fields = rest.split(|&b| b == b',');
    let id = number(fields.next()?)?;
    let name = fields.next()?;
    let owner = fields.next()?;
    (!name.is_empty()).then_some(Line::Method { id, name, owner })
}

fn parse_instruction<'a>(kind: &'a [u8], rest: &'a [u8]) -> Option<Line<'a>> {
    let mut fields = rest.split(|&b| b == b',');
    let id = number(fields.next()?)?;
    let host = number(fields.next()?)?;
    let line = signed(fields.next()?).unwrap_or(-1);
    let _bci = fields.next();
    let opcode = fields.next().and_then(signed).unwrap_or(-1);
    let mut operands: [&[u8]; 3] = [b""; 3];
    for operand in &mut operands {
        *operand = fields.next().unwrap_or(b"");
    }
    Some(Line::Instruction(Instruction {
        kind,
        id,
        host,
        line: i32::try_from(line).unwrap_or(-1),
        opcode: i32::try_from(opcode).unwrap_or(-1),
        operands,
    }))
}

/// A decimal number without sign.
#[inline]
pub fn number(field: &[u8]) -> Option<u64> {
    digits(field.trim_ascii(), 19)
}

/// A decimal of 1 to `most` digits (at most 19), nothing else.
#[inline]
fn digits(field: &[u8], most: usize) -> Option<u64> {
    if field.is_empty() || field.len() > most {
        return None;
    }
    let mut value = 0u64;
    for &b in field {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value * 10 + u64::from(digit);
    }
    Some(value)
}

/// A decimal number with an optional `-`.
#[inline]
fn signed(field: &[u8]) -> Option<i64> {
    let field = field.trim_ascii();
    match field.strip_prefix(b"-") {
        Some(rest) => number(rest).map(|n| -(n as i64)),
        None => number(field).map(|n| n as i64),
    }
}

/// The index of a known kind in [`KINDS`].
pub fn known_kind(kind: &[u8]) -> Option<u16> {
    KINDS
        .iter()
        .position(|k| k.as_bytes() == kind)
        .map(|i| i as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of `$$$` shape built from fields plain and not.
    fn lines() -> Vec<Vec<u8>> {
        let fields: [&[u8]; 16] = [
            b"",
            b"0",
            b"7",
            b"-3",
            b"-0",
            b" 5",
            b"5 ",
            b"123456789012345678",
            b"1234567890123456789",
            b"-1234567890123456789",
            b"x",
            b"12a",
            b"-",
            b"--1",
            b";",
            b"$enter$",
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        (0..20_000)
            .map(|_| {
                let mut line = b"$$$".to_vec();
                for _ in 0..4 + next(6) {
                    line.push(b',');
                    line.extend_from_slice(fields[next(fields.len())]);
                }
                line.extend_from_slice([&b""[..], b";", b"\r", b" ;"][next(4)]);
                line
            })
            .collect()
    }

    /// The one-scan readers agree with the general parser wherever they
    /// give numbers, and give them for the common shape.
    #[test]
    fn plain_readers_agree_with_the_parser() {
        let mut plain_ones = 0;
        for line in lines() {
            let parsed = parse(&line);
            if let Some((thread, depth, instruction)) = plain(&line) {
                plain_ones += 1;
                let execution = Line::Execution {
                    thread,
                    depth,
                    instruction,
                };
                assert_eq!(parsed, execution, "{:?}", String::from_utf8_lossy(&line));
            }
            if let Some(thread) = plain_thread(&line) {
                assert!(
                    matches!(parsed, Line::Malformed)
                        || matches!(parsed, Line::Execution { thread: t, .. } if t == thread),
                    "{:?}",
                    String::from_utf8_lossy(&line)
                );
            }
        }
        assert!(plain_ones > 100);
        assert_eq!(plain(b"$$$,1,22,3,-4,x,66,$var$"), Some((22, -4, 66)));
    }

    /// The word-at-a-time search finds the first byte sought at every
    /// alignment.
    #[test]
    fn a_byte_is_found_at_every_offset() {
        for byte in [b',', b'\n'] {
            for len in 0..40 {
                for at in 0..=len {
                    let mut bytes = vec![b'a'; len];
                    for found_at in [Some(at), None] {
                        if let Some(i) = found_at.filter(|&i| i < len) {
                            bytes[i] = byte;
                        }
                        for from in 0..=len + 1 {
                            let expected = bytes
                                .get(from..)
                                .and_then(|tail| tail.iter().position(|&b| b == byte))
                                .map(|i| from + i);
                            assert_eq!(find(&bytes, from, byte), expected, "{len} {at} {from}");
                        }
                    }
                }
            }
        }
    }

    /// Reading a line at the start of the text that follows it gives what
    /// reading the line alone gives, and stops within the line.
    #[test]
    fn readers_at_a_line_start_stop_at_its_newline() {
        let follow: &[&[u8]] = &[
            b"",
            b"\n",
            b"\n$$$,1,2,3,4,5,6,7\n",
            b"\n,5,6,7,8\n",
            b"\n7,8\n",
        ];
        let mut checked = 0;
        for (n, line) in lines().into_iter().enumerate() {
            if line.contains(&b'\n') {
                continue;
            }
            let mut text = line.clone();
            text.extend_from_slice(follow[n % follow.len()]);
            let started = plain_start(&text);
            assert_eq!(started.map(|(numbers, _)| numbers), plain(&line));
            if let Some((_, end)) = started {
                assert!(end <= line.len() && line[end - 1] == b',');
                checked += 1;
            }
            let thread = thread_start(&text);
            assert_eq!(thread.map(|(t, _)| t), plain_thread(&line));
            if let Some((_, end)) = thread {
                assert!(end <= line.len() && line[end - 1] == b',');
            }
        }
        assert!(checked > 100);
    }
}
