#!/bin/bash
# A cd into another project moves the shell to that project's own session (cli/line.c,
# move_to_project): a login shell in ~ (no code directory) reaches the repositories under
# it, and one project's shell reaches the next, as `sbxsh -c` started there would. At a
# prompt the shell says so; `sbxsh -c 'cd proj && ...'` from ~ (ssh HOST CMD, su - USER -c
# CMD) moves silently, as bash would just run it there, and --route shows it. A cd out of
# every project keeps the session; a session or code directories named by the caller never
# move. `sbx status` and `sbx release` typed after such a cd are about the session the
# shell moved to.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-bwrap runsc}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "cd into a project on $rt: $why"
        continue
    fi
    setup_home_session "cdp-$rt-$$" "$rt"
    trap 'release_all; tap_cleanup' EXIT
    for p in alpha beta; do
        git init -q "$HOME/$p" && echo "$p-file" >"$HOME/$p/$p.txt" &&
            git -C "$HOME/$p" add . && git -C "$HOME/$p" commit -qm "$p"
    done
    cd "$HOME" || bail_out "no home"

    # An interactive shell started in ~, as a login shell starts: commands on its stdin.
    # sbx typed there (a host part) is about the session the shell moved to: its status,
    # and a release after which the next command starts a new sandbox in that same session.
    out=$(printf '%s\n' 'x=5; echo "home x=$x"' 'cd alpha' 'pwd; cat alpha.txt; git status --short; echo "x=$x st=$?"' \
        'sbx status | grep "^session:"' \
        'echo made > made.txt' 'cd ../beta && cat beta.txt' 'y=1; sbx release' \
        'cat beta.txt; pwd; echo "y=[$y]"' 'sbx status | grep "^session:"' 'cd ~' 'pwd; echo stays' \
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
    like "$out" $'\nsession: +alpha-[0-9a-f]+\n' "$rt: sbx status after cd alpha names alpha's session"
    like "$out" "sbxsh: session 'beta-[0-9a-f]+' released: the next command starts a new sandbox" \
        "$rt: sbx release after cd ../beta releases beta's session"
    like "$out" "released: the next command .*"$'\nbeta-file\n'"$HOME/beta"$'\ny=\\[\\]\n.*\nsession: +beta-[0-9a-f]+\n' \
        "$rt: ...then a command runs there, in a new sandbox (y unset) of beta's session, at ~/beta"
    like "$out" $'\n'"$HOME"$'\nstays\n' "$rt: cd ~ (no project): the shell is in ~ (the scratch session)"
    is "$(grep -c 'is in project' <<<"$out")" 2 "$rt: ...so two moves in all"
    is "$("$SBX" ls 2>/dev/null | awk 'NR > 1 { print $1 }' | sed 's/-[0-9a-f]*$//' | sort | tr '\n' ' ')" \
        "alpha beta scratch " "$rt: three sessions, each project's its own"

    # cd - after a move goes back, as after any cd (the new shell has OLDPWD)
    out=$(printf '%s\n' 'cd alpha' 'cd - >/dev/null; pwd; echo "old=$OLDPWD"' | "$SBXSH" -i 2>&1)
    unlike "$out" 'OLDPWD not set' "$rt: cd - after a move into a project: no 'OLDPWD not set'"
    like "$out" $'\n'"$HOME"$'\nold='"$HOME/alpha"$'\n' "$rt: ...it goes back to ~, OLDPWD the project"

    # Named by the caller: no move (the cd runs in the sandbox, which has no ~/alpha).
    out=$(printf '%s\n' 'cd alpha' 'pwd' | AGENT_SANDBOX_SESSION=cdp-named-$rt "$SBXSH" -i 2>&1)
    unlike "$out" 'is in project' "$rt: AGENT_SANDBOX_SESSION set: the shell does not move"
    like "$out" 'cd: alpha: No such file or directory' "$rt: ...and the cd is the sandbox's, as before"
    "$SBX" release --session "cdp-named-$rt" >/dev/null 2>&1

    # Not at a prompt: what `ssh HOST 'cd alpha && ...'` and `su - USER -c '...'` run.
    is "$("$SBXSH" --route -c 'cd alpha && make' | cut -f1,2)" "host	cd: into another project (the shell moves to its session)
sandbox	make is not a host command" "$rt: --route -c: the cd into a project runs on the host"
    out=$("$SBXSH" -c 'cd alpha && cat alpha.txt && echo from-c > c.txt && git log -1 --format=%s' 2>&1)
    is "$out" "alpha-file
alpha" "$rt: sbxsh -c 'cd alpha && ...' in ~ runs the rest in alpha's session, silently as bash"
    is "$(cat "$HOME/alpha/c.txt" 2>&1)" from-c "$rt: ...and what it makes reaches the host"
    is "$("$SBXSH" -l -c 'cd beta && pwd && cat beta.txt' 2>&1)" "$HOME/beta
beta-file" "$rt: a login shell's -c (su - USER -c 'cd beta && ...') likewise"
    like "$(AGENT_SANDBOX_SESSION=cdp-named-c-$rt "$SBXSH" -c 'cd alpha' 2>&1)" \
        'cd: alpha: No such file or directory' "$rt: -c with a named session: the cd stays the sandbox's"
    "$SBX" release --session "cdp-named-c-$rt" >/dev/null 2>&1
    release_all
done
done_testing
