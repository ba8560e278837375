#!/bin/bash
# The sbx command line: help, doctor, and what it says when there is no
# session or the input is wrong. Starts no sandbox but doctor's probe.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"

[ -x "$SBX" ] || skip_all "sbx not built"
local_env

like "$("$SBX" --help)" "^usage: sbx COMMAND" "sbx --help"
for c in exec release status ls doctor; do
    like "$("$SBX" $c --help)" "^usage: sbx $c" "sbx $c --help"
done
is "$("$SBX" --version)" "sbx (sbxsh) $("$SBXSH" --version | sed -n 's/^sbxsh \([^ ]*\) .*/\1/p')" \
    "sbx --version: sbxsh's version"
"$SBX" 2>/dev/null; is "$?" 2 "no command: usage, status 2"
"$SBX" frobnicate 2>"$SBX_TEST_TMP/e"; is "$?" 2 "unknown command: status 2"
like "$(cat "$SBX_TEST_TMP/e")" "unknown command 'frobnicate'" "...named"
"$SBX" exec 2>/dev/null; is "$?" 2 "exec without a command: status 2"

"$SBX" status 2>"$SBX_TEST_TMP/e"; is "$?" 1 "status of a session that does not exist: 1"
like "$(cat "$SBX_TEST_TMP/e")" "no session" "...saying so"
is "$("$SBX" status --json)" "null" "status --json prints null"
"$SBX" release --session nope 2>"$SBX_TEST_TMP/e"; is "$?" 1 "release of an unknown session: 1"
is "$("$SBX" ls | tail -n +2)" "" "ls with no sessions lists none"
is "$("$SBX" ls --json)" "[]" "ls --json with no sessions"
"$SBX" exec --session '../x' -- true 2>"$SBX_TEST_TMP/e"; is "$?" 125 "a bad session name: 125"
like "$(cat "$SBX_TEST_TMP/e")" "invalid session name" "...saying what is allowed"
AGENT_SANDBOX_LOCAL_RUNTIME=docker "$SBX" exec -- true 2>"$SBX_TEST_TMP/e"
is "$?" 125 "an unknown runtime: 125"
like "$(cat "$SBX_TEST_TMP/e")" "use runsc, bwrap or auto" "...naming the choices"
AGENT_SANDBOX_IDLE_TIMEOUT=soon "$SBX" exec -- true 2>"$SBX_TEST_TMP/e"
is "$?" 125 "a bad idle timeout: 125"

out=$("$SBX" doctor)
rc=$?
like "$out" "sbx-agent:" "doctor checks the agent"
like "$out" "state directory" "doctor checks the state directory"
like "$out" "runtime in use: (runsc|bwrap)|no usable sandbox runtime" "doctor names the runtime"
like "$out" "(ok    sandbox limits enforced: cgroup v[12], e\.g\. /sys/fs/cgroup/.*/sbxsh/|WARN  sandbox limits cannot be enforced by a cgroup here)" \
   "doctor says whether the sandbox's limits can be enforced, and how"
if printf '%s\n' "$out" | grep -q '^WARN'; then
    unlike=$(printf '%s\n' "$out" | grep -c '^All good')
    is "$unlike" "0" "...and does not say All good when they cannot"
fi
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/pids ] && [ -d /sys/fs/cgroup/memory ]; then
    like "$out" "ok    sandbox limits enforced: cgroup v1" "...by a cgroup v1 as root here"
    is "$(ls -d /sys/fs/cgroup/pids/sbxsh/doctor-* 2>/dev/null)" "" "...and removes the cgroup it tried"
fi
if [ -z "$(runtime_skip_reason runsc)$(runtime_skip_reason bwrap)" ]; then
    is "$rc" 0 "doctor passes on a machine with both runtimes"
    like "$out" "ok    a sandbox starts here and runs a command \(doctor-[0-9]+, released\)" \
       "...having started a sandbox and run a command in it"
    # Every piece passes, yet no sandbox can run a command (here: an agent that is not
    # one): every sbxsh command would fail 125, and doctor must say so.
    out=$(AGENT_SANDBOX_AGENT=/bin/true timeout 120 "$SBX" doctor)
    is "$?" 1 "doctor fails when a sandbox of this configuration cannot run a command"
    like "$out" "FAIL  a sandbox of this configuration cannot run a command" "...saying so"
    unlike "$out" "All good" "...not 'All good'"
    is "$("$SBX" ls | grep -c '^doctor-')" 0 "...and leaves no session of its probe behind"
fi
out=$(AGENT_SANDBOX_POOL=Bad_Pool "$SBX" doctor)
is "$?" 1 "doctor fails on bad kube settings"
like "$out" "FAIL  configuration.*AGENT_SANDBOX_POOL='Bad_Pool' is not a SandboxWarmPool name" "...an invalid pool name"
out=$(AGENT_SANDBOX_BACKEND=kube AGENT_SANDBOX_POOL=p AGENT_SANDBOX_KUBECONFIG=$SBX_TEST_TMP/none "$SBX" doctor)
is "$?" 1 "...and on a kubeconfig that is not there (the kube backend in use)"
like "$out" "FAIL  kubeconfig.*$SBX_TEST_TMP/none: No such file" "...naming the file"
done_testing
