#!/bin/bash
# A stuck or dead holder never makes `sbx release` hang, and removing the runtime
# directory's socket (a tmp cleaner) never leads to two holders serving one sandbox.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"
local_env
# shellcheck disable=SC2154 # p is the loop's own variable, in the trap's string
trap 'for p in ${stopped:-}; do kill -CONT "$p" 2>/dev/null; done; local_teardown; tap_cleanup' EXIT

holder_pid() { "$SBX" status --json 2>/dev/null | sed -n 's/.*"holder_pid":\([0-9]*\).*/\1/p'; }
sandbox_pid() { "$SBX" status --json 2>/dev/null | sed -n 's/.*"sandbox":{[^}]*"pid":\([0-9]*\).*/\1/p'; }
gone() { # PID: not running (a zombie counts as gone)
    local st
    st=$(ps -o stat= -p "$1" 2>/dev/null)
    [ -z "$st" ] || [ "${st#Z}" != "$st" ]
}

for rt in bwrap runsc; do
    why=$(runtime_skip_reason "$rt")
    if [ -n "$why" ]; then
        skip "release on $rt: $why"
        continue
    fi
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=rel-$rt-$$
    is "$("$SBXSH" -c 'id -u >/dev/null; echo up')" "up" "$rt: a session"
    h=$(holder_pid) sb=$(sandbox_pid)
    # A holder that stops answering (here: stopped by a signal).
    kill -STOP "$h"
    stopped=$h
    out=$(timeout 60 "$SBX" release --timeout 2 2>&1)
    rc=$?
    is "$rc" 125 "$rt: sbx release --timeout 2 on a stuck holder gives up with 125"
    like "$out" "release --force|does not answer" "$rt: ...saying what is wrong and what to do"
    out=$(timeout 60 "$SBX" release --force 2>&1)
    is "$?" 0 "$rt: sbx release --force frees the session"
    like "$out" "killed the holder" "$rt: ...killing the holder"
    ok "$rt: ...the holder is gone" gone "$h"
    ok "$rt: ...the sandbox is gone" gone "$sb"
    ok "$rt: ...and the session's state" test ! -e "$AGENT_SANDBOX_STATE_DIR/$AGENT_SANDBOX_SESSION"
    stopped=
    is "$("$SBXSH" -c 'id -u >/dev/null; echo again')" "again" "$rt: the next command starts afresh"

    # A tmp cleaner removes the socket and start lock while the holder runs.
    "$SBXSH" -c 'sleep 60 >/dev/null 2>&1 & echo started' >/dev/null
    h=$(holder_pid) sb=$(sandbox_pid)
    rm -f "$XDG_RUNTIME_DIR/sbxsh/$AGENT_SANDBOX_SESSION.sock" "$XDG_RUNTIME_DIR/sbxsh/$AGENT_SANDBOX_SESSION.lock"
    is "$("$SBXSH" -c 'pgrep -c sleep')" "1" "$rt: after the socket is removed, the next command reaches the same sandbox"
    for _ in $(seq 100); do gone "$h" && break; sleep 0.1; done
    ok "$rt: ...and the old holder has gone: one holder per session" gone "$h"
    is "$(sandbox_pid)" "$sb" "$rt: ...the sandbox is the same one"
    out=$("$SBX" release 2>&1)
    rc=$?
    is "$rc" 0 "$rt: sbx release of the session: 0" || diag "sbx release said: $out"
    out=$("$SBX" release --force 2>&1)
    rc=$?
    is "$rc" 1 "$rt: sbx release --force of a session that is not there: 1" ||
        diag "sbx release --force said: $out"
done
done_testing
