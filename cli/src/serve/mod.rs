//! `tracetree serve --stdio`: the trace service IDEs and tools talk to, as
//! they talk to a language server: JSON-RPC 2.0 over standard input and
//! output with LSP's base protocol (`Content-Length` framing), through the
//! `lsp-server` crate, or over HTTP (`--http`, with the browser viewer).
//! `docs/PROTOCOL.md` is the client's reference.
//!
//! - `transport`: the wire (framing by `lsp-server`; bad messages answered,
//!   not fatal; the message size bounded before a body is allocated);
//! - `dispatch`: the session (initialize, shutdown, exit, cancellation),
//!   the worker pools and the bound on requests in flight;
//! - `traces`: the open traces by id, node handles as strings;
//! - `methods`: each method over the library's front door;
//! - `follow`: growth notifications for a trace still being written;
//! - `protocol`: the parameters and results as types, from which the JSON
//!   Schema is generated (`--print-schema`);
//! - `errors`: the codes a client branches on;
//! - `http`: the second front end (`serve --http`): the same session over
//!   HTTP, and the browser viewer's page.
//!
//! Invariants: nothing but protocol messages goes to standard output
//! (messages for people go to standard error); every request gets exactly
//! one answer; a client's failure (a bad message, a disconnection) never
//! ends the process with anything but a clean exit.

mod dispatch;
mod errors;
mod follow;
pub mod http;
mod methods;
mod protocol;
mod traces;
mod transport;

pub use dispatch::OpenDefaults;

use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use protocol::*;

/// Serves one session on standard input and output; returns whether it
/// ended as LSP wants (a `shutdown` before `exit`, or the input closed).
pub fn run(defaults: OpenDefaults) -> bool {
    dispatch::serve(defaults)
}

/// The JSON Schema of the protocol's messages: every type under `$defs`,
/// and for each method (`x-methods`) and notification
/// (`x-notifications`) a reference to its parameters' and result's.
pub fn schema() -> Value {
    let mut generator = SchemaGenerator::default();
    let mut methods = Map::new();
    let mut method = |name: &str, params: Value, result: Value| {
        methods.insert(name.into(), json!({ "params": params, "result": result }));
    };
    fn of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
        generator.subschema_for::<T>().to_value()
    }
    let g = &mut generator;
    let null = json!({ "type": "null" });
    method(
        "initialize",
        of::<InitializeParams>(g),
        of::<InitializeResult>(g),
    );
    method("shutdown", null.clone(), null.clone());
    method("trace/open", of::<OpenParams>(g), of::<OpenResult>(g));
    method("trace/close", of::<TraceParams>(g), null.clone());
    method(
        "trace/threads",
        of::<TraceParams>(g),
        of::<Vec<ThreadInfo>>(g),
    );
    method("trace/roots", of::<RootsParams>(g), of::<NodesResult>(g));
    method(
        "trace/children",
        of::<ChildrenParams>(g),
        of::<NodesResult>(g),
    );
    method("trace/node", of::<NodeParams>(g), of::<NodeDetail>(g));
    method(
        "trace/ancestors",
        of::<NodeParams>(g),
        of::<AncestorsResult>(g),
    );
    method(
        "trace/position",
        of::<NodeParams>(g),
        of::<PositionResult>(g),
    );
    method(
        "trace/nodeByEvent",
        of::<NodeByEventParams>(g),
        of::<Node>(g),
    );
    method("trace/search", of::<SearchParams>(g), of::<SearchResult>(g));
    method("trace/findNext", of::<FindParams>(g), of::<FindResult>(g));
    method(
        "trace/findPrevious",
        of::<FindParams>(g),
        of::<FindResult>(g),
    );
    method("trace/export", of::<ExportParams>(g), of::<ExportResult>(g));
    method("trace/follow", of::<TraceParams>(g), null.clone());
    method("trace/flame", of::<FlameParams>(g), of::<FlameResult>(g));
    method(
        "trace/sandwich",
        of::<SandwichParams>(g),
        of::<SandwichResult>(g),
    );
    method("trace/files", null.clone(), of::<FileList>(g));
    let notifications = json!({
        "exit": null,
        "$/cancelRequest": of::<CancelParams>(g),
        "$/progress": of::<ProgressParams>(g),
        "trace/grown": of::<GrownParams>(g),
    });
    let definitions = generator.take_definitions(true);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "tracetree serve protocol",
        "description": "The messages of `tracetree serve --stdio` (docs/PROTOCOL.md), generated \
            from the server's types by `tracetree serve --print-schema`.",
        "x-methods": methods,
        "x-notifications": notifications,
        "$defs": definitions,
    })
}
