#!/bin/bash
# aider's shape at a terminal, on each runtime, against a real repository whose remote is a
# `git daemon` on loopback (the sandbox has no network: a push that reaches the remote ran
# on the host). aider.py runs a command as aider's run_cmd_pexpect does when its stdin is a
# terminal (here tests/local/ptyrun.py's pty): pexpect.spawn($SHELL, ["-i", "-c", CMD]),
# interact(), close(), keeping the output and the exit status aider keeps. With
# SHELL=sbxsh both must be what the same run gives with SHELL=/bin/bash; a commit made by
# the command comes back to the host's repository and its `git push` runs on the host.
# (Without a terminal aider runs subprocess.Popen(CMD, shell=True): /bin/sh -c, not $SHELL,
# so sbxsh is not involved there: docs/agents.md says so.)
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}
here=$(cd "$(dirname "$0")" && pwd)
AIDER=$here/aider.py
PTYRUN=$here/../local/ptyrun.py

python3 -c 'import pexpect' 2>/dev/null || skip_all "python3's pexpect is not installed (aider runs commands with it: make deps)"
command -v jq >/dev/null || skip_all "jq not installed (it reads aider.py's JSON: make deps)"
start_git_daemon || skip_all "git daemon cannot serve on loopback here"

remote_head() { git --git-dir="$GITROOT/$1" log -1 --format=%s main 2>&1; }

# aider SHELL CMD: sets A_EXIT and A_OUT (the output as aider keeps it, CRs shown as \r)
aider() {
    local res=$SBX_TEST_TMP/aider-result.json
    rm -f "$res"
    SHELL=$1 "$PTYRUN" -- python3 "$AIDER" "$res" "$2" >/dev/null 2>&1
    A_EXIT=$(jq -r .exit "$res" 2>/dev/null)
    A_OUT=$(jq -r '.output | gsub("\r"; "\\r")' "$res" 2>/dev/null)
    [ -n "$A_EXIT" ] || diag "aider.py left no result for: $2"
}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "aider's shape on $rt: $why"
        continue
    fi
    setup_session "agents-aider-$rt-$$" "$rt"
    remote=remote-aider-$rt.git
    repo_with_remote "$remote" sub/f
    # aider's own files in the repository's top level, which it writes on the host, kept out
    # of the sandbox as docs/agents.md says
    printf '# aider chat started\n' > .aider.chat.history.md
    mkdir .aider.tags.cache.v4 && echo cache > .aider.tags.cache.v4/cache.db
    export AGENT_SANDBOX_SYNC_EXCLUDE='.aider*'

    # the same commands through bash and through sbxsh: output and exit status alike
    while IFS= read -r cmd; do
        aider /bin/bash "$cmd"
        want="$A_EXIT | $A_OUT"
        [ -n "$A_EXIT" ] || want="(no result from bash -i -c)"
        aider "$SBXSH" "$cmd"
        is "$A_EXIT | $A_OUT" "$want" "$rt: \$SHELL -i -c '$cmd' on a terminal: output and status as bash's"
    done <<'EOF'
echo out; echo err >&2; ls /nonexistent-dir; sh -c 'exit 3'
test -t 0 && test -t 1 && test -t 2 && echo "on a terminal"; stty size
cd sub && pwd && cat f | tr a-z A-Z
EOF
    is "$(aider /bin/bash 'sh -c "exit 3"'; echo "$A_EXIT")" 3 "$rt: (bash's reference status is the command's: 3)"

    aider "$SBXSH" "echo 'written by the command' > aider.txt && git add aider.txt && git commit -qm 'aider commit' && git push -q origin HEAD:main && echo pushed"
    is "$A_EXIT | $A_OUT" '0 | pushed\r' "$rt: a commit and git push in one command: exit status 0"
    is "$(cat "$CODE/aider.txt" 2>&1)" "written by the command" "$rt: ...the file it wrote is on the host"
    is "$(git -C "$CODE" log -1 --format=%s 2>&1)" "aider commit" "$rt: ...the commit is the host repository's"
    is "$(remote_head "$remote")" "aider commit" "$rt: ...and the push ran on the host: the remote has it"

    aider "$SBXSH" 'ls -A | grep aider; git status --porcelain'
    is "$A_EXIT | $A_OUT" '0 | aider.txt\r' \
       "$rt: AGENT_SANDBOX_SYNC_EXCLUDE='.aider*': aider's own files are not in the sandbox"
    is "$(cat .aider.chat.history.md .aider.tags.cache.v4/cache.db 2>&1)" "# aider chat started
cache" "$rt: ...and stay as they were on the host"

    end_session
done

done_testing
