#!/usr/bin/env bash
# The parser's tree for the tricky cases of tests/shell/ast-cases.txt
# (here-documents, nested substitutions, case patterns, quoting, ...).
. "$(dirname "$0")/../lib/tap.sh"

table=$(dirname "$0")/ast-cases.txt
pc=${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/shell/parsecheck
[ -x "$pc" ] || bail_out "parsecheck not built: run make"
in=$SBX_TEST_TMP/in
name='' code='' opts='' state=none

while IFS= read -r line; do
    case $state:$line in
    *:'#### '*) name=${line#'#### '} code='' opts='' state=code ;;
    code:'## options: '*) opts=${line#'## options: '} ;;
    code:'## shape:') state=shape ;;
    code:*) code+=$line$'\n' ;;
    shape:*)
        printf '%s' "$code" >"$in"
        # shellcheck disable=SC2086 # the case's options, one word each
        got=$("$pc" --shape $opts <"$in" 2>/dev/null)
        is "${got# }" "${line# }" "$name"
        state=none ;;
    esac
done <"$table"
done_testing
