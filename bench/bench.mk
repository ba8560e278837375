# bench/: benchmarks whose figures README.md quotes. Not tests: no assertions.
bench: all
	@true

fuzz:
	@true

.PHONY: bench fuzz

include bench/sync.mk
include bench/local.mk
