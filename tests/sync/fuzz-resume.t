#!/bin/bash
# A short seeded run of the resumable stream's fuzzer (tests/fuzz/fuzz-resume.c): sbx-kube
# stream's frame parser must survive mutated frames from the pod. `make fuzz` runs it longer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short resume 15000 10 8192 "mutated keeper streams, no crash, leak or undefined behaviour"
done_testing
