#!/bin/bash
# Issue 27, the prompt's report after each command (cli/line.c: the "done" and "next"
# reports, read by `read -N` and defined by eval rather than parsed a byte at a time), at a
# real terminal (tmux), on each local runtime that is usable: a PS1 that needs the shell is
# expanded by the session's bash itself, as interactive bash expands it (the same $BASHPID
# as $$, and an assignment in it stays, counting prompts), not in a subshell; under set -e
# a PS1 whose expansion fails does not end the session's shell; a background job a signal
# ended is told before the next prompt ("[1]+  Terminated"), though eval, like every new
# line bash reads, is where a non-interactive bash tells of it; set -x traces the person's
# commands only; the reports leave no function or variable behind; $? and $_ are the
# command's; and a line an error abandons (its "done" report skipped, the definitions that
# follow it parsed as a comment) still gives the next command the right $?, $_ and LINENO.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

tmux_usable || skip_all "$TMUX_WHY"
rts=()
for rt in bwrap runsc; do
    if why=$(runtime_usable "$rt"); then rts+=("$rt"); else diag "$rt left out: $why"; fi
done
[ ${#rts[@]} -gt 0 ] || skip_all "neither bubblewrap nor runsc can start a sandbox here"
setup_session "prompt-report-$$" "${rts[0]}"
cd "$CODE" || bail_out "no code dir"

# without a terminal (stdin mode, the same reports): an abandoned line, then the next one
out=$(printf 'echo ${x!}; echo same-line\necho "st=$? _=$_"\ncat <<E; echo ${y!}\nhd\nE\necho "st=$? _=$_ line=$LINENO"\n' |
    "$SBXSH" 2>&1)
like "$out" $'st=1 _=[^\n]*sbxsh\n' "stdin mode: a line a bad substitution abandons leaves \$? 1 and \$_ as bash's"
like "$out" $'\nhd\n(.*\n)?st=1 _=cat line=6' "...and with a here-document on it: the next line has \$?, \$_ and LINENO as bash's"
unlike "$out" 'same-line|__sbx|#' "...nothing of the abandoned line runs, nothing of the report shows"

tmux_start 120 30
sbx_type() { tmux_type_line "$1"; }
# run_until REGEX: at the prompt, runs `true` until the screen matches, at most 30 times: the
# job a `kill` ended may be reaped after the next prompt's report, as with bash, which then
# tells of it at a later prompt. Each `true` is typed once the prompt is back (typed sooner,
# under load, its echo could come before the notice, on the notice's line).
run_until() {
    for _ in $(seq 30); do
        tmux_wait_last 'P> ?$' || return 1
        [[ $(tmux_screen) =~ $1 ]] && return 0
        sbx_type true
    done
    tmux_wait_last 'P> ?$' || return 1
    tmux_wait "$1" 1
}

for rt in "${rts[@]}"; do
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=prompt-report-$rt-$$
    tmux_run clear; tmux_cmd clear-history
    sbx_type "env AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=$AGENT_SANDBOX_SESSION $SBXSH"
    tmux_wait_last '[$#] ?$' 120 || diag "no sbxsh prompt on $rt"

    sbx_type 'PS1='"'"'pid=$BASHPID/$$ P> '"'"
    tmux_wait_last '^pid=[0-9]+/[0-9]+ P> ?$'
    [[ $(tmux_last) =~ ^pid=([0-9]+)/([0-9]+) ]]
    is "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" \
        "$rt: PS1 is expanded by the session's shell itself (\$BASHPID is \$\$), no subshell per prompt"

    sbx_type 'n=0; PS1='"'"'n=$((n+=1)) [$?] P> '"'"
    tmux_wait_last '^n=1 \[0\] P> ?$'
    sbx_type 'false'
    ok "$rt: an assignment in PS1 stays in the shell (the count goes on), \$? is the command's" \
        tmux_wait_last '^n=2 \[1\] P> ?$'
    sbx_type 'echo "n=$n"'
    ok "$rt: ...and the shell sees it" tmux_wait $'\nn=2\n'

    tmux_wait_last 'P> ?$'
    sbx_type 'sleep 100 &'
    tmux_wait_last 'P> ?$'
    sbx_type 'kill %1'
    ok "$rt: a background job a signal ended is told before a prompt: [1]+ Terminated" \
        run_until $'\n\\[1\\]\\+  Terminated +sleep 100\n'

    sbx_type 'set -x; echo traced'
    tmux_wait $'\ntraced\n'
    tmux_wait_last 'P> ?$'
    sbx_type 'set +x'
    tmux_wait_last 'P> ?$'
    screen=$(tmux_screen)
    like "$screen" $'\n\\+ echo traced\ntraced\n' "$rt: set -x traces the command"
    unlike "$screen" '__sbx|\+ case|\+ builtin|\+ IFS=|\+ eval' "$rt: ...and nothing of the reports"

    sbx_type 'false; echo "st=$? _=$_"; declare -F | grep -c . ; compgen -v | grep -c __sbx'
    ok "$rt: \$? and \$_ are the command's; the reports leave no function and no variable" \
        tmux_wait $'\nst=1 _=false\n0\n0\n'

    tmux_wait_last 'P> ?$'
    sbx_type 'set -e; PS1='"'"'${nosuch:?} E> '"'"
    tmux_wait_last 'E> ?$'
    sbx_type 'echo alive-after-set-e'
    ok "$rt: under set -e, a PS1 whose expansion fails does not end the session's shell" \
        tmux_wait $'\nalive-after-set-e\n'
    tmux_wait_last 'E> ?$'
    sbx_type 'exit'
    tmux_wait_last '^host\$ ?$'
    "$SBX" release --session "$AGENT_SANDBOX_SESSION" >/dev/null 2>&1
done
export AGENT_SANDBOX_SESSION=prompt-report-$$
done_testing
