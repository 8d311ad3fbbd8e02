//! A chunk's metadata: the types its events and constant pools are laid
//! out by.
//!
//! The metadata event (type id 0) holds: size, type id, start, duration and
//! metadata id (integers), a string table (count, then strings), and a tree
//! of elements, each a name (string index), attributes (count, then pairs
//! of string indexes) and children (count, then elements). Under the root,
//! the `metadata` element's `class` children are the types: attributes
//! `name`, `id`, `superType`, `simpleType`; their `field` children have
//! `name`, `class` (the field's type id), `constantPool` (`true`: the field
//! holds a key of that type's pool) and `dimension` (`1`: an array).
//! Annotations and settings are read past.
//!
//! The element tree is read with an explicit stack (its depth is bounded
//! anyway) and only what the decoder needs is kept: one [`Class`] per type,
//! its fields resolved to class indexes, so decoding never looks up a name.

use rustc_hash::FxHashMap;

use super::input::{Input, JfrError, JfrResult};

/// The type id of the metadata event.
pub const METADATA_TYPE: u64 = 0;
/// The type id of a checkpoint (constant pool) event.
pub const CHECKPOINT_TYPE: u64 = 1;
/// Deeper element trees than this are refused.
const MAX_ELEMENT_DEPTH: usize = 64;

/// How a value of a type is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One byte, 0 or 1.
    Boolean,
    /// One byte.
    Byte,
    /// A `char`, as an integer.
    Char,
    /// A `short`, as an integer.
    Short,
    /// An `int`.
    Int,
    /// A `long`.
    Long,
    /// Four big-endian bytes.
    Float,
    /// Eight big-endian bytes.
    Double,
    /// A string in one of its encodings.
    String,
    /// The fields, one after another.
    Struct,
}

impl Kind {
    fn of(name: &str) -> Kind {
        match name {
            "boolean" => Kind::Boolean,
            "byte" => Kind::Byte,
            "char" => Kind::Char,
            "short" => Kind::Short,
            "int" => Kind::Int,
            "long" => Kind::Long,
            "float" => Kind::Float,
            "double" => Kind::Double,
            "java.lang.String" => Kind::String,
            _ => Kind::Struct,
        }
    }
}

/// A field of a type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name.
    pub name: String,
    /// The index of its type in [`Metadata::classes`].
    pub class: u32,
    /// The type's kind (copied, for the decoder).
    pub kind: Kind,
    /// The field holds a constant pool key.
    pub pooled: bool,
    /// The field is an array.
    pub array: bool,
}

/// A type of the chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    /// Its id in the chunk.
    pub id: u64,
    /// Its name (`jdk.ExecutionSample`, `java.lang.Thread`, `int`).
    pub name: String,
    /// Its super type (`jdk.jfr.Event` for events).
    pub super_type: Option<String>,
    /// How its values are stored.
    pub kind: Kind,
    /// Its fields, in storage order.
    pub fields: Vec<Field>,
}

impl Class {
    /// Whether it is an event type.
    pub fn is_event(&self) -> bool {
        self.super_type.as_deref() == Some("jdk.jfr.Event")
    }

    /// The position of the field named `name`.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// The types of one chunk.
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    /// The metadata id (equal ids mean equal metadata).
    pub id: i64,
    /// The types.
    pub classes: Vec<Class>,
    by_id: FxHashMap<u64, u32>,
    by_name: FxHashMap<String, u32>,
}

impl Metadata {
    /// The index of the type with id `id`.
    #[inline]
    pub fn class_index(&self, id: u64) -> Option<u32> {
        self.by_id.get(&id).copied()
    }

    /// The index of the type named `name`.
    pub fn class_named(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The type at `index`.
    #[inline]
    pub fn class(&self, index: u32) -> &Class {
        &self.classes[index as usize]
    }

    /// Reads the metadata event at the position of `input`.
    pub fn read(input: &mut Input<'_>) -> JfrResult<Metadata> {
        let left = input.remaining();
        let size = input.int()?;
        if usize::try_from(size).map_or(true, |size| size == 0 || size > left) {
            return Err(input.error(format_args!("metadata size {size} exceeds the chunk")));
        }
        let type_id = input.long()? as u64;
        if type_id != METADATA_TYPE {
            return Err(input.error(format_args!(
                "expected the metadata event (type 0), found type {type_id}"
            )));
        }
        input.long()?; // start
        input.long()?; // duration
        let id = input.long()?;
        let count = input.count(1, "metadata string")?;
        let mut strings = Vec::with_capacity(count);
        for _ in 0..count {
            let text = input.string()?.to_text();
            strings.push(text.map(|t| t.into_owned()).unwrap_or_default());
        }
        let root = read_elements(input, &strings)?;
        let mut metadata = build(root, input)?;
        metadata.id = id;
        Ok(metadata)
    }
}

/// An element of the metadata tree, attributes resolved to text.
#[derive(Debug, Default)]
struct Element<'s> {
    name: &'s str,
    attributes: Vec<(&'s str, &'s str)>,
    children: Vec<Element<'s>>,
}

impl<'s> Element<'s> {
    fn attribute(&self, key: &str) -> Option<&'s str> {
        self.attributes
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }
}

/// Reads the element tree with an explicit stack: each entry is an element
/// and the number of its children still to read.
fn read_elements<'s>(input: &mut Input<'_>, strings: &'s [String]) -> JfrResult<Element<'s>> {
    let mut stack: Vec<(Element<'s>, usize)> = Vec::new();
    loop {
        let element = read_element_head(input, strings)?;
        let children = input.count(3, "metadata element")?;
        stack.push((element, children));
        // Close every element whose children are all read.
        while let Some((_, 0)) = stack.last() {
            let Some((done, _)) = stack.pop() else { break };
            match stack.last_mut() {
                None => return Ok(done),
                Some((parent, left)) => {
                    parent.children.push(done);
                    *left -= 1;
                }
            }
        }
        if stack.len() > MAX_ELEMENT_DEPTH {
            return Err(input.error("metadata elements nested too deep"));
        }
    }
}

fn read_element_head<'s>(input: &mut Input<'_>, strings: &'s [String]) -> JfrResult<Element<'s>> {
    let string = |input: &mut Input<'_>| -> JfrResult<&'s str> {
        let at = input.file_offset();
        let index = input.int()?;
        usize::try_from(index)
            .ok()
            .and_then(|i| strings.get(i))
            .map(String::as_str)
            .ok_or_else(|| JfrError::new(at, format_args!("no metadata string {index}")))
    };
    let name = string(input)?;
    let count = input.count(2, "metadata attribute")?;
    let mut attributes = Vec::with_capacity(count);
    for _ in 0..count {
        attributes.push((string(input)?, string(input)?));
    }
    Ok(Element {
        name,
        attributes,
        children: Vec::new(),
    })
}

/// The classes of the tree's `metadata` element, fields resolved.
fn build(root: Element<'_>, input: &Input<'_>) -> JfrResult<Metadata> {
    let mut metadata = Metadata::default();
    let class_elements: Vec<&Element<'_>> = root
        .children
        .iter()
        .filter(|e| e.name == "metadata")
        .flat_map(|e| e.children.iter().filter(|c| c.name == "class"))
        .collect();
    for element in &class_elements {
        let name = element.attribute("name").unwrap_or("").to_string();
        let id = element
            .attribute("id")
            .and_then(|id| id.parse::<u64>().ok())
            .ok_or_else(|| input.error(format_args!("metadata class {name:?} has no id")))?;
        let index = metadata.classes.len() as u32;
        metadata.by_id.insert(id, index);
        metadata.by_name.insert(name.clone(), index);
        metadata.classes.push(Class {
            id,
            kind: Kind::of(&name),
            name,
            super_type: element.attribute("superType").map(str::to_string),
            fields: Vec::new(),
        });
    }
    for (index, element) in class_elements.iter().enumerate() {
        let mut fields = Vec::new();
        for field in element.children.iter().filter(|c| c.name == "field") {
            let name = field.attribute("name").unwrap_or("").to_string();
            let class = field
                .attribute("class")
                .and_then(|id| id.parse::<u64>().ok())
                .and_then(|id| metadata.class_index(id))
                .ok_or_else(|| {
                    input.error(format_args!(
                        "field {name:?} of {:?} names no known type",
                        metadata.classes[index].name
                    ))
                })?;
            fields.push(Field {
                name,
                class,
                kind: metadata.class(class).kind,
                pooled: field.attribute("constantPool") == Some("true"),
                array: field.attribute("dimension") == Some("1"),
            });
        }
        metadata.classes[index].fields = fields;
    }
    check_expansion(&metadata, input)?;
    Ok(metadata)
}

/// Decode steps one inline value may take, at most: types beyond it (or
/// containing themselves inline) are refused, so that hostile metadata
/// cannot make a few bytes cost unbounded work.
const MAX_EXPANSION: u64 = 1024;

/// The state of a type in [`check_expansion`]'s walk.
#[derive(Clone, Copy)]
enum Walk {
    New,
    Open,
    Done(u64),
}

/// Refuses types that contain themselves inline or whose inline values
/// take more than [`MAX_EXPANSION`] decode steps (arrays and pool keys
/// count one: their elements are paid for by the bytes they take).
fn check_expansion(metadata: &Metadata, input: &Input<'_>) -> JfrResult<()> {
    let mut states = vec![Walk::New; metadata.classes.len()];
    for class in 0..metadata.classes.len() {
        if !matches!(states[class], Walk::New) {
            continue;
        }
        states[class] = Walk::Open;
        // Each frame: a type, the next field to look at, the sum so far.
        let mut stack = vec![(class, 0usize, 1u64)];
        while let Some(top) = stack.last_mut() {
            let (at, next, sum) = *top;
            if let Some(f) = metadata.classes[at].fields.get(next) {
                top.1 += 1;
                if f.kind != Kind::Struct || f.pooled || f.array {
                    top.2 += 1;
                    continue;
                }
                let inner = f.class as usize;
                match states[inner] {
                    Walk::Done(n) => top.2 += n,
                    Walk::Open => {
                        let name = &metadata.classes[inner].name;
                        return Err(input.error(format_args!("type {name:?} contains itself")));
                    }
                    Walk::New => {
                        states[inner] = Walk::Open;
                        stack.push((inner, 0, 1));
                    }
                }
                continue;
            }
            if sum > MAX_EXPANSION {
                let name = &metadata.classes[at].name;
                return Err(input.error(format_args!("type {name:?} is too large to decode")));
            }
            states[at] = Walk::Done(sum);
            stack.pop();
            if let Some(parent) = stack.last_mut() {
                parent.2 += sum;
            }
        }
    }
    Ok(())
}
