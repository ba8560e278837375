# shellcheck shell=bash
# A throwaway ordinary user, for the tests that run sbxsh as one (coding agents usually
# are one); source it after tap.sh.
#
#   test_user_add PREFIX [PATH...]  creates the user PREFIX<pid>: TEST_USER its name,
#                                   TEST_HOME its home ($SBX_TEST_TMP/u). Returns 1 with
#                                   TEST_USER_WHY (for a skip) when there can be none: not
#                                   root, no useradd, useradd failed, or the user cannot
#                                   reach the programs under test (sbxsh, and each PATH)
#   as_test_user SCRIPT             SCRIPT by the user's bash in its home, in a login-like
#                                   environment: HOME its own, none of the test's
#                                   AGENT_SANDBOX_*, XDG_RUNTIME_DIR or XDG_STATE_HOME
#   test_user_del                   kills the user's processes and removes it with its
#                                   home; for the test's EXIT trap (no user: nothing)
# shellcheck disable=SC2034 # read by the test that sources this
TEST_USER='' TEST_HOME='' TEST_USER_WHY=''

test_user_add() { # PREFIX [PATH...]
    local name=$1$$ p
    shift
    if [ "$(id -u)" != 0 ]; then
        TEST_USER_WHY="creating a test user needs root"
        return 1
    fi
    if ! command -v useradd >/dev/null; then
        TEST_USER_WHY="useradd not found (passwd package)"
        return 1
    fi
    if ! useradd -m -d "$SBX_TEST_TMP/u" -s /bin/bash "$name" 2>/dev/null; then
        TEST_USER_WHY="useradd failed"
        return 1
    fi
    TEST_USER=$name
    TEST_HOME=$SBX_TEST_TMP/u
    # the user's home lies in the scratch directory, 0700 from mktemp
    chmod 755 "$SBX_TEST_TMP"
    for p in "$SBXSH" "$@"; do
        if ! su "$TEST_USER" -c "test -r '$p'"; then
            TEST_USER_WHY="the build directory is not reachable by another user ($p)"
            return 1
        fi
    done
}

as_test_user() { # SCRIPT
    local clear
    clear="unset XDG_RUNTIME_DIR XDG_STATE_HOME $(compgen -e AGENT_SANDBOX_ | tr '\n' ' ')"
    su "$TEST_USER" -c "$clear; export HOME=$TEST_HOME; cd; $1"
}

test_user_del() {
    [ -n "$TEST_USER" ] || return 0
    pkill -9 -u "$TEST_USER" 2>/dev/null
    sleep 0.2   # what pkill killed lets go of the user before userdel looks
    userdel -r "$TEST_USER" >/dev/null 2>&1
    TEST_USER=
}
