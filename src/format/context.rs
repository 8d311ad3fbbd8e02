//! [`TraceContext`]: the reference objects of one trace, found by (kind, id).
//!
//! Each trace has its own context (no global state). The context knows where
//! each object starts in the data file and decodes it on first use; readers
//! that have already decoded an object (the eager loader) hand it over.

use std::sync::OnceLock;

use crate::common::{
    AccessPathId, ClassId, CodeLocationId, FieldId, MethodId, PhysicalOffset, StringId, ThreadId,
    VariableId,
};
use crate::error::{Error, Result};
use crate::format::{ByteReader, Object, ObjectKind};
use crate::model::{
    AccessPath, ClassDescriptor, CodeLocation, FieldDescriptor, JavaStr, MethodDescriptor,
    ThreadName, VariableDescriptor,
};
use crate::storage::TraceBytes;

/// A decoded reference object, owned.
#[derive(Debug, Clone)]
enum Decoded {
    ThreadName(ThreadName<'static>),
    Class(ClassDescriptor<'static>),
    Method(MethodDescriptor<'static>),
    Field(FieldDescriptor<'static>),
    Variable(VariableDescriptor<'static>),
    String(JavaStr<'static>),
    AccessPath(AccessPath),
    CodeLocation(CodeLocation),
}

impl Decoded {
    fn from_object(object: Object<'_>) -> Option<Self> {
        Some(match object {
            Object::ThreadName(o) => Decoded::ThreadName(o.into_owned()),
            Object::ClassDescriptor(o) => Decoded::Class(o.into_owned()),
            Object::MethodDescriptor(o) => Decoded::Method(o.into_owned()),
            Object::FieldDescriptor(o) => Decoded::Field(o.into_owned()),
            Object::VariableDescriptor(o) => Decoded::Variable(o.into_owned()),
            Object::String(o) => Decoded::String(o.value.into_owned()),
            Object::AccessPath(o) => Decoded::AccessPath(o),
            Object::CodeLocation(o) => Decoded::CodeLocation(o),
            _ => return None,
        })
    }
}

/// The objects of one reference kind: ids sorted, with where each starts.
#[derive(Debug, Default)]
struct ReferenceTable {
    ids: Vec<i32>,
    offsets: Vec<PhysicalOffset>,
    decoded: Vec<OnceLock<Decoded>>,
}

impl ReferenceTable {
    fn slot(&self, id: i32) -> Option<usize> {
        self.ids.binary_search(&id).ok()
    }
}

/// Collects the locations of reference objects, then builds a [`TraceContext`].
#[derive(Debug, Default)]
pub struct ContextBuilder {
    entries: [Vec<(i32, PhysicalOffset)>; 8],
    decoded: Vec<(ObjectKind, i32, Decoded)>,
}

impl ContextBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that an object of `kind` with `id` starts at `offset`. When an
    /// object is written several times (duplicates are common), the first
    /// recorded copy wins.
    pub fn add(&mut self, kind: ObjectKind, id: i32, offset: PhysicalOffset) {
        debug_assert!(kind.is_reference());
        self.entries[kind as usize].push((id, offset));
    }

    /// Records an object already decoded at `offset`, sparing a second decode.
    pub fn add_decoded(&mut self, object: Object<'_>, offset: PhysicalOffset) {
        let (kind, id) = (object.kind(), object.reference_id());
        if let (Some(id), Some(decoded)) = (id, Decoded::from_object(object)) {
            self.add(kind, id, offset);
            self.decoded.push((kind, id, decoded));
        }
    }

    /// The context over `data`.
    pub fn build(self, data: TraceBytes) -> TraceContext {
        let mut tables: [ReferenceTable; 8] = Default::default();
        for (kind, mut entries) in self.entries.into_iter().enumerate() {
            // Stable sort keeps the first copy of each id first.
            entries.sort_by_key(|&(id, _)| id);
            entries.dedup_by_key(|&mut (id, _)| id);
            let table = &mut tables[kind];
            table.ids = entries.iter().map(|&(id, _)| id).collect();
            table.offsets = entries.iter().map(|&(_, offset)| offset).collect();
            table.decoded = (0..entries.len()).map(|_| OnceLock::new()).collect();
        }
        for (kind, id, decoded) in self.decoded {
            let table = &tables[kind as usize];
            if let Some(slot) = table.slot(id) {
                let _ = table.decoded[slot].set(decoded);
            }
        }
        TraceContext { data, tables }
    }
}

/// The reference objects of one trace.
#[derive(Debug)]
pub struct TraceContext {
    data: TraceBytes,
    tables: [ReferenceTable; 8],
}

impl TraceContext {
    /// A builder of this context (of a trace that grew) with the objects
    /// of `added` (kind, id, offset; found after this context's) recorded:
    /// an id known already keeps its first copy. Decoded objects are not
    /// carried over (they decode again on first use).
    pub(crate) fn extended(&self, added: &[(ObjectKind, i32, PhysicalOffset)]) -> ContextBuilder {
        let mut builder = ContextBuilder::new();
        for (kind, table) in self.tables.iter().enumerate() {
            builder.entries[kind]
                .extend(table.ids.iter().copied().zip(table.offsets.iter().copied()));
        }
        for &(kind, id, offset) in added {
            builder.add(kind, id, offset);
        }
        builder
    }

    /// The data file's bytes.
    pub fn data(&self) -> &TraceBytes {
        &self.data
    }

    /// How many distinct objects of `kind` the trace holds.
    pub fn count(&self, kind: ObjectKind) -> usize {
        self.tables
            .get(kind as usize)
            .map_or(0, |table| table.ids.len())
    }

    /// The ids of the objects of `kind`, ascending.
    pub fn ids(&self, kind: ObjectKind) -> &[i32] {
        self.tables
            .get(kind as usize)
            .map_or(&[], |table| &table.ids[..])
    }

    /// Where the object of `kind` with `id` starts, if the trace holds it.
    pub fn offset(&self, kind: ObjectKind, id: i32) -> Option<PhysicalOffset> {
        let table = self.tables.get(kind as usize)?;
        table.slot(id).map(|slot| table.offsets[slot])
    }

    fn get(&self, kind: ObjectKind, id: i32) -> Result<&Decoded> {
        let missing = || Error::MissingReference { kind, id };
        let table = self.tables.get(kind as usize).ok_or_else(missing)?;
        let slot = table.slot(id).ok_or_else(missing)?;
        if let Some(decoded) = table.decoded[slot].get() {
            return Ok(decoded);
        }
        let offset = table.offsets[slot];
        let bytes = self.data.as_slice();
        let start = usize::try_from(offset.0)
            .ok()
            .filter(|&start| start < bytes.len())
            .ok_or_else(missing)?;
        let mut reader = ByteReader::new(&bytes[start..], offset.0);
        let object = Object::decode(&mut reader, None)?;
        if object.kind() != kind || object.reference_id() != Some(id) {
            return Err(missing());
        }
        let decoded = Decoded::from_object(object).ok_or_else(missing)?;
        Ok(table.decoded[slot].get_or_init(|| decoded))
    }

    /// The name of `thread`, if the trace recorded one.
    pub fn thread_name(&self, thread: ThreadId) -> Option<&JavaStr<'static>> {
        match self.get(ObjectKind::ThreadName, thread.0) {
            Ok(Decoded::ThreadName(name)) => Some(&name.name),
            _ => None,
        }
    }

    /// A class descriptor.
    pub fn class(&self, id: ClassId) -> Result<&ClassDescriptor<'static>> {
        match self.get(ObjectKind::ClassDescriptor, id.0)? {
            Decoded::Class(o) => Ok(o),
            _ => unreachable!("tables hold one kind each"),
        }
    }

    /// A method descriptor.
    pub fn method(&self, id: MethodId) -> Result<&MethodDescriptor<'static>> {
        match self.get(ObjectKind::MethodDescriptor, id.0)? {
            Decoded::Method(o) => Ok(o),
            _ => unreachable!("tables hold one kind each"),
        }
    }

    /// A field descriptor.
    pub fn field(&self, id: FieldId) -> Result<&FieldDescriptor<'static>> {
        match self.get(ObjectKind::FieldDescriptor, id.0)? {
            Decoded::Field(o) => Ok(o),
            _ => unreachable!("tables hold one kind each"),
        }
    }

    /// A local variable descriptor.
    pub fn variable(&self, id: VariableId) -> Result<&VariableDescriptor<'static>> {
        match self.get(ObjectKind::VariableDescriptor, id.0)? {
            Decoded::Variable(o) => Ok(o),
            _ => unreachable!("tables hold one kind each"),
        }
    }

    /// A shared string.
    pub fn string(&self, id: StringId) -> Result<&JavaStr<'static>> {
        match self.get(ObjectKind::String, id.0)? {
            Decoded::String(o) => Ok(o),
            _ => unreachable!("tables hold one kind each"),
        }
    }

    /// An access path.
    pub fn access_path(&self, id: AccessPathId) -> Result<&AccessPath> {
        match self.get(ObjectKind::AccessPath, id.0)? {
            Decoded::AccessPath(o) => Ok(o),
            _ => unreachable!("tables hold one kind each"),
        }
    }

    /// A code location.
    pub fn code_location(&self, id: CodeLocationId) -> Result<&CodeLocation> {
        match self.get(ObjectKind::CodeLocation, id.0)? {
            Decoded::CodeLocation(o) => Ok(o),
            _ => unreachable!("tables hold one kind each"),
        }
    }
}
