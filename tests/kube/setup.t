#!/bin/bash
# The stream's setup in a fresh pod (the probe for sbx-agent, its upload, the first exec of
# the agent), as a real API server answers it: a 429 or a 503 on the exec upgrade is a
# moment's load and is tried again, as every other request is; a refused exec (403), or
# an API server that keeps failing, ends the command with 125 and the reason on the
# user's terminal (the verb and resource, or the last answer), never the bare "connection
# reset" of the stream that went away.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool s=2 || bail_out "the fake API server did not start"
kube_env ks
export AGENT_SANDBOX_POOL=s
trap kube_teardown EXIT

# run NAME: sbxsh -c 'cat README' in a new session NAME; sets rc, out and err
run() {
    AGENT_SANDBOX_SESSION="ks-$1" "$SBXSH" -c 'cat README' >"$SBX_TEST_TMP/out" 2>"$SBX_TEST_TMP/err"
    rc=$?
    out=$(cat "$SBX_TEST_TMP/out") err=$(cat "$SBX_TEST_TMP/err")
}
release() { "$SBX" release --session "ks-$1" >/dev/null 2>&1; }

fake_fault "status=429,count=2,path=/exec" || bail_out "the fake refused a fault"
run busy
is "$rc:$out" "0:hello" "two 429s on the first exec: tried again, the command runs"
is "$err" "" "...with nothing said"
release busy

fake_fault "status=503,count=1,path=/exec" || bail_out "the fake refused a fault"
run flaky
is "$rc:$out" "0:hello" "a 503 on the first exec: tried again, the command runs"
release flaky

fake_fault "deny=create:pods/exec" || bail_out "the fake refused a fault"
run denied
is "$rc" 125 "exec forbidden (403): sbxsh's own failure, 125"
like "$err" '^sbxsh: .*cannot reach sbx-agent in the pod [^ ]*: .*pods/exec' \
     "...the terminal says the exec into the pod is forbidden"
unlike "$err" 'Connection reset|reading from sbx-agent' "...not that a connection was reset"
is "$(printf '%s' "$err" | tr -d '\n' | LC_ALL=C tr -d '[:print:]' | wc -c)" 0 "...in plain text"
fake_fault clear || bail_out "the fake refused a fault"
run denied
is "$rc:$out" "0:hello" "the same session works once the exec is allowed"
release denied

fake_fault "status=503,seconds=45,path=/exec" || bail_out "the fake refused a fault"
run down
is "$rc" 125 "an API server that keeps answering 503 to the exec: 125 after the retries"
like "$err" '^sbxsh: .*cannot reach sbx-agent in the pod [^ ]*: .*503' "...quoting its last answer"
fake_fault clear || bail_out "the fake refused a fault"
release down
done_testing
