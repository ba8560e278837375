#!/usr/bin/python3
"""aider's way of running a command at a terminal (run_cmd_pexpect in aider/run_cmd.py,
taken when its stdin is a terminal): pexpect.spawn($SHELL, ["-i", "-c", CMD]) in the
repository, the user's terminal handed to it with interact(), what it printed kept through
interact's output filter, then close() and its exit status.

  aider.py RESULT CMD     # run on a terminal (tests/local/ptyrun.py); SHELL picks the shell

Writes to RESULT one JSON object: exit (the exit status pexpect gives aider) and output
(what the command printed, as aider keeps it: the terminal's bytes, CR LF and all).
"""
import json
import os
import sys

import pexpect

result, command = sys.argv[1], sys.argv[2]
kept = []


def keep(data):
    kept.append(data)
    return data


child = pexpect.spawn(os.environ.get("SHELL", "/bin/sh"), args=["-i", "-c", command],
                      encoding="utf-8", cwd=os.getcwd())
child.interact(output_filter=keep)
child.close()
with open(result, "w") as f:
    json.dump({"exit": child.exitstatus,
               "output": b"".join(kept).decode("utf-8", errors="replace")}, f)
