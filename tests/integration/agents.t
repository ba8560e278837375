#!/bin/bash
# What agents send, exactly as they send it, against a real repository whose remote is a
# `git daemon` on loopback (the sandbox has no network: a push that reaches the remote ran
# on the host). On each runtime:
#   Claude Code: `sbxsh -c -l 'source SNAPSHOT && eval '\''CMD'\'' < /dev/null && pwd -P >|
#   /tmp/claude-XXXX-cwd'` and its later form (`source SNAPSHOT 2>/dev/null || true && {
#   shopt -u extglob ...; } && eval ...`), with the settings docs/agents.md gives: the
#   commit inside the eval runs in the sandbox, the push on the host, the snapshot's alias
#   and function work in the eval's text, the cwd file is on the host; a snapshot that
#   redefines git (a function, an alias) keeps the push in the sandbox, as bash would run
#   it there; the eval's `< /dev/null` reaches every part of its text.
#   Codex: `sbxsh -lc CMD`.
#   A persistent stdin shell (OpenHands-like): a line that sources the snapshot, then a push.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}

start_git_daemon || skip_all "git daemon cannot serve on loopback here"

remote_head() { git --git-dir="$GITROOT/$1" log -1 --format=%s main 2>&1; }

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "agents on $rt: $why"
        continue
    fi
    setup_session "agents-$rt-$$" "$rt"
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
    cd "$CODE" || bail_out "no code dir"
    printf '[user]\n\tname = T\n\temail = t@example.com\n' > "$HOME/.gitconfig"
    remote=remote-$rt.git
    git init -q --bare "$GITROOT/$remote"
    git init -q . && git symbolic-ref HEAD refs/heads/main
    echo one > f && git add f && git commit -qm one
    git remote add origin "$GITBASE/$remote"
    git push -q origin main 2>/dev/null || bail_out "cannot push to $GITBASE/$remote"

    # Claude Code's state files, as docs/agents.md sets them up.
    snaps=$HOME/.claude/shell-snapshots
    mkdir -p "$snaps"
    snap=$snaps/snapshot-bash-1700000000000-abc123.sh
    cat > "$snap" <<'EOF'
# Snapshot file
shopt -s expand_aliases
alias ll='ls -l'
greet() { echo "hello from the snapshot"; }
EOF
    export AGENT_SANDBOX_TASK_FILES=$snaps AGENT_SANDBOX_SYNC_PATHS='/tmp/claude-*-cwd'
    cwdfile=/tmp/claude-$rt-$$-cwd
    rm -f "$cwdfile"
    cc() { # Claude Code's wrapper around CMD (its first form)
        "$SBXSH" -c -l "source $snap && eval '$1' < /dev/null && pwd -P >| $cwdfile"
    }
    cc2() { # its later form
        "$SBXSH" -c -l "source $snap 2>/dev/null || true && { shopt -u extglob 2>/dev/null || true; } && eval '$1' < /dev/null && pwd -P >| $cwdfile"
    }

    echo two >> f
    out=$(cc 'git commit -qam two' 2>&1)
    is "$out" "" "$rt: Claude Code: a commit inside its eval runs (in the sandbox)"
    is "$(git log -1 --format=%s 2>&1)" "two" "$rt: ...and comes back to the host's repository"
    is "$(cat "$cwdfile" 2>&1)" "$CODE" "$rt: ...the cwd file is on the host"
    rm -f "$cwdfile"
    out=$(cc 'git push -q origin HEAD:main' 2>&1)
    is "$?:$out" "0:" "$rt: Claude Code: git push inside its eval succeeds"
    is "$(remote_head "$remote")" "two" "$rt: ...on the host (the remote has the commit)"
    is "$(cat "$cwdfile" 2>&1)" "$CODE" "$rt: ...and the cwd file is written after it"

    echo three >> f
    out=$(cc2 'git commit -qam three && git push -q origin HEAD:main && greet && ll f | cut -c1-10' 2>&1)
    is "$out" "hello from the snapshot
-rw-r--r--" "$rt: Claude Code's later form: the snapshot's function and alias work in the eval"
    is "$(remote_head "$remote")" "three" "$rt: ...and the push in the same eval ran on the host"

    route=$("$SBXSH" --route -c -l "source $snap && eval 'git status && git push origin HEAD:main' < /dev/null && pwd -P >| $cwdfile" 2>&1)
    like "$route" $'\nsandbox\teval: its text runs part by part[^\n]*\nsandbox\t[^\n]*\t  git status\nhost\thost if the sandbox.s shell has not redefined its commands[^\n]*\t  git push origin HEAD:main\n' \
         "$rt: --route shows the eval's parts, the push on the host"

    # A snapshot that redefines git: bash would run the definition, in the sandbox.
    echo 'git() { echo "the snapshot'"'"'s git: $*"; }' > "$snaps/snapshot-bash-2-fn.sh"
    echo four >> f && git commit -qam four
    out=$("$SBXSH" -c -l "source $snaps/snapshot-bash-2-fn.sh && eval 'git push -q origin HEAD:main' < /dev/null" 2>&1)
    is "$out" "the snapshot's git: push -q origin HEAD:main" \
       "$rt: a snapshot defining git as a function: the eval runs it, as bash would"
    is "$(remote_head "$remote")" "three" "$rt: ...and nothing was pushed"
    printf 'shopt -s expand_aliases\nalias git="echo aliased git"\n' > "$snaps/snapshot-bash-3-alias.sh"
    out=$("$SBXSH" -c -l "source $snaps/snapshot-bash-3-alias.sh && eval 'git push -q origin HEAD:main' < /dev/null" 2>&1)
    is "$out" "aliased git push -q origin HEAD:main" "$rt: ...an alias of git likewise"
    is "$(remote_head "$remote")" "three" "$rt: ...nothing pushed"

    # The eval's `< /dev/null` is every part's stdin, host and sandbox.
    out=$(echo "read from the caller" | "$SBXSH" -c "eval 'cat; git ls-remote origin main | cut -c1-7' < /dev/null" 2>&1)
    is "$out" "$(git rev-parse HEAD~ | cut -c1-7)" \
       "$rt: an eval's < /dev/null: cat inside reads nothing, ls-remote runs on the host"

    # Codex: `$SHELL -lc CMD`.
    out=$("$SBXSH" -lc 'git push -q origin HEAD:main && git log -1 --format=%s' 2>&1)
    is "$?:$out" "0:four" "$rt: Codex (-lc): git push on the host, git log in the sandbox"
    is "$(remote_head "$remote")" "four" "$rt: ...the remote has the commit"

    # A persistent shell fed on stdin (OpenHands keeps one shell): the snapshot sourced by
    # one command, a push in the next.
    echo five >> f && git commit -qam five
    out=$(printf 'source %s\ngreet\ngit push -q origin HEAD:main\n' "$snap" | "$SBXSH" 2>&1)
    is "$out" "hello from the snapshot" "$rt: stdin mode: a sourced snapshot's function runs"
    is "$(remote_head "$remote")" "five" "$rt: ...and a later push runs on the host"
    out=$(printf 'source %s\ngit push -q origin HEAD:main\n' "$snaps/snapshot-bash-2-fn.sh" | "$SBXSH" 2>&1)
    is "$out" "the snapshot's git: push -q origin HEAD:main" \
       "$rt: stdin mode: after a snapshot defining git, bash's git (the function) runs"

    rm -f "$cwdfile"
    unset AGENT_SANDBOX_TASK_FILES AGENT_SANDBOX_SYNC_PATHS
    end_session
done

done_testing
