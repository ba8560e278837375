# bench/journal-bench: the undo journal's cost on a pull (docs/undo.md, "Cost"): none, link,
# reflink, copy. JOURNAL_BENCH_DIR's file system decides whether reflinks exist.
BENCH_C += bench/journal-bench.c
JOURNAL_BENCH_REPS ?= 7
JOURNAL_BENCH_DIR ?= /tmp
$(BUILD)/bench/journal-bench: bench/journal-bench.c $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/bench/journal-bench.d -MT $@ $(LDFLAGS) -o $@ $< \
	    $(BUILD)/libsbx.a $(LDLIBS)
bench-journal: $(BUILD)/bench/journal-bench $(BIN)/sbx-agent
	$(BUILD)/bench/journal-bench --agent $(BIN)/sbx-agent --reps $(JOURNAL_BENCH_REPS) \
	    --dir $(JOURNAL_BENCH_DIR)
bench: bench-journal
.PHONY: bench-journal
