#!/bin/bash
# Issue 13, at a real terminal (tmux): sbxsh's own commands at its prompt (`sbx status`,
# `sbx ls` on the host, `sbx exec` saying what to type instead, `sbx release` and the
# new sandbox after it); `fc -l`, `-ln`, `-s [old=new] [cmd]` and fc's editor (on the host:
# FCEDIT, then a real vi), with `\!` and `\#` right after them; PROMPT_COMMAND (a string
# and an array) before each prompt, with $? as bash keeps it for PS1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

tmux_usable || skip_all "$TMUX_WHY"
if ! why=$(runtime_usable bwrap); then
    skip_all "$why"
fi
setup_session "hostcmds-$$" bwrap
cd "$CODE" || bail_out "no code dir"
export XDG_STATE_HOME=$SBX_TEST_TMP/xdg-state
unset FCEDIT EDITOR VISUAL PROMPT_COMMAND
if [ "$(id -u)" = 0 ]; then D='#'; else D='$'; fi
P="^\[sbx:hostcmds-$$\] $CODE\\$D ?\$"
# ---- sbx as a host part, outside a terminal ---------------------------------------------
# the session sbx is told about is the shell's own, also when sbxsh was given --session
# (the environment still names another) and after a cd
mkdir -p "$CODE/sub"
other=hostcmds-other-$$
out=$("$SBXSH" --session "$other" -c 'cd sub && true; sbx status --json | jq -r .session')
is "$out" "$other" "sbx status in a line: about the shell's own session (--session, after a cd)"
out=$("$SBXSH" --session "$other" -c 'x=1; sbx release && sbx status >/dev/null 2>&1; echo "status=$? x=$x"')
is "$out" "status=1 x=" \
    "sbx release in a line releases it (sbx status: no such session); the next part gets a new shell"
"$SBX" release --session "$other" >/dev/null 2>&1
out=$("$SBXSH" -c 'sbx status --session someone-else' 2>&1); st=$?
is "$st:$out" "127:$SBXSH: line 1: sbx: command not found" \
    "sbx status --session of another session: a sandbox command, where there is no sbx"

tmux_start 120 40

# ---- sbx at the prompt -------------------------------------------------------------------
tmux_type "$SBXSH"; tmux_keys Enter
tmux_wait_last "$P" || bail_out "no sbxsh prompt"
tmux_type 'touch /tmp/made-before-release; x=kept; sbx status'; tmux_keys Enter
ok "sbx status at the prompt runs on the host and shows this session" \
    tmux_wait "session: +hostcmds-$$"
like "$(tmux_screen)" "holder: +running" "...with its holder running"
unlike "$(tmux_screen)" "sbx: command not found" "...not 'command not found' from the sandbox"
tmux_wait_last "$P"
tmux_type 'sbx ls | grep -c hostcmds-'; tmux_keys Enter
ok "sbx ls, piped into a host filter" tmux_wait $'\n1\n'
tmux_wait_last "$P"
tmux_type 'sbx exec --tty -- vi notes.txt; echo "st=$?"'; tmux_keys Enter
ok "sbx exec: sbxsh says to type the command itself" \
    tmux_wait "sbx exec: what is typed here runs in the session's sandbox already .*: type the command itself: vi notes.txt"
ok "...with status 2, and nothing ran" tmux_wait $'\nst=2\n'
ok "...no notes.txt was made" test ! -e "$CODE/notes.txt"
tmux_wait_last "$P"
tmux_type 'sbx render-pool --tenant t --image i'; tmux_keys Enter
ok "any other sbx word is a sandbox command, where there is no sbx" \
    tmux_wait "sbx: command not found"
tmux_wait_last "$P"
tmux_type 'sbx release'; tmux_keys Enter
ok "sbx release: sbxsh says the next command starts a new sandbox" \
    tmux_wait "session 'hostcmds-$$' released: the next command starts a new sandbox"
tmux_wait_last "$P"
tmux_type 'echo "x=[$x]"; ls /tmp/made-before-release 2>&1 | grep -c "No such"; echo after-release'
tmux_keys Enter
ok "the next command runs, in a new sandbox" tmux_wait $'\nx=\\[\\]\n1\nafter-release\n'
tmux_wait_last "$P"

# ---- fc -----------------------------------------------------------------------------------
tmux_type 'history -c'; tmux_keys Enter
tmux_type "PS1='\\!:\\# \\$ '"; tmux_keys Enter
tmux_wait_last "^[0-9]+:[0-9]+ \\$D ?\$"
tmux_type 'echo alpha'; tmux_keys Enter
tmux_type 'echo beta beta'; tmux_keys Enter
tmux_wait $'\nbeta beta\n'
tmux_type 'fc -l'; tmux_keys Enter
# (the terminal shows bash's "N<TAB> command" with the tab as spaces to column 8)
ok "fc -l lists the commands before it, numbered as bash does (N<TAB> command)" \
    tmux_wait $'\n2 {8}echo alpha\n3 {8}echo beta beta\n[0-9]+:'
tmux_type 'fc -ln -1'; tmux_keys Enter
ok "fc -ln -1: the last one, without its number" tmux_wait $'\n {9}fc -l\n'
tmux_wait_last '^6:[0-9]+ '
tmux_type 'fc -s beta=gamma echo'; tmux_keys Enter
ok "fc -s old=new cmd: the command shown, then run" tmux_wait $'\necho gamma gamma\ngamma gamma\n'
ok "\\! after fc -s is bash's (fc's entry is replaced by what it ran)" tmux_wait_last '^7:'
tmux_type 'fc -s'; tmux_keys Enter
ok "fc -s alone re-runs the last command" tmux_wait $'gamma gamma\n.*\necho gamma gamma\ngamma gamma\n'
tmux_type 'history'; tmux_keys Enter
tmux_wait '[0-9]+  history'
screen=$(tmux_screen)
is "$(grep -cE '^ +[0-9]+  echo gamma gamma$' <<<"$screen")" 2 "history has what fc -s ran, twice"
unlike "$screen" '[0-9]+  fc -s' "...and not the fc -s commands"
tmux_type 'fc -s nosuchcommand'; tmux_keys Enter
ok "fc -s with nothing to find says so" tmux_wait "fc: no command found"

tmux_type 'exit'; tmux_keys Enter
tmux_wait_last '^host\$ ?$'

# fc's editor runs on the host: FCEDIT from sbxsh's environment, in a private directory
cat > "$SBX_TEST_TMP/ed.sh" <<'EOF'
#!/bin/sh
# a host editor: changes "one" to "two" and says where it ran
sed -i 's/one/two/' "$1" && pwd > "$(dirname "$0")/ed.where" && cat "$1" > "$(dirname "$0")/ed.text"
EOF
chmod +x "$SBX_TEST_TMP/ed.sh"
tmux_type "FCEDIT=$SBX_TEST_TMP/ed.sh $SBXSH"; tmux_keys Enter
tmux_wait_last "$P"
tmux_type "PS1='\\!:\\# \\$ '"; tmux_keys Enter
tmux_wait_last '^[0-9]+:[0-9]+ '
tmux_type 'echo one'; tmux_keys Enter
tmux_wait $'\none\n'
tmux_wait_last '^[0-9]+:[0-9]+ '
read -r hist_n cmd_n < <(tmux_last | sed -E 's/^([0-9]+):([0-9]+).*/\1 \2/')
tmux_type 'fc'; tmux_keys Enter
ok "fc: FCEDIT edits the last command, which is shown and run" tmux_wait $' fc\necho two\ntwo\n'
ok "...the editor ran on the host, with the command in its file" \
    bash -c '[ "$(cat "$1/ed.text")" = "echo two" ]' _ "$SBX_TEST_TMP"
like "$(cat "$SBX_TEST_TMP/ed.where" 2>/dev/null)" '^/tmp/sbxsh-fc\.' \
    "...started in a private temporary directory, not the code directory"
ok "...which is gone afterwards" bash -c '! ls -d /tmp/sbxsh-fc.* 2>/dev/null | grep -q .'
ok "\\! and \\# after fc: one more each, as in bash" \
    tmux_wait_last "^$((hist_n + 1)):$((cmd_n + 1)) "
tmux_type 'fc -e false'; tmux_keys Enter
tmux_type 'echo "st=$?"'; tmux_keys Enter
ok "an editor that fails: fc runs nothing and has its status" tmux_wait $'\nst=1\n'
tmux_type 'exit'; tmux_keys Enter
tmux_wait_last '^host\$ ?$'

# a real vi on the host, as a person edits
if command -v vi >/dev/null; then
    tmux_type "EDITOR=vi $SBXSH"; tmux_keys Enter
    tmux_wait_last "$P"
    tmux_type 'echo first-version'; tmux_keys Enter
    tmux_wait $'\nfirst-version\n'
    tmux_wait_last "$P"
    tmux_type 'fc'; tmux_keys Enter
    tmux_wait 'echo first-version' && tmux_wait '~'
    tmux_type ':s/first/second/'; tmux_keys Enter
    tmux_type ':wq'; tmux_keys Enter
    ok "fc with EDITOR=vi: the edited command runs" tmux_wait $'\necho second-version\nsecond-version\n'
    tmux_wait_last "$P"
    tmux_type 'exit'; tmux_keys Enter
    tmux_wait_last '^host\$ ?$'
else
    skip "vi is not installed on the host (make deps)"
fi

# ---- PROMPT_COMMAND ----------------------------------------------------------------------
tmux_run clear; tmux_cmd clear-history
tmux_type "$SBXSH"; tmux_keys Enter
tmux_wait_last "$P"
tmux_type "PS1='[\$?] pc> '; PROMPT_COMMAND='echo \"pc saw \$?\"; false'"; tmux_keys Enter
ok "PROMPT_COMMAND runs before the prompt" tmux_wait $'\npc saw 0\n\\[0\\] pc> $'
tmux_type '(exit 3)'; tmux_keys Enter
ok "...sees the last command's \$?, and PS1 still shows it (not PROMPT_COMMAND's)" \
    tmux_wait $'\npc saw 3\n\\[3\\] pc> $'
tmux_type 'true'; tmux_keys Enter
tmux_wait $'\npc saw 0\n\\[0\\] pc> $'
tmux_type 'echo "now $?"'; tmux_keys Enter
ok "...and the next command's \$? is the last command's, not PROMPT_COMMAND's false" \
    tmux_wait $'\nnow 0\n'
tmux_type "PROMPT_COMMAND=('echo first-element' 'echo second-element')"; tmux_keys Enter
ok "an array PROMPT_COMMAND (bash 5.1): each element runs" \
    tmux_wait $'\nfirst-element\nsecond-element\n\\[0\\] pc> $'
tmux_type "PROMPT_COMMAND='history -a'"; tmux_keys Enter
tmux_type 'echo appended-by-prompt-command'; tmux_keys Enter
tmux_wait $'\nappended-by-prompt-command\n\\[0\\] pc> $'
ok "PROMPT_COMMAND='history -a': sbxsh's own history, appended before the prompt" \
    grep -qx 'echo appended-by-prompt-command' "$XDG_STATE_HOME/sbxsh/history" ||
    diag "the history file:" "$(cat "$XDG_STATE_HOME/sbxsh/history")"
tmux_type 'unset PROMPT_COMMAND'; tmux_keys Enter
tmux_type 'echo quiet'; tmux_keys Enter
ok "unset: nothing runs" tmux_wait $'\nquiet\n\\[0\\] pc> $'
tmux_type 'history'; tmux_keys Enter
tmux_wait '[0-9]+  history'
unlike "$(tmux_screen)" '[0-9]+  echo "pc saw' "PROMPT_COMMAND is not added to the history"
tmux_type 'exit'; tmux_keys Enter
tmux_wait_last '^host\$ ?$'
[ "$tap_failed" = 0 ] || diag "the screen at the end:" "$(tmux_screen)"
done_testing
