#!/bin/bash
# The folders are layers (HACKING.md, "The layers"): tests/layers.sh finds no
# include pointing against them in this tree, and finds each kind of bad one planted
# in a copy of it.
. "$(dirname "$0")/../lib/tap.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
check=$top/tests/layers.sh

build=${SBXSH_BUILD:-$top/build}
out=$("$check" "$top" "$build" 2>&1)
rc=$?
is "$rc" 0 "the tree's includes follow the layers, its names their folders' prefixes"
is "$out" "" "... and nothing is reported"
objs=$(find "$build/session" "$build/cli" "$build/common" -maxdepth 1 -name '*.o' 2>/dev/null | wc -l)
ok "... the names of the build's objects among them ($objs objects in $build)" [ "$objs" -gt 10 ]

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

# The session layer names no backend: a backend's settings are its own section.
# append FILE LINE: a copy whose FILE ends with LINE; prints the check's report.
append() {
    copy
    printf '%s\n' "$2" >>"$SBX_TEST_TMP/tree/$1"
    "$check" "$SBX_TEST_TMP/tree" 2>&1
}

out=$(append session/config.c 'static int f(sbx_config *cfg) { return cfg->local.network_host; }')
is "$?" 1 "the session layer reaching into the local backend's settings fails"
like "$out" '^session/config\.c:[0-9]+: names the backend "local" ' "... naming the file, the line and the backend"

out=$(append session/holder.c 'typedef struct kube_settings kube_settings;')
is "$?" 1 "the session layer declaring the kube backend's settings fails"
like "$out" '^session/holder\.c:[0-9]+: names the backend "kube" \(kube_settings\)' "... naming the identifier"

out=$(append session/sbx_main.c 'static const char *pool(void) { return getenv("AGENT_SANDBOX_POOL"); }')
is "$?" 1 "the session layer reading a backend's variable fails"
like "$out" '^session/sbx_main\.c:[0-9]+: reads AGENT_SANDBOX_POOL, a backend' "... naming the variable"

out=$(append session/sbx_main.c '/* the kube backend and cfg->local */ static const char h[] = "AGENT_SANDBOX_POOL: kube";')
is "$?:$out" "0:" "a backend named in a comment or in help text passes"

copy
mkdir -p "$SBX_TEST_TMP/tree/third"
printf 'BACKENDS += third\n' >"$SBX_TEST_TMP/tree/third/third.mk"
printf 'static int third_ready;\n' >>"$SBX_TEST_TMP/tree/session/backend.c"
out=$("$check" "$SBX_TEST_TMP/tree" 2>&1)
is "$?" 1 "a new backend's name in the session layer fails too (found from its fragment)"
like "$out" 'names the backend "third" \(third_ready\)' "... naming it"

# Names: an object of a folder exporting a name outside its folder's prefixes fails.
# fake_build DIR/FILE.o C-SOURCE: a build directory holding that one object, made from
# C-SOURCE.
fake_build() {
    rm -rf "$SBX_TEST_TMP/build"
    mkdir -p "$SBX_TEST_TMP/build/${1%/*}"
    printf '%s\n' "$2" | cc -c -x c - -o "$SBX_TEST_TMP/build/$1"
}
if command -v cc >/dev/null && command -v nm >/dev/null; then
    copy
    fake_build cli/main.o 'int sh_options_frob(void) { return 0; } int main(void) { return 0; }'
    out=$("$check" "$SBX_TEST_TMP/tree" "$SBX_TEST_TMP/build" 2>&1)
    is "$?" 1 "the front end exporting a name of the parser's prefix (sh_) fails"
    like "$out" '^cli/main\.o: exports sh_options_frob: names of cli/ begin with cli_ ' \
         "... naming the object, the name and the folder's prefixes"

    fake_build session/config.o 'int sbx_session_frob(void) { return 0; }'
    out=$("$check" "$SBX_TEST_TMP/tree" "$SBX_TEST_TMP/build" 2>&1)
    is "$?" 1 "the session layer exporting common's sbx_ fails"

    fake_build local/state.o 'int local_peek(void) { return 0; } static int sbx_helper(void) { return 0; } int (*local_p)(void) = sbx_helper;'
    out=$("$check" "$SBX_TEST_TMP/tree" "$SBX_TEST_TMP/build" 2>&1)
    is "$?:$out" "0:" "a folder's own prefix passes, and a static name is no export"

    fake_build common/util.o 'int sbx_errf(void) { return 0; } int xmalloc_ok;'
    out=$("$check" "$SBX_TEST_TMP/tree" "$SBX_TEST_TMP/build" 2>&1)
    is "$?:$out" "0:" "common/ owns sbx_"
else
    for _ in 1 2 3 4 5; do skip "no cc or nm to make an object with"; done
fi

copy
cp "$check" "$SBX_TEST_TMP/layers.sh"
sed -i 's/^\(    \[router\]="route_\)"/\1 sh_"/' "$SBX_TEST_TMP/layers.sh"
out=$("$SBX_TEST_TMP/layers.sh" "$SBX_TEST_TMP/tree" "$SBX_TEST_TMP/nobuild" 2>&1)
is "$?" 1 "a prefix given to two folders fails"
like "$out" "prefix sh_ of (router|shell)/ begins with (router|shell)/'s sh_" "... naming both"

done_testing
