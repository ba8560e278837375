#!/bin/bash
# Ctrl-C at a terminal while the way to the sandbox is a black hole (the fake API server
# stopped with SIGSTOP: connections stay open, nothing answers, as when a node, a load
# balancer or a VPN is gone and no RST ever comes). deadpath.t covers a
# SIGINT to `sbxsh -c` from a harness; here a person presses Ctrl-C in tmux:
#   - at the interactive prompt, during the sync before a command (the terminal is cooked:
#     the key is a SIGINT to sbxsh) and while a command runs (the terminal is raw: the key is
#     a byte for the sandbox's pty, which sbxsh follows with a probe the agent answers): the
#     command is given up after 3 s with a message, the prompt comes back as bash -i's does,
#     $? is 130, and once the way is back the next command runs (the failed session is not
#     kept, repeating its failure for every later line);
#   - with the way alive, a command that ignores Ctrl-C quietly is waited for (the agent's
#     answer to the probe says the way works);
#   - `sbxsh -c` at a terminal ends within seconds of the key, dying of SIGINT (130).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
command -v tmux >/dev/null || skip_all "tmux is not installed (make deps)"
kube_fake_start --pool p=1 || bail_out "the fake API server did not start"
kube_env kp
export AGENT_SANDBOX_POOL=p

T() { tmux -S "$SBX_TEST_TMP/tmux.sock" "$@"; }
screen() { T capture-pane -p -J -S - -E -; }
# wait_screen REGEX: until the screen matches (bounded: 90 s; the holder's own bounds on a
# dead way are 20 s of silence and a 30 s retry budget). The screen's trailing empty lines are
# gone ($(...)), so a line that the cursor is still below ends in $, not \n.
wait_screen() {
    local end=$((SECONDS + 90))
    while [ $SECONDS -lt $end ]; do
        [[ $(screen) =~ $1 ]] && return 0
        sleep 0.1
    done
    diag "timed out waiting for: $1" "the screen:" "$(screen)"
    return 1
}
# prompts: how many lines of the screen begin with sbxsh's prompt
prompts() { screen | grep -c '^\[sbx:kp\]'; }
wait_prompts() { # N
    local end=$((SECONDS + 90))
    while [ $SECONDS -lt $end ]; do
        [ "$(prompts)" -ge "$1" ] && return 0
        sleep 0.1
    done
    diag "timed out waiting for prompt number $1" "the screen:" "$(screen)"
    return 1
}
# freeze / thaw: the API server stops answering anything / answers again
freeze() { kill -STOP "$FAKE_PID"; }
thaw() { kill -CONT "$FAKE_PID"; }
trap 'thaw; T kill-server 2>/dev/null; kube_teardown' EXIT

is "$("$SBXSH" -c 'cat README' 2>&1)" hello "a first command claims a pod"
cd "$PROJ" || bail_out "no project"
T -f /dev/null new-session -d -x 120 -y 40 "$SBXSH -i; echo \"sbxsh ended: \$?\"; sleep 600" ||
    bail_out "tmux cannot start"
T set-option -g status off
T set-option -g history-limit 5000
T send-keys -l 'echo al""ive'; T send-keys Enter
ok "the prompt runs a command" wait_screen $'\nalive(\n|$)'

# 1. Ctrl-C during the sync before a command (cooked terminal: a SIGINT to sbxsh)
n=$(prompts)
freeze
T send-keys -l 'echo fir""st'; T send-keys Enter
sleep 1
T send-keys C-c
ok "Ctrl-C before the command starts, no answer: sbxsh says so" \
   wait_screen 'no answer from the sandbox 3 s after Ctrl-C \(the way to it may be lost\); its command may still be running there'
ok "...and the prompt comes back (sbxsh -i lives on)" wait_prompts $((n + 1))
unlike "$(screen)" 'first' "...the command did not run meanwhile"
thaw
T send-keys -l 'echo "st""atus=$?"'; T send-keys Enter
ok "the way back: the next command runs, \$? is 130 as after bash's Ctrl-C" wait_screen $'\nstatus=130(\n|$)'

# 2. Ctrl-C while a command runs (raw terminal: a byte for the pty, and a probe)
T send-keys -l "sh -c 'echo star\"\"ted; sleep 60; echo fin\"\"ished'"; T send-keys Enter
wait_screen $'\nstarted(\n|$)' || diag "the command did not start"
n=$(prompts)
freeze
T send-keys C-c
ok "Ctrl-C while the command runs, no answer: sbxsh says so" \
   wait_screen 'started.*no answer from the sandbox 3 s after Ctrl-C'
ok "...and the prompt comes back" wait_prompts $((n + 1))
thaw
T send-keys -l 'echo "ag""ain=$?"'; T send-keys Enter
ok "the way back: the next command runs" wait_screen $'\nagain=130(\n|$)'
unlike "$(screen)" 'finished' "...the given-up command printed nothing after"

# 3. The way alive: a command that ignores Ctrl-C quietly is waited for, no message
n=$(grep -c 'no answer from the sandbox' <<<"$(screen)")
T send-keys -l "bash -c 'trap \"\" INT; echo rea\"\"dy; sleep 5; echo surv\"\"ived'"; T send-keys Enter
wait_screen $'\nready(\n|$)' || diag "the command did not start"
T send-keys C-c
ok "Ctrl-C to a command that ignores it, the way alive: waited for to its end" \
   wait_screen $'survived(\n|$)'   # (after the ^C the pty echoed)
is "$(grep -c 'no answer from the sandbox' <<<"$(screen)")" "$n" "...with no word of a lost way"

# 4. sbxsh -c at a terminal: Ctrl-C with no answer ends it, dying of SIGINT
T send-keys -l 'exit'; T send-keys Enter
wait_screen 'sbxsh ended: 0' || diag "sbxsh -i did not exit"
T respawn-pane -k "$SBXSH -c 'echo go""ing; sleep 60'; echo \"c-ended: \$?\"; sleep 600"
wait_screen $'going' || diag "sbxsh -c did not start"
freeze
T send-keys C-c
ok "sbxsh -c at a terminal, Ctrl-C unanswered: it says so" \
   wait_screen 'no answer from the sandbox 3 s after Interrupt'
ok "...and dies of the SIGINT (130)" wait_screen 'c-ended: 130'
thaw
done_testing
