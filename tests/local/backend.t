#!/bin/bash
# The local backend on both runtimes, driven directly (no sync engine): the
# sandbox's view of the machine, and claim / reattach / crash / release.
# tests/local/probe-agent stands in for sbx-agent.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
PROBE=${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/local/backend-probe
[ -x "$PROBE" ] || skip_all "backend-probe not built (make check builds it)"
local_env
export AGENT_SANDBOX_AGENT
AGENT_SANDBOX_AGENT=$(agent_dir_with_shim "${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/local/probe-agent")
mkdir -p "$HOME/.ssh"
echo "host-secret" > "$HOME/.ssh/id_test"
echo "host-home-file" > "$HOME/notes"

# A server on the host's loopback that the sandbox must not reach.
port=$((20000 + RANDOM % 20000))
/usr/bin/python3 -m http.server --bind 127.0.0.1 "$port" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; tap_cleanup' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
ok "a host loopback server for the network tests" eval "(exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null"
export SBX_CANARY=host-variable

for rt in runsc bwrap; do
    why=$(runtime_skip_reason $rt)
    if [ -n "$why" ]; then
        skip "$rt: $why"
        continue
    fi
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt
    is "$($PROBE claim)" "created" "$rt: first claim creates a sandbox"
    is "$($PROBE claim)" "reattached" "$rt: second claim reattaches"

    out=$($PROBE run 'cat /proc/version')
    if [ $rt = runsc ]; then
        like "$out" "^Linux version 4\.4\.0" "$rt: /proc/version is gVisor's kernel"
    else
        is "$out" "$(cat /proc/version)" "$rt: /proc/version is the host kernel"
    fi
    is "$($PROBE run 'ls -d /usr /tmp >/dev/null && echo listed')" "listed" "$rt: ls works"
    is "$($PROBE run 'cat README 2>&1; pwd')" \
       "cat: README: No such file or directory
/" "$rt: the agent starts at / (the copy is filled by the sync, not here)"
    is "$($PROBE run "echo made > $PROJ/new && cat $PROJ/new")" "made" "$rt: code dir is writable"
    ok "$rt: ...and the write does not reach the host tree" test ! -e "$PROJ/new"
    is "$($PROBE run "ls -A $HOME; echo x > $HOME/f && cat $HOME/f")" "x" \
       "$rt: HOME is private and empty (no host files), and writable"
    ok "$rt: ...the private HOME is not the host's" test ! -e "$HOME/f"
    is "$($PROBE run "cat $HOME/.ssh/id_test 2>/dev/null || echo unreadable")" "unreadable" \
       "$rt: the host's ~/.ssh is out of reach"
    is "$($PROBE run 'cat /etc/shadow /etc/gshadow 2>/dev/null || echo unreadable')" "unreadable" \
       "$rt: /etc/shadow is out of reach"
    is "$($PROBE run 'ls /root 2>/dev/null; ls /etc/ssh 2>/dev/null; echo end')" "end" \
       "$rt: /root and ssh host keys are not there"
    like "$($PROBE run 'grep "^root:" /etc/passwd')" "^root:" "$rt: /etc/passwd is there"
    is "$($PROBE run 'touch /usr/x 2>/dev/null || touch /etc/x 2>/dev/null || touch /x 2>/dev/null || echo ro')" \
       "ro" "$rt: system directories and / are read-only"
    is "$($PROBE run 'echo t > /tmp/t && cat /tmp/t')" "t" "$rt: /tmp is writable"
    is "$($PROBE run 'grep CapEff /proc/self/status')" "CapEff:	0000000000000000" \
       "$rt: no capabilities"
    is "$($PROBE run "bash -c '(exec 3<>/dev/tcp/127.0.0.1/$port)' 2>/dev/null && echo reached || echo blocked")" \
       "blocked" "$rt: the host's loopback is unreachable"
    is "$($PROBE run 'printenv SBX_CANARY || echo none')" "none" \
       "$rt: no host environment reaches the sandbox"
    # What the sandbox learns of the host's paths: bwrap's pid 1 gets its
    # options through --args, and the code copy and HOME are tmpfs mounts
    # inside, so the state directory shows only where the agent directory is
    # bound from (bwrap's mountinfo gives a bind's source path within its file
    # system; runsc's gofer mounts show none).
    view=$($PROBE run 'tr "\\0" " " </proc/1/cmdline; echo; cat /proc/self/mountinfo')
    st=$(cd "$AGENT_SANDBOX_STATE_DIR" && pwd -P)
    is "$(printf '%s\n' "$view" | head -n 1 | grep -c "$st")" "0" \
       "$rt: /proc/1/cmdline does not show the state directory"
    if [ $rt = bwrap ]; then
        remains="/run/sbxsh"
    else
        remains=""
    fi
    is "$(printf '%s\n' "$view" | grep "$st" | awk '{print $5}' | sort | tr '\n' ' ' | sed 's/ $//')" \
       "$remains" "$rt: mountinfo shows the state directory only as the source of the agent directory${remains:+ (bwrap)}"
    like "$(printf '%s\n' "$view" | awk -v p="$PROJ" '$5 == p')" " - tmpfs " \
       "$rt: the code directory's copy is a tmpfs inside the sandbox"
    ok "$rt: ...and no host directory holds it" eval "! ls -d \"$AGENT_SANDBOX_STATE_DIR\"/*/code 2>/dev/null | grep -q ."
    like "$(printf '%s\n' "$view" | awk -v p="$HOME" '$5 == p')" " - tmpfs " \
       "$rt: the private HOME is a tmpfs inside the sandbox"
    ok "$rt: ...and no host directory holds it" eval "! ls -d \"$AGENT_SANDBOX_STATE_DIR\"/*/home 2>/dev/null | grep -q ."
    $PROBE run 'tail -f /dev/null >/dev/null 2>&1 & echo started' >/dev/null
    is "$($PROBE run 'pgrep -x tail >/dev/null && echo alive')" "alive" \
       "$rt: a background process survives between commands"

    # The agent directory is writable from inside: a symlink swapped in at
    # agent.sock (here from the host, as fast as it goes, between the real
    # socket and a link to another socket of ours) is never connected to.
    adir=$(ls -d "$AGENT_SANDBOX_STATE_DIR"/*/agent)
    python3 "$HERE/sockswap.py" "$adir" "$SBX_TEST_TMP/host-$rt.sock" "$SBX_TEST_TMP/swap-$rt.ready" \
        "$SBX_TEST_TMP/swap-$rt.stop" > "$SBX_TEST_TMP/swap-$rt.out" &
    swapper=$!
    for _ in $(seq 100); do [ -e "$SBX_TEST_TMP/swap-$rt.ready" ] && break; sleep 0.05; done
    good=0
    for _ in $(seq 150); do
        [ "$($PROBE run 'echo agent' 2>/dev/null)" = agent ] && good=$((good + 1))
    done
    touch "$SBX_TEST_TMP/swap-$rt.stop"
    wait $swapper
    is "$(cat "$SBX_TEST_TMP/swap-$rt.out")" "host socket connections: 0" \
       "$rt: a symlink swapped in at agent.sock is never followed to another socket"
    ok "$rt: ...while the real socket still works ($good of 150 calls found it)" test "$good" -gt 0
    ln -sf "$SBX_TEST_TMP/host-$rt.sock" "$adir/agent.sock.lnk"
    mv "$adir/agent.sock" "$adir/agent.sock.real"
    mv "$adir/agent.sock.lnk" "$adir/agent.sock"
    $PROBE run 'echo agent' >/dev/null 2>"$SBX_TEST_TMP/err"
    like "$(cat "$SBX_TEST_TMP/err")" "agent socket is not a socket of ours \(a symlink\)" \
       "$rt: a symlink at agent.sock is refused, saying so"
    mv -f "$adir/agent.sock.real" "$adir/agent.sock"

    # The copy and /tmp are bounded by AGENT_SANDBOX_DISK_MAX (in memory).
    $PROBE release
    AGENT_SANDBOX_DISK_MAX=32M $PROBE claim >/dev/null
    is "$($PROBE run "head -c 48M /dev/zero > $PROJ/big 2>/dev/null && echo wrote || echo full; rm -f $PROJ/big")" \
       "full" "$rt: AGENT_SANDBOX_DISK_MAX bounds the code copy"
    is "$($PROBE run 'head -c 48M /dev/zero > /tmp/big 2>/dev/null && echo wrote || echo full; rm -f /tmp/big')" \
       "full" "$rt: ...and the private /tmp"
    is "$($PROBE run "head -c 48M /dev/zero > $HOME/big 2>/dev/null && echo wrote || echo full; rm -f $HOME/big")" \
       "full" "$rt: ...and the private HOME"
    like "$($PROBE status)" '"disk_max":33554432' "$rt: ...as the status says"

    pid=$($PROBE status | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
    kill -9 "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    is "$($PROBE claim)" "created" "$rt: after the sandbox died, a claim creates a new one"

    export AGENT_SANDBOX_LOCAL_NETWORK=host
    $PROBE release
    is "$($PROBE run "bash -c '(exec 3<>/dev/tcp/127.0.0.1/$port)' 2>/dev/null && echo reached || echo blocked")" \
       "reached" "$rt: AGENT_SANDBOX_LOCAL_NETWORK=host reaches the host's loopback"
    unset AGENT_SANDBOX_LOCAL_NETWORK
    $PROBE release
    ok "$rt: release removes the session's state" test -z "$(find "$AGENT_SANDBOX_STATE_DIR" -mindepth 1 -maxdepth 1 ! -name 'audit.*' -printf '%f\n' 2>/dev/null)"
    is "$(pgrep -f "$AGENT_SANDBOX_STATE_DIR" | wc -l)" "0" "$rt: release leaves no process"
done

AGENT_SANDBOX_LOCAL_RUNTIME=nosuch $PROBE claim 2>"$SBX_TEST_TMP/err"
is "$?" "125" "unknown runtime: exit 125"
like "$(cat "$SBX_TEST_TMP/err")" "use runsc, bwrap or auto" "...with a message"
done_testing
