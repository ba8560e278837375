#!/bin/bash
# OpenHands' shell protocol with sbxsh as the shell in its tmux pane, on each runtime,
# against a real repository whose remote is a `git daemon` on loopback (the sandbox has no
# network: a push that reaches the remote ran on the host). openhands.py plays OpenHands'
# part as its terminal tool does it (OpenHands/software-agent-sdk, TmuxTerminal and
# TerminalSession): the pane runs `sbxsh -i` (what its subprocess terminal runs for a
# shell_path; that terminal itself, a pty without tmux, is checked too: openhands_pty.py), gets `set +H; export PROMPT_COMMAND='export PS1="<JSON between
# ###PS1JSON### and ###PS1END###>"'; export PS2=""` typed, `clear` and tmux's
# clear-history before each command; each command is typed with tmux send-keys, done when
# a new PS1 block shows, read from the pane between the blocks; a command that runs past
# its timeout gets C-c. What the blocks say (exit code, working directory, user, host) and
# the output must be what the same protocol gets from bash -i; the commit made in the
# sandbox comes back to the host's repository, and `git push` runs on the host.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}
OPENHANDS=$(cd "$(dirname "$0")" && pwd)/openhands.py
OPENHANDS_PTY=$(cd "$(dirname "$0")" && pwd)/openhands_pty.py

tmux_usable || skip_all "$TMUX_WHY"
command -v jq >/dev/null || skip_all "jq not installed (it reads openhands.py's JSON: make deps)"
start_git_daemon || skip_all "git daemon cannot serve on loopback here"

remote_head() { git --git-dir="$GITROOT/$1" log -1 --format=%s main 2>&1; }

# oh_start SOCKET CMD...: a tmux server of OpenHands' shape (its 256x200 pane in the
# repository) running CMD
oh_start() {
    local sock=$1; shift
    tmux -S "$sock" -f /dev/null new-session -d -x 256 -y 200 -c "$CODE" "$*" ||
        bail_out "tmux cannot start"
    tmux -S "$sock" set-option -g history-limit 10000
}
# oh SOCKET run CMD [SECONDS] | oh SOCKET key C-c: sets R (the JSON), R_STATUS, R_EXIT,
# R_CWD, R_USER, R_HOST, R_OUT
oh() {
    R=$("$OPENHANDS" "$@" 2>&1)
    R_STATUS=$(jq -r .status <<<"$R" 2>/dev/null)
    R_EXIT=$(jq -r .exit_code <<<"$R" 2>/dev/null)
    R_CWD=$(jq -r .working_dir <<<"$R" 2>/dev/null)
    R_USER=$(jq -r .username <<<"$R" 2>/dev/null)
    R_HOST=$(jq -r .hostname <<<"$R" 2>/dev/null)
    R_OUT=$(jq -r .output <<<"$R" 2>/dev/null)
    [ -n "$R_STATUS" ] || diag "openhands.py said: $R"
}

# What OpenHands gets from bash -i for the commands that do not touch the repository, as
# "status exit cwd | output" lines: the reference for sbxsh's.
BASH_SOCK=$SBX_TEST_TMP/bash-tmux.sock
neutral=("echo 'hello from openhands'" "(exit 3)" "echo 'a!b'" "cd sub"
         $'for i in 1 2 3; do\necho "line $i"\ndone' 'pwd')
reference=()
setup_session "agents-tmux-ref-$$"
mkdir -p "$CODE/sub"
trap 'tmux -S "$BASH_SOCK" kill-server 2>/dev/null; tmux_stop; end_session; stop_git_daemon; tap_cleanup' EXIT
oh_start "$BASH_SOCK" "env PS1='$ ' bash --norc --noprofile -i"
"$OPENHANDS" "$BASH_SOCK" init || bail_out "OpenHands' set-up fails with bash"
for c in "${neutral[@]}"; do
    oh "$BASH_SOCK" run "$c"
    reference+=("$R_STATUS $R_EXIT $R_CWD | $R_OUT")
done
tmux -S "$BASH_SOCK" kill-server
is "${reference[1]}" "completed 3 $CODE | " "bash's reference: (exit 3) gives exit code 3 in the PS1 block"

# Its terminal without tmux (SubprocessTerminal: SHELL -i on a pty of its own), where a
# program on OpenHands' SDK can name the shell (shell_path): the same commands, a timeout
# and C-c, as one JSON line each; bash -i's lines are the reference.
pty_cmds=("echo 'hello from openhands'" "(exit 3)" "echo 'a!b'" "cd sub"
          $'for i in 1 2 3; do\necho "line $i"\ndone' '3:echo sta""rted; sleep 600' "wait:started"
          "C-c" "pwd")
pty_reference=$(cd "$CODE" && python3 "$OPENHANDS_PTY" /bin/bash "${pty_cmds[@]}" 2>&1)
like "$pty_reference" '"status": "completed", "exit_code": 130, "working_dir": "[^"]*/sub"' \
     "bash's reference without tmux: C-c after the timeout gives exit code 130"

me=$(id -un)
host=$(hostname)
host=${host%%.*}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "OpenHands' protocol on $rt: $why"
        continue
    fi
    setup_session "agents-tmux-$rt-$$" "$rt"
    trap 'tmux_stop; end_session; stop_git_daemon; tap_cleanup' EXIT
    remote=remote-tmux-$rt.git
    repo_with_remote "$remote" sub/f

    # OpenHands types its set-up line as soon as the pane exists, as it does.
    oh_start "$TMUX_SOCK" "$SBXSH -i"
    out=$("$OPENHANDS" "$TMUX_SOCK" init 2>&1)
    is "$?:$out" "0:" "$rt: OpenHands' set-up line (PROMPT_COMMAND setting its JSON PS1), then its clear"

    oh "$TMUX_SOCK" run "echo 'hello from openhands'"
    is "$R_STATUS $R_EXIT $R_CWD | $R_OUT" "${reference[0]}" \
       "$rt: a command: a new PS1 block, exit code 0, the cwd, the output, as bash -i gives"
    is "$R_USER@$R_HOST" "$me@$host" "$rt: ...\\u and \\h in the block are the user's and the host's"
    oh "$TMUX_SOCK" run "(exit 3)"
    is "$R_STATUS $R_EXIT $R_CWD | $R_OUT" "${reference[1]}" "$rt: (exit 3): exit code 3 in the block"
    oh "$TMUX_SOCK" run "echo 'a!b'"
    is "$R_STATUS $R_EXIT $R_CWD | $R_OUT" "${reference[2]}" \
       "$rt: its set +H holds: a ! in the command is not a history expansion"

    # files and a commit made in the sandbox come back; the push runs on the host
    oh "$TMUX_SOCK" run "printf 'written in the sandbox\\n' > made.txt && git add made.txt && git commit -qm 'openhands commit'"
    is "$R_STATUS $R_EXIT | $R_OUT" "completed 0 | " "$rt: a commit in the sandbox: exit code 0"
    is "$(cat "$CODE/made.txt" 2>&1)" "written in the sandbox" "$rt: ...the file it wrote is on the host"
    is "$(git -C "$CODE" log -1 --format=%s 2>&1)" "openhands commit" "$rt: ...and the commit is the host repository's"
    oh "$TMUX_SOCK" run "git push -q origin HEAD:main"
    is "$R_STATUS $R_EXIT | $R_OUT" "completed 0 | " "$rt: git push: exit code 0 in the block"
    is "$(remote_head "$remote")" "openhands commit" "$rt: ...it ran on the host: the remote has the commit"
    echo two >> sub/f
    oh "$TMUX_SOCK" run "git commit -qam two && git push -q origin HEAD:main && git log -1 --format=%s"
    is "$R_STATUS $R_EXIT | $R_OUT" "completed 0 | two" "$rt: commit, push and log in one command line"
    is "$(remote_head "$remote")" "two" "$rt: ...its push ran on the host too"

    # a cd shows in the next block; a multi-line command
    oh "$TMUX_SOCK" run "cd sub"
    is "$R_STATUS $R_EXIT $R_CWD | $R_OUT" "${reference[3]}" "$rt: cd sub: the next block's working_dir is sub"
    oh "$TMUX_SOCK" run $'for i in 1 2 3; do\necho "line $i"\ndone'
    is "$R_STATUS $R_EXIT $R_CWD | $R_OUT" "${reference[4]}" \
       "$rt: a multi-line command (typed line by line, PS2 empty): its output, exit code 0"
    oh "$TMUX_SOCK" run "pwd"
    is "$R_STATUS $R_EXIT $R_CWD | $R_OUT" "${reference[5]}" "$rt: ...still in sub"

    # a command past its timeout, then OpenHands' C-c
    oh "$TMUX_SOCK" run 'echo sta""rted; sleep 600' 3
    is "$R_STATUS" "timeout" "$rt: sleep 600 is still running at its 3 s timeout (no new block)"
    tmux_wait $'\nstarted(\n|$)' 60 || diag "sleep 600 did not start"   # (not OpenHands': C-c once it runs)
    oh "$TMUX_SOCK" key C-c
    is "$R_STATUS $R_EXIT $R_CWD" "completed 130 $CODE/sub" "$rt: C-c: a new block, exit code 130, the same cwd"
    oh "$TMUX_SOCK" run "echo after"
    is "$R_STATUS $R_EXIT | $R_OUT" "completed 0 | after" "$rt: ...and the next command runs"

    tmux_stop

    # `su openhands -` (its tmux terminal's shell for that account) runs the account's login
    # shell with the argument -: sbxsh - at a terminal is the same interactive shell
    # (a server of its own: a new one on the socket just killed may find it still there)
    su_sock=$SBX_TEST_TMP/su-$rt.sock
    trap 'tmux -S "$su_sock" kill-server 2>/dev/null; tmux_stop; end_session; stop_git_daemon; tap_cleanup' EXIT
    oh_start "$su_sock" "$SBXSH -"
    "$OPENHANDS" "$su_sock" init >/dev/null 2>&1
    oh "$su_sock" run "cd sub && echo 'as su runs it'"
    is "$R_STATUS $R_EXIT $R_CWD | $R_OUT" "completed 0 $CODE/sub | as su runs it" \
       "$rt: sbxsh - (what su USER - runs) in the pane: the same protocol works"
    tmux -S "$su_sock" kill-server

    # (the C-c's echo: ^C, from Linux's pty or from sbx-agent under gVisor, which also takes
    # gVisor's raw byte out; \u0003 in the JSON if a raw byte ever came back)
    out=$(cd "$CODE" && python3 "$OPENHANDS_PTY" "$SBXSH" "${pty_cmds[@]}" 2>&1 | sed 's/\\u0003/^C/g')
    is "$out" "$pty_reference" \
       "$rt: without tmux (sbxsh -i on its pty, PS1 in the environment): every line as bash -i's"
    out=$(cd "$CODE" && python3 "$OPENHANDS_PTY" "$SBXSH" \
          "printf 'from its pty terminal\\n' > pty.txt && git add pty.txt && git commit -qm 'openhands pty commit' && git push -q origin HEAD:main && echo pushed" 2>&1)
    is "$out" '{"status": "completed", "exit_code": 0, "working_dir": "'"$CODE"'", "output": "pushed"}' \
       "$rt: ...a commit and git push in one command"
    is "$(cat "$CODE/pty.txt" 2>&1)" "from its pty terminal" "$rt: ...the file is on the host"
    is "$(remote_head "$remote")" "openhands pty commit" "$rt: ...and the push ran on the host"
    end_session
done

done_testing
