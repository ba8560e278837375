#!/bin/bash
# The kube backend's failures, each ending in sbxsh's own status (125), a message that says
# what to do, and the host tree as it was: 401, 403, a missing pool, no pool named, an
# unreachable API server, a missing namespace, a claim that never gets ready, 429 and 503 storms (retried, then
# a clear error). Nothing is left behind: no claim, no holder.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
# pool f: warm; pool slow: no warm pod and a cold start far longer than any timeout here
kube_fake_start --pool f=1 --pool slow=0 --cold-start-ms 600000 ||
    bail_out "the fake API server did not start"
kube_env kf
export AGENT_SANDBOX_POOL=f
trap kube_teardown EXIT
listing() { (cd "$PROJ" && find . -path ./.git -prune -o -print | LC_ALL=C sort | xargs md5sum 2>/dev/null); }
before=$(listing)

# run NAME ENV...: sbxsh -c 'cat README' in a session of its own with ENV; sets rc and err
run() {
    local name=$1; shift
    env AGENT_SANDBOX_SESSION="kf-$name" "$@" "$SBXSH" -c 'cat README' \
        >"$SBX_TEST_TMP/out" 2>"$SBX_TEST_TMP/err"
    rc=$?
    err=$(cat "$SBX_TEST_TMP/err")
}

run ok
is "$rc:$(cat "$SBX_TEST_TMP/out")" "0:hello" "a claim from the warm pool works (the baseline)"
"$SBX" release --session kf-ok >/dev/null 2>&1

run 401 AGENT_SANDBOX_KUBE_CONTEXT=fake-401
is "$rc" 125 "401: exit 125"
like "$err" "^sbxsh: .*did not accept the credentials.*(401|Unauthorized)" "...saying the credentials were refused"

run 403 AGENT_SANDBOX_KUBE_CONTEXT=fake-403
is "$rc" 125 "403: exit 125"
like "$err" "^sbxsh: .*(403|[Ff]orbidden).*sandboxclaims" "...naming what may not be done"

run nopool AGENT_SANDBOX_POOL=no-such-pool
is "$rc" 125 "a missing pool: exit 125"
like "$err" "SandboxWarmPool 'no-such-pool' does not exist.*AGENT_SANDBOX_POOL" \
     "...saying the pool does not exist and what to set"

run nons AGENT_SANDBOX_NAMESPACE=no-such-ns
is "$rc" 125 "a namespace that does not exist: exit 125"
like "$err" "the namespace no-such-ns does not exist .*AGENT_SANDBOX_NAMESPACE" \
     "...saying so and what to set (not that an API is missing)"
unlike "$err" "CRD" "...no word of a CRD"

run unset AGENT_SANDBOX_POOL=
is "$rc" 125 "no pool named: exit 125"
like "$err" "needs AGENT_SANDBOX_POOL" "...saying AGENT_SANDBOX_POOL is needed"

sed "s#server: https://127.0.0.1:[0-9]*#server: https://127.0.0.1:9#" "$FAKE_KUBECONFIG" \
    > "$SBX_TEST_TMP/dead.kubeconfig"
run dead AGENT_SANDBOX_KUBECONFIG="$SBX_TEST_TMP/dead.kubeconfig" AGENT_SANDBOX_CLAIM_TIMEOUT=3
is "$rc" 125 "an unreachable API server: exit 125"
like "$err" "cannot reach the API server at https://127.0.0.1:9" "...saying which server it could not reach"

run slow AGENT_SANDBOX_POOL=slow AGENT_SANDBOX_CLAIM_TIMEOUT=2
is "$rc" 125 "a claim that never gets ready: exit 125"
like "$err" "no pod became ready for SandboxClaim .* within 2 s \(Ready=False .*\).*AGENT_SANDBOX_CLAIM_TIMEOUT" \
     "...quoting the claim's last condition and what to raise"

# at a terminal, a claim slower than half a second says what it waits for, in one line
out=$(AGENT_SANDBOX_SESSION=kf-tty AGENT_SANDBOX_POOL=slow AGENT_SANDBOX_CLAIM_TIMEOUT=2 \
      "$HERE/../local/ptyrun.py" -- "$SBXSH" -c 'cat README')
is "$(grep -c 'sbxsh: waiting for a pod from pool slow' <<<"$out")" 1 \
   "at a terminal, a slow claim shows one line of progress"
like "$out" "waiting for a pod from pool slow \(claim sbx-kf-tty-[0-9a-f]+: [A-Za-z]+" "...naming the claim and the controller's reason"
unlike "$(cat "$SBX_TEST_TMP/err")" "waiting for a pod" "...and nothing of it when stderr is not a terminal"

fake_fault "status=503,seconds=2" || bail_out "the fake refused a fault"
run storm503
is "$rc:$(cat "$SBX_TEST_TMP/out")" "0:hello" "a 503 storm of 2 s: retried, the command runs"
"$SBX" release --session kf-storm503 >/dev/null 2>&1

fake_fault "status=429,seconds=60,retry-after=1" || bail_out "the fake refused a fault"
run storm429 AGENT_SANDBOX_CLAIM_TIMEOUT=4
is "$rc" 125 "a 429 storm longer than the wait: exit 125"
like "$err" "429|TooManyRequests" "...saying the server kept answering 429"
fake_fault clear

is "$(listing)" "$before" "the host tree is intact after all of it"
for _ in $(seq 100); do [ -z "$(claims)" ] && break; sleep 0.1; done
is "$(claims)" "" "no claim is left behind"
# a session that could not start ends by itself, once its holder is done with it
for _ in $(seq 200); do [ "$(holders)" = 0 ] && break; sleep 0.1; done
is "$(holders)" 0 "no holder is left behind"
done_testing
