# shellcheck shell=bash
# A terminal a person would use, for integration tests: a tmux server of the test's own
# (its socket under $SBX_TEST_TMP) with one window running a plain host bash, into which
# the test types and whose screen it reads.
#
#   . "$(dirname "$0")/tmux.sh"        # after lib.sh and setup_session
#   tmux_usable || skip_all "$TMUX_WHY"
#   tmux_start [COLS ROWS]              # 120x30 by default; host prompt "host$ "
#   tmux_type 'sbxsh -c "stty size"'    # literal text; tmux_keys for keys (Enter, C-c)
#   tmux_type_line 'CMD'                # at a readline prompt: CMD, once shown, then Enter, taken
#   tmux_run 'CMD'                      # types CMD; Enter; waits until the host prompts again
#   tmux_wait REGEX [SECONDS]           # until the screen matches (extended regex)
#   screen=$(tmux_screen)               # what the person sees, lines joined
#
# Waits are bounded (60 s by default) and never fixed sleeps: each polls the screen.

TMUX_SOCK=$SBX_TEST_TMP/tmux.sock
# the reason tmux_usable gives, read by the test that sources this file
export TMUX_WHY=
tmux_usable() {
    command -v tmux >/dev/null || { TMUX_WHY="tmux not installed (it drives a real terminal: make deps)"; return 1; }
    return 0
}
tmux_cmd() { tmux -S "$TMUX_SOCK" "$@"; }
tmux_start() {
    local cols=${1:-120} rows=${2:-30}
    # The server takes this process's environment (the test's HOME, session, runtime).
    tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -x "$cols" -y "$rows" \
        "env PS1='host\$ ' bash --norc --noprofile" || bail_out "tmux cannot start"
    tmux_cmd set-option -g status off
    tmux_cmd set-option -g history-limit 5000
    trap 'tmux_cmd kill-server 2>/dev/null; end_session; stop_git_daemon; tap_cleanup' EXIT
    tmux_wait_last '^host\$ ?$' || bail_out "no host prompt in tmux"
}
tmux_stop() { tmux_cmd kill-server 2>/dev/null; }
tmux_screen() { tmux_cmd capture-pane -p -J -S - -E -; }
# the screen's last non-empty line (where the cursor waits at a prompt)
tmux_last() { tmux_screen | sed '/^$/d' | tail -n 1; }
tmux_type() { tmux_cmd send-keys -l -- "$1"; }
tmux_keys() { tmux_cmd send-keys -- "$@"; }
tmux_clear() { tmux_cmd send-keys -R \; clear-history; }
tmux_wait() {
    local re=$1 t=${2:-60} end
    end=$((SECONDS + t))
    while [ $SECONDS -lt $end ]; do
        [[ $(tmux_screen) =~ $re ]] && return 0
        sleep 0.05
    done
    diag "timed out after ${t}s waiting for: $re" "the screen:" "$(tmux_screen)"
    return 1
}
# wait_last REGEX: until the last non-empty line matches (a prompt that came back)
tmux_wait_last() {
    local re=$1 t=${2:-60} end
    end=$((SECONDS + t))
    while [ $SECONDS -lt $end ]; do
        [[ $(tmux_last) =~ $re ]] && return 0
        sleep 0.05
    done
    diag "timed out after ${t}s waiting for a last line like: $re" "the screen:" "$(tmux_screen)"
    return 1
}
# tmux_type_seen TEXT: types TEXT at a readline prompt and waits (bounded, 10 s; a diag, not
# a failure, when it does not come) until the prompt's line shows it: readline has read it.
# A key sent next that makes a signal (Ctrl-Z, Ctrl-C) makes the pty drop what is still
# unread (ISIG without NOFLSH, for any shell): sent too early, it takes the text with it.
tmux_type_seen() {
    local want=$1 end
    while [[ $want == *' ' ]]; do want=${want% }; done   # (capture-pane drops trailing blanks)
    tmux_type "$1"
    end=$((SECONDS + 10))
    until [[ $(tmux_last) == *"$want" ]]; do
        if [ $SECONDS -ge $end ]; then
            diag "tmux_type_seen: after 10 s the line does not show what was typed: $1" \
                "the screen:" "$(tmux_screen)"
            return 1
        fi
        sleep 0.05
    done
}
# the cursor's place (column, row and history size: a scrolled screen moves it too)
tmux_cursor() { tmux_cmd display-message -p '#{cursor_x} #{cursor_y} #{history_size}'; }
# tmux_type_line TEXT: tmux_type_seen, Enter, and a wait (bounded, 10 s, no failure) until the
# cursor has moved: readline took the Enter (it echoes the newline). So a check that waits for
# the prompt after the line cannot pass on the prompt showing before it was read, a Ctrl-D
# sent next reaches the next prompt rather than the command's terminal (where the pty turns
# it into a NUL), and a Ctrl-Z or Ctrl-C sent next cannot make the pty drop the Enter.
tmux_type_line() {
    local before end
    tmux_type_seen "$1"
    before=$(tmux_cursor)
    tmux_keys Enter
    end=$((SECONDS + 10))
    while [ "$(tmux_cursor)" = "$before" ] && [ $SECONDS -lt $end ]; do sleep 0.05; done
}
tmux_run_n=0
# tmux_run CMD: at the host prompt, runs CMD and waits for its end (a marker, then the prompt)
tmux_run() {
    tmux_run_n=$((tmux_run_n + 1))
    # the marker as typed ("=do""neN=") is not the marker printed
    tmux_type "$1; echo \"=do\"\"ne$tmux_run_n=\""
    tmux_keys Enter
    tmux_wait "=done$tmux_run_n=" "${2:-60}" && tmux_wait_last '^host\$ ?$' 10
}
# the pid of the program running in the window's shell (sbxsh), or nothing
tmux_child_pid() {
    local shell
    shell=$(tmux_cmd display-message -p '#{pane_pid}')
    pgrep -P "$shell" | head -n 1
}
