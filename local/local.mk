# local/: the backend interface, the local runsc/bubblewrap backend, the
# session holder and its client library, and the `sbx` command.
LOCAL_SRCS := local/config.c local/fsutil.c local/local_backend.c local/proto.c \
              local/termfilter.c local/holder.c local/session.c
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

install: install-local
install-local: $(BIN)/sbx-runsc-compat.so
	install -d $(DESTDIR)$(LIBEXECDIR)
	install -m 644 $(BIN)/sbx-runsc-compat.so $(DESTDIR)$(LIBEXECDIR)/
.PHONY: install-local

TEST_C += tests/local/t-config.c tests/local/t-termfilter.c tests/local/t-proto.c
TEST_HELPERS += tests/local/backend-probe.c tests/local/session-drive.c

# The stand-in agent runs inside sandboxes: static and without the
# sanitizers (an ASan runtime cannot load after runsc's preloaded shim).
$(BUILD)/tests/local/probe-agent: tests/local/probe-agent.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARNINGS) -O2 -static -o $@ $<
check: $(BUILD)/tests/local/probe-agent
