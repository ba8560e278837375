#!/bin/bash
# tests/kube/fake-apiserver --runtime runsc (what it picks on a machine without bubblewrap):
# the pods are gVisor sandboxes; a claim, an exec's output, status and stdin, a daemon kept
# between execs, the cascade on delete, and nothing left after SIGTERM.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/fake.sh"

command -v runsc >/dev/null || skip_all "runsc is not installed (make deps)"
# shellcheck disable=SC2046 # --rootless or nothing: one word or none
runsc --network=none --ignore-cgroups $([ "$(id -u)" = 0 ] || echo --rootless) 'do' /bin/true >/dev/null 2>&1 ||
    skip_all "runsc cannot start a sandbox on this machine"
for c in openssl curl jq; do command -v $c >/dev/null || skip_all "$c is not installed (make deps)"; done

fake_start --runtime runsc --pool r=1 --cold-start-ms 100 || bail_out "the fake did not start"
WS=$(dirname "$0")/ws-exec.py
C=/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims
PODS=/api/v1/namespaces/default/pods
wait_for() { # DESCRIPTION JQ-TEST PATH (bounded: 60 s)
    for _ in $(seq 600); do
        fake_curl "$3" | jq -e "$2" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    diag "timed out waiting for $1"
    return 1
}
run() { "$WS" "$FAKE_URL$PODS/$pod/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io "$@"; }

fake_curl -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim","metadata":{"name":"g1"},"spec":{"warmPoolRef":{"name":"r"}}}' \
    "$C" >/dev/null
ok "a claim gets Ready on a runsc pod" wait_for "g1 Ready" '.status.conditions[0].status == "True"' "$C/g1"
pod=$(fake_curl "$C/g1" | jq -r .status.sandbox.name)
out=$(run -- sh -c 'cat /proc/version; echo err >&2; exit 3')
like "$(jq -r .stdout <<<"$out")" '^Linux version 4\.4\.0' "the pod runs on gVisor's kernel"
is "$(jq -c '[.stderr, (.error | fromjson | .details.causes[0].message), .close]' <<<"$out")" '["err\n","3",1000]' \
   "stderr apart, the exit status in the channel-3 Status, Close 1000"
is "$(run --stdin 'abc' --close-stdin -- sh -c 'cat; echo' | jq -c .stdout)" '"abc\n"' "stdin reaches the command"
D=$((600000 + RANDOM))
run -- sh -c "setsid sh -c 'echo \$\$ > /tmp/d.pid; exec sleep $D' </dev/null >/dev/null 2>&1 &" >/dev/null
is "$(run -- sh -c 'for i in $(seq 100); do [ -s /tmp/d.pid ] && break; sleep 0.1; done; kill -0 $(cat /tmp/d.pid) && echo alive' | jq -r .stdout)" \
   "alive" "a daemon started by one exec runs at the next"
pids=$(fake_state | jq -r --arg n "$pod" '.pods[] | select(.name == $n) | .pids[]' | tr '\n' ' ')
like "$pids" '^[0-9]' "the pod is processes on the host (the sandbox)"
fake_curl -X DELETE "$C/g1" >/dev/null
ok "delete: the pod goes" wait_for "g1's pod gone" '.code == 404' "$PODS/$pod"
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
is "$left" "" "...and its sandbox's processes"
pids=$(fake_state | jq -r '.pods[].pids[]' | tr '\n' ' ')
fake_stop
is "$?" "0" "SIGTERM: the fake exits 0"
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
is "$left" "" "no sandbox process is left"
ok "the state directory is gone" test ! -e "$FAKE_STATE"
done_testing
