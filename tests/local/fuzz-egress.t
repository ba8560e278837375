#!/bin/bash
# A short seeded run of the egress proxy's fuzzer (tests/fuzz/fuzz-egress.c): its request parser and policy
# must survive mutated requests and allowlists. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short egress 50000 10 8192 "mutated requests and lists, no crash, leak or undefined behaviour"
done_testing
