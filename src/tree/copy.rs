//! Copying any [`TraceTree`] into a [`DumpWriter`]: defined here, on the
//! tree layer, so that the writers do not depend on the readers.

use crate::common::ThreadId;
use crate::error::Result;
use crate::model::{Footer, JavaStr, Tracepoint, TracepointType};
use crate::tree::{TraceTree, WalkStep, walk};
use crate::write::{DumpOptions, DumpWriter, TraceRecorder};

impl DumpWriter {
    /// A copy of `trace`: its reference objects and tracepoints with their
    /// ids, its threads in ascending thread id (each written as a block whose
    /// id is its position). A thread without a name gets an empty one.
    /// Containers that were never finished (a crashed recorder's) are closed:
    /// calls with the `<unfinished method>` result, loops with the number of
    /// iterations they hold, iterations with their empty footer.
    pub fn from_trace<T: TraceTree>(trace: &T, options: DumpOptions) -> Result<Self> {
        Self::from_trace_edited(trace, options, |_, _| true)
    }

    /// [`from_trace`](Self::from_trace), each leaf first given to `edit`
    /// with its depth: changed in place, or left out when `edit` says
    /// false.
    pub(crate) fn from_trace_edited<T: TraceTree>(
        trace: &T,
        options: DumpOptions,
        mut edit: impl FnMut(&mut Tracepoint<'static>, usize) -> bool,
    ) -> Result<Self> {
        let mut writer = Self::with_options(options);
        writer.copy_references(trace.context())?;
        for thread in trace.thread_ids() {
            let name = trace
                .context()
                .thread_name(thread)
                .cloned()
                .unwrap_or_else(|| JavaStr::new(""));
            let position = writer.add_thread(name)?;
            let roots = trace.roots(thread)?;
            // Containers entered and not yet closed, outermost first.
            let mut open: Vec<T::Node> = Vec::new();
            walk(trace, &roots, None, |step| {
                let WalkStep::Node { node, depth } = step else {
                    return Ok(());
                };
                while open.len() > depth {
                    if let Some(closed) = open.pop() {
                        writer.copy_footer(trace, position, closed)?;
                    }
                }
                let mut tracepoint = trace.visit(node, |tp, _| tp.clone().into_owned())?;
                if !tracepoint.is_container() && !edit(&mut tracepoint, depth) {
                    return Ok(());
                }
                writer.push_tracepoint(position, &tracepoint)?;
                if tracepoint.is_container() {
                    open.push(node);
                }
                Ok(())
            })?;
            while let Some(closed) = open.pop() {
                writer.copy_footer(trace, position, closed)?;
            }
        }
        Ok(writer)
    }

    /// Closes `node`'s copy with its footer, or with the one the recorder
    /// writes for a container still open when the trace ends.
    fn copy_footer<T: TraceTree>(
        &mut self,
        trace: &T,
        thread: ThreadId,
        node: T::Node,
    ) -> Result<()> {
        let children = trace.child_count(node)?;
        let footer = trace.visit(node, |tp, footer| match footer {
            Some(footer) => footer.clone().into_owned(),
            None => match tp.tracepoint_type() {
                TracepointType::MethodCall => Footer::unfinished_method(),
                TracepointType::Loop => Footer::Loop {
                    iterations: i32::try_from(children).unwrap_or(i32::MAX),
                },
                _ => Footer::LoopIteration,
            },
        })?;
        self.push_footer(thread, &footer)
    }
}
