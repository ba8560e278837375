#!/bin/bash
# An idle runsc sandbox is frozen (issue 21; local/freeze.c): once nobody has used the session
# for FREEZE_AFTER seconds (the test knob SBXSH_TEST_FREEZE_AFTER shortens it to 1 s here)
# and the sandbox holds no process but the agent's own, the holder stops its host processes
# (the Sentry and its stubs: state T), and continues them before anything talks to the agent
# again. A sandbox with a background process is not frozen.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

RT=runsc
runtime_env freeze
export SBXSH_TEST_FREEZE_AFTER=1
teardown() {
    "$SBX" release >/dev/null 2>&1
    local_teardown
    tap_cleanup
}
trap teardown EXIT
T=$SBX_TEST_TMP
C() { "$SBXSH" -c "$@"; }
state_of() { # PID: its state letter (R, S, T...), empty when gone
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    s=${s##*) }
    printf '%s\n' "${s%% *}"
}
# Waits (bounded: 60 s) until process $1 is in state $2; says whether it got there.
wait_state() {
    local _
    for _ in $(seq 600); do
        [ "$(state_of "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
status_field() { "$SBX" status --json | python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

is "$(C 'echo one > f; cat f')" "one" "the session starts"
pid=$(status_field 'd["sandbox"]["pid"]')
id=$(status_field 'd["sandbox"]["id"]')
ok "the sandbox's pid is known ($pid)" test -n "$pid"
ok "once idle, the sandbox's Sentry is stopped (state T)" wait_state "$pid" T
stubs_running=0
for c in $(pgrep -P "$pid"); do
    [ "$(state_of "$c")" = T ] || stubs_running=$((stubs_running + 1))
done
is "$stubs_running" 0 "...and every process under it too"

is "$(C 'echo two >> f; cat f')" "one
two" "the next command works on the frozen sandbox's files"
is "$(status_field 'd["sandbox"]["id"]')" "$id" "...in the same sandbox"
like "$(status_field 'd["freezes"]')" '^[1-9][0-9]*$' "sbx status counts the freeze"
is "$(cat f)" "one
two" "the command's change reached the host"

# A background process keeps the sandbox from being frozen, and keeps running.
C 'nohup sh -c "i=0; while :; do i=\$((i+1)); echo \$i > /tmp/ticks; sleep 0.2; done" >/dev/null 2>&1 &'
sleep 4 # not a wait for anything: the time in which an idle sandbox would have been frozen (1 s)
isnt "$(state_of "$pid")" T "a sandbox with a background process is not frozen"
a=$(C 'cat /tmp/ticks')
for _ in $(seq 100); do b=$(C 'cat /tmp/ticks'); [ "$b" != "$a" ] && break; sleep 0.1; done
ok "...and the process keeps running ($a, then $b)" test -n "$a" -a "${b:-0}" -gt "${a:-0}"
C 'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = sh ] && kill ${p#/proc/}; done; true'
ok "once it ended, the sandbox is frozen" wait_state "$pid" T

# A holder that dies while its sandbox is frozen: the next holder continues it.
holder=$(status_field 'd["holder_pid"]')
ok "frozen again after sbx status" wait_state "$pid" T
kill -9 "$holder"
is "$(C 'cat f')" "one
two" "a new holder's command works on a sandbox its dead holder left frozen"
is "$(status_field 'd["sandbox"]["id"]')" "$id" "...the same sandbox"
ok "...frozen again once idle" wait_state "$pid" T

# sbx release of a frozen session.
"$SBX" release >"$T/rel" 2>&1
is "$?" 0 "sbx release of a frozen session works"
st=$(state_of "$pid")
ok "...the sandbox is gone (${st:-no process})" test -z "$st" -o "$st" = Z
ok "...and nothing of it is left (gofer too)" test -z "$(pgrep -f -- "--root=$AGENT_SANDBOX_STATE_DIR/.*/runsc")"
is "$(C 'cat f')" "one
two" "a new session after the release sees the files"

done_testing
