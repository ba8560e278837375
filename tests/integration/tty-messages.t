#!/bin/bash
# Issue 21, what a person sees at the prompt, against bash: at a real terminal (tmux), on
# both runtimes, the same lines typed into `bash -i` and into sbxsh (invoked as `sbxsh`),
# bash's text with "bash" replaced by "sbxsh" must be sbxsh's: a syntax error
# ("sbxsh: syntax error near unexpected token `)'", no "line N:", no offending line),
# Ctrl-C of `sleep 100` showing ^C and Ctrl-Z showing ^Z then the Stopped notice (gVisor's
# pty echoes neither: sbx-agent does), and, as TODO until the sandbox's shell is an
# interactive one (cli/README.md: "Messages"), `cd nowhere` and an unknown command.
# Without a terminal, `sbxsh -i` gives the same syntax error line as `bash -i`, and -c,
# stdin mode and a script keep bash's non-interactive messages ("sbxsh: line 1: ...").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

tmux_usable || skip_all "$TMUX_WHY"
# SBX_IT_RUNTIMES=kube: tests/kube/tty-messages-kube.t, against the fake
runtimes=${SBX_IT_RUNTIMES:-bwrap runsc}
first_rt=${runtimes%% *}
if ! why=$(runtime_usable "$first_rt"); then
    skip_all "$why"
fi
setup_session "msgs-$$" "$first_rt"
cd "$CODE" || bail_out "no code dir"
T=$SBX_TEST_TMP
# invoked as `sbxsh`, through PATH, as a person would: bash names itself by argv[0]
{ mkdir -p "$T/bin" && ln -s "$SBXSH" "$T/bin/sbxsh"; } || bail_out "cannot link sbxsh"
export PATH="$T/bin:$PATH"

# ---- without a terminal ------------------------------------------------------------
# msgs_of CMD...: the command's stderr, its lines as they are (the prompts bash -i writes
# there, and its job control notes, are not messages: dropped)
msgs_of() {
    "$@" 2>&1 >/dev/null </dev/null | grep -v -e 'job control' -e 'terminal process group' \
        -e '^\[sbx:' -e '^bash-[0-9.]*[#$] *$' -e '^exit$' | sed 's/^bash-[0-9.]*[#$] //'
}
for cmd in 'cd nowhere' 'nosuchcmd_21' 'x )' 'echo $((1/0))'; do
    want=$(msgs_of bash -c "exec -a sbxsh bash -c '$cmd'")
    got=$(msgs_of bash -c "exec -a sbxsh sbxsh -c '$cmd'")
    is "$got" "$want" "sbxsh -c '$cmd': bash -c's message (\"sbxsh: line 1: ...\")"
    want=$(printf '%s\n' "$cmd" | bash -c 'exec -a sbxsh bash' 2>&1 >/dev/null)
    got=$(printf '%s\n' "$cmd" | bash -c 'exec -a sbxsh sbxsh' 2>&1 >/dev/null)
    is "$got" "$want" "stdin mode, '$cmd': bash reading stdin's message"
done
printf 'cd nowhere\nx )\n' >"$CODE/msgs.sh"
is "$(msgs_of sbxsh msgs.sh)" "$(msgs_of bash msgs.sh)" "a script: bash's messages (msgs.sh: line N: ...)"
want=$(printf 'x )\n' | bash -c 'exec -a sbxsh bash --norc -i' 2>&1 >/dev/null | grep 'syntax error')
got=$(printf 'x )\n' | sbxsh -i 2>&1 >/dev/null | grep 'syntax error')
is "$got" "$want" "sbxsh -i at a pipe: a syntax error as bash -i says it (no line, no offending line)"
like "$want" '^sbxsh: syntax error near unexpected token' "...which is bash -i's: NAME: MESSAGE"
want=$(printf 'x )\n' | bash -c 'exec -a -sbxsh bash --norc -i' 2>&1 >/dev/null | grep 'syntax error')
got=$(printf 'x )\n' | bash -c 'exec -a -sbxsh sbxsh -i' 2>&1 >/dev/null | grep 'syntax error')
is "$got" "$want" "a login shell (-sbxsh) names itself -sbxsh, as bash -i as -bash does"
# The sandbox's shell's own messages at `sbxsh -i`, and what follows an expansion error
# there: bash -i's transcript (the lines it echoes, its messages, `$-`, the shell carrying
# on after ${nope?oops}, `exit` said at an exit and at the end of input), prompts aside.
norm() {
    grep -v -e 'job control' -e 'terminal process group' |
        sed -e 's/^sbxsh-[0-9.]*[#$] /> /' -e 's/^\[sbx:[^]]*\] [^#$]*[#$] /> /'
}
for in in $'cd nowhere\nnosuchcmd_21\nx21=kept\necho ${nope?oops}\necho "after=$x21 flags=$-"\nexit 3\n' \
          $'f21() { cd /nowhere/21; }\nf21\necho ${nope?oops}; echo nr\n'; do
    # (its status last)
    want=$(printf '%s' "$in" | { bash -c 'exec -a sbxsh bash --norc -i' 2>&1; echo "status=$?"; } | norm)
    # (wide: readline, which sbxsh reads with, wraps a long line at 80 columns off a terminal)
    got=$(printf '%s' "$in" | { COLUMNS=1000 sbxsh -i 2>&1; echo "status=$?"; } | norm)
    is "$got" "$want" "sbxsh -i at a pipe: bash -i's transcript and status for ${in//$'\n'/; }"
done
like "$want" $'\nsbxsh: cd: /nowhere/21: No such file or directory\n' "...which names the shell, no line (bash -i's)"
# non-interactive, an expansion error still ends the shell, as it ends bash -c
bash -c 'exec -a sbxsh bash -c "echo \${nope?oops}; echo no"' >/dev/null 2>&1
want=$?
sbxsh -c 'echo ${nope?oops}; echo no' >/dev/null 2>&1
is "$?" "$want" "sbxsh -c: \${nope?oops} ends it as it ends bash -c (status $want)"
is "$(sbxsh -c 'echo $-')" "$(bash -c 'echo $-')" "sbxsh -c: \$- is bash -c's (no i)"

# ---- at a terminal ----------------------------------------------------------------------
tmux_start 120 40
# typed LINES...: types each line at the prompt (REGEX $2) and waits for the prompt again
prompt_re=
typed() {
    local l
    for l in "$@"; do
        tmux_type "$l"; tmux_keys Enter
        tmux_wait_last "$prompt_re" || return 1
    done
}
# keyed: `sleep 100`, Ctrl-C; `sleep 100`, Ctrl-Z (again if it came before the job had the
# pty); kill -9 %1, and a command after it that brings its notice
keyed() {
    tmux_type 'sleep 100'; tmux_keys Enter
    tmux_wait '[#$] sleep 100$' 10 >/dev/null || true
    # The key comes a moment after the line, as a person's does: a Ctrl-C typed in the very
    # instant after Enter, before the command runs, can show ^C twice under runsc (a race
    # between the host terminal's mode and the pty's, not yet understood; see the note).
    sleep 1
    # A key is sent again only when it was not taken (sent before the command ran): once
    # its echo shows, a slow answer under load is waited for, never a second key.
    for _ in 1 2 3 4 5; do
        tmux_keys C-c
        tmux_wait_last "$prompt_re" 10 >/dev/null && break
        if [[ $(tmux_screen) =~ $'sleep 100\n\\^C' ]]; then
            tmux_wait_last "$prompt_re" 60 >/dev/null
            break
        fi
    done
    tmux_type 'sleep 100'; tmux_keys Enter
    tmux_wait '[#$] sleep 100$' 10 >/dev/null || true
    sleep 1
    for _ in 1 2 3 4 5; do
        tmux_keys C-z
        tmux_wait 'Stopped +sleep 100' 10 >/dev/null && break
        if [[ $(tmux_screen) =~ $'sleep 100\n\\^Z' ]]; then
            tmux_wait 'Stopped +sleep 100' 60 >/dev/null
            break
        fi
    done
    tmux_wait_last "$prompt_re"
    typed 'kill -9 %1' 'true'
}
# the session's lines after the last line matching $1, "bash" in messages made "sbxsh"
screen_after() { tmux_screen | sed -n "/$1/,\$p" | sed 's/^bash: /sbxsh: /'; }
LINES_TYPED=('cd nowhere' 'nosuchcmd_21' 'x )' 'x21=kept' 'echo ${nope?oops}'
             'echo "after=$x21 flags=$-"')

tmux_clear
tmux_type "PS1='ref\$ ' bash --norc --noprofile -i"; tmux_keys Enter
prompt_re='^ref\$ ?$'
tmux_wait_last "$prompt_re" || bail_out "no bash -i prompt"
tmux_type 'echo =ref=start'; tmux_keys Enter; tmux_wait_last "$prompt_re"
typed "${LINES_TYPED[@]}" || bail_out "bash -i did not prompt again"
keyed
ref=$(screen_after '^=ref=start$')
# (a second exit if bash had not yet reaped the killed job: "There are stopped jobs.")
for _ in 1 2 3; do
    tmux_type exit; tmux_keys Enter
    tmux_wait_last '^host\$ ?$' 10 >/dev/null && break
done
tmux_wait_last '^host\$ ?$' 10 || bail_out "no host prompt after bash -i"
like "$(tmux_screen)" $'\nref\\$ exit\nexit\nhost\\$' "bash -i: exit says exit"
# Ctrl-D at bash -i's prompt
tmux_type "PS1='ref\$ ' bash --norc --noprofile -i"; tmux_keys Enter
tmux_wait_last "$prompt_re" || bail_out "no bash -i prompt"
tmux_keys C-d
tmux_wait_last '^host\$ ?$' 10 || bail_out "bash -i did not end at Ctrl-D"
like "$(tmux_screen)" $'\nref\\$ ?\nexit\nhost\\$ *$' "bash -i: Ctrl-D says exit (on the next line)"
# what bash shows, so that the checks below test sbxsh against it
like "$ref" $'\nsbxsh: syntax error near unexpected token `\\)\'\n' "bash -i: the syntax error line"
like "$ref" $'sleep 100\n\\^C\n' "bash -i: ^C on the line after sleep 100"
like "$ref" $'sleep 100\n\\^Z\n\\[1\\]\\+ +Stopped +sleep 100\n' "bash -i: ^Z, then the Stopped notice"
like "$ref" $'\nsbxsh: nope: oops\n' "bash -i: \${nope?oops} says so"
like "$ref" $'\nafter=kept flags=[a-zA-Z]*i' "bash -i: ...and carries on; \$- has i"

# A Debian-style ~/.bashrc (the user's, which reaches the sandbox's HOME): it returns at
# once unless $- has i, as in an interactive bash
printf '%s\n' 'case $- in *i*) ;; *) return;; esac' "alias ll21='echo alias-from-bashrc'" \
    >"$HOME/.bashrc"

# how the terminal's shell starts sbxsh on RUNTIME
sbxsh_on() {
    case $1 in
    kube) echo "AGENT_SANDBOX_BACKEND=kube AGENT_SANDBOX_SESSION=msgs-$1-$$ sbxsh" ;;
    *) echo "AGENT_SANDBOX_LOCAL_RUNTIME=$1 AGENT_SANDBOX_SESSION=msgs-$1-$$ sbxsh" ;;
    esac
}
for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        for _ in $(seq 12); do skip "$rt: $why"; done
        continue
    fi
    tmux_run clear
    tmux_cmd clear-history
    tmux_type "$(sbxsh_on "$rt")"
    tmux_keys Enter
    prompt_re='^\[sbx:msgs-'"$rt"'-[0-9]+\] .*[#$] ?$'
    tmux_wait_last "$prompt_re" 120 || bail_out "$rt: no sbxsh prompt"
    tmux_type 'echo =sbx=start'; tmux_keys Enter; tmux_wait_last "$prompt_re"
    typed "${LINES_TYPED[@]}" || bail_out "$rt: sbxsh did not prompt again"
    keyed
    got=$(screen_after '^=sbx=start$')
    line=$(grep -x 'sbxsh: syntax error.*' <<<"$ref")
    ok "$rt: the syntax error reads as bash -i's ($line)" grep -qxF -- "$line" <<<"$got"
    unlike "$got" '`x \)'"'" "$rt: ...without the offending line bash adds only in a script"
    like "$got" $'sleep 100\n\\^C\n\\[sbx:' "$rt: Ctrl-C of sleep 100 shows ^C, as bash does"
    like "$got" $'sleep 100\n\\^Z\n\\[1\\]\\+ +Stopped +sleep 100\n' "$rt: Ctrl-Z shows ^Z, then the Stopped notice"
    unlike "$got" '\^C\^C|\^Z\^Z' "$rt: ...each once"
    line=$(grep -x 'sbxsh: cd: nowhere: .*' <<<"$ref")
    ok "$rt: cd nowhere reads as bash -i's ($line)" grep -qxF -- "$line" <<<"$got"
    line=$(grep -x 'sbxsh: nosuchcmd_21: .*' <<<"$ref")
    ok "$rt: an unknown command reads as bash -i's ($line)" grep -qxF -- "$line" <<<"$got"
    ok "$rt: \${nope?oops} reads as bash -i's" grep -qxF -- 'sbxsh: nope: oops' <<<"$got"
    line=$(grep -x 'after=kept flags=.*' <<<"$ref")
    ok "$rt: ...and the shell carries on, its variables kept, \$- bash -i's ($line)" \
        grep -qxF -- "$line" <<<"$got"
    tmux_type 'll21'; tmux_keys Enter
    ok "$rt: an alias from a guarded ~/.bashrc works at the prompt" \
        tmux_wait $'[#$] ll21\nalias-from-bashrc\n'
    tmux_wait_last "$prompt_re"
    # (a second exit if the shell had not yet reaped the killed job, as for bash -i above)
    for _ in 1 2 3; do
        tmux_type exit; tmux_keys Enter
        tmux_wait_last '^host\$ ?$' 10 >/dev/null && break
    done
    tmux_wait_last '^host\$ ?$' 60 || bail_out "$rt: sbxsh did not exit"
    like "$(tmux_screen)" $'[#$] exit\nexit\nhost\\$' "$rt: exit says exit, as bash -i's"
    tmux_type "$(sbxsh_on "$rt")"
    tmux_keys Enter
    tmux_wait_last "$prompt_re" 120 || bail_out "$rt: no sbxsh prompt"
    tmux_keys C-d
    tmux_wait_last '^host\$ ?$' 60 || bail_out "$rt: sbxsh did not end at Ctrl-D"
    like "$(tmux_screen)" $'[#$] ?\nexit\nhost\\$ *$' "$rt: Ctrl-D says exit, as bash -i's"
    "$SBX" release --session "msgs-$rt-$$" >/dev/null 2>&1
done
[ "$tap_failed" = 0 ] || diag "the screen at the end:" "$(tmux_screen)"
done_testing
