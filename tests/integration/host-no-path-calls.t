#!/bin/bash
# The host half of a pull makes no path-based file system call (SECURITY.md, "The trusted
# files"): tests/host-no-path-calls.sh finds none in the build's objects, and finds each one
# planted in a copy: a rename() and an unlink() compiled into sync/hostwrite.c, an open()
# and a stat() in the safe-fs helpers, an AT_FDCWD in the source.
. "$(dirname "$0")/../lib/tap.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
check=$top/tests/host-no-path-calls.sh
build=${SBXSH_BUILD:-$top/build}

command -v nm >/dev/null || skip_all "no nm to list an object's imports with"
[ -f "$build/sync/hostwrite.o" ] || skip_all "$build/sync/hostwrite.o not built"

out=$("$check" "$build" 2>&1)
is "$?" 0 "the host's apply and its helpers import no path-based file system call"
is "$out" "" "... and nothing is reported"
n=$(nm -u "$build/sync/hostwrite.o" | grep -cE ' (openat|renameat|unlinkat|mkdirat|fstatat|symlinkat|readlinkat|fchmodat)$')
ok "... while sync/hostwrite.o does write, by the *at() calls ($n of them)" [ "$n" -ge 6 ]

# A copy of the build's objects and of the sources, to plant in.
fake() {
    rm -rf "$SBX_TEST_TMP/build" "$SBX_TEST_TMP/tree"
    mkdir -p "$SBX_TEST_TMP/build/sync" "$SBX_TEST_TMP/tree/sync"
    cp "$build"/sync/*.o "$SBX_TEST_TMP/build/sync/"
    cp "$top"/sync/*.[ch] "$SBX_TEST_TMP/tree/sync/"
}
# recompile FILE.c: the copy's FILE.c, as the Makefile would, into the copy's build.
recompile() {
    cc -std=gnu11 -D_GNU_SOURCE -I"$SBX_TEST_TMP/tree" -I"$top" -O2 -c \
       -o "$SBX_TEST_TMP/build/${1%.c}.o" "$SBX_TEST_TMP/tree/$1"
}
run() { TOP=$SBX_TEST_TMP/tree "$check" "$SBX_TEST_TMP/build" 2>&1; }

if ! command -v cc >/dev/null; then
    for _ in 1 2 3 4 5 6 7 8; do skip "no cc to compile a planted call with"; done
    done_testing
fi

fake
recompile sync/hostwrite.c
out=$(run)
is "$?:$out" "0:" "the copy, recompiled as it is, passes"

fake
cat >>"$SBX_TEST_TMP/tree/sync/hostwrite.c" <<'EOF'
int apply_planted(const char *a, const char *b);
int apply_planted(const char *a, const char *b) { return rename(a, b) < 0 ? unlink(b) : 0; }
EOF
recompile sync/hostwrite.c
out=$(run)
is "$?" 1 "a rename() and an unlink() by path in sync/hostwrite.c fail"
like "$out" '^sync/hostwrite\.o: calls (rename unlink|unlink rename): a path-based' \
     "... naming the object and both calls"

fake
cat >>"$SBX_TEST_TMP/tree/sync/safefs.c" <<'EOF'
int sf_planted(const char *p, struct stat *st);
int sf_planted(const char *p, struct stat *st) { return stat(p, st) == 0 ? open(p, O_RDONLY) : -1; }
EOF
recompile sync/safefs.c
out=$(run)
is "$?" 1 "an open() and a stat() by path in a helper the host's apply calls fail"
like "$out" '^sync/safefs\.o: calls .*open' "... naming the object and the open"
like "$out" '^sync/safefs\.o: calls .*stat' "... and the stat"

fake
printf 'int apply_planted_fd(void);\nint apply_planted_fd(void) { return openat(AT_FDCWD, "x", O_RDONLY); }\n' \
    >>"$SBX_TEST_TMP/tree/sync/hostwrite.c"
recompile sync/hostwrite.c
out=$(run)
is "$?" 1 "an *at() call from AT_FDCWD (a path from the cwd) fails"
like "$out" '^sync/hostwrite\.c:[0-9]+:.*AT_FDCWD' "... naming the file and the line"

done_testing
