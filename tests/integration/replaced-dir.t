#!/bin/bash
# A directory replaced in the sandbox (rm -r, then mkdir at the same name: what git checkout,
# stash and reset do) while a process still holds the old one: the files made in the new one
# come back to the host, in that command and the next. The old directory's watch outlived it
# (its IN_IGNORED comes when the last holder lets go), and the new one was never walked nor
# watched: nothing made in it was ever synced (found by git-fsmonitor.t).
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}
for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "replaced directory on $rt: $why"
        continue
    fi
    setup_session "repl-$rt-$$" "$rt"
    cd "$CODE" || bail_out "no code dir"
    rm -rf q && mkdir q && echo a >q/a
    "$SBXSH" -c true
    "$SBXSH" -c '(cd q && exec sleep 30) & rm -rf q; mkdir q; echo b >q/b'
    is "$(cd q && printf '%s ' *)" "b " "$rt: the file made in the replaced directory is on the host"
    "$SBXSH" -c 'echo c >q/c'
    is "$(cd q && printf '%s ' *)" "b c " "$rt: and so is one the next command made there"
    cd / && end_session
done
done_testing
