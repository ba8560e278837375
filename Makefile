# sbxsh: the top-level Makefile.
#
# One non-recursive build. Each part has a fragment (common/common.mk,
# shell/shell.mk, ...) that appends its sources to the variables below; this
# file owns the rules. Objects go under $(BUILD), programs into $(BIN).
#
#   make              sbxsh, sbx, sbx-agent and the static sbx-agent-static
#   make check        the test suite (prove), what CI runs
#   make check-asan   the same tests built with ASan + UBSan
#   make fuzz         the fuzz drivers, longer runs (libFuzzer, clang)
#   make bench        the benchmarks quoted in README.md
#   make deps         installs every Debian package the project needs (root)
#   make install      PREFIX=/usr/local DESTDIR=

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/lib/sbxsh
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share
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
LDLIBS := -lcjson -lreadline -lutil

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
MAN_PAGES := doc/sbxsh.1 doc/sbx.1

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
include session/session.mk
include cli/cli.mk
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

$(BUILD)/libsbx.a: $(LIB_OBJS)
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

deps:
	./tests/deps.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(BIN)/sbxsh $(BIN)/sbx $(DESTDIR)$(BINDIR)/
	install -m 755 $(BIN)/sbx-agent $(BIN)/sbx-agent-static $(DESTDIR)$(LIBEXECDIR)/
	for m in $(MAN_PAGES); do install -m 644 $$m $(DESTDIR)$(MANDIR)/man1/; done
	$(MAKE) install-completions

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sbxsh $(DESTDIR)$(BINDIR)/sbx
	rm -rf $(DESTDIR)$(LIBEXECDIR)
	for m in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man1/$$(basename $$m); done
	$(MAKE) uninstall-completions

clean:
	rm -rf build build-asan build-fuzz $(PROGRAMS)

.PHONY: all check check-asan fuzz bench deps install uninstall clean
.DELETE_ON_ERROR:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
