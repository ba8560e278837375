#!/usr/bin/env python3
"""Swaps DIR/agent.sock between the agent's real socket and a symlink to a
socket of ours (HOST_SOCK), as fast as it goes, until STOP exists; counts
the connections that reach HOST_SOCK and prints "host socket connections: N".
Used by backend.t: a holder that checks the socket and then connects by path
is steered to HOST_SOCK by the swap; one that connects through the fd it
checked never is. The real socket is back in place at exit."""
import os
import socket
import sys
import threading

d, host_sock, ready, stop = sys.argv[1:5]
real = os.path.join(d, "agent.sock")
keep = os.path.join(d, ".sock.keep")
tmp = os.path.join(d, ".swap.tmp")

srv = socket.socket(socket.AF_UNIX)
srv.bind(host_sock)
srv.listen(64)
srv.settimeout(0.2)
hits = 0
done = False


def accept():
    global hits
    while not done:
        try:
            c, _ = srv.accept()
        except socket.timeout:
            continue
        hits += 1
        c.close()


t = threading.Thread(target=accept, daemon=True)  # (a failed start must not hang the test)
t.start()
os.link(real, keep)
open(ready, "w").close()
i = 0
while not os.path.exists(stop):
    if i % 2:
        os.link(keep, tmp)
    else:
        os.symlink(host_sock, tmp)
    os.rename(tmp, real)
    i += 1
os.link(keep, tmp)
os.rename(tmp, real)
os.unlink(keep)
done = True
t.join()
print("host socket connections: %d" % hits)
