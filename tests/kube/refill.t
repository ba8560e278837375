#!/bin/bash
# A warm pool refills as a real one does: agent-sandbox's controller makes the replacement
# Sandbox at once, but its pod takes a pod's start time (the fake's --refill-ms). So a claim
# that finds the pool just emptied waits on its watch for the refill (or, past
# agent-sandbox's 2 s, for a cold start), and a burst of claims larger than the pool all
# succeed, each on a pod of its own; at a terminal the waiting ones say what they wait for,
# in one line each.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool r=1 --refill-ms 1000 --cold-start-ms 1500 ||
    bail_out "the fake API server did not start"
kube_env kr
export AGENT_SANDBOX_POOL=r
trap kube_teardown EXIT

# ready_members: the pool's members whose Sandbox is Ready and not claimed (one a line)
ready_members() {
    fake_curl /apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes | python3 -c '
import json, sys
for s in json.load(sys.stdin)["items"]:
    own = [o for o in s["metadata"].get("ownerReferences", []) if o.get("controller")]
    ready = [c for c in s.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
    if own and own[0]["kind"] == "SandboxWarmPool" and ready and ready[0]["status"] == "True":
        print(s["metadata"]["name"])'
}
wait_member() {
    for _ in $(seq 300); do [ -n "$(ready_members)" ] && return 0; sleep 0.1; done
    return 1
}
wait_member || diag "the pool has no ready member after 30 s"

# 1. Two claims one after the other: the second meets the pool being refilled and takes the
# refill when it comes (not a cold start, which would be named after its claim).
AGENT_SANDBOX_SESSION=kr-a "$SBXSH" -c 'cat README' >/dev/null 2>&1
a=$(AGENT_SANDBOX_SESSION=kr-a session_pod)
out=$(AGENT_SANDBOX_SESSION=kr-b "$SBXSH" -c 'cat README' 2>&1)
b=$(AGENT_SANDBOX_SESSION=kr-b session_pod)
is "$out" hello "a claim right after the pool's only member was taken: runs"
like "$b" '^r-[a-z0-9]{5}$' "...on the pool's refill (a member's name, not a cold start's)"
isnt "$b" "$a" "...not the first claim's pod"
diag "the claims' times from POST to Ready, ms: $(fake_state | python3 -c 'import json,sys; print([c.get("readyMs") for c in json.load(sys.stdin)["claims"]])')"

# 2. A burst of four claims on the refilled pool of one, each at a terminal.
wait_member || diag "the pool did not refill within 30 s"
pids=()
for i in 1 2 3 4; do
    AGENT_SANDBOX_SESSION=kr-burst$i "$HERE/../local/ptyrun.py" -- "$SBXSH" -c 'hostname' \
        >"$SBX_TEST_TMP/burst.$i" 2>&1 &
    pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
is "$fails" 0 "four claims at once on a pool of one: all run their command"
is "$(for i in 1 2 3 4; do tail -1 "$SBX_TEST_TMP/burst.$i"; done | tr -d '\r' | sort -u | wc -l)" 4 \
   "...each in a pod of its own"
waited=0 once=yes
for i in 1 2 3 4; do
    n=$(grep -c 'sbxsh: waiting for a pod from pool r (claim sbx-kr-burst' "$SBX_TEST_TMP/burst.$i")
    [ "$n" -ge 1 ] && waited=$((waited + 1))
    [ "$n" -le 1 ] || once=no
done
ok "...the ones that waited (at least the three the pool could not serve at once) said so at their terminal" \
   test "$waited" -ge 3
is "$once" yes "...in one line each"
ok "...and the pool refills after them" wait_member
for i in a b burst1 burst2 burst3 burst4; do "$SBX" release --session "kr-$i" >/dev/null 2>&1; done
done_testing
