#!/bin/bash
# What never syncs, end to end on both runtimes: a file the sandbox cannot read is reported
# once, with what to do, however often it changes; a directory the host deletes goes from
# the sandbox with its fifos and unreadable files too. (The host side of an unreadable file
# needs an ordinary user: nonroot.t.)
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"

local_env
trap 'for rt in runsc bwrap; do "$SBX" release --session unsynced-$rt >/dev/null 2>&1; done; local_teardown; tap_cleanup' EXIT

for rt in runsc bwrap; do
    why=$(runtime_skip_reason "$rt")
    if [ -n "$why" ]; then
        for i in 1 2 3 4 5; do skip "$rt: $why"; done
        continue
    fi
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=unsynced-$rt
    rm -rf "$PROJ/d"
    # A sandbox's root has no capabilities: mode 0200 is as unreadable to the agent as to
    # an ordinary user, and the file can still be written.
    err=$(timeout 120 "$SBXSH" -c 'mkdir -p d/sub && mkfifo d/f d/sub/f2 && echo g > d/g &&
                                   echo u > d/u && chmod 0200 d/u && echo made' 2>&1)
    is "$(printf '%s\n' "$err" | grep -c 'cannot read d/u: Permission denied; it is not synced until it is readable (chmod u+r)')" 1 \
       "$rt: a file the sandbox cannot read is reported, with what to do"
    err=$(for i in 1 2 3; do timeout 120 "$SBXSH" -c "echo $i >> d/u && chmod 0200 d/u"; done 2>&1)
    is "$err" "" "$rt: three commands that change it again say nothing"
    is "$(cat "$PROJ/d/g" 2>&1)" g "$rt: the rest of the directory came back to the host"
    rm -rf "$PROJ/d"
    out=$(timeout 120 "$SBXSH" -c 'ls -A d 2>&1; echo status=$?' 2>&1)
    is "$out" "ls: cannot access 'd': No such file or directory
status=2" "$rt: the directory the host deleted is gone from the sandbox, fifos and unreadable file too"
    is "$(timeout 120 "$SBXSH" -c 'mkdir d && ls -A d' 2>&1)" "" \
       "$rt: and the name is free again"
    "$SBX" release >/dev/null 2>&1
done
done_testing
