#!/bin/bash
# URL secrets in .git stay on the host (issue 20, attack 5), on each runtime: a host
# `git pull https://user:TOKEN@host/r` writes the URL into the reflogs and FETCH_HEAD; the
# sandbox gets those files without the secret (sync/gitcred.h), the host's files are not
# changed, and a sandbox commit comes back as new reflog entries after the host's own,
# which keep their URLs: no line lost, no conflict copy.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}
URL=https://user:s3cr3t@example.invalid/r

# A reflog line as a host `git pull URL` writes it: old id, new id, who, when, message.
pull_line() {
    printf '%s %s T <t@example.com> 1700000000 +0000\tpull %s: Fast-forward\n' "$1" "$2" "$URL"
}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "URL secrets on $rt: $why"
        continue
    fi
    setup_session "gs-$rt-$$" "$rt"
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
    cd "$CODE" || bail_out "no code dir"
    printf '[user]\n\tname = T\n\temail = t@example.com\n' > "$HOME/.gitconfig"
    git init -q . && git symbolic-ref HEAD refs/heads/main
    echo 1 > f1 && git add f1 && git commit -qm c1
    c1=$(git rev-parse HEAD)
    # What a host pull with a token in its URL leaves behind.
    pull_line "$c1" "$c1" >> .git/logs/HEAD
    pull_line "$c1" "$c1" >> .git/logs/refs/heads/main
    printf "%s\t\tbranch 'main' of %s\n" "$c1" "$URL" > .git/FETCH_HEAD
    cp .git/logs/HEAD "$SBX_TEST_TMP/head.before"
    cp .git/logs/refs/heads/main "$SBX_TEST_TMP/main.before"
    cp .git/FETCH_HEAD "$SBX_TEST_TMP/fetch.before"

    out=$("$SBXSH" -c 'grep -r s3cr3t .git; cat .git/FETCH_HEAD; tail -n1 .git/logs/HEAD' 2>&1)
    unlike "$out" 's3cr3t' "$rt: the sandbox's .git has no URL secret (grep -r finds none)"
    like "$out" "branch 'main' of https://example.invalid/r" "$rt: FETCH_HEAD is there, its URL without the secret"
    like "$out" 'pull https://example.invalid/r: Fast-forward' "$rt: so is the reflog line"
    ok "$rt: the host's reflog is unchanged" cmp -s .git/logs/HEAD "$SBX_TEST_TMP/head.before"
    ok "$rt: so is the host's FETCH_HEAD" cmp -s .git/FETCH_HEAD "$SBX_TEST_TMP/fetch.before"

    # A commit in the sandbox: its reflog entries come back after the host's own lines.
    out=$("$SBXSH" -c 'echo 2 > f2 && git add f2 && git commit -qm c2 && echo committed' 2>&1)
    is "$out" committed "$rt: a commit in the sandbox, with no warning"
    is "$(git log --format=%s | tr '\n' ,)" "c2,c1," "$rt: the commit reached the host"
    for f in HEAD:head refs/heads/main:main; do
        log=.git/logs/${f%%:*} before=$SBX_TEST_TMP/${f##*:}.before
        n=$(wc -c < "$before")
        ok "$rt: $log keeps the host's lines whole, secret included" \
            cmp -s -n "$n" "$log" "$before"
        like "$(tail -c +"$((n + 1))" "$log")" 'commit: c2' "$rt: $log then has the sandbox's new entry"
        is "$(wc -l < "$log")" "$(($(wc -l < "$before") + 1))" "$rt: $log: one line more, none lost"
    done
    is "$(find . -name '*sbx-conflict*' | wc -l)" 0 "$rt: no conflict copy anywhere"

    # Another host pull with a secret, then another sandbox commit: still none in the
    # sandbox, and the host still loses nothing.
    c2=$(git rev-parse HEAD)
    pull_line "$c2" "$c2" >> .git/logs/HEAD
    cp .git/logs/HEAD "$SBX_TEST_TMP/head.before"
    out=$("$SBXSH" -c 'grep -rc s3cr3t .git | grep -v ":0$"; grep -c "pull https://example.invalid/r" .git/logs/HEAD; echo 3 > f3 && git add f3 && git commit -qm c3' 2>&1)
    is "$out" 2 "$rt: a later host line arrives without its secret too"
    n=$(wc -c < "$SBX_TEST_TMP/head.before")
    ok "$rt: after a second sandbox commit the host's reflog is still whole" \
        cmp -s -n "$n" .git/logs/HEAD "$SBX_TEST_TMP/head.before"
    is "$(grep -c s3cr3t .git/logs/HEAD)" 2 "$rt: both host lines keep their URL"
    like "$(tail -n1 .git/logs/HEAD)" 'commit: c3' "$rt: and the sandbox's entry follows"
    is "$(find . -name '*sbx-conflict*' | wc -l)" 0 "$rt: still no conflict copy"

    # A git command typed with the secret in its URL runs nowhere: the sandbox would get
    # it, and host git would write it into the reflog again.
    cp .git/logs/HEAD "$SBX_TEST_TMP/head.before"
    out=$("$SBXSH" -c "git pull $URL; echo status=\$?" 2>&1)
    like "$out" "sbxsh: line 1: git pull: not run: a password or token in a URL.*credential helper" \
        "$rt: git pull with a password in the URL: refused, saying to use a credential helper"
    like "$out" "status=2" "$rt: ...with status 2, and the line goes on"
    unlike "$out" 's3cr3t' "$rt: ...without repeating the secret"
    ok "$rt: ...and nothing ran (the reflog is unchanged)" cmp -s .git/logs/HEAD "$SBX_TEST_TMP/head.before"
    # In the background, after a redefinition, inside an eval, in a line the router sends
    # whole to the sandbox (a CR): refused on the host all the same, never the sandbox's
    # (which would try it: "Could not resolve host").
    for line in "git pull $URL & wait" "f() { :; }; git pull $URL" "eval 'git pull $URL'" \
                "git pull $URL"$'\r'; do
        out=$("$SBXSH" -c "$line; echo after" 2>&1)
        like "$out" "git pull: not run: a password or token in a URL" "$rt: $(printf %q "${line/$URL/URL}"): refused"
        unlike "$out" 's3cr3t|resolve host' "$rt: ...never tried in the sandbox, the secret not repeated"
    done
    end_session
done
done_testing
