# router/: host-or-sandbox decisions for every part of a line, and the host
# runner (argv, pipes, echo/printf in-process; never a host shell).
ROUTER_SRCS := router/builtins.c router/classify.c router/filters.c router/git.c router/policy.c \
               router/hostrun.c router/paths.c router/print.c router/sbx.c
LIB_SRCS += $(ROUTER_SRCS)

TEST_C += tests/router/t-builtins.c tests/router/t-route-table.c

TEST_HELPERS += tests/router/route-run.c tests/router/route-fuzz.c

# The route fuzzer in full under `make fuzz`: a fresh seed (SBX_FUZZ_SEED to
# choose one) and SBX_FUZZ_COUNT lines; and the router's libFuzzer driver,
# built with clang like the parser's (FUZZ_CC, FUZZ_SECONDS, fuzz_link: Makefile).
ROUTE_FUZZ_SRCS = $(ROUTER_SRCS) $(PARSER_SRCS) $(COMMON_SRCS) common/run.c
FUZZ_C += tests/fuzz/fuzz-route.c
build-fuzz/fuzz-route: tests/fuzz/fuzz-route.c $(ROUTE_FUZZ_SRCS) $(wildcard router/*.h shell/*.h common/*.h)
	$(call fuzz_link,-lcjson -lpcre2-8)
fuzz-route: build-fuzz/fuzz-route
	$(call fuzz_run,route,4096)
route-fuzz-long: $(BUILD)/tests/router/route-fuzz
	$(BUILD)/tests/router/route-fuzz --seed $${SBX_FUZZ_SEED:-$$(date +%s)} \
	    --count $${SBX_FUZZ_COUNT:-500000} --jobs $${SBX_FUZZ_JOBS:-2}
fuzz: fuzz-route route-fuzz-long

# `make bench`: the time to parse and route typical agent lines.
BENCH_C += bench/route-bench.c
$(BUILD)/bench/route-bench: bench/route-bench.c $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/bench/route-bench.d -MT $@ $(LDFLAGS) -o $@ $< \
	    $(BUILD)/libsbx.a $(LDLIBS)
bench-route: $(BUILD)/bench/route-bench
	$(BUILD)/bench/route-bench
bench: bench-route
.PHONY: fuzz-route route-fuzz-long bench-route

# The host-command policy's libFuzzer driver (clang): its parser and the match of words
# against rules; tests/router/fuzz-policy.t runs it briefly in make check.
FUZZ_C += tests/fuzz/fuzz-policy.c
build-fuzz/fuzz-policy: tests/fuzz/fuzz-policy.c $(ROUTE_FUZZ_SRCS) $(wildcard router/*.h shell/*.h common/*.h)
	$(call fuzz_link,-lcjson -lpcre2-8)
fuzz-policy: build-fuzz/fuzz-policy
	$(call fuzz_run,policy,4096)
fuzz: fuzz-policy
.PHONY: fuzz-policy
