#!/bin/bash
# At sbxsh's prompt, a cd into another project moves the shell to that project's own
# session (cli/line.c, move_to_project): a login shell in ~ (no code directory) reaches
# the repositories under it, and one project's shell reaches the next, as `sbxsh -c` started
# there would. A cd out of every project keeps the session; a session or code directories
# named by the caller never move; `sbxsh -c` and --route are unchanged.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-bwrap runsc}

# sessions NAME...: release each derived session this file made
release_all() {
    local s
    for s in $("$SBX" ls 2>/dev/null | awk 'NR > 1 { print $1 }'); do
        "$SBX" release --session "$s" >/dev/null 2>&1
    done
}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "cd into a project on $rt: $why"
        continue
    fi
    setup_session "cdp-$rt-$$" "$rt"
    trap 'release_all; tap_cleanup' EXIT
    unset AGENT_SANDBOX_CODE_DIRS AGENT_SANDBOX_SESSION
    export HOME=$SBX_TEST_TMP/home-$rt
    mkdir -p "$HOME"
    HOME=$(cd "$HOME" && pwd -P)
    printf '[user]\n\tname = T\n\temail = t@example.com\n' >"$HOME/.gitconfig"
    for p in alpha beta; do
        git init -q "$HOME/$p" && echo "$p-file" >"$HOME/$p/$p.txt" &&
            git -C "$HOME/$p" add . && git -C "$HOME/$p" commit -qm "$p"
    done
    cd "$HOME" || bail_out "no home"

    # An interactive shell started in ~, as a login shell starts: commands on its stdin.
    out=$(printf '%s\n' 'x=5; echo "home x=$x"' 'cd alpha' 'pwd; cat alpha.txt; git status --short; echo "x=$x st=$?"' \
        'echo made > made.txt' 'cd ../beta && cat beta.txt' 'cd ~' 'pwd; echo stays' \
        | "$SBXSH" -i 2>&1)
    like "$out" 'home x=5' "$rt: the shell in ~ runs (no code directory)"
    like "$out" "sbxsh: $HOME/alpha is in project 'alpha-[0-9a-f]+': its commands run in that session's sandbox" \
        "$rt: cd alpha: the shell says it moves to alpha's session"
    like "$out" "stay in session 'scratch-" "$rt: ...and that the old shell's state stays behind"
    like "$out" $'\n'"$HOME/alpha"$'\nalpha-file\n' "$rt: pwd and alpha's file, in alpha's sandbox"
    like "$out" $'\nx= st=0\n' "$rt: a fresh shell there (x unset), \$? carried"
    unlike "$out" 'No such file or directory|not a git repository' "$rt: no cd or git error"
    like "$out" "\\[sbx:alpha-[0-9a-f]+\\] ~/alpha" "$rt: the prompt names alpha's session"
    is "$(cat "$HOME/alpha/made.txt" 2>&1)" made "$rt: a file made there is synced to the host"
    like "$out" "is in project 'beta-[0-9a-f]+'.*"$'\n'"beta-file" "$rt: cd ../beta && cat: moves again, in one line"
    like "$out" $'\n'"$HOME"$'\nstays\n' "$rt: cd ~ (no project): the session stays"
    is "$(grep -c 'is in project' <<<"$out")" 2 "$rt: ...so two moves in all"
    is "$("$SBX" ls 2>/dev/null | awk 'NR > 1 { print $1 }' | sed 's/-[0-9a-f]*$//' | sort | tr '\n' ' ')" \
        "alpha beta scratch " "$rt: three sessions, each project's its own"

    # Named by the caller: no move (the cd runs in the sandbox, which has no ~/alpha).
    out=$(printf '%s\n' 'cd alpha' 'pwd' | AGENT_SANDBOX_SESSION=cdp-named-$rt "$SBXSH" -i 2>&1)
    unlike "$out" 'is in project' "$rt: AGENT_SANDBOX_SESSION set: the shell does not move"
    like "$out" 'cd: alpha: No such file or directory' "$rt: ...and the cd is the sandbox's, as before"
    "$SBX" release --session "cdp-named-$rt" >/dev/null 2>&1

    # Not at a prompt: unchanged.
    is "$("$SBXSH" --route -c 'cd alpha' | cut -f1,2)" "sandbox	cd out of the code directories" \
        "$rt: --route (the plan of sbxsh -c) still sends that cd to the sandbox"
    like "$("$SBXSH" -c 'cd alpha' 2>&1)" 'cd: alpha: No such file or directory' \
        "$rt: sbxsh -c 'cd alpha' in ~ is unchanged"
    release_all
done
done_testing
