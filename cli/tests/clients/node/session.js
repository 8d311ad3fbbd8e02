// A whole `tracetree serve --stdio` session driven by vscode-jsonrpc, the
// JSON-RPC library VS Code's language clients are built on, as an extension
// would drive it.
//
// Usage: node session.js TRACETREE TRACE BIG_TRACE
//
// Pages through every node of TRACE and compares each with `tracetree dump`
// and `tracetree print --verbose`; asks for details and ancestors; streams a
// search's hits as partial results (against `tracetree search --json`);
// cancels a search of BIG_TRACE through a CancellationToken; checks the
// errors a client branches on; shuts down. Prints `ok`; any failure throws.

"use strict";

const assert = require("node:assert/strict");
const { spawn, execFileSync } = require("node:child_process");
const rpc = require("vscode-jsonrpc/node");

async function main() {
  const [tracetree, trace, bigTrace] = process.argv.slice(2);
  const server = spawn(tracetree, ["serve", "--stdio", "--no-cache"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(server.stdout),
    new rpc.StreamMessageWriter(server.stdin),
  );
  connection.listen();

  const init = await connection.sendRequest("initialize", { processId: process.pid, capabilities: {} });
  assert.equal(init.serverInfo.name, "tracetree");
  assert.ok(init.capabilities.partialResults);
  await connection.sendNotification("initialized", {});

  const opened = await connection.sendRequest("trace/open", { path: trace });
  const t = opened.trace;
  const run = (...args) => execFileSync(tracetree, args, { encoding: "utf8", maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "ignore"] });
  const dump = run("dump", trace).split("\n").filter(Boolean).map((line) => JSON.parse(line));
  assert.equal(opened.tracepoints, dump.length);

  // Every node, pre-order, pages of 4.
  const nodes = [];
  async function page(method, params) {
    const all = [];
    for (let start = 0; ; start += 4) {
      const result = await connection.sendRequest(method, { ...params, start, count: 4 });
      all.push(...result.nodes);
      if (result.nodes.length < 4) return all;
    }
  }
  async function visit(thread, node) {
    nodes.push([thread, node]);
    if (node.hasChildren) {
      for (const child of await page("trace/children", { trace: t, node: node.handle })) {
        await visit(thread, child);
      }
    }
  }
  for (const thread of opened.threads) {
    for (const root of await page("trace/roots", { trace: t, thread: thread.id })) {
      await visit(thread.id, root);
    }
  }
  assert.equal(nodes.length, dump.length);
  nodes.forEach(([thread, node], i) => {
    const record = dump[i];
    assert.deepEqual(
      [thread, node.eventId, node.kind, node.depth, node.childCount],
      [record.thread, record.event_id, record.kind, record.depth, record.children],
    );
  });
  const printed = run("print", "--verbose", trace)
    .split("\n")
    .filter((line) => line && !line.startsWith("# Thread "))
    .map((line) => line.replace(/^ +/, ""));
  assert.deepEqual(nodes.map(([, node]) => node.text), printed);

  const [, deep] = nodes.reduce((a, b) => (b[1].depth > a[1].depth ? b : a));
  const detail = await connection.sendRequest("trace/node", { trace: t, node: deep.handle });
  assert.equal(detail.text, deep.text);
  const above = await connection.sendRequest("trace/ancestors", { trace: t, node: deep.handle });
  assert.equal(above.nodes.length, deep.depth);

  // Hits streamed as LSP partial results.
  const call = nodes.find(([, node]) => node.kind === "method_call")[1];
  const name = (await connection.sendRequest("trace/node", { trace: t, node: call.handle })).method.split(".").pop();
  const expected = run("search", trace, name, "--json").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const streamed = [];
  const token = "hits-" + Date.now();
  const listening = connection.onProgress(new rpc.ProgressType(), token, (value) => streamed.push(...value.hits));
  const result = await connection.sendRequest("trace/search", { trace: t, pattern: name, partialResultToken: token });
  listening.dispose();
  assert.deepEqual(result.hits, []);
  assert.equal(result.total, expected.length);
  const key = (thread, event) => `${thread}:${event}`;
  assert.deepEqual(
    streamed.map((hit) => key(hit.thread, hit.eventId)).sort(),
    expected.map((hit) => key(hit.thread, hit.eventId)).sort(),
  );

  // Errors, as vscode-jsonrpc's ResponseError.
  await assert.rejects(
    connection.sendRequest("trace/children", { trace: t, node: "0:999999999", count: 1 }),
    (error) => error instanceof rpc.ResponseError && error.code === -32011,
  );
  await assert.rejects(
    connection.sendRequest("trace/roots", { trace: t, thread: "main", count: 1 }),
    (error) => error.code === -32602 && error.data.field === "thread",
  );
  await assert.rejects(connection.sendRequest("trace/nope", {}), (error) => error.code === -32601);

  // A long search cancelled through a CancellationToken.
  const big = await connection.sendRequest("trace/open", { path: bigTrace, options: { countTracepoints: false } });
  const source = new rpc.CancellationTokenSource();
  const searching = connection.sendRequest(
    "trace/search",
    { trace: big.trace, pattern: "no line holds this", text: true },
    source.token,
  );
  const quick = await connection.sendRequest("trace/roots", { trace: big.trace, thread: 0, count: 5 });
  assert.ok(quick.nodes.length > 0);
  source.cancel();
  // LSP's RequestCancelled.
  await assert.rejects(searching, (error) => error.code === -32800);

  await connection.sendRequest("trace/close", { trace: t });
  await assert.rejects(
    connection.sendRequest("trace/node", { trace: t, node: deep.handle }),
    (error) => error.code === -32010 && error.message.includes(t),
  );
  await connection.sendRequest("shutdown");
  await connection.sendNotification("exit");
  assert.equal(await exited, 0);
  connection.dispose();
  console.log("ok");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
