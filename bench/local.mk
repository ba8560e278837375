# bench/local*: per-command overhead of a warm local session (bench/local-overhead.sh;
# figures and how they were made in bench/local.md).
LOCAL_BENCH_SIZES ?= 1000,10000,100000
LOCAL_BENCH_RUNTIMES ?= runsc,bwrap
LOCAL_BENCH_RUNS ?= 30
bench-local: all
	bench/local-overhead.sh --sizes $(LOCAL_BENCH_SIZES) --runtimes $(LOCAL_BENCH_RUNTIMES) \
	    --runs $(LOCAL_BENCH_RUNS)
bench: bench-local
.PHONY: bench-local
