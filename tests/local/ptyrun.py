#!/usr/bin/python3
"""Runs a command on a new pseudo-terminal (33 rows, 101 columns), as if a
person ran it: ptyrun.py [--input TEXT] -- CMD [ARG...]. TEXT (with \\r for
Enter) is typed after a second. Prints what the terminal showed, CR LF as
LF, and exits with the command's status."""
import os
import pty
import select
import struct
import sys
import fcntl
import termios
import time

args = sys.argv[1:]
typed = b''
if args[:1] == ['--input']:
    typed = args[1].encode().decode('unicode_escape').encode('latin-1')
    args = args[2:]
if args[:1] == ['--']:
    args = args[1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(args[0], args)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 33, 101, 0, 0))
out = b''
deadline = time.time() + 60
sent = not typed
start = time.time()
while time.time() < deadline:
    if not sent and time.time() - start > 1.0:
        os.write(fd, typed)
        sent = True
    r, _, _ = select.select([fd], [], [], 0.1)
    if not r:
        continue
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    out += data
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out.replace(b'\r\n', b'\n'))
sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, 'waitstatus_to_exitcode')
         else status >> 8)
