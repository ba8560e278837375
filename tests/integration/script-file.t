#!/bin/bash
# `sbxsh FILE ARGS` against `bash FILE ARGS`, on both runtimes: bash runs a script as a file,
# whether it lies in the code directory (synced) or outside it (in /tmp, in HOME): its
# syntax errors say "FILE: line N" (not "FILE: -c: line N"), BASH_SOURCE and `caller` name
# it, and $0 and the arguments are bash's.
. "$(dirname "$0")/lib.sh"

outside=$SBX_TEST_TMP/outside    # under /tmp: the sandbox's private /tmp has no such file
mkdir -p "$outside"
write_scripts() { # DIR
    printf 'echo "$0 $# $1" "${BASH_SOURCE[0]}" $LINENO\nf() { caller; }\nf\nnosuch\n' >"$1/names.sh"
    printf 'echo before\nif true; then\n' >"$1/syntax.sh"
}

for rt in runsc bwrap; do
    if ! why=$(runtime_usable "$rt"); then
        skip "script files on $rt: $why"
        continue
    fi
    setup_session "script-$rt-$$" "$rt"
    write_scripts "$CODE"
    write_scripts "$outside"
    for dir in "$CODE" "$outside"; do
        where=inside; [ "$dir" = "$outside" ] && where=outside
        for s in names.sh syntax.sh; do
            want=$(cd "$CODE" && env -i PATH="$SANDBOX_PATH" HOME="$HOME" bash "$dir/$s" a b 2>&1; echo "status=$?")
            got=$(cd "$CODE" && timeout 120 "$SBXSH" "$dir/$s" a b 2>&1; echo "status=$?")
            is "$got" "$want" "$rt: $s $where the code directory runs as bash runs it"
        done
    done
    # A script changed on the host runs as it is now, not as the sandbox last saw it.
    printf 'echo changed "${BASH_SOURCE[0]}"\n' >"$outside/names.sh"
    is "$(cd "$CODE" && timeout 120 "$SBXSH" "$outside/names.sh" 2>&1)" "changed $outside/names.sh" \
       "$rt: a script outside the code directory runs as it is now"
    end_session
done
done_testing
