#!/bin/bash
# A tenant rendered by `sbx render-pool`, applied with cluster/'s manifests to the fake API
# server, is claimed by sbxsh end to end (AGENT_SANDBOX_BACKEND=kube) with the kubeconfig
# make-kubeconfig.sh writes for the tenant: as the tenant's ServiceAccount, in the tenant's
# namespace (the kubeconfig's context's: no AGENT_SANDBOX_NAMESPACE), so its Role is enough
# for a session (claim, watch, exec, release) and sbx doctor finds nothing to fix.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../kube/fake.sh"
fake_cluster_start
export XDG_RUNTIME_DIR=$SBX_TEST_TMP/run
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
trap '"$SBX" release --session pool-e2e >/dev/null 2>&1; fake_kill; tap_cleanup' EXIT

admin() { KUBECONFIG=$FAKE_KUBECONFIG kubectl --request-timeout=60s "$@"; }
"$SBX" render-pool --tenant acme --image registry.example/sbx:1 --replicas 1 >"$SBX_TEST_TMP/pool.yaml"
out=$(admin apply -f "$SBX_TEST_TMP/pool.yaml" 2>&1); rc=$?
is "$rc" 0 "the rendered pool is applied" || diag "$out"
KUBECONFIG=$FAKE_KUBECONFIG "$C/make-kubeconfig.sh" "$FAKE_URL" acme >"$SBX_TEST_TMP/sa.kubeconfig" || bail_out "make-kubeconfig.sh failed"
chmod 600 "$SBX_TEST_TMP/sa.kubeconfig"

export AGENT_SANDBOX_BACKEND=kube AGENT_SANDBOX_KUBECONFIG=$SBX_TEST_TMP/sa.kubeconfig \
       AGENT_SANDBOX_POOL=sbx-acme AGENT_SANDBOX_SESSION=pool-e2e
PROJ=$SBX_TEST_TMP/proj
mkdir -p "$PROJ"
git -C "$PROJ" init -q
printf 'hello\n' >"$PROJ/README"
cd "$PROJ" || bail_out "cannot enter $PROJ"

out=$("$SBX" doctor 2>&1); rc=$?
is "$rc" 0 "sbx doctor with the ServiceAccount's kubeconfig: nothing to fix" || diag "$out"
out=$("$SBXSH" -c 'cat README && echo made > from-pod' 2>&1); rc=$?
is "$rc:$out" "0:hello" "sbxsh claims from the rendered pool and runs a command there"
is "$(cat "$PROJ/from-pod" 2>&1)" made "... what the command wrote is on the host"
claims=$(admin get sandboxclaims -n sbxsh-acme -o 'jsonpath={.items[*].spec.warmPoolRef.name}')
is "$claims" sbx-acme "... through one claim on the pool"
out=$("$SBX" release --session pool-e2e 2>&1); rc=$?
is "$rc" 0 "sbx release: exit 0" || diag "$out"
for _ in $(seq 100); do
    [ -z "$(admin get sandboxclaims -n sbxsh-acme -o name 2>/dev/null)" ] && break
    sleep 0.1
done
is "$(admin get sandboxclaims -n sbxsh-acme -o name 2>&1)" "" "... and the claim is gone"
done_testing
