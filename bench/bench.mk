# bench/: benchmarks whose figures docs/performance.md quotes. Not tests: no assertions.
bench: all
	@true

fuzz:
	@true

.PHONY: bench fuzz

include bench/sync.mk
include bench/local.mk
include bench/journal.mk

# A command typed at the interactive prompt through tmux (issue 27): bash and sbxsh on each
# local runtime, this tree beside PROMPT_BENCH_BASE (another built tree, e.g. main's, when
# set), each beside a one-shot `sbxsh -c true` (bench/prompt.py).
PROMPT_BENCH_RUNS ?= 100
PROMPT_BENCH_RUNTIMES ?= bwrap,runsc
PROMPT_BENCH_BASE ?=
PROMPT_BENCH_ARGS ?=
bench-prompt: all
	bench/prompt.py --runs $(PROMPT_BENCH_RUNS) --runtimes $(PROMPT_BENCH_RUNTIMES) \
	    $(PROMPT_BENCH_ARGS) $(PROMPT_BENCH_BASE) .
.PHONY: bench-prompt

# The kube backend against the fake API server: claim latency over the fake's own, and
# `sbxsh -c true` against `kubectl exec` (bench/kube.sh).
KUBE_BENCH_RUNS ?= 10
bench-kube: all
	bench/kube.sh --runs $(KUBE_BENCH_RUNS)
.PHONY: bench-kube

# libsbxsh and its Python module against `sbxsh -c` per call (issue 24; bench/library.sh).
LIBRARY_BENCH_RUNS ?= 30
LIBRARY_BENCH_RUNTIMES ?= bwrap,runsc
BENCH_C += bench/library-bench.c
$(BUILD)/bench/library-bench: bench/library-bench.c $(BUILD)/libsbxsh.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libsbxsh.a -lpthread
bench-library: all $(BUILD)/bench/library-bench
	SBXSH_BUILD=$(abspath $(BUILD)) bench/library.sh --runs $(LIBRARY_BENCH_RUNS) \
	    --runtimes $(LIBRARY_BENCH_RUNTIMES)
.PHONY: bench-library
