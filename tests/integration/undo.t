#!/bin/bash
# sbx undo, sbx log and the audit log (issue 25, docs/undo.md), on bwrap (then runsc: the first
# case once; SBX_IT_RUNTIMES to choose): `rm -rf src` in the sandbox undone byte for byte
# (modes, symlinks) and the sandbox seeing it; an undo undone (redo); an undo refused after a
# host edit, naming the file, then forced; a sandbox `git reset --hard HEAD~3` undone; a
# journal past AGENT_SANDBOX_UNDO_MAX dropping its oldest entry and saying so; the audit log's
# host argv against what a stub git recorded; sbx log's names through the terminal filter.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../lib/user.sh"

runtimes=${SBX_IT_RUNTIMES:-bwrap runsc}

# make_src: a tree of bytes, modes and symlinks, and its fingerprint in $SBX_TEST_TMP/src.sum
make_src() {
    rm -rf src && mkdir -p src/sub src/empty
    head -c 70000 /dev/urandom >src/blob
    printf 'hello\n' >src/a && chmod 640 src/a
    printf '#!/bin/sh\necho run\n' >src/run.sh && chmod 750 src/run.sh
    ln -s a src/link && ln -s ../blob src/sub/up && printf 'x' >src/sub/'odd name'
    tree_sum >"$SBX_TEST_TMP/src.sum"
}
# tree_sum: every path of src with its type, mode, link target and content hash
tree_sum() {
    find src -printf '%p %y %m %l\n' | sort
    find src -type f -exec sha256sum {} + | sort
}

first=1
for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "undo on $rt: $why"
        continue
    fi
    setup_session "undo-$rt-$$" "$rt"
    cd "$CODE" || bail_out "no code dir"
    make_src
    "$SBXSH" -c true

    "$SBXSH" -c 'rm -rf src; echo new >added'
    ok "$rt: rm -rf src in the sandbox removed it on the host" test ! -e src
    out=$("$SBX" undo 2>&1)
    is "$?" 0 "$rt: sbx undo succeeds"
    like "$out" 'undid journal entry 1' "$rt: and says which entry it undid"
    is "$(tree_sum)" "$(cat "$SBX_TEST_TMP/src.sum")" \
       "$rt: src is back byte for byte, with its modes and symlinks"
    ok "$rt: the file the command added is gone" test ! -e added
    is "$("$SBXSH" -c 'cat src/a; readlink src/link; test -x src/run.sh && echo x; ls added 2>&1 | wc -l')" \
       "$(printf 'hello\na\nx\n1')" "$rt: the sandbox sees src back and added gone"

    if [ "$first" = 1 ]; then
        "$SBX" undo >/dev/null 2>&1
        ok "$rt: undo of the undo redoes: src gone again" test ! -e src
        is "$(cat added 2>&1)" new "$rt: and added back"
        is "$("$SBXSH" -c 'ls src 2>/dev/null | wc -l; cat added')" "$(printf '0\nnew')" \
           "$rt: the sandbox matches the redo"
        "$SBX" undo >/dev/null 2>&1
        is "$(tree_sum)" "$(cat "$SBX_TEST_TMP/src.sum")" "$rt: and undoing again restores src"

        # At a terminal it shows what it will change and asks; "n" changes nothing.
        if command -v script >/dev/null; then
            "$SBXSH" -c 'echo sandbox >src/a'
            out=$(printf 'n\n' | script -qec "$SBX undo" /dev/null 2>&1)
            like "$out" 'put back +[^ ]*/src/a' "$rt: at a terminal sbx undo lists what it will change"
            like "$out" 'Undo these changes\? \[y/N\]' "$rt: and asks"
            is "$(cat src/a)" sandbox "$rt: answered no, it changes nothing"
            "$SBX" undo >/dev/null 2>&1
        else
            skip "$rt: script(1) is missing: sbx undo at a terminal is not tried"
        fi

        # A host edit since the command: refused, naming the file; --force undoes it anyway.
        "$SBXSH" -c 'echo sandbox >src/a'
        echo host >src/a
        out=$("$SBX" undo 2>&1)
        is "$?" 1 "$rt: undo after a host edit of the same file fails"
        like "$out" 'refused.*src/a: changed on the host since' "$rt: and names the file"
        is "$(cat src/a)" host "$rt: the host's edit is kept"
        "$SBX" undo --force >/dev/null 2>&1
        is "$(cat src/a)" hello "$rt: sbx undo --force puts the file back as before the command"

        # git reset --hard HEAD~3 in the sandbox
        printf '[user]\n\tname = T\n\temail = t@example.com\n' >"$HOME/.gitconfig"
        git init -q . && git symbolic-ref HEAD refs/heads/main
        for i in 1 2 3 4; do echo "$i" >"g$i" && git add "g$i" && git commit -qm "c$i"; done
        "$SBXSH" -c 'git reset -q --hard HEAD~3'
        is "$(git log --format=%s | tr '\n' ,)" "c1," "$rt: git reset --hard HEAD~3 reached the host"
        "$SBX" undo >/dev/null 2>&1
        is "$(git log --format=%s | tr '\n' ,)" "c4,c3,c2,c1," "$rt: undone: the host's branch is back"
        is "$(git status --porcelain --untracked-files=no 2>&1)" "" "$rt: with its index and work tree clean"
        is "$(cat g4)" 4 "$rt: and the files the reset removed"
        is "$("$SBXSH" -c 'git log --format=%s | tr "\n" ,')" "c4,c3,c2,c1," \
           "$rt: the sandbox's repository matches"

        # The audit log: the host argv as executed, against what a stub git recorded.
        mkdir -p "$SBX_TEST_TMP/stub"
        printf '#!/bin/sh\nfor a in "$@"; do printf "%%s\\n" "$a"; done >"%s/argv"\nexit 3\n' \
            "$SBX_TEST_TMP" >"$SBX_TEST_TMP/stub/git"
        chmod +x "$SBX_TEST_TMP/stub/git"
        PATH=$SBX_TEST_TMP/stub:$PATH "$SBXSH" -c 'git fetch https://example.invalid/r.git main' >/dev/null 2>&1
        rec=$(grep '"type":"line"' "$AGENT_SANDBOX_STATE_DIR/audit.jsonl" | tail -1)
        got=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); c=r["parts"][0]["commands"][0]
print("\n".join(c["argv"][1:])); print(c["program"], c["cwd"], c["status"], r["status"], "HOME" in c["env"], any("=" in e for e in c["env"]))' "$rec")
        is "$got" "$(cat "$SBX_TEST_TMP/argv")
$SBX_TEST_TMP/stub/git $CODE 3 3 True False" \
           "$rt: the audit log has the host argv exactly as the program got it, its cwd, statuses and environment names (no values)"
        like "$("$SBX" log --host)" 'exit 3 +git .*fetch https://example.invalid/r.git main' \
           "$rt: sbx log --host shows it"
        "$SBXSH" -c 'git push https://me:s3cr3t@example.invalid/r.git main' >/dev/null 2>&1
        ok "$rt: a token in a URL typed in a line never reaches the audit log" \
           test "$(grep -c s3cr3t "$AGENT_SANDBOX_STATE_DIR/audit.jsonl")" = 0

        # sbx log: names from the sandbox through the terminal filter
        "$SBXSH" -c "printf x >\$'evil\\e]0;title\\a'" >/dev/null 2>&1
        log=$("$SBX" log)
        like "$log" 'added +[^ ]*/evil' "$rt: sbx log lists the file the sandbox added"
        ok "$rt: with no control byte from its name" test "$(printf '%s' "$log" | tr -d '\n' | LC_ALL=C tr -d '[:print:]' | wc -c)" = 0
        is "$("$SBX" log --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["line"][:6])')" "printf" \
           "$rt: sbx log --json: the newest command first"
    fi
    cd / && end_session
    first=0   # the next runtime: the first case only
done

# The audit log rotates past AGENT_SANDBOX_AUDIT_MAX, each record whole.
if why=$(runtime_usable bwrap); then
    setup_session "undo-audit-$$" bwrap
    export AGENT_SANDBOX_AUDIT_MAX=1k
    cd "$CODE" || bail_out "no code dir"
    for i in 1 2 3 4 5 6; do "$SBXSH" -c "echo line $i" >/dev/null; done
    ok "past AGENT_SANDBOX_AUDIT_MAX the audit log rotates" test -s "$AGENT_SANDBOX_STATE_DIR/audit.jsonl.1"
    is "$(cat "$AGENT_SANDBOX_STATE_DIR"/audit.jsonl* | python3 -c 'import json,sys
n = 0
for l in sys.stdin:
    r = json.loads(l); n += r["session"] == sys.argv[1] and r["type"] == "line"
print(n)' "$AGENT_SANDBOX_SESSION" 2>&1)" 6 "every record is whole JSON, none of the six lines lost (three old files kept)"
    unset AGENT_SANDBOX_AUDIT_MAX
    cd / && end_session
else
    skip "the audit log's rotation: $why"
fi

# The journal's bound: the oldest entry goes, and the person is told.
if why=$(runtime_usable bwrap); then
    setup_session "undo-max-$$" bwrap
    export AGENT_SANDBOX_UNDO_MAX=40k
    cd "$CODE" || bail_out "no code dir"
    for f in a b c; do head -c 16384 /dev/urandom >"$f.bin"; done
    "$SBXSH" -c true
    "$SBXSH" -c 'echo 1 >>a.bin' >/dev/null 2>&1
    "$SBXSH" -c 'echo 2 >>b.bin' >/dev/null 2>&1
    out=$("$SBXSH" -c 'echo 3 >>c.bin' 2>&1)
    like "$out" 'dropped its oldest entry, 1 .*AGENT_SANDBOX_UNDO_MAX' \
         "a journal past AGENT_SANDBOX_UNDO_MAX drops its oldest entry and says so"
    out=$("$SBX" undo --to 1 2>&1)
    like "$out" 'no journal entry 1' "the dropped entry can no longer be undone"
    "$SBX" undo 2 >/dev/null 2>&1
    is "$(wc -c <b.bin) $(wc -c <c.bin)" "16384 16384" "the entries kept still undo"
    cd / && end_session
else
    skip "the journal's bound: $why"
fi
# As an ordinary user, in a fresh project whose name has a space: the default state directory
# (~/.local/state/sbxsh), the journal and the audit log under it.
if ! why=$(runtime_usable bwrap); then
    skip "undo as an ordinary user: $why"
elif ! test_user_add sbxundo "$SBX"; then
    skip "undo as an ordinary user: $TEST_USER_WHY"
else
    trap 'end_session; test_user_del; tap_cleanup' EXIT
    out=$(as_test_user "mkdir -p 'my proj/src' && cd 'my proj' && git init -q . && printf 'x\n' >src/f &&
        export AGENT_SANDBOX_LOCAL_RUNTIME=bwrap PATH=$(dirname "$SBXSH"):\$PATH &&
        '$SBXSH' -c 'rm -rf src' && '$SBX' undo --yes >/dev/null 2>&1 && cat src/f &&
        ls ~/.local/state/sbxsh/audit.jsonl >/dev/null && '$SBX' release >/dev/null 2>&1 && echo released" 2>&1)
    is "$out" "$(printf 'x\nreleased')" "as an ordinary user, in 'my proj': rm -rf src undone, the audit log in ~/.local/state/sbxsh"
    test_user_del
fi
done_testing
