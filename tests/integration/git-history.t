#!/bin/bash
# A pull never destroys the host's git history (issue 8, item 5), on each runtime: after
# `rm -rf .git`, `rm -rf .git/objects` or `rm .git/HEAD` in the sandbox the host's
# repository still has every commit (git log, git fsck) and the sandbox gets it back; after
# `git branch -D x` in the sandbox the branch is gone on the host but its commit is
# recoverable from .git/sbxsh-deleted-refs (sync/README.md); a sandbox `git gc` is neither
# noted nor undone. And (item 6) a repository planted under .git/refs never reaches the host.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}

# host_history NAME: git log of every branch, and fsck, on the host.
host_history() {
    is "$(git log --format=%s main 2>&1 | tr '\n' ,)" "c3,c2,c1," "$1: host git log main shows every commit"
    is "$(git log --format=%s x 2>&1 | tr '\n' ,)" "x1,c3,c2,c1," "$1: and branch x's unpushed commit"
    out=$(git fsck --no-dangling 2>&1)
    is "$?:$out" "0:" "$1: host git fsck is clean"
}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "git history on $rt: $why"
        continue
    fi
    setup_session "gh-$rt-$$" "$rt"
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
    cd "$CODE" || bail_out "no code dir"
    printf '[user]\n\tname = T\n\temail = t@example.com\n' > "$HOME/.gitconfig"
    git init -q . && git symbolic-ref HEAD refs/heads/main
    for i in 1 2 3; do echo "$i" > "f$i" && git add "f$i" && git commit -qm "c$i"; done
    git checkout -q -b x && echo x > fx && git add fx && git commit -qm x1 && git checkout -q main
    xsha=$(git rev-parse x)

    for cmd in 'rm -rf .git' 'rm -rf .git/objects' 'rm .git/HEAD'; do
        out=$("$SBXSH" -c "$cmd; echo done" 2>&1)
        like "$out" 'never deletes git history' "$rt: $cmd: the user is told the host kept its history"
        host_history "$rt: $cmd"
        is "$(cat .git/HEAD 2>&1)" "ref: refs/heads/main" "$rt: $cmd: host HEAD is unchanged"
        # The next command brings the host's repository back to the sandbox.
        is "$("$SBXSH" -c 'git log --format=%s x | tr "\n" ,' 2>&1)" "x1,c3,c2,c1," \
           "$rt: $cmd: the sandbox has its repository back"
    done

    # git gc in the sandbox: refs move into packed-refs (nothing is noted), loose objects are
    # pruned there and stay pruned (the host keeps them until its own gc).
    out=$("$SBXSH" -c 'git gc -q --prune=now && git count-objects | cut -d" " -f1' 2>&1)
    is "$out" 0 "$rt: git gc in the sandbox leaves no loose object there"
    host_history "$rt: after git gc in the sandbox"
    ok "$rt: git gc: no ref is noted as deleted" test ! -e .git/sbxsh-deleted-refs
    is "$("$SBXSH" -c 'git count-objects | cut -d" " -f1' 2>&1)" 0 \
       "$rt: git gc: the pruned objects are not pushed back to the sandbox"

    # A real ref deletion applies on the host, and the old value is noted.
    out=$("$SBXSH" -c 'git branch -D x' 2>&1)
    like "$out" "deleted ref refs/heads/x .*$xsha" "$rt: git branch -D x: the user is told the old value"
    ok "$rt: git branch -D x: the branch is gone on the host" \
        test -z "$(git rev-parse -q --verify refs/heads/x)"
    is "$(git log --format=%s main | tr '\n' ,)" "c3,c2,c1," "$rt: git branch -D x: main is untouched"
    ok "$rt: git branch -D x: its reflog is kept" test -s .git/logs/refs/heads/x
    noted=$(awk '$2 == "refs/heads/x" { print $1 }' .git/sbxsh-deleted-refs 2>&1)
    is "$noted" "$xsha" "$rt: git branch -D x: .git/sbxsh-deleted-refs has its old value"
    git branch x "$noted" 2>&1
    host_history "$rt: recovered with git branch x <noted id>"

    # A packed branch (git pack-refs on the host), deleted in the sandbox.
    git pack-refs --all
    "$SBXSH" -c 'git branch -D x' >/dev/null 2>&1
    ok "$rt: a packed branch deleted in the sandbox is gone on the host" \
        test -z "$(git rev-parse -q --verify refs/heads/x)"
    is "$(awk '$2 == "refs/heads/x" { print $1 }' .git/sbxsh-deleted-refs | tail -1)" "$xsha" \
       "$rt: and its old value is noted"
    # A whole repository planted under .git/refs/fake (issue 8, item 6) never reaches the host.
    "$SBXSH" -c 'f=.git/refs/fake; mkdir -p $f/hooks $f/objects/info $f/refs/heads .git/objects/info .git/refs/heads
        echo "ref: refs/heads/main" > $f/HEAD
        printf "[remote \"o\"]\n\treceivepack = touch /tmp/pwned\n" > $f/config
        printf "#!/bin/sh\ntouch /tmp/pwned\n" > $f/hooks/pre-push; chmod +x $f/hooks/pre-push
        echo ../.. > $f/commondir; echo "#!/bin/sh" > .git/refs/heads/notaref
        echo /tmp > .git/objects/info/alternates; echo junk > .git/objects/junk' >/dev/null 2>&1
    for f in refs/fake/HEAD refs/fake/config refs/fake/hooks refs/fake/objects refs/fake/commondir \
             refs/heads/notaref objects/info/alternates objects/junk; do
        ok "$rt: a planted .git/$f does not reach the host" test ! -e ".git/$f"
    done
    ok "$rt: nothing executable came into the host's .git" \
        test -z "$(find .git -path .git/hooks -prune -o -type f -perm /111 -print)"
    end_session
done
done_testing
