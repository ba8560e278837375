#!/bin/bash
# The client library's API-driven fds, as the front end's stdin mode uses
# them (session-drive.c): one persistent bash fed a script through an API
# input, reporting through an API output, with sync rounds between
# commands; on each runtime that works here.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

DRIVE=${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/local/session-drive
[ -x "$DRIVE" ] || skip_all "session-drive not built (make check builds it)"
local_env
# The helper lives in the build tree: point it at the agent (and, beside it,
# the runsc shim) that make built.
export AGENT_SANDBOX_AGENT=$SBXSH_BIN/sbx-agent-static
trap '"$SBX" release >/dev/null 2>&1; local_teardown; tap_cleanup' EXIT

for rt in bwrap runsc; do
    why=$(runtime_skip_reason $rt)
    if [ -n "$why" ]; then
        skip "$rt: $why"
        continue
    fi
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=drive-$rt
    out=$("$DRIVE" 'x=41; mkdir -p sub; cd sub' 'x=$((x+1)); echo "x=$x in ${PWD##*/}"' \
        'echo made > ../made.txt; false' "@wait $PROJ/host.txt" 'cat ../host.txt' 'exit 7' \
        2>"$SBX_TEST_TMP/e" &
        pid=$!
        # host.txt is written on the host once the third command's sync
        # brought made.txt back; the driver syncs again, then the fourth
        # command reads it.
        for _ in $(seq 600); do [ -e "$PROJ/made.txt" ] && break; sleep 0.05; done
        # written whole, then renamed: the driver syncs as soon as the name exists
        echo "from the host" > "$SBX_TEST_TMP/host.tmp" && mv "$SBX_TEST_TMP/host.tmp" "$PROJ/host.txt"
        wait $pid)
    is "$out" "status 0
status 0
status 1
status 0
no report
exit 7" "$rt: statuses come back as records on an API fd; the shell's exit status at the end"
    is "$(cat "$SBX_TEST_TMP/e")" "x=42 in sub
from the host" "$rt: the shell keeps variables and cwd; a host change arrives after a sync"
    is "$(cat "$PROJ/made.txt" 2>&1)" "made" "$rt: a sync round brings the shell's changes back"
    rm -f "$PROJ/made.txt" "$PROJ/host.txt"
    "$SBX" release
done
done_testing
