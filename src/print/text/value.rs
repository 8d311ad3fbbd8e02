//! Values, names and strings as the reference printer shows them: `Class@hash`
//! objects, quoted and escaped strings, Java numbers, shortened class names.

use crate::error::Result;
use crate::model::Value;
use crate::print::text::names::Names;
use crate::print::text::number::{write_java_double, write_java_float};
use crate::print::text::words::*;

/// `➜`, between a read location and the value read, and between an argument's
/// name and its value.
pub(super) const READ: &str = " \u{279C} ";
/// `=`, between a written location and the value written.
pub(super) const WRITE: &str = " = ";

/// Which way a value went: [`READ`] or [`WRITE`] stands between a location
/// and its value.
#[derive(Debug, Clone, Copy)]
pub(super) enum Access {
    Read,
    Write,
}

impl Access {
    /// Appends the operator. Each arm copies a constant length, which
    /// compiles to a few moves instead of a call to `memcpy`.
    #[inline(always)]
    pub(super) fn push(self, out: &mut String) {
        match self {
            Access::Read => out.push_str(READ),
            Access::Write => out.push_str(WRITE),
        }
    }
}

/// Appends the text of `value`.
pub(super) fn push_value(out: &mut String, names: &mut Names<'_>, value: &Value<'_>) -> Result<()> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Void => out.push_str("void"),
        Value::Byte(v) => push_int(out, (*v).into()),
        Value::Short(v) => push_int(out, (*v).into()),
        Value::Int(v) => push_int(out, (*v).into()),
        Value::Long(v) => push_int(out, *v),
        Value::Float(bits) => write_java_float(out, f32::from_bits(*bits)),
        Value::Double(bits) => write_java_double(out, f64::from_bits(*bits)),
        Value::Char(unit) => {
            // No escaping; a surrogate half alone is `?`.
            out.push('\'');
            out.push(char::from_u32(u32::from(*unit)).unwrap_or('?'));
            out.push('\'');
        }
        Value::String(text) => {
            out.push('"');
            push_escaped(out, text);
            out.push('"');
        }
        Value::KotlinUnit => out.push_str("Unit"),
        // Already rendered by the recorder (class literals end in `.class`
        // or `.kclass`): printed verbatim.
        Value::RawString(text) | Value::JavaClass(text) | Value::KotlinClass(text) => {
            push_java_str(out, text)
        }
        Value::Boolean(v) => out.push_str(if *v { "true" } else { "false" }),
        Value::StringBuilder {
            identity_hash,
            text,
        } => {
            out.push_str("StringBuilder@");
            push_int(out, (*identity_hash).into());
            out.push_str("(\"");
            push_escaped(out, text);
            out.push_str("\")");
        }
        // Captured fields, elements and array sizes are never printed.
        Value::Object {
            class,
            identity_hash,
            ..
        }
        | Value::Array {
            class,
            identity_hash,
            ..
        } => {
            out.push_str(names.class(*class)?.adorned());
            out.push('@');
            push_int(out, (*identity_hash).into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::ClassId;
    use crate::format::ContextBuilder;
    use crate::format::TraceContext;
    use crate::model::JavaStr;
    use crate::storage::TraceBytes;

    fn empty_context() -> TraceContext {
        ContextBuilder::new().build(TraceBytes::from_vec(Vec::new()))
    }

    fn text(value: Value<'_>) -> String {
        let context = empty_context();
        let mut out = String::new();
        push_value(&mut out, &mut Names::new(&context), &value).unwrap();
        out
    }

    #[test]
    fn primitives_print_as_java_does() {
        assert_eq!(text(Value::Null), "null");
        assert_eq!(text(Value::Void), "void");
        assert_eq!(text(Value::Byte(-128)), "-128");
        assert_eq!(text(Value::Short(32767)), "32767");
        assert_eq!(text(Value::Int(i32::MIN)), "-2147483648");
        assert_eq!(text(Value::Long(i64::MIN)), "-9223372036854775808");
        assert_eq!(text(Value::Float(0x0000_0001)), "1.4E-45");
        assert_eq!(text(Value::Float(0x7FC0_0001)), "NaN");
        assert_eq!(text(Value::Double(0x8000_0000_0000_0000)), "-0.0");
        assert_eq!(
            text(Value::Double(0x4009_21FB_5444_2D18)),
            "3.141592653589793"
        );
        assert_eq!(text(Value::Boolean(true)), "true");
        assert_eq!(text(Value::Boolean(false)), "false");
        assert_eq!(text(Value::KotlinUnit), "Unit");
    }

    #[test]
    fn chars_are_quoted_raw_and_a_lone_surrogate_is_a_question_mark() {
        assert_eq!(text(Value::Char(0x0436)), "'ж'");
        assert_eq!(text(Value::Char(0x20AC)), "'€'");
        assert_eq!(text(Value::Char(0)), "'\0'");
        assert_eq!(text(Value::Char('\n' as u16)), "'\n'");
        assert_eq!(text(Value::Char(0xD83D)), "'?'");
    }

    #[test]
    fn strings_escape_only_backslash_newline_return_and_tab() {
        let s = JavaStr::new("line1\nline2\ttab\\back\"quote\r");
        assert_eq!(
            text(Value::String(s)),
            r#""line1\nline2\ttab\\back"quote\r""#
        );
        let s = JavaStr::new("nul:\0:end é 😀");
        assert_eq!(text(Value::String(s)), "\"nul:\0:end é 😀\"");
    }

    #[test]
    fn strings_cut_between_surrogate_halves_show_a_question_mark() {
        let mut units: Vec<u16> = "ab".encode_utf16().collect();
        units.push(0xD83D);
        units.extend("...".encode_utf16());
        let s = JavaStr::from_utf16(&units);
        assert_eq!(text(Value::String(s)), "\"ab?...\"");
    }

    #[test]
    fn raw_strings_and_class_literals_are_verbatim() {
        assert_eq!(
            text(Value::RawString(JavaStr::new("a\\b\n"))),
            "a\\b\n",
            "not escaped"
        );
        assert_eq!(
            text(Value::JavaClass(JavaStr::new("int[].class"))),
            "int[].class"
        );
        assert_eq!(
            text(Value::KotlinClass(JavaStr::new("Account.kclass"))),
            "Account.kclass"
        );
    }

    #[test]
    fn string_builders_show_hash_and_escaped_text() {
        let value = Value::StringBuilder {
            identity_hash: 11089143,
            text: JavaStr::new("sb-é😀\t"),
        };
        assert_eq!(text(value), "StringBuilder@11089143(\"sb-é😀\\t\")");
    }

    #[test]
    fn objects_of_unknown_classes_show_a_placeholder() {
        let value = Value::Object {
            class: ClassId(12),
            identity_hash: -5,
            fields: Vec::new(),
        };
        assert_eq!(text(value), "<missing CLASS_DESCRIPTOR 12>@-5");
    }

    #[test]
    fn inline_values_are_everything_but_null_void_objects_and_arrays() {
        assert!(is_inline(&Value::Int(1)));
        assert!(is_inline(&Value::KotlinUnit));
        assert!(is_inline(&Value::String(JavaStr::new("x"))));
        assert!(!is_inline(&Value::Null));
        assert!(!is_inline(&Value::Void));
        assert!(!is_inline(&Value::Array {
            class: ClassId(0),
            identity_hash: 1,
            elements: Vec::new(),
            total_size: 0,
        }));
    }

    #[test]
    fn integers_print_in_decimal() {
        for value in [0, 7, -7, 10, 1_000_000, i64::MIN, i64::MAX, i32::MIN.into()] {
            let mut out = String::new();
            push_int(&mut out, value);
            assert_eq!(out, value.to_string());
        }
    }

    #[test]
    fn adorn_keeps_the_part_after_the_last_dot() {
        assert_eq!(adorn("java.lang.Thread"), "Thread");
        assert_eq!(
            adorn("lincheckdriver.Account$Companion"),
            "Account$Companion"
        );
        assert_eq!(adorn("[I"), "[I");
        assert_eq!(adorn("[[I"), "[[I");
        assert_eq!(adorn("[Ljava.lang.String;"), "String;");
        assert_eq!(adorn("Plain"), "Plain");
    }

    #[test]
    fn adorn_drops_the_hidden_class_address_of_lambdas() {
        assert_eq!(adorn("app.Foo$$Lambda/0x000001f8a0003c10"), "Foo$$Lambda");
        assert_eq!(adorn("app.Foo$Bar/x"), "Foo$Bar/x");
    }

    #[test]
    fn variable_names_lose_inline_and_this_decorations() {
        assert_eq!(pretty_variable_name("i"), "i");
        assert_eq!(pretty_variable_name("x$iv"), "x");
        assert_eq!(pretty_variable_name("$this"), "this");
        assert_eq!(pretty_variable_name("$this$run"), "run");
        assert_eq!(pretty_variable_name("$i$a$-let"), "i$a$-let");
        assert_eq!(pretty_variable_name("$this$apply$iv"), "apply");
    }

    #[test]
    fn field_names_lose_the_atomicfu_suffix() {
        assert_eq!(pretty_field_name("top$volatile$FU"), "top");
        assert_eq!(pretty_field_name("balance"), "balance");
    }
}
