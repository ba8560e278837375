#!/bin/bash
# A short seeded run of the host-command policy's fuzzer (tests/fuzz/fuzz-policy.c): any
# policy text is parsed and any words matched against it without a crash, leak or undefined
# behaviour, every message printable, every match a rule's own program. `make fuzz` runs it
# longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short policy 10000 10 4096 "mutated policies and command words, no crash, leak or undefined behaviour"
done_testing
