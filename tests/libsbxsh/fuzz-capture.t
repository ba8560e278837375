#!/bin/bash
# A short seeded run of libsbxsh's capture fuzzer (tests/fuzz/fuzz-capture.c): any output in
# any pieces is kept as head and tail within the cap, counted, and cut at UTF-8 characters.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short capture 20000 10 8192 "outputs kept within the cap, head and tail exact"
done_testing
