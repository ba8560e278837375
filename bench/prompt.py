#!/usr/bin/env python3
"""A command typed at the interactive prompt, through a real terminal (tmux), in one run: bash
on the host and sbxsh on each local runtime, for one or more builds (e.g. main's and this
tree's), beside a one-shot `sbxsh -c true` of the same build and runtime (issue 27's target:
the prompt within 20 ms of it).

  bench/prompt.py [--runs N] [--runtimes bwrap,runsc] [--command CMD] [--ps1 PS1] [--dir DIR]
                  DIR [DIR...]

Each DIR is a built tree (`make`); builds are named A, B, C... in that order. Every column
is a tmux window at its prompt (PS1, the same for all, ending in 'P> ': default 'P> '; one
with a `$`, such as Debian's '${debian_chroot:+($debian_chroot)}\\u@\\h:\\w P> ', has the
sandbox's bash expand it); a sample is the time from `tmux send-keys CMD Enter` until the
line's echo and then the next prompt have come out of the window (tmux pipe-pane into a FIFO read
here), so tmux's own relay and the send-keys process are in every column, bash's included:
read the differences to bash and the ratios. The columns' runs are interleaved (one of each
per round, after 3 warm-up rounds), so that a machine whose load swings weighs on every
column alike. Prints a Markdown table of medians [quartiles]. Not a test: no assertions.
"""
import argparse
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def parse_args():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip())
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--runtimes", default="bwrap,runsc")
    ap.add_argument("--command", default="true")
    ap.add_argument("--ps1", default="P> ")
    ap.add_argument("--dir", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else
                    os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    if not a.ps1.endswith("P> "):
        ap.error("--ps1 must end with 'P> ' (how the next prompt is told)")
    return a


class Window:
    """A tmux window running one shell, its output read from a FIFO."""

    def __init__(self, bench, name, argv, env):
        self.bench, self.name, self.buf = bench, name, b""
        fifo = os.path.join(bench.work, "fifo-" + name)
        os.mkfifo(fifo)
        cmd = " ".join(shquote(w) for w in argv)
        envs = " ".join("'%s=%s'" % (k, v) for k, v in env.items())
        bench.tmux("new-window", "-d", "-n", name, "env %s %s" % (envs, cmd))
        bench.tmux("pipe-pane", "-O", "-t", ":" + name, "cat > '%s'" % fifo)
        self.fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

    def wait_for(self, pat, timeout=120.0):
        end = time.monotonic() + timeout
        while pat not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                sys.exit("%s: %s: no %r in %r" % (sys.argv[0], self.name, pat, self.buf[-300:]))
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    d = os.read(self.fd, 65536)
                except BlockingIOError:
                    continue
                if not d:
                    time.sleep(0.01)   # the writer not there yet (pipe-pane starts it)
                self.buf += d
        self.buf = self.buf[self.buf.index(pat) + len(pat):]

    def start(self):
        # the shell's own first prompt, whatever it is, then ours
        self.bench.keys(self.name, "PS1=" + shquote(self.bench.a.ps1))
        self.wait_for(b"\n")
        self.wait_for(b"P> ")

    def sample(self, command):
        t = time.perf_counter()
        self.bench.keys(self.name, command)
        self.wait_for(command.encode() + b"\r\n")   # the line, echoed and entered
        self.wait_for(b"P> ")                         # the next prompt
        return time.perf_counter() - t


def shquote(w):
    return "'" + w.replace("'", "'\\''") + "'"


class Bench:
    def __init__(self, a):
        self.a = a
        self.work = tempfile.mkdtemp(prefix="sbx-prompt.", dir=a.dir)
        self.sock = os.path.join(self.work, "tmux.sock")
        self.env = dict(os.environ)
        for k in list(self.env):
            if k.startswith("AGENT_SANDBOX_") or k in ("TMUX", "PROMPT_COMMAND"):
                del self.env[k]
        self.env.update(HOME=os.path.join(self.work, "home"),
                        XDG_RUNTIME_DIR=os.path.join(self.work, "run"),
                        XDG_STATE_HOME=os.path.join(self.work, "state-home"),
                        AGENT_SANDBOX_STATE_DIR=os.path.join(self.work, "state"),
                        AGENT_SANDBOX_IDLE_TIMEOUT="15m", TERM="xterm-256color")
        for d in ("home", "run", "state"):
            os.makedirs(os.path.join(self.work, d))
        os.chmod(self.env["XDG_RUNTIME_DIR"], 0o700)
        self.proj = os.path.join(self.work, "proj")
        os.makedirs(self.proj)
        subprocess.run(["git", "init", "-q"], cwd=self.proj, check=True)
        for i in range(1, 1001):
            with open(os.path.join(self.proj, "f%d" % i), "w") as f:
                f.write("%d\n" % i)
        self.sessions = []

    def tmux(self, *args):
        subprocess.run(["tmux", "-S", self.sock] + list(args), check=True, env=self.env,
                       cwd=self.proj)

    def keys(self, win, text):
        self.tmux("send-keys", "-t", ":" + win, "-l", text + "\r")

    def cleanup(self):
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], stderr=subprocess.DEVNULL)
        for sbx, session in self.sessions:
            subprocess.run([sbx, "release", "--session", session], env=self.env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        shutil.rmtree(self.work, ignore_errors=True)


def fmt(us):
    return "%.1f ms" % (us / 1000) if us < 1e6 else "%.2f s" % (us / 1e6)


def med(ts):
    q = statistics.quantiles(ts, n=4) if len(ts) > 1 else [ts[0], ts[0], ts[0]]
    return statistics.median(ts), q[0], q[2]


def main():
    a = parse_args()
    builds = []
    for i, d in enumerate(a.builds):
        d = os.path.abspath(d)
        if not (os.access(os.path.join(d, "sbxsh"), os.X_OK) and
                os.access(os.path.join(d, "sbx"), os.X_OK)):
            sys.exit("%s: %s has no built sbxsh (make)" % (sys.argv[0], d))
        builds.append((chr(65 + i), d))
    rts = [rt for rt in a.runtimes.split(",") if rt]
    for rt in list(rts):
        if shutil.which(rt) is None:
            print("%s: %s is not installed: left out" % (sys.argv[0], rt), file=sys.stderr)
            rts.remove(rt)
    if shutil.which("tmux") is None:
        sys.exit("%s: tmux is not installed" % sys.argv[0])
    b = Bench(a)
    try:
        b.tmux("new-session", "-d", "-x", "200", "-y", "50", "-n", "idle", "sleep 100000")
        wins = {"bash": Window(b, "bash", ["bash", "--norc", "--noprofile", "-i"], {})}
        oneshot = {}
        for rt in rts:
            for ab, d in builds:
                col = "%s-%s" % (ab, rt)
                env = {"AGENT_SANDBOX_LOCAL_RUNTIME": rt, "AGENT_SANDBOX_SESSION": "p-" + col}
                b.sessions.append((os.path.join(d, "sbx"), "p-" + col))
                wins[col] = Window(b, col, [os.path.join(d, "sbxsh")], env)
                oneshot[col] = (dict(b.env, **env), [os.path.join(d, "sbxsh"), "-c", "true"])
        for w in wins.values():
            w.start()
        t = {c: [] for c in wins}
        t1 = {c: [] for c in oneshot}
        for r in range(-3, a.runs):
            for c, w in wins.items():
                s = w.sample(a.command)
                if r >= 0:
                    t[c].append(s * 1e6)
            for c, (env, argv) in oneshot.items():
                s = time.perf_counter()
                subprocess.run(argv, env=env, cwd=b.proj, check=True)
                if r >= 0:
                    t1[c].append((time.perf_counter() - s) * 1e6)
        bm = med(t["bash"])[0]
        print("`%s` at the prompt, through tmux (%d runs, medians [quartiles]; builds: %s)\n" %
              (a.command, a.runs, ", ".join("%s %s" % bd for bd in builds)))
        print("| shell | at the prompt | vs bash | vs build A | `sbxsh -c true` | prompt minus `-c true` |")
        print("|---|---:|---:|---:|---:|---:|")
        m, lo, hi = med(t["bash"])
        print("| bash | %s [%s-%s] | | | | |" % (fmt(m), fmt(lo), fmt(hi)))
        for rt in rts:
            base = None
            for ab, _ in builds:
                c = "%s-%s" % (ab, rt)
                m, lo, hi = med(t[c])
                m1, lo1, hi1 = med(t1[c])
                base = base if base is not None else m
                print("| %s, %s | %s [%s-%s] | +%s (%.1fx) | %s | %s [%s-%s] | %+.1f ms |" % (
                    c, rt, fmt(m), fmt(lo), fmt(hi), fmt(m - bm), m / bm if bm else 0,
                    "%.2fx" % (m / base) if ab != "A" else "", fmt(m1), fmt(lo1), fmt(hi1),
                    (m - m1) / 1000))
        with open("/proc/loadavg") as f:
            print("\nload average at the end: %s" % " ".join(f.read().split()[:3]))
    finally:
        b.cleanup()


if __name__ == "__main__":
    main()
