//! The pooled values the import needs, resolved from keys and memoized per
//! chunk: threads (Java id and name), methods (class, name, descriptor)
//! and stack traces (their frames' methods, top frame first; frames of
//! methods the JVM hides, such as a lambda's hidden class, left out as
//! `jfr print` leaves them out).
//!
//! A key is resolved once per chunk: the pool's value is decoded by its
//! layout and its references followed (a method's class and symbols, a
//! class's name symbol, a symbol's string, a pooled string), field
//! positions looked up once per chunk by name. A key the pool lacks
//! resolves to `None` (the JDK prints such a value as `null`).

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::reader::Chunk;
use super::value::Value;

/// A method: its dotted class name, its name and its JVM descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MethodName {
    /// `pkg.Outer$Inner`.
    pub class: String,
    /// The method's name.
    pub name: String,
    /// `(I)J`; empty when the recording has none.
    pub descriptor: String,
}

/// A stack trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackTrace {
    /// The recorder cut it at its maximum depth.
    pub truncated: bool,
    /// The frames' methods, top (innermost) frame first; a frame whose
    /// method is unknown or hidden is left out.
    pub frames: Vec<Arc<MethodName>>,
}

/// A thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Its Java thread id (`None` for a thread with none, or 0).
    pub java_id: Option<i64>,
    /// Its Java name.
    pub name: Option<String>,
}

/// A type's index and the positions of the fields used, when present.
#[derive(Debug, Clone, Copy)]
struct Layout<const N: usize> {
    class: Option<u32>,
    fields: [Option<usize>; N],
}

impl<const N: usize> Layout<N> {
    fn of(chunk: &Chunk<'_>, name: &str, fields: [&str; N]) -> Self {
        let class = chunk.metadata.class_named(name);
        let positions =
            fields.map(|field| class.and_then(|c| chunk.metadata.class(c).field(field)));
        Layout {
            class,
            fields: positions,
        }
    }
}

/// Resolves and memoizes the pooled values of one chunk.
pub struct Resolver<'c, 'a> {
    chunk: &'c Chunk<'a>,
    stack: Layout<2>,
    frame: Layout<1>,
    method: Layout<4>,
    class: Layout<1>,
    thread: Layout<2>,
    /// Each method with whether the JVM hides it.
    methods: FxHashMap<i64, Option<(Arc<MethodName>, bool)>>,
    stacks: FxHashMap<i64, Option<Arc<StackTrace>>>,
    threads: FxHashMap<i64, Option<Arc<ThreadInfo>>>,
}

impl<'c, 'a> Resolver<'c, 'a> {
    /// A resolver of `chunk`'s pools.
    pub fn new(chunk: &'c Chunk<'a>) -> Self {
        Resolver {
            chunk,
            stack: Layout::of(chunk, "jdk.types.StackTrace", ["truncated", "frames"]),
            frame: Layout::of(chunk, "jdk.types.StackFrame", ["method"]),
            method: Layout::of(
                chunk,
                "jdk.types.Method",
                ["type", "name", "descriptor", "hidden"],
            ),
            class: Layout::of(chunk, "java.lang.Class", ["name"]),
            thread: Layout::of(chunk, "java.lang.Thread", ["javaName", "javaThreadId"]),
            methods: FxHashMap::default(),
            stacks: FxHashMap::default(),
            threads: FxHashMap::default(),
        }
    }

    /// The stack trace of `key`.
    pub fn stack(&mut self, key: i64) -> Option<Arc<StackTrace>> {
        self.stack_ref(key)?;
        self.stacks.get(&key).cloned().flatten()
    }

    /// The stack trace of `key`, borrowed (no reference count touched).
    #[inline]
    pub fn stack_ref(&mut self, key: i64) -> Option<&StackTrace> {
        if !self.stacks.contains_key(&key) {
            let resolved = self.resolve_stack(key).map(Arc::new);
            self.stacks.insert(key, resolved);
        }
        self.stacks.get(&key)?.as_deref()
    }

    fn resolve_stack(&mut self, key: i64) -> Option<StackTrace> {
        let fields = self.fields_of(self.stack.class?, key)?;
        let truncated = matches!(
            self.stack.fields[0].and_then(|i| fields.get(i)),
            Some(Value::Boolean(true))
        );
        let Some(Value::Array(frames)) = self.stack.fields[1].and_then(|i| fields.get(i)) else {
            return Some(StackTrace {
                truncated,
                frames: Vec::new(),
            });
        };
        let mut methods = Vec::with_capacity(frames.len());
        for frame in frames {
            let Value::Struct { fields, .. } = frame else {
                continue;
            };
            let method = self.frame.fields[0]
                .and_then(|i| fields.get(i))
                .and_then(Value::as_ref_key);
            if let Some((method, false)) = method.and_then(|key| self.method_and_hidden(key)) {
                methods.push(method);
            }
        }
        Some(StackTrace {
            truncated,
            frames: methods,
        })
    }

    /// The method of `key`.
    pub fn method(&mut self, key: i64) -> Option<Arc<MethodName>> {
        self.method_and_hidden(key).map(|(method, _)| method)
    }

    /// The method of `key` and whether the JVM hides it (its `hidden`
    /// field, recorded since JDK 14; older recordings hide nothing).
    fn method_and_hidden(&mut self, key: i64) -> Option<(Arc<MethodName>, bool)> {
        if let Some(known) = self.methods.get(&key) {
            return known.clone();
        }
        let resolved = self
            .resolve_method(key)
            .map(|(method, hidden)| (Arc::new(method), hidden));
        self.methods.insert(key, resolved.clone());
        resolved
    }

    fn resolve_method(&self, key: i64) -> Option<(MethodName, bool)> {
        let fields = self.fields_of(self.method.class?, key)?;
        let field = |n: usize| self.method.fields[n].and_then(|i| fields.get(i));
        let class = match field(0) {
            Some(Value::Ref { key, .. }) => self
                .fields_of(self.class.class?, *key)
                .and_then(|c| self.class.fields[0].and_then(|i| c.get(i)).cloned())
                .and_then(|name| self.text(&name, 0)),
            _ => None,
        };
        let method = MethodName {
            class: class.unwrap_or_default().replace('/', "."),
            name: field(1).and_then(|v| self.text(v, 0)).unwrap_or_default(),
            descriptor: field(2).and_then(|v| self.text(v, 0)).unwrap_or_default(),
        };
        Some((method, matches!(field(3), Some(Value::Boolean(true)))))
    }

    /// The thread of `key`.
    pub fn thread(&mut self, key: i64) -> Option<Arc<ThreadInfo>> {
        if let Some(known) = self.threads.get(&key) {
            return known.clone();
        }
        let resolved = self.resolve_thread(key).map(Arc::new);
        self.threads.insert(key, resolved.clone());
        resolved
    }

    fn resolve_thread(&self, key: i64) -> Option<ThreadInfo> {
        let fields = self.fields_of(self.thread.class?, key)?;
        let field = |n: usize| self.thread.fields[n].and_then(|i| fields.get(i));
        Some(ThreadInfo {
            name: field(0).and_then(|v| self.text(v, 0)),
            java_id: field(1).and_then(Value::as_i64).filter(|&id| id != 0),
        })
    }

    /// The fields of the pooled value of `key` in the pool of `class`.
    fn fields_of(&self, class: u32, key: i64) -> Option<Vec<Value<'a>>> {
        match self.chunk.pooled(class, key)?.ok()? {
            Value::Struct { fields, .. } => Some(fields),
            _ => None,
        }
    }

    /// The text a value stands for: a string, a pooled string, a symbol
    /// (a type whose one field is its string), or a reference to one.
    fn text(&self, value: &Value<'a>, depth: usize) -> Option<String> {
        if depth > 4 {
            return None;
        }
        match value {
            Value::String(string) => self.chunk.text(string),
            Value::Ref { class, key } => {
                let value = self.chunk.pooled(*class, *key)?.ok()?;
                self.text(&value, depth + 1)
            }
            Value::Struct { fields, .. } if fields.len() == 1 => self.text(&fields[0], depth + 1),
            _ => None,
        }
    }
}
