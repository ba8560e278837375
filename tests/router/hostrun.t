#!/bin/bash
# The host runner against bash: each line routes to the host and runs under
# route-run (sbxsh's runner) and under `bash -c LINE sbxsh`; standard output,
# standard error and the exit status must be the same.
. "$(dirname "$0")/../lib/tap.sh"

RUN=${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/router/route-run
[ -x "$RUN" ] || bail_out "route-run not built ($RUN)"
for p in git grep jq head tail sort uniq cut tr wc; do
    command -v $p >/dev/null || skip_all "$p not installed (make deps)"
done

export HOME=$SBX_TEST_TMP/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME" && git config --global init.defaultBranch main
git init -q "$SBX_TEST_TMP/code" && cd "$SBX_TEST_TMP/code" && mkdir -p sub/deeper
git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init
export AGENT_SANDBOX_CODE_DIRS=$PWD

compare() { # LINE [route-run options...]
    local line=$1 bout berr sout serr
    shift
    bout=$(bash "$@" -c "$line" sbxsh 2>"$SBX_TEST_TMP/berr"; echo "[$?]")
    sout=$("$RUN" "$@" "$line" 2>"$SBX_TEST_TMP/serr"; echo "[$?]")
    berr=$(cat "$SBX_TEST_TMP/berr"); serr=$(cat "$SBX_TEST_TMP/serr")
    if [ "$bout" = "$sout" ] && [ "$berr" = "$serr" ]; then
        tap_result 0 "$(printf '%q' "$line") $*"
    else
        tap_result 1 "$(printf '%q' "$line") $*"
        diag "bash: out $(printf '%q' "$bout") err $(printf '%q' "$berr")" \
             "ours: out $(printf '%q' "$sout") err $(printf '%q' "$serr")"
    fi
}

while IFS= read -r line; do
    [ -z "$line" ] || [ "${line:0:1}" = "#" ] && continue
    compare "$line"
done <<'LINES'
echo hello world
echo -n no newline
echo -e 'tab\there\c' ignored
echo 'single' "double" mixed\ escaped
echo to stderr >&2
echo to stderr 1>&2 2>/dev/null
echo out 2>&1 >/dev/null
echo silent >/dev/null
echo silent &>/dev/null
echo silent >&/dev/null
echo a && echo b || echo c
echo a || echo b && echo c
echo a; echo b
printf '%s\n' one two three
printf '%d\n' notanumber
printf '%d\n' notanumber 2>&1
printf '%d\n' notanumber 2>/dev/null
printf 'x\n' >/dev/null 2>&1
printf '%s %s\n' a b c | wc -l
printf '%s\n' b a c a | sort | uniq -c | sort -rn | head -n 1
printf 'a:b:c\n' | cut -d: -f2-
printf 'Hello\n' | tr '[:lower:]' '[:upper:]'
printf 'x\ny\nz\n' | tail -n 2 | head -1
printf 'x\ny\n' | grep -n y
printf 'x\ny\n' | grep -c z
printf 'x\ny\n' | grep -q x && echo found
printf 'x\ny\n' | grep -v x | wc -c
printf '{"a":[1,2]}\n' | jq -c '.a | map(. * 2)'
printf '{"a":"s"}\n' | jq -r .a
printf 'not json\n' | jq . 2>&1 | head -1
echo x |& grep x
printf '%d\n' bad |& grep -c invalid
! echo x | grep -q y
! printf 'x\n'
echo x | grep y; echo after
echo x | grep y || echo not-found
cd sub && git ls-remote . | wc -l
cd sub/deeper && cd ../.. && git ls-remote . | cut -c1-3
LINES
compare 'printf "x\n" | grep -q y | wc -l' -o pipefail
compare 'printf "x\n" | grep y | head -1; echo "after"' -o pipefail
compare '! printf "x\n" | grep y' -o pipefail
done_testing
