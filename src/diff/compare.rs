//! The reference comparator's two equalities, as fingerprints: a
//! tracepoint's *edit-independent* key (what a change of values keeps) and
//! its *strict* key (everything the reference compares). Two tracepoints are
//! edit-equal when their types and edit keys are equal, strictly equal when
//! their types and strict keys are.
//!
//! The keys are the reference's own `mzHash64` over the same items in the
//! same order, so that where the reference's hash folds two things together
//! (a value's Java `hashCode`, strings hashed without their lengths) ours
//! folds them too. The items that the reference hashes through a JVM
//! identity hash (types) are hashed structurally.

use crate::common::CodeLocationId;
use crate::error::Result;
use crate::format::TraceContext;
use crate::model::{Footer, JavaStr, Tracepoint, TracepointBody, TracepointType, Type, Value};
use crate::print::adorn;

/// The reference's `mzHash64`, without a seed: one multiply per byte fed.
#[derive(Debug, Clone, Copy)]
struct MzHash64(i64);

impl MzHash64 {
    const START: i64 = 0xDED4_6DB8_C47B_7480_u64 as i64;
    const MUL: i64 = 0xE958_AC98_E3D2_43C3_u64 as i64;

    fn new() -> Self {
        MzHash64(Self::START)
    }

    #[inline(always)]
    fn update(&mut self, v: i32) {
        let h = self.0;
        self.0 = Self::MUL.wrapping_mul(i64::from(v) ^ (h << 8) ^ (h >> 8));
    }

    fn bool(&mut self, v: bool) -> &mut Self {
        self.update(i32::from(v));
        self
    }

    fn short(&mut self, v: i16) -> &mut Self {
        let v = i32::from(v);
        self.update(v & 0xff);
        self.update((v >> 8) & 0xff);
        self
    }

    fn int(&mut self, v: i32) -> &mut Self {
        self.update(v & 0xff);
        self.update((v >> 8) & 0xff);
        self.update((v >> 16) & 0xff);
        self.update((v >> 24) & 0xff);
        self
    }

    fn utf16(&mut self, units: impl Iterator<Item = u16>) -> &mut Self {
        for unit in units {
            let unit = i32::from(unit);
            self.update(unit & 0xff);
            self.update((unit >> 8) & 0xff);
        }
        self
    }

    fn text(&mut self, text: &JavaStr<'_>) -> &mut Self {
        self.utf16(crate::mutf8::units(text.as_bytes()))
    }

    fn str(&mut self, text: &str) -> &mut Self {
        self.utf16(text.encode_utf16())
    }
}

/// A tracepoint's two fingerprints, with its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PointKey {
    /// The tracepoint type (the reference's class check).
    pub(crate) kind: TracepointType,
    /// The edit-independent hash.
    pub(crate) edit: u64,
    /// The strict hash.
    pub(crate) strict: u64,
}

impl PointKey {
    /// The reference's `editIndependentEqual`.
    #[inline]
    pub(crate) fn edit_equal(&self, other: &PointKey) -> bool {
        self.kind == other.kind && self.edit == other.edit
    }

    /// The reference's `strictEqual`.
    #[inline]
    pub(crate) fn strict_equal(&self, other: &PointKey) -> bool {
        self.kind == other.kind && self.strict == other.strict
    }
}

/// Java's `String.hashCode` over UTF-16 units.
fn java_string_hash(text: &JavaStr<'_>) -> i32 {
    crate::mutf8::units(text.as_bytes()).fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// Java's `hashCode` of a boxed primitive value, as the reference hashes it.
fn java_value_hash(value: &Value<'_>) -> Option<(i32, i32)> {
    let fold = |bits: i64| (bits ^ ((bits as u64) >> 32) as i64) as i32;
    Some(match value {
        Value::Byte(v) => (-3, i32::from(*v)),
        Value::Short(v) => (-4, i32::from(*v)),
        Value::Int(v) => (-5, *v),
        Value::Long(v) => (-6, fold(*v)),
        Value::Float(bits) => {
            let bits = if f32::from_bits(*bits).is_nan() {
                0x7fc0_0000
            } else {
                *bits
            };
            (-7, bits as i32)
        }
        Value::Double(bits) => {
            let bits = if f64::from_bits(*bits).is_nan() {
                0x7ff8_0000_0000_0000
            } else {
                *bits
            };
            (-8, fold(bits as i64))
        }
        Value::Char(unit) => (-9, i32::from(*unit)),
        Value::String(text) => (-10, java_string_hash(text)),
        // `Unit` is one object: its identity hash is the same on both sides.
        Value::KotlinUnit => (-11, 0),
        Value::RawString(text) => (-12, java_string_hash(text)),
        Value::Boolean(v) => (-13, if *v { 1231 } else { 1237 }),
        Value::JavaClass(text) => (-14, java_string_hash(text)),
        Value::KotlinClass(text) => (-15, java_string_hash(text)),
        Value::StringBuilder { text, .. } => (-16, java_string_hash(text)),
        Value::Null | Value::Void | Value::Object { .. } | Value::Array { .. } => return None,
    })
}

/// A type's hash: the reference uses its `hashCode`, equal for equal types.
fn type_hash(value: &Type<'_>) -> i32 {
    match value {
        Type::Array(element) => type_hash(element).wrapping_mul(31).wrapping_add(1),
        Type::Boolean => 2,
        Type::Byte => 3,
        Type::Char => 4,
        Type::Double => 5,
        Type::Float => 6,
        Type::Int => 7,
        Type::Long => 8,
        Type::Object(name) => java_string_hash(name).wrapping_mul(31).wrapping_add(9),
        Type::Short => 10,
        Type::Void => 11,
    }
}

/// Feeds tracepoints' items to the hash, resolving ids through a context.
struct Keyer<'c> {
    context: &'c TraceContext,
    hash: MzHash64,
}

impl<'c> Keyer<'c> {
    fn value(&mut self, value: &Value<'_>) -> Result<()> {
        match value {
            Value::Null => {
                self.hash.int(-1);
            }
            Value::Void => {
                self.hash.int(-2);
            }
            Value::Object { class, .. } | Value::Array { class, .. } => {
                let name = self.context.class(*class)?.name.decode();
                self.hash.str(adorn(&name));
            }
            primitive => {
                if let Some((code, hash)) = java_value_hash(primitive) {
                    self.hash.int(code).int(hash);
                }
            }
        }
        Ok(())
    }

    fn optional_string(&self, id: crate::common::StringId) -> Result<Option<&'c JavaStr<'static>>> {
        if id.0 < 0 {
            return Ok(None);
        }
        self.context.string(id).map(Some)
    }

    /// A code location as the reference hashes its stack trace element:
    /// the file name (empty when unknown) and the line.
    fn code_location(&mut self, id: CodeLocationId) -> Result<()> {
        if id.0 == -1 {
            self.hash.int(0);
            return Ok(());
        }
        let location = self.context.code_location(id)?;
        if let Some(file) = self.optional_string(location.file_name)? {
            self.hash.text(file);
        }
        self.hash.int(location.line);
        Ok(())
    }

    /// The whole element of a breakpoint's stack (its `hashCode`).
    fn frame_hash(&self, id: CodeLocationId) -> Result<i32> {
        if id.0 == -1 {
            return Ok(0);
        }
        let location = self.context.code_location(id)?;
        let mut h = location.line;
        for part in [
            location.file_name,
            location.class_name,
            location.method_name,
        ] {
            let part = self.optional_string(part)?.map_or(0, java_string_hash);
            h = h.wrapping_mul(31).wrapping_add(part);
        }
        Ok(h)
    }
}

/// The keys of `tracepoint` (with its `footer`, for a call's result) in
/// `context`.
// Long: one arm per tracepoint kind, as the reference's comparator.
pub(crate) fn point_key(
    tracepoint: &Tracepoint<'_>,
    footer: Option<&Footer<'_>>,
    context: &TraceContext,
) -> Result<PointKey> {
    let mut k = Keyer {
        context,
        hash: MzHash64::new(),
    };
    k.code_location(tracepoint.header.code_location)?;
    // The edit-independent items.
    match &tracepoint.body {
        TracepointBody::ReadArray { array, index, .. }
        | TracepointBody::WriteArray { array, index, .. } => {
            k.value(array)?;
            k.hash.int(*index);
        }
        TracepointBody::ReadField { field, .. } | TracepointBody::WriteField { field, .. } => {
            let field = context.field(*field)?;
            k.hash.text(&context.class(field.class)?.name);
            k.hash.text(&field.name).bool(field.is_static);
        }
        TracepointBody::ReadLocal { variable, .. }
        | TracepointBody::WriteLocal { variable, .. } => {
            k.hash.text(&context.variable(*variable)?.name);
        }
        TracepointBody::Loop { loop_id } => {
            k.hash.int(*loop_id);
        }
        TracepointBody::LoopIteration { loop_id, iteration } => {
            k.hash.int(*loop_id).int(*iteration);
        }
        TracepointBody::MethodCall {
            method,
            receiver,
            flags,
            ..
        } => {
            let method = context.method(*method)?;
            k.hash.text(&context.class(method.class)?.name);
            k.hash
                .text(&method.name)
                .short(*flags)
                .bool(matches!(receiver, Value::Null))
                .int(type_hash(&method.return_type));
            for parameter in &method.parameter_types {
                k.hash.int(type_hash(parameter));
            }
        }
        TracepointBody::SnapshotBreakpoint {
            uuid_high,
            uuid_low,
            ..
        } => {
            k.hash.str(&uuid_text(*uuid_high, *uuid_low));
        }
        TracepointBody::Throw { .. } | TracepointBody::Catch { .. } => {}
    }
    let edit = k.hash.0 as u64;
    // The strict items continue the same hash.
    match &tracepoint.body {
        TracepointBody::ReadArray { value, .. }
        | TracepointBody::WriteArray { value, .. }
        | TracepointBody::ReadLocal { value, .. }
        | TracepointBody::WriteLocal { value, .. } => k.value(value)?,
        TracepointBody::ReadField {
            receiver, value, ..
        }
        | TracepointBody::WriteField {
            receiver, value, ..
        } => {
            k.value(receiver)?;
            k.value(value)?;
        }
        TracepointBody::Loop { .. } | TracepointBody::LoopIteration { .. } => {}
        TracepointBody::MethodCall {
            receiver,
            arguments,
            ..
        } => {
            k.value(receiver)?;
            for argument in arguments {
                k.value(argument)?;
            }
            match footer {
                Some(Footer::MethodCall { result, exception }) => {
                    k.value(result)?;
                    k.hash.text(exception);
                }
                // A call that never returned has no result.
                _ => {
                    k.hash.int(-1);
                }
            }
        }
        TracepointBody::SnapshotBreakpoint {
            uuid_high,
            uuid_low,
            stack,
            values,
            trace_id,
            ..
        } => {
            k.hash.str(&uuid_text(*uuid_high, *uuid_low));
            for frame in stack {
                let frame = k.frame_hash(*frame)?;
                k.hash.int(frame);
            }
            for value in values {
                k.value(value)?;
            }
            if let Some(trace_id) = trace_id {
                k.hash.text(trace_id);
            }
        }
        TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
            k.value(exception)?;
        }
    }
    Ok(PointKey {
        kind: tracepoint.tracepoint_type(),
        edit,
        strict: k.hash.0 as u64,
    })
}

/// `java.util.UUID.toString` of the two halves.
fn uuid_text(high: i64, low: i64) -> String {
    let (high, low) = (high as u64, low as u64);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_hash_folds_like_java() {
        // Java: Long.valueOf(-1).hashCode() == Long.valueOf(0).hashCode() == 0.
        assert_eq!(java_value_hash(&Value::Long(-1)), Some((-6, 0)));
        assert_eq!(java_value_hash(&Value::Long(0)), Some((-6, 0)));
        assert_eq!(java_value_hash(&Value::Long(1 << 32)), Some((-6, 1)));
    }

    #[test]
    fn string_hash_is_javas() {
        // "Aa".hashCode() == "BB".hashCode() == 2112.
        assert_eq!(java_string_hash(&JavaStr::new("Aa")), 2112);
        assert_eq!(java_string_hash(&JavaStr::new("BB")), 2112);
    }

    #[test]
    fn uuid_prints_as_java() {
        assert_eq!(
            uuid_text(0x0123_4567_89ab_cdef, 0x0fed_cba9_8765_4321u64 as i64),
            "01234567-89ab-cdef-0fed-cba987654321"
        );
    }

    #[test]
    fn mzhash_starts_at_its_constant_and_mixes_every_byte() {
        let mut a = MzHash64::new();
        a.int(1);
        let mut b = MzHash64::new();
        b.int(256);
        assert_ne!(a.0, b.0);
        assert_ne!(a.0, MzHash64::START);
    }
}
