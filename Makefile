# sbxsh: the top-level Makefile.
#
# One non-recursive build. Each part has a fragment (common/common.mk,
# shell/shell.mk, ...) that appends its sources to the variables below; this
# file owns the rules. Objects go under $(BUILD), programs into $(BIN).
#
#   make              sbxsh, sbx, sbx-agent and the static sbx-agent-static
#   make check        the test suite (prove), what CI runs; make check-units: the C unit tests
#   make check-asan   the same tests built with ASan + UBSan, in build-asan/ (the tests take
#                     every program from there: SBXSH_BIN, SBXSH_BUILD)
#   make check-clang  everything (programs, unit tests, test helpers) built with clang under the
#                     same -Werror, in build-clang/, and the C unit tests run against it
#   make fuzz         the fuzz drivers, longer runs: FUZZ_SECONDS each (default 60; libFuzzer, clang)
#   make bench        the benchmarks quoted in docs/performance.md
#   make deps         installs every Debian package the project needs (root if one is missing)
#   make install      PREFIX=/usr/local DESTDIR= (the programs, libsbxsh and its Python module)
#   make install-shell   adds $(BINDIR)/sbxsh to /etc/shells (once; DESTDIR respected)
#   make uninstall    takes away what make install put (the same PREFIX and DESTDIR);
#                     make uninstall-shell takes $(BINDIR)/sbxsh out of /etc/shells
#   make clean        removes build/, build-asan/, build-clang/, build-fuzz/ and the programs

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/lib/sbxsh
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share
SYSCONFDIR ?= $(PREFIX)/etc
DESTDIR ?=

BUILD ?= build
BIN ?= .
CC ?= cc
MUSL_CC ?= musl-gcc
OPT ?= -O2 -g
CFLAGS ?= $(OPT)
LDFLAGS ?=
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-unused-parameter -Wformat=2 -Wno-format-nonliteral
ALL_CFLAGS = -std=gnu11 -D_GNU_SOURCE -I. $(WARNINGS) $(CFLAGS)
DEPFLAGS = -MMD -MP
LDLIBS := -lcjson -lpcre2-8 -lreadline -lutil

# Filled in by the part fragments.
LIB_SRCS :=      # libsbx: everything sbxsh and sbx link (no main)
AGENT_SRCS :=    # sbx-agent: libc only, so that it also builds static with musl
SBXSH_MAIN :=    # the file with sbxsh's main()
SBX_MAIN :=      # the file with sbx's main()
AGENT_MAIN :=    # the file with sbx-agent's main()
TEST_C :=        # C unit tests: tests/<part>/t-*.c, each a TAP program
TEST_HELPERS :=  # helper programs the tests run: path/name.c -> $(BUILD)/path/name
FUZZ_C :=        # libFuzzer drivers: tests/fuzz/fuzz-*.c
BENCH_C :=       # benchmark programs
BACKENDS :=      # the sandbox backends built in: a backend's fragment adds its name
MAN_PAGES := doc/sbxsh.1 doc/sbx.1 doc/sbxsh-policy.5

all:

# Recursive (=) so that they see what the fragments add.
obj = $(patsubst %.c,$(BUILD)/%.o,$(1))
LIB_OBJS = $(call obj,$(LIB_SRCS))
AGENT_OBJS = $(call obj,$(AGENT_SRCS))
MUSL_OBJS = $(patsubst %.c,$(BUILD)/musl/%.o,$(AGENT_SRCS) $(AGENT_MAIN))
TEST_PROGS = $(patsubst %.c,$(BUILD)/%.t,$(TEST_C))
HELPER_PROGS = $(patsubst %.c,$(BUILD)/%,$(TEST_HELPERS))
# libFuzzer drivers, built with clang (FUZZ_CC). A fragment gives
# build-fuzz/fuzz-NAME its sources as prerequisites with `$(call fuzz_link,LIBS)`
# as the recipe, and fuzz-NAME `$(call fuzz_run,NAME,MAX_LEN)`: FUZZ_SECONDS,
# seeded, from tests/fuzz/corpus-NAME plus what earlier runs found.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_CFLAGS = -std=gnu11 -D_GNU_SOURCE -I. -g -O1 -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=undefined
define fuzz_link
@mkdir -p $(dir $@)
$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) $(1)
endef
define fuzz_run
@mkdir -p build-fuzz/corpus-$(1)
build-fuzz/fuzz-$(1) -seed=1 -max_total_time=$(FUZZ_SECONDS) -max_len=$(2) -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix=build-fuzz/ build-fuzz/corpus-$(1) tests/fuzz/corpus-$(1)
endef
PROGRAMS = $(if $(SBXSH_MAIN),$(BIN)/sbxsh) $(if $(SBX_MAIN),$(BIN)/sbx) \
           $(if $(AGENT_MAIN),$(BIN)/sbx-agent $(BIN)/sbx-agent-static)

include common/common.mk
include shell/shell.mk
include router/router.mk
include sync/sync.mk
include local/local.mk
include kube/kube.mk
include session/session.mk
include cli/cli.mk
include lib/lib.mk
include mcp/mcp.mk
include completions/completions.mk
include tests/tests.mk
include bench/bench.mk

all: $(PROGRAMS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

# The static agent: musl, libc only. Its objects live apart from glibc's.
$(BUILD)/musl/%.o: %.c
	@mkdir -p $(dir $@)
	@command -v $(MUSL_CC) >/dev/null || { echo "$(MUSL_CC) not found: install musl-tools (sudo make deps)" >&2; exit 1; }
	$(MUSL_CC) -std=gnu11 -D_GNU_SOURCE -I. $(WARNINGS) $(OPT) -DSBX_STATIC_AGENT $(DEPFLAGS) -c -o $@ $<

# The backend registry (session/backend.h): session_backend_classes[] lists the class
# NAME_backend_class of each NAME in BACKENDS, so that nothing in the source names
# a backend outside its own folder. Rewritten only when the list changes.
REGISTRY_C = $(BUILD)/session/backends.c
$(REGISTRY_C): FORCE
	@mkdir -p $(dir $@)
	@{ echo '/* Generated by the Makefile from BACKENDS: $(BACKENDS) */'; \
	   echo '#include "session/backend.h"'; \
	   for b in $(BACKENDS); do echo "extern const sbx_backend_class $${b}_backend_class;"; done; \
	   echo 'const sbx_backend_class *const session_backend_classes[] = {'; \
	   for b in $(BACKENDS); do echo "    &$${b}_backend_class,"; done; \
	   echo '    NULL,'; echo '};'; } >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/session/backends.o: $(REGISTRY_C)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/libsbx.a: $(LIB_OBJS) $(BUILD)/session/backends.o
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN)/sbxsh: $(call obj,$(SBXSH_MAIN)) $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BIN)/sbx: $(call obj,$(SBX_MAIN)) $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BIN)/sbx-agent: $(call obj,$(AGENT_MAIN)) $(AGENT_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^

$(BIN)/sbx-agent-static: $(MUSL_OBJS)
	@mkdir -p $(dir $@)
	$(MUSL_CC) -static $(OPT) -o $@ $^

$(BUILD)/%.t: %.c $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/$*.d -MT $@ $(LDFLAGS) -o $@ $< $(BUILD)/libsbx.a $(LDLIBS)

$(HELPER_PROGS): $(BUILD)/%: %.c $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/$*.d -MT $@ $(LDFLAGS) -o $@ $< $(BUILD)/libsbx.a $(LDLIBS)

# ASan + UBSan: a separate build tree; the same tests run against it.
check-asan:
	$(MAKE) BUILD=build-asan BIN=build-asan \
	    CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	    LDFLAGS="-fsanitize=address,undefined" check

# clang: every program and test built by the other compiler with the same warnings and
# -Werror, so that a construct only one of them flags (clang's -Wfor-loop-analysis,
# -Wstring-concatenation) stops the build. gcc stays the compiler of `make check`; the C
# unit tests also run against the clang build, as a check that its code behaves alike.
CLANG ?= clang
check-clang:
	$(MAKE) CC=$(CLANG) BUILD=build-clang BIN=build-clang check-units

deps:
	./tests/deps.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(MANDIR)/man5
	install -m 755 $(BIN)/sbxsh $(BIN)/sbx $(DESTDIR)$(BINDIR)/
	install -m 755 $(BIN)/sbx-agent $(BIN)/sbx-agent-static $(DESTDIR)$(LIBEXECDIR)/
	for m in $(MAN_PAGES); do install -m 644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/; done
	$(MAKE) install-completions
	$(MAKE) install-lib
	@grep -qxF '$(BINDIR)/sbxsh' $(DESTDIR)$(SHELLS) 2>/dev/null || \
	    echo "To make sbxsh a login shell (chsh -s, su -, login), list it in $(SHELLS): make install-shell$(if $(DESTDIR), DESTDIR=$(DESTDIR))$(if $(filter-out /usr/local,$(PREFIX)), PREFIX=$(PREFIX))"

# /etc/shells lists the login shells chsh offers and login, su and sshd accept. Changing
# it is the machine's policy, and a packaged install (DESTDIR) must not touch the running
# system's, so `make install` only says how; this adds $(BINDIR)/sbxsh once (with DESTDIR,
# to $(DESTDIR)$(SHELLS), the staged copy), and uninstall-shell takes it out again.
SHELLS ?= /etc/shells
install-shell:
	@f='$(DESTDIR)$(SHELLS)'; s='$(BINDIR)/sbxsh'; \
	if [ -f "$$f" ] && grep -qxF "$$s" "$$f"; then echo "$$s is in $$f already"; exit 0; fi; \
	mkdir -p "$$(dirname "$$f")" && \
	{ [ ! -s "$$f" ] || [ -z "$$(tail -c 1 "$$f")" ] || echo >>"$$f"; } && \
	echo "$$s" >>"$$f" && echo "added $$s to $$f"

uninstall-shell:
	@f='$(DESTDIR)$(SHELLS)'; s='$(BINDIR)/sbxsh'; \
	if [ -f "$$f" ] && grep -qxF "$$s" "$$f"; then \
	    t=$$(grep -vxF "$$s" "$$f"); { [ -z "$$t" ] || printf '%s\n' "$$t"; } >"$$f" && \
	    echo "removed $$s from $$f"; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sbxsh $(DESTDIR)$(BINDIR)/sbx
	rm -rf $(DESTDIR)$(LIBEXECDIR)
	for m in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$$(basename $$m); done
	$(MAKE) uninstall-completions
	$(MAKE) uninstall-lib

clean:
	rm -rf build build-asan build-clang build-fuzz $(PROGRAMS)

FORCE:

.PHONY: all check check-asan check-clang fuzz bench deps install install-shell uninstall uninstall-shell \
        clean FORCE
.DELETE_ON_ERROR:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
