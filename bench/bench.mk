# bench/: benchmarks whose figures docs/performance.md quotes. Not tests: no assertions.
bench: all
	@true

fuzz:
	@true

.PHONY: bench fuzz

include bench/sync.mk
include bench/local.mk

# The kube backend against the fake API server: claim latency over the fake's own, and
# `sbxsh -c true` against `kubectl exec` (bench/kube.sh).
KUBE_BENCH_RUNS ?= 10
bench-kube: all
	bench/kube.sh --runs $(KUBE_BENCH_RUNS)
.PHONY: bench-kube
