#!/usr/bin/env python3
"""Per-call overhead of `sbx mcp` against `sbxsh -c` (bench/mcp.md says how to read it).

For each local runtime that starts here, in a fresh isolated session (its own HOME, state
and runtime directories, a one-file git repository), after one warming call:
  - `sbxsh -c LINE`, a process per call, as an agent's shell tool runs it;
  - the same LINE as an MCP tools/call of execute_command to one `sbx mcp` server started
    and initialized once, from the request's write to its answer's last byte.
LINE is `true` (the sandbox: nothing to print), `echo hi` (the host: builtin glue) and
`yes | head -c 1048576` (the sandbox: 1 MiB of output, which the server caps at 30,000
characters and sbxsh -c writes to /dev/null).
Prints milliseconds per call (median, p90, mean) and the server's extra over `sbxsh -c`.
Not a test: no assertions.

    bench/mcp.py [--runs 50] [--runtimes bwrap,runsc] [BINDIR]   (BINDIR: sbxsh, sbx, sbx-mcp)
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=50)
ap.add_argument("--runtimes", default="bwrap,runsc")
ap.add_argument("bindir", nargs="?", default=".")
a = ap.parse_args()
bindir = os.path.abspath(a.bindir)
SBXSH, SBX = os.path.join(bindir, "sbxsh"), os.path.join(bindir, "sbx")
LINES = [("true", "sandbox"), ("echo hi", "host"), ("yes | head -c 1048576", "sandbox")]


def ms(xs):
    xs = sorted(xs)
    return (statistics.median(xs) * 1e3, xs[int(len(xs) * 0.9) - 1] * 1e3,
            statistics.mean(xs) * 1e3)


def env_for(tmp, runtime):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_SANDBOX_")}
    for d in ("home", "run", "state", "code"):
        os.makedirs(os.path.join(tmp, d), mode=0o700)
    e.update(HOME=f"{tmp}/home", XDG_RUNTIME_DIR=f"{tmp}/run",
             AGENT_SANDBOX_STATE_DIR=f"{tmp}/state", AGENT_SANDBOX_CODE_DIRS=f"{tmp}/code",
             AGENT_SANDBOX_SESSION=f"bench-mcp-{runtime}-{os.getpid()}",
             AGENT_SANDBOX_LOCAL_RUNTIME=runtime)
    code = f"{tmp}/code"
    subprocess.run(["git", "init", "-q", code], check=True)
    with open(f"{code}/a.txt", "w") as f:
        f.write("a\n")
    return e, code


class Server:
    def __init__(self, env, cwd):
        self.p = subprocess.Popen([SBX, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=env, cwd=cwd)
        self.n = 0
        self.ask("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}})
        self.p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def ask(self, method, params):
        self.n += 1
        msg = {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        r = json.loads(line)
        if r.get("id") != self.n or "result" not in r:
            sys.exit(f"bench/mcp.py: unexpected answer: {line[:200]!r}")
        return r["result"]

    def run(self, line):
        r = self.ask("tools/call", {"name": "execute_command", "arguments": {"command": line}})
        if r["structuredContent"]["exit_code"] != 0:
            sys.exit(f"bench/mcp.py: {line!r} failed: {r}")

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def usable(runtime):
    if not shutil.which("runsc" if runtime == "runsc" else "bwrap"):
        return False
    if runtime == "bwrap":
        return subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-user", "--unshare-pid",
                               "true"], capture_output=True).returncode == 0
    return True


print(f"# sbx mcp against sbxsh -c: ms per call, {a.runs} calls each, a warm session")
print(f"{'runtime':8} {'line':22} {'route':8} {'sbxsh -c (med/p90/mean)':>26} "
      f"{'sbx mcp (med/p90/mean)':>26} {'extra (med)':>11}")
for runtime in a.runtimes.split(","):
    if not usable(runtime):
        print(f"{runtime:8} (cannot start here)")
        continue
    tmp = tempfile.mkdtemp(prefix="bench-mcp.")
    env, code = env_for(tmp, runtime)
    try:
        subprocess.run([SBXSH, "-c", "true"], env=env, cwd=code, check=True)   # the sandbox
        srv = Server(env, code)
        srv.run("true")                                                         # its handle
        for line, route in LINES:
            shell, mcp = [], []
            for _ in range(a.runs):   # interleaved, so that a busy moment hits both
                t = time.perf_counter()
                subprocess.run([SBXSH, "-c", line], env=env, cwd=code, check=True,
                               stdout=subprocess.DEVNULL)
                shell.append(time.perf_counter() - t)
                t = time.perf_counter()
                srv.run(line)
                mcp.append(time.perf_counter() - t)
            s, m = ms(shell), ms(mcp)
            print(f"{runtime:8} {line:22} {route:8} {s[0]:8.1f} {s[1]:8.1f} {s[2]:8.1f} "
                  f"{m[0]:8.1f} {m[1]:8.1f} {m[2]:8.1f} {m[0] - s[0]:+11.1f}")
        srv.close()
    finally:
        subprocess.run([SBX, "release", "--session", env["AGENT_SANDBOX_SESSION"]], env=env,
                       capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
