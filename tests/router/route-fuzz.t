#!/bin/bash
# The route fuzzer (tests/router/route-fuzz.c): 100,000 generated lines by
# default (10,000 under ASan; SBX_FUZZ_COUNT), seed SBX_FUZZ_SEED (1 unless set), every host
# line run by sbxsh's runner and by bash in a throwaway mount and PID
# namespace. A failure prints the seed, the line's index and the line, and
# how to replay it.
. "$(dirname "$0")/../lib/tap.sh"

FUZZ=${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/router/route-fuzz
[ -x "$FUZZ" ] || bail_out "route-fuzz not built ($FUZZ)"
[ "$(id -u)" = 0 ] || skip_all "needs root: mount and PID namespaces and fanotify"
unshare --mount --pid --fork true 2>/dev/null || skip_all "cannot create mount and PID namespaces here"
for p in bash git grep jq head tail sort uniq cut tr wc; do
    command -v $p >/dev/null || skip_all "$p not installed (make deps)"
done
trap - EXIT
rm -rf "$SBX_TEST_TMP"
# under ASan (make check-asan) every fork and exec is several times slower
count=100000
case $SBXSH_BUILD in *asan*) count=10000 ;; esac
exec "$FUZZ" --tap --seed "${SBX_FUZZ_SEED:-1}" --count "${SBX_FUZZ_COUNT:-$count}" --jobs 2
