#!/bin/bash
# Terminal answerback, at a real terminal (tmux): a sandbox command that writes queries the
# terminal answers (ESC [ 6n, the cursor position; ESC [ c and ESC [ > c, the device
# attributes; ESC [ 5n, the status) gets no answer typed into the input: the line the person
# types next, read by the command itself or at sbxsh's prompt, is what they typed. A control
# first: the same queries from a host command are answered (so the check can fail). Both
# runtimes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

tmux_usable || skip_all "$TMUX_WHY"
setup_session "answerback-$$"
cd "$CODE" || bail_out "no code dir"
tmux_start 120 30
NTESTS=4

# the command: queries, a marker, then a line read from the terminal, shown quoted
cat >"$CODE/query.sh" <<'SH'
printf '\033[6n\033[c\033[>c\033[5n'
echo ready
IFS= read -r line
printf 'line=%q\n' "$line"
SH
# the same queries, and nothing read: the answers would wait for sbxsh's prompt
cat >"$CODE/query-only.sh" <<'SH'
printf '\033[6n\033[c\033[>c\033[5n'
echo queried
SH

# control: a host command's queries are answered, into its input
tmux_type "bash $CODE/query.sh"; tmux_keys Enter
tmux_wait $'ready(\n|$)' || bail_out "the control command did not start"
tmux_type typed; tmux_keys Enter
tmux_wait 'line=' || bail_out "the control command did not end"
ok "control: the terminal answers a host command's queries into its input" \
   grep -qF "line=\$'\\E[" <<<"$(tmux_screen)"
tmux_wait_last '^host\$ ?$'
tmux_clear

for rt in bwrap runsc; do
    if ! why=$(runtime_usable "$rt"); then
        for _ in $(seq $NTESTS); do skip "$rt: $why"; done
        continue
    fi
    session=answerback-$rt-$$
    tmux_type "AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=$session $SBXSH"; tmux_keys Enter
    tmux_wait_last "^\[sbx:$session\] .*[#\$] ?\$" || bail_out "$rt: no sbxsh prompt"

    # the command reads the next line itself
    tmux_type 'bash query.sh'; tmux_keys Enter
    if tmux_wait $'ready(\n|$)' 120; then
        tmux_type typed; tmux_keys Enter
        # the whole line and the prompt after it: under load the screen held "line=typed"
        # without its newline when the check below looked
        tmux_wait 'line=' 60 && tmux_wait_last "^\[sbx:$session\] .*[#\$] ?\$"
    fi
    like "$(tmux_screen)" $'\nline=typed\n' "$rt: the line a sandbox command reads after its queries is what was typed"
    unlike "$(tmux_screen)" '\^\[\[|\[\?1;2c|[0-9]R' "$rt: and no answer was echoed on the screen"

    # the command ends; the next line is typed at sbxsh's prompt
    tmux_clear
    tmux_type 'bash query-only.sh'; tmux_keys Enter
    tmux_wait $'\nqueried\n' 120 && tmux_wait_last "^\[sbx:$session\] .*[#\$] ?\$"
    tmux_type 'echo "next=$((6 * 7))"'; tmux_keys Enter
    tmux_wait $'\nnext=42\n' 60
    like "$(tmux_screen)" $'\nnext=42\n' "$rt: the next line typed at the prompt runs as typed"
    unlike "$(tmux_screen)" 'command not found|\^\[' "$rt: with nothing before it"

    tmux_type 'exit'; tmux_keys Enter
    tmux_wait_last '^host\$ ?$'
    "$SBX" release --session "$session" >/dev/null 2>&1
    tmux_clear
done
done_testing
