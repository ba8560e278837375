#!/usr/bin/env python3
"""Drives `sbx mcp` with raw JSON-RPC lines, as a hostile or careless client would, and
writes what came back as JSON for tests/mcp/raw.t to check.

    rawrpc.py RESULT.json SBX [ARGS...]

The server runs with the cwd and environment this is given. Every byte of its stdout is
kept: "lines_ok" says whether each line was a JSON-RPC 2.0 message (valid UTF-8, one JSON
object, "jsonrpc": "2.0"), "bad_lines" lists the others. "responses" maps each answered id
to its message (the last, for null), "null_errors" lists the codes of the errors with a
null id, "order" lists the ids in the order answered, "exit" is the server's exit
status after its stdin was closed, "exited" whether it exited within 300 s of that.
"""
import json
import os
import select
import subprocess
import sys
import time

result_path, argv = sys.argv[1], sys.argv[2:]
proc = subprocess.Popen(argv + ["mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
out = bytearray()
responses, order, bad, null_errors, notifications = {}, [], [], [], []


def send(obj_or_bytes):
    data = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode()
    proc.stdin.write(data + b"\n")
    proc.stdin.flush()


def pump(until_id, limit=300):
    """Reads answers until one for until_id arrives (None: until end of output)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if until_id is not None and until_id in responses:
            return True
        r, _, _ = select.select([proc.stdout], [], [], 1)
        if not r:
            continue
        chunk = os.read(proc.stdout.fileno(), 1 << 20)
        if not chunk:
            return until_id is None
        out.extend(chunk)
        while b"\n" in out:
            line, _, rest = bytes(out).partition(b"\n")
            out[:] = rest
            try:
                msg = json.loads(line.decode("utf-8", errors="strict"))
                if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                    raise ValueError("not JSON-RPC 2.0")
            except Exception:
                bad.append(line.decode("utf-8", errors="backslashreplace"))
                continue
            if "method" in msg and "id" not in msg:     # a notification of the server's
                notifications.append(msg)
                order.append("progress:" + str(msg.get("params", {}).get("progressToken")))
                continue
            key = json.dumps(msg.get("id"))
            if msg.get("id") is None:
                null_errors.append(msg.get("error", {}).get("code"))
            responses[key] = msg
            order.append(key)
    return False


def pump_until(cond, limit=300):
    """Reads until cond() holds."""
    deadline = time.monotonic() + limit
    while not cond() and time.monotonic() < deadline:
        pump("never", 1)
    return cond()


def ask(obj, limit=300):
    send(obj)
    return pump(json.dumps(obj["id"]), limit)


def req(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return m


def call(i, command, timeout=None):
    args = {"command": command}
    if timeout is not None:
        args["timeout"] = timeout
    return req(i, "tools/call", {"name": "execute_command", "arguments": args})


ask(req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "rawrpc", "version": "1"}}))
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
ask(req(2, "ping"))
# malformed lines, each answered with the error it deserves (id null when unreadable)
send(b'{"jsonrpc": "2.0", "id": 3, "method": ')
send(b'{"jsonrpc":"2.0","id":"bad-utf8","method":"ping","params":{"x":"\xff"}}')
send(b'[{"jsonrpc":"2.0","id":4,"method":"ping"}]')
ask(req("unknown", "no/such/method"))
ask(req(5, "tools/call", {"name": "no_such_tool", "arguments": {}}))
ask(req(6, "tools/call", {"name": "execute_command", "arguments": {}}))
ask(req(7, "tools/call", {"name": "execute_command", "arguments": {"command": "true", "timeout": -1}}))
ask({"jsonrpc": "2.0", "id": 8, "method": "ping", "params": 3})
# a line over 8 MiB: one parse error, and the server reads on
send(b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"' + b"x" * (9 << 20) + b'"}}')
ask(req(10, "ping"))
# what a command writes: bytes that are not UTF-8, NUL, a terminal escape, a fake message
ask(call(11, r"printf 'a\377\000b\n'; printf '\033[31mred\n' >&2; "
             r"""printf '{"jsonrpc":"2.0","id":99,"result":{}}\n'; exit 7"""))
ask(call(12, "sleep 30", timeout=1))
ask(call(42, "echo host-side; echo to-err >&2"))   # routed to the host (builtin glue)
# two calls at once: the first waits for a file the second makes, so it ends only if the
# two run concurrently (else its timeout stops it)
send(call(30, "until [ -e flag-30 ]; do sleep 0.1; done; echo a", timeout=300))
send(call(31, "touch flag-30; echo b"))
pump(json.dumps(30), 300)
ask(req(13, "tools/list"))
# progress: a call with a progressToken, waiting for a file, gets notifications/progress
# until the file is made (by a second call sent once the first notification is in)
c40 = call(40, "until [ -e flag-40 ]; do sleep 0.1; done; echo done-40", timeout=300)
c40["params"]["_meta"] = {"progressToken": "p40"}
send(c40)
pump_until(lambda: any(n["params"].get("progressToken") == "p40" for n in notifications))
ask(call(41, "touch flag-40"))
pump(json.dumps(40), 300)
# a call cancelled at once (perhaps before its run began), then one answered
send(call(20, "sleep 3000"))
send({"jsonrpc": "2.0", "method": "notifications/cancelled",
      "params": {"requestId": 20, "reason": "test"}})
ask(req(21, "ping"))
ask(req(14, "tools/call", {"name": "session_status"}))
ask(req(15, "tools/call", {"name": "release_session", "arguments": {}}))
# versions: one this server does not speak gets its newest; an old one is taken, and its
# results have no structuredContent (2025-06-18 brought it)
init = {"capabilities": {}, "clientInfo": {"name": "rawrpc", "version": "1"}}
ask(req(16, "initialize", {"protocolVersion": "1999-01-01", **init}))
ask(req(17, "initialize", {"protocolVersion": "2024-11-05", **init}))
ask(req(18, "tools/list"))
# a call still running at the end of input is answered, then the server exits
send(call(22, "sleep 1; echo late"))
proc.stdin.close()
exited = pump(None, 300)
try:
    rc = proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    proc.kill()
    rc = proc.wait()
    exited = False
stderr = proc.stderr.read().decode("utf-8", errors="backslashreplace")
with open(result_path, "w") as f:
    json.dump({"lines_ok": not bad and not out, "bad_lines": bad, "responses": responses,
               "order": order, "null_errors": null_errors, "notifications": notifications, "exit": rc, "exited": exited, "stderr": stderr[-2000:]}, f)
