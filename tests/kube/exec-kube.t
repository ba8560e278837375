#!/bin/bash
# tests/local/exec.sh (sbx exec and the session lifecycle) on the kube backend: pods of a
# warm pool of tests/kube/fake-apiserver, the agent uploaded into them. exec.sh runs as a
# child, so that the fake outlives it and goes after; the sandbox "killed" is the pod
# deleted (kill_sandbox).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool t=2 || bail_out "the fake API server did not start"
export AGENT_SANDBOX_POOL=t RT=kube FAKE_URL FAKE_CA FAKE_TOKEN
# (Run by exec.sh, in the child: shellcheck cannot see the call.)
# shellcheck disable=SC2317
# Deletes the session's pod, and waits (bounded) until the fake has it gone or replaced (its
# Sandbox makes a new one of the same name): a deletion is asynchronous, as in a cluster.
kill_sandbox() {
    local f=$AGENT_SANDBOX_STATE_DIR/$AGENT_SANDBOX_SESSION/kube.json pod uid now
    pod=$(sed -n 's/.*"pod":"\([^"]*\)".*/\1/p' "$f")
    uid=$(sed -n 's/.*"pod_uid":"\([^"]*\)".*/\1/p' "$f")
    fake_fault "delete-pod=$pod"
    for _ in $(seq 200); do
        now=$(fake_curl "/api/v1/namespaces/default/pods/$pod" |
              sed -n 's/.*"uid": *"\([^"]*\)".*/\1/p' | head -1)
        [ "$now" != "$uid" ] && return 0
        sleep 0.05
    done
    diag "the pod $pod was not deleted within 10 s"
}
export -f kill_sandbox fake_fault fake_curl diag
bash "$HERE/../local/exec.sh"
rc=$?
fake_stop
exit $rc
