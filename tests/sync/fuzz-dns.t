#!/bin/bash
# A short seeded run of the DNS stub's fuzzer (tests/fuzz/fuzz-dns.c): the sandbox's stub
# must answer every mutated query within bounds. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short dns 50000 10 4096 "mutated queries, no crash, leak or undefined behaviour"
done_testing
