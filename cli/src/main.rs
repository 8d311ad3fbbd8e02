//! The `tracetree` command: parsing (clap), progress bars (indicatif) and
//! one function per command. Everything a command does is a library call.

mod cache;
mod children;
mod diff;
mod export;
mod gen_trace;
mod import;
mod index;
mod info;
mod output;
mod pack;
mod search;
mod serve;
mod view;
mod words;

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use tracetree::common::{EventId, ThreadId};
use tracetree::print::PrintOptions;

use cache::Cache;
use tracetree::{Error, FileAccess, Result};

/// Runs `$body` on `$trace` as recorded, or through the reference's
/// post-processing when `$post` (`--postprocess`).
macro_rules! seen_as {
    ($post:expr, $trace:expr, |$tree:ident| $body:expr) => {
        if $post {
            let view = tracetree::tree::Postprocessed::new(&$trace);
            let $tree = &view;
            $body
        } else {
            let $tree = &$trace;
            $body
        }
    };
}

/// Open, print and convert execution traces of JVM programs (Lincheck trace
/// format, version 22).
#[derive(Debug, Parser)]
#[command(name = "tracetree", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
    /// `--cache-dir`, `--no-cache`, `--strict` and `--memory-budget`
    /// before the command, as earlier versions took them (each command
    /// that uses one lists it in its own `--help`).
    #[arg(long, hide = true, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// See `no_cache` of [`CacheFlags`].
    #[arg(long, hide = true, conflicts_with = "cache_dir")]
    pub no_cache: bool,
    /// See [`StrictFlag`].
    #[arg(long, hide = true)]
    pub strict: bool,
    /// See [`BudgetFlag`].
    #[arg(long, hide = true, value_name = "SIZE", value_parser = tracetree::generate::parse_size)]
    pub memory_budget: Option<u64>,
}

/// Where a command that reads traces keeps what it caches.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CacheFlags {
    /// Keep lookup sidecars and imports of foreign traces in DIR instead
    /// of the per-user cache directory ($TRACETREE_CACHE_DIR, else
    /// $XDG_CACHE_HOME/tracetree, else ~/.cache/tracetree).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Keep nothing between runs: lookups are built on first use (up to
    /// 64 MiB of them on the heap, more in an unlinked scratch file),
    /// imports go to a temporary directory removed at the end.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
    /// Read the trace's files without mapping them (Linux): a trace cut
    /// short or rewritten while the command reads it gives an error
    /// instead of ending the command with SIGBUS; whole walks are slower.
    #[arg(long)]
    pub no_mmap: bool,
}

/// `--strict`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StrictFlag {
    /// Fail (exit 1) when a trace or a foreign source is incomplete or
    /// damaged (no end marker, a block or a file cut short, unfinished
    /// calls, bytes ignored) instead of reading what is whole and warning
    /// on stderr. The whole trace is read through before the command
    /// answers, even for a page of children.
    #[arg(long)]
    pub strict: bool,
}

/// `--memory-budget`, for `--eager`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BudgetFlag {
    /// With `--eager`: the most memory the load may take (`2GB`; units are
    /// powers of 1024). It needs the data plus 20 bytes per tracepoint
    /// (estimated as 1.6x the data before loading); over the budget it
    /// fails before reading and names the lazy reader (drop `--eager`).
    /// Default: the memory available when the command starts.
    #[arg(long, value_name = "SIZE", value_parser = tracetree::generate::parse_size)]
    pub memory_budget: Option<u64>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show a trace's format version, sizes, threads, blocks, tracepoint
    /// counts by type and index status.
    #[command(
        after_help = "Examples:\n  tracetree info app.trace\n  cat app.jfr | tracetree info -"
    )]
    Info {
        #[command(flatten)]
        cache: CacheFlags,
        #[command(flatten)]
        strict: StrictFlag,
        #[command(flatten)]
        budget: BudgetFlag,
        /// The data file (its index is `FILE.idx`); `-` reads stdin. Each
        /// thread is listed by its id, which `--thread` takes; `print`
        /// heads thread N with `# Thread N+1`.
        file: PathBuf,
        /// Read the whole trace with the eager loader instead of the lazy reader.
        #[arg(long)]
        eager: bool,
    },
    /// Dump every tracepoint as one JSON object per line.
    #[command(
        after_help = "Examples:\n  tracetree dump app.trace --thread 0 | jq .method\n  tracetree dump app.trace --postprocess"
    )]
    Dump {
        #[command(flatten)]
        cache: CacheFlags,
        #[command(flatten)]
        strict: StrictFlag,
        #[command(flatten)]
        budget: BudgetFlag,
        /// The data file; `-` reads stdin.
        file: PathBuf,
        /// The output format.
        #[arg(long, value_enum, default_value_t = DumpFormat::Jsonl)]
        format: DumpFormat,
        /// Only this thread, by its id as `info` lists it; the header
        /// `# Thread N` that `print` writes is id N-1 (repeatable).
        #[arg(
            short,
            long = "thread",
            value_name = "ID",
            allow_negative_numbers = true
        )]
        threads: Vec<i32>,
        /// Read the whole trace with the eager loader instead of the lazy reader.
        #[arg(long)]
        eager: bool,
        /// Show the trace as the recorder's IDE plugin and trace diff show it,
        /// through the reference's post-processing: `$default` and `access$`
        /// call pairs collapsed, synthetic and generated field accessors shown
        /// as their field access, coverage instrumentation and empty loop
        /// iterations dropped. Off, the trace as recorded.
        #[arg(long)]
        postprocess: bool,
    },
    /// Rebuild a trace's index from its data file (in parallel) and write
    /// `FILE.idx` atomically, or check the existing one.
    #[command(
        after_help = "Examples:\n  tracetree index app.trace\n  tracetree index app.trace --check"
    )]
    Index {
        /// The data file (a file: not `-` or a pipe, as `FILE.idx` is
        /// written beside it).
        file: PathBuf,
        /// Verify the existing `FILE.idx` against the data and report the
        /// first discrepancy, without writing.
        #[arg(long)]
        check: bool,
        /// Worker threads (0 = all cores; at most 4 per core, and one per
        /// MiB of data).
        #[arg(long, default_value_t = 0)]
        threads: usize,
    },
    /// Print a trace as text, one line per tracepoint, byte for byte as the
    /// reference (Lincheck) printer does.
    #[command(
        after_help = "Examples:\n  tracetree print app.trace --depth 2\n  tracetree print recording/ --ids | less\n  tracetree print app.trace --postprocess"
    )]
    Print {
        #[command(flatten)]
        cache: CacheFlags,
        #[command(flatten)]
        strict: StrictFlag,
        #[command(flatten)]
        budget: BudgetFlag,
        /// The data file; `-` reads stdin.
        file: PathBuf,
        /// End each line with its code location (` at File.kt:LINE`).
        #[arg(short, long)]
        verbose: bool,
        /// Only this thread, by its id as `info` lists it; the header
        /// `# Thread N` that `print` writes is id N-1 (repeatable).
        #[arg(
            short,
            long = "thread",
            value_name = "ID",
            allow_negative_numbers = true
        )]
        threads: Vec<i32>,
        /// Print down to this depth (top-level tracepoints are depth 0);
        /// deeper children fold into `... <N unloaded children>`.
        #[arg(long = "depth", value_name = "N")]
        depth: Option<usize>,
        /// Begin each tracepoint's line with its event id, `#ID` and a tab
        /// (what `children --node ID` and `export --root ID` take); folded
        /// lines begin with a tab, thread headers are unchanged. Without
        /// it the text is the reference printer's, byte for byte.
        #[arg(long)]
        ids: bool,
        /// Read the whole trace with the eager loader instead of the lazy reader.
        #[arg(long)]
        eager: bool,
        /// Show the trace as the recorder's IDE plugin and trace diff show it,
        /// through the reference's post-processing: `$default` and `access$`
        /// call pairs collapsed, synthetic and generated field accessors shown
        /// as their field access, coverage instrumentation and empty loop
        /// iterations dropped. Off, the trace as recorded.
        #[arg(long)]
        postprocess: bool,
    },
    /// Generate a synthetic trace of a given size and shape with the
    /// streaming writer, for benchmarks: the same bytes for the same seed
    /// and options, whatever the threads' timing.
    #[command(
        after_help = "Examples:\n  tracetree gen big.trace --size 1GB\n  tracetree gen -o wide.trace --size 100MB --shape wide --threads 4"
    )]
    Gen {
        /// The data file to write (its index goes to `OUT.idx`), under a
        /// temporary name renamed when complete: a failure leaves nothing.
        #[arg(required_unless_present = "output", conflicts_with = "output")]
        out: Option<PathBuf>,
        /// The data file to write, as OUT (`-o` as the other commands take).
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Size of the data file (`100MB`, `10GB`; units are powers of
        /// 1024), reached within a few hundred bytes per thread; each thread
        /// writes at least about 1.5 KB.
        #[arg(long, value_parser = tracetree::generate::parse_size)]
        size: u64,
        /// Producer threads, each recording one thread of the trace.
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// mixed (a realistic mix), wide (one call with a huge number of
        /// children), deep (recursion 200,000 calls deep), threads (many
        /// interleaved threads, small blocks).
        #[arg(long, default_value_t = tracetree::generate::Shape::Mixed)]
        shape: tracetree::generate::Shape,
        /// Seed of the pseudo-random choices.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Payload bytes per block (default 1 MiB; 16 KiB for the threads
        /// shape), lowered so that all threads' buffers fit 256 MiB.
        #[arg(long, value_parser = tracetree::generate::parse_size)]
        block_size: Option<u64>,
        /// Replace OUT (and OUT.idx) if it exists.
        #[arg(short, long)]
        force: bool,
    },
    /// Convert a foreign trace (`.flow`, JFR, Blinky, TPTP) or a packed
    /// trace into a v22 trace.
    #[command(
        after_help = "Examples:\n  tracetree import recording/ -o app.trace\n  cat run.log | tracetree import - --from blinky -o run.trace"
    )]
    Import {
        #[command(flatten)]
        strict: StrictFlag,
        /// The source: a `.flow` recording's folder or one `.flow` file, a
        /// JFR recording, a Blinky text trace, a TPTP binary trace or a
        /// packed trace (`.packedtrace`, unpacked).
        input: PathBuf,
        /// The data file to write (its index goes to `OUTPUT.idx`).
        #[arg(short, long)]
        output: PathBuf,
        /// The source's format (found from its layout when absent).
        #[arg(long, value_name = "FORMAT")]
        from: Option<tracetree::import::SourceFormat>,
        /// Replace OUTPUT if it exists.
        #[arg(short, long)]
        force: bool,
        /// JFR: import the per-thread sample trees even when the recording
        /// holds method traces (which are imported by default).
        #[arg(long)]
        samples: bool,
    },
    /// Pack a trace into one file, the recorder's `NAME.packedtrace`: a ZIP
    /// of `info.txt`, `trace.trace` and `trace.idx`, every entry stored, so
    /// that every command opens it in place (and the recorder unpacks it).
    #[command(
        after_help = "Examples:\n  tracetree pack app.trace -o app.packedtrace\n  tracetree pack app.trace -o - | ssh host 'cat > app.packedtrace'"
    )]
    Pack {
        #[command(flatten)]
        cache: CacheFlags,
        #[command(flatten)]
        strict: StrictFlag,
        /// The trace (any input the other commands accept).
        file: PathBuf,
        /// The packed trace to write.
        #[arg(short, long)]
        output: PathBuf,
        /// The text of `info.txt` (default: the trace's name and tracetree's
        /// version).
        #[arg(long)]
        info: Option<String>,
        /// Replace OUTPUT if it exists.
        #[arg(short, long)]
        force: bool,
    },
    /// Diff two traces as the recorder's library does (`diffTwoTraces`):
    /// threads paired by name (or index, or a map), each pair's trees
    /// aligned by Myers' diff, written as a packed diff trace whose
    /// tracepoints are unchanged, removed (`-`), added (`+`) or edited
    /// (`!`, old then new); `print` shows it. A summary per thread (counts
    /// and the first divergence) goes to stderr, or to stdout with
    /// `--summary`.
    #[command(
        after_help = "Examples:\n  tracetree diff passing.trace failing.trace -o run.diff.packedtrace\n  tracetree diff a.trace b.trace -o ab.packedtrace --match index --summary\n  tracetree diff a.trace b.trace -o ab.packedtrace --map worker-1=worker-1-rerun\n  tracetree diff a.trace b.trace -o raw.packedtrace --no-postprocess\n  tracetree print ab.packedtrace"
    )]
    Diff {
        #[command(flatten)]
        cache: CacheFlags,
        #[command(flatten)]
        strict: StrictFlag,
        /// The left ("old") trace (any input the other commands accept).
        left: PathBuf,
        /// The right ("new") trace.
        right: PathBuf,
        /// The packed diff to write (`NAME.packedtrace`).
        #[arg(short, long)]
        output: PathBuf,
        /// How threads are paired: by name (the first unused right thread
        /// of each left thread's name) or by index (the n-th with the n-th,
        /// threads ordered by id).
        #[arg(long = "match", value_enum, default_value_t = MatchArg::Name)]
        matching: MatchArg,
        /// Pair these threads (repeatable): by name, or by index with
        /// `--match index`; the others are unmatched. A right thread of the
        /// same index as a mapped left one can be mapped (the recorder's own
        /// diff refuses it).
        #[arg(long = "map", value_name = "LEFT=RIGHT")]
        maps: Vec<String>,
        /// Pair the two threads whose root is event 0 first.
        #[arg(long)]
        start_threads: bool,
        /// Diff only the two threads whose root is event 0.
        #[arg(long)]
        only_start_threads: bool,
        /// What happens to a thread without a partner: diffed against
        /// nothing (all removed or all added), skipped, or an error.
        #[arg(long, value_enum, default_value_t = UnmatchedArg::Diff)]
        unmatched: UnmatchedArg,
        /// Diff traces that are diffs themselves, and replace OUTPUT if it
        /// exists.
        #[arg(short, long)]
        force: bool,
        /// Write the summary to stdout (it goes to stderr otherwise).
        #[arg(long)]
        summary: bool,
        /// The most edits Myers' diff looks for between two children lists;
        /// past it they are aligned window by window (1024 children a side
        /// at a time), with a warning.
        #[arg(long, default_value_t = 2048, value_name = "N")]
        max_edits: usize,
        /// The most children a side whose keys are held to align two long
        /// lists (24 bytes each); longer lists are aligned window by window
        /// as they are read (as past --max-edits, with a warning), so that
        /// memory is bounded whatever the traces' size.
        #[arg(long, default_value_t = 1 << 21, value_name = "N")]
        max_keys: usize,
        /// Compare the traces as recorded. By default both are read through
        /// the reference's post-processing, as its diff reads them (`print
        /// --postprocess` shows a trace so): `$default` and `access$` pairs
        /// collapsed, synthetic and generated field accessors shown as the
        /// access, coverage instrumentation and empty loop iterations dropped.
        #[arg(long)]
        no_postprocess: bool,
    },
    /// Export a trace for other tools: `--format folded` (inferno,
    /// flamegraph.pl), `speedscope`, `chrome` (Trace Event JSON) and
    /// `perfetto` (protobuf) write the call stacks of the trace, with a
    /// tracepoint's position in its thread as its time; `--format parquet`
    /// writes a Hive-partitioned dataset (one row per tracepoint) that
    /// DuckDB, DataFusion and Spark query; many traces exported into one
    /// OUT form one dataset.
    #[command(
        after_help = "Examples:\n  tracetree export app.trace --format folded -o - | inferno-flamegraph > app.svg\n  \
        tracetree export app.trace --format parquet -o dataset/\n  \
        tracetree export run.diff.packedtrace --format folded -o - | inferno-flamegraph > diff.svg\n  \
        tracetree export run.diff.packedtrace --format speedscope --diff added -o added.json"
    )]
    Export {
        #[command(flatten)]
        cache: CacheFlags,
        #[command(flatten)]
        strict: StrictFlag,
        /// The trace (any input the other commands accept).
        file: PathBuf,
        /// The output format.
        #[arg(long, value_enum)]
        format: export::ExportFormat,
        /// Where to write (a file; for parquet: the dataset's directory).
        #[arg(short, long)]
        output: PathBuf,
        /// Only this thread, by its id as `info` lists it; the header
        /// `# Thread N` that `print` writes is id N-1 (repeatable).
        #[arg(
            short,
            long = "thread",
            value_name = "ID",
            allow_negative_numbers = true
        )]
        threads: Vec<i32>,
        /// Only the subtree of the tracepoint with this event id (not for
        /// parquet); `print --ids` shows event ids.
        #[arg(long, value_name = "EVENT_ID", allow_negative_numbers = true)]
        root: Option<i32>,
        /// In a diff trace (`tracetree diff`'s), only the tracepoints of
        /// these changes: added, removed, edited (both sides of an edit);
        /// repeatable or a comma list; a bare --diff, after the trace,
        /// means every change (not for parquet). A kept tracepoint keeps
        /// the calls above it as its stack, weighing nothing themselves
        /// unless kept too; calls with nothing kept in them are left out.
        /// Folded stacks of a diff always have two counts, `stack LEFT
        /// RIGHT` (difffolded.pl's form, inferno-flamegraph draws it as a
        /// differential): LEFT weighs the left trace's tracepoints
        /// (unchanged, removed, the old side of edits), RIGHT the right
        /// one's (unchanged, added, the new side of edits).
        #[arg(
            long,
            value_name = "CHANGE",
            value_delimiter = ',',
            num_args = 0..=1,
            default_missing_value = "added,removed,edited"
        )]
        diff: Option<Vec<String>>,
        /// Rows per Parquet row group.
        #[cfg(feature = "parquet")]
        #[arg(long, default_value_t = 262_144)]
        row_group_rows: usize,
        /// Replace the output (for parquet: this trace's partition) if it
        /// exists.
        #[arg(short, long)]
        force: bool,
    },
    /// Browse a trace in the terminal: threads and calls expanded on
    /// demand a page at a time, details of the selected tracepoint, search,
    /// jumps to event ids, bookmarks (`?` lists the keys).
    #[command(
        after_help = "Examples:\n  tracetree view app.trace\n  tracetree view --follow running.trace\n  \
        tracetree view --web app.trace other.trace"
    )]
    View {
        #[command(flatten)]
        cache: CacheFlags,
        #[command(flatten)]
        strict: StrictFlag,
        /// The trace (any input the other commands accept).
        file: PathBuf,
        /// Follow a trace still being written: the file is looked at every
        /// 300 ms and new blocks appear as they land (what is open and
        /// selected stays; calls not finished yet grow their children).
        /// Only what was appended is read; no lookup sidecar is written.
        #[arg(long)]
        follow: bool,
        /// Show the trace as `print --postprocess` does (the recorder's
        /// post-processing, as its IDE plugin shows it); searches, jumps
        /// and `]`/`[` go through it too.
        #[arg(long)]
        postprocess: bool,
        /// Browse in the web browser instead: starts `serve --http` on a
        /// free loopback port with the traces given and opens the page
        /// (or prints its URL when no browser can be opened); Ctrl-C stops.
        #[arg(long)]
        web: bool,
        /// More traces, with --web (the page switches between them).
        #[arg(requires = "web", value_name = "MORE")]
        more: Vec<PathBuf>,
    },
    /// Find tracepoints by name (a call's `Class.method`, a field's
    /// `Class.field`, a local variable) or, with --text, by their printed
    /// line; each hit with its event id and the calls above it.
    #[command(
        after_help = "Exit status: 0 when a tracepoint matched, 1 when none did, 2 on an \
        error (as grep and rg).\n\nExamples:\n  tracetree search app.trace HashMap.put\n  \
        tracetree search app.trace --text --ignore-case 'timeout' --json | jq .path\n  \
        tracetree search run.diff.packedtrace --diff        (every change of a diff)\n  \
        tracetree search run.diff.packedtrace Queue. --diff added,edited\n  \
        tracetree search app.trace Point.x --postprocess"
    )]
    Search {
        #[command(flatten)]
        cache: CacheFlags,
        #[command(flatten)]
        strict: StrictFlag,
        /// The trace (any input the other commands accept).
        file: PathBuf,
        /// The text to find; empty matches every tracepoint. It may be left
        /// out with --diff, to list the changes themselves.
        #[arg(required_unless_present = "diff", default_value = "")]
        pattern: String,
        /// Only this thread, by its id as `info` lists it; the header
        /// `# Thread N` that `print` writes is id N-1 (repeatable).
        #[arg(
            short,
            long = "thread",
            value_name = "ID",
            allow_negative_numbers = true
        )]
        threads: Vec<i32>,
        /// Only this kind of tracepoint: method_call, read_field, … (repeatable).
        #[arg(long = "kind", value_name = "KIND")]
        kinds: Vec<String>,
        /// In a diff trace (`tracetree diff`'s), only these changes:
        /// added, removed, edited (both sides of an edit); repeatable or a
        /// comma list. A bare --diff, after the trace, means every change.
        /// An error on a trace that is not a diff.
        #[arg(
            long,
            value_name = "CHANGE",
            value_delimiter = ',',
            num_args = 0..=1,
            default_missing_value = "added,removed,edited"
        )]
        diff: Option<Vec<String>>,
        /// Show at most this many hits (all are counted).
        #[arg(long, default_value_t = 1000)]
        max: usize,
        /// Ignore case.
        #[arg(short, long)]
        ignore_case: bool,
        /// Also match each tracepoint's printed line (arguments, values,
        /// results); slower, as every line is rendered.
        #[arg(long)]
        text: bool,
        /// Write each hit as one JSON object on its line: `thread`,
        /// `eventId`, `depth`, `path` (the calls above it, outermost first)
        /// and `line`. Without it, each hit is one line of text, a newline
        /// in a value shown as `\n`.
        #[arg(long)]
        json: bool,
        /// Search the trace as `print --postprocess` shows it (the
        /// recorder's post-processing): a collapsed call pair is one hit, a
        /// generated accessor is found as its field access, coverage
        /// accesses and empty iterations are not searched. Every
        /// tracepoint is then decoded, as with --text.
        #[arg(long)]
        postprocess: bool,
    },
    /// Serve traces to an IDE or tool over standard input and output:
    /// JSON-RPC 2.0 with the Language Server Protocol's framing (open,
    /// pages of roots and children, node details, search, growth); the
    /// methods are in docs/PROTOCOL.md. The flags are the defaults of
    /// each `trace/open`, whose options may say otherwise. With --http,
    /// the same methods over HTTP and the browser viewer's page.
    #[command(after_help = "Examples:\n  tracetree serve --stdio\n  \
        tracetree serve --stdio --no-mmap --cache-dir /tmp/tt-cache\n  \
        tracetree serve --http app.trace\n  \
        tracetree serve --http=127.0.0.1:8080 --root traces/\n  \
        tracetree serve --print-schema > docs/protocol.schema.json")]
    Serve {
        #[command(flatten)]
        cache: CacheFlags,
        #[command(flatten)]
        strict: StrictFlag,
        /// Talk over standard input and output.
        #[arg(long, required_unless_present_any = ["print_schema", "http"])]
        stdio: bool,
        /// Serve over HTTP on ADDR (default 127.0.0.1 and a free port;
        /// `--http=127.0.0.1:8080`): `POST /rpc` takes the same methods,
        /// `GET /events` streams progress and growth, `/` is the browser
        /// viewer. Prints the page's URL, whose `?token=` every request
        /// needs. An address other than loopback is warned of.
        #[arg(
            long,
            value_name = "ADDR",
            num_args = 0..=1,
            require_equals = true,
            default_missing_value = "127.0.0.1",
            conflicts_with = "stdio"
        )]
        http: Option<String>,
        /// With --http: files under DIR open too, by their path relative
        /// to it (never outside it, symbolic links included).
        #[arg(long, value_name = "DIR", requires = "http")]
        root: Option<PathBuf>,
        /// With --http: the traces the page may open.
        #[arg(requires = "http", value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Print the JSON Schema of the protocol's messages and exit.
        #[arg(long, conflicts_with_all = ["stdio", "http"])]
        print_schema: bool,
    },
    /// Print one page of a call's children, as an IDE expanding one node
    /// would: index, event id, child count and text of each child.
    #[command(
        after_help = "Examples:\n  tracetree children app.trace --node 42 --from 100 --count 20"
    )]
    Children {
        #[command(flatten)]
        cache: CacheFlags,
        #[command(flatten)]
        strict: StrictFlag,
        /// The data file; `-` reads stdin.
        file: PathBuf,
        /// The event id of the call (or loop) to expand (negative ids
        /// too); `print --ids` shows event ids, and each child's is after
        /// its `#`.
        #[arg(long, value_name = "EVENT_ID", allow_negative_numbers = true)]
        node: i32,
        /// The first child to show (0-based).
        #[arg(long, default_value_t = 0)]
        from: usize,
        /// How many children to show.
        #[arg(long, default_value_t = 100)]
        count: usize,
        /// End each line with its code location.
        #[arg(short, long)]
        verbose: bool,
    },
}

impl Command {
    /// The command's cache flags, `--strict` and `--memory-budget` (none
    /// given for a command that takes none).
    fn flags(&mut self) -> (CacheFlags, bool, Option<u64>) {
        let none = CacheFlags::default();
        match self {
            Command::Info {
                cache,
                strict,
                budget,
                ..
            }
            | Command::Dump {
                cache,
                strict,
                budget,
                ..
            }
            | Command::Print {
                cache,
                strict,
                budget,
                ..
            } => (std::mem::take(cache), strict.strict, budget.memory_budget),
            Command::Children { cache, strict, .. }
            | Command::Search { cache, strict, .. }
            | Command::Export { cache, strict, .. }
            | Command::Pack { cache, strict, .. }
            | Command::Diff { cache, strict, .. }
            | Command::View { cache, strict, .. }
            | Command::Serve { cache, strict, .. } => (std::mem::take(cache), strict.strict, None),
            Command::Import { strict, .. } => (none, strict.strict, None),
            Command::Index { .. } | Command::Gen { .. } => (none, false, None),
        }
    }

    /// The trace or source the command reads, if it reads one.
    fn input_mut(&mut self) -> Option<&mut PathBuf> {
        match self {
            Command::Info { file, .. }
            | Command::Dump { file, .. }
            | Command::Index { file, .. }
            | Command::Print { file, .. }
            | Command::Pack { file, .. }
            | Command::Export { file, .. }
            | Command::View { file, .. }
            | Command::Search { file, .. }
            | Command::Children { file, .. } => Some(file),
            Command::Import { input, .. } => Some(input),
            Command::Gen { .. } | Command::Serve { .. } | Command::Diff { .. } => None,
        }
    }
}

/// `diff --match`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MatchArg {
    /// By thread name.
    Name,
    /// By thread index.
    Index,
}

/// `diff --unmatched`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnmatchedArg {
    /// Diffed against nothing: all removed or all added.
    Diff,
    /// Left out.
    Skip,
    /// The diff fails.
    Error,
}

/// Output formats of `dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DumpFormat {
    /// One JSON object per tracepoint, depth-first pre-order.
    Jsonl,
}

/// Runs the command line; prints a one-line error and returns a failure code
/// on error.
/// Stack of each worker thread: decoding nests up to 255 values or types
/// deep, which a 2 MiB stack holds in release builds only.
const WORKER_STACK: usize = 16 << 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    clean_up_on_signals();
    // Fails only if a pool already exists, which then serves as it is.
    let _ = rayon::ThreadPoolBuilder::new()
        .stack_size(WORKER_STACK)
        .build_global();
    // `search` exits as grep does: 1 when nothing matched, 2 on an error.
    let failed = match cli.command {
        Command::Search { .. } => ExitCode::from(2),
        _ => ExitCode::FAILURE,
    };
    let mut spooled = None;
    match run(cli, &mut spooled).map_err(cache::as_given) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::NoMatch) => ExitCode::FAILURE,
        Err(Error::Io { path: None, source }) if source.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(error) => {
            let mut message = match error {
                Error::OverMemoryBudget { needed, budget } => format!(
                    "loading the whole trace would need about {}, over the --memory-budget of \
                     {}: read it without --eager (the lazy reader needs little memory)",
                    words::size(needed),
                    words::size(budget)
                ),
                error => error.to_string(),
            };
            // A spooled input is named as the user gave it.
            if let Some((path, name)) = &spooled {
                message = message.replace(
                    &path.display().to_string(),
                    &PathBuf::from(name).display().to_string(),
                );
            }
            eprintln!("tracetree: {message}");
            failed
        }
    }
}

/// How a command that succeeded ended.
pub enum Outcome {
    /// It did what was asked.
    Done,
    /// `search` found nothing (exit 1, as grep).
    NoMatch,
}

/// On SIGINT, SIGTERM or SIGHUP, removes the temporary files of the writes
/// in progress (`FILE.idx`'s, a sidecar's, an export's), then ends as the
/// signal would have: an interrupted command leaves nothing behind.
fn clean_up_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            tracetree::storage::remove_temporaries();
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            std::process::exit(128 + signal);
        }
    });
}

/// Runs one parsed command.
// Long: one arm per command, each handing its options to its module.
pub fn run(mut cli: Cli, spooled_as: &mut Option<(PathBuf, PathBuf)>) -> Result<Outcome> {
    // Stdin, a pipe or a FIFO is read once into an unnamed temporary file,
    // kept open (`_spooled`) while the command reads it, as `--no-cache`
    // reads: there is nothing to key a cache entry by.
    let is_index = matches!(cli.command, Command::Index { .. });
    let mut _spooled = None;
    let mut shown = None;
    if let Some(input) = cli.command.input_mut()
        && cache::needs_spooling(input)
    {
        if is_index {
            return Err(Error::invalid(
                "FILE",
                format!(
                    "{}: index needs a trace file, not stdin or a pipe: it writes FILE.idx \
                     beside the file",
                    input.display()
                ),
            ));
        }
        let spooled = cache::spool(input)?;
        shown = Some(std::mem::replace(input, spooled.path.clone()));
        *spooled_as = Some((spooled.path.clone(), shown.clone().unwrap_or_default()));
        _spooled = Some(spooled);
    }
    // A command's own flags, or the same given before the command.
    let (cache_flags, strict, budget) = cli.command.flags();
    let strict = cli.strict || strict;
    let memory_budget = budget.or(cli.memory_budget);
    let no_cache = cli.no_cache || cache_flags.no_cache;
    let cache_dir = cache_flags.cache_dir.or(cli.cache_dir);
    if no_cache && cache_dir.is_some() {
        return Err(Error::invalid(
            "--cache-dir",
            "--cache-dir and --no-cache cannot be given together",
        ));
    }
    // The server owns standard output (its messages), so it runs before
    // anything else takes it.
    let defaults = serve::OpenDefaults {
        cache_dir: cache_dir.clone(),
        no_cache,
        no_mmap: cache_flags.no_mmap,
        strict,
    };
    if let Command::View {
        web: true,
        file,
        more,
        follow,
        ..
    } = &cli.command
    {
        let mut files = vec![file.clone()];
        files.extend(more.iter().cloned());
        let served = serve::http::Files::new(&files, None, *follow)?;
        serve::http::run(
            defaults,
            serve::http::Options {
                addr: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                files: served,
                open_browser: true,
            },
        )?;
        return Ok(Outcome::Done);
    }
    if let Command::Serve {
        print_schema,
        http,
        root,
        files,
        ..
    } = &cli.command
    {
        if let Some(addr) = http {
            let addr = serve::http::parse_addr(addr).map_err(|e| Error::invalid("--http", e))?;
            let served = serve::http::Files::new(files, root.as_deref(), false)?;
            serve::http::run(
                defaults,
                serve::http::Options {
                    addr,
                    files: served,
                    open_browser: false,
                },
            )?;
            return Ok(Outcome::Done);
        }
        if *print_schema {
            let schema = serde_json::to_string_pretty(&serve::schema())
                .map_err(|e| Error::invalid("schema", e.to_string()))?;
            println!("{schema}");
            return Ok(Outcome::Done);
        }
        let clean = serve::run(defaults);
        if !clean {
            // LSP: `exit` without `shutdown` before it ends with status 1.
            std::process::exit(1);
        }
        return Ok(Outcome::Done);
    }
    let cache = if let Some((path, name)) = spooled_as.clone() {
        Cache::new(None, true, strict)?.spooled(path, name)
    } else {
        Cache::new(cache_dir, no_cache, strict)?
    }
    .memory_budget(memory_budget)
    .file_access(if cache_flags.no_mmap {
        FileAccess::Read
    } else {
        FileAccess::Map
    });
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match cli.command {
        Command::Info { file, eager, .. } => {
            let shown = shown.as_deref();
            info::run(&cache, &cache.trace_path(&file)?, shown, eager, &mut out)?;
            info::write_jfr_summary(&file, &mut out)?;
        }
        Command::Index {
            file,
            check,
            threads,
            ..
        } => index::run(&file, check, threads, &mut out)?,
        Command::Dump {
            file,
            format: DumpFormat::Jsonl,
            threads,
            eager,
            postprocess,
            ..
        } => {
            let threads = thread_filter(&threads);
            let file = cache.trace_path(&file)?;
            if eager {
                let trace = cache.open_eager(&file)?;
                seen_as!(postprocess, trace, |tree| {
                    tracetree::print::write_jsonl(tree, threads.as_deref(), &mut out)?
                });
            } else {
                let trace = cache.open_lazy_whole(&file)?;
                seen_as!(postprocess, trace, |tree| {
                    tracetree::print::write_jsonl(tree, threads.as_deref(), &mut out)?
                });
            }
        }
        Command::Print {
            file,
            verbose,
            threads,
            depth,
            ids,
            eager,
            postprocess,
            ..
        } => {
            let mut options = PrintOptions::default();
            options.verbose = verbose;
            options.threads = thread_filter(&threads);
            options.max_depth = depth;
            options.event_ids = ids;
            let file = cache.trace_path(&file)?;
            if eager {
                let trace = cache.open_eager(&file)?;
                seen_as!(postprocess, trace, |tree| {
                    options.print(tree, &mut out)?
                });
            } else {
                let trace = cache.open_lazy_whole(&file)?;
                seen_as!(postprocess, trace, |tree| {
                    options.print(tree, &mut out)?
                });
            }
        }
        Command::Gen {
            out: path,
            output,
            size,
            threads,
            shape,
            seed,
            block_size,
            force,
            ..
        } => gen_trace::run(
            &gen_trace::GenRequest {
                path: &path.or(output).unwrap_or_default(),
                size,
                threads,
                shape,
                seed,
                block_size,
                force,
            },
            &mut out,
        )?,
        Command::Import {
            input,
            output,
            from,
            force,
            samples,
            ..
        } => import::run(&cache, &input, &output, from, force, samples, &mut out)?,
        Command::Export {
            file,
            format,
            output,
            threads,
            root,
            diff,
            #[cfg(feature = "parquet")]
            row_group_rows,
            force,
            ..
        } => export::run(
            &cache,
            &export::ExportRequest {
                file: &file,
                format,
                output: &output,
                threads: thread_filter(&threads),
                root: root.map(tracetree::common::EventId::new),
                diff: search::diff_statuses(diff.as_deref())?,
                #[cfg(feature = "parquet")]
                row_group_rows,
                force,
            },
            &mut out,
        )?,
        Command::Diff {
            left,
            right,
            output,
            matching,
            maps,
            start_threads,
            only_start_threads,
            unmatched,
            force,
            summary,
            max_edits,
            max_keys,
            no_postprocess,
            ..
        } => {
            let mut options = tracetree::diff::DiffOptions::default();
            options.postprocess = !no_postprocess;
            options.matching = diff::thread_matching(matching == MatchArg::Index, &maps)?;
            options.start_threads = start_threads;
            options.only_start_threads = only_start_threads;
            options.unmatched = diff::unmatched(unmatched);
            options.allow_diffs = force;
            options.max_edits = max_edits;
            options.max_keys = max_keys;
            let args = diff::DiffArgs {
                left: &left,
                right: &right,
                output: &output,
                options,
                force,
                summary,
            };
            diff::run(&cache, args, &mut out)?
        }
        Command::Pack {
            file,
            output,
            info,
            force,
            ..
        } => pack::run(&cache, &file, &output, info.as_deref(), force, &mut out)?,
        Command::View {
            file,
            follow,
            postprocess,
            ..
        } => view::run(&cache, &file, follow, postprocess)?,
        Command::Serve { .. } => {}
        Command::Search {
            file,
            pattern,
            threads,
            kinds,
            diff,
            max,
            ignore_case,
            text,
            json,
            postprocess,
            ..
        } => {
            return search::run(
                &cache,
                search::SearchRequest {
                    file: &file,
                    pattern,
                    threads: thread_filter(&threads),
                    kinds,
                    diff: search::diff_statuses(diff.as_deref())?,
                    max,
                    ignore_case,
                    text,
                    json,
                    postprocess,
                },
                &mut out,
            );
        }
        Command::Children {
            file,
            node,
            from,
            count,
            verbose,
            ..
        } => children::run(
            &cache,
            &cache.trace_path(&file)?,
            EventId::new(node),
            from,
            count,
            verbose,
            &mut out,
        )?,
    }
    out.flush()?;
    Ok(Outcome::Done)
}

fn thread_filter(ids: &[i32]) -> Option<Vec<ThreadId>> {
    (!ids.is_empty()).then(|| ids.iter().copied().map(ThreadId::new).collect())
}
