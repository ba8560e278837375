#!/bin/bash
# sbxsh's command line as bash's: options, usage errors, -n in its three input
# modes, scripts that are missing or binary, --version and --help. Nothing
# here needs a sandbox.
. "$(dirname "$0")/../lib/tap.sh"
cd "$SBX_TEST_TMP" || bail_out "no scratch directory"

# run PROG ARGS...: sets out (stdout+stderr, the program's name made "P") and rc
run() {
    local prog=$1; shift
    out=$("$prog" "$@" 2>&1); rc=$?
    out=${out//$prog/P}; out=${out//bash/P}; out=${out//sbxsh/P}
}
same() { # NAME ARGS...: sbxsh and bash give the same output and status
    local name=$1; shift
    run bash "$@"; local bout=$out brc=$rc
    run "$SBXSH" "$@"
    is "$rc:$out" "$brc:$bout" "$name"
}

printf 'echo a\nif fi\n' > bad.sh
printf 'echo a\0b\n' > binary.sh
printf 'echo a\n' > good.sh

same "-n on a script with a syntax error" -n bad.sh
same "-n on a good script" -n good.sh
same "-n on a missing script" -n missing.sh
same "-n on a binary script" -n binary.sh
same "-n -c with a syntax error" -n -c 'echo a; fi'
same "-o noexec is -n" -o noexec -c 'for'
run bash -Z -c true; bout=$out brc=$rc
run "$SBXSH" -Z -c true
is "$rc:${out%%$'\n'*}" "$brc:${bout%%$'\n'*}" "an invalid option: bash's message and status"
like "$out" $'\nUsage:' "... then the usage"
same "an invalid -o name" -o nosuch -c true
same "an invalid shopt name" -O nosuch -c true
same "-c without its argument" -c

run "$SBXSH" -n < bad.sh
like "$out" "^P: line 2: syntax error near unexpected token .fi'" "-n reading stdin names the line"
is "$rc" 2 "... and exits 2"
run "$SBXSH" binary.sh
is "$rc:$out" "126:binary.sh: binary.sh: cannot execute binary file" "a binary script is not run (126)"
run "$SBXSH" missing.sh
is "$rc:$out" "127:P: missing.sh: No such file or directory" "a missing script is 127, as bash"
run "$SBXSH" --version
like "$out" "^P [0-9.]+ " "--version"
run "$SBXSH" --help
like "$out" "Usage: P " "--help starts with the usage"
is "$rc" 0 "--help exits 0"
run "$SBXSH" --nosuch
like "$out" "^P: --nosuch: invalid option" "an unknown long option is refused as bash does"
is "$rc" 2 "... with status 2"
run "$SBXSH" --ast -c 'echo hi | wc -l'
like "$out" '"type":[[:space:]]*"pipeline"' "--ast prints the tree as JSON"
run "$SBXSH" --ast -c 'if'
is "$rc" 2 "--ast of a syntax error exits 2"
done_testing
