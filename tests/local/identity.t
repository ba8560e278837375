#!/bin/bash
# Issue 21, who sandbox commands run as: on both runtimes, as the user running the test
# (root here: root stays root) and as an ordinary user the test creates, commands run as
# the caller's uid, gid and name (`id`), with USER and LOGNAME as the caller has them
# (and none when the caller has none, as bash), every process in the sandbox is the
# caller's (under rootless runsc the agent starts as root to bind its socket, then drops),
# the code directory, a file synced into it, HOME and what the command makes there are
# the caller's inside, and what it makes comes back the caller's on the host; no
# capability in any set; on a terminal, the pty is the caller's and job control works.
# Also sbx-agent's --user: it refuses root, and exits rather than run on when it cannot
# drop (an ordinary user has no CAP_SETUID).
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../lib/user.sh"

PTYRUN=$(cd "$(dirname "$0")" && pwd)/ptyrun.py
local_env
trap 'local_teardown; test_user_del; tap_cleanup' EXIT

# What one command prints of who it is and what it owns, a line each (checked below).
# made/, made.txt: made by the command in the code directory; home.txt in HOME.
PROBE='echo "id=$(id -u):$(id -g):$(id -un)"
echo "env=${USER-unset}:${LOGNAME-unset}"
echo "own=$(stat -c %u:%g . README | tr "\n" " ")home=$(stat -c %u:%g:%a ~)"
echo made > made.txt; mkdir -p made; echo h > ~/home.txt
echo "made=$(stat -c %u:%g made.txt made ~/home.txt | tr "\n" " ")"
echo "procs=$(ps -eo uid= | sort -un | tr -d " " | tr "\n" " ")"
echo "caps=$(grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb):" /proc/self/status | awk "{print \$2}" | sort -u | tr "\n" " ")"'
# line NAME: the value of NAME= in $out
line() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }

# checks RT WHO UID GID NAME HOSTDIR RUN: the probe through RUN (a function running a shell
# script as the subject, in its code directory HOSTDIR), with USER and LOGNAME as the
# subject's login has them; then without them.
checks() {
    local rt=$1 who=$2 uid=$3 gid=$4 name=$5 dir=$6 run=$7 u2
    out=$("$run" "AGENT_SANDBOX_LOCAL_RUNTIME=$rt USER=$name LOGNAME=$name timeout 120 '$SBXSH' -c '$PROBE'" 2>&1)
    is "$(line id)" "$uid:$gid:$name" "$rt, $who: id -u, id -g and id -un are the caller's" ||
        diag "$out"
    is "$(line env)" "$name:$name" "$rt, $who: USER and LOGNAME as the caller has them"
    u2=$uid:$gid
    is "$(line own)" "$u2 $u2 home=$u2:700" \
       "$rt, $who: the code directory, a file synced into it and HOME (0700) are the caller's"
    is "$(line made)" "$u2 $u2 $u2 " "$rt, $who: what the command makes is the caller's inside"
    is "$(stat -c %u:%g "$dir/made.txt" "$dir/made" | tr '\n' ' ')" "$u2 $u2 " \
       "$rt, $who: ...and on the host"
    is "$(line procs)" "$uid " "$rt, $who: every process in the sandbox runs as the caller (the agent too)"
    is "$(line caps)" "0000000000000000 " "$rt, $who: no capability in any set"
    out=$("$run" "AGENT_SANDBOX_LOCAL_RUNTIME=$rt timeout 120 env -u USER -u LOGNAME '$SBXSH' -c 'echo \"\${USER-unset}:\${LOGNAME-unset}\"'" 2>&1)
    is "$out" "unset:unset" "$rt, $who: no USER or LOGNAME when the caller has none, as bash"
    # A terminal: the pty is the caller's, and job control works as before.
    out=$("$run" "AGENT_SANDBOX_LOCAL_RUNTIME=$rt timeout 120 python3 '$PTYRUN' --input 'sleep 30 &\\rjobs\\rkill %1\\rwait; echo \"pty=\$(stat -c %u \$(tty))\"\\rexit\\r' -- '$SBXSH' -i" 2>&1)
    like "$out" $'\\[1\\]\\+ +Running +sleep 30' "$rt, $who: on a terminal, job control: jobs lists the background job" ||
        diag "$out"
    like "$out" "pty=$uid" "$rt, $who: ...and the terminal is the caller's"
    "$run" "'$SBX' release" >/dev/null 2>&1
}

as_self() { (cd "$PROJ" && bash -c "$1"); }

for rt in runsc bwrap; do
    why=$(runtime_skip_reason "$rt")
    if [ -n "$why" ]; then
        skip "$rt as $(id -un): $why"
        continue
    fi
    checks "$rt" "$(id -un)" "$(id -u)" "$(id -g)" "$(id -un)" "$PROJ" as_self
done

# --- an ordinary user ------------------------------------------------------------------
if ! test_user_add sbxi "$PTYRUN"; then
    skip "as an ordinary user: $TEST_USER_WHY"
    done_testing
    exit
fi
user=$TEST_USER U=$TEST_HOME
as_user() { as_test_user "cd ~/proj && $1"; } # SCRIPT: in the user's code directory
su "$user" -c "mkdir -p $U/proj && cd $U/proj && git init -q . && echo hello > README"

# sbx-agent --user: never root, and no serving as root when the drop fails (here: an
# ordinary user, who has no CAP_SETUID to become another).
out=$("$SBX_AGENT" --listen "$SBX_TEST_TMP/a.sock" --user 0:0 2>&1)
is "$?:$out" "2:sbx-agent: --user wants UID:GID, of a user other than root" \
   "sbx-agent --user refuses root"
out=$(su "$user" -c "'$SBX_AGENT' --listen $U/a.sock --user 4242:4242" 2>&1)
is "$?:$out" "1:sbx-agent: cannot become uid 4242, gid 4242 without capabilities: Operation not permitted" \
   "sbx-agent --user that cannot drop exits with why, serving nothing"

for rt in runsc bwrap; do
    why=$(runtime_skip_reason "$rt")
    if [ -n "$why" ]; then
        skip "$rt as an ordinary user: $why"
        continue
    fi
    checks "$rt" "an ordinary user" "$(id -u "$user")" "$(id -g "$user")" "$user" "$U/proj" as_user
done
done_testing
