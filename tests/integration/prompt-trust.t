#!/bin/bash
# The prompt's trust boundary, at a real terminal (tmux), as a person types: what the
# sandbox's shell reports after each command is data, never a host action.
#  - PROMPT_COMMAND set by the sandbox (two ways in: a line an earlier `sbxsh -c` appended to
#    the sandbox's ~/.bashrc, and a process left running there that writes an assignment
#    into the prompt shell's script pipe through /proc/PID/fd/0, with --norc) runs in the
#    sandbox, as bash there would run it, and never on the host: no `fc -e "bash -c CMD"`
#    running CMD on the host (a marker file), no host `git push` (a host remote untouched).
#  - HISTFILESIZE=0, HISTSIZE=0 and HISTFILE=<a host path> set in the sandbox leave the host's
#    history file and that path as they were.
#  - Tab completion quotes a sandbox-made file name (`zz; touch hostmark-c` is one word, and
#    `ls` lists that one file), and offers no name with a control byte, nor a branch name
#    that would need quoting.
#  - A PS1 the sandbox's shell chose sets a title, but its OSC 52 and its cursor position
#    query never reach the terminal.
# On both runtimes: the sandbox's side (its ~/.bashrc, its pipes) is each runtime's own.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

tmux_usable || skip_all "$TMUX_WHY"
command -v git >/dev/null || skip_all "git not installed (make deps)"
runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}
unset FCEDIT EDITOR VISUAL PROMPT_COMMAND HISTFILE HISTSIZE HISTFILESIZE HISTCONTROL HISTIGNORE
if [ "$(id -u)" = 0 ]; then D='#'; else D='$'; fi

trust_at() {
local rt=$1 failed_before=$tap_failed
setup_session "trust-$rt-$$" "$rt"
rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
cd "$CODE" || bail_out "no code dir"
W=$SBX_TEST_TMP/world-$rt
rm -rf "$W" && mkdir -p "$W"
export XDG_STATE_HOME=$W/xdg-state
HIST=$XDG_STATE_HOME/sbxsh/history
MARK=$W/hostmark-fc
MARK2=$W/hostmark-fc-pipe
VICTIM=$W/victim-history
export GIT_CONFIG_NOSYSTEM=1
printf '[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n' >"$HOME/.gitconfig"
# a host remote outside the code directory, which only a host git push can reach
git init -q --bare "$W/remote.git"
# shellcheck disable=SC2015 # any failure of the chain bails out
git init -q . && git commit -q --allow-empty -m one && git remote add origin "$W/remote.git" &&
    git push -q origin HEAD:main || bail_out "cannot set up the repository"
mkdir -p "$(dirname "$HIST")" && chmod 700 "$(dirname "$HIST")"
printf 'echo old-1\necho old-2\necho old-3\n' >"$HIST"
printf 'victim-line\n' >"$VICTIM"
P="^\[sbx:trust-$rt-$$\] $CODE\\$D ?\$"

# ---- way in 1: an earlier sbxsh -c appends to the sandbox's ~/.bashrc ---------------------
cat >"$CODE/evil-rc" <<EOF
PROMPT_COMMAND=('echo pc-elem-ran; touch /tmp/pc-ran-in-sandbox' 'fc -e "bash -c touch\\\${IFS}$MARK" -1' 'git push -q origin HEAD:pwned' 'eval "git push -q origin HEAD:pwnedeval"')
HISTFILESIZE=0
HISTSIZE=0
HISTFILE=$VICTIM
EOF
"$SBXSH" -c 'cat evil-rc >>~/.bashrc && rm evil-rc' || bail_out "cannot write the sandbox's ~/.bashrc"
is "$("$SBXSH" -c 'grep -c pc-elem-ran ~/.bashrc')" 1 "$rt: the sandbox's ~/.bashrc has the PROMPT_COMMAND line"

tmux_start 160 50
tmux_type "$SBXSH"; tmux_keys Enter
tmux_wait_last "$P" || bail_out "no sbxsh prompt"
tmux_type 'echo first-command'; tmux_keys Enter
ok "$rt: ~/.bashrc's PROMPT_COMMAND runs before the prompt" tmux_wait $'\npc-elem-ran\n'
tmux_wait_last "$P"
tmux_type 'ls /tmp/pc-ran-in-sandbox && echo "pc-in-sandbox-$?"'; tmux_keys Enter
ok "$rt: ...in the sandbox (its element made a file in the sandbox's /tmp)" \
    tmux_wait $'\n/tmp/pc-ran-in-sandbox\npc-in-sandbox-0\n'
tmux_wait_last "$P"
ok "$rt: ...its fc -e \"bash -c CMD\" did not run CMD on the host (no marker)" test ! -e "$MARK"
ok "$rt: ...its git push did not push from the host (the host remote has no such branch)" \
    bash -c '! git --git-dir="$1" rev-parse -q --verify refs/heads/pwned' _ "$W/remote.git"
ok "$rt: ...nor did one inside an eval (an eval's text is the sandbox's too)" \
    bash -c '! git --git-dir="$1" rev-parse -q --verify refs/heads/pwnedeval' _ "$W/remote.git"
tmux_type 'echo "sandbox says HISTFILESIZE=$HISTFILESIZE"'; tmux_keys Enter
ok "$rt: the sandbox's shell has HISTFILESIZE=0 from its ~/.bashrc" \
    tmux_wait $'\nsandbox says HISTFILESIZE=0\n'
tmux_wait_last "$P"
tmux_type 'echo kept-in-host-history'; tmux_keys Enter
tmux_wait $'\nkept-in-host-history\n'
tmux_wait_last "$P"
tmux_type 'exit'; tmux_keys Enter
tmux_wait_last '^host\$ ?$'
ok "$rt: HISTFILESIZE=0 and HISTSIZE=0 from the sandbox: the host history keeps its entries" \
    bash -c 'grep -qx "echo old-1" "$1" && grep -qx "echo old-3" "$1"' _ "$HIST"
ok "$rt: ...and gets this session's commands" grep -qx 'echo kept-in-host-history' "$HIST"
is "$(cat "$VICTIM")" victim-line "$rt: HISTFILE=<a host path> from the sandbox: that file is untouched"
"$SBXSH" -c 'rm -f ~/.bashrc'

# ---- way in 2: a sandbox process writes into the prompt shell's script pipe ---------------
# (with --norc; the injector waits for a file, writes the line, and the shell's next command
# reports the PROMPT_COMMAND it set)
# (the shell's fd 0 is its script pipe between commands, the terminal while one runs: the
# injector holds the pipe open from a moment it was idle, then writes when told)
cat >"$CODE/inject.sh" <<'EOF'
#!/bin/bash
until [ -p "/proc/$1/fd/0" ] && exec 3>"/proc/$1/fd/0" && [ -p /dev/fd/3 ]; do
    exec 3>&-; sleep 0.1
done
echo holding >/tmp/inject-holding
while [ ! -e /tmp/inject-go ]; do sleep 0.1; done
cat "$2" >&3
EOF
cat >"$CODE/inject-line" <<EOF
PROMPT_COMMAND=('echo pc2-elem-ran; touch /tmp/pc2-ran-in-sandbox' 'fc -e "bash -c touch\\\${IFS}$MARK2" -1' 'git push -q origin HEAD:pwned2')
EOF
tmux_run clear; tmux_cmd clear-history
tmux_type "$SBXSH --norc"; tmux_keys Enter
tmux_wait_last "$P"
tmux_type 'bash inject.sh $$ "$PWD/inject-line" &'; tmux_keys Enter
tmux_wait_last "$P"
# the injector opens the pipe while the shell waits at its prompt (fd 0 is the terminal while
# a command runs): the shell is left idle a moment before each check
holding=
for _ in $(seq 60); do
    sleep 0.5
    tmux_type '[ -e /tmp/inject-holding ] && echo "hold""ing-yes"'; tmux_keys Enter
    tmux_wait_last "$P"
    if tmux_screen | grep -q 'holding-yes'; then holding=1; break; fi
done
ok "$rt: a process in the sandbox holds the prompt shell's script pipe open" test -n "$holding"
tmux_type 'touch /tmp/inject-go; wait; echo injected'; tmux_keys Enter
tmux_wait $'\ninjected\n'
tmux_wait_last "$P"
tmux_type 'echo after-inject'; tmux_keys Enter
ok "$rt: the PROMPT_COMMAND written into the shell's pipe runs before the prompt" \
    tmux_wait $'\nafter-inject\n(.*\n)*pc2-elem-ran\n'
tmux_wait_last "$P"
tmux_type 'ls /tmp/pc2-ran-in-sandbox && echo "pc2-in-sandbox-$?"'; tmux_keys Enter
ok "$rt: ...in the sandbox" tmux_wait $'\n/tmp/pc2-ran-in-sandbox\npc2-in-sandbox-0\n'
tmux_wait_last "$P"
ok "$rt: ...its fc -e did not run on the host (no marker)" test ! -e "$MARK2"
ok "$rt: ...its git push did not push from the host" \
    bash -c '! git --git-dir="$1" rev-parse -q --verify refs/heads/pwned2' _ "$W/remote.git"

# ---- Tab completion of sandbox-made names ------------------------------------------------
tmux_type "touch 'zz; touch hostmark-c' && echo made"; tmux_keys Enter
tmux_wait $'\nmade\n'
tmux_wait_last "$P"
: >"$CODE/cc-plain" && : >"$CODE/cc"$'\033'"]52;c;aGk="$'\007'"x"
tmux_type 'ls -N zz'; tmux_keys Tab
ok "$rt: a file name with ; and blanks completes quoted, one word" \
    tmux_wait '[#$] ls -N zz\\;\\ touch\\ hostmark-c ?$'
tmux_keys Enter
ok "$rt: ...and ls lists that one file" tmux_wait $'\nzz; touch hostmark-c\n'
tmux_wait_last "$P"
ok "$rt: ...nothing ran its touch (no hostmark-c)" test ! -e "$CODE/hostmark-c"
tmux_type 'ls cc'; tmux_keys Tab
ok "$rt: a name with control bytes is not offered: cc completes to the other one" \
    tmux_wait '[#$] ls cc-plain ?$'
tmux_keys C-u
# a branch name is the sandbox's too (it writes .git); one that needs quoting is not offered
{ git branch 'brz;touch${IFS}hostmark-b' && git branch brz-plain; } || bail_out "cannot make the branches"
tmux_type 'git checkout brz'; tmux_keys Tab
ok "$rt: a branch name with ; and \$ is not offered: brz completes to the plain one" \
    tmux_wait '[#$] git checkout brz-plain ?$'
tmux_keys C-u

# ---- a prompt the sandbox chose: a title passes; the clipboard and a query do not --------
# (tmux takes OSC 52 into a paste buffer with set-clipboard on, and answers a cursor position
# query, CSI 6 n, into the input, where readline would read it as keys typed at the prompt)
tmux_type 'unset PROMPT_COMMAND'; tmux_keys Enter
tmux_wait_last "$P"
tmux_cmd set-option -g set-clipboard on
tmux_cmd delete-buffer 2>/dev/null
tmux_type "PS1='\\[\\e]0;trust-title\\a\\e]52;c;aGVsbG8=\\a\\e[6n\\]dsr> '"; tmux_keys Enter
tmux_wait_last '^dsr> ?$'
tmux_type 'echo "dsr-$((6 * 7))"'; tmux_keys Enter
ok "$rt: PS1 with a cursor position query: the next line runs as typed (no answer typed into it)" \
    tmux_wait $'\ndsr> echo "dsr-\\$\\(\\(6 \\* 7\\)\\)"\ndsr-42\ndsr> $'
is "$(tmux_cmd display-message -p '#{pane_title}')" trust-title "$rt: ...its title is set"
is "$(tmux_cmd list-buffers 2>/dev/null | wc -l)" 0 "$rt: ...its OSC 52 did not reach the terminal's clipboard"
tmux_type 'exit'; tmux_keys Enter
tmux_wait_last '^host\$ ?$'
[ "$tap_failed" = "$failed_before" ] || diag "$rt: the screen at the end:" "$(tmux_screen)"
tmux_stop
end_session
}

for rt in $runtimes; do
    if why=$(runtime_usable "$rt"); then
        trust_at "$rt"
    else
        skip "the prompt's trust boundary on $rt: $why"
    fi
done
done_testing
