#!/bin/bash
# Any directory: a login shell in ~, a command in /tmp or /, and a home directory
# named as the code directory. A directory that is not a project is never synced
# whole: the session runs without code directories, in the sandbox's own tree
# (its private HOME at ~, its private /tmp). Credentials in a home directory never
# reach the sandbox, whatever the code directories are.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "any directory on $rt: $why"
        continue
    fi
    setup_session "anydir-$rt-$$" "$rt"
    # What a login shell in ~ has: no code directory named, the state directory in
    # its default place under ~ (that made ~ fail before: "the state directory lies
    # inside the code directory"), a derived session name.
    unset AGENT_SANDBOX_CODE_DIRS AGENT_SANDBOX_SESSION AGENT_SANDBOX_STATE_DIR
    export HOME=$SBX_TEST_TMP/home-$rt
    mkdir -p "$HOME/.ssh" "$HOME/proj"
    HOME=$(cd "$HOME" && pwd -P)
    echo SECRET-KEY >"$HOME/.ssh/id_ed25519"
    echo host-file >"$HOME/notes.txt"
    cd "$HOME" || bail_out "no home"

    out=$("$SBXSH" -c 'pwd; echo "$HOME"' 2>&1)
    is "$out" "$HOME
$HOME" "$rt: sbxsh -c pwd in ~ runs (in the sandbox's private home)"
    out=$("$SBXSH" -l -c 'shopt -q login_shell && echo login; pwd' 2>&1)
    is "$out" "login
$HOME" "$rt: a login shell in ~ starts"
    out=$("$SBXSH" -c 'ls -a; cat .ssh/id_ed25519 notes.txt 2>&1 | grep -c "No such file"' 2>&1)
    unlike "$out" 'SECRET-KEY|host-file' "$rt: the host's home is not copied into the sandbox"
    "$SBXSH" -c 'echo sandbox > made-in-sandbox.txt'
    ok "$rt: a file written in ~ stays in the sandbox" test ! -e "$HOME/made-in-sandbox.txt"
    is "$("$SBXSH" -c 'cat made-in-sandbox.txt' 2>&1)" "sandbox" \
       "$rt: ...and the next command of the session sees it"
    status=$("$SBX" status 2>&1)
    unlike "$status" 'code dir' "$rt: sbx status shows no code directory"
    session=$(sed -n 's/^session: *//p' <<<"$status")
    like "$session" '^scratch-' "$rt: the session is the user's scratch session"

    # A second caller of the same uid with another HOME (a harness that sets one per
    # task) gets a scratch session of its own, where its HOME exists.
    home2=$SBX_TEST_TMP/home2-$rt
    mkdir -p "$home2"
    home2=$(cd "$home2" && pwd -P)
    out=$(cd "$home2" && HOME=$home2 "$SBXSH" -c 'pwd; echo "$HOME"; test -e made-in-sandbox.txt && echo shared || echo own' 2>&1)
    is "$out" "$home2
$home2
own" "$rt: another HOME, same uid: its own scratch sandbox, its HOME exists there"
    session2=$(cd "$home2" && HOME=$home2 "$SBX" status 2>&1 | sed -n 's/^session: *//p')
    like "$session2" '^scratch-' "$rt: ...a scratch session"
    isnt "$session2" "$session" "$rt: ...not the first HOME's"
    (cd "$home2" && HOME=$home2 "$SBX" release >/dev/null 2>&1)

    # /tmp and /: nothing copied, the sandbox's own directories.
    marker=/tmp/sbx-anydir-$rt-$$
    echo host >"$marker"
    out=$(cd /tmp && "$SBXSH" -c 'pwd; test -e '"$marker"' && echo copied || echo not-copied' 2>&1)
    is "$out" "/tmp
not-copied" "$rt: in /tmp the command runs in the sandbox's private /tmp, nothing copied"
    rm -f "$marker"
    out=$(cd / && "$SBXSH" -c 'pwd; test -d /usr/bin && echo system' 2>&1)
    is "$out" "/
system" "$rt: in / the command runs at the sandbox's root"
    "$SBX" release --session "$session" >/dev/null 2>&1

    # The home directory as the code directory, named on purpose: synced, but not its
    # credentials.
    export AGENT_SANDBOX_STATE_DIR=$SBX_TEST_TMP/state-$rt
    export AGENT_SANDBOX_CODE_DIRS=$HOME AGENT_SANDBOX_SESSION=anydir-home-$rt-$$
    echo code >"$HOME/proj/a.txt"
    out=$("$SBXSH" -c 'cat proj/a.txt; cat .ssh/id_ed25519 2>/dev/null || echo no-key' 2>&1)
    is "$out" "code
no-key" "$rt: AGENT_SANDBOX_CODE_DIRS=~ syncs the files but never ~/.ssh"
    "$SBXSH" -c 'mkdir -p .ssh; echo planted > .ssh/authorized_keys'
    ok "$rt: a key the sandbox writes to ~/.ssh does not come back" \
       test ! -e "$HOME/.ssh/authorized_keys"
    "$SBX" release >/dev/null 2>&1
    unset AGENT_SANDBOX_CODE_DIRS
    export AGENT_SANDBOX_SESSION=anydir-$rt-$$
done

done_testing
