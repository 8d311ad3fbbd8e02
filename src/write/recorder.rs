//! The builder API every writer implements: [`TraceRecorder`] for the trace,
//! [`ThreadRecorder`] for one thread's tree. Code that records through these
//! traits works with any writer; switching writers changes the line that
//! constructs one (and the writer's own way to finish).

use crate::common::{EventId, ThreadId};
use crate::error::Result;
use crate::model::JavaStr;
use crate::write::spec::{
    BreakpointSpec, CallOutcome, CallSpec, CodeLocationSpec, FieldSpec, ValueSpec, VariableSpec,
};

/// A trace being recorded: a set of threads, each growing one tree.
///
/// Reference objects are interned by the writer, event ids come from one
/// trace-wide counter, and errors of use (exiting a call that was never
/// entered) are [`Error::InvalidArgument`](crate::Error::InvalidArgument).
pub trait TraceRecorder {
    /// The recorder of one thread, borrowing the trace.
    type Thread<'r>: ThreadRecorder
    where
        Self: 'r;

    /// Adds a thread named `name` and returns its id (0 for the first
    /// thread, then 1, 2, …).
    fn add_thread<'n>(&mut self, name: impl Into<JavaStr<'n>>) -> Result<ThreadId>;

    /// The recorder of thread `thread`; [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// if no such thread was added.
    fn thread(&mut self, thread: ThreadId) -> Result<Self::Thread<'_>>;
}

/// One thread's tree, recorded in order: containers (calls, loops, loop
/// iterations) are entered and exited, leaves are added to the innermost
/// open container (or at the top level when none is open).
///
/// `at` is where a tracepoint happened; `None` when unknown. Every method
/// that adds a tracepoint returns its event id.
///
/// Both writers' threads ([`DumpThread`](crate::write::DumpThread),
/// [`StreamingThread`](crate::write::StreamingThread)) implement it through
/// one shared builder, so they record identically.
pub trait ThreadRecorder {
    /// The thread being recorded.
    fn thread_id(&self) -> ThreadId;

    /// How many containers are open.
    fn depth(&self) -> usize;

    /// Enters a method call.
    fn enter_call(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        call: CallSpec<'_>,
    ) -> Result<EventId>;

    /// Exits the innermost open container, which must be a method call.
    fn exit_call(&mut self, outcome: CallOutcome<'_>) -> Result<()>;

    /// Enters a loop identified by `loop_id`.
    fn enter_loop(&mut self, at: Option<&CodeLocationSpec<'_>>, loop_id: i32) -> Result<EventId>;

    /// Enters the next iteration of the innermost open container, which must
    /// be a loop. The iteration takes the loop's code location and id and is
    /// numbered from 0.
    fn enter_iteration(&mut self) -> Result<EventId>;

    /// Exits the innermost open container, which must be a loop iteration.
    fn exit_iteration(&mut self) -> Result<()>;

    /// Exits the innermost open container, which must be a loop, recording
    /// that it ran `iterations` times.
    fn exit_loop(&mut self, iterations: i32) -> Result<()>;

    /// Adds `array[index] ➜ value`.
    fn read_array<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        array: ValueSpec<'a>,
        index: i32,
        value: ValueSpec<'a>,
    ) -> Result<EventId>;

    /// Adds `array[index] = value`.
    fn write_array<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        array: ValueSpec<'a>,
        index: i32,
        value: ValueSpec<'a>,
    ) -> Result<EventId>;

    /// Adds `variable ➜ value`.
    fn read_local<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        variable: &'a VariableSpec<'a>,
        value: ValueSpec<'a>,
    ) -> Result<EventId>;

    /// Adds `variable = value`.
    fn write_local<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        variable: &'a VariableSpec<'a>,
        value: ValueSpec<'a>,
    ) -> Result<EventId>;

    /// Adds `receiver.field ➜ value` (`receiver` is `Null` for static fields).
    fn read_field<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        field: &'a FieldSpec<'a>,
        receiver: ValueSpec<'a>,
        value: ValueSpec<'a>,
    ) -> Result<EventId>;

    /// Adds `receiver.field = value` (`receiver` is `Null` for static fields).
    fn write_field<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        field: &'a FieldSpec<'a>,
        receiver: ValueSpec<'a>,
        value: ValueSpec<'a>,
    ) -> Result<EventId>;

    /// Adds a snapshot breakpoint hit.
    fn breakpoint(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        breakpoint: BreakpointSpec<'_>,
    ) -> Result<EventId>;

    /// Adds `throw exception`.
    fn throw(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        exception: ValueSpec<'_>,
    ) -> Result<EventId>;

    /// Adds `catch(exception)`.
    fn catch(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        exception: ValueSpec<'_>,
    ) -> Result<EventId>;
}

/// A [`ThreadRecorder`] that also takes tracepoints and footers already
/// carrying their ids (event, code location, method, …): for recorders,
/// importers and generators that intern their reference objects once
/// themselves, which skips the builder's interning by name (several times
/// the writer's own cost per tracepoint).
///
/// The caller chooses the ids: the reference objects a tracepoint names must
/// have been added with [`add_reference`](Self::add_reference) (or interned by
/// the builder methods), and event ids must be unique in the trace.
#[cfg(any(test, feature = "generate"))]
pub(crate) trait PushRecorder: ThreadRecorder {
    /// Adds a reference object that keeps its id (any kind but
    /// `THREAD_NAME`); it is written before the first tracepoint that names
    /// it. Adding an equal object again is allowed; two different objects
    /// with one kind and id are an [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    fn add_reference(&mut self, object: &crate::format::Object<'_>) -> Result<()>;

    /// Adds a leaf, or a container's header which
    /// [`push_footer`](Self::push_footer) closes, keeping its ids.
    fn push_tracepoint(&mut self, tracepoint: &crate::model::Tracepoint<'_>) -> Result<()>;

    /// Closes the innermost open container with `footer`, which must be of
    /// its type.
    fn push_footer(&mut self, footer: &crate::model::Footer<'_>) -> Result<()>;
}
