# session/: the backend-neutral session layer: config, the holder, the client library
# and its protocol, the terminal filter, the backend interface and its registry, and
# the `sbx` command.
SESSION_SRCS := session/config.c session/proto.c session/termfilter.c session/holder.c \
                session/session.c session/backend.c session/undo.c
LIB_SRCS += $(SESSION_SRCS)
SBX_MAIN := session/sbx_main.c

# Where `make install` puts sbx-agent; the code looks there after its own directory.
$(BUILD)/session/config.o: ALL_CFLAGS += -DSBX_LIBEXECDIR='"$(LIBEXECDIR)"'
# A stamp named after LIBEXECDIR: `make install PREFIX=/usr` after a plain `make`
# rebuilds config.o, so the installed programs look where the agent was installed.
LIBEXEC_STAMP := $(BUILD)/session/libexecdir$(subst /,_,$(LIBEXECDIR)).stamp
$(BUILD)/session/config.o: $(LIBEXEC_STAMP)
$(LIBEXEC_STAMP):
	@mkdir -p $(dir $@)
	@rm -f $(BUILD)/session/libexecdir*.stamp
	@touch $@

TEST_C += tests/session/t-config.c tests/session/t-termfilter.c tests/session/t-proto.c

# The terminal filter's libFuzzer driver (clang): `make fuzz-termfilter`.
FUZZ_C += tests/fuzz/fuzz-termfilter.c
build-fuzz/fuzz-termfilter: tests/fuzz/fuzz-termfilter.c session/termfilter.c $(COMMON_SRCS) $(wildcard session/*.h common/*.h)
	$(call fuzz_link,)
fuzz-termfilter: build-fuzz/fuzz-termfilter
	$(call fuzz_run,termfilter,4096)
fuzz: fuzz-termfilter
.PHONY: fuzz-termfilter
