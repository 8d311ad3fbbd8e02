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
//!
//! [`Keys`] computes them for one reader's walk and remembers what depends
//! on ids alone: the hash after each code location, the edit hash of each
//! (code location, method, flags) of a call and of each field or local
//! access, and each class's name as the values hash it. The hash is a chain
//! (each step mixes the state so far), so what is remembered is a state
//! reached from the start, never a part to combine.

use rustc_hash::FxHashMap;

use crate::common::{ClassId, CodeLocationId};
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

/// What the edit hash of a call, a field access or a local access depends
/// on besides its code location: the method (with the call's flags and
/// whether its receiver is null), the field, or the variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum EditIds {
    Call(i32, i16, bool),
    Field(i32),
    Local(i32),
}

/// Remembered entries past which a table is emptied (a trace of that many
/// distinct code locations, calls or classes is hostile or rare).
const REMEMBERED: usize = 1 << 20;

/// The keys of one reader's tracepoints, remembering what depends on ids
/// alone.
pub(crate) struct Keys<'c> {
    context: &'c TraceContext,
    /// The hash after a code location, from the start.
    locations: FxHashMap<i32, i64>,
    /// The edit hash of a code location with a call's, field's or local's ids.
    edits: FxHashMap<(i32, EditIds), i64>,
    /// A class's adorned name in UTF-16 units, as values hash it.
    classes: FxHashMap<ClassId, Box<[u16]>>,
}

impl<'c> Keys<'c> {
    /// Keys of tracepoints whose ids `context` resolves.
    pub(crate) fn new(context: &'c TraceContext) -> Self {
        Keys {
            context,
            locations: FxHashMap::default(),
            edits: FxHashMap::default(),
            classes: FxHashMap::default(),
        }
    }

    /// The keys of `tracepoint` (with its `footer`, for a call's result).
    pub(crate) fn key(
        &mut self,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
    ) -> Result<PointKey> {
        let location = tracepoint.header.code_location;
        let ids = match &tracepoint.body {
            TracepointBody::MethodCall {
                method,
                receiver,
                flags,
                ..
            } => Some(EditIds::Call(
                method.0,
                *flags,
                matches!(receiver, Value::Null),
            )),
            TracepointBody::ReadField { field, .. } | TracepointBody::WriteField { field, .. } => {
                Some(EditIds::Field(field.0))
            }
            TracepointBody::ReadLocal { variable, .. }
            | TracepointBody::WriteLocal { variable, .. } => Some(EditIds::Local(variable.0)),
            _ => None,
        };
        let edit = ids.and_then(|ids| self.edits.get(&(location.0, ids)).copied());
        let start = match (edit, self.locations.get(&location.0)) {
            (Some(edit), _) => MzHash64(edit),
            (None, Some(&state)) => MzHash64(state),
            (None, None) => {
                let mut k = Keyer {
                    context: self.context,
                    classes: &mut self.classes,
                    hash: MzHash64::new(),
                };
                k.code_location(location)?;
                remember(&mut self.locations, location.0, k.hash.0);
                k.hash
            }
        };
        let mut k = Keyer {
            context: self.context,
            classes: &mut self.classes,
            hash: start,
        };
        if edit.is_none() {
            k.edit_items(tracepoint)?;
            if let Some(ids) = ids {
                remember(&mut self.edits, (location.0, ids), k.hash.0);
            }
        }
        let edit = k.hash.0 as u64;
        k.strict_items(tracepoint, footer)?;
        Ok(PointKey {
            kind: tracepoint.tracepoint_type(),
            edit,
            strict: k.hash.0 as u64,
        })
    }
}

/// Inserts into a table of remembered states, emptying it when full.
fn remember<K: std::hash::Hash + Eq, V>(table: &mut FxHashMap<K, V>, key: K, value: V) {
    if table.len() >= REMEMBERED {
        table.clear();
    }
    table.insert(key, value);
}

/// Feeds tracepoints' items to the hash, resolving ids through a context.
struct Keyer<'c, 't> {
    context: &'c TraceContext,
    classes: &'t mut FxHashMap<ClassId, Box<[u16]>>,
    hash: MzHash64,
}

impl<'c> Keyer<'c, '_> {
    fn value(&mut self, value: &Value<'_>) -> Result<()> {
        match value {
            Value::Null => {
                self.hash.int(-1);
            }
            Value::Void => {
                self.hash.int(-2);
            }
            Value::Object { class, .. } | Value::Array { class, .. } => {
                if let Some(units) = self.classes.get(class) {
                    self.hash.utf16(units.iter().copied());
                } else {
                    let name = self.context.class(*class)?.name.decode();
                    let units: Box<[u16]> = adorn(&name).encode_utf16().collect();
                    self.hash.utf16(units.iter().copied());
                    remember(self.classes, *class, units);
                }
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

impl Keyer<'_, '_> {
    /// The edit-independent items after the code location.
    fn edit_items(&mut self, tracepoint: &Tracepoint<'_>) -> Result<()> {
        match &tracepoint.body {
            TracepointBody::ReadArray { array, index, .. }
            | TracepointBody::WriteArray { array, index, .. } => {
                self.value(array)?;
                self.hash.int(*index);
            }
            TracepointBody::ReadField { field, .. } | TracepointBody::WriteField { field, .. } => {
                let field = self.context.field(*field)?;
                self.hash.text(&self.context.class(field.class)?.name);
                self.hash.text(&field.name).bool(field.is_static);
            }
            TracepointBody::ReadLocal { variable, .. }
            | TracepointBody::WriteLocal { variable, .. } => {
                self.hash.text(&self.context.variable(*variable)?.name);
            }
            TracepointBody::Loop { loop_id } => {
                self.hash.int(*loop_id);
            }
            TracepointBody::LoopIteration { loop_id, iteration } => {
                self.hash.int(*loop_id).int(*iteration);
            }
            TracepointBody::MethodCall {
                method,
                receiver,
                flags,
                ..
            } => {
                let method = self.context.method(*method)?;
                self.hash.text(&self.context.class(method.class)?.name);
                self.hash
                    .text(&method.name)
                    .short(*flags)
                    .bool(matches!(receiver, Value::Null))
                    .int(type_hash(&method.return_type));
                for parameter in &method.parameter_types {
                    self.hash.int(type_hash(parameter));
                }
            }
            TracepointBody::SnapshotBreakpoint {
                uuid_high,
                uuid_low,
                ..
            } => {
                self.hash.str(&uuid_text(*uuid_high, *uuid_low));
            }
            TracepointBody::Throw { .. } | TracepointBody::Catch { .. } => {}
        }
        Ok(())
    }

    /// The strict items, continuing the edit hash.
    // Long: one arm per tracepoint kind, as the reference's comparator.
    fn strict_items(
        &mut self,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
    ) -> Result<()> {
        match &tracepoint.body {
            TracepointBody::ReadArray { value, .. }
            | TracepointBody::WriteArray { value, .. }
            | TracepointBody::ReadLocal { value, .. }
            | TracepointBody::WriteLocal { value, .. } => self.value(value)?,
            TracepointBody::ReadField {
                receiver, value, ..
            }
            | TracepointBody::WriteField {
                receiver, value, ..
            } => {
                self.value(receiver)?;
                self.value(value)?;
            }
            TracepointBody::Loop { .. } | TracepointBody::LoopIteration { .. } => {}
            TracepointBody::MethodCall {
                receiver,
                arguments,
                ..
            } => {
                self.value(receiver)?;
                for argument in arguments {
                    self.value(argument)?;
                }
                match footer {
                    Some(Footer::MethodCall { result, exception }) => {
                        self.value(result)?;
                        self.hash.text(exception);
                    }
                    // A call that never returned has no result.
                    _ => {
                        self.hash.int(-1);
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
                self.hash.str(&uuid_text(*uuid_high, *uuid_low));
                for frame in stack {
                    let frame = self.frame_hash(*frame)?;
                    self.hash.int(frame);
                }
                for value in values {
                    self.value(value)?;
                }
                if let Some(trace_id) = trace_id {
                    self.hash.text(trace_id);
                }
            }
            TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
                self.value(exception)?;
            }
        }
        Ok(())
    }
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

    /// Remembered states give the keys a fresh computation gives, on a
    /// trace of every tracepoint and value kind, twice over.
    #[cfg(feature = "generate")]
    #[test]
    fn remembered_keys_are_the_computed_ones() {
        use crate::tree::{TraceTree, Visit, VisitDetail};
        let scratch = tempfile::tempdir().unwrap();
        for (i, writer) in [
            crate::generate::samples::all_types().unwrap(),
            crate::generate::samples::multi_thread().unwrap(),
        ]
        .into_iter()
        .enumerate()
        {
            let path = scratch.path().join(format!("{i}.trace"));
            writer.save(&path).unwrap();
            let trace = crate::read::EagerTrace::open(&path).unwrap();
            let mut shared = Keys::new(trace.context());
            let mut compared = 0;
            for _ in 0..2 {
                for thread in trace.thread_ids() {
                    let roots = trace.roots(thread).unwrap();
                    trace
                        .walk_visit(&roots, None, VisitDetail::default(), |visit| {
                            if let Visit::Node {
                                tracepoint, footer, ..
                            } = visit
                            {
                                let fresh = Keys::new(trace.context()).key(tracepoint, footer)?;
                                assert_eq!(shared.key(tracepoint, footer)?, fresh);
                                compared += 1;
                            }
                            Ok(())
                        })
                        .unwrap();
                }
            }
            assert!(compared > 20, "{compared}");
        }
    }

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
