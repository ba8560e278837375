#!/bin/bash
# Every call about a session goes to the cluster its claim was made on, as kube.json
# records it (server, context, namespace): after `kubectl config use-context other`, the
# session's commands and `sbx release` still reach it (release used to exit 0 and leave the
# claim and pod on the first cluster); when the recorded context itself now leads to
# another server, each call is refused saying where the session is and how to reach it,
# and nothing is released by mistake.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool c=2 || bail_out "the fake API server did not start"
kube_env kc
export AGENT_SANDBOX_POOL=c
trap kube_teardown EXIT

# A kubeconfig of our own: the fake's, plus a cluster and context "other" whose server
# refuses connections (port 9 on loopback).
KC=$SBX_TEST_TMP/kubeconfig
python3 - "$FAKE_KUBECONFIG" "$KC" <<'PY'
import sys
text = open(sys.argv[1]).read()
other_cluster = '- name: other\n  cluster:\n    server: https://127.0.0.1:9\n'
other_ctx = '- name: other\n  context:\n    cluster: other\n    user: fake-admin\n    namespace: default\n'
text = text.replace('contexts:\n', other_cluster + 'contexts:\n' + other_ctx, 1)
open(sys.argv[2], 'w').write(text)
PY
chmod 600 "$KC"
export AGENT_SANDBOX_KUBECONFIG=$KC
use_context() { sed -i "s/^current-context: .*/current-context: $1/" "$KC"; }
fake_server=$(sed -n 's/^ *server: \(https:\/\/127.0.0.1:[0-9]*\)$/\1/p' "$FAKE_KUBECONFIG" | head -1)

is "$("$SBXSH" -c 'cat README' 2>&1)" hello "a session claimed through the context fake"
claim=$(sed -n 's/.*"claim":"\([^"]*\)".*/\1/p' "$AGENT_SANDBOX_STATE_DIR/kc/kube.json")
like "$(cat "$AGENT_SANDBOX_STATE_DIR/kc/kube.json")" '"context":"fake"' "...kube.json records its context"

use_context other
"$SBX" release >/dev/null 2>&1 & pid=$!   # (a holder may be serving: released through it)
wait $pid
is "$?" 0 "after use-context other, sbx release succeeds"
for _ in $(seq 100); do [ -z "$(claims)" ] && break; sleep 0.1; done
is "$(claims)" "" "...and the claim is gone from the cluster it was made on"

kill_holder() {
    kill "$("$SBX" status --json 2>/dev/null | sed -n 's/.*"holder_pid":\([0-9]*\).*/\1/p')" 2>/dev/null
    sleep 0.5
}
use_context fake
is "$("$SBXSH" -c 'echo hi > mark; cat README' 2>&1)" hello "a new session, through fake again"
claim=$(sed -n 's/.*"claim":"\([^"]*\)".*/\1/p' "$AGENT_SANDBOX_STATE_DIR/kc/kube.json")
kill_holder   # the next call's holder reads the kubeconfig again
use_context other
is "$("$SBXSH" -c 'cat mark' 2>&1)" hi "after use-context other, the session's commands still run, on its cluster"
is "$(claims)" "$claim" "...in the same claim"

# The recorded context now leads elsewhere: the context fake's cluster becomes other.
use_context fake
python3 - "$KC" <<'PY'
import sys
t = open(sys.argv[1]).read()
t = t.replace('- name: fake\n  context:\n    cluster: fake\n', '- name: fake\n  context:\n    cluster: other\n', 1)
open(sys.argv[1], 'w').write(t)
PY
kill_holder
out=$("$SBX" release 2>&1)
isnt "$?" 0 "the recorded context now leads to another server: sbx release refuses"
like "$out" "is on the API server $fake_server \\(context fake\\), but the kubeconfig now leads to https://127.0.0.1:9" \
     "...saying where the session is and where the kubeconfig leads"
is "$(claims)" "$claim" "...and the claim is still there"
cp "$FAKE_KUBECONFIG" "$KC"
"$SBX" release >/dev/null 2>&1
is "$?" 0 "with the kubeconfig pointing back, sbx release works"
for _ in $(seq 100); do [ -z "$(claims)" ] && break; sleep 0.1; done
is "$(claims)" "" "...and the claim is gone"
done_testing
