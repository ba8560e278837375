#!/bin/bash
# Issue 13, line editing and state, at a real terminal (tmux): the default prompt shows the
# session and the cwd and follows cd; PS1 with bash's escapes and with $?; PS2 for an
# unfinished command; history in $XDG_STATE_HOME/sbxsh/history, shared by two sbxsh
# processes at once (appended at exit, as bash with histappend), HISTCONTROL=ignoreboth,
# HISTFILESIZE, `history`, `history -c`, Ctrl-R, the Up arrow in a new process, and the
# `!!` and `!$` expansions.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

tmux_usable || skip_all "$TMUX_WHY"
if ! why=$(runtime_usable bwrap); then
    skip_all "$why"
fi
setup_session "prompt-$$" bwrap
cd "$CODE" || bail_out "no code dir"
mkdir -p "$CODE/sub"
export XDG_STATE_HOME=$SBX_TEST_TMP/xdg-state
HISTFILE_SBX=$XDG_STATE_HOME/sbxsh/history
if [ "$(id -u)" = 0 ]; then D='#'; else D='$'; fi
tmux_start 120 30

tmux_type "$SBXSH"; tmux_keys Enter
ok "the default prompt: [sbx:SESSION] CWD$D" tmux_wait_last "^\[sbx:prompt-$$\] $CODE\\$D ?\$"
tmux_type 'cd sub'; tmux_keys Enter
ok "...which follows cd" tmux_wait_last "^\[sbx:prompt-$$\] $CODE/sub\\$D ?\$"
tmux_type 'PS1='"'"'\u@\h:\W \$ '"'"; tmux_keys Enter
ok "PS1 with \\u \\h \\W \\\$" tmux_wait_last "^$(id -un)@$(hostname | cut -d. -f1):sub \\$D ?\$"
tmux_type "PS1='[\$?] \\w> '"; tmux_keys Enter
tmux_wait_last '^\[0\] .*/sub> ?$'
tmux_type 'false'; tmux_keys Enter
ok "PS1 with \$? shows the last status" tmux_wait_last '^\[1\] .*/sub> ?$'
tmux_type 'if true'; tmux_keys Enter
ok "an unfinished command gets PS2 (> )" tmux_wait_last '^> ?$'
tmux_type 'then echo in-if; fi'; tmux_keys Enter
ok "...and runs once complete" tmux_wait $'\nin-if\n'
tmux_type "PS2='more: '"; tmux_keys Enter
tmux_type 'for i in 1'; tmux_keys Enter
ok "PS2 set in the session is used" tmux_wait_last '^more: ?$'
tmux_type 'do echo "i=$i"; done'; tmux_keys Enter
tmux_wait $'\ni=1\n'

# ---- history ----------------------------------------------------------------------
tmux_type 'HISTCONTROL=ignoreboth'; tmux_keys Enter
tmux_type ' echo secret-with-space'; tmux_keys Enter
tmux_wait $'\nsecret-with-space\n'
tmux_type 'echo dup'; tmux_keys Enter
tmux_type 'echo dup'; tmux_keys Enter
tmux_type 'echo a b last-word'; tmux_keys Enter
tmux_wait $'\na b last-word\n'
tmux_type 'echo !$'; tmux_keys Enter
ok "!\$ is the last word of the previous command (bash shows the expansion)" \
    tmux_wait $'\necho last-word\nlast-word\n'
tmux_type '!!'; tmux_keys Enter
ok "!! repeats it" tmux_wait $'\necho last-word\nlast-word\n.*\necho last-word\nlast-word\n'
tmux_type 'history'; tmux_keys Enter
tmux_wait '[0-9]+  history'
screen=$(tmux_screen)
like "$screen" '[0-9]+  echo a b last-word' "history lists the commands, numbered"
unlike "$screen" '[0-9]+  echo secret' "ignorespace: a line starting with a space is not kept"
is "$(grep -cE '^ +[0-9]+  echo dup$' <<<"$screen")" 1 "ignoredups: a repeated line is kept once"
like "$screen" '[0-9]+  if true; then echo in-if; fi' "a multi-line command is one entry (cmdhist)"
tmux_type 'echo unique-marker-42'; tmux_keys Enter
tmux_wait $'\nunique-marker-42\n'
tmux_type 'echo other'; tmux_keys Enter
# Ctrl-R only once the prompt is back: typed ahead while a command runs, the terminal's line
# discipline takes it as "reprint" (as it does under bash)
tmux_wait $'\nother\n'
tmux_wait_last '/sub> ?$'
tmux_keys C-r; tmux_type 'unique-mark'
ok "Ctrl-R finds a command by what it contains" tmux_wait "reverse-i-search.*echo unique-marker-42"
tmux_keys Enter
ok "...and Enter runs it" tmux_wait $'\nunique-marker-42\n.*\nunique-marker-42\n'
tmux_type 'exit'; tmux_keys Enter
tmux_wait_last '^host\$ ?$'
ok "the history file is in \$XDG_STATE_HOME/sbxsh/history" test -s "$HISTFILE_SBX"
like "$(cat "$HISTFILE_SBX")" 'echo unique-marker-42' "...with the session's commands"
is "$(stat -c %a "$HISTFILE_SBX")" 600 "...readable by its owner only"

# a new sbxsh: the Up arrow recalls the last process's commands
tmux_run clear; tmux_cmd clear-history
tmux_type "$SBXSH"; tmux_keys Enter
tmux_wait_last "\\$D ?\$"
tmux_keys Up
ok "a new sbxsh process recalls the last one's command (Up)" tmux_wait_last 'exit$'
tmux_keys C-u
tmux_type 'exit'; tmux_keys Enter
tmux_wait_last '^host\$ ?$'

# two at once: each appends what it added, so neither loses the other's
tmux_cmd new-window "env PS1='host\$ ' bash --norc --noprofile"
prompt_re="$D ?\$"
for w in 0 1; do
    tmux_cmd send-keys -t ":$w" -l "$SBXSH"; tmux_cmd send-keys -t ":$w" Enter
done
for w in 0 1; do
    end=$((SECONDS + 60))
    until [[ $(tmux_cmd capture-pane -p -t ":$w" | sed '/^$/d' | tail -n 1) =~ $prompt_re ]] ||
        [ $SECONDS -gt $end ]; do sleep 0.05; done
done
for w in 0 1; do
    tmux_cmd send-keys -t ":$w" -l "echo from-window-$w"; tmux_cmd send-keys -t ":$w" Enter
done
for w in 1 0; do
    tmux_cmd send-keys -t ":$w" -l 'exit'; tmux_cmd send-keys -t ":$w" Enter
done
end=$((SECONDS + 60))
until [ "$(grep -c 'from-window' "$HISTFILE_SBX")" = 2 ] || [ $SECONDS -gt $end ]; do sleep 0.05; done
ok "two sbxsh at once: both one's and the other's commands are in the file" \
    bash -c 'grep -q "^echo from-window-0$" "$1" && grep -q "^echo from-window-1$" "$1"' _ "$HISTFILE_SBX"
tmux_cmd kill-window -t :1
tmux_wait_last '^host\$ ?$'

# HISTFILESIZE cuts the file; history -c empties the list
tmux_type "HISTFILESIZE=3 $SBXSH"; tmux_keys Enter
tmux_wait_last "\\$D ?\$"
tmux_type 'echo last-one'; tmux_keys Enter
tmux_wait $'\nlast-one\n'
tmux_type 'history -c'; tmux_keys Enter
tmux_type 'history'; tmux_keys Enter
tmux_type 'exit'; tmux_keys Enter
tmux_wait_last '^host\$ ?$'
is "$(wc -l <"$HISTFILE_SBX")" 3 "HISTFILESIZE=3 (from the environment): the file keeps 3 lines"
[ "$tap_failed" = 0 ] || diag "the screen at the end:" "$(tmux_screen)"
done_testing
