#!/bin/bash
# tests/kube/fake-apiserver run by an ordinary user (as a developer runs the kube tests): it
# starts, its pods run (root inside their user namespace, nothing more on the host), an exec
# works, and SIGTERM leaves no process and no directory, even one a pod made unreadable.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/fake.sh"

[ "$(id -u)" = 0 ] || skip_all "creating a test user needs root"
command -v useradd >/dev/null || skip_all "useradd not found (passwd package)"
command -v jq >/dev/null || skip_all "jq is not installed (make deps)"
why=$(fake_skip_reason)
[ -n "$why" ] && skip_all "the fake API server cannot run pods: $why"
user=sbxk$$
useradd -m -d "$SBX_TEST_TMP/u" -s /bin/bash "$user" 2>/dev/null || skip_all "useradd failed"
trap 'p=$(cat "$SBX_TEST_TMP/u/pid" 2>/dev/null); [ -n "$p" ] && kill -9 "$p" 2>/dev/null; sleep 0.2; userdel -r "$user" >/dev/null 2>&1; tap_cleanup' EXIT
chmod 755 "$SBX_TEST_TMP"
HERE=$(cd "$(dirname "$0")" && pwd)
su "$user" -c "test -x '$HERE/fake-apiserver'" || skip_all "tests/kube is not reachable by another user"
U=$SBX_TEST_TMP/u

as_user() { su "$user" -c "export HOME=$U; cd; $1" 2>&1; }

as_user "'$HERE/fake-apiserver' --port 0 --kubeconfig kc --pool p=1 --state-dir st </dev/null >out 2>&1 & echo \$! > pid"
for _ in $(seq 300); do [ -e "$U/kc" ] && break; sleep 0.1; done
ok "the fake starts as an ordinary user and writes its kubeconfig" test -e "$U/kc"
is "$(ps -o user= -p "$(cat "$U/pid")")" "$user" "...running as that user"
FAKE_KUBECONFIG=$U/kc
FAKE_URL=$(sed -n 's/^ *server: //p' "$FAKE_KUBECONFIG")
FAKE_CA=$SBX_TEST_TMP/ca.pem
sed -n 's/^ *certificate-authority-data: //p' "$FAKE_KUBECONFIG" | base64 -d >"$FAKE_CA"
FAKE_TOKEN=$(awk '/^users:/ { s = 1 } s && /^- name: fake-admin$/ { u = 1 } u && /token:/ { print $2; exit }' "$FAKE_KUBECONFIG")
pool=/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxwarmpools/p
for _ in $(seq 300); do
    [ "$(fake_curl "$pool" | jq -r '.status.readyReplicas // 0')" = 1 ] && break
    sleep 0.1
done
pod=$(fake_curl /api/v1/namespaces/default/pods | jq -r '.items[0].metadata.name')
like "$pod" '^p-' "its pool member runs"
out=$("$HERE/ws-exec.py" "$FAKE_URL/api/v1/namespaces/default/pods/$pod/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io -- \
      sh -c 'id -u; grep CapEff /proc/self/status; echo x > /workspace/f; cat /workspace/f; mkdir -p /workspace/l/m && chmod 000 /workspace/l/m /workspace/l')
is "$(jq -r .stdout <<<"$out")" $'0\nCapEff:\t0000000000000000\nx' "exec: root in the pod, no capabilities, a writable root"
pids=$(fake_curl /fake/state | jq -r '.pods[].pids[]' | tr '\n' ' ')
like "$(for p in $pids; do ps -o user= -p "$p"; done | sort -u)" "^$user\$" "the pod's processes are the user's on the host"
kill -TERM "$(cat "$U/pid")"
for _ in $(seq 300); do kill -0 "$(cat "$U/pid")" 2>/dev/null || break; sleep 0.1; done
ok "SIGTERM: the fake exits" eval "! kill -0 $(cat "$U/pid") 2>/dev/null"
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
is "$left" "" "no pod process is left"
ok "the state directory is gone, the unreadable corner too" test ! -e "$U/st"
done_testing
