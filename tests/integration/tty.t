#!/bin/bash
# Issue 13, terminals: sbxsh at a real terminal (tmux, 120x30) gives sandbox commands a
# pseudo-terminal of the terminal's size and TERM, follows a resize, puts the terminal back
# exactly as it was after a command, after `exit`, and when sbxsh is killed (SIGTERM, SIGHUP,
# SIGUSR1) in the middle of one; Ctrl-C ends the foreground command, not the shell; Ctrl-Z
# stops it and gives the prompt back (the rest of job control: jobs.t); OSC 52 (the clipboard), a title report and
# file: links never reach the terminal while colours, cursor moves and titles do; a slow
# first sync shows one progress line that is gone once it is done. Without a
# terminal (or with stderr sent elsewhere) commands get pipes, as before. bwrap for most,
# runsc once for the pty path.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

tmux_usable || skip_all "$TMUX_WHY"
if ! why=$(runtime_usable bwrap); then
    skip_all "$why"
fi
setup_session "tty-$$" bwrap
cd "$CODE" || bail_out "no code dir"
T=$SBX_TEST_TMP
tmux_start 120 30
SBXSH_PROMPT='[$#] ?$'

# ---- sbxsh -c at a terminal --------------------------------------------------
tmux_run "echo \"host TERM=\$TERM\"; stty -g >$T/before"
host_term=$(tmux_screen | sed -n 's/^host TERM=//p' | tail -n 1)
ok "the host shell in tmux has a TERM" test -n "$host_term"
tmux_run "$SBXSH -c 'tty; stty size; echo \"TERM=\$TERM\"; python3 -c \"import os; print(os.get_terminal_size())\"'; stty -g >$T/after"
screen=$(tmux_screen)
like "$screen" $'\n/dev/pts/[0-9]+\n30 120\n' "sbxsh -c at a terminal: tty is a /dev/pts path and stty size says 30 120"
like "$screen" $'\nTERM='"$host_term"$'\n' "TERM is the terminal's ($host_term)"
like "$screen" 'columns=120, lines=30' "python3 sees the terminal's size"
ok "the terminal's settings are the same after the command (stty -g)" cmp -s "$T/before" "$T/after"

# ---- escape sequences through the pty -----------------------------------------
# tmux takes OSC 52 as a clipboard write when set-clipboard is on: first from the host shell,
# so the check can fail, then from the sandbox.
tmux_cmd set-option -s set-clipboard on
tmux_run "printf '\\033]52;c;%s\\007' \$(printf host-clip | base64)"
like "$(tmux_cmd show-buffer 2>&1)" '^host-clip$' "control: OSC 52 from the host shell sets tmux's clipboard"
tmux_cmd pipe-pane -o "cat >$T/raw"
# printf would run on the host (harmless glue): the script makes it the sandbox's
cat >"$CODE/esc.sh" <<'SH'
printf 'a\033]52;c;%s\007b' "$(printf sbx-clip | base64)"
printf '\033[31mred\033[0m\033[21t\033]8;;file:///etc/passwd\033\\link\033]8;;\033\\'
printf '\033]2;sbx-title\007\033[5;10Hc\033P$qm\033\\d\n'
SH
tmux_run "$SBXSH -c 'bash esc.sh'"
tmux_cmd pipe-pane
like "$(tmux_cmd show-buffer 2>&1)" '^host-clip$' "OSC 52 from a sandbox command on the pty does not reach the clipboard"
raw=$(od -An -v -tx1 "$T/raw" | tr -d ' \n')
has() { case $raw in *"$1"*) return 0 ;; esac; return 1; }
ok "the text got through (a...b)" has "$(printf 'ab' | od -An -tx1 | tr -d ' \n')"
ok "no OSC 52 reached the terminal" eval '! has 1b5d3532'
ok "colours reach the terminal (ESC [31m)" has 1b5b33316d
ok "no title report (ESC [21t) reached it" eval '! has 1b5b323174'
ok "no file: hyperlink reached it" eval '! has "$(printf "file:" | od -An -tx1 | tr -d " \n")"'
ok "no DECRQSS (ESC P \$ q) reached it" eval '! has 1b502471'
ok "a cursor move does (ESC [5;10H: full-screen programs need it)" has 1b5b353b313048
is "$(tmux_cmd display-message -p '#{pane_title}')" sbx-title "a title set reaches the terminal"
# the cursor move left the screen in pieces: a clean one for what follows
tmux_run clear
tmux_cmd clear-history

# ---- without a terminal: pipes, as before ---------------------------------------
tmux_run "$SBXSH -c 'tty; echo \"err on \$(readlink /proc/self/fd/2)\" >&2' 2>$T/err; echo \"piped: \$($SBXSH -c tty </dev/null)\""
screen=$(tmux_screen)
like "$screen" $'\nnot a tty\n' "stderr sent to a file: no pty (the redirection holds)"
like "$(cat "$T/err")" '^err on pipe:' "...and stderr reached the file"
like "$screen" 'piped: not a tty' "stdin not a terminal: pipes"

# ---- interactive ----------------------------------------------------------------
tmux_run "stty -g >$T/before"
tmux_type "$SBXSH"; tmux_keys Enter
tmux_wait_last "$SBXSH_PROMPT" || bail_out "no sbxsh prompt"
tmux_type 'x=42; stty size'; tmux_keys Enter
tmux_wait $'\n30 120\n' && tmux_wait_last "$SBXSH_PROMPT"
ok "interactive: stty size says 30 120" tmux_wait $'\n30 120\n' 1
tmux_cmd resize-window -x 100 -y 25
tmux_type 'stty size'; tmux_keys Enter
ok "a resize is followed (tmux resize-window 100x25)" tmux_wait $'\n25 100\n'
tmux_wait_last "$SBXSH_PROMPT"
tmux_cmd resize-window -x 120 -y 30
tmux_type_line 'sleep 100'
tmux_wait 'sleep 100'
# Ctrl-C ends it, pressed again if it came before the command had the pty (sbxsh, still
# syncing, ignores it: jobs.t's key_until), as a person would; one that came late meets the
# prompt, where readline only starts a new line
for _ in 1 2 3 4 5; do
    tmux_keys C-c
    tmux_wait_last "$SBXSH_PROMPT" 3 2>/dev/null && break
done
tmux_type 'echo "alive x=$x"'; tmux_keys Enter
ok "Ctrl-C ends sleep 100 and the shell prompts again, its state kept" tmux_wait $'\nalive x=42\n'
tmux_wait_last "$SBXSH_PROMPT"
tmux_type_line 'sleep 100'
tmux_wait 'sleep 100'
# Ctrl-Z stops it (job control, jobs.t), pressed again if it came before the job had the pty
for _ in 1 2 3 4 5; do
    tmux_keys C-z
    tmux_wait 'Stopped +sleep 100' 3 >/dev/null && break
done
tmux_wait_last "$SBXSH_PROMPT"
tmux_type 'kill %1; echo "after ctrl-z x=$x"'; tmux_keys Enter
ok "Ctrl-Z stops the command and gives the prompt back, the shell's state kept" \
    tmux_wait $'\nafter ctrl-z x=42\n'
tmux_wait_last "$SBXSH_PROMPT"
# keys typed while a command runs that it does not read go to the next prompt, as in bash;
# both lines are typed while it runs: as soon as the command line is on the screen (its
# newline comes only with the output, so waiting for it timed out, 5 s, every time), and
# within sleep 5 (under a loaded CI run `sleep 1` had ended before the half line was typed,
# which the terminal then echoed into the next command's output, as it would under bash)
tmux_type 'sleep 5'; tmux_keys Enter
tmux_wait '[#$] sleep 5' 5 || true
tmux_type 'echo "ahead x=$x"'; tmux_keys Enter
tmux_type 'echo "half'
ok "a command typed ahead while another ran is run next, by the shell" tmux_wait $'\nahead x=42\n'
tmux_type ' typed"'; tmux_keys Enter
ok "...and a half-typed line is finished at the prompt" tmux_wait $'\nhalf typed\n'
tmux_wait_last "$SBXSH_PROMPT"
tmux_type 'read -p "name? " n; echo "hello $n x=$x"'; tmux_keys Enter
tmux_wait $'\nname\\? '
tmux_type 'Ada'; tmux_keys Enter
ok "a sandbox command reads the terminal (read -p prompts there)" tmux_wait $'\nhello Ada x=42\n'
tmux_wait_last "$SBXSH_PROMPT"
tmux_type "exit"; tmux_keys Enter
tmux_wait_last '^host\$ ?$'
tmux_run "stty -g >$T/after"
ok "after exit the terminal's settings are as before (stty -g)" cmp -s "$T/before" "$T/after"

# ---- killed in the middle of a command ------------------------------------------
# kill_mid SIG MODE: sbxsh (-c, or interactive) runs sleep 100 and gets SIG; the terminal
# must be as it was. Each call's markers are its own (started-N, =killedN=): the screen still
# shows the earlier calls', and a wait that matched one of those would send the signal while
# sbxsh is still at its prompt, which ignores SIGTERM as bash's does (seen under load).
kill_n=0
kill_mid() {
    local sig=$1 mode=$2 pid
    kill_n=$((kill_n + 1))
    tmux_run "stty -g >$T/before"
    if [ "$mode" = -c ]; then
        tmux_type "$SBXSH -c 'echo st\"\"arted-$kill_n; sleep 100'; stty -g >$T/after; echo \"=k\"\"illed$kill_n=\""
        tmux_keys Enter
        tmux_wait $'\nstarted-'"$kill_n"$'(\n|$)'
    else
        tmux_type "$SBXSH; stty -g >$T/after; echo \"=k\"\"illed$kill_n=\""; tmux_keys Enter
        tmux_wait_last "$SBXSH_PROMPT"
        tmux_type "echo st\"\"arted-$kill_n; sleep 100"; tmux_keys Enter
        tmux_wait $'\nstarted-'"$kill_n"$'(\n|$)'
    fi
    pid=$(tmux_child_pid)
    [ -n "$pid" ] && kill -"$sig" "$pid"
    tmux_wait "=killed$kill_n=" && tmux_wait_last '^host\$ ?$' 10
    ok "SIG$sig to sbxsh $mode in the middle of a command: the terminal's settings are restored" \
        cmp -s "$T/before" "$T/after"
}
kill_mid TERM -c
kill_mid HUP -c
kill_mid USR1 -c
kill_mid TERM interactive

# ---- runsc: the pty path on gVisor ------------------------------------------------
if why=$(runtime_usable runsc); then
    tmux_run "stty -g >$T/before; AGENT_SANDBOX_LOCAL_RUNTIME=runsc AGENT_SANDBOX_SESSION=tty-runsc-$$ $SBXSH -c 'tty; stty size; echo \"TERM=\$TERM\"'; stty -g >$T/after" 120
    screen=$(tmux_screen)
    like "$screen" $'\n/dev/pts/[0-9]+\n30 120\nTERM='"$host_term" "runsc: a pty of the terminal's size and TERM"
    ok "runsc: the terminal's settings are the same afterwards" cmp -s "$T/before" "$T/after"
    "$SBX" release --session "tty-runsc-$$" >/dev/null 2>&1
else
    skip "runsc: $why"
    skip "runsc: $why"
fi
# ---- progress: a first sync that takes a while shows one line, gone once done --------------
BIG=$SBX_TEST_TMP/big
if ! mkdir -p "$BIG" || ! (cd "$BIG" && seq 1 10000 | sed 's/^/f/' | xargs touch); then
    bail_out "cannot make $BIG"
fi
tmux_run clear
tmux_cmd clear-history
tmux_cmd pipe-pane -o "cat >$T/progress.raw"
tmux_run "cd $BIG && AGENT_SANDBOX_CODE_DIRS=$BIG AGENT_SANDBOX_SESSION=tty-big-$$ $SBXSH -c 'bash -c \"echo after-sync\"'; cd $CODE" 180
tmux_cmd pipe-pane
screen=$(tmux_screen)
# (the output's own line: where the typed line fills the last column exactly, capture-pane -J
# joins the next row to it, so the line start is not asked for; the typed text has a quote
# after after-sync)
like "$screen" $'after-sync\n' "the command of a new session with 10,000 files ran"
unlike "$screen" 'sbxsh: (starting|syncing)' "no progress line is left on the screen"
if grep -q 'syncing the code directories' "$T/progress.raw"; then
    ok "the progress line that showed was erased (CR, erase line) before the output" \
        grep -qaP 'syncing the code directories into the sandbox\.\.\.\r\x1b\[K' "$T/progress.raw"
else
    skip "the first sync took under half a second here: no progress line was due"
fi
"$SBX" release --session "tty-big-$$" >/dev/null 2>&1
[ "$tap_failed" = 0 ] || diag "the screen at the end:" "$(tmux_screen)"
done_testing
