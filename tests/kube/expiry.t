#!/bin/bash
# A claim whose renewal the cluster refuses (sbxsh's user may not patch sandboxclaims):
# the next command is told once, with when the session will end; when the shutdownTime
# comes, the command running then fails (125) naming the expiry, not only "the sandbox
# stopped"; the next command claims anew.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool e=2 || bail_out "the fake API server did not start"
kube_env ke
export AGENT_SANDBOX_POOL=e AGENT_SANDBOX_TTL=60   # renewed every 15 s; the least allowed
trap kube_teardown EXIT
claim_of() { sed -n 's/.*"claim":"\([^"]*\)".*/\1/p' "$AGENT_SANDBOX_STATE_DIR/ke/kube.json"; }

is "$("$SBXSH" -c 'cat README' 2>&1)" hello "a first command claims a pod"
claim1=$(claim_of)
fake_fault "deny=patch:sandboxclaims" || bail_out "the fake refused a fault"
# the stream tries to renew within 15 s: wait for its notice (bounded)
for _ in $(seq 300); do [ -e "$AGENT_SANDBOX_STATE_DIR/ke/stream.notice" ] && break; sleep 0.1; done
out=$("$SBXSH" -c 'cat README' 2>&1)
like "$out" "^sbxsh: warning: the claim $claim1's shutdownTime cannot be moved forward \\(.*\\): the session ends when it expires, at [0-9T:Z-]+, with its sandbox" \
     "a refused renewal is said to the next command, with when the session ends"
like "$out" $'\nhello$' "...which runs"
is "$("$SBXSH" -c 'cat README' 2>&1)" hello "...and said once"

# the command running when the claim expires (60 s after its last renewal)
"$SBXSH" -c 'sleep 100' >/dev/null 2>"$SBX_TEST_TMP/err"
is "$?" 125 "the claim expires under a command: 125"
like "$(cat "$SBX_TEST_TMP/err")" "sandbox stopped \\(the session's claim $claim1 expired at [0-9T:Z-]+ \\(its shutdownTime, which could not be moved forward\\)\\)" \
     "...naming the expiry"
fake_fault clear || bail_out "the fake refused a fault"
is "$("$SBXSH" -c 'cat README' 2>&1)" hello "the next command runs"
isnt "$(claim_of)" "$claim1" "...in a new claim"
done_testing
