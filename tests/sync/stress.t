#!/bin/bash
# Sync under load, end to end through sbxsh on each runtime: four clients of one session at
# once, each running commands that write files from 0 bytes to 64 MiB in the sandbox,
# delete their older ones, read files the host just wrote (and not the ones it just
# deleted), read their stdin, and stream files back as output. Every command runs under `timeout`, so a
# stalled sync (issue 9: a pull stopped at a few MiB until another command's frame woke
# the agent) fails here instead of hanging; every byte is checked by checksum, the sandbox's
# (sha256sum run in it) against the host's, and at the end the two trees are compared file
# by file. The figures (commands, bytes, wall time) are printed as diagnostics.
#
# STRESS_ROUNDS (default 45) rounds per client; STRESS_CLIENTS (default 4). A client stops at
# its second failure (a stalled session would only make every later command wait its bound).
# The second runtime that runs (bwrap, after runsc) runs STRESS_ROUNDS2 (default 15) rounds:
# what is stressed is the sync (holder, agent, windows), the same code over either runtime's
# socket, and the first runtime's full pass carries the volume; 15 rounds still give bwrap
# every size, the 64 MiB file (round 5), stdin (every 4th) and output (every 3rd), with four
# clients at once.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../local/lib.sh"

ROUNDS1=${STRESS_ROUNDS:-45}
ROUNDS2=${STRESS_ROUNDS2:-15}
CLIENTS=${STRESS_CLIENTS:-4}
BOUND=60   # seconds for one command: about 100 times what one takes here
# sandbox-written sizes, cycled; 64 MiB comes once per client, in clients 1 and 2
SIZES=(0 1 4095 65536 262145 1048577 1500000 2000000 8000000 300000 5000000 12345)
# host-written sizes, pushed to the sandbox before the command that reads them
PSIZES=(0 700000 1 2000000 65537 8000000 4096)

local_env
trap 'local_teardown; tap_cleanup' EXIT

# client K RT: ROUNDS commands; failures go to $SBX_TEST_TMP/fail.K, counts to count.K
client() {
    local k=$1 rt=$2 i sz psz out want cmds=0 bytes=0
    # a second local: the words of one are expanded before any of its assignments
    local fail=$SBX_TEST_TMP/fail.$k
    : >"$fail"
    mkdir -p "s$k" "h$k"
    for ((i = 1; i <= ROUNDS; i++)); do
        [ "$(wc -l <"$fail")" -ge 2 ] && break
        sz=${SIZES[$(((i + k) % ${#SIZES[@]}))]}
        [ "$i" = 5 ] && [ "$k" -le 2 ] && sz=67108864
        psz=${PSIZES[$(((i * 3 + k) % ${#PSIZES[@]}))]}
        head -c "$psz" /dev/urandom >"h$k/p$i"
        rm -f "h$k/p$((i - 1))"
        out=$(timeout -k 5 $BOUND "$SBXSH" -c "head -c $sz /dev/urandom > s$k/f$i &&
            sha256sum s$k/f$i h$k/p$i && rm -f s$k/f$((i - 2)) &&
            if test -e h$k/p$((i - 1)); then echo stale; else echo gone; fi" 2>&1)
        rc=$?
        cmds=$((cmds + 1))
        bytes=$((bytes + sz + psz))
        want="$(sha256sum "s$k/f$i" "h$k/p$i" 2>&1)
gone"
        if [ "$rc" != 0 ]; then
            echo "$rt client $k round $i: exit $rc (124/137: over ${BOUND}s) writing $sz bytes: $out" >>"$fail"
        elif [ "$out" != "$want" ]; then
            echo "$rt client $k round $i: sandbox says '$out', host has '$want'" >>"$fail"
        elif [ -e "s$k/f$((i - 2))" ]; then
            echo "$rt client $k round $i: s$k/f$((i - 2)) deleted in the sandbox is still on the host" >>"$fail"
        fi
        if [ $((i % 3)) = 0 ] && [ -e "s$k/f$((i - 1))" ]; then
            # the previous file back as output, through the output windows
            out=$(timeout -k 5 $BOUND "$SBXSH" -c "cat s$k/f$((i - 1))" | sha256sum)
            rc=${PIPESTATUS[0]}
            cmds=$((cmds + 1))
            bytes=$((bytes + $(stat -c %s "s$k/f$((i - 1))")))
            [ "$rc" = 0 ] && [ "$out" = "$(sha256sum <"s$k/f$((i - 1))")" ] ||
                echo "$rt client $k round $i: cat of s$k/f$((i - 1)) gave exit $rc, sha $out" >>"$fail"
        fi
        if [ $((i % 4)) = 1 ]; then
            # stdin through the input windows: what the sandbox reads is what we sent
            head -c "$sz" /dev/urandom >"$SBX_TEST_TMP/in.$k"
            out=$(timeout -k 5 $BOUND "$SBXSH" -c "sha256sum" <"$SBX_TEST_TMP/in.$k")
            rc=$?
            cmds=$((cmds + 1))
            bytes=$((bytes + sz))
            [ "$rc" = 0 ] && [ "$out" = "$(sha256sum <"$SBX_TEST_TMP/in.$k")" ] ||
                echo "$rt client $k round $i: $sz bytes of stdin gave exit $rc, sha $out" >>"$fail"
        fi
    done
    echo "$cmds $bytes" >"$SBX_TEST_TMP/count.$k"
}

# the tree as sha256 lines, without .git and the stage directories
tree_sums() {
    (cd "$1" && find . -path ./.git -prune -o -type f -print | LC_ALL=C sort | xargs -r -d '\n' sha256sum)
}

for rt in runsc bwrap; do
    why=$(runtime_skip_reason "$rt")
    if [ -n "$why" ]; then
        skip "stress on $rt: $why"
        continue
    fi
    # the full pass on the first runtime that runs here, the shorter one on the second
    ROUNDS=$ROUNDS1 ROUNDS1=$ROUNDS2
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=stress-$rt-$$
    rm -rf "$PROJ"/s* "$PROJ"/h*
    timeout -k 5 $BOUND "$SBXSH" -c true
    is "$?" 0 "$rt: the session starts"
    t0=$(date +%s%N)
    for ((k = 1; k <= CLIENTS; k++)); do client "$k" "$rt" & done
    wait
    t1=$(date +%s%N)
    cmds=0 bytes=0
    for ((k = 1; k <= CLIENTS; k++)); do
        read -r c b <"$SBX_TEST_TMP/count.$k" || c=0 b=0
        cmds=$((cmds + c)) bytes=$((bytes + b))
    done
    failures=$(cat "$SBX_TEST_TMP"/fail.*)
    is "$failures" "" "$rt: $cmds commands in $CLIENTS parallel clients, each within ${BOUND}s, every byte checked"
    diag "$rt: $cmds commands, $bytes bytes written and synced, $(((t1 - t0) / 1000000)) ms wall"
    # the sandbox's copy of the code directory (a tmpfs inside the sandbox) equals the
    # host's: the same listing, made in the sandbox
    sbx_tree=$(cd "$PROJ" && timeout -k 5 $BOUND "$SBXSH" -c "$(declare -f tree_sums); tree_sums .")
    host_tree=$(tree_sums "$PROJ")
    is "$sbx_tree" "$host_tree" "$rt: afterwards the sandbox's tree and the host's are the same, file by file"
    ok "$rt: no staging directory is left behind" test -z "$(find "$PROJ" -maxdepth 1 -name '.sbx-stage-*')"
    timeout -k 5 $BOUND "$SBX" release --session "$AGENT_SANDBOX_SESSION" >/dev/null 2>&1
done
done_testing
