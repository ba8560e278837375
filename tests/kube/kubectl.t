#!/bin/bash
# The real kubectl (the one on PATH: Google Cloud SDK's dispatcher, which runs kubectl 1.32
# for the fake's /version) against tests/kube/fake-apiserver: discovery, OpenAPI for
# `create -f`, a claim adopting a warm pod, `wait`, exec (status, stdin, a daemon kept between
# execs), delete cascading to the pod and its processes, a cold start, WarmPoolNotFound, 401,
# 403, a 429 storm; then nothing is left once the fake is stopped. Each test has its own HOME,
# so no discovery cache crosses from one to the next.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/fake.sh"

command -v kubectl >/dev/null || skip_all "kubectl is not installed"
why=$(fake_skip_reason)
[ -n "$why" ] && skip_all "the fake API server cannot run pods: $why"

fake_start --pool warm=2 --pool cold=0 --cold-start-ms 600 || bail_out "the fake did not start"
export KUBECONFIG=$FAKE_KUBECONFIG
unset KUBECACHEDIR KUBECTL_REMOTE_COMMAND_WEBSOCKETS
home_n=0
fresh_home() { home_n=$((home_n + 1)); export HOME=$SBX_TEST_TMP/home.$home_n; mkdir -p "$HOME"; }
k() { kubectl --request-timeout=60s "$@"; }
# kubectl 1.32 and 1.33 start reading an exec's WebSocket before they have made its streams
# (kubernetes/kubernetes#131189, fixed by #131203 after 1.33): a frame that arrives in between
# is dropped, with "Unknown stream id N, discarding message" on kubectl's stderr. The first
# frames come right after the 101 (the empty frame opening stdout, which a real API server
# sends at once too, then the output of a quick command), so on a loaded machine kubectl now
# and then loses its own race: a CI run once lost the "ok" of `sh -c 'echo ok; exit 3'` and
# got that line on stderr. No wait on our side can close the window, and nothing in the protocol
# says when kubectl is ready (it sends nothing before its first ping, 5 s later). So an exec
# whose kubectl printed that message is run again (at most 5 times, each retry a diag on the
# TAP stream, fd 9); any other wrong output still fails the check.
# kx [--stdin FILE] CMD...: runs CMD (a kubectl exec) with stdin from FILE (else /dev/null).
exec 9>&1
kx() {
    local in=/dev/null try rc
    if [ "$1" = --stdin ]; then in=$2; shift 2; fi
    for try in 1 2 3 4 5; do
        "$@" <"$in" >"$SBX_TEST_TMP/kx.out" 2>"$SBX_TEST_TMP/kx.err"
        rc=$?
        grep -qs 'Unknown stream id [0-9]*, discarding message' "$SBX_TEST_TMP/kx.out" "$SBX_TEST_TMP/kx.err" ||
            break
        diag "try $try: kubectl dropped a frame that came before its streams (kubernetes#131189): $*" \
            "$(cat "$SBX_TEST_TMP/kx.out" "$SBX_TEST_TMP/kx.err")" >&9
    done
    cat "$SBX_TEST_TMP/kx.out"
    cat "$SBX_TEST_TMP/kx.err" >&2
    return $rc
}
D=$((900000 + RANDOM))   # the daemon's `sleep` argument: unique on this machine for this run

claim_yaml() { # NAME POOL
    cat <<EOF
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: $1
  labels:
    app.kubernetes.io/managed-by: kubectl-t
spec:
  warmPoolRef:
    name: $2
  lifecycle:
    shutdownPolicy: Delete
EOF
}

fresh_home
out=$(k get sandboxwarmpools 2>&1)
like "$out" $'^NAME +AGE\ncold +[0-9]+s\nwarm +[0-9]+s$' "get sandboxwarmpools lists both pools"
ok "the pool gets its two ready members" \
    k wait --for=jsonpath='{.status.readyReplicas}'=2 sandboxwarmpool/warm --timeout=60s

fresh_home
claim_yaml c1 warm >"$SBX_TEST_TMP/claim.yaml"
is "$(k create -f "$SBX_TEST_TMP/claim.yaml" 2>&1)" \
   "sandboxclaim.extensions.agents.x-k8s.io/c1 created" "create -f claim.yaml (validated with the OpenAPI)"
like "$(grep -c 'fieldValidation=Strict' "$FAKE_LOG")" '^[1-9]' "...with server-side strict validation"
is "$(k create -f "$SBX_TEST_TMP/claim.yaml" 2>&1)" \
   'Error from server (AlreadyExists): error when creating "'"$SBX_TEST_TMP/claim.yaml"'": sandboxclaims.extensions.agents.x-k8s.io "c1" already exists' \
   "a second create is AlreadyExists"
is "$(k wait --for=condition=Ready sandboxclaim/c1 --timeout=60s 2>&1)" \
   "sandboxclaim.extensions.agents.x-k8s.io/c1 condition met" "wait --for=condition=Ready"

fresh_home
sb=$(k get sandboxclaim c1 -o jsonpath='{.status.sandbox.name}')
like "$sb" '^warm-[bcdfghjklmnpqrstvwxz2456789]{5}$' "the claim adopted a warm member, not renamed"
is "$(k get sandboxclaim c1 -o jsonpath='{.metadata.annotations.agents\.x-k8s\.io/sandbox-name}')" "$sb" \
   "...named by the claim's sandbox-name annotation"
pod=$(k get sandbox "$sb" -o jsonpath='{.metadata.annotations.agents\.x-k8s\.io/pod-name}')
is "$pod" "$sb" "the sandbox's pod-name annotation names the pod"
is "$(k get sandbox "$sb" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.metadata.labels.agents\.x-k8s\.io/warm-pool-sandbox}')" \
   "SandboxClaim/c1 " "the sandbox now belongs to the claim, out of the pool"
like "$(k get pod "$pod" -o jsonpath='{.status.phase} {.status.podIP} {.spec.nodeName}')" \
     '^Running 10\.244\.[0-9]+\.[0-9]+ fake-node-1$' "get pod: Running, with a podIP and a node"
ok "the pool starts a replacement and is back to two ready members" \
    k wait --for=jsonpath='{.status.readyReplicas}'=2 sandboxwarmpool/warm --timeout=60s
is "$(k get sandboxes -l agents.x-k8s.io/warm-pool-sandbox -o name | wc -l)" "2" \
   "two pool-owned sandboxes besides the claimed one (label selector)"

fresh_home
out=$(kx k exec "$pod" -- sh -c 'echo ok; exit 3' 2>"$SBX_TEST_TMP/err")
rc=$?
is "$out" "ok" "exec prints ok"
is "$rc" "3" "...and exits with the command's status 3"
is "$(cat "$SBX_TEST_TMP/err")" "command terminated with exit code 3" "...saying so on stderr"
is "$(kx k exec "$pod" -- true; echo $?)" "0" "exec true exits 0"
printf 'abc\ndef\n' >"$SBX_TEST_TMP/in"
is "$(kx --stdin "$SBX_TEST_TMP/in" k exec -i "$pod" -- sh -c 'cat; echo end' 2>&1)" $'abc\ndef\nend' \
   "exec -i: stdin reaches the command, and its end (the v5 close) ends cat"
is "$(kx k exec "$pod" -- sh -c 'echo out; echo err >&2' 2>/dev/null)" "out" "stdout and stderr are apart"
is "$(kx k exec "$pod" -- sh -c 'hostname; cat /etc/hostname; ls -d /tmp /workspace' 2>&1)" \
   "$pod"$'\n'"$pod"$'\n/tmp\n/workspace' "the pod has its own hostname and writable root"
is "$(kx k exec "$pod" -- sh -c 'echo x > /workspace/f && cat /workspace/f; touch /usr/x 2>/dev/null || echo ro' 2>&1)" \
   $'x\nro' "the root is writable, the host's /usr is read-only"
k exec "$pod" -- sh -c "setsid sh -c 'echo \$\$ > /tmp/d.pid; exec sleep $D' </dev/null >/dev/null 2>&1 &"
is "$(kx k exec "$pod" -- sh -c 'for i in $(seq 100); do [ -s /tmp/d.pid ] && break; sleep 0.1; done
                               kill -0 $(cat /tmp/d.pid) && echo alive' 2>&1)" "alive" \
   "a daemon started by one exec still runs at the next"
is "$(kx k exec "$pod" -- sh -c 'sleep 300 & echo started' 2>&1)" "started" \
   "an exec ends when its command does, even with a child holding its stdout"
like "$(pgrep -f "^sleep $D\$")" '^[0-9]+$' "...the daemon is a process on this machine"
is "$(kx k exec "$pod" -- sh -c 'test -e /usr/local/bin/sbx-agent && echo there || echo none' 2>&1)" "none" \
   "without --agent the pod has no sbx-agent"
out=$(kx "$(dirname "$0")/../local/ptyrun.py" -- kubectl --request-timeout=60s exec -it "$pod" -- sh -c 'tty; for i in $(seq 100); do [ "$(stty size)" = "33 101" ] && break; sleep 0.1; done; stty size; exit 5')
rc=$?
is "$out" $'/dev/pts/0\n33 101\ncommand terminated with exit code 5' \
   "exec -it: a terminal of the pod's own, of the size kubectl sent (33x101: its resize may land just after the command starts), and the status"
is "$rc" "5" "...kubectl exits 5"
out=$(kx k exec "$pod" -- nosuchcommand 2>&1)
like "$out" 'executable file not found in \$PATH' "a missing command is an error from the server"

fresh_home
is "$(k delete sandboxclaim c1 2>&1)" 'sandboxclaim.extensions.agents.x-k8s.io "c1" deleted' "delete the claim"
like "$(k get sandboxclaim c1 2>&1)" 'NotFound' "the claim is gone"
ok "its pod goes (cascade, bounded wait)" k wait --for=delete "pod/$pod" --timeout=30s
like "$(k get sandbox "$sb" 2>&1)" '^Error from server \(NotFound\): sandboxes.agents.x-k8s.io "'"$sb"'" not found$' \
     "its sandbox is gone"
for _ in $(seq 100); do pgrep -f "^sleep $D\$" >/dev/null || break; sleep 0.1; done
is "$(pgrep -f "^sleep $D\$")" "" "the pod's processes are gone (the daemon with them)"
is "$(find "$FAKE_STATE/pods" -mindepth 1 -maxdepth 1 -name "*_${pod}_*" | wc -l)" "0" "the pod's directory is gone"

fresh_home
# kubectl get -w prints every event: the cold start's steps are seen one by one.
nwatch=$(grep -c 'sandboxclaims?.*watch=true' "$FAKE_LOG")
k get sandboxclaims -w -o jsonpath='{.metadata.name} {.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}{"\n"}' \
    >"$SBX_TEST_TMP/watch" 2>&1 &
watcher=$!
for _ in $(seq 300); do [ "$(grep -c 'sandboxclaims?.*watch=true' "$FAKE_LOG")" -gt "$nwatch" ] && break; sleep 0.1; done
claim_yaml c2 cold | k create -f - >/dev/null
is "$(k wait --for=condition=Ready sandboxclaim/c2 --timeout=60s 2>&1)" \
   "sandboxclaim.extensions.agents.x-k8s.io/c2 condition met" "a claim on an empty pool gets Ready (cold start)"
kill $watcher 2>/dev/null; wait $watcher 2>/dev/null
is "$(k get sandboxclaim c2 -o jsonpath='{.status.sandbox.name}')" "c2" "the cold sandbox is named after the claim"
is "$(k get sandbox c2 -o jsonpath='{.metadata.annotations.agents\.x-k8s\.io/pod-name} {.metadata.labels.agents\.x-k8s\.io/launch-type}')" \
   "c2 cold" "...and so is its pod (launch-type cold)"
steps=$(grep '^c2 ' "$SBX_TEST_TMP/watch" | cut -d' ' -f2- | uniq | tr '\n' '|')
like "$steps" 'DependenciesNotReady: Pod does not exist\|.*DependenciesNotReady: Pod exists with phase: Pending\|.*DependenciesNotReady: Pod is Running but not Ready\|.*DependenciesReady: Pod is Ready\|' \
     "the watch saw Ready=False through each reason of the cold start, then True"
is "$(kx k exec c2 -- echo cold 2>&1)" "cold" "exec into the cold pod"
k delete sandboxclaim c2 --wait=false >/dev/null

fresh_home
claim_yaml c3 nosuchpool | k create -f - >/dev/null
ok "a claim on a missing pool gets WarmPoolNotFound" \
    k wait --for=jsonpath='{.status.conditions[0].reason}'=WarmPoolNotFound sandboxclaim/c3 --timeout=30s
is "$(k get sandboxclaim c3 -o jsonpath='{.status.conditions[0].status} {.status.conditions[0].message}|{.status.sandbox}')" \
   'False SandboxWarmPool "nosuchpool" not found|' "...Ready False, the message naming the pool, no sandbox"
k delete sandboxclaim c3 >/dev/null
printf 'apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata:\n  name: bad\nspec: {}\n' \
    >"$SBX_TEST_TMP/bad.yaml"
like "$(k create -f "$SBX_TEST_TMP/bad.yaml" 2>&1)" \
     'The SandboxClaim "bad" is invalid: spec.warmPoolRef.name: Required value' "a claim without a pool is Invalid (422)"

fresh_home
out=$(k --context fake-401 get sandboxclaims 2>&1)
rc=$?
# (as against a real cluster: discovery's complaints, then the error)
is "${out##*$'\n'}" "error: You must be logged in to the server (the server has asked for the client to provide credentials)" \
   "an unknown token: kubectl shows the 401"
is "$rc" "1" "...and fails"
out=$(k --context fake-403 get sandboxclaims 2>&1)
is "$out" 'Error from server (Forbidden): sandboxclaims.extensions.agents.x-k8s.io is forbidden: User "fake-nobody" cannot list resource "sandboxclaims" in API group "extensions.agents.x-k8s.io" in the namespace "default"' \
   "a user without rights: kubectl shows the 403"
like "$(k --context fake-cert auth whoami 2>&1)" 'Username +fake-cert-user' \
     "a client certificate authenticates (auth whoami: SelfSubjectReview)"
is "$(k auth can-i create pods --subresource=exec 2>&1)" "yes" "auth can-i (SelfSubjectAccessReview) says yes"
fake_fault 'deny=create:pods/exec'
like "$(k auth can-i create pods --subresource=exec 2>&1)" "^no - denied" "...and no once the fault denies it"
pod=$(k get pods -o name | head -n 1)
like "$(k exec "${pod#pod/}" -- true 2>&1)" 'Forbidden.*cannot create resource "pods/exec"' \
     "exec denied at run time: kubectl shows the 403"
fake_fault '403=fake-admin'
like "$(k get sandboxclaims 2>&1)" '^Error from server \(Forbidden\)' "a run-time 403 for the user"
fake_fault clear

fresh_home
fake_fault 'status=429,count=4,retry-after=1'
out=$(k get sandboxwarmpools -o name 2>&1)
is "$out" $'sandboxwarmpool.extensions.agents.x-k8s.io/cold\nsandboxwarmpool.extensions.agents.x-k8s.io/warm' \
   "kubectl rides out four 429s with Retry-After (client-go retries)"
like "$(fake_state)" '"served": \{"429": 4\}' "...the fake did answer 429 four times"
fake_fault 'status=503,seconds=120,path=sandboxwarmpools'
like "$(k get sandboxwarmpools 2>&1)" 'ServiceUnavailable|the server is currently unable to handle the request' \
     "a lasting 503 storm ends in kubectl's error"
fake_fault clear

# The end: SIGTERM stops every pod; nothing is left.
pids=$(fake_state | /usr/bin/python3 -c 'import json,sys; print(" ".join(str(p) for x in json.load(sys.stdin)["pods"] for p in x["pids"]))')
like "$pids" '^[0-9]' "the fake's pods are processes (the pool's members)"
fake_stop
is "$?" "0" "the fake exits 0 on SIGTERM"
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
is "$left" "" "no pod process is left"
ok "its state directory is gone" test ! -e "$FAKE_STATE"

done_testing
