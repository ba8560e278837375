#!/bin/bash
# sbxsh end to end on each runtime: the README quick start, the agent's real
# invocation shape, streams and statuses, signals, stdin mode, mixed lines
# with a real `git push` from the host, and the sandbox's changes coming back.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "sbxsh on $rt: $why"
        continue
    fi
    setup_session "it-$rt-$$" "$rt"
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
    cd "$CODE" || bail_out "no code dir"

    # The README quick start.
    out=$("$SBXSH" -c 'cat /proc/version' 2>&1)
    if [ "$rt" = runsc ]; then
        like "$out" 'gVisor|4\.4\.0' "$rt: quick start shows the sandbox's kernel (gVisor)"
    else
        like "$out" '^Linux version' "$rt: quick start shows a kernel version"
    fi

    # A command text that reads as an option, after `--`: a command, as bash runs it (127)
    out=$("$SBXSH" -c -- '--version' 2>&1); rc=$?
    is "$rc:${out##*: }" "127:command not found" "$rt: sbxsh -c -- --version runs the command --version, as bash"

    # Streams stay separate; statuses are bash's.
    "$SBXSH" -c 'echo out; echo err >&2; exit 3' >"$SBX_TEST_TMP/o" 2>"$SBX_TEST_TMP/e"
    is "$?:$(cat "$SBX_TEST_TMP/o"):$(cat "$SBX_TEST_TMP/e")" "3:out:err" "$rt: stdout, stderr and status"
    # Output written after the shell exited (a process substitution, a background job)
    # arrives, as with bash; a background process that keeps stdout open does not hold
    # the return (bash would wait for it; a server started with & must not block).
    is "$("$SBXSH" -c '{ echo 1; echo 2; } > >(tac)' | cat)" "2
1" "$rt: a process substitution's output after the shell exits arrives"
    got=0
    for _ in $(seq 20); do [ "$("$SBXSH" -c 'echo x &' | cat)" = x ] && got=$((got + 1)); done
    is "$got" 20 "$rt: a background echo's output arrives every time (20 of 20)"
    out=$(timeout 20 "$SBXSH" -c 'sleep 30 & echo started' | cat; echo "rc=${PIPESTATUS[0]}")
    is "$out" "started
rc=0" "$rt: a background process holding stdout does not hold the command's return"
    # One file for both (`>log 2>&1`, a pipe, a terminal): the order bash writes them in.
    mixed='for i in $(seq 200); do echo out$i; echo err$i >&2; done; ls /nonexistent-x; echo end'
    ref_bash "$mixed" >"$SBX_TEST_TMP/want" 2>&1
    "$SBXSH" -c "$mixed" >"$SBX_TEST_TMP/got" 2>&1
    ok "$rt: >log 2>&1 keeps stdout and stderr in the order written" \
        cmp -s "$SBX_TEST_TMP/want" "$SBX_TEST_TMP/got"
    is "$("$SBXSH" -c "$mixed" 2>&1 | md5sum)" "$(md5sum <"$SBX_TEST_TMP/want")" \
       "$rt: so does 2>&1 into a pipe"
    is "$(printf '%s\n' "$mixed" 'echo x >&2; echo y' | "$SBXSH" 2>&1 | tail -4 | tr '\n' ,)" \
       "$(printf '%s\n' "$mixed" 'echo x >&2; echo y' | ref_bash 'exec bash' 2>&1 | tail -4 | tr '\n' ,)" \
       "$rt: and stdin mode"
    is "$("$SBXSH" -c "$mixed" 2>/dev/null | tail -1)" end "$rt: apart, stdout alone"
    is "$("$SBXSH" -c "$mixed" 2>&1 >/dev/null | head -1)" err1 "$rt: and stderr alone"
    "$SBXSH" -c 'nosuch-command-xyz' 2>/dev/null; is $? 127 "$rt: command not found is 127"
    rc=$("$SBXSH" -c 'kill -TERM $$'; echo $?) # $(): no "Terminated" notice from this shell
    is "$rc" 143 "$rt: killed by SIGTERM looks like bash (143)"
    is "$(printf 'a\nb\n' | "$SBXSH" -c 'sort -r' | tr '\n' ,)" "b,a," "$rt: stdin is forwarded"
    is "$(head -c 300000 /dev/urandom | tee "$SBX_TEST_TMP/bin" | "$SBXSH" -c 'cat' | md5sum)" \
       "$(md5sum < "$SBX_TEST_TMP/bin")" "$rt: binary data round trip intact"
    is "$("$SBXSH" -c 'yes | head -c 50000000' | wc -c)" 50000000 "$rt: 50 MB of output"
    "$SBXSH" -c 'yes' | head -1 >/dev/null; is "${PIPESTATUS[0]}" 141 "$rt: a closed pipe gives SIGPIPE (141)"
    is "$("$SBXSH" -c 'echo "$0 $1 $#"' name one)" "name one 1" "$rt: -c NAME ARGS set \$0 and \$1"
    is "$("$SBXSH" -e -o pipefail -c 'false | true; echo not reached')" "" "$rt: -e and -o pipefail pass through"
    is "$("$SBXSH" -O extglob -c 'shopt -q extglob && echo on')" "on" "$rt: -O extglob passes through"

    # Files: created in the sandbox, on the host afterwards, and the other way round.
    "$SBXSH" -c 'mkdir -p made/in && echo sandbox > made/in/file && chmod +x made/in/file'
    is "$(cat made/in/file 2>&1)" sandbox "$rt: a file made in the sandbox is on the host"
    ok "$rt: with its exec bit" test -x made/in/file
    echo host > fromhost
    is "$("$SBXSH" -c 'cat fromhost')" host "$rt: a file made on the host is in the sandbox"
    rm fromhost
    is "$("$SBXSH" -c 'ls fromhost 2>&1 >/dev/null | wc -l')" 1 "$rt: a deletion on the host reaches the sandbox"

    # The cwd is the same absolute path inside.
    mkdir -p sub/dir
    is "$(cd sub/dir && "$SBXSH" -c 'pwd')" "$CODE/sub/dir" "$rt: cwd is the same absolute path"
    out=$(cd / && "$SBXSH" -c 'pwd' 2>&1); rc=$?
    is "$rc" 125 "$rt: a cwd outside the code directories is sbxsh's error (125)"
    like "$out" 'outside the code directories' "$rt: ... and says so"

    # SIGINT to sbxsh reaches the sandbox; the sandbox's changes still come back.
    "$SBXSH" -c 'echo partial > interrupted; sleep 30; echo no > interrupted' &
    pid=$!
    for _ in $(seq 100); do [ -f interrupted ] && break; sleep 0.1; done
    sleep 0.5
    kill -INT $pid
    wait $pid; rc=$?
    is "$rc" 130 "$rt: SIGINT ends the sandbox command like bash (130)"
    is "$(cat interrupted 2>&1)" partial "$rt: the interrupted command's changes came back"

    # Background processes outlive the command and keep running in the session.
    "$SBXSH" -c '(echo $BASHPID > ticker.pid; while :; do date +%s%N > ticker; sleep 0.2; done) >/dev/null 2>&1 &'
    a=
    for _ in $(seq 50); do a=$("$SBXSH" -c 'cat ticker 2>/dev/null'); [ -n "$a" ] && break; sleep 0.1; done
    sleep 1; b=$("$SBXSH" -c 'cat ticker')
    ok "$rt: a background process keeps running between commands" test -n "$a" -a "$a" != "$b"
    "$SBXSH" -c 'kill $(cat ticker.pid); rm -f ticker ticker.pid'

    # stdin mode: commands run as read; variables, functions, options and cwd persist.
    out=$(printf '%s\n' 'x=41' 'f() { echo $((x+1)); }' 'cd sub' 'set -o pipefail' \
        'f; pwd; shopt -qo pipefail && echo pf' | "$SBXSH" 2>&1)
    is "$out" "$(printf '42\n%s\npf' "$CODE/sub")" "$rt: stdin mode keeps state between commands"
    out=$(printf 'echo a\nexit 7\necho b\n' | "$SBXSH"); rc=$?
    is "$rc:$out" "7:a" "$rt: stdin mode: exit ends the shell with its status"
    out=$(printf 'echo a\nif fi\necho b\n' | "$SBXSH" 2>&1); rc=$?
    is "$rc" 2 "$rt: stdin mode: a syntax error ends with 2"
    like "$out" "syntax error near unexpected token .fi'" "$rt: ... with bash's message"

    # The agent's real invocation shape: snapshot pushed as a task file, the cwd
    # file synced back from the sandbox's private /tmp.
    snap=$SBX_TEST_TMP/home/.snapshots/snapshot-bash.sh
    mkdir -p "$(dirname "$snap")"
    printf 'alias ll="ls -l"\nexport SNAPVAR=from-snapshot\n' > "$snap"
    cwdfile=/tmp/sbxsh-it-$$-$rt-cwd
    rm -f "$cwdfile"
    out=$(cd sub && AGENT_SANDBOX_TASK_FILES=$snap AGENT_SANDBOX_SYNC_PATHS="/tmp/sbxsh-it-$$-*-cwd" \
          "$SBXSH" -c -l "source $snap && eval 'cd dir && echo \$SNAPVAR' < /dev/null && pwd -P >| $cwdfile" 2>&1)
    is "$out" from-snapshot "$rt: agent shape: the snapshot was sourced in the sandbox"
    is "$(cat "$cwdfile" 2>&1)" "$CODE/sub/dir" "$rt: agent shape: the cwd file came back to the host"
    rm -f "$cwdfile"

    # Mixed lines: a commit made in the sandbox, pushed from the host.
    if start_git_daemon; then
        git init -q --bare "$GITROOT/remote-$rt.git"
        GITURL=$GITBASE/remote-$rt.git
        # The repository is the code directory itself: a nested repository's .git
        # never comes back from the sandbox (the pull keeps every nested .git as the host has it).
        rm -rf .git && git init -q .
        printf '[user]\n\tname = T\n\temail = t@example.com\n' > "$HOME/.gitconfig"
        git remote add origin "$GITURL"
        "$SBXSH" --route -c 'echo v1 > f && git add f && git commit -qm one && git push -q origin HEAD:main' \
            > "$SBX_TEST_TMP/route"
        is "$(cut -f1 "$SBX_TEST_TMP/route" | tr '\n' ,)" "sandbox,sandbox,sandbox,host," \
           "$rt: mixed line routes the commit to the sandbox and the push to the host"
        out=$("$SBXSH" -c 'echo v1 > f && git add f && git commit -qm one && git push -q origin HEAD:main && echo pushed' 2>&1)
        is "$out" pushed "$rt: sandbox commit then host push in one line"
        is "$(git --git-dir="$GITROOT/remote-$rt.git" log --format=%s main 2>&1)" one "$rt: the remote has the sandbox's commit"
        out=$("$SBXSH" -c 'git push -q origin HEAD:refs/heads/nope/../bad; echo "status $?"' 2>&1)
        like "$out" 'status [1-9]' "$rt: a failing host git push gives its status to the next part"
        out=$("$SBXSH" -c 'false && git push origin HEAD:main || echo skipped' 2>&1)
        is "$out" skipped "$rt: && and || across sandbox and host parts"
        out=$(cd sub && "$SBXSH" -c 'cd .. && git ls-remote origin | grep -c refs/heads/main' 2>&1)
        is "$out" 1 "$rt: a host cd carried into a host pipeline with a filter"
        out=$("$SBXSH" -c 'x=5; git fetch -q origin; echo "x=$x"' 2>&1)
        is "$out" x=5 "$rt: sandbox state survives a host part in between"
        stop_git_daemon
    else
        skip "$rt: git daemon could not start on loopback"
    fi
    end_session
done
done_testing
