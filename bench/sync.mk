# bench/sync*: the sync benchmarks (bench/sync-bench.c; see bench/sync.md for the figures).
BENCH_C += bench/sync-bench.c
SYNC_BENCH_SIZES ?= 1000,10000,100000
SYNC_BENCH_REPS ?= 5
# tmpfs: this VM's ext4 (mounted with discard) swings by 5x between runs, whatever writes
SYNC_BENCH_DIR ?= /dev/shm
$(BUILD)/bench/sync-bench: bench/sync-bench.c $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/bench/sync-bench.d -MT $@ $(LDFLAGS) -o $@ $< \
	    $(BUILD)/libsbx.a $(LDLIBS)
bench-sync: $(BUILD)/bench/sync-bench $(BIN)/sbx-agent
	$(BUILD)/bench/sync-bench --agent $(BIN)/sbx-agent --sizes $(SYNC_BENCH_SIZES) \
	    --reps $(SYNC_BENCH_REPS) --dir $(SYNC_BENCH_DIR)
bench: bench-sync
.PHONY: bench-sync
