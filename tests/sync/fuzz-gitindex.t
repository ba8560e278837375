#!/bin/bash
# A short seeded run of the .git/index merge fuzzer (tests/fuzz/fuzz-gitindex.c): the index merge
# must survive a few seconds of mutated indexes (received and local). `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short gitindex 15000 10 65536 "mutated indexes merged or left alone, no crash, leak or undefined behaviour"
done_testing
