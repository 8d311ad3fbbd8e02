//! What the thread recorders of every writer share: the stack of open
//! containers (which checks that exits match entries and numbers loop
//! iterations), and the [`ThreadRecorder`](crate::write::ThreadRecorder)
//! methods themselves — specs interned through the pool into tracepoints and
//! footers — written once over [`BuildTarget`].

use crate::common::{CodeLocationId, EventId, ThreadId};
use crate::error::{Error, Result};
use crate::model::{
    DiffStatus, Footer, JavaStr, Tracepoint, TracepointBody, TracepointHeader, TracepointType,
    Value,
};
use crate::write::check::check_str;
use crate::write::pool::ReferencePool;
use crate::write::recorder::ThreadRecorder;
use crate::write::resolve::UNTRACKED_RESULT;
use crate::write::spec::{
    BreakpointSpec, CallOutcome, CallSpec, CodeLocationSpec, FieldSpec, LeafSpec, ValueSpec,
    VariableSpec,
};

/// A container entered and not yet exited.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenContainer {
    pub(crate) tracepoint_type: TracepointType,
    pub(crate) code_location: CodeLocationId,
    pub(crate) loop_id: i32,
    /// Iterations entered so far (loops only).
    pub(crate) iterations: i32,
}

/// The containers of one thread entered and not yet exited, innermost last.
#[derive(Debug, Clone, Default)]
pub(crate) struct ContainerStack {
    open: Vec<OpenContainer>,
}

impl ContainerStack {
    /// How many containers are open.
    pub(crate) fn depth(&self) -> usize {
        self.open.len()
    }

    /// The innermost open container.
    pub(crate) fn innermost(&self) -> Option<&OpenContainer> {
        self.open.last()
    }

    /// Records a tracepoint added to the thread: an iteration counts towards
    /// the innermost container (its loop); a container opens.
    #[inline]
    pub(crate) fn push(&mut self, tracepoint: &Tracepoint<'_>) {
        // Leaves (most tracepoints) change nothing.
        if !tracepoint.is_container() {
            return;
        }
        if let TracepointBody::LoopIteration { .. } = tracepoint.body
            && let Some(parent) = self.open.last_mut()
        {
            parent.iterations = parent.iterations.saturating_add(1);
        }
        {
            let loop_id = match tracepoint.body {
                TracepointBody::Loop { loop_id }
                | TracepointBody::LoopIteration { loop_id, .. } => loop_id,
                _ => 0,
            };
            self.open.push(OpenContainer {
                tracepoint_type: tracepoint.tracepoint_type(),
                code_location: tracepoint.header.code_location,
                loop_id,
                iterations: 0,
            });
        }
    }

    /// Fails unless `footer` can close the innermost open container.
    #[inline]
    pub(crate) fn check_footer(&self, footer: &Footer<'_>, thread: ThreadId) -> Result<()> {
        let expected = match footer {
            Footer::MethodCall { .. } => TracepointType::MethodCall,
            Footer::Loop { .. } => TracepointType::Loop,
            Footer::LoopIteration => TracepointType::LoopIteration,
        };
        match self.open.last() {
            Some(open) if open.tracepoint_type == expected => Ok(()),
            open => Err(mismatched_footer(expected, open, thread)),
        }
    }

    /// Closes the innermost open container with `footer`, which must be of
    /// its type.
    pub(crate) fn pop(&mut self, footer: &Footer<'_>, thread: ThreadId) -> Result<OpenContainer> {
        self.check_footer(footer, thread)?;
        self.pop_checked()
    }

    /// Closes the innermost open container, a footer for which has passed
    /// [`check_footer`](Self::check_footer).
    #[inline]
    pub(crate) fn pop_checked(&mut self) -> Result<OpenContainer> {
        self.open
            .pop()
            .ok_or_else(|| Error::invalid("call order", "a footer without an open container"))
    }

    /// The innermost open container, which must be of type `expected`;
    /// `action` names what the caller tried, for the error.
    pub(crate) fn expect(
        &self,
        expected: TracepointType,
        action: &str,
        thread: ThreadId,
    ) -> Result<OpenContainer> {
        match self.open.last() {
            Some(open) if open.tracepoint_type == expected => Ok(*open),
            Some(open) => Err(Error::invalid(
                "call order",
                format!(
                    "{action}: the innermost open container of thread {thread} is a {}, not a {}",
                    open.tracepoint_type.name(),
                    expected.name()
                ),
            )),
            None => Err(Error::invalid(
                "call order",
                format!("{action}: thread {thread} has no open container"),
            )),
        }
    }
}

/// The error for a footer of type `expected` that cannot close `open`.
#[cold]
fn mismatched_footer(
    expected: TracepointType,
    open: Option<&OpenContainer>,
    thread: ThreadId,
) -> Error {
    match open {
        Some(open) => Error::invalid(
            "call order",
            format!(
                "a {} footer cannot close the open {}",
                expected.name(),
                open.tracepoint_type.name()
            ),
        ),
        None => Error::invalid(
            "call order",
            format!(
                "a {} footer with no open container in thread {thread}",
                expected.name()
            ),
        ),
    }
}

/// A writer's thread, as the builder methods see it.
pub(crate) trait BuildTarget {
    /// The thread's id.
    fn thread(&self) -> ThreadId;

    /// How many containers are open.
    fn open_depth(&self) -> usize;

    /// The trace's reference objects.
    fn pool(&self) -> &ReferencePool;

    /// The innermost open container, which must be of type `expected`.
    fn expect_open(&self, expected: TracepointType, action: &str) -> Result<OpenContainer>;

    /// The event id the next tracepoint gets.
    fn next_event(&mut self) -> Result<EventId>;

    /// Adds a tracepoint carrying the id [`next_event`](Self::next_event) gave.
    fn add_tracepoint(&mut self, tracepoint: Tracepoint<'static>) -> Result<()>;

    /// Closes the innermost open container.
    fn add_footer(&mut self, footer: Footer<'static>) -> Result<()>;
}

/// Every writer's thread records through the same builder functions.
impl<T: BuildTarget> ThreadRecorder for T {
    fn thread_id(&self) -> ThreadId {
        self.thread()
    }

    fn depth(&self) -> usize {
        self.open_depth()
    }

    fn enter_call(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        call: CallSpec<'_>,
    ) -> Result<EventId> {
        enter_call(self, at, call)
    }

    fn exit_call(&mut self, outcome: CallOutcome<'_>) -> Result<()> {
        exit_call(self, outcome)
    }

    fn enter_loop(&mut self, at: Option<&CodeLocationSpec<'_>>, loop_id: i32) -> Result<EventId> {
        enter_loop(self, at, loop_id)
    }

    fn enter_iteration(&mut self) -> Result<EventId> {
        enter_iteration(self)
    }

    fn exit_iteration(&mut self) -> Result<()> {
        exit_iteration(self)
    }

    fn exit_loop(&mut self, iterations: i32) -> Result<()> {
        exit_loop(self, iterations)
    }

    fn read_array<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        array: ValueSpec<'a>,
        index: i32,
        value: ValueSpec<'a>,
    ) -> Result<EventId> {
        let spec = LeafSpec::ReadArray {
            array,
            index,
            value,
        };
        leaf(self, at, spec)
    }

    fn write_array<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        array: ValueSpec<'a>,
        index: i32,
        value: ValueSpec<'a>,
    ) -> Result<EventId> {
        let spec = LeafSpec::WriteArray {
            array,
            index,
            value,
        };
        leaf(self, at, spec)
    }

    fn read_local<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        variable: &'a VariableSpec<'a>,
        value: ValueSpec<'a>,
    ) -> Result<EventId> {
        leaf(self, at, LeafSpec::ReadLocal { variable, value })
    }

    fn write_local<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        variable: &'a VariableSpec<'a>,
        value: ValueSpec<'a>,
    ) -> Result<EventId> {
        leaf(self, at, LeafSpec::WriteLocal { variable, value })
    }

    fn read_field<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        field: &'a FieldSpec<'a>,
        receiver: ValueSpec<'a>,
        value: ValueSpec<'a>,
    ) -> Result<EventId> {
        let spec = LeafSpec::ReadField {
            field,
            receiver,
            value,
        };
        leaf(self, at, spec)
    }

    fn write_field<'a>(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        field: &'a FieldSpec<'a>,
        receiver: ValueSpec<'a>,
        value: ValueSpec<'a>,
    ) -> Result<EventId> {
        let spec = LeafSpec::WriteField {
            field,
            receiver,
            value,
        };
        leaf(self, at, spec)
    }

    fn breakpoint(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        breakpoint: BreakpointSpec<'_>,
    ) -> Result<EventId> {
        leaf(self, at, LeafSpec::Breakpoint(breakpoint))
    }

    fn throw(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        exception: ValueSpec<'_>,
    ) -> Result<EventId> {
        leaf(self, at, LeafSpec::Throw { exception })
    }

    fn catch(
        &mut self,
        at: Option<&CodeLocationSpec<'_>>,
        exception: ValueSpec<'_>,
    ) -> Result<EventId> {
        leaf(self, at, LeafSpec::Catch { exception })
    }
}

/// Adds a tracepoint with the next event id.
fn add<T: BuildTarget + ?Sized>(
    target: &mut T,
    tracepoint_type: TracepointType,
    code_location: CodeLocationId,
    body: TracepointBody<'static>,
) -> Result<EventId> {
    let event = target.next_event()?;
    target.add_tracepoint(Tracepoint {
        header: TracepointHeader {
            tracepoint_type,
            code_location,
            thread: target.thread(),
            event,
            diff_status: DiffStatus::None,
        },
        child_diff_statuses: Vec::new(),
        body,
    })?;
    Ok(event)
}

/// [`ThreadRecorder::enter_call`](crate::write::ThreadRecorder::enter_call).
pub(crate) fn enter_call<T: BuildTarget + ?Sized>(
    target: &mut T,
    at: Option<&CodeLocationSpec<'_>>,
    call: CallSpec<'_>,
) -> Result<EventId> {
    let pool = target.pool();
    let code_location = pool.intern_code_location(at)?;
    let method = pool.intern_method(call.method)?;
    let receiver = pool.intern_value(&call.receiver)?;
    let arguments = call
        .arguments
        .iter()
        .map(|argument| pool.intern_value(argument))
        .collect::<Result<Vec<_>>>()?;
    let body = TracepointBody::MethodCall {
        method,
        receiver,
        arguments,
        flags: i16::from(call.incomplete),
    };
    add(target, TracepointType::MethodCall, code_location, body)
}

/// [`ThreadRecorder::exit_call`](crate::write::ThreadRecorder::exit_call).
pub(crate) fn exit_call<T: BuildTarget + ?Sized>(
    target: &mut T,
    outcome: CallOutcome<'_>,
) -> Result<()> {
    target.expect_open(TracepointType::MethodCall, "exit_call")?;
    let footer = match outcome {
        CallOutcome::Returned(value) => Footer::MethodCall {
            result: target.pool().intern_value(&value)?,
            exception: JavaStr::new(""),
        },
        CallOutcome::Threw(exception) => {
            if exception.is_empty() {
                // An empty name is the format's "no exception".
                return Err(Error::invalid(
                    "call outcome",
                    "a call that threw needs the exception's class name",
                ));
            }
            check_str(&exception, "exception class name")?;
            Footer::MethodCall {
                result: Value::Null,
                exception: exception.into_owned(),
            }
        }
        CallOutcome::Unfinished => Footer::unfinished_method(),
        CallOutcome::Untracked => Footer::MethodCall {
            result: Value::String(JavaStr::new(UNTRACKED_RESULT)),
            exception: JavaStr::new(""),
        },
    };
    target.add_footer(footer)
}

/// [`ThreadRecorder::enter_loop`](crate::write::ThreadRecorder::enter_loop).
pub(crate) fn enter_loop<T: BuildTarget + ?Sized>(
    target: &mut T,
    at: Option<&CodeLocationSpec<'_>>,
    loop_id: i32,
) -> Result<EventId> {
    let code_location = target.pool().intern_code_location(at)?;
    add(
        target,
        TracepointType::Loop,
        code_location,
        TracepointBody::Loop { loop_id },
    )
}

/// [`ThreadRecorder::enter_iteration`](crate::write::ThreadRecorder::enter_iteration).
pub(crate) fn enter_iteration<T: BuildTarget + ?Sized>(target: &mut T) -> Result<EventId> {
    let open = target.expect_open(TracepointType::Loop, "enter_iteration")?;
    add(
        target,
        TracepointType::LoopIteration,
        open.code_location,
        TracepointBody::LoopIteration {
            loop_id: open.loop_id,
            iteration: open.iterations,
        },
    )
}

/// [`ThreadRecorder::exit_iteration`](crate::write::ThreadRecorder::exit_iteration).
pub(crate) fn exit_iteration<T: BuildTarget + ?Sized>(target: &mut T) -> Result<()> {
    target.expect_open(TracepointType::LoopIteration, "exit_iteration")?;
    target.add_footer(Footer::LoopIteration)
}

/// [`ThreadRecorder::exit_loop`](crate::write::ThreadRecorder::exit_loop).
pub(crate) fn exit_loop<T: BuildTarget + ?Sized>(target: &mut T, iterations: i32) -> Result<()> {
    target.expect_open(TracepointType::Loop, "exit_loop")?;
    target.add_footer(Footer::Loop { iterations })
}

/// [`ThreadRecorder::leaf`](crate::write::ThreadRecorder::leaf).
// Long: one arm per leaf kind, each interning its own references.
pub(crate) fn leaf<T: BuildTarget + ?Sized>(
    target: &mut T,
    at: Option<&CodeLocationSpec<'_>>,
    leaf: LeafSpec<'_>,
) -> Result<EventId> {
    let pool = target.pool();
    let code_location = pool.intern_code_location(at)?;
    let (tracepoint_type, body) = match leaf {
        LeafSpec::ReadArray {
            array,
            index,
            value,
        } => (
            TracepointType::ReadArray,
            TracepointBody::ReadArray {
                array: pool.intern_value(&array)?,
                index,
                value: pool.intern_value(&value)?,
            },
        ),
        LeafSpec::WriteArray {
            array,
            index,
            value,
        } => (
            TracepointType::WriteArray,
            TracepointBody::WriteArray {
                array: pool.intern_value(&array)?,
                index,
                value: pool.intern_value(&value)?,
            },
        ),
        LeafSpec::ReadLocal { variable, value } => (
            TracepointType::ReadLocal,
            TracepointBody::ReadLocal {
                variable: pool.intern_variable(variable)?,
                value: pool.intern_value(&value)?,
            },
        ),
        LeafSpec::WriteLocal { variable, value } => (
            TracepointType::WriteLocal,
            TracepointBody::WriteLocal {
                variable: pool.intern_variable(variable)?,
                value: pool.intern_value(&value)?,
            },
        ),
        LeafSpec::ReadField {
            field,
            receiver,
            value,
        } => (
            TracepointType::ReadField,
            TracepointBody::ReadField {
                field: pool.intern_field(field)?,
                receiver: pool.intern_value(&receiver)?,
                value: pool.intern_value(&value)?,
            },
        ),
        LeafSpec::WriteField {
            field,
            receiver,
            value,
        } => (
            TracepointType::WriteField,
            TracepointBody::WriteField {
                field: pool.intern_field(field)?,
                receiver: pool.intern_value(&receiver)?,
                value: pool.intern_value(&value)?,
            },
        ),
        LeafSpec::Breakpoint(breakpoint) => {
            let stack = breakpoint
                .stack
                .iter()
                .map(|frame| pool.intern_code_location(frame.as_ref()))
                .collect::<Result<Vec<_>>>()?;
            let values = breakpoint
                .values
                .iter()
                .map(|value| pool.intern_value(value))
                .collect::<Result<Vec<_>>>()?;
            if let Some(trace_id) = &breakpoint.trace_id {
                check_str(trace_id, "trace id")?;
            }
            (
                TracepointType::SnapshotBreakpoint,
                TracepointBody::SnapshotBreakpoint {
                    uuid_high: (breakpoint.uuid >> 64) as u64 as i64,
                    uuid_low: breakpoint.uuid as u64 as i64,
                    stack,
                    millis: breakpoint.millis,
                    values,
                    trace_id: breakpoint.trace_id.map(JavaStr::into_owned),
                },
            )
        }
        LeafSpec::Throw { exception } => (
            TracepointType::Throw,
            TracepointBody::Throw {
                exception: pool.intern_value(&exception)?,
            },
        ),
        LeafSpec::Catch { exception } => (
            TracepointType::Catch,
            TracepointBody::Catch {
                exception: pool.intern_value(&exception)?,
            },
        ),
    };
    add(target, tracepoint_type, code_location, body)
}
