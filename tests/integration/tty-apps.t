#!/bin/bash
# shellcheck disable=SC2119 # prompt() is called without its optional timeout
# Issue 13, terminal programs through sbxsh at a real terminal (tmux, 120x30), typed as a
# person types them, on both runtimes: `vi` editing a file that then is changed on the host
# (the first command of a session, so that no progress line lands on its screen), `less`
# paging a file written on the host while sbxsh waited at its prompt, `git log` paging in
# colour, a `python3` REPL left with Ctrl-D, `top` quit with `q`, `git commit` opening
# $EDITOR (vi, in the sandbox) whose message the host's `git log` then shows, and a
# `git push` from the prompt (a host part) reaching a bare repository behind `git daemon` on
# 127.0.0.1. After each program the terminal is as it was (`stty -a` of the terminal, and
# tmux's modes: the alternate screen left, the cursor visible, keypad and mouse modes off).
# vi, less and top also through `sbxsh -c` at the host's prompt.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

tmux_usable || skip_all "$TMUX_WHY"
command -v git >/dev/null || skip_all "git not installed (make deps)"
for prog in vi less top python3; do
    command -v "$prog" >/dev/null || skip_all "$prog not installed (make deps: tests/deps.sh)"
done
setup_session "apps-$$"
cd "$CODE" || bail_out "no code dir"
T=$SBX_TEST_TMP
export GIT_CONFIG_NOSYSTEM=1 XDG_STATE_HOME=$T/xdg-state
printf '[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n' >"$HOME/.gitconfig"
{ git init -q . && echo base >f.txt && git add f.txt && git commit -q -m base &&
    for i in $(seq 1 40); do git commit -q --allow-empty -m "commit number $i" || exit 1; done; } ||
    bail_out "cannot make the repository"
if start_git_daemon; then
    { git init -q --bare "$GITROOT/pushed.git" && git remote add origin "$GITBASE/pushed.git"; } ||
        bail_out "cannot make the bare repository"
else
    GITBASE=
fi
if [ "$(id -u)" = 0 ]; then D='#'; else D='$'; fi
tmux_start 120 30
PANE_TTY=$(tmux_cmd display-message -p '#{pane_tty}')
SESSIONS=()
# shellcheck disable=SC2031 # (the trap reads the list the main shell built)
trap 'tmux_stop; for s in "${SESSIONS[@]}"; do "$SBX" release --session "$s" >/dev/null 2>&1; done; stop_git_daemon; tap_cleanup' EXIT

# tmux's view of the modes a program may leave set
modes() {
    tmux_cmd display-message -p 'alternate=#{alternate_on} cursor=#{cursor_flag} keypad=#{keypad_cursor_flag}/#{keypad_flag} mouse=#{mouse_any_flag} origin=#{origin_flag} insert=#{insert_flag}'
}
# What a person's terminal is: its settings (stty -a, read from the host, as sbxsh left them
# at its prompt) and tmux's modes. </dev/null: stty -F never becomes the test's terminal.
term_state() { stty -a -F "$PANE_TTY" </dev/null; modes; }
# raw_wait FILE REGEX: until what pipe-pane wrote to FILE matches (its cat may still be
# writing when the screen already shows the end); bounded
raw_wait() {
    local end=$((SECONDS + 10))
    while [ $SECONDS -lt $end ]; do
        [[ $(cat "$1" 2>/dev/null) =~ $2 ]] && return 0
        sleep 0.05
    done
    return 1
}
# at the sbxsh prompt: types a line and presses Enter
line() { tmux_type "$1"; tmux_keys Enter; }
# shellcheck disable=SC2120 # (an optional timeout; most calls pass none)
prompt() { tmux_wait_last "$PROMPT_RE" "${1:-60}"; }
# a clean screen at the sbxsh prompt (readline's Ctrl-L, then the history forgotten)
fresh() {
    local end=$((SECONDS + 10))
    tmux_keys C-l
    while [ $SECONDS -lt $end ]; do
        [[ $(tmux_cmd capture-pane -p | head -n 1) =~ $PROMPT_RE ]] && break
        sleep 0.05
    done
    tmux_cmd clear-history
}
# restored NAME BEFORE: the terminal is as BEFORE, off the alternate screen, cursor shown
restored() {
    local name=$1 before=$2 after
    after=$(term_state)
    is "$after" "$before" "$name: the terminal is as before (stty -a, tmux's modes)"
    like "$(modes)" '^alternate=0 cursor=1 keypad=0/0 mouse=0 ' \
        "$name: alternate screen left, cursor visible, keypad and mouse modes off"
}

apps() {
    local rt=$1 n before msg raw
    SESSION=apps-$rt-$$
    SESSIONS+=("$SESSION")
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=$SESSION
    PROMPT_RE="^\[sbx:$SESSION\] .*\\$D ?\$"
    printf 'first line\nsecond line\n' >"$CODE/notes-$rt.txt"
    # a program that ends with the terminal's modes still on, as one killed by SIGKILL, one
    # that crashed or a hostile one would leave them
    printf '%s\n' "printf '\\033[?1049h\\033[?1000;1006h\\033[?2004h\\033[?1h\\033=\\033[?25l\\033[4hmodes left on\\n'" \
        >"$CODE/leave-$rt.sh"
    # the window's shell has the environment tmux started with
    tmux_run "export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=$SESSION; clear"
    tmux_cmd clear-history
    tmux_type "$SBXSH"; tmux_keys Enter
    prompt || bail_out "$rt: no sbxsh prompt"

    # ---- vi, the session's first command --------------------------------------------
    before=$(term_state)
    tmux_cmd pipe-pane -o "cat >$T/vi-$rt.raw"
    line "vi notes-$rt.txt"
    ok "$rt: vi shows the file, on the alternate screen" tmux_wait $'^first line\nsecond line\n~' 120
    like "$(modes)" '^alternate=1 cursor=[01] keypad=1/1 ' \
        "$rt: vi's alternate screen and keypad mode reach the terminal (DECSET 1049, DECCKM, DECKPAM)"
    tmux_keys G o
    tmux_type 'added in vi'
    tmux_keys Escape
    # a second in vi: a progress line of the session's start still due must not show now
    tmux_type ':sleep 1'; tmux_keys Enter
    tmux_type ':w'; tmux_keys Enter
    tmux_wait '"notes-'"$rt"'\.txt" 3( lines|L)'
    ok "$rt: vi's screen is vi's alone (first line still at the top)" \
        tmux_wait $'^first line\nsecond line\nadded in vi *\n~' 5
    tmux_type ':q'; tmux_keys Enter
    prompt
    tmux_cmd pipe-pane
    is "$(cat "$CODE/notes-$rt.txt")" $'first line\nsecond line\nadded in vi' \
        "$rt: the file vi wrote is changed on the host"
    restored "$rt: vi" "$before"
    raw_wait "$T/vi-$rt.raw" $'\e\\[\\?1049l'
    raw=$(cat "$T/vi-$rt.raw")
    unlike "${raw#*$'\e[?1049h'}" 'sbxsh: (starting|syncing)' \
        "$rt: no progress line was written once vi had started"

    # ---- less: a file written on the host while sbxsh waits at its prompt -------------
    seq 1 200 >"$CODE/nums-$rt.txt"
    fresh
    before=$(term_state)
    line "less nums-$rt.txt"
    ok "$rt: less shows the file written on the host at the prompt" tmux_wait $'^1\n2\n3\n' 60
    like "$(modes)" '^alternate=1 ' "$rt: less is on the alternate screen"
    tmux_keys Space
    ok "$rt: Space pages on (line 30 at the top)" tmux_wait $'^30\n31\n'
    tmux_keys q
    ok "$rt: q quits less, the prompt is back" prompt 30
    restored "$rt: less" "$before"

    # ---- git log: the pager, in colour ------------------------------------------------
    fresh
    before=$(term_state)
    line 'git log'
    ok "$rt: git log opens the pager on the newest commits" \
        tmux_wait_last '^:$' 60
    like "$(tmux_screen)" 'commit number 40' "$rt: ...with the newest commit"
    unlike "$(tmux_screen)" 'commit number 1'$'\n' "$rt: ...and not all of them (it pages)"
    like "$(tmux_cmd capture-pane -p -e)" $'\e\\[33mcommit [0-9a-f]{40}' "$rt: git log's colours pass"
    tmux_keys q
    ok "$rt: q quits the pager, the prompt is back" prompt 30
    restored "$rt: git log" "$before"

    # ---- python3's REPL ---------------------------------------------------------------
    fresh
    before=$(term_state)
    line python3
    ok "$rt: python3 prompts" tmux_wait_last '^>>> ?$' 60
    line '6*7'
    ok "$rt: an expression's value shows" tmux_wait $'\n>>> 6\\*7\n42\n>>>'
    line 'import os; os.get_terminal_size()'
    ok "$rt: python3 sees the terminal's size" tmux_wait 'columns=120, lines=30\)'$'\n>>>'
    tmux_keys C-d
    ok "$rt: Ctrl-D leaves python3, the prompt is back" prompt 30
    restored "$rt: python3" "$before"

    # ---- top --------------------------------------------------------------------------
    fresh
    line 'stty -a >/tmp/pty-before'
    prompt
    before=$(term_state)
    line top
    ok "$rt: top shows its screen" tmux_wait $'\nTasks: .*total.*\n.*PID +USER' 60
    tmux_keys q
    ok "$rt: q quits top, the prompt is back" prompt 30
    restored "$rt: top" "$before"
    line 'stty -a | cmp -s - /tmp/pty-before && echo "pty set""tings same" || echo "pty set""tings changed"'
    tmux_wait 'pty settings (same|changed)'
    like "$(tmux_screen)" 'pty settings same' "$rt: the sandbox's pty is as before top too (stty -a)"

    # ---- git commit: $EDITOR in the sandbox -----------------------------------------
    is "$("$SBXSH" --route -c 'git commit' | cut -f1)" sandbox "git commit runs in the sandbox (--route)"
    fresh
    line "export EDITOR=vi; echo 'change $rt' >>f.txt; git add f.txt"
    prompt
    before=$(term_state)
    line 'git commit'
    ok "$rt: git commit opens the editor on the message" \
        tmux_wait 'Please enter the commit message' 60
    like "$(modes)" '^alternate=1 ' "$rt: ...vi, full screen"
    msg="typed in the editor on $rt"
    tmux_keys i
    tmux_type "$msg"
    tmux_keys Escape
    tmux_type ':wq'; tmux_keys Enter
    ok "$rt: the commit is made" tmux_wait "\\] $msg"$'\n'
    prompt
    is "$(git -C "$CODE" log -1 --format=%s)" "$msg" "$rt: the host's git log shows the commit"
    restored "$rt: git commit" "$before"

    # ---- git push from the prompt: a host part, to git daemon on 127.0.0.1 ------------
    if [ -n "$GITBASE" ]; then
        like "$("$SBXSH" --route -c "git push origin HEAD:refs/heads/from-$rt")" '^host' \
            "git push origin HEAD:... runs on the host (--route)"
        fresh
        line "git push origin HEAD:refs/heads/from-$rt"
        ok "$rt: git push says it made the branch" tmux_wait "\\[new branch\\] +HEAD -> from-$rt"
        prompt
        is "$(git --git-dir="$GITROOT/pushed.git" log -1 --format=%s "from-$rt" 2>&1)" "$msg" \
            "$rt: the bare repository behind git daemon has the commit"
    else
        skip "$rt: git daemon cannot serve on 127.0.0.1 here: no push to check"
        skip "$rt: git daemon cannot serve on 127.0.0.1 here: no push to check"
        skip "$rt: git daemon cannot serve on 127.0.0.1 here: no push to check"
    fi
    # ---- a program that leaves the modes on: sbxsh turns them off -----------------------
    fresh
    before=$(term_state)
    tmux_cmd pipe-pane -o "cat >$T/leave-$rt.raw"
    line "bash leave-$rt.sh"
    ok "$rt: after a program that left them on, the prompt is back" prompt 30
    tmux_cmd pipe-pane
    ok "$rt: ...which had them turned on (the alternate screen, mouse reports)" \
        raw_wait "$T/leave-$rt.raw" $'\e\\[\\?1049h\e\\[\\?1000;1006h.*modes left on'
    restored "$rt: modes left on" "$before"
    tmux_type exit; tmux_keys Enter
    tmux_wait_last '^host\$ ?$'

    # ---- the full-screen ones through sbxsh -c at the host's prompt -------------------
    n=0
    c_run() {    # c_run CMD: typed at the host's prompt, with the terminal's settings around it
        n=$((n + 1))
        tmux_run clear
        tmux_cmd clear-history
        tmux_type "stty -g >$T/before; $SBXSH -c '$1'; stty -g >$T/after; echo \"=c\"\"-done$n=\""
        tmux_keys Enter
    }
    c_done() {   # c_done NAME: the command ended, the terminal is back
        ok "$1: sbxsh -c ends, the host's prompt is back" tmux_wait "=c-done$n=" 30
        tmux_wait_last '^host\$ ?$' 10
        ok "$1: the terminal's settings are as before (stty -g)" cmp -s "$T/before" "$T/after"
        like "$(modes)" '^alternate=0 cursor=1 keypad=0/0 mouse=0 ' \
            "$1: alternate screen left, cursor visible, keypad and mouse modes off"
    }
    printf 'alpha\n' >"$CODE/c-$rt.txt"
    c_run "vi c-$rt.txt"
    ok "$rt: sbxsh -c vi shows the file" tmux_wait $'^alpha\n~' 60
    tmux_keys A
    tmux_type ' beta'
    tmux_keys Escape
    tmux_type ':wq'; tmux_keys Enter
    c_done "$rt: sbxsh -c vi"
    is "$(cat "$CODE/c-$rt.txt")" 'alpha beta' "$rt: sbxsh -c vi: the file is changed on the host"
    c_run "less nums-$rt.txt"
    ok "$rt: sbxsh -c less shows the file" tmux_wait $'^1\n2\n3\n' 60
    tmux_keys q
    c_done "$rt: sbxsh -c less"
    c_run top
    ok "$rt: sbxsh -c top shows its screen" tmux_wait $'\nTasks: .*total.*\n.*PID +USER' 60
    tmux_keys q
    c_done "$rt: sbxsh -c top"
    c_run "bash leave-$rt.sh"
    c_done "$rt: sbxsh -c, a program that left the modes on"
    "$SBX" release --session "$SESSION" >/dev/null 2>&1
}

for rt in bwrap runsc; do
    if why=$(runtime_usable "$rt"); then
        apps "$rt"
    else
        skip "$rt: $why"
    fi
done
[ "$tap_failed" = 0 ] || diag "the screen at the end:" "$(tmux_screen)"
done_testing
