//! [`ReferencePool`]: the reference objects of a trace being written, found
//! by id (to write them) and by content (to intern them). Interning a spec
//! interns what it refers to first and assigns each new object the next free
//! id of its kind; objects given with their ids (copied from another trace)
//! keep them.
//!
//! The pool is shared by every producer thread of a streaming writer, so each
//! kind's table sits behind its own read-write lock: interning an object that
//! is already there (the common case) takes only read locks, and producers
//! interning different kinds never wait for each other.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::common::{
    AccessPathId, ClassId, CodeLocationId, FieldId, MethodId, StringId, VariableId,
};
use crate::error::{Error, Result};
use crate::format::{MAX_NESTING, Object, ObjectKind};
use crate::model::{
    AccessLocation, AccessPath, ClassDescriptor, CodeLocation, CodeLocationKind, FieldDescriptor,
    JavaStr, LocalName, MethodDescriptor, Type, Value, VariableDescriptor,
};
use crate::write::check::{check_count, check_reference, check_str, check_type, too_deep};
use crate::write::hash::FastMap;
use crate::write::spec::{
    AccessPathSpec, AccessStep, CodeLocationSpec, FieldSpec, MethodSpec, ValueSpec, VariableSpec,
};

type MethodKey = (ClassId, JavaStr<'static>, Type<'static>, Vec<Type<'static>>);
type FieldKey = (ClassId, JavaStr<'static>, Type<'static>, [bool; 3]);
type VariableKey = (JavaStr<'static>, Type<'static>);
type CodeLocationKey = (
    CodeLocationKind,
    [StringId; 3],
    i32,
    Option<AccessPathId>,
    Vec<Option<AccessPathId>>,
    Vec<LocalName>,
);

/// The objects of one kind, by id and by content.
#[derive(Debug)]
struct Table<K, V> {
    kind: ObjectKind,
    objects: RwLock<Objects<K, V>>,
}

#[derive(Debug)]
struct Objects<K, V> {
    by_key: FastMap<K, i32>,
    by_id: FastMap<i32, V>,
    /// Greater than every id in the table.
    next_id: i64,
}

impl<K: Hash + Eq, V: PartialEq + Clone> Table<K, V> {
    fn new(kind: ObjectKind) -> Self {
        Table {
            kind,
            objects: RwLock::new(Objects {
                by_key: FastMap::default(),
                by_id: FastMap::default(),
                next_id: 0,
            }),
        }
    }

    // A panic while a lock is held cannot leave a table half-updated (every
    // update is one insertion), so a poisoned lock is used as is.
    fn read(&self) -> RwLockReadGuard<'_, Objects<K, V>> {
        self.objects.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Objects<K, V>> {
        self.objects.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The id of the object with content `key`, made by `make` with the next
    /// free id if the table has none.
    fn intern(&self, key: K, make: impl FnOnce(i32) -> V) -> Result<i32> {
        if let Some(&id) = self.read().by_key.get(&key) {
            return Ok(id);
        }
        self.add(key, make)
    }

    /// [`intern`](Self::intern) for a key found by a borrowed form, built
    /// only when the object is new.
    fn intern_by<Q: Hash + Eq + ?Sized>(
        &self,
        lookup: &Q,
        key: impl FnOnce() -> K,
        make: impl FnOnce(i32) -> V,
    ) -> Result<i32>
    where
        K: Borrow<Q>,
    {
        if let Some(&id) = self.read().by_key.get(lookup) {
            return Ok(id);
        }
        self.add(key(), make)
    }

    /// Adds a new object unless another thread added it meanwhile.
    fn add(&self, key: K, make: impl FnOnce(i32) -> V) -> Result<i32> {
        let mut objects = self.write();
        // Another thread may have added it between the two locks.
        if let Some(&id) = objects.by_key.get(&key) {
            return Ok(id);
        }
        let id = i32::try_from(objects.next_id).map_err(|_| {
            Error::limit("reference objects of one kind", objects.next_id, i32::MAX)
        })?;
        objects.next_id += 1;
        objects.by_key.insert(key, id);
        objects.by_id.insert(id, make(id));
        Ok(id)
    }

    /// Adds `value` with its own `id`. Adding an equal object again is
    /// allowed; a different object with a taken id is not.
    fn insert(&self, id: i32, key: K, value: V) -> Result<()> {
        if id < 0 {
            return Err(Error::invalid(
                "reference object id",
                format!("{} with negative id {id}", self.kind),
            ));
        }
        let mut objects = self.write();
        match objects.by_id.get(&id) {
            Some(existing) if *existing == value => return Ok(()),
            Some(_) => {
                return Err(Error::invalid(
                    "reference object id",
                    format!("two different {} objects with id {id}", self.kind),
                ));
            }
            None => {}
        }
        objects.by_key.entry(key).or_insert(id);
        objects.by_id.insert(id, value);
        objects.next_id = objects.next_id.max(id as i64 + 1);
        Ok(())
    }

    /// A copy of object `id`.
    fn get(&self, id: i32) -> Result<V> {
        self.read()
            .by_id
            .get(&id)
            .cloned()
            .ok_or(Error::MissingReference {
                kind: self.kind,
                id,
            })
    }
}

/// The reference objects of a trace being written (every kind but thread
/// names, which belong to threads). Safe to share between threads.
#[derive(Debug)]
pub(crate) struct ReferencePool {
    classes: Table<Box<[u8]>, ClassDescriptor<'static>>,
    methods: Table<MethodKey, MethodDescriptor<'static>>,
    fields: Table<FieldKey, FieldDescriptor<'static>>,
    variables: Table<VariableKey, VariableDescriptor<'static>>,
    strings: Table<Box<[u8]>, JavaStr<'static>>,
    access_paths: Table<Vec<AccessLocation>, AccessPath>,
    code_locations: Table<CodeLocationKey, CodeLocation>,
}

impl Default for ReferencePool {
    fn default() -> Self {
        ReferencePool {
            classes: Table::new(ObjectKind::ClassDescriptor),
            methods: Table::new(ObjectKind::MethodDescriptor),
            fields: Table::new(ObjectKind::FieldDescriptor),
            variables: Table::new(ObjectKind::VariableDescriptor),
            strings: Table::new(ObjectKind::String),
            access_paths: Table::new(ObjectKind::AccessPath),
            code_locations: Table::new(ObjectKind::CodeLocation),
        }
    }
}

fn method_key(method: &MethodDescriptor<'static>) -> MethodKey {
    (
        method.class,
        method.name.clone(),
        method.return_type.clone(),
        method.parameter_types.clone(),
    )
}

fn field_key(field: &FieldDescriptor<'static>) -> FieldKey {
    (
        field.class,
        field.name.clone(),
        field.field_type.clone(),
        [field.is_static, field.is_final, field.is_volatile],
    )
}

fn code_location_key(location: &CodeLocation) -> CodeLocationKey {
    (
        location.kind,
        [
            location.file_name,
            location.class_name,
            location.method_name,
        ],
        location.line,
        location.access_path,
        location.argument_paths.clone(),
        location.locals.clone(),
    )
}

fn owned(text: &JavaStr<'_>) -> JavaStr<'static> {
    text.clone().into_owned()
}

impl ReferencePool {
    /// Adds a reference object with its own id (any kind but `THREAD_NAME`).
    pub(crate) fn insert(&self, object: &Object<'_>) -> Result<()> {
        check_reference(object)?;
        match object {
            Object::ClassDescriptor(o) => {
                let o = o.clone().into_owned();
                self.classes.insert(o.id.0, o.name.as_bytes().into(), o)
            }
            Object::MethodDescriptor(o) => {
                let o = o.clone().into_owned();
                self.methods.insert(o.id.0, method_key(&o), o)
            }
            Object::FieldDescriptor(o) => {
                let o = o.clone().into_owned();
                self.fields.insert(o.id.0, field_key(&o), o)
            }
            Object::VariableDescriptor(o) => {
                let o = o.clone().into_owned();
                let key = (o.name.clone(), o.variable_type.clone());
                self.variables.insert(o.id.0, key, o)
            }
            Object::String(o) => {
                let value = owned(&o.value);
                self.strings.insert(o.id.0, value.as_bytes().into(), value)
            }
            Object::AccessPath(o) => {
                self.access_paths
                    .insert(o.id.0, o.locations.clone(), o.clone())
            }
            Object::CodeLocation(o) => {
                self.code_locations
                    .insert(o.id.0, code_location_key(o), o.clone())
            }
            other => Err(Error::invalid(
                "reference object",
                format!(
                    "{} objects are not added to the reference pool",
                    other.kind()
                ),
            )),
        }
    }

    /// A copy of class descriptor `id`.
    pub(crate) fn class(&self, id: ClassId) -> Result<ClassDescriptor<'static>> {
        self.classes.get(id.0)
    }

    /// A copy of method descriptor `id`.
    pub(crate) fn method(&self, id: MethodId) -> Result<MethodDescriptor<'static>> {
        self.methods.get(id.0)
    }

    /// A copy of field descriptor `id`.
    pub(crate) fn field(&self, id: FieldId) -> Result<FieldDescriptor<'static>> {
        self.fields.get(id.0)
    }

    /// A copy of variable descriptor `id`.
    pub(crate) fn variable(&self, id: VariableId) -> Result<VariableDescriptor<'static>> {
        self.variables.get(id.0)
    }

    /// A copy of string `id`.
    pub(crate) fn string(&self, id: StringId) -> Result<JavaStr<'static>> {
        self.strings.get(id.0)
    }

    /// A copy of access path `id`.
    pub(crate) fn access_path(&self, id: AccessPathId) -> Result<AccessPath> {
        self.access_paths.get(id.0)
    }

    /// A copy of code location `id`.
    pub(crate) fn code_location(&self, id: CodeLocationId) -> Result<CodeLocation> {
        self.code_locations.get(id.0)
    }

    /// Interns the class named `name`.
    pub(crate) fn intern_class(&self, name: &JavaStr<'_>) -> Result<ClassId> {
        check_str(name, "class name")?;
        self.classes
            .intern_by(
                name.as_bytes(),
                || name.as_bytes().into(),
                |id| ClassDescriptor {
                    id: ClassId(id),
                    name: owned(name),
                },
            )
            .map(ClassId)
    }

    /// Interns the shared string `text`.
    pub(crate) fn intern_string(&self, text: &JavaStr<'_>) -> Result<StringId> {
        check_str(text, "string")?;
        self.strings
            .intern_by(text.as_bytes(), || text.as_bytes().into(), |_| owned(text))
            .map(StringId)
    }

    fn intern_optional_string(&self, text: Option<&JavaStr<'_>>) -> Result<StringId> {
        match text {
            Some(text) => self.intern_string(text),
            None => Ok(StringId(-1)),
        }
    }

    /// Interns a method (and its class).
    pub(crate) fn intern_method(&self, spec: &MethodSpec<'_>) -> Result<MethodId> {
        check_str(&spec.name, "method name")?;
        check_type(&spec.return_type, "return type")?;
        check_count(spec.parameter_types.len(), "parameter types")?;
        for parameter in &spec.parameter_types {
            check_type(parameter, "parameter type")?;
        }
        let class = self.intern_class(&spec.class)?;
        let name = owned(&spec.name);
        let return_type = spec.return_type.clone().into_owned();
        let parameter_types: Vec<Type<'static>> = spec
            .parameter_types
            .iter()
            .map(|t| t.clone().into_owned())
            .collect();
        let key = (
            class,
            name.clone(),
            return_type.clone(),
            parameter_types.clone(),
        );
        self.methods
            .intern(key, |id| MethodDescriptor {
                id: MethodId(id),
                class,
                name,
                return_type,
                parameter_types,
            })
            .map(MethodId)
    }

    /// Interns a field (and its class).
    pub(crate) fn intern_field(&self, spec: &FieldSpec<'_>) -> Result<FieldId> {
        check_str(&spec.name, "field name")?;
        check_type(&spec.field_type, "field type")?;
        let class = self.intern_class(&spec.class)?;
        let name = owned(&spec.name);
        let field_type = spec.field_type.clone().into_owned();
        let flags = [spec.is_static, spec.is_final, spec.is_volatile];
        let key = (class, name.clone(), field_type.clone(), flags);
        self.fields
            .intern(key, |id| FieldDescriptor {
                id: FieldId(id),
                class,
                name,
                field_type,
                is_static: flags[0],
                is_final: flags[1],
                is_volatile: flags[2],
            })
            .map(FieldId)
    }

    /// Interns a local variable.
    pub(crate) fn intern_variable(&self, spec: &VariableSpec<'_>) -> Result<VariableId> {
        check_str(&spec.name, "variable name")?;
        check_type(&spec.variable_type, "variable type")?;
        let name = owned(&spec.name);
        let variable_type = spec.variable_type.clone().into_owned();
        let key = (name.clone(), variable_type.clone());
        self.variables
            .intern(key, |id| VariableDescriptor {
                id: VariableId(id),
                name,
                variable_type,
            })
            .map(VariableId)
    }

    /// Interns an access path (and the variables, fields and paths it names).
    pub(crate) fn intern_access_path(&self, spec: &AccessPathSpec<'_>) -> Result<AccessPathId> {
        self.intern_access_path_at(spec, 0)
    }

    fn intern_access_path_at(
        &self,
        spec: &AccessPathSpec<'_>,
        depth: usize,
    ) -> Result<AccessPathId> {
        if depth > MAX_NESTING {
            return Err(too_deep("access path"));
        }
        check_count(spec.steps.len(), "access locations")?;
        let mut locations = Vec::with_capacity(spec.steps.len());
        for step in &spec.steps {
            locations.push(match step {
                AccessStep::Local(variable) => {
                    AccessLocation::Local(self.intern_variable(variable)?)
                }
                AccessStep::StaticField(field) => {
                    AccessLocation::StaticField(self.intern_field(field)?)
                }
                AccessStep::ObjectField(field) => {
                    AccessLocation::ObjectField(self.intern_field(field)?)
                }
                AccessStep::ArrayIndex(index) => AccessLocation::ArrayIndex(*index),
                AccessStep::ArrayElementByName(path) => {
                    AccessLocation::ArrayElementByName(self.intern_access_path_at(path, depth + 1)?)
                }
            });
        }
        self.access_paths
            .intern(locations.clone(), |id| AccessPath {
                id: AccessPathId(id),
                locations,
            })
            .map(AccessPathId)
    }

    /// Interns a code location (and its strings and access paths); `None` is
    /// the unknown location, id −1.
    pub(crate) fn intern_code_location(
        &self,
        spec: Option<&CodeLocationSpec<'_>>,
    ) -> Result<CodeLocationId> {
        let Some(spec) = spec else {
            return Ok(CodeLocationId(-1));
        };
        check_count(spec.arguments.len(), "arguments")?;
        check_count(spec.locals.len(), "locals")?;
        let file_name = self.intern_optional_string(spec.file.as_ref())?;
        let class_name = self.intern_optional_string(spec.class.as_ref())?;
        let method_name = self.intern_optional_string(spec.method.as_ref())?;
        let access_path = spec
            .access_path
            .as_ref()
            .map(|path| self.intern_access_path(path))
            .transpose()?;
        let argument_paths = spec
            .arguments
            .iter()
            .map(|path| {
                path.as_ref()
                    .map(|p| self.intern_access_path(p))
                    .transpose()
            })
            .collect::<Result<Vec<_>>>()?;
        let locals = spec
            .locals
            .iter()
            .map(|local| {
                Ok(LocalName {
                    name: self.intern_optional_string(local.name.as_ref())?,
                    kind: local.kind,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let location = CodeLocation {
            kind: spec.kind,
            id: CodeLocationId(-1),
            file_name,
            class_name,
            method_name,
            line: spec.line,
            access_path,
            argument_paths,
            locals,
        };
        self.code_locations
            .intern(code_location_key(&location), |id| CodeLocation {
                id: CodeLocationId(id),
                ..location
            })
            .map(CodeLocationId)
    }

    /// The value `spec` stands for, interning the classes it names.
    pub(crate) fn intern_value(&self, spec: &ValueSpec<'_>) -> Result<Value<'static>> {
        self.intern_value_at(spec, 0)
    }

    fn intern_value_at(&self, spec: &ValueSpec<'_>, depth: usize) -> Result<Value<'static>> {
        if depth > MAX_NESTING {
            return Err(too_deep("value"));
        }
        Ok(match spec {
            ValueSpec::Null => Value::Null,
            ValueSpec::Void => Value::Void,
            ValueSpec::Byte(v) => Value::Byte(*v),
            ValueSpec::Short(v) => Value::Short(*v),
            ValueSpec::Int(v) => Value::Int(*v),
            ValueSpec::Long(v) => Value::Long(*v),
            ValueSpec::Float(bits) => Value::Float(*bits),
            ValueSpec::Double(bits) => Value::Double(*bits),
            ValueSpec::Char(unit) => Value::Char(*unit),
            ValueSpec::String(text) => {
                check_str(text, "string value")?;
                Value::String(owned(text))
            }
            ValueSpec::KotlinUnit => Value::KotlinUnit,
            ValueSpec::RawString(text) => {
                check_str(text, "string value")?;
                Value::RawString(owned(text))
            }
            ValueSpec::Boolean(v) => Value::Boolean(*v),
            ValueSpec::JavaClass(name) => {
                check_str(name, "class literal")?;
                Value::JavaClass(owned(name))
            }
            ValueSpec::KotlinClass(name) => {
                check_str(name, "class literal")?;
                Value::KotlinClass(owned(name))
            }
            ValueSpec::StringBuilder {
                identity_hash,
                text,
            } => {
                check_str(text, "StringBuilder text")?;
                Value::StringBuilder {
                    identity_hash: *identity_hash,
                    text: owned(text),
                }
            }
            ValueSpec::Object {
                class,
                identity_hash,
                fields,
            } => {
                check_count(fields.len(), "object fields")?;
                let class = self.intern_class(class)?;
                let fields = fields
                    .iter()
                    .map(|(name, value)| {
                        check_str(name, "field name")?;
                        Ok((owned(name), self.intern_value_at(value, depth + 1)?))
                    })
                    .collect::<Result<Vec<_>>>()?;
                Value::Object {
                    class,
                    identity_hash: *identity_hash,
                    fields,
                }
            }
            ValueSpec::Array {
                class,
                identity_hash,
                elements,
                total_size,
            } => {
                check_count(elements.len(), "array elements")?;
                let class = self.intern_class(class)?;
                let elements = elements
                    .iter()
                    .map(|value| self.intern_value_at(value, depth + 1))
                    .collect::<Result<Vec<_>>>()?;
                Value::Array {
                    class,
                    identity_hash: *identity_hash,
                    elements,
                    total_size: *total_size,
                }
            }
        })
    }
}
