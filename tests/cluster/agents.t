#!/bin/bash
# docs/agents.md's invocation shapes, each run through sbxsh as the agent runs its shell
# (local backend, a real sandbox): the command runs in the sandbox, the snapshot the line
# sources (AGENT_SANDBOX_CREATE_PATHS) is there, and the cwd file it writes
# (AGENT_SANDBOX_SYNC_PATHS) comes back to the host where the agent reads it.
. "$(dirname "$0")/../integration/lib.sh"

rt=
for r in bwrap runsc; do
    if why=$(runtime_usable "$r"); then rt=$r; break; fi
done
[ -n "$rt" ] || skip_all "no sandbox runtime can start here: $why"
setup_session agents-t "$rt"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$CODE" || bail_out "cannot enter $CODE"
mkdir -p sub/dir
tag=$$

# Claude Code (anthropics/claude-code#4399, logged through CLAUDE_CODE_SHELL_PREFIX):
#   $SHELL -c -l "source ~/.claude/shell-snapshots/snapshot-bash-T-R.sh && eval 'CMD' < /dev/null && pwd -P >| /tmp/claude-XXXX-cwd"
snapdir=$HOME/.claude/shell-snapshots
mkdir -p "$snapdir"
snap=$snapdir/snapshot-bash-1755042239230-87cw6n.sh
printf 'alias ll="ls -l"\nexport FROM_SNAPSHOT=yes\nshopt -s expand_aliases\n' >"$snap"
cwdfile=/tmp/claude-$tag-cwd
rm -f "$cwdfile"
export AGENT_SANDBOX_CREATE_PATHS=$snapdir AGENT_SANDBOX_SYNC_PATHS='/tmp/claude-*-cwd'
out=$(cd sub && "$SBXSH" -c -l "source $snap && eval 'cd dir && echo \$FROM_SNAPSHOT && touch made-here' < /dev/null && pwd -P >| $cwdfile" 2>&1); rc=$?
is "$rc:$out" "0:yes" "Claude Code's shape: the snapshot sourced in the sandbox, the command run"
is "$(cat "$cwdfile" 2>&1)" "$CODE/sub/dir" "... the cwd file is back on the host, naming the sandbox's cwd"
ok "... and the file the command made is on the host" test -f "$CODE/sub/dir/made-here"
like "$("$SBXSH" --route -c "source $snap && eval 'ls' < /dev/null && pwd -P >| $cwdfile")" '^sandbox' \
    "... the whole line is routed to the sandbox"
rm -f "$cwdfile"

# Claude Code, later versions (anthropics/claude-code#62436, #57450): the snapshot's failure
# ignored and extglob turned off before the eval.
out=$("$SBXSH" -c -l "source $snap 2>/dev/null || true && { shopt -u extglob 2>/dev/null || true; } && eval 'echo \$FROM_SNAPSHOT; shopt -q extglob && echo extglob-on || echo extglob-off' < /dev/null && pwd -P >| $cwdfile" 2>&1); rc=$?
is "$rc:$out" "0:yes
extglob-off" "Claude Code's later shape: run, extglob off"
is "$(cat "$cwdfile" 2>&1)" "$CODE" "... the cwd file back on the host"
rm -f "$cwdfile"
out=$("$SBXSH" -c -l "source $snapdir/snapshot-bash-missing.sh 2>/dev/null || true && eval 'echo ran' < /dev/null && pwd -P >| $cwdfile" 2>&1); rc=$?
is "$rc:$out" "0:ran" "... a snapshot that is not there (not in AGENT_SANDBOX_CREATE_PATHS) only skips the source"
rm -f "$cwdfile"
unset AGENT_SANDBOX_CREATE_PATHS AGENT_SANDBOX_SYNC_PATHS

# Codex CLI: [shell, "-lc", CMD] with the login shell from the passwd entry, accepted only
# when it is named like a shell it knows (codex-rs/core/src/shell.rs): sbxsh through a link
# named bash.
mkdir -p "$SBX_TEST_TMP/codex-shell"
ln -s "$SBXSH" "$SBX_TEST_TMP/codex-shell/bash"
out=$("$SBX_TEST_TMP/codex-shell/bash" -lc "cd sub && pwd && test -f dir/made-here && echo seen" 2>&1); rc=$?
is "$rc:$out" "0:$CODE/sub
seen" "Codex's shape, bash -lc CMD, through a link named bash: run in the sandbox"
out=$("$SBX_TEST_TMP/codex-shell/bash" -lc "exit 7" 2>&1); rc=$?
is "$rc" 7 "... the command's exit status"

# aider: at a terminal, pexpect.spawn($SHELL, ["-i", "-c", CMD]) (aider/run_cmd.py).
out=$(SHELL=$SBXSH "$top/tests/local/ptyrun.py" -- "$SBXSH" -i -c 'echo from-aider' 2>&1); rc=$?
is "$rc" 0 "aider's shape, \$SHELL -i -c CMD on a terminal: exit 0" || diag "$out"
like "$out" 'from-aider' "... the command's output"

# Goose: $GOOSE_SHELL -c CMD (aaif-goose/goose#7909); it sets GOOSE_TERMINAL=1, which the
# sandbox sees only when forwarded.
out=$(GOOSE_TERMINAL=1 "$SBXSH" -c 'echo "goose=${GOOSE_TERMINAL:-unset}"' 2>&1)
is "$out" "goose=unset" "Goose's shape: \$GOOSE_SHELL -c CMD; its GOOSE_TERMINAL stays on the host"
out=$(GOOSE_TERMINAL=1 AGENT_SANDBOX_FORWARD_ENV=GOOSE_TERMINAL "$SBXSH" -c 'echo "goose=${GOOSE_TERMINAL:-unset}"' 2>&1)
is "$out" "goose=1" "... and reaches the sandbox with AGENT_SANDBOX_FORWARD_ENV=GOOSE_TERMINAL"

# Any $SHELL tool: a long-lived shell fed on stdin keeps its state.
out=$(printf 'cd sub\nX=41\necho $((X + 1)) $PWD\n' | "$SBXSH" 2>&1)
is "$out" "42 $CODE/sub" "a tool keeping one sbxsh on stdin: state kept between commands"
done_testing
