#!/bin/bash
# A short seeded run of the egress proxy's fuzzer (tests/fuzz/fuzz-egress.c): its request parser and policy
# must survive mutated requests and allowlists. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang >/dev/null || skip_all "clang is not installed (make deps installs it)"
if ! out=$(make -s -C "$top" build-fuzz/fuzz-egress 2>&1); then
    skip_all "cannot build the libFuzzer driver (libclang-rt-14-dev missing?): ${out##*$'\n'}"
fi
mkdir -p "$SBX_TEST_TMP/corpus"
log=$("$top/build-fuzz/fuzz-egress" -seed=1 -runs=50000 -max_total_time=10 -max_len=8192 \
      -timeout=10 -artifact_prefix="$SBX_TEST_TMP/" "$SBX_TEST_TMP/corpus" \
      "$top/tests/fuzz/corpus-egress" 2>&1)
rc=$?
is "$rc" 0 "fuzz-egress: 50000 mutated requests and lists, no crash, leak or undefined behaviour"
[ "$rc" = 0 ] || diag "$(printf '%s\n' "$log" | grep -E 'ERROR|SUMMARY|Test unit' | head -5)"
like "$log" "Done [0-9]+ runs" "fuzz-egress: the run completed"
done_testing
