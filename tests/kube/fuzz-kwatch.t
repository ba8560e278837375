#!/bin/bash
# A short seeded run of the watch parser's fuzzer (tests/fuzz/fuzz-kwatch.c): whatever bytes
# a watch stream holds, split however, the client cuts the same events out of them within
# bounds. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short kwatch 30000 8 4096 "mutated watch streams, no crash, leak or undefined behaviour"
done_testing
