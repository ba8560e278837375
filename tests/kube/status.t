#!/bin/bash
# sbx doctor, sbx status, sbx ls and sbx release on the kube backend: the doctor's findings
# (kubeconfig, server, identity, each verb, the pool, the runtime class) and what each
# failure says to fix; the status's claim, pod, node, pool and expiry; the claim's labels
# and shutdownTime (set from AGENT_SANDBOX_TTL and moved forward while the session lives);
# a release deleting the claim.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool s=1 || bail_out "the fake API server did not start"
kube_env ks
export AGENT_SANDBOX_POOL=s
trap kube_teardown EXIT
# the pool's pod ready, as the doctor will see it
for _ in $(seq 300); do
    fake_curl /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxwarmpools/s |
        grep -q '"readyReplicas": *1' && break
    sleep 0.1
done

out=$("$SBX" doctor 2>&1); rc=$?
is "$rc" 0 "sbx doctor against a working cluster: exit 0"
like "$out" "ok +kubeconfig: $FAKE_KUBECONFIG, context fake, namespace default" "...the kubeconfig found and parsed"
like "$out" "ok +API server: https://127.0.0.1:[0-9]+" "...the server reachable"
like "$out" "ok +identity: " "...who sbxsh is to it (SelfSubjectReview)"
like "$out" "ok +RBAC: all 12 verbs sbxsh needs are allowed in namespace default" "...every verb allowed"
like "$out" "ok +warm pool: s in namespace default, 1 of 1 replicas ready" "...the pool and its ready replicas"
like "$out" "(runtime class of the pool's pods|the pool's pods have no runtimeClassName)" "...its runtime class"

out=$(AGENT_SANDBOX_KUBE_CONTEXT=fake-401 "$SBX" doctor 2>&1); rc=$?
is "$rc" 1 "doctor with refused credentials: exit 1"
like "$out" "FAIL +the API server refuses sbxsh's credentials" "...saying so"
out=$(AGENT_SANDBOX_KUBE_CONTEXT=fake-403 "$SBX" doctor 2>&1); rc=$?
is "$rc" 1 "doctor as a user without rights: exit 1"
like "$out" "FAIL +RBAC: .*denied in namespace default: create sandboxclaims.*Role and RoleBinding" \
     "...naming the verbs denied and what grants them"
fake_fault "deny=create:pods/exec" || bail_out "the fake refused a fault"
like "$("$SBX" doctor 2>&1)" "denied in namespace default: create pods/exec" "one verb denied: named"
fake_fault clear
out=$(AGENT_SANDBOX_POOL=nope "$SBX" doctor 2>&1); rc=$?
is "$rc" 1 "doctor with a pool that does not exist: exit 1"
like "$out" "FAIL +the warm pool does not exist.*AGENT_SANDBOX_POOL" "...saying what to set"
out=$(AGENT_SANDBOX_BACKEND=local "$SBX" doctor 2>&1)
like "$out" "note +kube backend: configured but not in use" "doctor on the local backend with kube settings: a note"

export AGENT_SANDBOX_TTL=60
is "$("$SBXSH" -c 'cat README')" hello "a command claims a pod"
claim=$(claims)
pod=$(session_pod)
# what the pod can see of the host: its environment, its HOME, the agent's files
out=$("$SBXSH" -c 'env; ls -aR ~ /run/sbxsh; cat /run/sbxsh/*.log /proc/1/environ 2>/dev/null' 2>&1 | tr '\0' '\n')
unlike "$out" "$FAKE_TOKEN" "no credential of the host reaches the pod (the kubeconfig's token is nowhere)"
unlike "$out" "KUBECONFIG|$FAKE_KUBECONFIG|AGENT_SANDBOX_" "...nor the kubeconfig's path, nor sbxsh's settings"
st=$("$SBX" status)
like "$st" "sandbox: +kube $claim, running" "sbx status: the claim, running"
like "$st" "pod: +$pod on node [^ ]+ \(claim $claim, sandbox [^,]+, pool s, namespace default\)" "...the pod, its node, sandbox and pool"
like "$st" "expires: +[0-9-]+ [0-9:]+ unless renewed" "...the expiry"
like "$("$SBX" ls)" "ks +kube +running" "sbx ls: the session, kube, running"
cj=$(fake_curl "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims/$claim")
like "$cj" '"app.kubernetes.io/managed-by": *"sbxsh"' "the claim is labelled as sbxsh's"
like "$cj" '"sbxsh.dev/session": *"ks"' "...with the session"
like "$cj" '"shutdownPolicy": *"Delete"' "...shutdownPolicy Delete"
unlike "$cj" '"env"|volumeClaimTemplates' "...and no env nor volume claim templates (a warm pod stays warm)"
t0=$(printf '%s' "$cj" | sed -n 's/.*"shutdownTime": *"\([^"]*\)".*/\1/p')
# the session lives with a command running: its claim's end moves forward (TTL/4 = 15 s)
"$SBXSH" -c 'sleep 25' &
busy=$!
t1=$t0
for _ in $(seq 300); do
    t1=$(fake_curl "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims/$claim" |
         sed -n 's/.*"shutdownTime": *"\([^"]*\)".*/\1/p')
    [ "$t1" != "$t0" ] && break
    sleep 0.1
done
isnt "$t1" "$t0" "the holder moves the claim's shutdownTime forward while the session lives"
wait $busy

"$SBX" release; rc=$?
is "$rc" 0 "sbx release"
for _ in $(seq 100); do [ -z "$(claims)" ] && break; sleep 0.1; done
is "$(claims)" "" "...deletes the claim"
for _ in $(seq 100); do pods | grep -qx "$pod" || break; sleep 0.1; done
unlike "$(pods | tr '\n' ' ')" "$pod" "...and its pod goes"
"$SBX" status >/dev/null 2>&1; is "$?" 1 "...and the session is gone"

"$SBXSH" -c 'cat README' >/dev/null
isnt "$(claims)" "" "a new claim for the next command"
"$SBX" release --force >/dev/null; rc=$?
is "$rc" 0 "sbx release --force (the holder killed, nothing asked of it)"
for _ in $(seq 100); do [ -z "$(claims)" ] && break; sleep 0.1; done
is "$(claims)" "" "...deletes the claim too"
done_testing
