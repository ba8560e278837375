#!/bin/bash
# Two things a real cluster does that the product must read right:
#   - a pod being deleted stays readable, with its deletionTimestamp, and exec into it keeps
#     working for its grace period (30 s by default), then it is killed: the next command
#     after a holder's restart must not reattach to it (it would die under that session a
#     few seconds later), but claim anew;
#   - Ready flaps under load (a readiness probe timing out): the claim and its Sandbox say
#     Ready=False for a moment while the pod runs on. A holder's restart in that moment
#     must reattach to the same claim and pod (deleting it killed the session's processes).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool g=2 || bail_out "the fake API server did not start"
kube_env kg
export AGENT_SANDBOX_POOL=g
trap kube_teardown EXIT
holder_pid() { "$SBX" status --json | sed -n 's/.*"holder_pid":\([0-9]*\).*/\1/p'; }
claim_of() { sed -n 's/.*"claim":"\([^"]*\)".*/\1/p' "$AGENT_SANDBOX_STATE_DIR/kg/kube.json"; }
claim_ready() { # CLAIM: the claim's Ready status, as the API server has it
    fake_curl "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims/$1" |
        python3 -c 'import json,sys; c=json.load(sys.stdin); print(next((x["status"] for x in c.get("status",{}).get("conditions",[]) if x["type"]=="Ready"), "none"))'
}

is "$("$SBXSH" -c 'cat README')" hello "a first command claims a pod"
"$SBXSH" -c 'nohup sleep 600 >/dev/null 2>&1 &'
pod1=$(session_pod) claim1=$(claim_of)

# Ready flaps: the pod's readiness fails for 15 s while the holder restarts.
kill -9 "$(holder_pid)"
fake_fault "pod-not-ready=$pod1,seconds=15" || bail_out "the fake refused a fault"
for _ in $(seq 100); do [ "$(claim_ready "$claim1")" = False ] && break; sleep 0.1; done
is "$(claim_ready "$claim1")" False "the pod's readiness failing makes the claim Ready=False"
out=$("$SBXSH" -c 'pgrep -x sleep >/dev/null && echo still-there' 2>&1)
is "$out" still-there "a holder restarted meanwhile reattaches: the session's processes are there"
is "$(session_pod)/$(claim_of)" "$pod1/$claim1" "...the same claim and pod"
like "$(claims | tr '\n' ' ')" "$claim1" "...and the claim was not deleted"

# A pod in its grace period: readable, exec working, for 20 s.
kill -9 "$(holder_pid)"
fake_fault "delete-pod=$pod1,grace=20" || bail_out "the fake refused a fault"
like "$(fake_curl "/api/v1/namespaces/default/pods/$pod1")" '"deletionTimestamp"' \
     "the deleted pod is still readable, with its deletionTimestamp"
out=$("$SBXSH" -c 'cat README' 2>&1)
is "$out" hello "the next command runs"
isnt "$(session_pod)" "$pod1" "...on another pod, not the one in its grace period"
isnt "$(claim_of)" "$claim1" "...in a new claim"
sleep 22   # the grace period is over: the old pod is gone
is "$("$SBXSH" -c 'echo still' 2>&1)" still "after the old pod's grace period, the session still serves"
done_testing
