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
#   Claude Code's snapshot step first: its script run as it runs it (`sbxsh -c -l SCRIPT`),
#   with the user's ~/.bashrc (an alias, a function, the ~/.bash_aliases it sources, a
#   GitHub token): the snapshot is on the host with the alias and functions and without the
#   token; its later commands source it; the sandbox cannot change or delete it.
#   Codex: `sbxsh -lc CMD`.
#   A persistent stdin shell (OpenHands-like): a line that sources the snapshot, then a push.
. "$(dirname "$0")/lib.sh"

# Claude Code's snapshot script for bash, SNAPSHOT_FILE $1, as reconstructed from its issue
# tracker (anthropics/claude-code#47689, #29103, #31437, #16545, #19053, #17534, #76171):
# it sources ~/.bashrc itself, then writes `unalias -a`, each function through base64 and
# eval, `shopt -p` and the `set -o` options that are on, `shopt -s expand_aliases`, the
# aliases as `alias -- NAME=...`, an rg fallback and PATH, and fails when the file is not
# there. (The `set -o` filter keeps the options that are on: the `grep "on"` that #47689
# reports also matched `onecmd off`, a bug fixed since.)
cc_snapshot_script() {
    cat <<EOF
SNAPSHOT_FILE=$(printf '%q' "$1")
source "$HOME/.bashrc" < /dev/null
# First, create/clear the snapshot file
echo "# Snapshot file" >| "\$SNAPSHOT_FILE"
# When this file is sourced, we first unalias to avoid conflicts
echo "# Unset all aliases to avoid conflicts with functions" >> "\$SNAPSHOT_FILE"
echo "unalias -a 2>/dev/null || true" >> "\$SNAPSHOT_FILE"
echo "# Functions" >> "\$SNAPSHOT_FILE"
# Force autoload all functions first
declare -f > /dev/null 2>&1
# Now get user function names - filter system ones and write directly to file
declare -F | cut -d' ' -f3 | grep -vE '^(_|__)' | while read func; do
  # Encode the function to base64, preserving all special characters
  encoded_func=\$(declare -f "\$func" | base64 )
  # Write the function definition to the snapshot
  echo "eval \"\\\$(echo '\$encoded_func' | base64 -d)\" > /dev/null 2>&1" >> "\$SNAPSHOT_FILE"
done
echo "# Shell Options" >> "\$SNAPSHOT_FILE"
shopt -p | head -n 1000 >> "\$SNAPSHOT_FILE"
set -o | grep -E '[[:space:]]on\$' | awk '{print "set -o " \$1}' | head -n 1000 >> "\$SNAPSHOT_FILE"
echo "shopt -s expand_aliases" >> "\$SNAPSHOT_FILE"
echo "# Aliases" >> "\$SNAPSHOT_FILE"
# Filter out winpty aliases on Windows to avoid "stdin is not a tty" errors
if [[ "\$OSTYPE" == "msys" ]] || [[ "\$OSTYPE" == "cygwin" ]]; then
  alias | grep -v "='winpty " | sed 's/^alias //g' | sed 's/^/alias -- /' | head -n 1000 >> "\$SNAPSHOT_FILE"
else
  alias | sed 's/^alias //g' | sed 's/^/alias -- /' | head -n 1000 >> "\$SNAPSHOT_FILE"
fi
# Check for rg availability
echo "# Check for rg availability" >> "\$SNAPSHOT_FILE"
echo "if ! command -v rg >/dev/null 2>&1; then" >> "\$SNAPSHOT_FILE"
echo "  alias rg='/opt/claude/vendor/ripgrep/rg'" >> "\$SNAPSHOT_FILE"
echo "fi" >> "\$SNAPSHOT_FILE"
# Add PATH to the file
echo "export PATH=\$(printf '%q' "\$PATH")" >> "\$SNAPSHOT_FILE"

# Exit silently on success, only report errors
if [ ! -f "\$SNAPSHOT_FILE" ]; then
  echo "Error: Snapshot file was not created at \$SNAPSHOT_FILE" >&2
  exit 1
fi
EOF
}

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}

start_git_daemon || skip_all "git daemon cannot serve on loopback here"

remote_head() { git --git-dir="$GITROOT/$1" log -1 --format=%s main 2>&1; }

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "agents on $rt: $why"
        continue
    fi
    setup_session "agents-$rt-$$" "$rt"
    remote=remote-$rt.git
    repo_with_remote "$remote" f

    # The user's startup files, as a person has them.
    token=ghp_0123456789abcdefghijABCDEFGHIJ012345
    cat > "$HOME/.bashrc" <<EOF
alias gs='git status --short'
mkcd() { mkdir -p "\$1" && cd "\$1"; }
export GITHUB_TOKEN=$token
[ -f ~/.bash_aliases ] && . ~/.bash_aliases
EOF
    printf '%s\n' "alias lsl='ls -l'" 'greet_user() { echo "hello from ~/.bash_aliases"; }' \
        > "$HOME/.bash_aliases"
    printf '[ -f ~/.bashrc ] && . ~/.bashrc\n' > "$HOME/.bash_profile"

    # Claude Code's state files, as docs/agents.md sets them up; it makes the snapshot
    # directory itself before it runs the shell.
    snaps=$HOME/.claude/shell-snapshots
    rm -rf "$snaps"
    mkdir -p "$snaps"
    export AGENT_SANDBOX_CREATE_PATHS=$snaps AGENT_SANDBOX_SYNC_PATHS='/tmp/claude-*-cwd'

    # The snapshot step.
    ccsnap=$snaps/snapshot-bash-$(date +%s%3N)-$rt$$.sh
    out=$("$SBXSH" -c -l "$(cc_snapshot_script "$ccsnap")" 2>&1)
    is "$?:$out" "0:" "$rt: Claude Code's snapshot step (sbxsh -c -l SCRIPT) succeeds, silently"
    ok "$rt: ...the snapshot file is on the host" test -f "$ccsnap"
    snaptext=$(cat "$ccsnap" 2>&1)
    like "$snaptext" $'\nalias -- gs=\'git status --short\'\n' "$rt: ...with the alias from ~/.bashrc"
    like "$snaptext" $'\nalias -- lsl=\'ls -l\'\n' "$rt: ...and the one from the ~/.bash_aliases it sources"
    decoded=$(env -i PATH=/usr/bin:/bin bash -c 'source "$1" >/dev/null 2>&1; declare -F mkcd greet_user' _ "$ccsnap" 2>&1)
    is "$decoded" "mkcd"$'\n'"greet_user" "$rt: ...and its functions (through base64: bash sourcing it on the host defines them)"
    unlike "$snaptext$decoded" "$token" "$rt: ...and not the token ~/.bashrc exports"
    out=$("$SBXSH" -c 'cat ~/.bashrc; env' 2>&1)
    like "$out" $'\nexport GITHUB_TOKEN= # sbxsh: value removed' "$rt: the sandbox's ~/.bashrc is the user's, the token's value removed"
    unlike "$out" "$token" "$rt: ...no token in the sandbox's ~/.bashrc or environment"
    out=$("$SBXSH" -l -c 'echo "[$GITHUB_TOKEN]"; type -t mkcd' 2>&1)
    is "$out" "[]"$'\n'"function" "$rt: a login sbxsh -c reads the user's ~/.bash_profile in the sandbox, as bash does"

    # Its commands source that snapshot.
    cwdfile=/tmp/claude-$rt-$$-cwd
    rm -f "$cwdfile"
    out=$("$SBXSH" -c -l "source $ccsnap 2>/dev/null || true && { shopt -u extglob 2>/dev/null || true; } && eval 'greet_user && mkcd made/here && gs --untracked-files=no . && lsl -d . | cut -c1' < /dev/null && pwd -P >| $cwdfile" 2>&1)
    is "$out" "hello from ~/.bash_aliases"$'\n'"d" "$rt: Claude Code's command: the user's function, alias and a function's cd work"
    is "$(cat "$cwdfile" 2>&1)" "$CODE/made/here" "$rt: ...and the cwd file on the host says where it went"
    ok "$rt: ...the directory came back" test -d "$CODE/made/here"
    rm -rf "$CODE/made" "$cwdfile"

    # The sandbox may add snapshots, never change or delete the host's.
    before=$(cat "$ccsnap")
    out=$("$SBXSH" -c "echo 'git() { :; }' >> $ccsnap" 2>&1)
    like "$out" "refused a sandbox change to .*/shell-snapshots/snapshot-bash-.*\.sh: .* is create-only" \
         "$rt: the sandbox appending to the host's snapshot is refused, with a warning"
    is "$(cat "$ccsnap")" "$before" "$rt: ...the host's snapshot is unchanged"
    "$SBXSH" -c "rm -f $ccsnap" >/dev/null 2>&1
    ok "$rt: ...a deletion too: the host keeps it" test -f "$ccsnap"
    out=$("$SBXSH" -c "cat $ccsnap" 2>&1)
    is "$out" "$before" "$rt: ...and the sandbox has the host's version back"
    ls "$snaps" > "$SBX_TEST_TMP/snaps.before"
    "$SBXSH" -c "ln -s /etc/passwd $snaps/link; printf x > $snaps/x.sh; chmod +x $snaps/x.sh" >/dev/null 2>&1
    is "$(ls "$snaps")" "$(cat "$SBX_TEST_TMP/snaps.before")" "$rt: ...nor does a symlink or an executable file come"

    # The later tests' hand-written snapshot.
    snap=$snaps/snapshot-bash-1700000000000-abc123.sh
    cat > "$snap" <<'EOF'
# Snapshot file
shopt -s expand_aliases
alias ll='ls -l'
greet() { echo "hello from the snapshot"; }
EOF
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
    unset AGENT_SANDBOX_CREATE_PATHS AGENT_SANDBOX_SYNC_PATHS
    end_session
done

done_testing
