#!/bin/bash
# git's fsmonitor in the sandbox (on by default, AGENT_SANDBOX_GIT_FSMONITOR; issue 27), on
# each runtime:
# `git status --porcelain` through sbx-agent's fsmonitor hook and the untracked cache says
# what git without either says, after each of many random changes made in the sandbox
# (fsmonitor-driver.sh: edits, same-size rewrites, new and deleted files and directories,
# renames, .gitignore edits, git add and commit, ...) and pulled from the host between
# commands; the hook really answers with lists (not only "everything"); the setting is in
# the sandbox's git config and never in any the host's git reads; AGENT_SANDBOX_GIT_FSMONITOR=0
# leaves it out.
#
# In make check, each runtime makes every kind of change of the driver twice (4 commands of
# 12 rounds, the kinds in a random order); SBX_TEST_LONG=1 runs 12 commands of 20 random
# changes each (480 rounds in all: about 100 s against 30 on a 2-core machine at load 9).
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}
driver=$(cd "$(dirname "$0")" && pwd)/fsmonitor-driver.sh
NKINDS=24                         # the driver's kinds of change
if [ -n "${SBX_TEST_LONG:-}" ]; then
    NCMDS=${SBX_FSM_COMMANDS:-12} ROUNDS=${SBX_FSM_ROUNDS:-20} cycle=
else
    NCMDS=${SBX_FSM_COMMANDS:-4} ROUNDS=${SBX_FSM_ROUNDS:-12} cycle=y
fi
SEED0=${SBX_FSM_SEED:-$(( $(date +%s) % 100000 ))}
diag "seed $SEED0 (SBX_FSM_SEED=$SEED0 repeats this run)"
RANDOM=$SEED0
# The order of the kinds in the short run: a shuffle of 0..NKINDS-1, from the seed.
order=$(seq 0 $((NKINDS - 1)) | shuf --random-source=<(yes "$SEED0") | tr '\n' ' ')

# Random changes on the host, pulled into the sandbox by the next command.
host_changes() {
    local f d
    for _ in 1 2 3 4; do
        f=$(find . -path ./.git -prune -o -type f -print | shuf -n1 --random-source=<(yes "$RANDOM"))
        d=$(find . -path ./.git -prune -o -type d -print | shuf -n1 --random-source=<(yes "$RANDOM"))
        case $((RANDOM % 6)) in
        0|1) [ -n "$f" ] && echo "h$RANDOM" >>"$f" ;;
        2) echo "h" >"$d/host$RANDOM.txt" ;;
        3) [ -n "$f" ] && rm -f "$f" ;;
        4) f=$d/hd$RANDOM; mkdir -p "$f" && echo x >"$f/f" ;;
        5) [ -d .gitignore ] || echo "${d#./}/host*" >>.gitignore ;;
        esac
    done
}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "git fsmonitor on $rt: $why"
        continue
    fi
    setup_session "fsm-$rt-$$" "$rt"
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
    cp "$driver" "$CODE/driver.sh" || bail_out "no $driver"
    # The work tree is a subdirectory of the code directory: the hook's paths are relative
    # to it.
    mkdir -p "$CODE/repo"
    cd "$CODE/repo" || bail_out "no code dir"
    git init -q . && git config user.email t@example.com && git config user.name t
    for d in a b c a/x a/y b/z; do
        mkdir -p "$d"
        for i in $(seq 30); do echo "$d $i" >"$d/f$i.txt"; done
    done
    echo '*.log' >.gitignore
    git add -A && git commit -qm init

    # Where the backend puts the hook: local/local.h, SBX_IN_FSMONITOR_HOOK; on kube the
    # pod's agent links itself there (kube/backend.c).
    hook=/.sbxsh/sbx-fsmonitor-hook
    [ "$rt" = kube ] && hook=/run/sbxsh/sbx-fsmonitor-hook
    is "$("$SBXSH" -c 'git config --get core.fsmonitor; git config --get core.untrackedCache
        git config --get core.preloadIndex')" "$hook
true
false" "$rt: by default the sandbox's git config names sbx-agent's fsmonitor hook and the untracked cache, without preload threads"

    used=0
    for c in $(seq "$NCMDS"); do
        host_changes
        kinds=
        [ -n "$cycle" ] && kinds="$(((c - 1) * ROUNDS)) '$order'"
        out=$("$SBXSH" -c "FSM_DRIVER_GIT='${FSM_DRIVER_GIT:-}' FSM_DRIVER_DEBUG='${FSM_DRIVER_DEBUG:-}' bash ../driver.sh $((SEED0 + c)) $ROUNDS $kinds" 2>&1)
        is "$(grep -c '^MISMATCH' <<<"$out") mismatches, $(grep -c '^ROUNDS' <<<"$out") end" \
            "0 mismatches, 1 end" \
            "$rt: command $c: git status with the fsmonitor is git status without it, $ROUNDS changes" ||
            diag "$(grep -A8 '^MISMATCH' <<<"$out" | head -40)"
        grep -q '^ROUNDS' <<<"$out" || diag "driver: $(tail -5 <<<"$out")"
        grep -q '^USED y' <<<"$out" && used=$((used + 1))
    done
    # A fresh agent's first command has no watched tree yet (everything, then).
    ok "$rt: the hook answered with the changed paths ($used of $NCMDS commands)" \
        test "$used" -ge $((NCMDS - 1))

    # A client that sends garbage gets nothing, and the agent answers the next one; with the
    # agent's socket gone, the hook says "everything" and git checks every file.
    out=$("$SBXSH" -c 'python3 -c "
import socket
s = socket.socket(socket.AF_UNIX)
s.connect(\"/tmp/.sbxsh-fsmonitor.sock\")
s.sendall(b\"garbage\\0\\0\\0\\0\")
s.shutdown(socket.SHUT_WR)
print(len(s.recv(100)))
"
echo probe >zz-probe1
GIT_TRACE_FSMONITOR=1 git status --porcelain 2>&1 | grep -q "fsmonitor_refresh_callback .zz-probe1." && echo named
rm -f /tmp/.sbxsh-fsmonitor.sock
"$(git config --get core.fsmonitor)" 2 sbx1:x:1 | tr "\0" " "; echo
echo probe >zz-probe2
git status --porcelain | grep -c "zz-probe2"' 2>&1)
    is "$out" "0
named
sbx1:none / 
1" "$rt: a garbage request gets no answer and the next one a list; no agent: the hook says everything, git checks all"

    # The host's git never sees the setting: not in the repository's config (which does not
    # come back from the sandbox), not in the host's global config.
    "$SBXSH" -c 'git config core.fsmonitor "touch /tmp/pwned"' >/dev/null 2>&1
    is "$(git config --show-origin --get-all core.fsmonitor; git config --get-all core.untrackedCache)" "" \
        "$rt: the host's git reads no core.fsmonitor or core.untrackedCache"
    is "$(git status --porcelain >/dev/null 2>&1; git -c core.fsmonitor=false status --porcelain | wc -l)" \
        "$(git status --porcelain | wc -l)" "$rt: the host's git status is unchanged"
    end_session

    # Turned off: a new sandbox's git checks every file itself, with no hook named.
    AGENT_SANDBOX_GIT_FSMONITOR=0 AGENT_SANDBOX_SESSION=fsm-off-$rt-$$ \
        "$SBXSH" -c 'git config --get core.fsmonitor; echo "fsmonitor $?"
        git config --get core.untrackedCache; echo "untrackedCache $?"
        GIT_TRACE_FSMONITOR=1 git status --porcelain 2>&1 | grep -c fsmonitor' >"$SBX_TEST_TMP/off.out" 2>&1
    is "$(cat "$SBX_TEST_TMP/off.out")" "fsmonitor 1
untrackedCache 1
0" \
        "$rt: AGENT_SANDBOX_GIT_FSMONITOR=0: no fsmonitor or untracked cache in the sandbox's git config"
    "$SBX" release --session "fsm-off-$rt-$$" >/dev/null 2>&1
    cd / || true
done
done_testing
