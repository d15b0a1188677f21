"""A deliberately bad MCP server (stdio, raw JSON-RPC) for toolhost's tests of what a host must
survive. Run with any Python 3 (it uses only the standard library):

    python3 fake_server.py [--crash | --hang-on-list] [--grandchild]

--crash         write a line to stderr and exit 3 before answering anything
--hang-on-list  answer `initialize`, then never answer `tools/list`
--grandchild    start `sleep` in the same process group (a child that would be orphaned)

Tools (each call runs in a thread of its own, so a slow call does not block the next):
  echo {text}              the text back
  big {bytes}              a text result of that many bytes, on one line (200 MB is fine)
  garbage                  writes a line that is not JSON, and never answers
  malformed                answers with an `error` that is not a JSON-RPC error object
  not_a_result             answers with a result that is not a tool result
  die                      exits at once, mid-call (status 7)
  slow {seconds}           answers after that long, unless cancelled
  add_tool                 adds the tool `added` and sends notifications/tools/list_changed;
                           the next tools/list is answered half a second late (so a client
                           that does not wait for it shows the old list)
  added                    (after add_tool) says so
  image                    a text block and a 1x1 PNG image block
  structured               structuredContent with the same JSON as a text block
  failing                  an isError result
  chatty {label, count}    two log messages, then `count` progress notifications (with the
                           call's progressToken, its message the label), then the label back
  ask {method, params}     sends the client the request `method` with `params` (whatever
                           the client declared), then answers with the client's answer as JSON

The environment variable FAKE_LOG names a file it appends events to: `started PID`,
`grandchild PID`, `cancelled ID`.
"""

import json
import os
import subprocess
import sys
import threading
import time

LOG = os.environ.get("FAKE_LOG")
lock = threading.Lock()
cancelled = set()
slow_list = threading.Event()
tools = [
    {"name": "echo", "description": "Echoes the text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "big", "description": "A long text.",
     "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]}},
    {"name": "garbage", "description": "Answers with a line that is not JSON.", "inputSchema": {"type": "object"}},
    {"name": "malformed", "description": "Answers with a malformed error.", "inputSchema": {"type": "object"}},
    {"name": "not_a_result", "description": "Answers with something else.", "inputSchema": {"type": "object"}},
    {"name": "die", "description": "Exits mid-call.", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "Takes its time.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]}},
    {"name": "add_tool", "description": "Adds a tool.", "inputSchema": {"type": "object"}},
    {"name": "image", "description": "Returns an image.", "inputSchema": {"type": "object"}},
    {"name": "structured", "description": "Returns structured content.", "inputSchema": {"type": "object"},
     "outputSchema": {"type": "object", "properties": {"answer": {"type": "integer"}}}},
    {"name": "failing", "description": "Always fails.", "inputSchema": {"type": "object"}},
    {"name": "chatty", "description": "Logs and reports progress.",
     "inputSchema": {"type": "object", "properties": {"label": {"type": "string"}, "count": {"type": "integer"}},
                     "required": ["label", "count"]}},
    {"name": "ask", "description": "Asks the client.",
     "inputSchema": {"type": "object", "properties": {"method": {"type": "string"}, "params": {"type": "object"}},
                     "required": ["method", "params"]}},
]
# Requests sent to the client, by id: an event, then its answer.
asked = {}
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def log(event):
    if LOG:
        with open(LOG, "a") as f:
            f.write(event + "\n")


def write(text):
    with lock:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def send(message):
    write(json.dumps(message))


def answer(id, result):
    send({"jsonrpc": "2.0", "id": id, "result": result})


def text(t, is_error=False):
    return {"content": [{"type": "text", "text": t}], "isError": is_error}


def chatty(id, args, meta):
    label, count = args["label"], int(args["count"])
    for level in ("info", "warning"):
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": level, "logger": "fake", "data": "%s says %s" % (label, level)}})
    token = meta.get("progressToken")
    for done in range(1, count + 1):
        if token is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": done, "total": count, "message": label}})
    answer(id, text(label))


def ask(id, args, meta):
    request_id = "ask-%s" % id
    done = threading.Event()
    asked[request_id] = [done, None]
    params = dict(args["params"])
    if meta.get("progressToken") is not None:
        params["_meta"] = {"progressToken": meta["progressToken"]}
    send({"jsonrpc": "2.0", "id": request_id, "method": args["method"], "params": params})
    done.wait(30)
    answer(id, text(json.dumps(asked.pop(request_id)[1])))


def call(id, name, args, meta):
    if name == "chatty":
        chatty(id, args, meta)
    elif name == "ask":
        ask(id, args, meta)
    elif name == "echo":
        answer(id, text(args["text"]))
    elif name == "big":
        n = int(args["bytes"])
        # Written in pieces, so the server never holds 200 MB either; the id comes last, as
        # the TypeScript SDK writes it.
        with lock:
            sys.stdout.write('{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"')
            chunk = "x" * (1 << 20)
            while n > 0:
                sys.stdout.write(chunk[: min(n, len(chunk))])
                n -= len(chunk)
            sys.stdout.write('"}]},"id":%s}\n' % json.dumps(id))
            sys.stdout.flush()
    elif name == "garbage":
        write("this is not json")
    elif name == "malformed":
        send({"jsonrpc": "2.0", "id": id, "error": "it broke"})
    elif name == "not_a_result":
        answer(id, {"weather": "sunny"})
    elif name == "die":
        sys.stderr.write("fake: dying on purpose\n")
        sys.stderr.flush()
        os._exit(7)
    elif name == "slow":
        deadline = time.time() + float(args["seconds"])
        while time.time() < deadline:
            if id in cancelled:
                log("cancelled %s" % json.dumps(id))
                return
            time.sleep(0.01)
        answer(id, text("done"))
    elif name == "add_tool":
        if not any(t["name"] == "added" for t in tools):
            tools.append({"name": "added", "description": "Added at run time.", "inputSchema": {"type": "object"}})
        slow_list.set()
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        answer(id, text("added a tool"))
    elif name == "added":
        answer(id, text("the added tool ran"))
    elif name == "image":
        answer(id, {"content": [{"type": "text", "text": "a dot:"},
                                {"type": "image", "data": PNG, "mimeType": "image/png"}]})
    elif name == "structured":
        answer(id, {"content": [{"type": "text", "text": json.dumps({"answer": 42})}],
                    "structuredContent": {"answer": 42}})
    elif name == "failing":
        answer(id, text("the account is locked", is_error=True))
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "Unknown tool: " + name}})


def main():
    log("started %d" % os.getpid())
    if "--grandchild" in sys.argv:
        child = subprocess.Popen(["sleep", "1000"])
        log("grandchild %d" % child.pid)
    if "--crash" in sys.argv:
        sys.stderr.write("fake: cannot open the database\n")
        sys.stderr.flush()
        sys.exit(3)
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        id = message.get("id")
        if method == "initialize":
            answer(id, {"protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": {"tools": {"listChanged": True}},
                        "serverInfo": {"name": "fake", "version": "1.0"}})
        elif method == "tools/list":
            if "--hang-on-list" in sys.argv:
                continue
            if slow_list.is_set():
                slow_list.clear()
                listing = list(tools)
                threading.Thread(target=lambda: (time.sleep(0.5), answer(id, {"tools": listing})),
                                 daemon=True).start()
                continue
            answer(id, {"tools": tools})
        elif method == "tools/call":
            params = message["params"]
            threading.Thread(target=call, args=(id, params["name"], params.get("arguments") or {},
                                                params.get("_meta") or {}),
                             daemon=True).start()
        elif method == "notifications/cancelled":
            cancelled.add(message["params"]["requestId"])
        elif method == "ping":
            answer(id, {})
        elif method is None and id in asked:
            asked[id][1] = message
            asked[id][0].set()
        elif id is not None and method is not None:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})


main()
