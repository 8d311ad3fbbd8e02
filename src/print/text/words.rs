//! Small pieces of the reference text: class name forms, escaped and
//! quoted strings, numbers, placeholders for missing objects.

use std::fmt::Write as _;
use std::ops::Range;

use crate::common::StringId;
use crate::error::{Error, Result};
use crate::format::ObjectKind;
use crate::format::TraceContext;
use crate::model::{JavaStr, Value};

/// Whether a named argument prints its value after its name (`i ➜ 7`):
/// every value but `null`, `void`, objects and arrays, which print as the
/// name alone.
pub(super) fn is_inline(value: &Value<'_>) -> bool {
    !matches!(
        value,
        Value::Null | Value::Void | Value::Object { .. } | Value::Array { .. }
    )
}

/// The reference printer's class-name shortening: the part after the last
/// `.` (`java.lang.Thread` → `Thread`, `[Ljava.lang.String;` → `String;`),
/// without the hidden-class address of a lambda (`Foo$$Lambda/0x…` →
/// `Foo$$Lambda`).
pub(crate) fn adorn(class_name: &str) -> &str {
    class_name
        .get(adorned_range(class_name))
        .unwrap_or(class_name)
}

/// Where [`adorn`]'s result lies in `class_name`.
pub(super) fn adorned_range(class_name: &str) -> Range<usize> {
    let start = class_name.rfind('.').map_or(0, |dot| dot + 1);
    let simple = &class_name[start..];
    match simple.rfind('/') {
        Some(slash) if simple.contains("$$Lambda") => start..start + slash,
        _ => start..class_name.len(),
    }
}

/// The part of `name` after its last `.`, or all of it.
pub(super) fn last_dot_suffix(name: &str) -> &str {
    name.rfind('.').map_or(name, |dot| &name[dot + 1..])
}

/// A local variable's name as shown: without a trailing `$iv` (inlined
/// code), a leading `$this` (unless it is all of the name) and then one
/// leading `$`.
pub(super) fn pretty_variable_name(name: &str) -> &str {
    let name = name.strip_suffix("$iv").unwrap_or(name);
    let name = if name == "$this" {
        name
    } else {
        name.strip_prefix("$this").unwrap_or(name)
    };
    name.strip_prefix('$').unwrap_or(name)
}

/// A field's name as shown: without a trailing `$volatile$FU` (atomicfu).
pub(super) fn pretty_field_name(name: &str) -> &str {
    name.strip_suffix("$volatile$FU").unwrap_or(name)
}

/// Appends `text` with `\`, LF, CR and TAB escaped as `\\`, `\n`, `\r`, `\t`.
/// Nothing else is escaped: quotes, NUL and other controls stay raw.
pub(super) fn push_escaped(out: &mut String, text: &JavaStr<'_>) {
    let escape = |c: char| match c {
        '\\' => Some("\\\\"),
        '\n' => Some("\\n"),
        '\r' => Some("\\r"),
        '\t' => Some("\\t"),
        _ => None,
    };
    let bytes = text.as_bytes();
    if bytes.is_ascii() {
        // ASCII reads the same in modified UTF-8 and UTF-8.
        if let Ok(mut rest) = std::str::from_utf8(bytes) {
            while let Some(at) = rest.find(['\\', '\n', '\r', '\t']) {
                out.push_str(&rest[..at]);
                out.push_str(escape(char::from(bytes_at(rest, at))).unwrap_or(""));
                rest = &rest[at + 1..];
            }
            out.push_str(rest);
            return;
        }
    }
    for c in text.chars() {
        match escape(c) {
            Some(escaped) => out.push_str(escaped),
            None => out.push(c),
        }
    }
}

fn bytes_at(text: &str, at: usize) -> u8 {
    text.as_bytes().get(at).copied().unwrap_or(0)
}

/// Appends `text` verbatim (unpaired surrogate halves as `?`).
pub(super) fn push_java_str(out: &mut String, text: &JavaStr<'_>) {
    let bytes = text.as_bytes();
    if bytes.is_ascii() {
        // ASCII reads the same in modified UTF-8 and UTF-8.
        if let Ok(ascii) = std::str::from_utf8(bytes) {
            out.push_str(ascii);
            return;
        }
    }
    out.extend(text.chars());
}

/// Appends a string the trace may not hold, as the reference does: `<unknown>`
/// for id −1 or an id with no `STRING`.
pub(super) fn push_string_or_unknown(
    out: &mut String,
    context: &TraceContext,
    id: StringId,
) -> Result<()> {
    match optional(context.string(id))? {
        Some(text) => push_java_str(out, text),
        None => out.push_str("<unknown>"),
    }
    Ok(())
}

/// The placeholder shown for a reference object the trace does not hold:
/// `<missing CLASS_DESCRIPTOR 12>`.
pub(super) fn missing(kind: ObjectKind, id: i32) -> String {
    format!("<missing {kind} {id}>")
}

/// Appends [`missing`]`(kind, id)`.
pub(super) fn push_missing(out: &mut String, kind: ObjectKind, id: i32) {
    let _ = write!(out, "<missing {kind} {id}>");
}

/// Appends `value` in decimal (`itoa`, two digits a step, no `fmt`
/// machinery: this runs for most lines and most exported values).
pub(super) fn push_int(out: &mut String, value: i64) {
    out.push_str(itoa::Buffer::new().format(value));
}

/// `Ok(None)` when the trace does not hold the object looked up (the printer
/// shows a placeholder); other failures, such as a malformed object, stay
/// errors.
pub(super) fn optional<T>(lookup: Result<T>) -> Result<Option<T>> {
    match lookup {
        Ok(found) => Ok(Some(found)),
        Err(Error::MissingReference { .. }) => Ok(None),
        Err(error) => Err(error),
    }
}
