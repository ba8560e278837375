#!/bin/bash
# A short seeded run of the startup-file filter's fuzzer (tests/fuzz/fuzz-rcfile.c): any text is
# filtered without a crash, its lines kept. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short rcfile 15000 10 16384 "mutated startup files, no crash, leak or undefined behaviour, lines kept"
done_testing
