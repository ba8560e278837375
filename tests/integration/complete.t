#!/bin/bash
# Issue 13, Tab completion at a real terminal (tmux), as a person uses it: a file name from
# where the next command runs (after a cd in the session), a command name from the sandbox's
# PATH, a function defined in the session, a variable after $, a git subcommand and a
# branch name (read from the repository's refs, without running git).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

tmux_usable || skip_all "$TMUX_WHY"
if ! why=$(runtime_usable bwrap); then
    skip_all "$why"
fi
command -v git >/dev/null || skip_all "git not installed (make deps)"
setup_session "complete-$$" bwrap
cd "$CODE" || bail_out "no code dir"
export XDG_STATE_HOME=$SBX_TEST_TMP/xdg-state GIT_CONFIG_NOSYSTEM=1
printf '[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n' >"$HOME/.gitconfig"
{ git init -q . && git commit -q --allow-empty -m base && git branch feature-zebra-42; } ||
    bail_out "cannot make the repository"
mkdir -p deep/inner && echo x >deep/inner/only-file-here.txt
if [ "$(id -u)" = 0 ]; then D='#'; else D='$'; fi
tmux_start 120 30
tmux_type "$SBXSH --norc"; tmux_keys Enter
tmux_wait_last "\\$D ?\$"

tmux_type 'cd deep'; tmux_keys Enter
tmux_wait_last "/deep\\$D ?\$"
tmux_type 'cat inner/only-f'; tmux_keys Tab
ok "a file name completes from the session's cwd (after cd deep)" tmux_wait 'cat inner/only-file-here\.txt ?$'
tmux_keys Enter
tmux_wait $'\nx\n'
tmux_type 'cd ..'; tmux_keys Enter
tmux_type 'zebra_fn_q() { echo zebra-ran; }; ZEBRA_VAR_Q=striped'; tmux_keys Enter
tmux_wait_last "\\$D ?\$"
tmux_type 'zebra_fn'; tmux_keys Tab
ok "a function defined in the session completes as a command" tmux_wait 'zebra_fn_q ?$'
tmux_keys Enter
tmux_wait $'\nzebra-ran\n'
tmux_type 'echo $ZEBRA_VA'; tmux_keys Tab
ok "a variable of the session completes after \$" tmux_wait 'echo \$ZEBRA_VAR_Q ?$'
tmux_keys Enter
ok "...and it is the session's" tmux_wait $'\nstriped\n'
# asking the session's shell for names leaves its $? and $_ as they were
tmux_type 'echo x last-arg-zz; false'; tmux_keys Enter
tmux_wait $'\nx last-arg-zz\n'
tmux_type 'echo "$? $_" $ZEBRA_V'; tmux_keys Tab
tmux_wait 'ZEBRA_VAR_Q ?$'
tmux_keys Enter
ok "after a completion \$? and \$_ are the last command's" tmux_wait $'\n1 false striped\n'
tmux_type 'base6'; tmux_keys Tab
ok "a program in the sandbox's PATH completes as a command" tmux_wait 'base64 ?$'
tmux_keys C-u
tmux_type 'git chec'; tmux_keys Tab
ok "a git subcommand completes" tmux_wait 'git checkout ?$'
tmux_type 'feature-z'; tmux_keys Tab
ok "a git branch completes" tmux_wait 'git checkout feature-zebra-42 ?$'
tmux_keys C-u
tmux_type 'echo ~roo'; tmux_keys Tab
ok "~user completes to the user's home, with a slash (root)" tmux_wait 'echo ~root/ *$'
tmux_keys C-u
tmux_type 'exit'; tmux_keys Enter
tmux_wait_last '^host\$ ?$'
[ "$tap_failed" = 0 ] || diag "the screen at the end:" "$(tmux_screen)"
done_testing
