# local/: the backend interface, the local runsc/bubblewrap backend, the
# session holder and its client library, and the `sbx` command.
LOCAL_SRCS := local/config.c local/fsutil.c local/local_backend.c local/proto.c \
              local/termfilter.c local/holder.c local/session.c local/egress.c
LIB_SRCS += $(LOCAL_SRCS)
SBX_MAIN := local/sbx_main.c

# Where `make install` puts sbx-agent; the code looks there after its own directory.
$(BUILD)/local/config.o: ALL_CFLAGS += -DSBX_LIBEXECDIR='"$(LIBEXECDIR)"'
# A stamp named after LIBEXECDIR: `make install PREFIX=/usr` after a plain `make`
# rebuilds config.o, so the installed programs look where the agent was installed.
LIBEXEC_STAMP := $(BUILD)/local/libexecdir$(subst /,_,$(LIBEXECDIR)).stamp
$(BUILD)/local/config.o: $(LIBEXEC_STAMP)
$(LIBEXEC_STAMP):
	@mkdir -p $(dir $@)
	@rm -f $(BUILD)/local/libexecdir*.stamp
	@touch $@

# The statx shim for Debian 12's runsc (see local/runsc_compat.c): a shared
# object beside sbx-agent, never built with the sanitizers (it runs inside
# other programs).
PROGRAMS += $(BIN)/sbx-runsc-compat.so
$(BIN)/sbx-runsc-compat.so: local/runsc_compat.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARNINGS) -O2 -shared -fPIC -o $@ $<

# The egress proxy of AGENT_SANDBOX_LOCAL_NETWORK=allowlist (local/egress_main.c): a host
# process per sandbox, found beside sbx-agent like the shim.
PROGRAMS += $(BIN)/sbx-egress
$(BIN)/sbx-egress: $(call obj,local/egress_main.c) $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

install: install-local
install-local: $(BIN)/sbx-runsc-compat.so $(BIN)/sbx-egress
	install -d $(DESTDIR)$(LIBEXECDIR)
	install -m 644 $(BIN)/sbx-runsc-compat.so $(DESTDIR)$(LIBEXECDIR)/
	install -m 755 $(BIN)/sbx-egress $(DESTDIR)$(LIBEXECDIR)/
.PHONY: install-local

# The egress proxy's request parser and policy under libFuzzer (tests/fuzz/fuzz-egress.c).
FUZZ_C += tests/fuzz/fuzz-egress.c
build-fuzz/fuzz-egress: tests/fuzz/fuzz-egress.c local/egress.c $(COMMON_SRCS) local/egress.h
	$(call fuzz_link,)
fuzz-egress: build-fuzz/fuzz-egress
	$(call fuzz_run,egress,8192)
fuzz: fuzz-egress
.PHONY: fuzz-egress

TEST_C += tests/local/t-config.c tests/local/t-termfilter.c tests/local/t-proto.c tests/local/t-egress.c
TEST_HELPERS += tests/local/backend-probe.c tests/local/session-drive.c

# The stand-in agent runs inside sandboxes: static and without the
# sanitizers (an ASan runtime cannot load after runsc's preloaded shim).
$(BUILD)/tests/local/probe-agent: tests/local/probe-agent.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARNINGS) -O2 -static -o $@ $<
check: $(BUILD)/tests/local/probe-agent
