#!/bin/bash
# A short seeded run of the MCP request parser and output capping fuzzer (tests/fuzz/fuzz-mcp.c):
# any line gets a one-line UTF-8 answer; any output escapes to UTF-8 within its cap.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/fuzz.sh"
fuzz_short mcp 15000 10 65536 "mutated lines and outputs, every answer one UTF-8 JSON line"
done_testing
