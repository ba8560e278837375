#!/bin/bash
# The main paths as an ordinary user, on both runtimes: coding agents usually run as
# one. The test creates a user, runs sbxsh as that user in a repository of theirs
# and in their home directory, and removes the user after.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../lib/user.sh"

trap 'test_user_del; tap_cleanup' EXIT
test_user_add sbxt || skip_all "$TEST_USER_WHY"
user=$TEST_USER

as_user() { as_test_user "$1" 2>&1; } # SCRIPT: as the test user, in its home

for rt in runsc bwrap; do
    why=$(runtime_skip_reason "$rt")
    if [ -n "$why" ]; then
        skip "$rt as an ordinary user: $why"
        continue
    fi
    as_user "mkdir -p proj-$rt && cd proj-$rt && git init -q . && echo hi > a" >/dev/null
    out=$(as_user "cd proj-$rt && AGENT_SANDBOX_LOCAL_RUNTIME=$rt timeout 120 '$SBXSH' -c 'cat a; echo made > b; id -u'")
    like "$out" '^hi' "$rt: an ordinary user's command runs in the sandbox"
    is "$(stat -c %U "$SBX_TEST_TMP/u/proj-$rt/b" 2>&1)" "$user" \
       "$rt: the file it made comes back to the host, owned by the user"
    out=$(as_user "cd proj-$rt && '$SBX' status")
    like "$out" 'limits:' "$rt: sbx status shows the limits for an ordinary user"
    # A file its owner made unreadable cannot be sent: said once, to the user, with what
    # to do (it used to go to the holder's log only), and not at every command after.
    out=$(as_user "cd proj-$rt && echo s > secret && chmod 000 secret && AGENT_SANDBOX_LOCAL_RUNTIME=$rt timeout 120 '$SBXSH' -c 'cat a' 2>&1")
    like "$out" "cannot read secret: Permission denied; it is not synced until it is readable \\(chmod u\\+r\\)" \
         "$rt: an unreadable file in the code directory is reported to the user, with what to do"
    out=$(as_user "cd proj-$rt && for i in 1 2; do chmod 000 secret; AGENT_SANDBOX_LOCAL_RUNTIME=$rt timeout 120 '$SBXSH' -c 'cat a'; done 2>&1")
    is "$out" "hi
hi" "$rt: the next commands say nothing more of it"
    out=$(as_user "AGENT_SANDBOX_LOCAL_RUNTIME=$rt timeout 120 '$SBXSH' -c pwd")
    is "$out" "$SBX_TEST_TMP/u" "$rt: a login shell's command in ~ works for an ordinary user"
    as_user "cd proj-$rt && '$SBX' release; cd && '$SBX' release" >/dev/null
done
out=$(as_user "'$SBX' doctor")
unlike "$out" 'All good' "sbx doctor as an ordinary user does not claim limits it cannot enforce"
done_testing
