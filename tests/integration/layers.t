#!/bin/bash
# The folders are layers (HACKING.md, "The layers"): tests/layers.sh finds no
# include pointing against them in this tree, and finds each kind of bad one planted
# in a copy of it.
. "$(dirname "$0")/../lib/tap.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
check=$top/tests/layers.sh

out=$("$check" "$top" 2>&1)
rc=$?
is "$rc" 0 "the tree's includes follow the layers"
is "$out" "" "... and nothing is reported"

# A copy of the program's folders (tests/ and bench/ are not checked).
copy() {
    rm -rf "$SBX_TEST_TMP/tree"
    mkdir -p "$SBX_TEST_TMP/tree"
    for d in "$top"/*/; do
        d=${d%/}
        case ${d##*/} in tests|bench|build*) continue ;; esac
        cp -r "$d" "$SBX_TEST_TMP/tree/"
    done
}

# plant FILE INCLUDE: a copy whose FILE includes INCLUDE; prints the check's report.
plant() {
    copy
    printf '#include "%s"\n' "$2" >>"$SBX_TEST_TMP/tree/$1"
    "$check" "$SBX_TEST_TMP/tree" 2>&1
}

copy
out=$("$check" "$SBX_TEST_TMP/tree" 2>&1)
is "$?:$out" "0:" "a copy of the tree passes"

out=$(plant router/classify.c session/session.h)
is "$?" 1 "router/ including the session layer fails"
like "$out" '^router/classify\.c:[0-9]+: includes "session/session\.h": router/ may include only: ' \
     "... naming the file, the line and the include"

out=$(plant shell/parser.c router/route.h)
is "$?" 1 "the parser including the router fails"

out=$(plant session/holder.c local/local.h)
is "$?" 1 "the session layer including a backend fails"

out=$(plant local/local_backend.c session/holder.h)
is "$?" 1 "a backend including a session header other than the interface fails"

out=$(plant session/config.c cli/line.h)
is "$?" 1 "the session layer including the front end fails"

out=$(plant sync/wire.c session/config.h)
is "$?" 1 "sync/ including the session layer fails"

out=$(plant common/util.c sync/wire.h)
is "$?" 1 "common/ including anything above it fails"

out=$(plant local/local_backend.c ../session/holder.h)
is "$?" 1 "an include climbing out with .. fails"

out=$(plant cli/main.c local/local.h)
is "$?" 1 "the front end including a backend fails (backends are reached through the registry)"

out=$(plant local/local_backend.c session/backend.h)
is "$?" 0 "a backend including the backend interface passes"

copy
mkdir -p "$SBX_TEST_TMP/tree/newpart"
echo 'int x;' >"$SBX_TEST_TMP/tree/newpart/x.c"
out=$("$check" "$SBX_TEST_TMP/tree" 2>&1)
is "$?" 1 "a new folder of C files without a layer fails"
like "$out" '^newpart/: ' "... naming the folder"

done_testing
