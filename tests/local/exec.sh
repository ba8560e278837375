# shellcheck shell=bash
# `sbx exec` and the session lifecycle on one runtime; sourced by
# exec-runsc.t and exec-bwrap.t with RT set (prove runs the two in parallel), and by
# tests/kube/exec-kube.t with RT=kube (a pod from tests/kube/fake-apiserver), which
# defines kill_sandbox (the pod deleted) where a local sandbox's process is killed.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

runtime_env "t-$RT"
teardown() {
    "$SBX" release >/dev/null 2>&1
    local_teardown
    tap_cleanup
}
trap teardown EXIT

X() { "$SBX" exec --keep -- "$@"; }

# ---- quick start, streams, stdin ---------------------------------------
out=$(X cat /proc/version)
if [ "$RT" = runsc ]; then
    like "$out" "^Linux version 4\.4\.0" "quick start: /proc/version shows gVisor's kernel"
elif [ "$RT" = kube ]; then
    like "$out" "^Linux version" "quick start: /proc/version shows the pod's kernel"
else
    is "$out" "$(cat /proc/version)" "quick start: /proc/version shows the host kernel (bwrap)"
fi
is "$(X cat README)" "hello" "the code directory is synced in"
is "$(X pwd)" "$PROJ" "the cwd is the same absolute path"
mkdir -p "$PROJ/sub/dir"
is "$(cd "$PROJ/sub/dir" && X pwd)" "$PROJ/sub/dir" "a subdirectory cwd too"
is "$(printf 'a\nb\nc\n' | X sort -r | tr '\n' ' ')" "c b a " "stdin is forwarded"
X bash -c 'echo to-out; echo to-err >&2' >"$SBX_TEST_TMP/o" 2>"$SBX_TEST_TMP/e"
is "$(cat "$SBX_TEST_TMP/o")/$(cat "$SBX_TEST_TMP/e")" "to-out/to-err" "stdout and stderr stay separate"
mixed='for i in $(seq 200); do echo out$i; echo err$i >&2; done'
X bash -c "$mixed" >"$SBX_TEST_TMP/o" 2>&1
is "$(md5sum <"$SBX_TEST_TMP/o")" "$(bash -c "$mixed" 2>&1 | md5sum)" \
   "one file for both (>log 2>&1): the order they were written in"
head -c 300000 /dev/urandom > "$SBX_TEST_TMP/bin"
cp "$SBX_TEST_TMP/bin" "$PROJ/blob"
X cat blob > "$SBX_TEST_TMP/bin2"
ok "binary data with NUL bytes arrives intact" cmp -s "$SBX_TEST_TMP/bin" "$SBX_TEST_TMP/bin2"
X cat < "$SBX_TEST_TMP/bin" > "$SBX_TEST_TMP/bin3"
ok "binary stdin arrives intact" cmp -s "$SBX_TEST_TMP/bin" "$SBX_TEST_TMP/bin3"
rm -f "$PROJ/blob"
is "$(X bash -c 'head -c 200000000 /dev/zero' | wc -c)" "200000000" "200 MB of output streams through"
is "$(X bash -c 'printf "a\0b\0"' | od -An -c | tr -s ' ')" " a \0 b \0" "NUL bytes on stdout"

# ---- exit statuses ------------------------------------------------------
X true; is "$?" 0 "status 0"
X false; is "$?" 1 "status 1"
X bash -c 'exit 42'; is "$?" 42 "status 42"
printf '#!/bin/sh\necho hi\n' > "$PROJ/noexec.sh"
X ./noexec.sh 2>/dev/null; is "$?" 126 "not executable: 126"
X no-such-command-xyz 2>"$SBX_TEST_TMP/e"; is "$?" 127 "not found: 127"
like "$(cat "$SBX_TEST_TMP/e")" "no-such-command-xyz" "...and the message names it"
X bash -c 'kill -TERM $$'; is "$?" 143 "killed by SIGTERM: 143"
X bash -c 'kill -KILL $$'; is "$?" 137 "killed by SIGKILL: 137"
rm -f "$PROJ/noexec.sh"

# ---- signals, SIGPIPE -----------------------------------------------------
# (sbx itself in the background, not a function: $! must be sbx's pid.)
"$SBX" exec --keep -- bash -c 'trap "touch $PWD/int-seen; exit 130" INT; echo ready; while :; do sleep 0.1; done' \
    > "$SBX_TEST_TMP/sig" &
pid=$!
for _ in $(seq 100); do grep -q ready "$SBX_TEST_TMP/sig" 2>/dev/null && break; sleep 0.1; done
kill -INT $pid
wait $pid
is "$?" 130 "SIGINT reaches the command's process group; its status comes back"
ok "...and the changes it made on the way out are pulled back" test -e "$PROJ/int-seen"
rm -f "$PROJ/int-seen"
"$SBX" exec --keep -- bash -c 'echo ready; exec tail -f /dev/null' > "$SBX_TEST_TMP/sig2" &
pid=$!
for _ in $(seq 100); do grep -q ready "$SBX_TEST_TMP/sig2" 2>/dev/null && break; sleep 0.1; done
kill -TERM $pid
wait $pid
is "$?" 143 "SIGTERM to sbx reaches the command (143)"
is "$(X yes | head -n 2 | tr '\n' ' ')" "y y " "yes | head ends"
X bash -c 'yes; echo "yes=$?" >&2' 2>"$SBX_TEST_TMP/e" | head -c 1 >/dev/null
is "$(cat "$SBX_TEST_TMP/e")" "yes=141" "a closed stdout gives the writer SIGPIPE (141), as in bash"

# ---- sync both ways -------------------------------------------------------
echo "from host" > "$PROJ/h.txt"
is "$(X cat h.txt)" "from host" "a host change reaches the next command"
X bash -c 'echo "from sandbox" > s.txt; rm h.txt; mkdir -p d/e; echo x > d/e/f'
is "$(cat "$PROJ/s.txt" 2>&1)" "from sandbox" "a sandbox change comes back"
ok "a sandbox deletion comes back" test ! -e "$PROJ/h.txt"
is "$(cat "$PROJ/d/e/f" 2>&1)" "x" "new directories come back"
rm -rf "$PROJ/s.txt" "$PROJ/d"

# ---- background processes, concurrency -----------------------------------
X bash -c 'nohup tail -f /dev/null >/dev/null 2>&1 & echo $! > bg.pid'
is "$(X bash -c 'kill -0 $(cat bg.pid) && echo alive')" "alive" \
   "a background process keeps running between commands"
X bash -c 'kill $(cat bg.pid); rm -f bg.pid'
X bash -c 'echo a-start; sleep 1; echo a-end' > "$SBX_TEST_TMP/a" &
pa=$!
X bash -c 'echo b-start; sleep 1; echo b-end' > "$SBX_TEST_TMP/b" &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
is "$ra/$rb" "0/0" "two overlapping calls both succeed"
is "$(cat "$SBX_TEST_TMP/a" "$SBX_TEST_TMP/b" | tr '\n' ' ')" "a-start a-end b-start b-end " \
   "...each with its own output"
X bash -c 'echo one > c1.txt; sleep 1' & p1=$!
X bash -c 'sleep 0.5; echo two > c2.txt' & p2=$!
wait $p1 $p2
is "$(cat "$PROJ/c1.txt" "$PROJ/c2.txt" 2>&1 | tr '\n' ' ')" "one two " \
   "...and both calls' changes come back"
rm -f "$PROJ/c1.txt" "$PROJ/c2.txt"

# ---- escapes --------------------------------------------------------------
mkdir -p "$HOME/.ssh"
echo "host-secret" > "$HOME/.ssh/id_test"
X bash -c "cat $HOME/.ssh/id_test" >/dev/null 2>&1; isnt "$?" 0 "the host's ~/.ssh is out of reach"
X bash -c "echo pwned > $HOME/.bashrc" 2>/dev/null
ok "writing the host's home from inside does not reach the host" test ! -e "$HOME/.bashrc"
X cat /etc/shadow >/dev/null 2>&1; isnt "$?" 0 "/etc/shadow is out of reach"
X bash -c "echo pwned > $SBX_TEST_TMP/outside" 2>/dev/null
ok "a path outside the code directories does not sync back" test ! -e "$SBX_TEST_TMP/outside"
X bash -c "ln -s $SBX_TEST_TMP escape-link; echo pwned > escape-link/through-link" 2>/dev/null
ok "a symlink out of the code directory is not followed by the sync" \
   test ! -e "$SBX_TEST_TMP/through-link"
X bash -c 'printf "#!/bin/sh\necho pwned\n" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit'
ok "a git hook written in the sandbox does not reach the host" test ! -e "$PROJ/.git/hooks/pre-commit"
rm -f "$PROJ/escape-link"
X bash -c '(exec 3<>/dev/tcp/1.1.1.1/53) 2>/dev/null && echo reached || echo no-network' \
    > "$SBX_TEST_TMP/net"
if [ "$RT" = kube ]; then
    skip "no network by default: a pod has the cluster's network (its NetworkPolicy decides)"
else
    is "$(cat "$SBX_TEST_TMP/net")" "no-network" "no network by default"
fi
SBX_CANARY=leak X bash -c 'echo "${SBX_CANARY:-none}"' > "$SBX_TEST_TMP/env"
is "$(cat "$SBX_TEST_TMP/env")" "none" "host variables do not reach the sandbox"
SBX_CANARY=passed AGENT_SANDBOX_FORWARD_ENV=SBX_CANARY X bash -c 'echo "$SBX_CANARY"' \
    > "$SBX_TEST_TMP/env"
is "$(cat "$SBX_TEST_TMP/env")" "passed" "...unless named in AGENT_SANDBOX_FORWARD_ENV"
X bash -c 'printf "\033]0;title\007\033[2Jplain \033[31mred\033[0m\n"' > "$SBX_TEST_TMP/esc"
is "$(od -An -c "$SBX_TEST_TMP/esc" | tr -d ' \n')" "$(printf '\033]0;title\007\033[2Jplain \033[31mred\033[0m\n' | od -An -c | tr -d ' \n')" \
   "output to a file or pipe is not filtered"

# An agent's shape, in a session that was started without these settings:
# a snapshot pushed as a task file, a cwd file outside the code directory
# synced back.
mkdir -p "$HOME/.snap"
echo 'SNAP=from-snapshot' > "$HOME/.snap/s.sh"
cwdfile=/tmp/sbx-cwd-$$-$RT
out=$(AGENT_SANDBOX_TASK_FILES=$HOME/.snap/s.sh AGENT_SANDBOX_SYNC_PATHS=$cwdfile \
      X bash -c ". $HOME/.snap/s.sh && echo \$SNAP && cd sub && pwd -P >| $cwdfile")
is "$out" "from-snapshot" "a task file added by a later call is pushed"
is "$(cat "$cwdfile" 2>&1)" "$PROJ/sub" "a sync path added by a later call comes back"
rm -f "$cwdfile"

PTY=$HERE/ptyrun.py
out=$("$PTY" -- "$SBX" exec --keep -- bash -c 'printf "\033]0;title\007\033[2Jplain \033[31mred\033[0m\033[6n\n"')
is "$out" "$(printf 'plain \033[31mred\033[0m')" \
   "output to a terminal cannot set the title, clear the screen or query it (colours stay)"
out=$("$PTY" -- "$SBX" exec --keep --tty -- bash -c 'tty; stty size; printf "\033]0;t\007"')
like "$out" "^/dev/pts/[0-9]+
33 101" "--tty runs on a pty of the terminal's size"
like "$out" $'\033]0;t\007' "...and an interactive tty session is not filtered"
is "$("$PTY" --input 'typed\r' -- "$SBX" exec --keep --tty -- bash -c 'read x; echo "got=$x"')" \
   "typed
got=typed" "--tty relays the terminal's input"

# ---- session lifecycle ------------------------------------------------------
hpid=$("$SBX" status --json | sed -n 's/.*"holder_pid":\([0-9]*\).*/\1/p')
X true
is "$("$SBX" status --json | sed -n 's/.*"holder_pid":\([0-9]*\).*/\1/p')" "$hpid" \
   "later calls reuse the same holder"
like "$("$SBX" ls)" "t-$RT +$RT +running +pid $hpid" "sbx ls shows the session"
sbid=$("$SBX" status --json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
X bash -c 'nohup tail -f /dev/null >/dev/null 2>&1 &'
kill -9 "$hpid"
is "$(X bash -c 'pgrep -x tail >/dev/null && echo still-there')" "still-there" \
   "holder killed: the next call reattaches to the same sandbox (background process still there)"
is "$("$SBX" status --json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')" "$sbid" "...same sandbox id"
sbpid=$("$SBX" status --json | sed -n 's/.*"sandbox":{[^}]*"pid":\([0-9]*\).*/\1/p')
X bash -c 'echo before-crash > crash.txt'
"$SBX" exec --keep -- bash -c 'echo ready; exec tail -f /dev/null' > "$SBX_TEST_TMP/crash" \
    2>"$SBX_TEST_TMP/e" &
pid=$!
for _ in $(seq 100); do grep -q ready "$SBX_TEST_TMP/crash" 2>/dev/null && break; sleep 0.1; done
if declare -F kill_sandbox >/dev/null; then kill_sandbox; else kill -9 "$sbpid"; fi
wait $pid
is "$?" 125 "sandbox killed mid-command: the command fails with 125"
like "$(cat "$SBX_TEST_TMP/e")" "sandbox stopped.*next command starts a new sandbox" "...saying so"
is "$(cat "$PROJ/crash.txt" 2>&1)" "before-crash" "...and the host tree is intact"
is "$(X cat crash.txt)" "before-crash" "after a crash, a new sandbox has the host's tree"
isnt "$("$SBX" status --json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')" "$sbid" "...in a new sandbox"
rm -f "$PROJ/crash.txt"
hpid=$("$SBX" status --json | sed -n 's/.*"holder_pid":\([0-9]*\).*/\1/p')
sbpid=$("$SBX" status --json | sed -n 's/.*"sandbox":{[^}]*"pid":\([0-9]*\).*/\1/p')
if declare -F kill_sandbox >/dev/null; then
    kill -9 "$hpid"
    kill_sandbox
else
    kill -9 "$hpid" "$sbpid"
    for _ in $(seq 100); do kill -0 "$sbpid" 2>/dev/null || break; sleep 0.05; done
fi
is "$(X cat README)" "hello" "holder and sandbox both killed: the next call starts over with the host's tree"
AGENT_SANDBOX_LOCAL_NETWORK=host X true 2>"$SBX_TEST_TMP/e"
is "$?" 125 "a call asking the session for another shape (network) is refused: 125"
like "$(cat "$SBX_TEST_TMP/e")" "runs with runtime=.* network=none" "...saying what the session runs with"
if [ "$RT" != kube ]; then
    # The runtime named when the session started is the session's: a call that leaves it
    # to the default joins it (it was refused for the session's whole life), a call
    # naming the other runtime is refused.
    other=bwrap
    [ "$RT" = bwrap ] && other=runsc
    is "$(unset AGENT_SANDBOX_LOCAL_RUNTIME; X cat README 2>&1)" "hello" \
       "a call leaving the runtime to its default joins the $RT session"
    AGENT_SANDBOX_LOCAL_RUNTIME=$other X true 2>"$SBX_TEST_TMP/e"
    is "$?" 125 "...a call naming $other is refused: 125"
fi
X bash -c 'nohup bash -c "sleep 0.5; echo late > late.txt" >/dev/null 2>&1 &'
sleep 3 # the write comes 0.5 s after the command; a loaded machine needs more
kill -9 "$("$SBX" status --json | sed -n 's/.*"holder_pid":\([0-9]*\).*/\1/p')"
(cd "$SBX_TEST_TMP" && AGENT_SANDBOX_CODE_DIRS=$HOME "$SBX" release)
is "$?" 0 "sbx release from another directory, with no holder running"
is "$(cat "$PROJ/late.txt" 2>&1)" "late" "release pulls what background processes wrote"
rm -f "$PROJ/late.txt"
"$SBX" status >/dev/null 2>&1; is "$?" 1 "after release the session is gone"
is "$(find "$AGENT_SANDBOX_STATE_DIR" -mindepth 1 -maxdepth 1 ! -name 'audit.*' -printf '%f\n')" "" "...and its files (the audit log stays: docs/undo.md)"

# A holder on its way out (a killed process tears its memory down before its
# sockets close) accepts connections and drops them: the next call tries
# again and starts a new holder once the socket is gone.
python3 - "$XDG_RUNTIME_DIR/sbxsh/t-$RT.sock" "$SBX_TEST_TMP/dying" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(8); s.settimeout(60)
open(sys.argv[2], 'w').close()
try:
    for _ in range(4):
        s.accept()[0].close()
except socket.timeout:
    pass
os.unlink(sys.argv[1]); s.close()
PY
dying=$!
for _ in $(seq 100); do [ -e "$SBX_TEST_TMP/dying" ] && break; sleep 0.05; done
is "$(X cat README 2>&1)" "hello" "a holder that drops connections as it dies: the next call starts a new one"
wait $dying
"$SBX" release >/dev/null

AGENT_SANDBOX_IDLE_TIMEOUT=1 X true
hpid=$("$SBX" status --json | sed -n 's/.*"holder_pid":\([0-9]*\).*/\1/p')
# idle for 1 s, then the release itself, which a loaded machine makes slow
# (watched by pid: a status call is a client, which would keep it busy)
for _ in $(seq 240); do kill -0 "$hpid" 2>/dev/null || break; sleep 0.25; done
"$SBX" status >/dev/null 2>&1; is "$?" 1 "idle timeout releases the session"

is "$("$SBX" exec -- bash -c 'echo fresh; pwd')" "fresh
$PROJ" "sbx exec without --keep runs in a fresh sandbox"
is "$("$SBX" ls | tail -n +2)" "" "...and releases it"
X true
"$SBX" exec --session "t-$RT" -- true 2>"$SBX_TEST_TMP/e"
is "$?" 125 "without --keep, an existing session is refused"
like "$(cat "$SBX_TEST_TMP/e")" "--keep" "...with a message saying what to do"
(cd / && AGENT_SANDBOX_CODE_DIRS=$PROJ "$SBX" exec --keep -- true) 2>"$SBX_TEST_TMP/e"
is "$?" 125 "a cwd outside the code directories: 125"
like "$(cat "$SBX_TEST_TMP/e")" "outside the code directories" "...with a clear message"
done_testing
