//! The messages' parameters and results, as Rust types: what the methods
//! read and write, and what `docs/protocol.schema.json` is generated from
//! (`tracetree serve --print-schema`). Fields are camelCase; a handle is a
//! node's `NodeHandle` as the string `THREAD:OFFSET`, valid in any later
//! open of the same file.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `initialize`'s parameters (LSP's; all optional, none read but `processId`
/// is accepted).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // accepted as LSP clients send them; the service needs none
pub struct InitializeParams {
    /// The client's process id, or null.
    pub process_id: Option<i64>,
    /// The client's name and version, as LSP has it.
    pub client_info: Option<Value>,
    /// The client's capabilities, as LSP has them (not read).
    pub capabilities: Option<Value>,
}

/// `initialize`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// `{name: "tracetree", version}`.
    pub server_info: ServerInfo,
    /// What the service does.
    pub capabilities: Capabilities,
    /// Its bounds.
    pub limits: Limits,
    /// Over HTTP (`serve --http`), the traces a page may open; absent over
    /// standard input and output, where any path opens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served: Option<Served>,
}

/// What a page of `serve --http` may open.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Served {
    /// The traces named on the server's command line: `trace/open` takes
    /// their `name` as its `path`.
    pub traces: Vec<ServedTrace>,
    /// Whether files under the server's `--root` folder open too (by their
    /// path relative to it).
    pub root: bool,
}

/// `trace/files`' result: the files under `serve --http`'s `--root`
/// that `trace/open` takes, by their paths relative to it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileList {
    /// Relative paths, sorted.
    pub files: Vec<String>,
    /// Whether more files lie under the root than were listed.
    pub truncated: bool,
}

/// A trace named on the command line of `serve --http`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServedTrace {
    /// What `trace/open` takes as its `path`.
    pub name: String,
    /// Whether the page should open it as a growing view and follow it
    /// (`view --web --follow`).
    pub follow: bool,
}

/// The server's name and version.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ServerInfo {
    /// `tracetree`.
    pub name: String,
    /// The tracetree version.
    pub version: String,
}

/// What the service does.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// The methods it serves.
    pub methods: Vec<String>,
    /// `$/cancelRequest` is honoured.
    pub cancel_request: bool,
    /// `workDoneToken` gets `$/progress` begin/report/end.
    pub work_done_progress: bool,
    /// `partialResultToken` on `trace/search` streams hits.
    pub partial_results: bool,
    /// `trace/follow` sends `trace/grown` as a growing trace grows.
    pub follow: bool,
}

/// The service's bounds: past them a request gets `LIMIT_REACHED` (-32015)
/// or `INVALID_PARAMS` (-32602).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Requests received and not yet answered.
    pub max_requests_in_flight: usize,
    /// Traces open at once.
    pub max_open_traces: usize,
    /// Bytes of one message's content; a longer one ends the session.
    pub max_message_bytes: usize,
    /// `count` of one page of roots or children.
    pub max_page_count: usize,
    /// `max` of one search.
    pub max_search_hits: usize,
    /// `maxFrames` of one flame graph or sandwich side.
    pub max_flame_frames: usize,
}

/// `trace/open`'s parameters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenParams {
    /// The trace (its index is `PATH.idx`), a packed trace, or a foreign
    /// recording (`.flow`, Blinky, TPTP, JFR) imported once into the cache.
    pub path: String,
    /// How to open it.
    #[serde(default)]
    pub options: OpenOptions,
    /// LSP's progress token: `$/progress` while the trace is opened.
    pub work_done_token: Option<Value>,
}

/// The command line's options for reading a trace.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenOptions {
    /// Keep lookup sidecars and imports in this folder (else the server's
    /// `--cache-dir`, else the per-user cache).
    pub cache_dir: Option<String>,
    /// Keep nothing between opens.
    pub no_cache: Option<bool>,
    /// Fail with `DAMAGED_TRACE` when the trace is incomplete or damaged
    /// instead of opening what is whole with a warning.
    pub strict: Option<bool>,
    /// Read without mapping the files: a file cut or rewritten while open
    /// gives errors instead of ending the server.
    pub no_mmap: Option<bool>,
    /// Read the file as this format (`flow`, `blinky`, `tptp`, `jfr`,
    /// `packed`, as `import --from` names them) instead of the one its
    /// bytes show.
    pub from: Option<String>,
    /// Open a trace still being written as its growing view (as
    /// `view --follow`); `trace/follow` then reports its growth.
    pub growing: Option<bool>,
    /// Count the tracepoints (one walk of the whole trace; default true).
    /// `false` answers `tracepoints: null` at once.
    pub count_tracepoints: Option<bool>,
    /// Serve the trace through the recorder's post-processing, as its IDE
    /// plugin shows it and `print --postprocess` prints it (default
    /// false): every method, exports and flame graphs included, sees the
    /// view; handles are the same as without it.
    pub postprocess: Option<bool>,
}

/// `trace/open`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenResult {
    /// The trace's id in this session, for the other methods.
    pub trace: String,
    /// Its threads, ascending by id.
    pub threads: Vec<ThreadInfo>,
    /// Its tracepoints, or null when not counted.
    pub tracepoints: Option<u64>,
    /// `complete`, `damaged` (a warning says what was left out), `unfinished`
    /// (calls never ended: a recorder crashed or is still writing),
    /// `growing` (opened as a growing view).
    pub status: String,
    /// What the open left out, repaired or rebuilt, one line each.
    pub warnings: Vec<String>,
}

/// One thread.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ThreadInfo {
    /// Its id, as `info` lists it and `trace/roots` takes it.
    pub id: i32,
    /// Its name, when recorded.
    pub name: Option<String>,
    /// Its top-level tracepoints.
    pub roots: u64,
}

/// Parameters naming an open trace.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TraceParams {
    /// The id `trace/open` gave.
    pub trace: String,
}

/// `trace/roots`'s parameters.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RootsParams {
    /// The trace's id.
    pub trace: String,
    /// The thread's id.
    pub thread: i32,
    /// The first root (0-based).
    #[serde(default)]
    pub start: usize,
    /// How many (at most `maxPageCount`).
    pub count: usize,
}

/// `trace/children`'s parameters.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChildrenParams {
    /// The trace's id.
    pub trace: String,
    /// The parent's handle.
    pub node: String,
    /// The first child (0-based).
    #[serde(default)]
    pub start: usize,
    /// How many (at most `maxPageCount`).
    pub count: usize,
}

/// A page of nodes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NodesResult {
    /// The nodes, in order.
    pub nodes: Vec<Node>,
    /// All the parent's children (or the thread's roots), when known
    /// without counting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

/// A node as a tree view shows it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// Its handle (`THREAD:OFFSET`).
    pub handle: String,
    /// Its event id.
    pub event_id: i32,
    /// Its kind as `dump` names it (`method_call`, `read_field`, …).
    pub kind: String,
    /// Its depth in its thread's tree (0 for a root).
    pub depth: usize,
    /// Its line as `print --verbose` writes it, without indentation.
    pub text: String,
    /// Its direct children: exact, or a lower bound (`childCountExact`).
    pub child_count: u64,
    /// Whether `childCount` is exact.
    pub child_count_exact: bool,
    /// Whether it has children.
    pub has_children: bool,
    /// In a diff trace, its diff status when not `none` (`unchanged`,
    /// `removed`, `added`, `edited_old`, `edited_new`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// Parameters naming a node.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NodeParams {
    /// The trace's id.
    pub trace: String,
    /// The node's handle.
    pub node: String,
}

/// `trace/node`'s result: a node in full.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeDetail {
    /// The node as `trace/children` shows it.
    #[serde(flatten)]
    pub node: Node,
    /// Its thread.
    pub thread: i32,
    /// Its diff status: `none` (not a diff), `unchanged`, `removed`,
    /// `added`, `edited_old`, `edited_new`.
    pub diff_status: String,
    /// Where it was recorded.
    pub location: Option<Location>,
    /// A call's method: `Class.name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// A call's or field access's receiver, as `print` writes values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver: Option<String>,
    /// A call's arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<String>>,
    /// A finished call's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The exception a call threw (its simple class name), or the
    /// exception thrown or caught.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    /// A field access's field: `Class.name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// A local variable's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    /// The array of an array access.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array: Option<String>,
    /// The index of an array access.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<i32>,
    /// The value read or written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// A loop's iterations, or an iteration's number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<i32>,
    /// A call or loop the recorder never finished.
    pub unfinished: bool,
    /// In a packed diff (`tracetree diff`'s, or the recorder library's):
    /// the tracepoints of the two inputs it was made from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<DiffOrigin>,
}

/// Where a tracepoint of a diff came from.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffOrigin {
    /// Its counterpart in the left (old) input; `null` for an added one
    /// (and a virtual root).
    pub left: Option<InputEvent>,
    /// Its counterpart in the right (new) input; `null` for a removed one
    /// (and a virtual root).
    pub right: Option<InputEvent>,
}

/// A tracepoint of a diff's input.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputEvent {
    /// Its thread's position among the input's threads ordered by id (as
    /// `trace/open` lists them); `null` when the diff does not say.
    pub thread_index: Option<u32>,
    /// Its event id (for `trace/nodeByEvent` on the input).
    pub event_id: i32,
}

/// A code location.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    /// The source file, when known.
    pub file: Option<String>,
    /// The line (0 when unknown).
    pub line: i32,
    /// The class, when known.
    pub class_name: Option<String>,
    /// The method, when known.
    pub method_name: Option<String>,
}

/// `trace/ancestors`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AncestorsResult {
    /// The calls and loops enclosing the node, outermost first.
    pub nodes: Vec<Node>,
}

/// `trace/position`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PositionResult {
    /// The parent's handle; null for a root.
    pub parent: Option<String>,
    /// The node's index among its parent's children (or its thread's roots).
    pub index: u64,
    /// Its depth.
    pub depth: usize,
}

/// `trace/nodeByEvent`'s parameters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeByEventParams {
    /// The trace's id.
    pub trace: String,
    /// The thread the event is in.
    pub thread: i32,
    /// The event id.
    pub event_id: i32,
}

/// `trace/search`'s parameters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchParams {
    /// The trace's id.
    pub trace: String,
    /// The text to find in names (a call's `Class.method`, a field's
    /// `Class.field`, a local's name); empty (the default) matches every
    /// tracepoint.
    #[serde(default)]
    pub pattern: String,
    /// Also match each tracepoint's printed line.
    #[serde(default)]
    pub text: bool,
    /// Ignore case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Only these kinds (`dump`'s names).
    pub kinds: Option<Vec<String>>,
    /// In a diff trace, only these changes (an error on a trace that is
    /// not a diff); with an empty pattern, every such change.
    pub diff: Option<Vec<DiffChange>>,
    /// Only these threads.
    pub threads: Option<Vec<i32>>,
    /// Hits to send (all are counted; default 1000, at most `maxSearchHits`).
    pub max: Option<usize>,
    /// LSP's progress token: tracepoints scanned as `$/progress`.
    pub work_done_token: Option<Value>,
    /// LSP's partial result token: hits streamed as `$/progress` values
    /// `{hits: [...]}`; the response then has `hits: []`.
    pub partial_result_token: Option<Value>,
}

/// `trace/search`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResult {
    /// The hits (empty when they were streamed).
    pub hits: Vec<Hit>,
    /// Every hit, sent or not.
    pub total: u64,
}

/// One search hit.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// Its handle.
    pub handle: String,
    /// Its event id.
    pub event_id: i32,
    /// Its thread.
    pub thread: i32,
    /// Its depth.
    pub depth: usize,
    /// Its line as `search` shows it (without the code location).
    pub text: String,
    /// The names of the calls and loops above it, outermost first.
    pub path: Vec<String>,
}

/// `trace/findNext`'s and `trace/findPrevious`' parameters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FindParams {
    /// The trace's id.
    pub trace: String,
    /// Look after this node (its subtree first), or before it, in its
    /// thread.
    pub from: Option<String>,
    /// Without `from`: look from this thread's start (`trace/findNext`)
    /// or from its end (`trace/findPrevious`).
    pub thread: Option<i32>,
    /// What to find, as `trace/search` takes it (empty, the default,
    /// matches every tracepoint).
    #[serde(default)]
    pub pattern: String,
    /// Also match printed lines.
    #[serde(default)]
    pub text: bool,
    /// Ignore case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Only these kinds.
    pub kinds: Option<Vec<String>>,
    /// In a diff trace, only these changes, as `trace/search` takes them:
    /// `{"diff": ["added", "removed", "edited"]}` with no pattern finds
    /// the next (previous) change.
    pub diff: Option<Vec<DiffChange>>,
}

/// A change of a diff trace, as searches filter by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DiffChange {
    /// Tracepoints of the right trace only.
    Added,
    /// Tracepoints of the left trace only.
    Removed,
    /// Both sides of an edit: the old tracepoint and the new one.
    Edited,
}

impl DiffChange {
    /// The diff statuses the change covers.
    pub fn statuses(self) -> &'static [tracetree::model::DiffStatus] {
        use tracetree::model::DiffStatus;
        match self {
            DiffChange::Added => &[DiffStatus::Added],
            DiffChange::Removed => &[DiffStatus::Removed],
            DiffChange::Edited => &[DiffStatus::EditedOld, DiffStatus::EditedNew],
        }
    }
}

/// `trace/findNext`'s and `trace/findPrevious`' result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FindResult {
    /// The next (previous) hit in the thread, or null when there is none.
    pub hit: Option<Hit>,
}

/// `trace/export`'s parameters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportParams {
    /// The trace's id.
    pub trace: String,
    /// The file to write (atomically: a failed export leaves nothing).
    pub output: String,
    /// `folded`, `speedscope`, `chrome` or `perfetto`, as `tracetree
    /// export --format` takes them.
    pub format: String,
    /// Only this node's subtree (a handle).
    pub node: Option<String>,
    /// Only these threads.
    pub threads: Option<Vec<i32>>,
    /// Replace `output` if it exists.
    #[serde(default)]
    pub force: bool,
    /// LSP's progress token: tracepoints written as `$/progress`.
    pub work_done_token: Option<Value>,
}

/// `trace/export`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExportResult {
    /// The file written.
    pub output: String,
    /// Threads exported.
    pub threads: u64,
    /// Tracepoints walked.
    pub tracepoints: u64,
    /// Distinct frame names.
    pub frames: u64,
    /// Records written (folded lines, events, packets).
    pub events: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// `trace/grown`'s parameters: a followed trace has new data.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrownParams {
    /// The trace's id.
    pub trace: String,
    /// Its threads now, with their root counts.
    pub threads: Vec<ThreadInfo>,
    /// Whether the view was opened afresh (the files were replaced or
    /// shrank): handles may no longer resolve.
    pub reopened: bool,
    /// Why the refresh failed, when it did (the trace keeps its last view).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `$/cancelRequest`'s parameters (LSP's).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct CancelParams {
    /// The id of the request to cancel.
    pub id: Value,
}

/// `$/progress`' parameters (LSP's).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProgressParams {
    /// The client's `workDoneToken` or `partialResultToken`.
    pub token: Value,
    /// For work done: `{kind: "begin" | "report" | "end", title?, message?,
    /// percentage?}`; for partial results: `{hits: [...]}`.
    pub value: Value,
}

/// `trace/flame`'s parameters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlameParams {
    /// The trace's id.
    pub trace: String,
    /// Only this thread (its frame is the root); without `thread` and
    /// `node`, every thread under a root `all`.
    pub thread: Option<i32>,
    /// Only this node's subtree (a handle; its frame is the root).
    pub node: Option<String>,
    /// Leave out frames whose total is under this fraction of the root's
    /// (0 to 1). Give this or `width`.
    pub min_fraction: Option<f64>,
    /// The view's width in pixels: frames narrower than one pixel
    /// (`total < rootTotal / width`) are left out (default 2000).
    pub width: Option<u32>,
    /// At most this many frames, the widest first (default 10000, at most
    /// `maxFlameFrames`).
    pub max_frames: Option<usize>,
    /// Zoom into one frame: its path of frame names below the root (under
    /// `all`, a thread's name first). Only the calls on it are walked; the
    /// graph is rooted at its last frame, whose total `minFraction` and
    /// `width` are of.
    pub path: Option<Vec<String>>,
    /// LSP's progress token: tracepoints walked as `$/progress`.
    pub work_done_token: Option<Value>,
}

/// A flame graph: frames in pre-order, the root first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlameResult {
    /// The frames kept, in pre-order (a frame's children follow it, widest
    /// first).
    pub frames: Vec<FlameFrame>,
    /// The smallest total a frame needed to be kept.
    pub threshold: u64,
    /// Distinct paths left out (their weight is in their parent's `other`).
    pub left_out: u64,
    /// Whether the server's bound on paths kept while walking was reached
    /// (weights past it are in `other`).
    pub truncated: bool,
    /// Tracepoints walked.
    pub tracepoints: u64,
}

/// One frame of a flame graph: `total = self + other + ` its children's
/// totals.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FlameFrame {
    /// `Class.method`, `loop`, `loop_iteration`, a thread's name, or `all`.
    pub name: String,
    /// 0 for the root.
    pub depth: u32,
    /// The index of its parent in `frames` (null for the root).
    pub parent: Option<u32>,
    /// The tracepoints of its subtree on this path (a sample tree's calls:
    /// their samples).
    pub total: u64,
    /// Its own tracepoint and its leaves.
    #[serde(rename = "self")]
    pub self_weight: u64,
    /// Its children left out of `frames`.
    pub other: u64,
}

/// `trace/sandwich`'s parameters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandwichParams {
    /// The trace's id.
    pub trace: String,
    /// The frame: a method's `Class.method` (as a flame graph names it),
    /// or `loop`, `loop_iteration`.
    pub method: String,
    /// Only this thread.
    pub thread: Option<i32>,
    /// Only this node's subtree (a handle).
    pub node: Option<String>,
    /// As `trace/flame`'s, for each side.
    pub min_fraction: Option<f64>,
    /// As `trace/flame`'s, for each side.
    pub width: Option<u32>,
    /// As `trace/flame`'s, for each side.
    pub max_frames: Option<usize>,
    /// LSP's progress token: tracepoints walked as `$/progress`.
    pub work_done_token: Option<Value>,
}

/// `trace/sandwich`'s result: both sides rooted at the method, weighing
/// its outermost calls.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SandwichResult {
    /// The method, then its callers outward (an inverted tree ending at
    /// the thread, or at the node).
    pub callers: FlameResult,
    /// The method, then what its calls call, merged.
    pub callees: FlameResult,
}
