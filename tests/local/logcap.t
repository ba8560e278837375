#!/bin/bash
# The sandbox cannot fill the host's disk through the runtime's log: under both runtimes
# a process inside can open /proc/1/fd/2, the stream that ends in STATE/SESSION/sandbox.log.
# That stream is a pipe into a pump that stops appending at 8 MiB and says so once.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"
local_env
trap 'local_teardown; tap_cleanup' EXIT

for rt in bwrap runsc; do
    why=$(runtime_skip_reason "$rt")
    if [ -n "$why" ]; then
        skip "the log's limit on $rt: $why"
        continue
    fi
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=logcap-$rt-$$
    log=$AGENT_SANDBOX_STATE_DIR/$AGENT_SANDBOX_SESSION/sandbox.log
    is "$(timeout 120 "$SBXSH" -c 'echo up')" "up" "$rt: a session"
    # 24 MiB at pid 1's stderr, from inside.
    out=$(timeout 120 "$SBXSH" -c 'head -c 25165824 /dev/zero > /proc/1/fd/2 && echo written' 2>&1)
    is "$out" "written" "$rt: the sandbox writes 24 MiB to pid 1's stderr (the runtime's log stream)"
    size=$(stat -c %s "$log" 2>/dev/null || echo missing)
    ok "$rt: ...and sandbox.log stays at its 8 MiB limit ($size bytes)" \
        test "$size" != missing -a "$size" -le $((8 * 1024 * 1024 + 4096))
    is "$(grep -ac 'sandbox.log reached its limit' "$log")" 1 "$rt: ...saying once that the rest was dropped"
    is "$(timeout 120 "$SBXSH" -c 'echo still')" "still" "$rt: the sandbox still runs commands"
    "$SBX" release >/dev/null 2>&1
done
done_testing
