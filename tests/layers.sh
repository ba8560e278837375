#!/bin/bash
# The layering, checked: every `#include "..."` in the program's folders points down
# (HACKING.md, "The layers"). Exits 1 listing each include that points against it.
#
#   tests/layers.sh [TOP]      TOP: the tree to check (default: this one)
#
# Each folder may include its own headers and those of the folders (or single headers)
# listed after it. tests/ and bench/ may include anything; a folder with C files that is
# not listed fails, so that a new one gets a place in the picture.
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}

declare -A allowed=(
    [common]="common"
    [shell]="shell common"
    [router]="router shell common"
    [sync]="sync common"
    [session]="session sync common"
    # a backend sees the session layer only through its interface (and the config
    # the interface's factory is given)
    [local]="local session/backend.h session/config.h common"
    # (and sync/resume.h: the resumable stream whose pod-side end is sbx-agent's)
    [kube]="kube session/backend.h session/config.h sync/resume.h common"
    [cli]="cli router shell session common"
)
skip=" tests bench build build-asan build-clang build-fuzz "

bad=0
cd "$top" || exit 2
for dir in */; do
    dir=${dir%/}
    case "$skip" in *" $dir "*) continue ;; esac
    files=$(find "$dir" -name '*.[ch]' -type f | sort)
    [ -n "$files" ] || continue
    if [ -z "${allowed[$dir]+x}" ]; then
        echo "$dir/: C files in a folder that has no layer (add it to tests/layers.sh)"
        bad=1
        continue
    fi
    # one awk per folder: FILE:LINE: includes "X": ... for each include not allowed
    # shellcheck disable=SC2086 # the tree's C file names (no spaces), one argument each
    report=$(awk -v dir="$dir" -v allow="${allowed[$dir]}" '
        BEGIN { n = split(allow, a, " ") }
        match($0, /^[ \t]*#[ \t]*include[ \t]*"[^"]*"/) {
            inc = substr($0, RSTART, RLENGTH)
            sub(/^[^"]*"/, "", inc); sub(/"$/, "", inc)
            if (index(inc, "/") == 0) next      # a header beside the file
            ok = 0
            top = inc; sub(/\/.*/, "", top)
            for (i = 1; i <= n; i++)
                if (inc == a[i] || top == a[i]) ok = 1
            if (inc ~ /(^|\/)\.\.\//) ok = 0
            if (!ok)
                printf "%s:%d: includes \"%s\": %s/ may include only: %s\n", FILENAME, FNR, inc, dir, allow
        }' $files)
    if [ -n "$report" ]; then
        echo "$report"
        bad=1
    fi
done
exit $bad
