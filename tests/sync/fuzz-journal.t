#!/bin/bash
# A short seeded run of the undo journal's parser fuzzer (tests/fuzz/fuzz-journal.c): cut and
# malformed logs parse within bounds and round-trip. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short journal 50000 10 8192 "mutated journal logs, checked paths, a stable round trip, no crash, leak or undefined behaviour"
done_testing
