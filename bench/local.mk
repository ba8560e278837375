# bench/local*, bench/speed.sh: sbxsh against bash on the host for each local runtime, in one
# run (issue 10's table: warm commands, git status, make, output relays, first command, a big
# file); bench/local.md says how to read it. bench-local is its per-command rows alone
# (bench/local-overhead.sh). SPEED_BENCH_ARGS=--quick: a small smoke run.
SPEED_BENCH_SIZES ?= 1000,10000,100000
SPEED_BENCH_RUNTIMES ?= bwrap,runsc
SPEED_BENCH_ROWS ?= true,exec,git,fresh,make,seq,first,big
SPEED_BENCH_RUNS ?= 10
SPEED_BENCH_BIG_RUNS ?= 3
SPEED_BENCH_FILE_SIZE ?= 1G
SPEED_BENCH_ARGS ?=
bench-speed: all
	bench/speed.sh --sizes $(SPEED_BENCH_SIZES) --runtimes $(SPEED_BENCH_RUNTIMES) \
	    --rows $(SPEED_BENCH_ROWS) --runs $(SPEED_BENCH_RUNS) --big-runs $(SPEED_BENCH_BIG_RUNS) \
	    --file-size $(SPEED_BENCH_FILE_SIZE) $(SPEED_BENCH_ARGS)
LOCAL_BENCH_SIZES ?= 1000,10000,100000
LOCAL_BENCH_RUNTIMES ?= runsc,bwrap
LOCAL_BENCH_RUNS ?= 30
bench-local: all
	bench/local-overhead.sh --sizes $(LOCAL_BENCH_SIZES) --runtimes $(LOCAL_BENCH_RUNTIMES) \
	    --runs $(LOCAL_BENCH_RUNS)
# bench/idle-cpu.sh: the host CPU that idle sessions cost (issue 21), per runtime, beside bare
# `runsc do` sandboxes; bench/idle.md has the figures and how to read them.
IDLE_BENCH_RUNTIMES ?= runsc,bwrap
IDLE_BENCH_SESSIONS ?= 8
IDLE_BENCH_SECONDS ?= 60
bench-idle: all
	bench/idle-cpu.sh --runtimes $(IDLE_BENCH_RUNTIMES) --sessions $(IDLE_BENCH_SESSIONS) \
	    --seconds $(IDLE_BENCH_SECONDS)
bench: bench-speed bench-idle
.PHONY: bench-speed bench-local bench-idle
# bench/index-ab.sh: git status alternating host/sandbox (issue 22, the git index ping-pong)
# on INDEX_BENCH_FILES files, this tree against INDEX_BENCH_BASE (another built tree, e.g.
# main's) in one run when given.
INDEX_BENCH_FILES ?= 10000
INDEX_BENCH_RUNS ?= 10
INDEX_BENCH_RUNTIMES ?= bwrap,runsc
INDEX_BENCH_BASE ?=
bench-index: all
	bench/index-ab.sh --runs $(INDEX_BENCH_RUNS) --files $(INDEX_BENCH_FILES) \
	    --runtimes $(INDEX_BENCH_RUNTIMES) $(INDEX_BENCH_BASE) .
bench: bench-index
.PHONY: bench-index

# git's fsmonitor in the sandbox (AGENT_SANDBOX_GIT_FSMONITOR, on by default): git status and
# git diff --stat with and without it, against the host, on both runtimes, and runsc's CPU
# per status (bench/fsmonitor.sh).
FSMON_BENCH_RUNS ?= 10
FSMON_BENCH_FILES ?= 10000,100000
bench-fsmonitor: all
	bench/fsmonitor.sh --runs $(FSMON_BENCH_RUNS) --files $(FSMON_BENCH_FILES)
.PHONY: bench-fsmonitor
