//! The eager loader: reads a whole data file (no index needed) into a
//! [`TraceContext`] and one tree per thread.
//!
//! It accepts what real recorders write (duplicated reference objects,
//! either cell order) and what crashed recorders leave (no `EOF`, a
//! half-written last block, calls without footers), and reports what it
//! dropped in a [`LoadReport`].
//!
//! **The data is the arena.** The loaded trace keeps the data file's bytes
//! (the [`TraceBytes`] its context holds) and, per tracepoint, one 16-byte
//! record: where it starts, its type, how far its footer is (the few far
//! ones kept aside), its parent, and where its children begin in one flat
//! array of node ids.
//! [`EagerNode`] is a view decoded on demand by the format's one decoder
//! ([`Object::decode`](crate::format::Object::decode)); a load needs the
//! data plus [`BYTES_PER_NODE`] bytes per tracepoint.
//!
//! **The load** is the index rebuild's discovery and stitch
//! ([`rebuild`](crate::read::rebuild)): blocks found in parallel (they carry
//! no lengths), accepted and refused as decoding does (every block before
//! an undecodable one is kept), their tracepoints numbered in file order (a
//! thread's in pre-order), each block told which containers its thread had
//! open at its start. The discovery writes a block's node records as it
//! skips its objects (parent: the innermost container open before it),
//! numbered in the block; window by window, the loader copies them into
//! the trace's in parallel, renumbered; what a block adds to containers
//! outside it (children, footers, noting what they had before) is applied
//! after, in file order, with its reference objects. A prefix sum in parts
//! turns the counts into ranges of the flat array; the blocks then place
//! their nodes in parallel, each place written once, so
//! [`EagerNode::children`] and [`TraceTree::children_range`](crate::tree::TraceTree::children_range)
//! are slices.
//!
//! **Memory budget.** [`EagerOptions::memory_budget`] bounds what a load may
//! take. The need is estimated before reading as the data's length plus
//! [`BYTES_PER_NODE`] per [`ESTIMATED_TRACEPOINT_LEN`] bytes of data; over
//! the budget, the load fails with [`Error::OverMemoryBudget`], which names
//! the lazy reader ([`LazyTraceReader`](crate::read::LazyTraceReader)). A
//! trace of smaller tracepoints than estimated is caught during the pass,
//! when its nodes outgrow the budget.

mod load;
mod report;

use std::path::Path;

use crate::common::{EventId, PhysicalOffset, ThreadId};
use crate::error::{DecodeError, DecodeErrorKind, Error, Result};
use crate::format::{ByteReader, Object, ObjectKind, TraceContext};
use crate::model::{Footer, Tracepoint, TracepointHeader, TracepointType};
use crate::read::ThreadInfo;
use crate::read::rebuild::{FAR, NodeRecord};
use crate::storage::packed::PackedTrace;
use crate::storage::{FileAccess, TraceBytes};

pub use report::LoadReport;

/// A node of an eagerly loaded tree, by position.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    zerocopy::FromBytes,
    zerocopy::Immutable,
    zerocopy::KnownLayout,
)]
#[repr(transparent)]
pub struct NodeId(pub u32);

/// Bytes a loaded trace holds per tracepoint beside the data: its record
/// (16) and its place in the flat children array (4).
pub const BYTES_PER_NODE: u64 =
    (std::mem::size_of::<NodeRecord>() + std::mem::size_of::<NodeId>()) as u64;

/// The tracepoint length [`EagerTrace::open_with`] assumes to estimate a
/// trace's node count before loading it (generated and recorded traces
/// average 30 to 40 bytes).
pub const ESTIMATED_TRACEPOINT_LEN: u64 = 32;

/// [`NodeRecord::parent`] of a thread's top-level tracepoints.
const NO_PARENT: u32 = u32::MAX;

/// How to load a trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EagerOptions {
    /// The most memory the load may take, in bytes, mapped data included;
    /// `None`: no limit. See [`EagerTrace::estimated_memory`] for the estimate.
    pub memory_budget: Option<u64>,
    /// How [`EagerTrace::open_with`] reads the file (mapped by default).
    pub file_access: FileAccess,
}

/// A tracepoint of a loaded trace, with its footer and children: a view
/// into the trace, decoded on demand.
#[derive(Clone, Copy)]
pub struct EagerNode<'a> {
    trace: &'a EagerTrace,
    id: NodeId,
    slot: NodeRecord,
}

/// The node's own record, not the whole trace it views.
impl std::fmt::Debug for EagerNode<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EagerNode")
            .field("id", &self.id)
            .field("slot", &self.slot)
            .finish()
    }
}

impl<'a> EagerNode<'a> {
    /// Its id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// Where its tracepoint starts in the data.
    pub fn offset(&self) -> PhysicalOffset {
        self.slot.tracepoint()
    }

    /// The tracepoint, decoded from the data.
    ///
    /// # Panics
    ///
    /// If the data no longer decodes as it did when loaded (a mapped file
    /// changed since); [`try_tracepoint`](Self::try_tracepoint) says so instead.
    pub fn tracepoint(&self) -> Tracepoint<'a> {
        self.try_tracepoint()
            .expect("the tracepoint decoded when loaded")
    }

    /// The tracepoint, or why it no longer decodes.
    pub fn try_tracepoint(&self) -> Result<Tracepoint<'a>> {
        match self.trace.object_at(self.slot.tracepoint(), None)? {
            Object::Tracepoint(tracepoint) => Ok(tracepoint),
            other => Err(changed(self.slot.tracepoint(), other.kind())),
        }
    }

    /// The tracepoint's type (kept in the node: no decoding).
    pub fn tracepoint_type(&self) -> TracepointType {
        self.slot.tracepoint_type()
    }

    /// The tracepoint's common header, read without decoding the rest.
    pub fn header(&self) -> TracepointHeader {
        self.trace
            .header_at(self.slot.tracepoint())
            .expect("the tracepoint decoded when loaded")
    }

    /// The footer of a container; `None` for leaves and for containers the
    /// recorder never finished.
    ///
    /// # Panics
    ///
    /// As [`tracepoint`](Self::tracepoint).
    pub fn footer(&self) -> Option<Footer<'a>> {
        self.try_footer().expect("the footer decoded when loaded")
    }

    /// The footer, or why it no longer decodes.
    pub fn try_footer(&self) -> Result<Option<Footer<'a>>> {
        let Some(at) = self.trace.footer_of(self.id, &self.slot) else {
            return Ok(None);
        };
        match self
            .trace
            .object_at(at, Some(self.slot.tracepoint_type()))?
        {
            Object::Footer(footer) => Ok(Some(footer)),
            other => Err(changed(at, other.kind())),
        }
    }

    /// The children, in order.
    pub fn children(&self) -> &'a [NodeId] {
        self.trace.children_of(self.id)
    }

    /// The parent; `None` for a thread's top-level tracepoints.
    pub fn parent(&self) -> Option<NodeId> {
        (self.slot.parent != NO_PARENT).then_some(NodeId(self.slot.parent))
    }

    /// Whether this is a container whose footer was never written.
    pub fn is_unfinished(&self) -> bool {
        self.slot.footer_distance() == 0 && self.slot.tracepoint_type().is_container()
    }
}

/// The error for data that no longer holds the object found when loading.
fn changed(at: PhysicalOffset, found: ObjectKind) -> Error {
    Error::Decode(DecodeError::new(
        at,
        DecodeErrorKind::UnexpectedObject {
            found,
            context: "where the trace held another object when loaded",
        },
    ))
}

/// A whole trace in memory: the data's bytes, and a small record per
/// tracepoint (see [`EagerTrace::estimated_memory`]).
#[derive(Debug)]
pub struct EagerTrace {
    context: TraceContext,
    /// Ascending by thread id.
    threads: Vec<ThreadInfo>,
    /// Each thread's top-level tracepoints (normally one root call), as
    /// `threads` orders them.
    roots: Vec<Vec<NodeId>>,
    slots: Vec<NodeRecord>,
    /// The footers too far from their tracepoints for their records:
    /// node, footer offset, ascending by node.
    far_footers: Vec<(u32, u64)>,
    /// The children's [`NodeId`]s, each node's in a range.
    children: Vec<u32>,
    report: LoadReport,
    by_type: TypeCounts,
}

/// Nodes per tracepoint type, by the type's byte.
type TypeCounts = [u64; TracepointType::ALL.len()];

impl EagerTrace {
    /// Loads the data file at `path` (its index, if any, is not used), or
    /// the data entry of the packed trace at `path`, with no memory budget.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, EagerOptions::default())
    }

    /// [`open`](Self::open) within `options`' memory budget. Errors name
    /// the file, as [`LazyOptions::open`](crate::read::LazyOptions::open)'s do.
    pub fn open_with(path: impl AsRef<Path>, options: EagerOptions) -> Result<Self> {
        let path = path.as_ref();
        let open = || {
            let bytes = TraceBytes::open(path, options.file_access)?;
            if PackedTrace::looks_packed(bytes.as_slice()) {
                return Self::load_with(PackedTrace::from_bytes(path, bytes)?.data()?, options);
            }
            Self::load_with(bytes, options)
        };
        open().map_err(|error| error.in_file(path))
    }

    /// Loads a data file's bytes, with no memory budget.
    pub fn load(data: TraceBytes) -> Result<Self> {
        Self::load_with(data, EagerOptions::default())
    }

    /// Loads a data file's bytes within `options`' memory budget.
    pub fn load_with(data: TraceBytes, options: EagerOptions) -> Result<Self> {
        load::load(data, options)
    }

    /// The memory a load of `data_len` bytes of data is estimated to need,
    /// mapped data included: the data's length plus `BYTES_PER_NODE` per
    /// `ESTIMATED_TRACEPOINT_LEN` bytes of data. A trace of smaller
    /// tracepoints is caught during the load, when its nodes outgrow the
    /// budget.
    pub fn estimated_memory(data_len: u64) -> u64 {
        data_len.saturating_add(data_len / ESTIMATED_TRACEPOINT_LEN * BYTES_PER_NODE)
    }

    /// The reference objects.
    pub fn context(&self) -> &TraceContext {
        &self.context
    }

    /// The threads, ascending by thread id.
    pub fn threads(&self) -> &[ThreadInfo] {
        &self.threads
    }

    /// A thread's top-level tracepoints (none for a thread the trace lacks).
    pub(crate) fn thread_roots(&self, thread: ThreadId) -> &[NodeId] {
        self.threads
            .binary_search_by_key(&thread, |info| info.id)
            .map_or(&[], |slot| &self.roots[slot])
    }

    /// A node.
    ///
    /// # Panics
    ///
    /// If `id` is not a node of this trace.
    pub fn node(&self, id: NodeId) -> EagerNode<'_> {
        EagerNode {
            trace: self,
            id,
            slot: self.slots[id.0 as usize],
        }
    }

    /// How many nodes (tracepoints) the trace holds.
    pub fn node_count(&self) -> usize {
        self.slots.len()
    }

    /// How many nodes of each tracepoint type the trace holds, indexed by
    /// the type's byte ([`TracepointType::ALL`]'s order): counted while
    /// loading.
    pub fn counts_by_type(&self) -> [u64; TracepointType::ALL.len()] {
        self.by_type
    }

    /// All nodes, in file order (each thread's nodes in pre-order).
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = EagerNode<'_>> + '_ {
        self.slots
            .iter()
            .enumerate()
            .map(|(index, &slot)| EagerNode {
                trace: self,
                id: NodeId(index as u32),
                slot,
            })
    }

    /// A node's children, in order.
    ///
    /// # Panics
    ///
    /// If `id` is not a node of this trace.
    pub fn children_of(&self, id: NodeId) -> &[NodeId] {
        let index = id.0 as usize;
        let start = self.slots[index].children as usize;
        let end = self
            .slots
            .get(index + 1)
            .map_or(self.children.len(), |next| next.children as usize);
        zerocopy::transmute_ref!(&self.children[start..end])
    }

    /// The node of the tracepoint with event id `event`.
    pub fn find_event(&self, event: EventId) -> Option<NodeId> {
        self.slots
            .iter()
            .position(|slot| self.header_at(slot.tracepoint()).ok().map(|h| h.event) == Some(event))
            .map(|index| NodeId(index as u32))
    }

    /// What the load dropped or found missing.
    pub fn report(&self) -> &LoadReport {
        &self.report
    }

    /// Where the footer of node `id` (record `slot`) starts.
    fn footer_of(&self, id: NodeId, slot: &NodeRecord) -> Option<PhysicalOffset> {
        match slot.footer_distance() {
            0 => None,
            FAR => {
                let far = &self.far_footers;
                let at = far.binary_search_by_key(&id.0, |&(node, _)| node).ok()?;
                Some(PhysicalOffset(far[at].1))
            }
            distance => Some(PhysicalOffset(slot.tracepoint().0 + distance)),
        }
    }

    /// Decodes the object at `at` (`container`: the type a footer closes).
    fn object_at(
        &self,
        at: PhysicalOffset,
        container: Option<TracepointType>,
    ) -> Result<Object<'_>> {
        let bytes = self.context.data().as_slice();
        let start = usize::try_from(at.0).unwrap_or(usize::MAX).min(bytes.len());
        let mut reader = ByteReader::new(&bytes[start..], at.0);
        Ok(Object::decode(&mut reader, container)?)
    }

    /// The common header of the tracepoint at `at`.
    fn header_at(&self, at: PhysicalOffset) -> Result<TracepointHeader> {
        let bytes = self.context.data().as_slice();
        let start = usize::try_from(at.0).unwrap_or(usize::MAX).min(bytes.len());
        let mut reader = ByteReader::new(&bytes[start..], at.0);
        if reader.peek_u8() == Some(ObjectKind::Tracepoint as u8) {
            reader.u8()?;
            return Ok(TracepointHeader::decode(&mut reader)?);
        }
        match self.object_at(at, None)? {
            Object::Tracepoint(tracepoint) => Ok(tracepoint.header),
            other => Err(changed(at, other.kind())),
        }
    }
}

#[cfg(test)]
mod tests;
