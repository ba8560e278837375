#!/bin/bash
# Tenants isolated by default: two tenants rendered by `sbx render-pool` (each its own
# namespace, ServiceAccount, Role and RoleBinding) and applied with cluster/'s manifests to
# the fake API server, whose RBAC for ServiceAccount tokens is kube-apiserver's authorizer
# (tests/kube/cluster_kinds.py), each agent host with the kubeconfig make-kubeconfig.sh
# writes for its tenant. Tenant A's sbxsh works in A's namespace; pointed at B's namespace,
# or at B's claim (B's session state on A's host), A's identity is refused with 403, and
# sbxsh says so (125, the verb and the resource named) without touching B's session; A's
# kubectl cannot get B's claim or exec into B's pod, and `kubectl auth can-i` agrees.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../kube/fake.sh"
fake_cluster_start
unset KUBECONFIG
export AGENT_SANDBOX_BACKEND=kube

# Each tenant's agent host: its HOME, runtime and state directories, its kubeconfig, a
# project. as T CMD...: CMD run as tenant T's agent host, in T's project.
host() {
    local t=$1 d=$SBX_TEST_TMP/host-$1
    mkdir -p "$d/home" "$d/run" "$d/state" "$d/proj"
    chmod 700 "$d/run"
    git -C "$d/proj" init -q
    printf '%s\n' "$t" >"$d/proj/README"
}
as() {
    local t=$1 d=$SBX_TEST_TMP/host-$1
    shift
    (cd "$d/proj" && HOME=$d/home XDG_RUNTIME_DIR=$d/run AGENT_SANDBOX_STATE_DIR=$d/state \
        AGENT_SANDBOX_KUBECONFIG=$d/kubeconfig KUBECONFIG=$d/kubeconfig AGENT_SANDBOX_POOL=sbx-$t "$@")
}
admin() { KUBECONFIG=$FAKE_KUBECONFIG HOME=$SBX_TEST_TMP/admin kubectl --request-timeout=60s "$@"; }
cleanup() {
    as acme "$SBX" release --session a1 >/dev/null 2>&1
    as beta "$SBX" release --session b1 >/dev/null 2>&1
    fake_kill
    tap_cleanup
}
trap cleanup EXIT

for t in acme beta; do
    host $t
    "$SBX" render-pool --tenant $t --image registry.example/sbx:1 --replicas 1 >"$SBX_TEST_TMP/$t.yaml"
    out=$(admin apply -f "$SBX_TEST_TMP/$t.yaml" 2>&1) || bail_out "cannot apply tenant $t: $out"
    KUBECONFIG=$FAKE_KUBECONFIG HOME=$SBX_TEST_TMP/admin "$C/make-kubeconfig.sh" "$FAKE_URL" $t \
        >"$SBX_TEST_TMP/host-$t/kubeconfig" || bail_out "make-kubeconfig.sh $t failed"
    chmod 600 "$SBX_TEST_TMP/host-$t/kubeconfig"
done

# Each tenant's session in its own namespace.
out=$(as beta env AGENT_SANDBOX_SESSION=b1 "$SBXSH" -c 'cat README && echo secret > b-file' 2>&1); rc=$?
is "$rc:$out" "0:beta" "tenant beta's sbxsh runs in beta's namespace"
out=$(as acme env AGENT_SANDBOX_SESSION=a1 "$SBXSH" -c 'cat README' 2>&1); rc=$?
is "$rc:$out" "0:acme" "tenant acme's sbxsh runs in acme's namespace"
a_claim=$(admin get sandboxclaims -n sbxsh-acme -o 'jsonpath={.items[*].metadata.name}')
b_claim=$(admin get sandboxclaims -n sbxsh-beta -o 'jsonpath={.items[*].metadata.name}')
b_pod=$(admin get sandboxclaim "$b_claim" -n sbxsh-beta -o 'jsonpath={.status.sandbox.name}')
ok "... each through one claim in its own namespace" test -n "$a_claim" -a -n "$b_claim" -a -n "$b_pod"

# acme's identity pointed at beta's namespace: a new session is refused by RBAC, and sbxsh
# says which verb on which resource, where.
out=$(as acme env AGENT_SANDBOX_SESSION=a2 AGENT_SANDBOX_NAMESPACE=sbxsh-beta AGENT_SANDBOX_POOL=sbx-beta \
      "$SBXSH" -c 'cat README' 2>"$SBX_TEST_TMP/err"); rc=$?
err=$(cat "$SBX_TEST_TMP/err")
is "$rc:$out" "125:" "acme's sbxsh pointed at beta's namespace: 125, nothing run"
like "$err" '^sbxsh: .*may not (list|create) sandboxclaims.extensions.agents.x-k8s.io in namespace sbxsh-beta \(403 Forbidden: .*ask the cluster.s admin for RBAC' \
    "... the terminal names the verb, the resource and the namespace refused, and who can fix it" || diag "$err"
like "$err" 'system:serviceaccount:sbxsh-acme:sbxsh-agent-host' "... and whose identity it was" || diag "$err"
is "$(admin get sandboxclaims -n sbxsh-beta -o 'jsonpath={.items[*].metadata.name}')" "$b_claim" \
    "... no claim was made in beta's namespace"

# acme's host with a record of beta's session (its kube.json: beta's claim, pod and
# namespace, as an agent host that learnt them would write it) but acme's own kubeconfig
# and context, at the same path as beta's host keeps its own: every call about it is
# refused, and nothing of beta's is read or released. (A kube.json naming beta's own
# kubeconfig file would be beta's credentials: nothing RBAC can refuse.)
mkdir -p "$SBX_TEST_TMP/host-acme/state/b1"
python3 - "$SBX_TEST_TMP/host-beta/state/b1/kube.json" "$SBX_TEST_TMP/host-acme/kubeconfig" \
    >"$SBX_TEST_TMP/host-acme/state/b1/kube.json" <<'PY'
import json, sys
k = json.load(open(sys.argv[1]))
k.update(kubeconfig=sys.argv[2], context="sbxsh-acme")
print(json.dumps(k))
PY
out=$(as acme env AGENT_SANDBOX_SESSION=b1 "$SBXSH" -c 'cat b-file' 2>"$SBX_TEST_TMP/err"); rc=$?
err=$(cat "$SBX_TEST_TMP/err")
is "$rc:$out" "125:" "acme's sbxsh given beta's claim: 125, nothing read from beta's pod"
like "$err" '^sbxsh: .*may not [a-z]+ (sandboxclaims.extensions.agents.x-k8s.io|pods|pods/exec)( "[a-z0-9-]+")? in namespace sbxsh-beta \(403 Forbidden' \
    "... the terminal names the verb and the resource refused" || diag "$err"
out=$(as acme "$SBX" release --session b1 2>&1); rc=$?
isnt "$rc" 0 "acme's sbx release of beta's claim: refused" || diag "$out"
like "$out" 'may not delete sandboxclaims.extensions.agents.x-k8s.io "'"$b_claim"'" in namespace sbxsh-beta \(403 Forbidden' \
    "... as forbidden, naming the verb and the claim" || diag "$out"
is "$(admin get sandboxclaims -n sbxsh-beta -o 'jsonpath={.items[*].metadata.name}')" "$b_claim" \
    "... beta's claim is still there"

# acme's kubectl, with the same kubeconfig: beta's claim and pod are out of reach.
out=$(as acme kubectl get sandboxclaim "$b_claim" -n sbxsh-beta 2>&1); rc=$?
isnt "$rc" 0 "acme's kubectl get of beta's claim: refused"
like "$out" "Error from server \\(Forbidden\\): sandboxclaims.extensions.agents.x-k8s.io \"$b_claim\" is forbidden: User \"system:serviceaccount:sbxsh-acme:sbxsh-agent-host\" cannot get resource \"sandboxclaims\"" \
    "... Forbidden, as kube-apiserver words it" || diag "$out"
out=$(as acme kubectl exec -n sbxsh-beta "$b_pod" -- cat /home/b-file 2>&1); rc=$?
isnt "$rc" 0 "acme's kubectl exec into beta's pod: refused"
like "$out" "Error from server \\(Forbidden\\): .*cannot (get|create) resource \"pods(/exec)?\" in API group \"\" in the namespace \"sbxsh-beta\"" \
    "... Forbidden, on the pod or its exec" || diag "$out"
unlike "$out" secret "... nothing of beta's pod read"
out=$(as acme kubectl get sandboxclaims -o name 2>&1)
is "$out" "sandboxclaim.extensions.agents.x-k8s.io/$a_claim" "acme's kubectl lists its own claims, in its own namespace"

# kubectl auth can-i (SelfSubjectAccessReviews) agrees, for each verb sbxsh uses.
for v in "create sandboxclaims.extensions.agents.x-k8s.io" "get sandboxclaims.extensions.agents.x-k8s.io/$b_claim" \
         "watch sandboxclaims.extensions.agents.x-k8s.io" "delete sandboxclaims.extensions.agents.x-k8s.io" \
         "get sandboxes.agents.x-k8s.io" "get pods/$b_pod" "create pods/$b_pod --subresource=exec"; do
    # shellcheck disable=SC2086 # the verb and the resource
    got="$(as acme kubectl auth can-i $v -n sbxsh-acme 2>/dev/null) $(as acme kubectl auth can-i $v -n sbxsh-beta 2>/dev/null) $(as beta kubectl auth can-i $v -n sbxsh-beta 2>/dev/null)"
    is "$got" "yes no yes" "can-i $v: acme in acme's namespace yes, in beta's no; beta in beta's yes"
done

# beta's session is as it was.
out=$(as beta env AGENT_SANDBOX_SESSION=b1 "$SBXSH" -c 'cat b-file' 2>&1); rc=$?
is "$rc:$out" "0:secret" "beta's session still runs, in the same pod"
done_testing
