# shellcheck shell=bash
# A short seeded run of one libFuzzer driver (tests/fuzz/fuzz-NAME.c) in make check; source
# it after tap.sh. `make fuzz` (or `make fuzz-NAME`) runs the same driver longer.
#
#   fuzz_short NAME RUNS SECONDS MAX_LEN WHAT
#
# builds build-fuzz/fuzz-NAME (clang with libFuzzer, ASan and UBSan: the file is skipped, with
# why, where clang cannot build a libFuzzer program at all; a driver that does not build
# while clang can is a failure), runs it RUNS inputs or SECONDS at most from a fixed seed
# and the seeds in tests/fuzz/corpus-NAME, and makes two checks: it exited 0 ("fuzz-NAME:
# RUNS WHAT") and it reached libFuzzer's "Done N runs" (not stopped on the way). On a crash,
# leak or undefined behaviour, libFuzzer's first lines go to the TAP log.

fuzz_short() { # NAME RUNS SECONDS MAX_LEN WHAT
    local name=$1 runs=$2 secs=$3 max_len=$4 what=$5 top out log rc
    top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    command -v clang >/dev/null || skip_all "clang is not installed (make deps installs it)"
    if ! out=$(make -s -C "$top" "build-fuzz/fuzz-$name" 2>&1); then
        # Skipped only when clang cannot make a libFuzzer program at all (its runtime,
        # libclang-rt-14-dev, is missing); a driver that fails to build is a failure.
        if printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }\n' |
            clang -x c -fsanitize=fuzzer,address,undefined -o "$SBX_TEST_TMP/probe-fuzzer" - \
                >/dev/null 2>&1; then
            bail_out "the libFuzzer driver fuzz-$name does not build: ${out##*$'\n'}"
        fi
        skip_all "clang cannot build a libFuzzer program (libclang-rt-14-dev missing?): ${out##*$'\n'}"
    fi
    mkdir -p "$SBX_TEST_TMP/corpus"
    log=$("$top/build-fuzz/fuzz-$name" -seed=1 -runs="$runs" -max_total_time="$secs" \
          -max_len="$max_len" -timeout=10 -artifact_prefix="$SBX_TEST_TMP/" \
          "$SBX_TEST_TMP/corpus" "$top/tests/fuzz/corpus-$name" 2>&1)
    rc=$?
    is "$rc" 0 "fuzz-$name: $runs $what"
    [ "$rc" = 0 ] || diag "$(printf '%s\n' "$log" | grep -E 'ERROR|SUMMARY|Test unit' | head -5)"
    like "$log" "Done [0-9]+ runs" "fuzz-$name: the run completed"
}
