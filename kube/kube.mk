# kube/: the Kubernetes backend (agent-sandbox SandboxClaims from a warm pool, the agent
# reached over pods/exec WebSockets).
#
# Two halves, because loading libcurl (and the libraries it pulls in) costs about 5 ms
# per process start, while sbxsh starts in about 1 ms and its holder is a fork of it:
#  - the backend class, kube/backend*.c, is in libsbx and links no libcurl: it runs
#    sbx-kube for everything that talks to the API server;
#  - the client (every other kube/*.c: kubeconfig, REST, watch, WebSocket, exec) is
#    libkube.a, linked only into sbx-kube (kube/kube_main.c), a program that installs
#    beside sbx-agent, and into the tests of tests/kube/.
KUBE_LIBS := -lcurl -lyaml -lcrypto -lcjson
KUBE_CLASS_SRCS := $(sort $(wildcard kube/backend*.c))
KUBE_MAIN := $(wildcard kube/kube_main.c)
KUBE_LIB_SRCS := $(filter-out $(KUBE_CLASS_SRCS) $(KUBE_MAIN),$(sort $(wildcard kube/*.c)))
LIB_SRCS += $(KUBE_CLASS_SRCS)
ifneq ($(KUBE_CLASS_SRCS),)
BACKENDS += kube
endif

$(BUILD)/libkube.a: $(call obj,$(KUBE_LIB_SRCS))
	@rm -f $@
	$(AR) rcs $@ $^

ifneq ($(KUBE_MAIN),)
PROGRAMS += $(BIN)/sbx-kube
$(BIN)/sbx-kube: $(call obj,$(KUBE_MAIN)) $(BUILD)/libkube.a $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(KUBE_LIBS) $(LDLIBS)
install: install-kube
install-kube: $(BIN)/sbx-kube
	install -d $(DESTDIR)$(LIBEXECDIR)
	install -m 755 $(BIN)/sbx-kube $(DESTDIR)$(LIBEXECDIR)/
.PHONY: install-kube
endif

# tests/kube/t-*.c link the client too (a more specific pattern than $(BUILD)/%.t).
TEST_C += $(sort $(wildcard tests/kube/t-*.c))
$(BUILD)/tests/kube/%.t: tests/kube/%.c $(BUILD)/libkube.a $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/tests/kube/$*.d -MT $@ $(LDFLAGS) -o $@ $< \
	    $(BUILD)/libkube.a $(BUILD)/libsbx.a $(KUBE_LIBS) $(LDLIBS)

# The watch stream's parser (kube/kwatch.c, bytes from the API server) under libFuzzer
# (clang): `make fuzz` runs it FUZZ_SECONDS from the seeds in tests/fuzz/corpus-kwatch;
# tests/kube/fuzz-kwatch.t runs it for a few seconds in make check.
FUZZ_C += tests/fuzz/fuzz-kwatch.c
build-fuzz/fuzz-kwatch: tests/fuzz/fuzz-kwatch.c kube/kwatch.c $(COMMON_SRCS) kube/kwatch.h $(wildcard common/*.h)
	$(call fuzz_link,-lcjson)
fuzz-kwatch: build-fuzz/fuzz-kwatch
	$(call fuzz_run,kwatch,65536)
fuzz: fuzz-kwatch
.PHONY: fuzz-kwatch

# The framing and the upgrade answer's parser under libFuzzer (tests/fuzz/fuzz-ws.c): what
# the API server sends is untrusted. tests/kube/fuzz-ws.t runs it for a few seconds.
FUZZ_C += tests/fuzz/fuzz-ws.c
build-fuzz/fuzz-ws: tests/fuzz/fuzz-ws.c kube/ws.c $(COMMON_SRCS) kube/ws.h $(wildcard common/*.h)
	$(call fuzz_link,-lcrypto -lcjson)
fuzz-ws: build-fuzz/fuzz-ws
	$(call fuzz_run,ws,16384)
fuzz: fuzz-ws
.PHONY: fuzz-ws
# t-exec's TLS server is OpenSSL's (libcurl only pulls libssl in for itself).
$(BUILD)/tests/kube/t-exec.t: KUBE_LIBS += -lssl
