#!/bin/bash
# The kube backend against a real cluster (make check uses the fake API server instead):
#
#   AGENT_SANDBOX_KUBECONFIG=~/.kube/agents.yaml AGENT_SANDBOX_POOL=python-pool tests/e2e.sh
#   (also AGENT_SANDBOX_KUBE_CONTEXT, AGENT_SANDBOX_NAMESPACE)
#
# Runs, as TAP: sbx doctor (every verb, the pool), tests/integration/sbxsh.t on the kube
# backend (quick start, streams, statuses, signals, background processes, stdin mode, mixed
# lines with a real git push from the host), the failures a user can cause without faults (a
# missing pool, a claim that cannot get ready in time), status and release, and several
# sessions at once each in a pod of its own. Skipped, saying so, without the two variables.
HERE=$(cd "$(dirname "$0")" && pwd)
# tap.sh clears every AGENT_SANDBOX_*: the cluster's are the caller's to give, kept.
keep=$(declare -p AGENT_SANDBOX_KUBECONFIG AGENT_SANDBOX_POOL AGENT_SANDBOX_KUBE_CONTEXT \
       AGENT_SANDBOX_NAMESPACE 2>/dev/null)
. "$HERE/lib/tap.sh"
eval "$keep"

if [ -z "${AGENT_SANDBOX_KUBECONFIG:-}" ] || [ -z "${AGENT_SANDBOX_POOL:-}" ]; then
    skip_all "set AGENT_SANDBOX_KUBECONFIG and AGENT_SANDBOX_POOL to run the kube backend's tests against a real cluster"
fi
[ -x "$SBXSH_BIN/sbx-kube" ] || skip_all "sbx-kube is not built (make)"
export AGENT_SANDBOX_BACKEND=kube
export XDG_RUNTIME_DIR=$SBX_TEST_TMP/run
mkdir -p "$XDG_RUNTIME_DIR" "$SBX_TEST_TMP/proj"
cd "$SBX_TEST_TMP/proj" && git init -q . && echo hello > README
teardown() {
    local d
    for d in "$AGENT_SANDBOX_STATE_DIR"/*/; do
        [ -d "$d" ] && "$SBX" release --session "$(basename "$d")" >/dev/null 2>&1
    done
    tap_cleanup
}
trap teardown EXIT

out=$("$SBX" doctor 2>&1); rc=$?
is "$rc" 0 "sbx doctor: the cluster has what sbxsh needs"
[ "$rc" = 0 ] || diag "$out"

diag "tests/integration/sbxsh.t on the kube backend:"
SBX_IT_RUNTIMES=kube bash "$HERE/integration/sbxsh.t" > "$SBX_TEST_TMP/it.tap" 2>&1
rc=$?
is "$rc" 0 "tests/integration/sbxsh.t passes on the cluster ($(grep -c '^ok' "$SBX_TEST_TMP/it.tap") ok, $(grep -c '^not ok' "$SBX_TEST_TMP/it.tap") not ok)"
[ "$rc" = 0 ] || diag "$(grep -A3 '^not ok' "$SBX_TEST_TMP/it.tap")"

export AGENT_SANDBOX_SESSION=e2e-$$
is "$("$SBXSH" -c 'cat README')" hello "a command in a claimed pod"
st=$("$SBX" status)
like "$st" "pod: +[^ ]+ on node [^ ]+ \(claim sbx-" "sbx status shows the pod, its node and the claim"
"$SBX" release; is "$?" 0 "sbx release"
"$SBX" status >/dev/null 2>&1; is "$?" 1 "...and the session is gone"

AGENT_SANDBOX_SESSION=e2e-nopool-$$ AGENT_SANDBOX_POOL=sbxsh-e2e-no-such-pool \
    "$SBXSH" -c 'cat README' 2>"$SBX_TEST_TMP/e"
is "$?" 125 "a missing pool: 125"
like "$(cat "$SBX_TEST_TMP/e")" "does not exist.*AGENT_SANDBOX_POOL" "...saying what to set"

N=${E2E_SESSIONS:-5}
pids=()
for i in $(seq "$N"); do
    AGENT_SANDBOX_SESSION=e2e-c$i-$$ "$SBXSH" -c 'hostname' >"$SBX_TEST_TMP/h.$i" 2>&1 &
    pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
is "$fails" 0 "$N sessions at once all run"
is "$(cat "$SBX_TEST_TMP"/h.* | sort -u | wc -l)" "$N" "...each in a pod of its own"
fails=0
for i in $(seq "$N"); do "$SBX" release --session "e2e-c$i-$$" >/dev/null 2>&1 || fails=$((fails + 1)); done
is "$fails" 0 "...and all release"
done_testing
