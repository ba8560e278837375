#!/bin/bash
# A drained pool, with pool members that take longer to start than agent-sandbox waits for
# one (--warm-start-ms 2500 > 2 s): of five claims made at once on a pool of two, two adopt
# the warm members and three cold-start sandboxes named after themselves; all five get Ready
# on a pod of their own; the pool refills; deleting them all leaves only the pool.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/fake.sh"

why=$(fake_skip_reason)
[ -n "$why" ] && skip_all "the fake API server cannot run pods: $why"
command -v jq >/dev/null || skip_all "jq is not installed (make deps)"

fake_start --pool d=2 --warm-start-ms 2500 --cold-start-ms 200 || bail_out "the fake did not start"
EXT=/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default
C=$EXT/sandboxclaims
wait_for() { # DESCRIPTION JQ-TEST PATH (bounded: 60 s)
    local i
    for i in $(seq 600); do
        fake_curl "$3" | jq -e "$2" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    diag "timed out waiting for $1"
    return 1
}
ok "the pool's two members get ready" wait_for "the pool" '.status.readyReplicas == 2' "$EXT/sandboxwarmpools/d"
for i in 1 2 3 4 5; do
    fake_curl -X POST -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\",\"kind\":\"SandboxClaim\",\"metadata\":{\"name\":\"k$i\"},\"spec\":{\"warmPoolRef\":{\"name\":\"d\"}}}" \
        "$C" >/dev/null &
    posts="${posts:-} $!"
done
# shellcheck disable=SC2086 # the background jobs' pids, one word each
wait $posts
ok "all five claims get Ready" wait_for "five Ready claims" \
    '[.items[] | select(.status.conditions[0].status == "True" and .status.sandbox.name != null)] | length == 5' "$C"
names=$(fake_curl "$C" | jq -r '.items[] | "\(.metadata.name) \(.status.sandbox.name)"')
is "$(awk '$2 ~ /^d-/' <<<"$names" | wc -l)" "2" "two adopted the warm members"
is "$(awk '$1 == $2' <<<"$names" | wc -l)" "3" "three cold-started sandboxes named after themselves"
is "$(awk '{ print $2 }' <<<"$names" | sort -u | wc -l)" "5" "five sandboxes, one each"
ok "the pool refills to two ready members" wait_for "the pool refilled" '.status.readyReplicas == 2' "$EXT/sandboxwarmpools/d"
is "$(fake_curl /api/v1/namespaces/default/pods | jq '[.items[] | select(.status.phase == "Running")] | length')" "7" \
   "seven running pods: the five claimed and the pool's two new members"
for i in 1 2 3 4 5; do fake_curl -X DELETE "$C/k$i" >/dev/null; done
ok "after deleting the claims only the pool's two pods remain" \
    wait_for "two pods" '.items | length == 2' /api/v1/namespaces/default/pods
is "$(fake_state | jq '.pods | length')" "2" "...and only their two sandboxes run"
fake_stop
is "$?" "0" "SIGTERM: the fake exits 0"
ok "the state directory is gone" test ! -e "$FAKE_STATE"
done_testing
