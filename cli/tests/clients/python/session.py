"""A whole `tracetree serve --stdio` session, driven by a client written
with the Python standard library only, as a tool outside the project
would write it from docs/PROTOCOL.md.

Usage: session.py TRACETREE TRACE

It opens TRACE, pages through every node of every thread (pages of 3, so
that paging is exercised) and compares each node's kind, depth, event id
and child count with `tracetree dump`, and its text with
`tracetree print --verbose`; then asks for node details, ancestors,
positions, a node by event id, a streamed search (checked against
`tracetree search --json`), a find-next, and the errors a client branches
on; then shuts down and checks the exit status. Prints `ok` at the end;
any failure raises.
"""

import json
import queue
import os
import subprocess
import sys
import tempfile
import threading


class Client:
    def __init__(self, argv):
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.next_id = 0
        self.responses = {}
        self.notifications = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.process.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.rstrip(b"\r\n")
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            message = json.loads(out.read(length))
            with self.arrived:
                if "id" in message and ("result" in message or "error" in message):
                    self.responses[message["id"]] = message
                else:
                    self.notifications.append(message)
                self.arrived.notify_all()

    def send(self, message):
        message = dict(message, jsonrpc="2.0")
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def start(self, method, params=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.next_id

    def wait(self, id):
        with self.arrived:
            if not self.arrived.wait_for(lambda: id in self.responses, timeout=120):
                raise AssertionError("no answer to request %s" % id)
            return self.responses.pop(id)

    def call(self, method, params=None):
        response = self.wait(self.start(method, params))
        if "error" in response:
            raise AssertionError("%s failed: %s" % (method, response["error"]))
        return response["result"]

    def error(self, method, params):
        response = self.wait(self.start(method, params))
        assert "error" in response, "%s should fail: %s" % (method, response)
        return response["error"]


def run(tracetree, *args):
    return subprocess.run(
        [tracetree] + list(args), check=True, capture_output=True, text=True
    ).stdout


def main():
    tracetree, trace = sys.argv[1], sys.argv[2]
    client = Client([tracetree, "serve", "--stdio", "--no-cache"])

    init = client.call("initialize", {"processId": None, "capabilities": {}})
    assert init["serverInfo"]["name"] == "tracetree", init
    assert init["limits"]["maxRequestsInFlight"] > 0, init
    assert "trace/children" in init["capabilities"]["methods"], init
    client.send({"method": "initialized", "params": {}})

    opened = client.call("trace/open", {"path": trace})
    t = opened["trace"]
    assert opened["status"] == "complete", opened
    dump = [json.loads(line) for line in run(tracetree, "dump", trace).splitlines()]
    assert opened["tracepoints"] == len(dump), (opened["tracepoints"], len(dump))
    assert [th["id"] for th in opened["threads"]] == sorted({d["thread"] for d in dump})

    # Every node, in pre-order, paged 3 at a time.
    nodes = []
    for thread in opened["threads"]:
        def page(method, params, total_expected):
            got, start = [], 0
            while True:
                result = client.call(method, dict(params, start=start, count=3))
                got.extend(result["nodes"])
                if "total" in result:
                    assert result["total"] == total_expected, (result, total_expected)
                if len(result["nodes"]) < 3:
                    return got
                start += 3

        def visit(node):
            nodes.append((thread["id"], node))
            if node["hasChildren"]:
                for child in page("trace/children", {"trace": t, "node": node["handle"]}, node["childCount"]):
                    visit(child)

        for root in page("trace/roots", {"trace": t, "thread": thread["id"]}, thread["roots"]):
            visit(root)
    assert len(nodes) == len(dump), (len(nodes), len(dump))
    for (thread, node), record in zip(nodes, dump):
        assert thread == record["thread"], (node, record)
        assert node["eventId"] == record["event_id"], (node, record)
        assert node["kind"] == record["kind"], (node, record)
        assert node["depth"] == record["depth"], (node, record)
        assert node["childCountExact"] and node["childCount"] == record["children"], (node, record)
        assert node["hasChildren"] == (record["children"] > 0), (node, record)

    printed = [
        line.lstrip(" ")
        for line in run(tracetree, "print", "--verbose", trace).splitlines()
        if not line.startswith("# Thread ")
    ]
    assert [node["text"] for _, node in nodes] == printed, "texts differ from print --verbose"

    # A deepest node: its details, ancestors, position, and the node of its event.
    _, deep = max(nodes, key=lambda n: n[1]["depth"])
    detail = client.call("trace/node", {"trace": t, "node": deep["handle"]})
    assert detail["handle"] == deep["handle"] and detail["text"] == deep["text"], detail
    assert detail["location"] is None or "line" in detail["location"], detail
    above = client.call("trace/ancestors", {"trace": t, "node": deep["handle"]})["nodes"]
    assert [a["depth"] for a in above] == list(range(deep["depth"])), above
    position = client.call("trace/position", {"trace": t, "node": deep["handle"]})
    assert position["depth"] == deep["depth"], position
    assert position["parent"] == above[-1]["handle"], position
    siblings = client.call("trace/children", {"trace": t, "node": position["parent"], "start": position["index"], "count": 1})
    assert siblings["nodes"][0]["handle"] == deep["handle"], siblings
    by_event = client.call("trace/nodeByEvent", {"trace": t, "thread": detail["thread"], "eventId": deep["eventId"]})
    assert by_event == deep, (by_event, deep)

    calls = [node for _, node in nodes if node["kind"] == "method_call"]
    call = client.call("trace/node", {"trace": t, "node": calls[0]["handle"]})
    assert "method" in call and "arguments" in call, call

    # A search streaming its hits, against `tracetree search --json`.
    name = call["method"].rsplit(".", 1)[-1]
    expected = [json.loads(line) for line in run(tracetree, "search", trace, name, "--json").splitlines()]
    result = client.call("trace/search", {"trace": t, "pattern": name, "partialResultToken": "hits-1", "workDoneToken": "work-1"})
    assert result["hits"] == [] and result["total"] == len(expected), (result, len(expected))
    with client.arrived:
        progress = [n["params"] for n in client.notifications if n.get("method") == "$/progress"]
    streamed = [hit for p in progress if p["token"] == "hits-1" for hit in p["value"]["hits"]]
    key = lambda h: (h["thread"], h["eventId"])
    assert sorted(map(key, streamed)) == sorted((e["thread"], e["eventId"]) for e in expected), streamed
    for hit, wanted in zip(sorted(streamed, key=key), sorted(expected, key=lambda e: (e["thread"], e["eventId"]))):
        assert hit["path"] == wanted["path"] and hit["text"] == wanted["line"], (hit, wanted)
    work = [p["value"]["kind"] for p in progress if p["token"] == "work-1"]
    assert work[0] == "begin" and work[-1] == "end", work
    plain = client.call("trace/search", {"trace": t, "pattern": name, "max": 1})
    assert len(plain["hits"]) == 1 and plain["total"] == len(expected), plain

    first = client.call("trace/findNext", {"trace": t, "thread": expected[0]["thread"], "pattern": name})["hit"]
    assert first["eventId"] == expected[0]["eventId"], (first, expected[0])
    after = client.call("trace/findNext", {"trace": t, "from": first["handle"], "pattern": name})["hit"]
    same_thread = [e for e in expected if e["thread"] == first["thread"]]
    assert (after and after["eventId"]) == (same_thread[1]["eventId"] if len(same_thread) > 1 else None), after
    if after:
        back = client.call("trace/findPrevious", {"trace": t, "from": after["handle"], "pattern": name})["hit"]
        assert back == first, (back, first)
    assert client.call("trace/findPrevious", {"trace": t, "from": first["handle"], "pattern": name})["hit"] is None

    # A call's subtree exported, as `tracetree export --root` writes it.
    _, top = nodes[0]
    with tempfile.TemporaryDirectory() as out:
        ours, theirs = os.path.join(out, "ours.folded"), os.path.join(out, "cli.folded")
        exported = client.call("trace/export", {"trace": t, "node": top["handle"], "format": "folded", "output": ours, "workDoneToken": "export-1"})
        assert exported["output"] == ours and exported["tracepoints"] > 0, exported
        run(tracetree, "export", trace, "--format", "folded", "--root", str(top["eventId"]), "-o", theirs)
        with open(ours, "rb") as a, open(theirs, "rb") as b:
            assert a.read() == b.read(), "the export differs from tracetree export"
        again = client.error("trace/export", {"trace": t, "format": "folded", "output": ours})
        assert again["code"] == -32602 and "exists" in again["message"], again
        wrong = client.error("trace/export", {"trace": t, "format": "svg", "output": ours})
        assert wrong["code"] == -32602 and wrong["data"]["field"] == "format", wrong

    # Errors a client branches on.
    assert client.error("trace/children", {"trace": t, "node": "0:999999999", "count": 1})["code"] == -32011
    bad = client.error("trace/children", {"trace": t, "node": deep["handle"], "count": "ten"})
    assert bad["code"] == -32602 and bad["data"]["field"] == "count", bad
    assert client.error("trace/nope", {})["code"] == -32601

    # Handles outlive their trace: a reopened trace resolves them.
    client.call("trace/close", {"trace": t})
    closed = client.error("trace/node", {"trace": t, "node": deep["handle"]})
    assert closed["code"] == -32010 and t in closed["message"], closed
    again = client.call("trace/open", {"path": trace, "options": {"noMmap": True, "countTracepoints": False}})
    assert again["tracepoints"] is None, again
    assert client.call("trace/node", {"trace": again["trace"], "node": deep["handle"]})["text"] == deep["text"]

    assert client.call("shutdown") is None
    client.send({"method": "exit"})
    assert client.process.wait(timeout=60) == 0
    print("ok")


if __name__ == "__main__":
    main()
