//! `Node` (a tracepoint of an open trace) and `Children` (a lazy
//! sequence of a call's children or a thread's roots, read a page at a
//! time underneath).

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PySlice;
use tracetree::common::ThreadId;
use tracetree::model::{Footer, Tracepoint, TracepointBody};
use tracetree::print::TextFormatter;
use tracetree::read::TraceContext;
use tracetree::tree::Navigate;
use tracetree::{LazyNode, TraceTree};

use crate::errors::{OrRaise, raise};
use crate::trace::{Shared, handle_text};
use crate::tree::{AnyNode, Reading, Tree, on_tree};

/// Children read from the trace at once when iterating.
const PAGE: usize = 4096;

/// At most this many characters of a line in a `repr`.
const REPR_CHARS: usize = 80;

/// `line` cut to [`REPR_CHARS`] characters, with `…` where it was cut.
pub fn shorten(line: &str) -> String {
    match line.char_indices().nth(REPR_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// A tracepoint as its tree shows it, decoded.
pub struct Data {
    tracepoint: Tracepoint<'static>,
    footer: Option<Footer<'static>>,
}

impl Data {
    fn tracepoint(&self) -> &Tracepoint<'static> {
        &self.tracepoint
    }

    fn footer(&self) -> Option<&Footer<'static>> {
        self.footer.as_ref()
    }
}

/// `node`'s tracepoint as `tree` shows it.
fn decoded<T: Tree>(tree: &T, node: AnyNode) -> tracetree::Result<Data> {
    tree.visit(T::unwrap(node)?, |tracepoint, footer| Data {
        tracepoint: tracepoint.clone().into_owned(),
        footer: footer.map(|footer| footer.clone().into_owned()),
    })
}

/// A tracepoint: a method call, a field or local access, a loop, … Its
/// properties are read from the trace when asked for, as the trace is
/// read (as recorded, or post-processed).
#[pyclass(frozen, module = "tracetree")]
pub struct Node {
    shared: Arc<Shared>,
    node: AnyNode,
    depth: OnceLock<usize>,
    /// The decoded tracepoint, once a property asked for it.
    data: OnceLock<Arc<Data>>,
}

impl Node {
    pub fn new(shared: Arc<Shared>, node: AnyNode, depth: Option<usize>) -> Node {
        let known = OnceLock::new();
        if let Some(depth) = depth {
            let _ = known.set(depth);
        }
        Node {
            shared,
            node,
            depth: known,
            data: OnceLock::new(),
        }
    }

    /// The reader and the decoded tracepoint (decoded on first use, then
    /// kept with the node).
    fn read(&self) -> PyResult<(Reading, Arc<Data>)> {
        let reader = self.reader()?;
        if let Some(data) = self.data.get() {
            return Ok((reader, Arc::clone(data)));
        }
        let data = on_tree!(self.shared.postprocess, reader, |tree| decoded(
            tree, self.node
        ))
        .or_raise()?;
        Ok((reader, Arc::clone(self.data.get_or_init(|| Arc::new(data)))))
    }

    /// The library's node of the trace as recorded; `InvalidArgumentError`
    /// for a node of a post-processed trace, named as `what`.
    pub fn lazy_node(&self, what: &str) -> PyResult<LazyNode> {
        match self.node {
            AnyNode::Raw(node) => Ok(node),
            AnyNode::Post(_) => Err(raise(
                "InvalidArgumentError",
                format!(
                    "invalid {what}: a node of a trace opened with postprocess=True; this \
                     reads the trace as recorded"
                ),
            )),
        }
    }

    fn reader(&self) -> PyResult<Reading> {
        self.shared.reader()
    }

    fn depth_of(&self, reader: &Reading) -> PyResult<usize> {
        if let Some(depth) = self.depth.get() {
            return Ok(*depth);
        }
        let depth = on_tree!(self.shared.postprocess, reader, |tree| tree
            .own(self.node)
            .and_then(|node| tree.ancestors(node))
            .map(|above| above.len()))
        .or_raise()?;
        Ok(*self.depth.get_or_init(|| depth))
    }

    /// A node of the same trace.
    fn other(&self, node: AnyNode, depth: Option<usize>) -> Node {
        Node::new(Arc::clone(&self.shared), node, depth)
    }

    /// Printed values, as `print` shows them.
    fn values(
        context: &TraceContext,
        values: &[tracetree::model::Value<'_>],
    ) -> PyResult<Vec<String>> {
        let mut formatter = TextFormatter::new(context, false);
        values
            .iter()
            .map(|value| {
                let mut text = String::new();
                formatter.write_value(&mut text, value).or_raise()?;
                Ok(text)
            })
            .collect()
    }
}

#[pymethods]
impl Node {
    /// The tracepoint's event id (unique within the trace).
    #[getter]
    fn event_id(&self) -> PyResult<i32> {
        Ok(self.read()?.1.tracepoint().event().get())
    }

    /// Its kind as `tracetree dump` names it: `method_call`, `read_field`,
    /// `write_local`, `loop`, `loop_iteration`, … (`tracetree.KINDS`).
    #[getter]
    fn kind(&self) -> PyResult<&'static str> {
        Ok(self.read()?.1.tracepoint().tracepoint_type().name())
    }

    /// Its status in a diff trace: `unchanged`, `removed`, `added`,
    /// `edited_old`, `edited_new`; `None` outside a diff (and for a diff's
    /// virtual root).
    #[getter]
    fn diff_status(&self) -> PyResult<Option<&'static str>> {
        Ok(self.read()?.1.tracepoint().header.diff_status.name())
    }

    /// In a packed diff, the event ids of the left and right tracepoints
    /// it was made from, `(left, right)`, each `None` on a side that has
    /// none (added: no left; removed: no right); `None` outside a diff.
    #[getter]
    fn origin(&self) -> PyResult<Option<(Option<i32>, Option<i32>)>> {
        let (reader, data) = self.read()?;
        let Some(map) = reader.diff_map() else {
            return Ok(None);
        };
        let origin = map.event(data.tracepoint().event()).or_raise()?;
        Ok(origin.map(|o| (o.left.map(|e| e.get()), o.right.map(|e| e.get()))))
    }

    /// The id of its thread.
    #[getter]
    fn thread(&self) -> PyResult<i32> {
        let reader = self.reader()?;
        let thread = on_tree!(self.shared.postprocess, reader, |tree| tree
            .own(self.node)
            .map(|node| tree.node_thread(node).get()))
        .or_raise()?;
        Ok(thread)
    }

    /// Its depth in its thread's tree: 0 for a top-level tracepoint.
    #[getter]
    fn depth(&self) -> PyResult<usize> {
        let reader = self.reader()?;
        self.depth_of(&reader)
    }

    /// Its line as `tracetree print` prints it (without indentation).
    #[getter]
    fn text(&self, py: Python<'_>) -> PyResult<String> {
        let reader = self.reader()?;
        py.detach(|| {
            on_tree!(self.shared.postprocess, reader, |tree| {
                tracetree::node_text(tree, tree.own(self.node)?, false)
            })
        })
        .or_raise()
    }

    /// A call's method, `Class.name` as `dump` gives it; `None` for other
    /// kinds.
    #[getter]
    fn method(&self) -> PyResult<Option<String>> {
        let (reader, data) = self.read()?;
        let TracepointBody::MethodCall { method, .. } = &data.tracepoint().body else {
            return Ok(None);
        };
        let context = reader.context();
        let Ok(method) = context.method(*method) else {
            return Ok(None);
        };
        let class = context
            .class(method.class)
            .map(|c| c.name.decode().into_owned())
            .unwrap_or_default();
        Ok(Some(if class.is_empty() {
            method.name.decode().into_owned()
        } else {
            format!("{class}.{}", method.name.decode())
        }))
    }

    /// A call's arguments, or the value a write stored (one item), as
    /// `print` shows values; `None` for other kinds.
    #[getter]
    fn arguments(&self) -> PyResult<Option<Vec<String>>> {
        let (reader, data) = self.read()?;
        match &data.tracepoint().body {
            TracepointBody::MethodCall { arguments, .. } => {
                Ok(Some(Node::values(reader.context(), arguments)?))
            }
            TracepointBody::WriteArray { value, .. }
            | TracepointBody::WriteLocal { value, .. }
            | TracepointBody::WriteField { value, .. } => Ok(Some(Node::values(
                reader.context(),
                std::slice::from_ref(value),
            )?)),
            _ => Ok(None),
        }
    }

    /// A call's returned value, or the value a read returned, as `print`
    /// shows it; `None` for a void call, one that threw or never ended,
    /// and other kinds.
    #[getter]
    fn result(&self) -> PyResult<Option<String>> {
        let (reader, data) = self.read()?;
        let value = match (&data.tracepoint().body, data.footer()) {
            (TracepointBody::MethodCall { .. }, Some(Footer::MethodCall { result, exception }))
                if exception.is_empty() && !matches!(result, tracetree::model::Value::Void) =>
            {
                result
            }
            (TracepointBody::ReadArray { value, .. }, _)
            | (TracepointBody::ReadLocal { value, .. }, _)
            | (TracepointBody::ReadField { value, .. }, _) => value,
            _ => return Ok(None),
        };
        Ok(Node::values(reader.context(), std::slice::from_ref(value))?.pop())
    }

    /// The simple class name of the exception a call threw; `None` when
    /// it threw none.
    #[getter]
    fn exception(&self) -> PyResult<Option<String>> {
        let (_, data) = self.read()?;
        Ok(match data.footer() {
            Some(Footer::MethodCall { exception, .. }) if !exception.is_empty() => {
                Some(exception.decode().into_owned())
            }
            _ => None,
        })
    }

    /// Where it was recorded: `(file, line)` (`file` `None` when unknown),
    /// or `None` without a code location.
    #[getter]
    fn code_location(&self) -> PyResult<Option<(Option<String>, i32)>> {
        let (reader, data) = self.read()?;
        let context = reader.context();
        let Ok(location) = context.code_location(data.tracepoint().header.code_location) else {
            return Ok(None);
        };
        let file = context
            .string(location.file_name)
            .ok()
            .map(|file| file.decode().into_owned());
        Ok(Some((file, location.line)))
    }

    /// Its direct children (0 for a leaf).
    #[getter]
    fn child_count(&self, py: Python<'_>) -> PyResult<usize> {
        let reader = self.reader()?;
        py.detach(|| {
            on_tree!(self.shared.postprocess, reader, |tree| tree
                .child_count(tree.own(self.node)?))
        })
        .or_raise()
    }

    /// Its children from `start` (`count` of them, or all): a lazy
    /// sequence, read a page at a time.
    #[pyo3(signature = (start=0, count=None))]
    fn children(&self, start: usize, count: Option<usize>) -> PyResult<Children> {
        let reader = self.reader()?;
        let depth = self.depth_of(&reader)? + 1;
        Ok(Children::new(
            Arc::clone(&self.shared),
            Parent::Node(self.node),
            start,
            count.map(|count| start.saturating_add(count)),
            depth,
        ))
    }

    /// The call or loop it is in; `None` at the top of its thread.
    #[getter]
    fn parent(&self, py: Python<'_>) -> PyResult<Option<Node>> {
        let reader = self.reader()?;
        let parent = py
            .detach(|| {
                on_tree!(self.shared.postprocess, reader, |tree| Ok(tree
                    .parent(tree.own(self.node)?)?
                    .map(wrap_of(tree))))
            })
            .or_raise()?;
        let depth = self.depth.get().and_then(|d| d.checked_sub(1));
        Ok(parent.map(|parent| self.other(parent, depth)))
    }

    /// The calls and loops it is in, outermost first.
    fn ancestors(&self, py: Python<'_>) -> PyResult<Vec<Node>> {
        let reader = self.reader()?;
        let ancestors = py
            .detach(|| {
                on_tree!(self.shared.postprocess, reader, |tree| Ok(tree
                    .ancestors(tree.own(self.node)?)?
                    .into_iter()
                    .map(wrap_of(tree))
                    .collect::<Vec<_>>()))
            })
            .or_raise()?;
        let _ = self.depth.set(ancestors.len());
        Ok(ancestors
            .into_iter()
            .enumerate()
            .map(|(depth, node)| self.other(node, Some(depth)))
            .collect())
    }

    /// A string naming this node (`THREAD:OFFSET`), for `Trace.node` to
    /// resolve in this or another process, or after the trace is opened
    /// again: store it, pickle it, send it.
    #[getter]
    fn handle(&self) -> PyResult<String> {
        let reader = self.reader()?;
        let handle = on_tree!(self.shared.postprocess, reader, |tree| tree
            .own(self.node)
            .map(|node| tree.handle(node)))
        .or_raise()?;
        Ok(handle_text(handle))
    }

    fn __repr__(&self) -> String {
        let described = (|| -> PyResult<String> {
            let (reader, data) = self.read()?;
            let tracepoint = data.tracepoint();
            let (line, thread) = on_tree!(self.shared.postprocess, reader, |tree| {
                let node = tree.own(self.node).or_raise()?;
                let line = tracetree::node_text(tree, node, false).or_raise()?;
                (line, tree.node_thread(node).get())
            });
            Ok(format!(
                "<Node #{} {} thread={} depth={}: {}>",
                tracepoint.event().get(),
                tracepoint.tracepoint_type().name(),
                thread,
                self.depth_of(&reader)?,
                shorten(&line)
            ))
        })();
        described.unwrap_or_else(|_| "<Node of a closed trace>".to_string())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Node>().is_ok_and(|other| {
            let other = other.get();
            Arc::ptr_eq(&self.shared, &other.shared) && self.node == other.node
        })
    }

    fn __hash__(&self) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.node.hash(&mut hasher);
        hasher.finish()
    }
}

/// Whose children a [`Children`] lists.
#[derive(Debug, Clone, Copy)]
pub enum Parent {
    Thread(ThreadId),
    Node(AnyNode),
}

/// [`Tree::wrap`] of `tree`'s type, as a function to map with.
pub fn wrap_of<T: Tree>(_tree: &T) -> fn(T::Node) -> AnyNode {
    T::wrap
}

/// `count` children of `parent` from `from`.
fn page<T: Tree>(
    tree: &T,
    parent: Parent,
    from: usize,
    count: usize,
) -> tracetree::Result<Vec<AnyNode>> {
    let nodes = match parent {
        Parent::Thread(thread) => tree.roots_range(thread, from, count)?,
        Parent::Node(node) => tree.children_range(T::unwrap(node)?, from, count)?,
    };
    Ok(nodes.into_iter().map(T::wrap).collect())
}

/// [`page`] of the tree `shared` reads.
fn page_of(shared: &Shared, parent: Parent, from: usize, count: usize) -> PyResult<Vec<AnyNode>> {
    let reader = shared.reader()?;
    on_tree!(shared.postprocess, reader, |tree| page(
        tree, parent, from, count
    ))
    .or_raise()
}

/// A call's children, or a thread's top-level tracepoints: a sequence
/// (`len`, indexing, slicing, iteration) read from the trace a page at a
/// time, so that a call with millions of children costs only the pages
/// used.
#[pyclass(frozen, sequence, module = "tracetree")]
pub struct Children {
    shared: Arc<Shared>,
    parent: Parent,
    start: usize,
    /// The end (exclusive) asked for; `None`: to the last child.
    stop: Option<usize>,
    /// The children's depth.
    depth: usize,
    len: OnceLock<usize>,
}

impl Children {
    pub fn new(
        shared: Arc<Shared>,
        parent: Parent,
        start: usize,
        stop: Option<usize>,
        depth: usize,
    ) -> Children {
        Children {
            shared,
            parent,
            start,
            stop,
            depth,
            len: OnceLock::new(),
        }
    }

    fn length(&self, py: Python<'_>) -> PyResult<usize> {
        if let Some(len) = self.len.get() {
            return Ok(*len);
        }
        let reader = self.shared.reader()?;
        let total = py
            .detach(|| {
                on_tree!(self.shared.postprocess, reader, |tree| match self.parent {
                    Parent::Thread(thread) => tree.root_count(thread),
                    Parent::Node(node) => tree.child_count(tree.own(node)?),
                })
            })
            .or_raise()?;
        let end = self.stop.map_or(total, |stop| stop.min(total));
        Ok(*self.len.get_or_init(|| end.saturating_sub(self.start)))
    }
}

#[pymethods]
impl Children {
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.length(py)
    }

    fn __getitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let len = self.length(py)?;
        if let Ok(slice) = index.cast::<PySlice>() {
            let indices = slice.indices(len as isize)?;
            if indices.step == 1 {
                let from = indices.start.max(0) as usize;
                let to = (indices.stop.max(indices.start)).max(0) as usize;
                let children = Children::new(
                    Arc::clone(&self.shared),
                    self.parent,
                    self.start + from,
                    Some(self.start + to),
                    self.depth,
                );
                return Ok(Py::new(py, children)?.into_any());
            }
            let mut nodes = Vec::new();
            let mut at = indices.start;
            for _ in 0..indices.slicelength {
                nodes.push(self.get(py, at as usize)?);
                at += indices.step;
            }
            return Ok(nodes.into_pyobject(py)?.into_any().unbind());
        }
        let index: isize = index.extract()?;
        let at = if index < 0 {
            index + len as isize
        } else {
            index
        };
        if at < 0 || at as usize >= len {
            return Err(PyIndexError::new_err("child index out of range"));
        }
        Ok(Py::new(py, self.get(py, at as usize)?)?.into_any())
    }

    fn __iter__(&self) -> ChildrenIter {
        ChildrenIter {
            shared: Arc::clone(&self.shared),
            parent: self.parent,
            depth: self.depth,
            state: Mutex::new(IterState {
                next: self.start,
                stop: self.stop,
                page: VecDeque::new(),
                done: false,
            }),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let len = self
            .length(py)
            .map_or_else(|_| "?".to_string(), |n| n.to_string());
        let of = match self.parent {
            Parent::Thread(thread) => format!("roots of thread {}", thread.get()),
            Parent::Node(node) => match Node::new(Arc::clone(&self.shared), node, None).read() {
                Ok((_, data)) => format!("children of #{}", data.tracepoint().event().get()),
                Err(_) => "children".to_string(),
            },
        };
        format!("<Children: {len} {of} from {}>", self.start)
    }
}

impl Children {
    /// The child at `index` of this sequence.
    fn get(&self, py: Python<'_>, index: usize) -> PyResult<Node> {
        let found = py.detach(|| page_of(&self.shared, self.parent, self.start + index, 1))?;
        match found.first() {
            Some(&node) => Ok(Node::new(Arc::clone(&self.shared), node, Some(self.depth))),
            None => Err(PyValueError::new_err("the child is gone")),
        }
    }
}

struct IterState {
    next: usize,
    stop: Option<usize>,
    page: VecDeque<AnyNode>,
    done: bool,
}

/// An iterator over `Children`, a page of nodes read at a time.
#[pyclass(frozen, module = "tracetree")]
pub struct ChildrenIter {
    shared: Arc<Shared>,
    parent: Parent,
    depth: usize,
    state: Mutex<IterState>,
}

#[pymethods]
impl ChildrenIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self) -> PyResult<Option<Node>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.page.is_empty() && !state.done {
            let count = match state.stop {
                Some(stop) => stop.saturating_sub(state.next).min(PAGE),
                None => PAGE,
            };
            let from = state.next;
            // Read with the GIL held: the state's lock is held too, and a
            // page is quick.
            let nodes = if count == 0 {
                Vec::new()
            } else {
                page_of(&self.shared, self.parent, from, count)?
            };
            state.done = nodes.len() < count || count == 0;
            state.next += nodes.len();
            state.page = nodes.into();
        }
        Ok(state
            .page
            .pop_front()
            .map(|node| Node::new(Arc::clone(&self.shared), node, Some(self.depth))))
    }
}
