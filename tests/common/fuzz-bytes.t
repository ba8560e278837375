#!/bin/bash
# A short seeded run of the bounded reader and base64 fuzzer (tests/fuzz/fuzz-bytes.c): any bytes are
# read without a crash, nothing past their end; base64 round-trips. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang >/dev/null || skip_all "clang is not installed (make deps installs it)"
if ! out=$(make -s -C "$top" build-fuzz/fuzz-bytes 2>&1); then
    skip_all "cannot build the libFuzzer driver (libclang-rt-14-dev missing?): ${out##*$'\n'}"
fi
mkdir -p "$SBX_TEST_TMP/corpus"
log=$("$top/build-fuzz/fuzz-bytes" -seed=1 -runs=15000 -max_total_time=10 -max_len=4096 \
      -timeout=10 -artifact_prefix="$SBX_TEST_TMP/" "$SBX_TEST_TMP/corpus" \
      "$top/tests/fuzz/corpus-bytes" 2>&1)
rc=$?
is "$rc" 0 "fuzz-bytes: 15000 mutated inputs, no read past the end, base64 round-trips"
[ "$rc" = 0 ] || diag "$(printf '%s\n' "$log" | grep -E 'ERROR|SUMMARY|Test unit' | head -5)"
like "$log" "Done [0-9]+ runs" "fuzz-bytes: the run completed"
done_testing
