#!/bin/bash
# On each runtime: a bare repository's shape made in the sandbox (HEAD, objects/, refs/ and a
# config whose core.fsmonitor names a command) never reaches the host, so a person's own git
# in that directory finds the code directory's repository, not the sandbox's; the other files
# of the command arrive and a warning names the directory (sync/README.md, "No repository
# comes back"). And a 5.5 KB deep path made in the sandbox is left there with a warning: the
# other files of the round arrive, and the next command works.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "repository shapes and long paths on $rt: $why"
        continue
    fi
    setup_session "shape-$rt-$$" "$rt"
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
    cd "$CODE" || bail_out "no code dir"
    git init -q . || bail_out "git init"
    mark=$SBX_TEST_TMP/hostmark-$rt
    rm -f "$mark"

    out=$("$SBXSH" -c 'mkdir -p x/objects x/refs; echo ref: refs/heads/main > x/HEAD
        printf "[core]\n\tfsmonitor = touch '"$mark"'\n" > x/config; echo fine > good' 2>&1)
    is "$?" 0 "$rt: the command that made a repository shape succeeds"
    like "$out" "$CODE/x a git repository" "$rt: a warning names the directory ($out)"
    is "$(cat good 2>&1)" fine "$rt: the command's other file arrived"
    ok "$rt: the shape is not complete on the host (no x/refs)" test ! -e x/refs
    is "$(git -C x rev-parse --absolute-git-dir 2>&1)" "$CODE/.git" \
       "$rt: host git in x finds the code directory's repository"
    git -C x status >/dev/null 2>&1
    ok "$rt: host git status in x runs no fsmonitor from the sandbox" test ! -e "$mark"
    is "$("$SBXSH" -c 'test -d x/refs && echo kept' 2>&1)" kept "$rt: the sandbox keeps its copy"

    # 22 names of 250 bytes: a path of 5.5 KB, past the 4096 bytes a path may have.
    # (mkdir -p makes it a level at a time; a cd into it would have bash's getcwd abort
    # under gVisor.)
    out=$("$SBXSH" -c 'p=$(for i in $(seq 22); do printf "%250s/" ""; done | tr " " p)
        mkdir -p "deep/$p" && echo fine > good2' 2>&1)
    is "$?" 0 "$rt: the command that made a 5.5 KB path succeeds"
    like "$out" 'not synced: .*over the 4096-byte limit' "$rt: a warning says the long path stays in the sandbox ($out)"
    is "$(cat good2 2>&1)" fine "$rt: the round's other file arrived"
    ok "$rt: the first levels of the deep path arrived" test -d "deep/$(printf '%250s' '' | tr ' ' p)"
    out=$("$SBXSH" -c 'echo next; echo more > good3' 2>&1)
    is "$?:$out" "0:next" "$rt: the next command works"
    is "$(cat good3 2>&1)" more "$rt: and its file arrives"
    end_session
done
done_testing
