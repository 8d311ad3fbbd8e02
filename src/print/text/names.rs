//! [`Names`]: what the printer derives from reference objects (short class
//! names, pretty method, field and variable names, location suffixes,
//! rendered access paths), computed once per object and kept for every line
//! that uses it. A trace has far fewer reference objects than tracepoints.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;
use std::sync::Arc;

use crate::common::{AccessPathId, ClassId, CodeLocationId, FieldId, MethodId, VariableId};
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

/// A method, as call lines need it.
#[derive(Debug)]
pub(super) struct MethodName {
    /// Its class.
    pub class: Arc<ClassName>,
    /// The name without a `$kotlinx_coroutines_core` suffix.
    pub name: Box<str>,
    /// Whether it is a constructor (`<init>`).
    pub is_constructor: bool,
}

/// A field, as field lines and paths need it.
#[derive(Debug)]
pub(super) struct FieldName {
    /// Its class.
    pub class: Arc<ClassName>,
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

/// A fast hasher for the small integer ids of reference objects.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_i32(&mut self, id: i32) {
        self.write_u64(u64::from(id as u32));
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x51_7C_C1_B7_27_22_0A_95);
    }
}

pub(super) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The printer's per-trace cache of names. Objects the trace does not hold
/// are cached as placeholders (or `None`) too.
#[derive(Debug)]
pub(super) struct Names<'c> {
    context: &'c TraceContext,
    classes: IdMap<ClassId, Arc<ClassName>>,
    methods: IdMap<MethodId, Option<Arc<MethodName>>>,
    fields: IdMap<FieldId, Option<Arc<FieldName>>>,
    variables: IdMap<VariableId, Arc<str>>,
    locations: IdMap<CodeLocationId, Arc<LocationInfo>>,
}

impl<'c> Names<'c> {
    pub fn new(context: &'c TraceContext) -> Self {
        Names {
            context,
            classes: IdMap::default(),
            methods: IdMap::default(),
            fields: IdMap::default(),
            variables: IdMap::default(),
            locations: IdMap::default(),
        }
    }

    pub fn context(&self) -> &'c TraceContext {
        self.context
    }

    pub fn class(&mut self, id: ClassId) -> Result<Arc<ClassName>> {
        if let Some(class) = self.classes.get(&id) {
            return Ok(class.clone());
        }
        let full = match optional(self.context.class(id))? {
            Some(class) => class.name.decode().into_owned(),
            None => missing(ObjectKind::ClassDescriptor, id.0),
        };
        let class = Arc::new(ClassName::new(full));
        self.classes.insert(id, class.clone());
        Ok(class)
    }

    /// The method, or `None` when the trace does not hold it.
    pub fn method(&mut self, id: MethodId) -> Result<Option<Arc<MethodName>>> {
        if let Some(method) = self.methods.get(&id) {
            return Ok(method.clone());
        }
        let method = match optional(self.context.method(id))? {
            Some(descriptor) => {
                let name = descriptor.name.decode();
                Some(Arc::new(MethodName {
                    class: self.class(descriptor.class)?,
                    is_constructor: name == "<init>",
                    name: name
                        .strip_suffix("$kotlinx_coroutines_core")
                        .unwrap_or(&name)
                        .into(),
                }))
            }
            None => None,
        };
        self.methods.insert(id, method.clone());
        Ok(method)
    }

    /// The field, or `None` when the trace does not hold it.
    pub fn field(&mut self, id: FieldId) -> Result<Option<Arc<FieldName>>> {
        if let Some(field) = self.fields.get(&id) {
            return Ok(field.clone());
        }
        let field = match optional(self.context.field(id))? {
            Some(descriptor) => {
                let class = self.class(descriptor.class)?;
                let name = descriptor.name.decode();
                Some(Arc::new(FieldName {
                    is_lambda_capture: name == "element"
                        && class.full().starts_with("kotlin.jvm.internal.Ref$"),
                    name: pretty_field_name(&name).into(),
                    class,
                }))
            }
            None => None,
        };
        self.fields.insert(id, field.clone());
        Ok(field)
    }

    /// The variable's pretty name, or a placeholder.
    pub fn variable(&mut self, id: VariableId) -> Result<Arc<str>> {
        if let Some(name) = self.variables.get(&id) {
            return Ok(name.clone());
        }
        let name: Arc<str> = match optional(self.context.variable(id))? {
            Some(variable) => pretty_variable_name(&variable.name.decode()).into(),
            None => missing(ObjectKind::VariableDescriptor, id.0).into(),
        };
        self.variables.insert(id, name.clone());
        Ok(name)
    }

    /// What the code location `id` gives a line. Id −1 (no location) gives
    /// the suffix ` at :0`; an id the trace does not hold, a placeholder.
    pub fn location(&mut self, id: CodeLocationId) -> Result<Arc<LocationInfo>> {
        if let Some(location) = self.locations.get(&id) {
            return Ok(location.clone());
        }
        let mut suffix = String::from(" at ");
        let mut info = LocationInfo::default();
        if id.0 == -1 {
            suffix.push_str(":0");
        } else {
            match optional(self.context.code_location(id))? {
                None => suffix.push_str(&missing(ObjectKind::CodeLocation, id.0)),
                Some(location) => {
                    push_string_or_unknown(&mut suffix, self.context, location.file_name)?;
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
        let info = Arc::new(info);
        self.locations.insert(id, info.clone());
        Ok(info)
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
