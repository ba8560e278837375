#!/usr/bin/python3
"""OpenHands' terminal tool without tmux (its SubprocessTerminal, the way a program on its
SDK points it at a shell: terminal_type="subprocess", shell_path=SHELL), as read in
OpenHands/software-agent-sdk: SHELL -i on a new pseudo-terminal in its own session, with
PS1 (the JSON prompt of openhands.py), PS2="" and TERM=xterm-256color in its environment;
the set-up line written to it; before each command, what was read up to the last PS1 block
dropped; each command written with a newline (C-c as the byte ^C, no newline); the output
read raw, CRs removed; done when a new block whose JSON parses has come.

  openhands_pty.py SHELL [SECONDS:]CMD...   (or wait:TEXT, until TEXT shows, for a C-c)

Prints one JSON line per CMD: status ("completed", or "timeout" when no new block came
within SECONDS, 120 by default), exit_code, working_dir, and output (between the last two
blocks, escape sequences and the echoed command removed).
"""
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openhands import BEGIN, END, blocks, ps1  # noqa: E402

ESC = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[=>]")

shell, commands = sys.argv[1], sys.argv[2:]
env = dict(os.environ, PS1=ps1(), PS2="", TERM="xterm-256color")
master, slave = pty.openpty()
proc = subprocess.Popen([shell, "-i"], stdin=slave, stdout=slave, stderr=slave, env=env,
                        preexec_fn=os.setsid, close_fds=True)
os.close(slave)
buf = ""


def pump(seconds):
    global buf
    r, _, _ = select.select([master], [], [], seconds)
    if r:
        try:
            buf += os.read(master, 65536).decode("utf-8", "replace").replace("\r", "")
        except OSError:
            pass


def wait(pred, seconds):
    end = time.time() + seconds
    while time.time() < end:
        pump(0.1)
        if pred():
            return True
    return False


def clear():
    # drops what came before the last block (its clear_screen), once a block is there
    global buf
    if not wait(lambda: blocks(buf) and buf.rstrip().endswith(END), 60):
        sys.exit("openhands_pty.py: no prompt block came: " + repr(buf))
    buf = buf[buf.rfind(BEGIN):]


os.write(master, ("set +H; export PROMPT_COMMAND='export PS1=\"%s\"'; export PS2=\"\"\n" % ps1()).encode())
# the set-up line has run once a block comes after its echo
wait(lambda: blocks(buf) and blocks(buf)[-1][0].start() > buf.rfind("export PS2")
     and buf.rstrip().endswith(END), 60)
clear()
for spec in commands:
    if spec.startswith("wait:"):
        # not OpenHands': the test waits (bounded) for a running command's output, so that a
        # C-c under load comes after the command started, as a person's would
        text = spec[len("wait:"):]
        if not wait(lambda: text in buf[buf.rfind(END):], 60):
            sys.exit("openhands_pty.py: no " + repr(text) + " came: " + repr(buf))
        continue
    seconds, command = 120.0, spec
    m = re.match(r"^([0-9.]+):(.*)$", spec, re.DOTALL)
    if m:
        seconds, command = float(m.group(1)), m.group(2)
    before = buf
    n = len(blocks(before))
    key = command == "C-c"
    os.write(master, b"\x03" if key else (command + "\n").encode())
    done = wait(lambda: len(blocks(buf)) > n or (buf != before and buf.rstrip().endswith(END)), seconds)
    b = blocks(buf)
    meta = b[-1][1] if done and b else {}
    if done and len(b) >= 2:
        out = buf[b[-2][0].end() + 1:b[-1][0].start()]
    elif b:
        out = buf[b[-1][0].end() + 1:]
    else:
        out = buf
    out = ESC.sub("", out).lstrip()
    if out.startswith(command):
        out = out[len(command):]
    print(json.dumps({
        "status": "completed" if done else "timeout",
        "exit_code": int(meta["exit_code"]) if "exit_code" in meta else None,
        "working_dir": meta.get("working_dir"),
        "output": out.strip(),
    }), flush=True)
    if done:
        clear()
os.write(master, b"exit\n")
try:
    proc.wait(timeout=30)
except subprocess.TimeoutExpired:
    os.killpg(proc.pid, signal.SIGKILL)
