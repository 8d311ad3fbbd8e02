//! [`Names`]: what the printer derives from reference objects (short class
//! names, pretty method, field and variable names, location suffixes,
//! rendered access paths), computed once per object and kept for every line
//! that uses it. A trace has far fewer reference objects than tracepoints.
//!
//! Each cache is an [`IdMap`] from id to a value or a slot of a list that
//! only grows: a lookup is one index into a vector (ids below the trace's
//! count of such objects, as recorders number them) or one hash probe
//! (any other id), and what it finds is borrowed or named by its slot,
//! never shared through a counted pointer (a line takes several of them,
//! and counting each costs more than the lookup).

use std::ops::Range;

use crate::common::{AccessPathId, ClassId, CodeLocationId, FieldId, IdMap, MethodId, VariableId};
use crate::error::Result;
use crate::format::ObjectKind;
use crate::format::TraceContext;
use crate::model::CodeLocationKind;
use crate::print::text::words::{
    adorned_range, last_dot_suffix, missing, optional, pretty_field_name, pretty_variable_name,
    push_int, push_string_or_unknown,
};

/// A class's full JVM name (or a placeholder) and its short form.
#[derive(Debug)]
pub(super) struct ClassName {
    full: Box<str>,
    adorned: Range<usize>,
}

impl ClassName {
    fn new(full: String) -> Self {
        ClassName {
            adorned: adorned_range(&full),
            full: full.into_boxed_str(),
        }
    }

    /// The full name (`lincheckdriver.Account$Companion`).
    pub fn full(&self) -> &str {
        &self.full
    }

    /// The short name (`Account$Companion`).
    pub fn adorned(&self) -> &str {
        self.full.get(self.adorned.clone()).unwrap_or(&self.full)
    }
}

/// A class's slot in [`Names`]: [`Names::class_at`] gives its name.
#[derive(Debug, Clone, Copy)]
pub(super) struct ClassSlot(u32);

/// A method's slot in [`Names`]: [`Names::method_at`] gives its name.
#[derive(Debug, Clone, Copy)]
pub(super) struct MethodSlot(u32);

/// A field's slot in [`Names`]: [`Names::field_at`] gives its name.
#[derive(Debug, Clone, Copy)]
pub(super) struct FieldSlot(u32);

/// A method, as call lines need it.
#[derive(Debug)]
pub(super) struct MethodName {
    /// Its class.
    pub class: ClassSlot,
    /// The name without a `$kotlinx_coroutines_core` suffix.
    pub name: Box<str>,
    /// Whether it is a constructor (`<init>`).
    pub is_constructor: bool,
}

/// A field, as field lines and paths need it.
#[derive(Debug)]
pub(super) struct FieldName {
    /// Its class.
    pub class: ClassSlot,
    /// The name without an atomicfu suffix.
    pub name: Box<str>,
    /// A Kotlin `Ref$…` box's `element`: a captured local, shown as its owner.
    pub is_lambda_capture: bool,
}

/// What a code location gives a line.
#[derive(Debug, Default)]
pub(super) struct LocationInfo {
    /// ` at File:LINE`.
    pub suffix: Box<str>,
    /// The access path, which line locations (kind 0) do not keep.
    pub access_path: Option<AccessPathId>,
    /// The argument names, which only call locations (kind 2) keep.
    pub argument_paths: Box<[Option<AccessPathId>]>,
}

/// What code locations give lines, by id: kept apart from [`Names`] so
/// that a line can hold its location while it looks names up.
#[derive(Debug)]
pub(super) struct Locations(IdMap<LocationInfo>);

impl Locations {
    /// No location yet, for the code locations of `context`.
    pub fn new(context: &TraceContext) -> Self {
        Locations(dense_for(context, ObjectKind::CodeLocation))
    }

    /// What the code location `id` gives a line. Id −1 (no location) gives
    /// the suffix ` at :0`; an id the trace does not hold, a placeholder.
    pub fn get(&mut self, context: &TraceContext, id: CodeLocationId) -> Result<&LocationInfo> {
        let info = self
            .0
            .get_or_try_insert_with(key(id), || LocationInfo::new(context, id))?;
        Ok(info)
    }
}

/// An [`IdMap`] keeping in its vector the ids `context` numbers its
/// objects of `kind` with (from 0 up to their count).
pub(super) fn dense_for<T>(context: &TraceContext, kind: ObjectKind) -> IdMap<T> {
    IdMap::with_dense_below(context.count(kind) as u64)
}

/// The [`IdMap`] key of an id: negative ids (−1: none) fall above every
/// bound.
pub(super) fn key(id: impl Into<i32>) -> u64 {
    u64::from(id.into() as u32)
}

impl LocationInfo {
    fn new(context: &TraceContext, id: CodeLocationId) -> Result<Self> {
        let mut suffix = String::from(" at ");
        let mut info = LocationInfo::default();
        if id.0 == -1 {
            suffix.push_str(":0");
        } else {
            match optional(context.code_location(id))? {
                None => suffix.push_str(&missing(ObjectKind::CodeLocation, id.0)),
                Some(location) => {
                    push_string_or_unknown(&mut suffix, context, location.file_name)?;
                    suffix.push(':');
                    push_int(&mut suffix, location.line.into());
                    if location.kind != CodeLocationKind::Line {
                        info.access_path = location.access_path;
                    }
                    if location.kind == CodeLocationKind::MethodCall {
                        info.argument_paths = location.argument_paths.as_slice().into();
                    }
                }
            }
        }
        info.suffix = suffix.into_boxed_str();
        Ok(info)
    }
}

/// The printer's per-trace cache of names. Objects the trace does not hold
/// are cached as placeholders (or `None`) too.
#[derive(Debug)]
pub(super) struct Names<'c> {
    context: &'c TraceContext,
    classes: Slots<ClassName>,
    methods: IdMap<Option<MethodSlot>>,
    method_names: Vec<MethodName>,
    fields: IdMap<Option<FieldSlot>>,
    field_names: Vec<FieldName>,
    variables: IdMap<Box<str>>,
}

/// Values cached by id in a list that only grows, each found by its slot.
#[derive(Debug)]
struct Slots<V> {
    slots: IdMap<u32>,
    values: Vec<V>,
}

/// The slot the next value pushed onto `values` takes.
fn next_slot<V>(values: &[V]) -> u32 {
    // More reference objects than `u32` slots cannot fit in a trace's
    // index; saturating keeps this total all the same.
    u32::try_from(values.len()).unwrap_or(u32::MAX)
}

impl<'c> Names<'c> {
    pub fn new(context: &'c TraceContext) -> Self {
        Names {
            context,
            classes: Slots {
                slots: dense_for(context, ObjectKind::ClassDescriptor),
                values: Vec::new(),
            },
            methods: dense_for(context, ObjectKind::MethodDescriptor),
            method_names: Vec::new(),
            fields: dense_for(context, ObjectKind::FieldDescriptor),
            field_names: Vec::new(),
            variables: dense_for(context, ObjectKind::VariableDescriptor),
        }
    }

    pub fn context(&self) -> &'c TraceContext {
        self.context
    }

    /// The class `id`'s slot.
    pub fn class_slot(&mut self, id: ClassId) -> Result<ClassSlot> {
        if let Some(&slot) = self.classes.slots.get(key(id)) {
            return Ok(ClassSlot(slot));
        }
        let full = match optional(self.context.class(id))? {
            Some(class) => class.name.decode().into_owned(),
            None => missing(ObjectKind::ClassDescriptor, id.0),
        };
        let slot = next_slot(&self.classes.values);
        self.classes.values.push(ClassName::new(full));
        self.classes.slots.insert(key(id), slot);
        Ok(ClassSlot(slot))
    }

    /// The class `id`'s name, or a placeholder.
    pub fn class(&mut self, id: ClassId) -> Result<&ClassName> {
        let slot = self.class_slot(id)?;
        Ok(self.class_at(slot))
    }

    /// The class in `slot`.
    pub fn class_at(&self, slot: ClassSlot) -> &ClassName {
        &self.classes.values[slot.0 as usize]
    }

    /// The method, or `None` when the trace does not hold it.
    pub fn method(&mut self, id: MethodId) -> Result<Option<MethodSlot>> {
        if let Some(&method) = self.methods.get(key(id)) {
            return Ok(method);
        }
        let method = match optional(self.context.method(id))? {
            Some(descriptor) => {
                let name = descriptor.name.decode();
                let method = MethodName {
                    class: self.class_slot(descriptor.class)?,
                    is_constructor: name == "<init>",
                    name: name
                        .strip_suffix("$kotlinx_coroutines_core")
                        .unwrap_or(&name)
                        .into(),
                };
                let slot = next_slot(&self.method_names);
                self.method_names.push(method);
                Some(MethodSlot(slot))
            }
            None => None,
        };
        self.methods.insert(key(id), method);
        Ok(method)
    }

    /// The method in `slot`.
    pub fn method_at(&self, slot: MethodSlot) -> &MethodName {
        &self.method_names[slot.0 as usize]
    }

    /// The field, or `None` when the trace does not hold it.
    pub fn field(&mut self, id: FieldId) -> Result<Option<FieldSlot>> {
        if let Some(&field) = self.fields.get(key(id)) {
            return Ok(field);
        }
        let field = match optional(self.context.field(id))? {
            Some(descriptor) => {
                let class = self.class_slot(descriptor.class)?;
                let name = descriptor.name.decode();
                let field = FieldName {
                    is_lambda_capture: name == "element"
                        && self
                            .class_at(class)
                            .full()
                            .starts_with("kotlin.jvm.internal.Ref$"),
                    name: pretty_field_name(&name).into(),
                    class,
                };
                let slot = next_slot(&self.field_names);
                self.field_names.push(field);
                Some(FieldSlot(slot))
            }
            None => None,
        };
        self.fields.insert(key(id), field);
        Ok(field)
    }

    /// The field in `slot`.
    pub fn field_at(&self, slot: FieldSlot) -> &FieldName {
        &self.field_names[slot.0 as usize]
    }

    /// The variable's pretty name, or a placeholder.
    pub fn variable(&mut self, id: VariableId) -> Result<&str> {
        let context = self.context;
        let name = self.variables.get_or_try_insert_with(key(id), || {
            Ok::<Box<str>, crate::Error>(match optional(context.variable(id))? {
                Some(variable) => pretty_variable_name(&variable.name.decode()).into(),
                None => missing(ObjectKind::VariableDescriptor, id.0).into(),
            })
        })?;
        Ok(name)
    }

    /// A snapshot frame, `Class.method` (last-dot suffix of the class, not
    /// adorned); `.` for id −1. Not cached: breakpoints are rare.
    pub fn push_frame(&self, out: &mut String, id: CodeLocationId) -> Result<()> {
        if id.0 == -1 {
            out.push('.');
            return Ok(());
        }
        let Some(location) = optional(self.context.code_location(id))? else {
            out.push_str(&missing(ObjectKind::CodeLocation, id.0));
            return Ok(());
        };
        let mut class = String::new();
        push_string_or_unknown(&mut class, self.context, location.class_name)?;
        out.push_str(last_dot_suffix(&class));
        out.push('.');
        push_string_or_unknown(out, self.context, location.method_name)
    }
}
