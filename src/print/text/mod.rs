//! The text form of a trace, byte for byte as the reference (Lincheck)
//! printer writes it: `tracetree print`.
//!
//! ```text
//! # Thread 1 (main)
//! Thread@1899710330.run() at :0
//!   new Account(i ➜ 7, name ➜ "Alice") at Ref.kt:10
//!     balance = 0 at Account.kt:30
//!   acc.deposit(l ➜ 100): true at Ref.kt:11
//! ```
//!
//! For each thread in ascending id, and each of its top-level tracepoints, a
//! header `# Thread N` (N = the tracepoint's thread id + 1; ` (name)` added
//! when the trace has two top-level tracepoints or more, `()` when the
//! recorder wrote no name), then one line per tracepoint in pre-order,
//! indented two spaces per level. Verbose mode ends each line with
//! ` at File:LINE` (` at :0` without a code location). The output is UTF-8;
//! an unpaired surrogate half prints as `?` and U+0000 as a raw zero byte,
//! as a JVM printing Java strings to a UTF-8 stream does.
//!
//! Where tracetree differs from the reference, on purpose:
//! - a call a crashed recorder never finished (no footer) prints
//!   `: <unfinished method>`; the reference prints `: null`;
//! - a reference object the trace does not hold prints as a placeholder
//!   (`<missing METHOD_DESCRIPTOR 7>`) instead of failing; a missing
//!   `STRING` prints `<unknown>`, as in the reference;
//! - children deeper than [`PrintOptions::max_depth`] fold into one line,
//!   `... <unloaded child>` or `... <N unloaded children>` (the reference's
//!   form for children it did not load).

mod line;
mod names;
mod number;
mod path;
mod value;
mod words;

pub(crate) use words::adorn;

use std::fmt::Write as _;
use std::io::Write;

use crate::common::ThreadId;
use crate::error::{Error, Result};
use crate::format::TraceContext;
use crate::model::{Footer, Tracepoint};
use crate::print::ordered::{Flushed, Gathered, OrderedStats, Parallelism, run_ordered};
use crate::print::plan::{CHILDREN_PER_RANGE, Cut, Part, RUN_BYTES, Source, plan};
use crate::tree::{Navigate, TraceTree, Visit, VisitDetail};

pub use crate::print::parent::Parent;
pub use line::TextFormatter;

/// What [`PrintOptions::print`] prints. The default is the brief form (no
/// ` at File:LINE`) of every thread, at every depth:
///
/// ```
/// use tracetree::print::PrintOptions;
///
/// let mut options = PrintOptions::default();
/// options.verbose = true;
/// options.max_depth = Some(1);
/// ```
///
/// The options are `#[non_exhaustive]`: start from the default and set
/// fields, so that an option added later breaks no caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PrintOptions {
    /// End each line with its code location, ` at File:LINE`.
    pub verbose: bool,
    /// Only these threads (ids as recorded: `# Thread N` is id N − 1), still
    /// in ascending order; `None` prints all. An id the trace does not have
    /// is an [`Error::InvalidArgument`]. Headers name their threads as in the full
    /// print, so a filtered print is a part of the full one.
    pub threads: Option<Vec<ThreadId>>,
    /// The deepest level printed (top-level tracepoints are level 0). The
    /// children of a container at that level fold into one line,
    /// `... <N unloaded children>`.
    pub max_depth: Option<usize>,
    /// Begin each tracepoint's line with its event id, `#ID` and a tab
    /// (`#7\tThread@101.start()`), and each folded line with a tab; thread
    /// headers stay as they are. Off (the default), the text is the
    /// reference printer's byte for byte; on, it is that text with these
    /// prefixes (`cut -f2-` gives the tracepoint lines back).
    pub event_ids: bool,
}

impl PrintOptions {
    /// Writes the text form of `tree` to `out`, on as many cores as
    /// rayon's pool has threads (`RAYON_NUM_THREADS` sets it): threads and
    /// the subtrees near their tops are formatted in parallel into chunks
    /// written in order, so the output is the same byte for byte as one
    /// walk's.
    ///
    /// Walks without recursion, so traces nested hundreds of thousands of
    /// calls deep print in constant stack. Output is buffered here in
    /// large chunks; `out` need not be buffered.
    pub fn print<T: TraceTree>(&self, tree: &T, out: &mut impl Write) -> Result<()> {
        print_trace(tree, self, out)
    }
}

/// [`PrintOptions::print`].
pub(crate) fn print_trace<T>(tree: &T, options: &PrintOptions, out: &mut impl Write) -> Result<()>
where
    T: TraceTree,
{
    print_trace_with(tree, options, &Parallelism::default(), out).map(|_| ())
}

/// [`print_trace`] with the work shared out as `parallelism` says: threads
/// and the subtrees near their tops are formatted on its workers into
/// chunks written in order, so the output is the same byte for byte as one
/// walk's. One worker walks on the calling thread.
pub(crate) fn print_trace_with<T>(
    tree: &T,
    options: &PrintOptions,
    parallelism: &Parallelism,
    out: &mut impl Write,
) -> Result<OrderedStats>
where
    T: TraceTree,
{
    let all_threads = tree.thread_ids();
    let threads = crate::tree::select_threads(&all_threads, options.threads.as_deref())?;
    let mut root_count = 0;
    for &thread in &all_threads {
        root_count += tree.roots(thread)?.len();
    }
    let named = root_count > 1;
    if parallelism.workers <= 1 {
        print_sequential(tree, options, &threads, named, out)?;
        return Ok(OrderedStats::default());
    }
    let cut = Cut {
        headers: true,
        parents: true,
        max_depth: options.max_depth,
        line_counts: false,
        run_bytes: RUN_BYTES,
        children_per_range: CHILDREN_PER_RANGE,
    };
    let parts = plan(tree, &threads, cut, parallelism.workers)?;
    run_ordered(
        parts,
        parallelism,
        || TextFormatter::new(tree.context(), options.verbose),
        |formatter, part, sink| {
            let mut printer = Printer {
                formatter,
                buffer: sink.buffer(),
                out: sink,
                parents: part.parents.to_vec(),
                event_ids: options.event_ids,
            };
            print_part(tree, options, named, &part, &mut printer)?;
            printer.finish()
        },
        out,
    )
}

/// The whole text in one walk on the calling thread.
fn print_sequential<T: TraceTree>(
    tree: &T,
    options: &PrintOptions,
    threads: &[ThreadId],
    named: bool,
    out: &mut impl Write,
) -> Result<()> {
    let mut formatter = TextFormatter::new(tree.context(), options.verbose);
    let mut out = Flushed(out);
    let mut printer = Printer {
        formatter: &mut formatter,
        buffer: out.buffer(),
        out: &mut out,
        parents: Vec::new(),
        event_ids: options.event_ids,
    };
    for &thread in threads {
        for root in tree.roots(thread)? {
            printer.root_header(tree, thread, root, named)?;
            tree.walk_visit(&[root], options.max_depth, VisitDetail::default(), |step| {
                printer.step(step, 0)
            })?;
        }
    }
    printer.finish()
}

/// One part of the text, into `printer`'s output.
fn print_part<T: TraceTree, O: Gathered>(
    tree: &T,
    options: &PrintOptions,
    named: bool,
    part: &Part<T::Node>,
    printer: &mut Printer<'_, '_, O>,
) -> Result<()> {
    match &part.source {
        Source::Header { root } => printer.root_header(tree, part.thread, *root, named)?,
        Source::Line(node, _) => tree.visit(*node, |tracepoint, footer| {
            printer.tracepoint(tracepoint, footer, part.depth)
        })??,
        Source::Trees(_) | Source::Siblings { .. } | Source::Children { .. } => {
            part.walk(tree, options.max_depth, VisitDetail::default(), |step| {
                printer.step(step, part.depth)
            })?;
        }
    }
    Ok(())
}

/// The text of one tracepoint, as [`print_trace`] prints it but without
/// indentation and line end. `parent` describes its direct parent
/// ([`Parent::of`] the parent's tracepoint); `footer` is its footer if it is
/// a finished container. To render many lines, keep a [`TextFormatter`].
pub(crate) fn tracepoint_text(
    context: &TraceContext,
    tracepoint: &Tracepoint<'_>,
    footer: Option<&Footer<'_>>,
    parent: Parent,
    verbose: bool,
) -> Result<String> {
    let mut text = String::new();
    TextFormatter::new(context, verbose).write_tracepoint(&mut text, tracepoint, footer, parent)?;
    Ok(text)
}

/// Spaces for indentation.
const INDENT: &str = match std::str::from_utf8(&[b' '; 4096]) {
    Ok(spaces) => spaces,
    Err(_) => panic!("spaces are UTF-8"),
};

/// Gathers the text in `buffer`, handed over to `out` every
/// [`Gathered::GATHER_BYTES`].
struct Printer<'c, 'o, O: Gathered> {
    formatter: &'o mut TextFormatter<'c>,
    buffer: String,
    out: &'o mut O,
    /// For each level above the current line, what it tells its children.
    parents: Vec<Parent>,
    /// [`PrintOptions::event_ids`].
    event_ids: bool,
}

impl<O: Gathered> Printer<'_, '_, O> {
    /// The header before the top-level tracepoint `root` of `thread`.
    fn root_header<T: TraceTree>(
        &mut self,
        tree: &T,
        thread: ThreadId,
        root: T::Node,
        named: bool,
    ) -> Result<()> {
        let root_thread = tree.visit(root, |tracepoint, _| tracepoint.header.thread)?;
        self.header(tree.context(), thread, root_thread, named)
    }

    /// The line of one step of a walk whose depths start at `depth`.
    fn step<N>(&mut self, step: Visit<'_, N>, depth: usize) -> Result<()> {
        match step {
            Visit::Node {
                tracepoint,
                footer,
                depth: below,
                ..
            } => self.tracepoint(tracepoint, footer, depth + below),
            Visit::Folded {
                count,
                depth: below,
            } => self.folded(count, depth + below),
            // Asked for every leaf whole: a tree that gives less breaks
            // `TraceTree`'s contract.
            Visit::Leaf { .. } => Err(Error::internal(
                "a walk that asked for leaf bodies was given a leaf's header only",
            )),
        }
    }

    fn header(
        &mut self,
        context: &TraceContext,
        thread: ThreadId,
        root_thread: ThreadId,
        named: bool,
    ) -> Result<()> {
        // Java `int` arithmetic, as everywhere in the text.
        let _ = write!(self.buffer, "# Thread {}", root_thread.0.wrapping_add(1));
        if named {
            // Named by the block stream the root came from (dump files key
            // names by position, streaming files by thread id).
            self.buffer.push_str(" (");
            if let Some(name) = context.thread_name(thread) {
                self.buffer.extend(name.chars());
            }
            self.buffer.push(')');
        }
        self.end_line()
    }

    fn tracepoint(
        &mut self,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        depth: usize,
    ) -> Result<()> {
        self.parents.truncate(depth);
        let parent = self.parents.last().copied().unwrap_or_default();
        if self.event_ids {
            let _ = write!(self.buffer, "#{}\t", tracepoint.event());
        }
        self.indent(depth)?;
        self.formatter
            .write_tracepoint(&mut self.buffer, tracepoint, footer, parent)?;
        self.parents.push(Parent::of(tracepoint));
        self.end_line()
    }

    fn folded(&mut self, count: usize, depth: usize) -> Result<()> {
        if count > 0 && self.event_ids {
            self.buffer.push('\t');
        }
        match count {
            0 => return Ok(()),
            1 => {
                self.indent(depth)?;
                self.buffer.push_str("... <unloaded child>");
            }
            _ => {
                self.indent(depth)?;
                let _ = write!(self.buffer, "... <{count} unloaded children>");
            }
        }
        self.end_line()
    }

    fn indent(&mut self, depth: usize) -> Result<()> {
        let mut width = depth.saturating_mul(2);
        // Very deep: handed over as it grows, so the buffer stays bounded.
        while width > INDENT.len() {
            self.buffer.push_str(INDENT);
            width -= INDENT.len();
            self.hand_over_if_full()?;
        }
        self.buffer.push_str(&INDENT[..width]);
        Ok(())
    }

    fn end_line(&mut self) -> Result<()> {
        self.buffer.push('\n');
        self.hand_over_if_full()
    }

    fn hand_over_if_full(&mut self) -> Result<()> {
        if self.buffer.len() >= O::GATHER_BYTES {
            self.out.hand_over(&mut self.buffer, true)?;
        }
        Ok(())
    }

    /// Hands over the rest of the text.
    fn finish(mut self) -> Result<()> {
        self.out.hand_over(&mut self.buffer, false)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;

/// The line `print` shows for `node` of a tree a front end moves about in
/// (the lazy reader, or its post-processed view; `verbose`: with code
/// locations), its parent read for what it tells its children about
/// printing.
pub fn node_text<T: Navigate>(tree: &T, node: T::Node, verbose: bool) -> Result<String> {
    let parent = match tree.parent(node)? {
        Some(parent) => tree.visit(parent, |tracepoint, _| Parent::of(tracepoint))?,
        None => Parent::TopLevel,
    };
    tree.visit(node, |tracepoint, footer| {
        tracepoint_text(tree.context(), tracepoint, footer, parent, verbose)
    })?
}
