#!/bin/bash
# A short seeded run of the watch parser's fuzzer (tests/fuzz/fuzz-kwatch.c): whatever bytes
# a watch stream holds, split however, the client cuts the same events out of them within
# bounds. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang >/dev/null || skip_all "clang is not installed (make deps installs it)"
if ! out=$(make -s -C "$top" build-fuzz/fuzz-kwatch 2>&1); then
    skip_all "cannot build the libFuzzer driver (libclang-rt-14-dev missing?): ${out##*$'\n'}"
fi
mkdir -p "$SBX_TEST_TMP/corpus"
log=$("$top/build-fuzz/fuzz-kwatch" -seed=1 -runs=30000 -max_total_time=8 -max_len=4096 \
      -timeout=10 -artifact_prefix="$SBX_TEST_TMP/" "$SBX_TEST_TMP/corpus" \
      "$top/tests/fuzz/corpus-kwatch" 2>&1)
rc=$?
is "$rc" 0 "fuzz-kwatch: 30000 mutated watch streams, no crash, leak or undefined behaviour"
[ "$rc" = 0 ] || diag "$(printf '%s\n' "$log" | grep -E 'ERROR|SUMMARY|Test unit' | head -5)"
like "$log" "Done [0-9]+ runs" "fuzz-kwatch: the run completed"
done_testing
