#!/bin/bash
# A short seeded run of the fsmonitor fuzzer (tests/fuzz/fuzz-fsmonitor.c): requests,
# answers and the journal stay within bounds. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short fsmonitor 50000 10 4096 "mutated requests, answers and journals, no crash, leak or undefined behaviour"
done_testing
