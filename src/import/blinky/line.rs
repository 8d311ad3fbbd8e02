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

fn parse_execution(rest: &[u8]) -> Option<Line<'_>> {
    // ID,THREAD,TIME,DEPTH,DYN_HOST,INSN_ID,TYPE,…: the fields up to TYPE.
    // Fields are a few bytes long: a plain scan beats a vectorized search.
    let mut fields: [&[u8]; 6] = [b""; 6];
    let mut start = 0;
    for field in &mut fields {
        let comma = start + rest.get(start..)?.iter().position(|&b| b == b',')?;
        *field = &rest[start..comma];
        start = comma + 1;
    }
    let [_id, thread, _time, depth, _host, instruction] = fields;
    Some(Line::Execution {
        thread: number(thread)?,
        depth: signed(depth)?,
        instruction: number(instruction)?,
    })
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
    let field = field.trim_ascii();
    if field.is_empty() || field.len() > 19 {
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
