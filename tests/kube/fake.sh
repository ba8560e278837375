# shellcheck shell=bash
# Helpers for tests that run tests/kube/fake-apiserver (source after tests/lib/tap.sh).
#
# fake_skip_reason: empty when the fake can run here, else why not (for skip_all).
# fake_start ARGS...: starts the fake (--port 0, its kubeconfig and state directory under
#   $SBX_TEST_TMP, plus ARGS), waits (bounded) for the kubeconfig it writes once it listens,
#   and sets FAKE_PID, FAKE_KUBECONFIG, FAKE_STATE, FAKE_URL, FAKE_CA (a PEM file) and
#   FAKE_TOKEN (the admin user's token). The fake is killed at exit if a test did not stop it.
# fake_curl [CURL ARGS...] PATH: curl to the fake as the admin user (-s, the CA checked).
# fake_fault SPEC: injects a fault at run time (POST /fake/fault); fails if it was refused.
# fake_state: GET /fake/state (JSON: pods with their host pids and directories, faults).
# fake_stop: SIGTERM, then waits (bounded) for the fake to exit; returns its exit status.
# fake_h2_front: puts an HTTP/2 front before the fake, as kube-apiserver offers h2 by ALPN
#   (Go's net/http does): nghttpx (nghttp2's proxy), TLS with the fake's own certificate,
#   ALPN h2 and http/1.1, HTTP/1.1 to the fake (upgrades, so exec, pass through); sets
#   FAKE_H2_URL, FAKE_H2_KUBECONFIG (the fake's, pointed at it) and FAKE_H2_LOG (one line a
#   request: "ALPN METHOD PATH STATUS USER-AGENT"); stopped with the fake. Returns 1 when
#   nghttpx is missing (the caller skips) or does not answer within 30 s.
# fake_cluster_start: the start of the tests that apply cluster/'s manifests
#   (tests/cluster/tenants.t, pool-e2e.t): skips without sbx-kube, kubectl or a fake that
#   can run pods, starts the fake (namespace default, pods ready after 300 ms), applies
#   cluster/'s RuntimeClass and admission policy as the admin, and unsets KUBECACHEDIR;
#   sets C to cluster/'s directory.

FAKE_BIN=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fake-apiserver

fake_skip_reason() {
    local c
    for c in openssl curl bwrap; do
        command -v $c >/dev/null || { echo "$c is not installed (make deps)"; return; }
    done
    [ -x /usr/bin/python3 ] || { echo "/usr/bin/python3 is not installed"; return; }
    bwrap --unshare-user --unshare-pid --ro-bind /usr /usr --symlink usr/lib64 /lib64 \
        --symlink usr/lib /lib --symlink usr/bin /bin --proc /proc --dev /dev \
        /bin/true >/dev/null 2>&1 || echo "bubblewrap cannot create user namespaces here"
}

fake_start() {
    local v unset=()
    FAKE_KUBECONFIG=$SBX_TEST_TMP/fake.kubeconfig
    FAKE_STATE=$SBX_TEST_TMP/fake.state
    FAKE_LOG=$SBX_TEST_TMP/fake.log
    rm -f "$FAKE_KUBECONFIG"
    # The fake stands for a cluster, which has none of the client's sbxsh settings (the
    # state directory tap.sh set, what the test exported): its pods inherit its environment,
    # and the tests look there for what of sbxsh's reaches a pod.
    for v in $(compgen -e AGENT_SANDBOX_); do unset+=(-u "$v"); done
    env "${unset[@]}" "$FAKE_BIN" --port 0 --kubeconfig "$FAKE_KUBECONFIG" --state-dir "$FAKE_STATE" \
        --log "$FAKE_LOG" "$@" </dev/null >"$SBX_TEST_TMP/fake.out" 2>&1 &
    FAKE_PID=$!
    tap_logs "$FAKE_LOG" "$SBX_TEST_TMP/fake.out"
    trap 'fake_kill; tap_cleanup' EXIT
    for _ in $(seq 300); do
        [ -e "$FAKE_KUBECONFIG" ] && break
        kill -0 "$FAKE_PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ ! -e "$FAKE_KUBECONFIG" ]; then
        diag "the fake did not write its kubeconfig within 30 s:" "$(cat "$SBX_TEST_TMP/fake.out")"
        return 1
    fi
    FAKE_URL=$(sed -n 's/^ *server: //p' "$FAKE_KUBECONFIG")
    FAKE_CA=$SBX_TEST_TMP/fake-ca.pem
    sed -n 's/^ *certificate-authority-data: //p' "$FAKE_KUBECONFIG" | base64 -d >"$FAKE_CA"
    FAKE_TOKEN=$(awk '/^users:/ { s = 1 } s && /^- name: fake-admin$/ { u = 1 } u && /token:/ { print $2; exit }' \
        "$FAKE_KUBECONFIG")
}

fake_curl() {
    local path=${!#}
    curl -s --max-time 60 --cacert "$FAKE_CA" -H "Authorization: Bearer $FAKE_TOKEN" \
        "${@:1:$#-1}" "$FAKE_URL$path"
}

fake_fault() {
    local out
    out=$(fake_curl -w '\n%{http_code}' -X POST --data-binary "$1" /fake/fault)
    [ "${out##*$'\n'}" = 200 ] || { diag "fault $1 refused: $out"; return 1; }
}

fake_state() { fake_curl /fake/state; }

fake_stop() {
    [ -n "${FAKE_PID:-}" ] || return 0
    kill -TERM "$FAKE_PID" 2>/dev/null
    for _ in $(seq 300); do
        kill -0 "$FAKE_PID" 2>/dev/null || break
        sleep 0.1
    done
    wait "$FAKE_PID"
    local rc=$?
    FAKE_PID=
    return $rc
}

fake_h2_front() {
    command -v nghttpx >/dev/null || return 1
    local port fport=${FAKE_URL##*:}
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    FAKE_H2_LOG=$SBX_TEST_TMP/h2.log
    FAKE_H2_URL=https://127.0.0.1:$port
    FAKE_H2_KUBECONFIG=$SBX_TEST_TMP/h2.kubeconfig
    # long read timeouts: watches and exec streams are quiet for minutes
    nghttpx --conf=/dev/null --frontend="127.0.0.1,$port" --backend="127.0.0.1,$fport;;tls" \
        --insecure --no-via --no-ocsp --workers=1 --accesslog-file="$FAKE_H2_LOG" \
        --accesslog-format='$alpn $method $path $status "$http_user_agent"' \
        --errorlog-file="$SBX_TEST_TMP/h2.err" --frontend-read-timeout=1h \
        --frontend-http2-read-timeout=1h --backend-read-timeout=1h --stream-read-timeout=0 \
        --backend-keep-alive-timeout=1h --frontend-keep-alive-timeout=1h \
        "$FAKE_STATE/pki/server.key" "$FAKE_STATE/pki/server.crt" </dev/null >/dev/null 2>&1 &
    FAKE_H2_PID=$!
    tap_logs "$FAKE_H2_LOG" "$SBX_TEST_TMP/h2.err"
    sed "s#server: https://127.0.0.1:$fport\$#server: $FAKE_H2_URL#" "$FAKE_KUBECONFIG" >"$FAKE_H2_KUBECONFIG"
    for _ in $(seq 300); do
        curl -s -o /dev/null --max-time 5 --cacert "$FAKE_CA" "$FAKE_H2_URL/version" && return 0
        kill -0 "$FAKE_H2_PID" 2>/dev/null || break
        sleep 0.1
    done
    diag "nghttpx did not answer within 30 s: $(tail -5 "$SBX_TEST_TMP/h2.err" 2>/dev/null)"
    return 1
}

# At exit, whatever happened: the fake (and with it, every pod) goes.
fake_kill() {
    [ -z "${FAKE_H2_PID:-}" ] || { kill -TERM "$FAKE_H2_PID" 2>/dev/null; FAKE_H2_PID=; }
    [ -n "${FAKE_PID:-}" ] || return 0
    kill -TERM "$FAKE_PID" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$FAKE_PID" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$FAKE_PID" 2>/dev/null
}

fake_cluster_start() {
    local why f
    C=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../cluster" && pwd)
    [ -x "$SBXSH_BIN/sbx-kube" ] || skip_all "the kube backend is not built here (no sbx-kube)"
    command -v kubectl >/dev/null || skip_all "kubectl is not installed"
    why=$(fake_skip_reason)
    [ -n "$why" ] && skip_all "the fake API server cannot run pods: $why"
    fake_start --namespace default --cold-start-ms 300 || bail_out "the fake did not start"
    unset KUBECACHEDIR
    for f in runtimeclass.yaml admission.yaml; do
        KUBECONFIG=$FAKE_KUBECONFIG HOME=$SBX_TEST_TMP/admin kubectl --request-timeout=60s \
            apply -f "$C/$f" >/dev/null || bail_out "cannot apply cluster/$f"
    done
}
