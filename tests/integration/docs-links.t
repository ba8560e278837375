#!/bin/bash
# The documents point where they say: every relative Markdown link leads to a file that
# exists (and its #anchor to a heading there), and every written reference in the
# project's style (`sync/README.md, "Spawning"`, in a comment, a test or a page) names a
# file that holds the quoted words. The README's reference moved to docs/; a link left
# pointing at an old section is a reader sent nowhere.
. "$(dirname "$0")/../lib/tap.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
check=$top/tests/lib/doclinks.py
cd "$top" || exit 1

# The project's own files: not the build trees, git's, or the fuzzers' corpora.
files() {
    find . -type f "$@" -not -path './.git/*' -not -path './build*' -not -path '*/corpus-*' |
        sed 's|^\./||' | sort
}

mapfile -t mds < <(files -name '*.md')
for f in README.md HACKING.md SECURITY.md docs/configuration.md docs/threat-model.md; do
    ok "$f is there" test -f "$f"
done
# The README is a landing page (issue 26: it had grown to 1093 lines); the reference is in docs/.
n=$(wc -l <README.md)
ok "README.md stays a landing page ($n lines, at most 200)" test "$n" -le 200
is "$(python3 "$check" links "$top" "${mds[@]}")" "" \
   "the links of all ${#mds[@]} Markdown files lead to files and headings that exist"

mapfile -t srcs < <(files \( -name '*.[ch]' -o -name '*.md' -o -name '*.t' -o -name '*.sh' \
                             -o -name '*.cases' -o -name '*.1' -o -name '*.mk' -o -name Makefile \
                             -o -name '*.py' -o -name '*.txt' \))
is "$(python3 "$check" refs "$top" "${srcs[@]}")" "" \
   "every 'FILE.md, \"Section\"' reference in ${#srcs[@]} files names a file holding those words"

# The checker itself can fail: a link to a heading that is not there, a missing file, a
# reference whose words moved. (The name is a variable so that this file's own text holds
# no reference in the checked style.)
r=README.md
mkdir -p "$SBX_TEST_TMP/t/docs"
printf '# Top\n\n## The part\n\nSee [x](docs/a.md#gone), [y](nope.md), [z](#the-part).\n' >"$SBX_TEST_TMP/t/$r"
printf '# A\n' >"$SBX_TEST_TMP/t/docs/a.md"
printf '/* (%s, "The part"), (%s, "Moved away") */\n' "$r" "$r" >"$SBX_TEST_TMP/t/x.c"
is "$(python3 "$check" links "$SBX_TEST_TMP/t" "$r")" \
"$r:5: docs/a.md#gone: no heading #gone in docs/a.md
$r:5: nope.md: no such file" "a broken anchor and a missing file are found"
is "$(python3 "$check" refs "$SBX_TEST_TMP/t" x.c)" "x.c:1: $r, \"Moved away\": not in $r" \
   "a reference whose words are gone is found"
done_testing
