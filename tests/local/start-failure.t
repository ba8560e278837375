#!/bin/bash
# A session whose sandbox never started pins nothing: after a failed start (here an
# agent that exits at once), the same session name works with another runtime or
# setting at once, instead of "session runs with runtime=..." refusals.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"
local_env
trap 'local_teardown; tap_cleanup' EXIT
for rt in runsc bwrap; do
    why=$(runtime_skip_reason "$rt")
    [ -z "$why" ] || skip_all "$rt: $why"
done
export AGENT_SANDBOX_SESSION=startfail-$$

for i in 1 2; do
    AGENT_SANDBOX_AGENT=/bin/false AGENT_SANDBOX_LOCAL_RUNTIME=runsc "$SBXSH" -c true 2>"$SBX_TEST_TMP/err"
    is "$?" 125 "try $i: a sandbox that cannot start: 125"
    like "$(cat "$SBX_TEST_TMP/err")" '^sbxsh: ' "try $i: ...with sbxsh's message"
    out=$(AGENT_SANDBOX_LOCAL_RUNTIME=bwrap timeout 60 "$SBXSH" -c 'echo started' 2>&1)
    is "$out" "started" "try $i: the same session then starts with another runtime"
    "$SBX" release >/dev/null 2>&1
done
done_testing
