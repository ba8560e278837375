#!/bin/bash
# A short seeded run of the flow-control fuzzer (tests/fuzz/fuzz-flow.c): windows, credits and
# the writable callback of sync/conn*.c against a simulated agent. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short flow 1500 10 4096 "fuzzed schedules of output, input and credits: no stall, loss, window overrun, crash, leak or undefined behaviour"
done_testing
