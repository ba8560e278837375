#!/bin/bash
# Issue 8, item 1: a host part runs exactly where it was checked, while
# another client of the same session applies pulls (agents run tool calls in
# parallel). The sandbox writes its own copy's .git/config (receivepack) and
# a pre-push hook there (neither comes back to the host: that is the point),
# and there is a host directory with a hostile .git (the class: any directory
# whose git config the sandbox chose). Client A keeps turning `sub` into a
# symlink to those and back into a directory; client B keeps running
# `git -C sub push origin HEAD:refs/heads/tN` (or `cd sub && git push ...`),
# which goes to the host when `sub` is a directory at its check. Host git
# must never run there: the marker those configs touch never appears, and no
# host git hangs (every call is bounded by timeout). On main before the fix
# the marker appeared after a few pushes, on both runtimes.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}
iterations=${SBX_RACE_ITERATIONS:-60}
command -v git >/dev/null || skip_all "git not installed (make deps)"
command -v timeout >/dev/null || skip_all "timeout (coreutils) not installed"

export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com \
       GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "host race on $rt: $why"
        continue
    fi
    setup_session "race-$rt-$$" "$rt"
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
    cd "$CODE" || bail_out "no code dir"
    W=$SBX_TEST_TMP/world-$rt
    MARK=$W/MARKER
    mkdir -p "$W"
    printf '[init]\n\tdefaultBranch = main\n' >"$HOME/.gitconfig"

    # The remote: a bare repository on the host, outside the code directory
    # (a local remote the host's own config names: allowed on the host).
    git init -q --bare "$W/remote.git"
    # shellcheck disable=SC2015 # any failure of the chain bails out
    git init -q . && git commit -q --allow-empty -m one && git remote add origin "$W/remote.git" &&
        git push -q origin HEAD:main || bail_out "cannot set up the repository"
    # A host directory with a hostile .git, as the sandbox's copy of the code has.
    git init -q "$W/evil" && git -C "$W/evil" commit -q --allow-empty -m evil &&
        git -C "$W/evil" remote add origin "$W/remote.git" &&
        git -C "$W/evil" config remote.origin.receivepack "touch '$MARK'; git-receive-pack"
    printf '#!/bin/sh\ntouch "%s"\ncat >/dev/null\n' "$MARK" >"$W/evil/.git/hooks/pre-push"
    chmod +x "$W/evil/.git/hooks/pre-push"

    # In the sandbox: its own copy's config and hook; `sub` a directory.
    out=$(timeout 120 "$SBXSH" -c "git config remote.origin.receivepack 'touch $MARK; git-receive-pack' &&
        printf '#!/bin/sh\ntouch $MARK\ncat >/dev/null\n' > .git/hooks/pre-push &&
        chmod +x .git/hooks/pre-push && mkdir -p sub && echo ready" 2>&1)
    is "$out" ready "$rt: the sandbox wrote its copy's receivepack and pre-push hook"
    is "$(git config remote.origin.receivepack)" "" "$rt: the sandbox's config did not come back"
    ok "$rt: nor its hook" test ! -e .git/hooks/pre-push
    ok "$rt: sub came back as a directory" test -d sub
    # Where the sandbox's copy of the code is on the host, if it is there.
    copy=$AGENT_SANDBOX_STATE_DIR/$AGENT_SANDBOX_SESSION/code/0

    # Client A: flips sub between a symlink and a directory.
    (
        for i in $(seq "$iterations"); do
            if [ $((i % 2)) = 0 ]; then target=$copy; else target=$W/evil; fi
            timeout 60 "$SBXSH" -c "rm -rf sub; ln -s '$target' sub" >/dev/null 2>&1
            echo $? >>"$W/a.status"
            timeout 60 "$SBXSH" -c 'rm -f sub; mkdir -p sub' >/dev/null 2>&1
            echo $? >>"$W/a.status"
            [ -e "$MARK" ] && break
        done
    ) &
    a=$!
    # Client B: pushes through `git -C sub` (and `cd sub && git push`).
    (
        for i in $(seq "$iterations"); do
            # both ways of naming the directory: git's -C and a host cd before git
            if [ $((i % 3)) = 0 ]; then line="cd sub && git push -q origin HEAD:refs/heads/t$i"
            else line="git -C sub push -q origin HEAD:refs/heads/t$i"; fi
            timeout 60 "$SBXSH" -c "$line" >>"$W/b.log" 2>&1
            echo $? >>"$W/b.status"
            [ -e "$MARK" ] && break
        done
    ) &
    b=$!
    wait $a $b

    ok "$rt: host git never ran with the sandbox's config or hooks (no marker)" test ! -e "$MARK"
    is "$(grep -c '^124$' "$W/a.status" "$W/b.status" | awk -F: '{ n += $2 } END { print n }')" 0 \
        "$rt: no command of either client hung (all ended before their timeout)"
    arrived=$(git --git-dir="$W/remote.git" for-each-ref --format=x 'refs/heads/t*' | wc -l)
    ok "$rt: pushes ran on the host while sub flipped ($arrived of $iterations arrived)" \
        test "$arrived" -gt 0
    [ -e "$MARK" ] && diag "$(tail -20 "$W/b.log")"
    ok "$rt: the host's own config is untouched" test -z "$(git config remote.origin.receivepack)"
    end_session
done
done_testing
