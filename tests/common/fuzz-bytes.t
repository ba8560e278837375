#!/bin/bash
# A short seeded run of the bounded reader and base64 fuzzer (tests/fuzz/fuzz-bytes.c): any bytes are
# read without a crash, nothing past their end; base64 round-trips. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short bytes 15000 10 4096 "mutated inputs, no read past the end, base64 round-trips"
done_testing
