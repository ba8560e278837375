#!/bin/bash
# The kube backend against tests/kube/fake-apiserver, in one run (not a test: no assertions):
#   1. claim latency: `sbx-kube claim` from its start (process, kubeconfig, TLS, the lookup of
#      the session's claim, the POST, the watch, the Sandbox and pod reads) to a Ready pod,
#      against the fake's own share (POST to Ready, from its /fake/state): the difference is
#      the client's overhead (the target: under 20 ms);
#   2. per command: `sbxsh -c true` in a warm kube session against `kubectl exec POD -- true`
#      to the same fake (a process start and a new stream per call; the target: 10x), and
#      `git status` in a repository of 1000 files the same two ways (sbxsh's includes the
#      syncs around the command; kubectl's runs on the pod's copy as it is).
#
#   bench/kube.sh [--runs N]      (make bench-kube)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
RUNS=10
[ "${1:-}" = --runs ] && RUNS=$2
tmp=$(mktemp -d /tmp/sbxsh-bench-kube.XXXXXX)
fake_pid=
cleanup() {
    [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
ms() { echo $(( $(date +%s%N) / 1000 )); }   # microseconds
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

"$top/tests/kube/fake-apiserver" --port 0 --kubeconfig "$tmp/kc" --state-dir "$tmp/fst" \
    --log "$tmp/fake.log" --pool b=$((RUNS + 2)) </dev/null >"$tmp/fake.out" 2>&1 &
fake_pid=$!
for _ in $(seq 300); do [ -e "$tmp/kc" ] && break; sleep 0.1; done
[ -e "$tmp/kc" ] || { echo "the fake did not start: $(cat "$tmp/fake.out")" >&2; exit 1; }
url=$(sed -n 's/^ *server: //p' "$tmp/kc")
token=$(awk '/^- name: fake-admin$/ { u = 1 } u && /token:/ { print $2; exit }' "$tmp/kc")
fcurl() { curl -sk -H "Authorization: Bearer $token" "$url$1"; }
# every warm pod ready: the claims below are warm adoptions, and no pod start of the fake
# (the replacement of the last one adopted) competes for the CPUs while one is measured
settle() {
    for _ in $(seq 600); do
        fcurl /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxwarmpools/b |
            grep -q "\"readyReplicas\": *$((RUNS + 2))" && break
        sleep 0.1
    done
}
settle

echo "claims ($RUNS, warm pool, one at a time):"
: > "$tmp/claims"
for i in $(seq "$RUNS"); do
    mkdir -p "$tmp/st$i"
    settle
    t0=$(ms)
    "$top/sbx-kube" claim --state "$tmp/st$i" --session "bench$i" --kubeconfig "$tmp/kc" \
        --pool b >/dev/null 2>>"$tmp/claim.log" || { echo "claim failed: $(tail -2 "$tmp/claim.log")" >&2; exit 1; }
    t1=$(ms)
    name=$(sed -n 's/.*"claim":"\([^"]*\)".*/\1/p' "$tmp/st$i/kube.json")
    fake_ms=$(fcurl /fake/state | python3 -c 'import json,sys
n=sys.argv[1]
print(next(c["readyMs"] for c in json.load(sys.stdin)["claims"] if c["name"]==n))' "$name")
    echo "$(( t1 - t0 )) $fake_ms" >> "$tmp/claims"
done
wall=$(awk '{ print $1 / 1000 }' "$tmp/claims" | median)
fake=$(awk '{ print $2 }' "$tmp/claims" | median)
over=$(awk '{ print $1 / 1000 - $2 }' "$tmp/claims" | median)
printf '  sbx-kube claim, start to Ready pod    %8.1f ms (median)\n' "$wall"
printf '  the fake itself, POST to Ready        %8.1f ms\n' "$fake"
printf '  client overhead                       %8.1f ms\n' "$over"
for i in $(seq "$RUNS"); do
    "$top/sbx-kube" release --state "$tmp/st$i" --session "bench$i" --kubeconfig "$tmp/kc" \
        >/dev/null 2>&1
done

echo "per command ($RUNS each, warm):"
export HOME=$tmp/home XDG_RUNTIME_DIR=$tmp/run AGENT_SANDBOX_STATE_DIR=$tmp/state
export AGENT_SANDBOX_BACKEND=kube AGENT_SANDBOX_KUBECONFIG=$tmp/kc AGENT_SANDBOX_POOL=b
export AGENT_SANDBOX_SESSION=bench-cmd AGENT_SANDBOX_CODE_DIRS=$tmp/proj
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$tmp/proj"
cd "$tmp/proj" || exit 1
git init -q . && for d in $(seq 10); do mkdir "d$d"; for f in $(seq 100); do echo "$d $f" >"d$d/f$f"; done; done &&
    git add . && git -c user.name=b -c user.email=b@b commit -qm bench || exit 1
"$top/sbxsh" -c true || exit 1
"$top/sbxsh" -c true
: > "$tmp/sbxsh"
for _ in $(seq "$RUNS"); do t0=$(ms); "$top/sbxsh" -c true; t1=$(ms); echo $(( t1 - t0 )) >> "$tmp/sbxsh"; done
pod=$(sed -n 's/.*"pod":"\([^"]*\)".*/\1/p' "$AGENT_SANDBOX_STATE_DIR/bench-cmd/kube.json")
s=$(awk '{ print $1 / 1000 }' "$tmp/sbxsh" | median)
printf '  sbxsh -c true                         %8.1f ms (median)\n' "$s"
if command -v kubectl >/dev/null; then
    kc() { KUBECONFIG=$tmp/kc kubectl "$@"; }
    kc exec "$pod" -- true >/dev/null 2>&1     # its discovery cache, once
    : > "$tmp/kubectl"
    for _ in $(seq "$RUNS"); do t0=$(ms); kc exec "$pod" -- true >/dev/null 2>&1; t1=$(ms); echo $(( t1 - t0 )) >> "$tmp/kubectl"; done
    k=$(awk '{ print $1 / 1000 }' "$tmp/kubectl" | median)
    printf '  kubectl exec POD -- true              %8.1f ms (median)\n' "$k"
    awk -v s="$s" -v k="$k" 'BEGIN { printf "  ratio                                 %8.1fx\n", k / s }'
fi
"$top/sbxsh" -c 'git status --short' >/dev/null   # the index refreshed once
: > "$tmp/sbxsh-git"
for _ in $(seq "$RUNS"); do t0=$(ms); "$top/sbxsh" -c 'git status --short' >/dev/null; t1=$(ms); echo $(( t1 - t0 )) >> "$tmp/sbxsh-git"; done
g=$(awk '{ print $1 / 1000 }' "$tmp/sbxsh-git" | median)
printf '  sbxsh -c "git status" (1000 files)    %8.1f ms (median)\n' "$g"
if command -v kubectl >/dev/null; then
    kc exec "$pod" -- git -C "$tmp/proj" status --short >/dev/null 2>&1
    : > "$tmp/kubectl-git"
    for _ in $(seq "$RUNS"); do t0=$(ms); kc exec "$pod" -- git -C "$tmp/proj" status --short >/dev/null 2>&1; t1=$(ms); echo $(( t1 - t0 )) >> "$tmp/kubectl-git"; done
    kg=$(awk '{ print $1 / 1000 }' "$tmp/kubectl-git" | median)
    printf '  kubectl exec POD -- git status        %8.1f ms (median)\n' "$kg"
    awk -v s="$g" -v k="$kg" 'BEGIN { printf "  ratio                                 %8.1fx\n", k / s }'
else
    echo "  kubectl exec: kubectl is not installed"
fi
"$top/sbx" release >/dev/null 2>&1
