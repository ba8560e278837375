#!/bin/bash
# An API server that offers HTTP/2, as kube-apiserver does (Go's net/http: ALPN h2 and
# http/1.1): the fake behind an HTTP/2 front (fake.sh's fake_h2_front, nghttpx). sbxsh's REST
# calls and watches then go over h2 (libcurl picks it), while every exec, a WebSocket
# upgrade that exists only in HTTP/1.1, is forced to http/1.1 (kube/client.c: libcurl 7.88
# also crashes in curl_easy_send on an h2 CONNECT_ONLY handle); the real kubectl works the
# same way through it.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
command -v nghttpx >/dev/null || skip_all "nghttpx (nghttp2-proxy) is not installed (make deps)"
kube_fake_start --pool h=1 || bail_out "the fake API server did not start"
kube_env kh
export AGENT_SANDBOX_POOL=h
trap kube_teardown EXIT
fake_h2_front || bail_out "the HTTP/2 front did not start"
export AGENT_SANDBOX_KUBECONFIG=$FAKE_H2_KUBECONFIG

is "$(curl -s -o /dev/null -w '%{http_version}' --cacert "$FAKE_CA" "$FAKE_H2_URL/version")" 2 \
   "the API server offers HTTP/2 by ALPN (curl gets h2)"
# The pool's pod is held un-Ready (the fake's pod-not-ready) until sbxsh's watch of its claim
# has been seen, then let go (pod-ready): a warm claim is bound 150 ms after its POST, and on
# a loaded machine sbxsh's first GET of it can come later than that and find it Ready, so
# that no watch runs for the check below to see (a CI run once had none).
held=
for _ in $(seq 300); do
    pool_pod=$(pods | head -1)
    [ -n "$pool_pod" ] &&
        [ "$(fake_curl -o /dev/null -w '%{http_code}' -X POST --data-binary "pod-not-ready=$pool_pod,seconds=600" /fake/fault)" = 200 ] &&
        { held=$pool_pod; break; }
    sleep 0.1
done
[ -n "$held" ] || bail_out "the pool's pod did not come, or the fake refused pod-not-ready"
"$SBXSH" -c 'cat README' >"$SBX_TEST_TMP/first.out" 2>&1 &
first=$!
for _ in $(seq 600); do
    grep -q '^h2 GET [^ ]*sandboxclaims?watch=1.*"sbxsh/' "$FAKE_H2_LOG" && break
    kill -0 "$first" 2>/dev/null || break
    sleep 0.1
done
fake_fault "pod-ready=$held"
wait "$first"
is "$(cat "$SBX_TEST_TMP/first.out")" hello "sbxsh through it: a claim and a command run"
is "$("$SBXSH" -c 'cat README; echo more >> README; cat README' 2>&1)" $'hello\nhello\nmore' \
   "...and the next command, its change synced back"
is "$(cat README)" $'hello\nmore' "...onto the host"

# what went over which protocol (nghttpx logs a request when it ends: the last exec's is
# there once its stream closed, so the session is released first)
spod=$(session_pod)
"$SBX" release >/dev/null 2>&1
ours=$(grep '"sbxsh/' "$FAKE_H2_LOG")
ok "sbxsh's calls reached the server through the front" test -n "$ours"
is "$(grep -v '/exec?' <<<"$ours" | grep -vc '^h2 ')" 0 "...every REST call of sbxsh went over h2"
ok "...the claim's watch among them" grep -q '^h2 GET [^ ]*sandboxclaims?watch=1' <<<"$ours"
ok "...its create of the claim" grep -q '^h2 POST [^ ]*/sandboxclaims ' <<<"$ours"
ok "...its delete" grep -q '^h2 DELETE [^ ]*/sandboxclaims/' <<<"$ours"
ok "...and its gets of the pod" grep -q '^h2 GET [^ ]*/pods/[^/ ]* ' <<<"$ours"
ok "sbxsh's execs happened" grep -q '/exec?' <<<"$ours"
is "$(grep '/exec?' <<<"$ours" | grep -vc '^http/1.1 GET [^ ]* 101 ')" 0 \
   "...each an HTTP/1.1 WebSocket upgrade (101), never h2"

# the real kubectl through the same front (REST on h2, exec upgraded over HTTP/1.1)
export KUBECONFIG=$FAKE_H2_KUBECONFIG
k() { kubectl --request-timeout=60s "$@"; }
if command -v kubectl >/dev/null; then
    # the pool's own pod: the one the pool made to replace the session's (released, and
    # going: the refill comes --refill-ms after the claim, so that for a moment the pod
    # list may hold only the dying one, or nothing)
    pod=
    for _ in $(seq 300); do
        pod=$(pods | grep -vxF -e "$spod" | head -1)
        [ -n "$pod" ] && break
        sleep 0.1
    done
    { [ -n "$spod" ] && [ -n "$pod" ]; } || diag "no pool pod besides the session's ('$spod') within 30 s: $(pods | tr '\n' ' ')"
    ok "kubectl: the pool's pod is Ready" k wait --for=condition=Ready "pod/$pod" --timeout=60s
    like "$(k get pods 2>&1)" "^NAME " "kubectl get pods through the HTTP/2 front"
    # (kubectl 1.32's dropped first frame, kubernetes#131189: tests/kube/kubectl.t's kx)
    for try in 1 2 3 4 5; do
        out=$(k exec "$pod" -- sh -c 'echo ok; exit 3' 2>&1)
        rc=$?
        grep -q 'Unknown stream id' <<<"$out" || break
        diag "try $try: kubectl dropped a frame (kubernetes#131189)"
    done
    is "$rc:$out" $'3:ok\ncommand terminated with exit code 3' "kubectl exec through it: output and status"
    kube_lines=$(grep '"kubectl/v' "$FAKE_H2_LOG")
    ok "...kubectl's REST calls went over h2" grep -q '^h2 GET /api/v1/namespaces/default/pods' <<<"$kube_lines"
    ok "...its exec as an HTTP/1.1 upgrade (101)" grep -q '^http/1.1 GET [^ ]*/exec?[^ ]* 101 ' <<<"$kube_lines"
else
    for _ in 1 2 3 4 5 6; do skip "kubectl is not installed"; done
fi
done_testing
