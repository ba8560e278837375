# shellcheck shell=bash
# Shared setup for the kube backend's tests (tests/kube/*.t; source after tests/lib/tap.sh).
#
# kube_skip_reason: empty when the backend can be tested here (the fake can run and sbx-kube
#   is built), else why not.
# kube_fake_start ARGS...: the fake API server (tests/kube/fake.sh's fake_start with ARGS,
#   e.g. --pool p=2) and AGENT_SANDBOX_KUBECONFIG pointing at it.
# kube_env [SESSION]: tests/local/lib.sh's local_env on the kube backend (a runtime directory
#   beside tap.sh's HOME and state directory, a git repository $PROJ as the code
#   directory, AGENT_SANDBOX_BACKEND=kube) and the session SESSION (default kt).
# claims / pods: the names of the claims and pods the fake has, one a line.
# session_pod: the session's pod as kube.json records it; holders: how many holders serve.
# kube_teardown: releases what the test left (every session of its state directory), stops
#   the fake (and so every pod).
KUBE_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$KUBE_HERE/fake.sh"
. "$KUBE_HERE/../local/lib.sh"

kube_skip_reason() {
    [ -x "$SBXSH_BIN/sbx-kube" ] || { echo "sbx-kube is not built"; return; }
    fake_skip_reason
}

kube_fake_start() {
    fake_start "$@" || return 1
    export AGENT_SANDBOX_KUBECONFIG=$FAKE_KUBECONFIG
}

kube_env() { # [SESSION]
    RT=kube local_env
    export AGENT_SANDBOX_SESSION=${1:-kt}
}

# The names of the fake's objects of one kind (sandboxclaims, sandboxes: agent-sandbox's;
# pods: core), one a line.
kube_names() { # KIND
    local api=/apis/extensions.agents.x-k8s.io/v1beta1
    case $1 in
    pods) api=/api/v1 ;;
    sandboxes) api=/apis/agents.x-k8s.io/v1beta1 ;;
    esac
    fake_curl "$api/namespaces/default/$1" |
        python3 -c 'import json,sys; [print(i["metadata"]["name"]) for i in json.load(sys.stdin)["items"]]'
}
claims() { kube_names sandboxclaims; }
pods() { kube_names pods; }

# The session's recorded pod (kube.json).
session_pod() {
    sed -n 's/.*"pod":"\([^"]*\)".*/\1/p' "$AGENT_SANDBOX_STATE_DIR/$AGENT_SANDBOX_SESSION/kube.json" 2>/dev/null
}

# How many holders are serving (their sockets in the runtime directory).
holders() {
    local n=0 f
    for f in "$XDG_RUNTIME_DIR"/sbxsh/*.sock; do
        [ -e "$f" ] && n=$((n + 1))
    done
    echo "$n"
}

kube_teardown() {
    local d
    for d in "$AGENT_SANDBOX_STATE_DIR"/*/; do
        [ -d "$d" ] || continue
        "$SBX" release --session "$(basename "$d")" >/dev/null 2>&1
    done
    fake_kill
    tap_cleanup
}
