# mcp/: `sbx mcp`, the MCP server on stdio, as the program sbx-mcp (sbx execs it). A front
# end built on libsbxsh (lib/): it links libsbxsh.a, and common/ from libsbx.a.
MCP_SRCS := mcp/rpc.c mcp/text.c mcp/server.c
MCP_MAIN := mcp/main.c
MCP_OBJS = $(call obj,$(MCP_SRCS))
PROGRAMS += $(BIN)/sbx-mcp

$(BIN)/sbx-mcp: $(call obj,$(MCP_MAIN)) $(MCP_OBJS) $(BUILD)/libsbxsh.a $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ -lcjson -lpthread -lm

# Installed beside sbx-agent, where `sbx mcp` looks (session_find_libexec).
install: install-mcp
install-mcp: $(BIN)/sbx-mcp
	install -d $(DESTDIR)$(LIBEXECDIR)
	install -m 755 $(BIN)/sbx-mcp $(DESTDIR)$(LIBEXECDIR)/
.PHONY: install-mcp

# The unit test of the parser and the output escaping links the server's pure parts.
TEST_C += tests/mcp/t-mcp.c
$(BUILD)/tests/mcp/t-mcp.t: tests/mcp/t-mcp.c $(BUILD)/mcp/rpc.o $(BUILD)/mcp/text.o $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/tests/mcp/t-mcp.d -MT $@ $(LDFLAGS) -o $@ $^ $(LDLIBS) -lm

# The request parser and the output escaping under libFuzzer: `make fuzz-mcp`;
# tests/mcp/fuzz-mcp.t runs it for a few seconds in make check.
FUZZ_C += tests/fuzz/fuzz-mcp.c
build-fuzz/fuzz-mcp: tests/fuzz/fuzz-mcp.c mcp/rpc.c mcp/text.c common/strbuf.c common/util.c \
                     common/report.c mcp/rpc.h mcp/text.h common/strbuf.h common/report.h
	$(call fuzz_link,-lcjson -lm)
fuzz-mcp: build-fuzz/fuzz-mcp
	$(call fuzz_run,mcp,65536)
fuzz: fuzz-mcp
.PHONY: fuzz-mcp

# The server's per-call overhead against `sbxsh -c` on each local runtime (bench/mcp.py;
# bench/mcp.md says how to read it).
MCP_BENCH_RUNS ?= 50
MCP_BENCH_RUNTIMES ?= bwrap,runsc
bench-mcp: all
	bench/mcp.py --runs $(MCP_BENCH_RUNS) --runtimes $(MCP_BENCH_RUNTIMES) $(BIN)
bench: bench-mcp
.PHONY: bench-mcp
