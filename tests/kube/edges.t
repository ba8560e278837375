#!/bin/bash
# What a real API server does at the edges, each as sbxsh must meet it:
# - a claim's create answered 504 Timeout although it was written (kube-apiserver's finisher
#   answers when the request's deadline passes while the storage write goes on): the retry
#   meets 409 AlreadyExists of our own claim, which is then used, not a failure;
# - a 404 on a collection suggests a missing CRD only when discovery says the API is missing;
# - the pod's kubectl.kubernetes.io/default-container annotation picks the container, as
#   kubectl exec picks it;
# - every request, the exec's upgrade too, says who it is: sbxsh/VERSION (linux/ARCH);
# - an exec credential plugin runs once for a first command (claim and stream share it);
# - an API server that stops answering mid-command (connections reset, as when it restarts
#   or is cut off) is named as such, not blamed on the sandbox; the next command after it
#   runs in the same pod.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool e=2 || bail_out "the fake API server did not start"
kube_env ke
export AGENT_SANDBOX_POOL=e
trap kube_teardown EXIT

# run NAME [ENV...]: sbxsh -c 'cat README' in a session of its own; sets rc, out and err
run() {
    local name=$1; shift
    env AGENT_SANDBOX_SESSION="ke-$name" "$@" "$SBXSH" -c 'cat README' \
        >"$SBX_TEST_TMP/out" 2>"$SBX_TEST_TMP/err"
    rc=$?
    out=$(cat "$SBX_TEST_TMP/out") err=$(cat "$SBX_TEST_TMP/err")
}
release() { "$SBX" release --session "ke-$1" >/dev/null 2>&1; }
state() { fake_state | python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# 1. The create written, its answer a 504; the client's retry meets 409 AlreadyExists.
fake_fault "status=504,count=1,method=POST,path=/sandboxclaims,applied" ||
    bail_out "the fake refused a fault"
run late
is "$rc:$out" "0:hello" "a claim's create answered 504 though written: the retry's 409 is our own claim, used"
is "$err" "" "...with nothing said"
is "$(state "d['faults']['served'].get('504', 0)")" 1 "...(the fake did answer the 504)"
is "$(claims | grep -c '^sbx-ke-late-')" 1 "...and one claim, not two"
like "$(cat "$XDG_RUNTIME_DIR/sbxsh/ke-late.log")" "the create was answered with an error but done" \
     "...the session's log says why"
release late

# 2. 404s on a collection: a CRD missing (discovery has no such group), or not.
fake_fault "no-api=extensions.agents.x-k8s.io" || bail_out "the fake refused a fault"
run nocrd
is "$rc" 125 "agent-sandbox's extensions API not installed: 125"
like "$err" "the cluster serves no API group extensions\.agents\.x-k8s\.io \(discovery\): is its CRD installed" \
     "...saying discovery has no such group, and to install the CRD"
fake_fault clear || bail_out "the fake refused a fault"
fake_fault "status=404,count=1,method=POST,path=/sandboxclaims,reason=NotFound,message=the%20server%20could%20not%20find%20the%20requested%20resource" ||
    bail_out "the fake refused a fault"
run proxy404
is "$rc" 125 "a 404 on the collection with the API installed (a proxy's, a webhook's): 125"
like "$err" "create sandboxclaims.extensions.agents.x-k8s.io in namespace default: not found" \
     "...naming the request"
unlike "$err" "CRD" "...and no word of a CRD, since discovery lists it"
fake_fault clear || bail_out "the fake refused a fault"

# 3. A pool whose pods have a sidecar first and the annotation naming the work container.
api=/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default
fake_curl -X POST -H 'Content-Type: application/json' -o /dev/null -d '{
  "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
  "metadata": {"name": "two"},
  "spec": {"podTemplate": {
    "metadata": {"annotations": {"kubectl.kubernetes.io/default-container": "work"}},
    "spec": {"containers": [{"name": "sidecar", "image": "fake.local/proxy:1"},
                            {"name": "work", "image": "fake.local/sbx:1"}]}}}}' \
    "$api/sandboxtemplates"
fake_curl -X POST -H 'Content-Type: application/json' -o /dev/null -d '{
  "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
  "metadata": {"name": "two"}, "spec": {"replicas": 1, "sandboxTemplateRef": {"name": "two"}}}' \
    "$api/sandboxwarmpools"
before=$(state "d['execContainers'].get('sidecar', 0)")
run two AGENT_SANDBOX_POOL=two
is "$rc:$out" "0:hello" "a pod with a sidecar first and kubectl.kubernetes.io/default-container=work: works"
like "$(cat "$AGENT_SANDBOX_STATE_DIR/ke-two/kube.json")" '"container":"work"' \
     "...the session's container is the annotation's, as kubectl exec picks it"
is "$(state "d['execContainers'].get('sidecar', 0)")" "$before" "...no exec went into the sidecar"
release two

# 4. Who is asking: every request of sbxsh, the exec's upgrade too.
ver=$("$SBXSH" --version | sed -n '1s/.* \([0-9][0-9.]*\).*/\1/p')
ua="sbxsh/$ver (linux/$(dpkg --print-architecture 2>/dev/null || echo amd64))"
uas=$(state "'\n'.join(sorted(k for k in d['userAgents'] if not k.startswith('curl/')))")
is "$uas" "$ua" \
   "every request carries User-Agent sbxsh/VERSION (linux/ARCH), as kubectl's form"
is "$(state "d['execUserAgents'].get('$ua', 0) > 0")" True \
   "...the exec upgrades too (written by sbxsh, not by curl)"

# 5. An exec credential plugin runs once for a session's first command (the claim's and the
# stream's sbx-kube are two processes: the holder hands the claim's credential to the
# stream on a pipe), as kubectl runs it once; an expired one is not handed on.
# plugin_kubeconfig EXPIRY: a kubeconfig whose fake-admin runs a plugin logging its callers
plugin_kubeconfig() {
    cat >"$SBX_TEST_TMP/plugin" <<EOP
#!/bin/sh
tr '\\0' ' ' </proc/\$PPID/cmdline | cut -d' ' -f2 >>"$SBX_TEST_TMP/plugin.log"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"$1"}}' "$FAKE_TOKEN"
EOP
    chmod +x "$SBX_TEST_TMP/plugin"
    python3 - "$FAKE_KUBECONFIG" "$SBX_TEST_TMP/plugin" >"$SBX_TEST_TMP/plugin.kubeconfig" <<'EOP'
import re, sys
s = open(sys.argv[1]).read()
s = re.sub(r'(- name: fake-admin\n  user:\n)    token: .*\n',
           r'\1    exec:\n      apiVersion: client.authentication.k8s.io/v1\n'
           r'      command: %s\n      interactiveMode: Never\n' % sys.argv[2], s)
sys.stdout.write(s)
EOP
    : >"$SBX_TEST_TMP/plugin.log"
}
plugin_kubeconfig 2099-01-01T00:00:00Z
run plugin AGENT_SANDBOX_KUBECONFIG="$SBX_TEST_TMP/plugin.kubeconfig"
is "$rc:$out" "0:hello" "a kubeconfig user with an exec credential plugin: works"
is "$(sort "$SBX_TEST_TMP/plugin.log" | uniq -c | awk '{print $1, $2}')" "1 claim" \
   "...the plugin ran once, for the claim; the stream got its credential"
run plugin AGENT_SANDBOX_KUBECONFIG="$SBX_TEST_TMP/plugin.kubeconfig"
is "$rc:$(wc -l <"$SBX_TEST_TMP/plugin.log")" "0:1" "...and not again for the next command"
release plugin
plugin_kubeconfig 2001-01-01T00:00:00Z
run plugin2 AGENT_SANDBOX_KUBECONFIG="$SBX_TEST_TMP/plugin.kubeconfig"
is "$rc:$out" "0:hello" "a plugin whose credential has expired already: works"
like "$(sort -u "$SBX_TEST_TMP/plugin.log" | tr '\n' ' ')" "claim stream" \
     "...the stream runs the plugin itself (an expired credential is not used, as client-go)"
release plugin2

# 6. The API server down for longer than the stream waits (connections reset, new ones too).
o=$SBX_TEST_TMP/o5 e=$SBX_TEST_TMP/e5
AGENT_SANDBOX_SESSION=ke-down "$SBXSH" -c 'cat README' >/dev/null 2>&1
AGENT_SANDBOX_SESSION=ke-down timeout 200 "$SBXSH" -c 'echo ready; sleep 15; echo done' >"$o" 2>"$e" &
pid=$!
for _ in $(seq 600); do grep -q ready "$o" 2>/dev/null && break; sleep 0.1; done
fake_fault "outage,seconds=50" || bail_out "the fake refused a fault"
wait "$pid"
rc=$?
is "$rc" 125 "the API server gone for longer than the stream waits: 125"
like "$(cat "$e")" "the API server at https://127\.0\.0\.1:[0-9]+ has not answered for [0-9]+ s .*may still be running the command" \
     "...saying the API server did not answer, and that the pod may still run the command"
unlike "$(cat "$e")" "sandbox stopped|sandbox may have stopped" "...not that the sandbox stopped"
diag "what the user read: $(cat "$e")"
for _ in $(seq 900); do [ "$(state "d['faults']['down']" 2>/dev/null)" = False ] && break; sleep 0.1; done
pod=$(AGENT_SANDBOX_SESSION=ke-down session_pod)
is "$(AGENT_SANDBOX_SESSION=ke-down timeout 120 "$SBXSH" -c 'cat README' 2>&1)" hello \
   "once it answers again, the next command runs"
is "$(AGENT_SANDBOX_SESSION=ke-down session_pod)" "$pod" \
   "...in the same pod"
release down
done_testing
