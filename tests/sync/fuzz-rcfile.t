#!/bin/bash
# A short seeded run of the startup-file filter's fuzzer (tests/fuzz/fuzz-rcfile.c): any text is
# filtered without a crash, its lines kept. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang >/dev/null || skip_all "clang is not installed (make deps installs it)"
if ! out=$(make -s -C "$top" build-fuzz/fuzz-rcfile 2>&1); then
    skip_all "cannot build the libFuzzer driver (libclang-rt-14-dev missing?): ${out##*$'\n'}"
fi
mkdir -p "$SBX_TEST_TMP/corpus"
log=$("$top/build-fuzz/fuzz-rcfile" -seed=1 -runs=15000 -max_total_time=10 -max_len=16384 \
      -timeout=10 -artifact_prefix="$SBX_TEST_TMP/" "$SBX_TEST_TMP/corpus" \
      "$top/tests/fuzz/corpus-rcfile" 2>&1)
rc=$?
is "$rc" 0 "fuzz-rcfile: 15000 mutated startup files, no crash, leak or undefined behaviour, lines kept"
[ "$rc" = 0 ] || diag "$(printf '%s\n' "$log" | grep -E 'ERROR|SUMMARY|Test unit' | head -5)"
like "$log" "Done [0-9]+ runs" "fuzz-rcfile: the run completed"
done_testing
