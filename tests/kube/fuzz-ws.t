#!/bin/bash
# A short seeded run of the WebSocket fuzzer (tests/fuzz/fuzz-ws.c): the upgrade answer's
# parser and the client-role decoder must survive a few seconds of mutated server bytes.
# `make fuzz-ws` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short ws 50000 10 16384 "mutated server streams, no crash, leak or undefined behaviour"
done_testing
