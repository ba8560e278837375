#!/bin/bash
# A short seeded run of the protocol fuzzer (tests/fuzz/fuzz-wire.c): the host-side decoder
# and applier must survive a few seconds of mutated agent streams. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short wire 15000 10 65536 "mutated agent streams, no crash, leak or undefined behaviour"
done_testing
