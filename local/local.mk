# local/: the local backend (runsc or bubblewrap on this machine), which implements
# session/backend.h.
LOCAL_SRCS := local/local_backend.c local/settings.c local/runtime.c local/mounts.c local/limits.c \
              local/spawn.c local/bwrap.c local/runsc.c local/state.c local/status.c \
              local/doctor.c
LIB_SRCS += $(LOCAL_SRCS)
BACKENDS += local

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

TEST_C += tests/local/t-bwrap.c
TEST_HELPERS += tests/local/backend-probe.c tests/local/session-drive.c

# The stand-in agent runs inside sandboxes: static and without the
# sanitizers (an ASan runtime cannot load after runsc's preloaded shim).
$(BUILD)/tests/local/probe-agent: tests/local/probe-agent.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARNINGS) -O2 -static -o $@ $<
check: $(BUILD)/tests/local/probe-agent
