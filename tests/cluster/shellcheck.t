#!/bin/bash
# Runs shellcheck on every shell script of the project: *.sh, and the tests (*.t) and files
# without a suffix whose first line is a sh or bash shebang (.ci/run, cluster/ scripts).
# Its settings are the top level's .shellcheckrc (each disable there says why); a disable
# in a script sits on the line before, with its reason.
. "$(dirname "$0")/../lib/tap.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
command -v shellcheck >/dev/null || skip_all "shellcheck is not installed (make deps)"

# The source tree, without build products, fuzz corpora (inputs for the parser, some of
# them shell scripts on purpose) and git's own directory.
scripts=()
while IFS= read -r -d '' f; do
    case $f in
    *.sh) scripts+=("$f") ;;
    *) head -n1 "$f" 2>/dev/null | grep -Eq '^#! ?(/usr)?/bin/(env +)?(ba)?sh( |$)' &&
        scripts+=("$f") ;;
    esac
done < <(cd "$top" && find . \( -path ./.git -o -path './build*' -o -path ./tests/fuzz \) -prune \
    -o -type f -print0 | sort -z)

[ "${#scripts[@]}" -ge 40 ] || diag "only ${#scripts[@]} scripts found"
ok "the walk finds the project's scripts (${#scripts[@]})" test "${#scripts[@]}" -ge 40
for f in "${scripts[@]}"; do
    out=$(cd "$top" && shellcheck -x -f gcc "$f" 2>&1)
    is "$out" "" "shellcheck ${f#./}"
done

# The settings do not silence real findings: a script with an unquoted expansion and an
# unused variable, beside a copy of them, is reported.
mkdir -p "$SBX_TEST_TMP/sc"
cp "$top/.shellcheckrc" "$SBX_TEST_TMP/sc/"
printf '#!/bin/sh\nunused=1\nrm -rf $1/*\n' >"$SBX_TEST_TMP/sc/bad.sh"
out=$(cd "$SBX_TEST_TMP/sc" && shellcheck -f gcc bad.sh 2>&1)
like "$out" 'SC2034' "a planted unused variable is reported under the project's settings"
like "$out" 'SC2086' "... and a planted unquoted expansion too"
done_testing
