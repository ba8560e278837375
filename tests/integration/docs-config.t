#!/bin/bash
# The configuration reference stays in step with the code: every AGENT_SANDBOX_* variable
# the programs read has a row in docs/configuration.md (with a default and a meaning), is
# in a man page and in sbxsh's or sbx's --help; every row names a variable the code reads;
# and every other variable the code reads by name (getenv) is on that page too.
. "$(dirname "$0")/../lib/tap.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
conf=$top/docs/configuration.md
cd "$top" || exit 1

# The product's folders: those with C files, but tests/, bench/ and the build trees.
src=()
skip=" tests bench build build-asan build-clang build-fuzz "
for d in */; do
    d=${d%/}
    case "$skip" in *" $d "*) continue ;; esac
    [ -n "$(find "$d" -name '*.[ch]' -print -quit)" ] && src+=("$d")
done
ok "the product's sources are found (${src[*]})" test "${#src[@]}" -ge 6

# A variable the code reads is a string literal that is exactly its name:
# getenv("AGENT_SANDBOX_POOL"), env_nonempty("AGENT_SANDBOX_TTL"), a table of names.
code_vars=$(grep -rhoE --include='*.[ch]' '"AGENT_SANDBOX_[A-Z0-9_]+"' "${src[@]}" | tr -d '"' | sort -u)
ok "the code reads AGENT_SANDBOX_* variables ($(grep -c . <<<"$code_vars") found)" \
   test "$(grep -c . <<<"$code_vars")" -ge 20

# The reference table's rows: | `NAME` | default | list | meaning |
rows=$(grep -E '^\| `AGENT_SANDBOX_[A-Z0-9_]+` \|' "$conf")
doc_vars=$(sed -E 's/^\| `([A-Z0-9_]+)`.*/\1/' <<<"$rows" | sort -u)
is "$(comm -23 <(echo "$code_vars") <(echo "$doc_vars"))" "" \
   "every AGENT_SANDBOX_* variable the code reads has a row in docs/configuration.md"
is "$(comm -13 <(echo "$code_vars") <(echo "$doc_vars"))" "" \
   "every row of docs/configuration.md names a variable the code reads"
# (cells split at '|': "", name, default, list separator, meaning, "")
is "$(awk -F'|' 'NF != 6 || $3 ~ /^ *$/ || $5 ~ /^ *$/ { print }' <<<"$rows")" "" \
   "every row has its four cells, a default and a meaning among them"

missing=
for v in $code_vars; do
    grep -q "$v" doc/sbxsh.1 doc/sbx.1 || missing+="$v "
done
is "$missing" "" "every AGENT_SANDBOX_* variable the code reads is in sbxsh(1) or sbx(1)"
help=$("$SBXSH" --help; "$SBX" --help)
missing=
for v in $code_vars; do
    grep -q "$v" <<<"$help" || missing+="$v "
done
is "$missing" "" "every AGENT_SANDBOX_* variable the code reads is in sbxsh --help or sbx --help"

# The other variables read by name: getenv("HOME"), env_nonempty("XDG_RUNTIME_DIR").
others=$(grep -rhoE --include='*.[ch]' '(getenv|env_[a-z_]+)\("[A-Z][A-Z0-9_]*"' "${src[@]}" |
         sed -E 's/.*\("//; s/"$//' | grep -v '^AGENT_SANDBOX_' | sort -u)
ok "the code reads other variables by name ($(grep -c . <<<"$others") found)" \
   test "$(grep -c . <<<"$others")" -ge 5
missing=
for v in $others; do
    grep -q "\`$v\`" "$conf" || missing+="$v "
done
is "$missing" "" "every other variable the code reads by name is in docs/configuration.md"

# The checks can fail: a variable read in a new file and documented nowhere is found.
mkdir -p "$SBX_TEST_TMP/t/x"
printf 'const char *f(void) { return getenv("AGENT_SANDBOX_ZZ_NEW"); }\n' >"$SBX_TEST_TMP/t/x/x.c"
new=$(grep -rhoE --include='*.[ch]' '"AGENT_SANDBOX_[A-Z0-9_]+"' "$SBX_TEST_TMP/t/x" | tr -d '"')
is "$(comm -23 <(echo "$new") <(echo "$doc_vars"))" AGENT_SANDBOX_ZZ_NEW \
   "an undocumented variable in the code is listed"
done_testing
