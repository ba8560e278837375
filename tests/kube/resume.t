#!/bin/bash
# What the kube backend survives mid-command: the exec's WebSocket dropped (the command goes
# on and all its output arrives: the stream resumes on a new exec), the pod deleted (the
# command fails with 125 saying so, the host tree stays, the next command gets a new claim),
# and a holder killed (the next one reattaches to the same pod, its processes still there).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool r=2 || bail_out "the fake API server did not start"
kube_env kr
export AGENT_SANDBOX_POOL=r
trap kube_teardown EXIT
holder_pid() { "$SBX" status --json | sed -n 's/.*"holder_pid":\([0-9]*\).*/\1/p'; }
claim_of() { sed -n 's/.*"claim":"\([^"]*\)".*/\1/p' "$AGENT_SANDBOX_STATE_DIR/kr/kube.json"; }

is "$("$SBXSH" -c 'cat README')" hello "a first command claims a pod (and uploads the agent)"
pod1=$(session_pod)
claim1=$(claim_of)
# 3 x 300 kB with pauses: the drop comes after 100 kB of the exec's output, mid-command
script='for i in 1 2 3; do head -c 300000 /dev/zero | tr "\0" x; echo " part $i"; sleep 0.3; done; echo end > after-drop'
want=$(bash -c "cd $SBX_TEST_TMP && $script" | md5sum)
rm -f "$SBX_TEST_TMP/after-drop"
"$SBXSH" -c 'nohup sleep 600 >/dev/null 2>&1 &'
# a new holder opens a new exec: the fault applies to it (execs already open keep going)
kill -9 "$(holder_pid)"
fake_fault "drop-exec-after=100000,count=1" || bail_out "the fake refused a fault"
got=$("$SBXSH" -c "$script" | md5sum)
rc=${PIPESTATUS[0]}
is "$rc" 0 "the WebSocket dropped mid-command: the command still succeeds"
is "$got" "$want" "...and all its output arrives, in order"
is "$(cat "$PROJ/after-drop" 2>&1)" end "...and its changes come back"
like "$(cat "$XDG_RUNTIME_DIR/sbxsh/kr.log")" "exec stream to $pod1 broke" "...it was dropped indeed (the log says so)"
is "$(session_pod)/$(claim_of)" "$pod1/$claim1" "a killed holder's successor reattached to the same claim and pod"
is "$("$SBXSH" -c 'pgrep -x sleep >/dev/null && echo still-there')" still-there \
   "...with the background process still there"

echo before > "$PROJ/crash.txt"
"$SBXSH" -c 'echo ready; exec sleep 60' >"$SBX_TEST_TMP/o" 2>"$SBX_TEST_TMP/e" &
pid=$!
for _ in $(seq 100); do grep -q ready "$SBX_TEST_TMP/o" 2>/dev/null && break; sleep 0.1; done
fake_fault "delete-pod=$pod1" || bail_out "the fake refused a fault"
wait $pid
is "$?" 125 "the pod deleted mid-command: the command fails with 125"
like "$(cat "$SBX_TEST_TMP/e")" "sandbox stopped.*next command starts a new sandbox" "...saying so"
is "$(cat "$PROJ/crash.txt")" before "...and the host tree is intact"
is "$("$SBXSH" -c 'cat crash.txt')" before "the next command runs, with the host's tree"
isnt "$(claim_of)" "$claim1" "...in a new claim"
for _ in $(seq 100); do claims | grep -qx "$claim1" || break; sleep 0.1; done
unlike "$(claims | tr '\n' ' ')" "$claim1" "...and the broken claim was deleted"

"$SBX" release >/dev/null
is "$?" 0 "sbx release"
for _ in $(seq 100); do [ -z "$(claims)" ] && break; sleep 0.1; done
is "$(claims)" "" "...deletes the claim"
done_testing
