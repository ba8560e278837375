#!/bin/bash
# A way to the API server that goes silent (a node, a load balancer or a VPN gone: packets
# stop, no RST ever comes), through the fake's freeze-exec fault, a black hole for exec
# streams. Mid-command, the holder's stream finds it by its WebSocket pings (nothing back for
# 20 s), drops it and resumes on a new exec: the command ends with all its output. And a
# SIGTERM (a harness's timeout) ends sbxsh within seconds while nothing answers, saying the
# sandbox may still be running the command; the session serves again after. A SIGINT too
# (unanswered by the agent within seconds while no byte comes), while a command that ignores
# SIGINT on a live way is waited for, as bash waits.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool d=1 || bail_out "the fake API server did not start"
kube_env kd
export AGENT_SANDBOX_POOL=d
trap kube_teardown EXIT

# wait_for FILE TEXT: until FILE holds TEXT (bounded: 60 s)
wait_for() {
    for _ in $(seq 600); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

is "$("$SBXSH" -c 'cat README')" hello "a first command claims a pod"

# 1. Mid-command, the exec's path goes silent for 25 s: its stream stays dead for good, new
# execs get no answer until the 25 s have passed.
out=$SBX_TEST_TMP/o1 errf=$SBX_TEST_TMP/e1
timeout 150 "$SBXSH" -c 'echo ready; sleep 6; echo done > after.txt; echo done' >"$out" 2>"$errf" &
pid=$!
wait_for "$out" ready || diag "no 'ready' from the command"
fake_fault "freeze-exec,seconds=25" || bail_out "the fake refused a fault"
wait "$pid"
rc=$?
is "$rc" 0 "the exec's path went silent mid-command: the command still ends well (124: it hung)"
is "$(cat "$out")" "ready
done" "...with all its output"
is "$(cat "$PROJ/after.txt" 2>&1)" "done" "...and its changes come back"
like "$(cat "$XDG_RUNTIME_DIR/sbxsh/kd.log")" "not even an answer to a ping" \
     "...the stream found the silence by its pings (the holder's log says so)"
is "$(cat "$errf")" "" "...and nothing about it reached the command's stderr"

# 2. A black hole that lasts: SIGTERM ends sbxsh anyway, within seconds.
out=$SBX_TEST_TMP/o2 errf=$SBX_TEST_TMP/e2
"$SBXSH" -c 'echo ready; sleep 120' >"$out" 2>"$errf" &
pid=$!
wait_for "$out" ready || diag "no 'ready' from the command"
fake_fault "freeze-exec" || bail_out "the fake refused a fault"
sleep 1
kill -TERM "$pid"
ended=no
for _ in $(seq 300); do   # 30 s: far more than the 3 s sbxsh waits for an answer
    kill -0 "$pid" 2>/dev/null || { ended=yes; break; }
    sleep 0.1
done
is "$ended" yes "SIGTERM while nothing answers: sbxsh ends within seconds"
[ "$ended" = yes ] || kill -9 "$pid" 2>/dev/null
wait "$pid"
is "$?" 143 "...dying of the SIGTERM, as bash would"
like "$(cat "$errf")" "^sbxsh: no answer from the sandbox 3 s after Terminated .*may still be running.*sbx release" \
     "...saying the sandbox may still be running the command, and what to do"

fake_fault clear || bail_out "the fake refused a fault"
is "$(timeout 120 "$SBXSH" -c 'echo again' 2>&1)" again "the way back: the next command runs"

# frozen_after N: until the fake has frozen more than N exec streams (bounded: 30 s)
frozen() { fake_state | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"].get("frozenExecs", 0))'; }
frozen_after() {
    for _ in $(seq 300); do
        [ "$(frozen)" -gt "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

# 2b. SIGINT (a Ctrl-C, a harness's interrupt) in a black hole: the agent never answers it,
# nor does any output come; sbxsh ends within seconds as for SIGTERM, not after the
# stream's 20 s silence rule and its reconnects (about 50 s).
out=$SBX_TEST_TMP/o2b errf=$SBX_TEST_TMP/e2b
"$SBXSH" -c 'echo ready; sleep 120' >"$out" 2>"$errf" &
pid=$!
wait_for "$out" ready || diag "no 'ready' from the command"
n=$(frozen)
fake_fault "freeze-exec" || bail_out "the fake refused a fault"
frozen_after "$n" || diag "the fake did not freeze the stream within 30 s"
t0=$(date +%s)
kill -INT "$pid"
ended=no
for _ in $(seq 300); do   # 30 s: far more than the 3 s sbxsh waits for an answer
    kill -0 "$pid" 2>/dev/null || { ended=yes; break; }
    sleep 0.1
done
is "$ended" yes "SIGINT while nothing answers: sbxsh ends within seconds"
[ "$ended" = yes ] || kill -9 "$pid" 2>/dev/null
wait "$pid"
is "$?:$(( $(date +%s) - t0 < 15 ))" "130:1" "...dying of the SIGINT (130), in less than 15 s"
like "$(cat "$errf")" "^sbxsh: no answer from the sandbox 3 s after Interrupt .*may still be running.*sbx release" \
     "...saying the sandbox may still be running the command, as for SIGTERM"
fake_fault clear || bail_out "the fake refused a fault"
is "$(timeout 120 "$SBXSH" -c 'echo again' 2>&1)" again "the way back: the next command runs"

# 2c. With the way alive, a command that ignores SIGINT quietly is waited for, as bash
# waits for it: the agent's answer to the signal says the way works.
"$SBXSH" -c 'trap "" INT; echo ready; sleep 6; echo done' >"$out" 2>"$errf" &
pid=$!
wait_for "$out" ready || diag "no 'ready' from the command"
kill -INT "$pid"
wait "$pid"
is "$?:$(cat "$out")" "0:ready
done" "SIGINT to a command that ignores it, the way alive: waited for to its end (0), as bash"
is "$(cat "$errf")" "" "...with no word of a lost way"

# 3. With the way alive, SIGTERM is answered at once by the command's end (no message).
"$SBXSH" -c 'echo ready; sleep 120' >"$out" 2>"$errf" &
pid=$!
wait_for "$out" ready || diag "no 'ready' from the command"
kill -TERM "$pid"
wait "$pid"
is "$?" 143 "SIGTERM with the way alive: the command's own end by it (143)"
unlike "$(cat "$errf")" "no answer" "...and no word of a lost way"
done_testing
