#!/bin/bash
# A short seeded run of the .git/index merge fuzzer (tests/fuzz/fuzz-gitindex.c): the index merge
# must survive a few seconds of mutated indexes (received and local). `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang >/dev/null || skip_all "clang is not installed (make deps installs it)"
if ! out=$(make -s -C "$top" build-fuzz/fuzz-gitindex 2>&1); then
    skip_all "cannot build the libFuzzer driver (libclang-rt-14-dev missing?): ${out##*$'\n'}"
fi
mkdir -p "$SBX_TEST_TMP/corpus"
log=$("$top/build-fuzz/fuzz-gitindex" -seed=1 -runs=15000 -max_total_time=10 -max_len=65536 \
      -timeout=10 -artifact_prefix="$SBX_TEST_TMP/" "$SBX_TEST_TMP/corpus" \
      "$top/tests/fuzz/corpus-gitindex" 2>&1)
rc=$?
is "$rc" 0 "fuzz-gitindex: 15000 mutated indexes merged or left alone, no crash, leak or undefined behaviour"
[ "$rc" = 0 ] || diag "$(printf '%s\n' "$log" | grep -E 'ERROR|SUMMARY|Test unit' | head -5)"
like "$log" "Done [0-9]+ runs" "fuzz-gitindex: the run completed"
done_testing
