#!/usr/bin/python3
"""OpenHands' terminal protocol, as its TmuxTerminal and TerminalSession run it (read in
OpenHands/software-agent-sdk, openhands-tools/openhands/tools/terminal/), driving whatever
shell runs in pane 0 of the tmux server at SOCKET:

  openhands.py SOCKET init                # its set-up line, then its screen clear
  openhands.py SOCKET run CMD [SECONDS]   # a command, as its execute() sends and reads it
  openhands.py SOCKET key C-c [SECONDS]   # a special key (no Enter), as its C-c

`run` and `key` print one JSON object: status ("completed", or "timeout" when no new PS1
block came within SECONDS, its hard timeout), exit_code, working_dir, username, hostname
(from the last PS1 block, or null), and output (the text between the last two blocks
without the echoed command, as OpenHands gives it to the model). After a completed
command the screen and history are cleared, as OpenHands does before the next one.

Its PS1 (CmdOutputMetadata.to_ps1_prompt) is JSON between ###PS1JSON### and ###PS1END###
lines, set by PROMPT_COMMAND on each prompt, so exit_code is $? and working_dir $(pwd) as
the shell sees them; a block counts only if its JSON parses. Keys go as libtmux sends them:
`send-keys TEXT` (not -l: a newline in TEXT is typed as Enter), then `send-keys Enter`.

One difference, for a test under load: OpenHands counts a command done when the screen
ends with ###PS1END### even before the screen changed, so a poll that comes before the
shell echoed the command would see the previous prompt; here that needs a changed screen.
"""
import json
import re
import subprocess
import sys
import time

BEGIN, END = "###PS1JSON###", "###PS1END###"
BLOCK = re.compile("^" + BEGIN + "(.*?)" + END, re.DOTALL | re.MULTILINE)


def ps1():
    fields = {
        "pid": "$!",
        "exit_code": "$?",
        "username": r"\u",
        "hostname": r"\h",
        "working_dir": r"$(pwd)",
        "py_interpreter_path": r'$(command -v python || echo "")',
    }
    body = json.dumps(fields, indent=2).replace('"', r"\"")
    return "\n" + BEGIN + "\n" + body + "\n" + END + "\n"


def tmux(sock, *args):
    return subprocess.run(["tmux", "-S", sock] + list(args), check=True,
                          stdout=subprocess.PIPE, universal_newlines=True).stdout


def screen(sock, history=True):
    args = ["capture-pane", "-J", "-p"] + (["-S", "-"] if history else [])
    return "\n".join(line.rstrip() for line in tmux(sock, *args).split("\n"))


def blocks(text):
    found = []
    for m in BLOCK.finditer(text):
        try:
            found.append((m, json.loads(m.group(1))))
        except ValueError:
            pass
    return found


def send(sock, text, enter=True):
    tmux(sock, "send-keys", text)
    if enter:
        tmux(sock, "send-keys", "Enter")


def wait(pred, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.1)
    return False


def clear(sock):
    # its clear_screen: `clear` typed, then tmux's clear-history; here it waits until the
    # screen shows just one prompt (OpenHands sleeps 0.1 s).
    send(sock, "clear")

    def cleared():
        s = screen(sock, history=False).strip()
        b = blocks(s)
        return len(b) == 1 and s.startswith(BEGIN) and s.endswith(END)
    if not wait(cleared, 60):
        sys.exit("openhands.py: the screen did not clear:\n" + screen(sock))
    tmux(sock, "clear-history")


def init(sock):
    send(sock, "set +H; export PROMPT_COMMAND='export PS1=\"%s\"'; export PS2=\"\"" % ps1())
    clear(sock)


def execute(sock, command, seconds, special):
    before = screen(sock)
    n = len(blocks(before))
    send(sock, command, enter=not special)
    state = {}

    def done():
        s = screen(sock)
        state["s"] = s
        return len(blocks(s)) > n or (s != before and s.rstrip().endswith(END))
    completed = wait(done, seconds)
    s = state.get("s", before)
    b = blocks(s)
    meta = b[-1][1] if completed and b else {}
    if len(b) >= 2:
        out = s[b[-2][0].end() + 1:b[-1][0].start()] if completed else s[b[-1][0].end() + 1:]
    elif b:
        out = s[:b[0][0].start()] if completed else s[b[0][0].end() + 1:]
    else:
        out = s
    out = out.lstrip()
    if out.startswith(command.lstrip()):
        out = out[len(command.lstrip()):]
    result = {
        "status": "completed" if completed else "timeout",
        "exit_code": int(meta["exit_code"]) if "exit_code" in meta else None,
        "working_dir": meta.get("working_dir"),
        "username": meta.get("username"),
        "hostname": meta.get("hostname"),
        "output": out.strip(),
    }
    print(json.dumps(result))
    if completed:
        clear(sock)


def main():
    sock, action = sys.argv[1], sys.argv[2]
    if action == "init":
        init(sock)
    elif action in ("run", "key"):
        seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 120
        execute(sock, sys.argv[3], seconds, action == "key")
    else:
        sys.exit("openhands.py: unknown action " + action)


if __name__ == "__main__":
    main()
