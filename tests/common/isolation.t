#!/bin/bash
# The test libraries' isolation (tests/lib/tap.sh, tests/lib/tap.h): whatever sbxsh
# configuration the caller's environment holds, a test file starts without it, with a HOME
# and a state directory of its own; a test file that another runs keeps what its parent set.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

# A test file as prove starts it, from a caller with settings of its own.
out=$(env -u SBX_TEST_ISOLATED AGENT_SANDBOX_SESSION=mine AGENT_SANDBOX_BACKEND=kube \
      AGENT_SANDBOX_PIDS_MAX=5 AGENT_SANDBOX_STATE_DIR=/var/mine XDG_STATE_HOME=/var/xdg \
      HOME=/root/mine bash -c '. "$1/tests/lib/tap.sh"
        env | grep -E "^(AGENT_SANDBOX_|XDG_STATE_HOME=)" | grep -v "^AGENT_SANDBOX_STATE_DIR=" | sort
        echo "state=${AGENT_SANDBOX_STATE_DIR:-} home=$HOME tmp=$SBX_TEST_TMP"
        [ -d "$HOME" ] && echo "home made"' _ "$top")
is "$(grep -c '^[AX]' <<<"$out")" 0 \
   "tap.sh: none of the caller's AGENT_SANDBOX_* or XDG_STATE_HOME is left" || diag "$out"
like "$out" "state=([^ ]+)/state home=\\1/home tmp=\\1"$'\n'"home made$" \
     "tap.sh: the state directory and HOME are the test's own, in its scratch directory"

# A test file run by another (as tests/kube/exec-kube.t runs tests/local/exec.sh).
out=$(AGENT_SANDBOX_POOL=p bash -c '. "$1/tests/lib/tap.sh"; echo "$AGENT_SANDBOX_POOL $HOME"' _ "$top")
is "$out" "p $HOME" "tap.sh under another test file: the parent's settings and HOME kept"

# The C unit tests: t-config.t checks the default limits, which a caller's would change.
t=$SBXSH_BUILD/tests/session/t-config.t
if [ -x "$t" ]; then
    out=$(env -u SBX_TEST_ISOLATED AGENT_SANDBOX_PIDS_MAX=5 AGENT_SANDBOX_MEMORY_MAX=1G "$t" 2>&1)
    is "$?" 0 "tap.h: a unit test reading the configuration passes whatever limits the caller set" ||
        diag "$(grep -A3 '^not ok' <<<"$out")"
else
    skip "tap.h: $t is not built (make check builds it)"
fi
done_testing
