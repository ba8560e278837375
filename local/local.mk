# local/: the local backend (runsc or bubblewrap on this machine), which implements
# session/backend.h.
LOCAL_SRCS := local/local_backend.c local/settings.c local/runtime.c local/mounts.c local/limits.c \
              local/spawn.c local/bwrap.c local/runsc.c local/state.c local/status.c \
              local/doctor.c local/egress_run.c local/egress.c local/freeze.c
LIB_SRCS += $(LOCAL_SRCS)
BACKENDS += local

# The statx shim for Debian 12's runsc (see local/runsc_compat.c): a shared
# object beside sbx-agent, never built with the sanitizers (it runs inside
# other programs).
PROGRAMS += $(BIN)/sbx-runsc-compat.so
$(BIN)/sbx-runsc-compat.so: local/runsc_compat.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARNINGS) -O2 -shared -fPIC -o $@ $<

# The persistent shell's interactive marks (local/bash_interactive.c): a bash loadable
# builtin beside sbx-agent, bound into every sandbox; never built with the sanitizers (it
# runs inside bash). nodelete: `enable -d exit` must not unload the marks' functions.
PROGRAMS += $(BIN)/sbx-bash-interactive.so
$(BIN)/sbx-bash-interactive.so: local/bash_interactive.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARNINGS) -O2 -shared -fPIC -Wl,-z,nodelete -o $@ $<

# The egress proxy of AGENT_SANDBOX_LOCAL_NETWORK=allowlist (local/egress_main.c): a host
# process per sandbox, found beside sbx-agent like the shim.
PROGRAMS += $(BIN)/sbx-egress
$(BIN)/sbx-egress: $(call obj,local/egress_main.c) $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

install: install-local
install-local: $(BIN)/sbx-runsc-compat.so $(BIN)/sbx-bash-interactive.so $(BIN)/sbx-egress
	install -d $(DESTDIR)$(LIBEXECDIR)
	install -m 644 $(BIN)/sbx-runsc-compat.so $(DESTDIR)$(LIBEXECDIR)/
	install -m 644 $(BIN)/sbx-bash-interactive.so $(DESTDIR)$(LIBEXECDIR)/
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

TEST_C += tests/local/t-bwrap.c tests/local/t-egress.c
TEST_HELPERS += tests/local/backend-probe.c tests/local/session-drive.c

# The stand-in agent runs inside sandboxes: static and without the
# sanitizers (an ASan runtime cannot load after runsc's preloaded shim).
$(BUILD)/tests/local/probe-agent: tests/local/probe-agent.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARNINGS) -O2 -static -o $@ $<
check: $(BUILD)/tests/local/probe-agent
