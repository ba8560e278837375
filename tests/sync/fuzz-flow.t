#!/bin/bash
# A short seeded run of the flow-control fuzzer (tests/fuzz/fuzz-flow.c): windows, credits and
# the writable callback of sync/conn*.c against a simulated agent. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang >/dev/null || skip_all "clang is not installed (make deps installs it)"
if ! out=$(make -s -C "$top" build-fuzz/fuzz-flow 2>&1); then
    skip_all "cannot build the libFuzzer driver (libclang-rt-14-dev missing?): ${out##*$'\n'}"
fi
mkdir -p "$SBX_TEST_TMP/corpus"
log=$("$top/build-fuzz/fuzz-flow" -seed=1 -runs=1500 -max_total_time=10 -max_len=4096 \
      -timeout=10 -artifact_prefix="$SBX_TEST_TMP/" "$SBX_TEST_TMP/corpus" \
      "$top/tests/fuzz/corpus-flow" 2>&1)
rc=$?
is "$rc" 0 "fuzz-flow: 1500 fuzzed schedules of output, input and credits: no stall, loss, window overrun, crash, leak or undefined behaviour"
[ "$rc" = 0 ] || diag "$(printf '%s\n' "$log" | grep -E 'ERROR|SUMMARY|Test unit' | head -5)"
like "$log" "Done [0-9]+ runs" "fuzz-flow: the run completed"
done_testing
