#!/bin/bash
# Two clients of one session whose runtime directories differ (an MCP client that starts
# `sbx mcp` without XDG_RUNTIME_DIR, a terminal with it) share one holder: the second finds
# the running holder through the session's state directory (holder.lock: "PID SOCKET")
# instead of starting another, which would push the first out. A socket recorded there that
# is not a live sbx-holder's is not followed.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"

RT=bwrap
runtime_env "rundirs-$$"
export AGENT_SANDBOX_LOCAL_RUNTIME=bwrap
trap 'local_teardown; tap_cleanup' EXIT
other=$SBX_TEST_TMP/run2
mkdir -p "$other"
holder_pid() { "$SBX" status --json 2>/dev/null | sed -n 's/.*"holder_pid":\([0-9]*\).*/\1/p'; }
log=$XDG_RUNTIME_DIR/sbxsh/$AGENT_SANDBOX_SESSION.log

is "$("$SBXSH" -c 'echo one | cat')" one "a first client starts the session's holder"
first=$(holder_pid)
ok "...which serves (pid $first)" test -n "$first"
is "$(XDG_RUNTIME_DIR=$other "$SBXSH" -c 'echo two | cat')" two \
   "a client with another runtime directory runs its command"
is "$(XDG_RUNTIME_DIR=$other holder_pid)" "$first" "...through the same holder"
is "$(holder_pid)" "$first" "...which still serves the first client's directory"
unlike "$(cat "$log" 2>/dev/null)" "asking it to go" "...and no second holder pushed it out"
ok "no socket was made in the other directory" test ! -e "$other/sbxsh/$AGENT_SANDBOX_SESSION.sock"

# A recorded socket that no live holder serves is not followed: the lock names a pid that
# is not an sbx-holder (this shell's), with the real socket
lock=$AGENT_SANDBOX_STATE_DIR/$AGENT_SANDBOX_SESSION/holder.lock
"$SBX" release >/dev/null 2>&1
sleep 0.2
python3 -m http.server --bind 127.0.0.1 0 >/dev/null 2>&1 &   # any process that is no holder
decoy=$!
sock=$SBX_TEST_TMP/decoy.sock
python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(60)' "$sock" &
lsn=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
mkdir -p "${lock%/*}"
printf '%s %s\n' "$decoy" "$sock" >"$lock"
is "$(XDG_RUNTIME_DIR=$other timeout 60 "$SBXSH" -c 'echo three | cat' 2>&1)" three \
   "a lock naming a process that is no holder: a holder of its own is started"
kill "$decoy" "$lsn" 2>/dev/null
XDG_RUNTIME_DIR=$other "$SBX" release >/dev/null 2>&1
done_testing
