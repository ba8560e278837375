# lib/: libsbxsh, sbxsh as a C library (lib/sbxsh.h), and its Python module (lib/python/).
# Built apart from libsbx: its objects are position-independent (-fPIC) and it links nothing
# of the other layers (each line runs the sbxsh program: lib/sbxsh.c says why).
#
#   $(BUILD)/libsbxsh.so.$(SBXSH_SOVERSION).0.0 (+ the .so.N and .so links), $(BUILD)/libsbxsh.a,
#   $(BUILD)/sbxsh.pc
LIBSBXSH_SRCS := lib/sbxsh.c
SBXSH_SOVERSION := 1
LIBSBXSH_SO = $(BUILD)/libsbxsh.so.$(SBXSH_SOVERSION).0.0
LIBSBXSH_OBJS = $(patsubst %.c,$(BUILD)/pic/%.o,$(LIBSBXSH_SRCS))
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# Debian's python3 looks in dist-packages under /usr/lib/python3 (the Debian packages) and
# /usr/local/lib/python3.X (what is installed locally): the module goes to the latter for
# PREFIX=/usr/local, to /usr/lib/python3/dist-packages for PREFIX=/usr.
PYTHON3 ?= python3
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python3/dist-packages)
MAN3_PAGES := doc/libsbxsh.3

LIBSBXSH_CFLAGS = -fPIC -fvisibility=hidden -DSBXSH_LIB_PROGRAM='"$(BINDIR)/sbxsh"'

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LIBSBXSH_CFLAGS) $(DEPFLAGS) -c -o $@ $<

# A stamp named after BINDIR, as session/session.mk's: `make install PREFIX=/usr` after a
# plain `make` rebuilds the object, so the installed library runs the installed sbxsh.
LIBSBXSH_STAMP := $(BUILD)/pic/lib/bindir$(subst /,_,$(BINDIR)).stamp
$(BUILD)/pic/lib/sbxsh.o: $(LIBSBXSH_STAMP)
$(LIBSBXSH_STAMP):
	@mkdir -p $(dir $@)
	@rm -f $(BUILD)/pic/lib/bindir*.stamp
	@touch $@

$(LIBSBXSH_SO): $(LIBSBXSH_OBJS) lib/libsbxsh.map
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libsbxsh.so.$(SBXSH_SOVERSION) \
	    -Wl,--version-script=lib/libsbxsh.map -Wl,-z,defs -o $@ $(LIBSBXSH_OBJS) -lpthread
	ln -sf $(notdir $@) $(BUILD)/libsbxsh.so.$(SBXSH_SOVERSION)
	ln -sf $(notdir $@) $(BUILD)/libsbxsh.so

$(BUILD)/libsbxsh.a: $(LIBSBXSH_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/sbxsh.pc: lib/sbxsh.pc.in lib/sbxsh.h
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e "s|@VERSION@|$$(sed -n 's/^#define SBXSH_VERSION_STRING "\(.*\)"/\1/p' lib/sbxsh.h)|" $< >$@

LIBSBXSH = $(LIBSBXSH_SO) $(BUILD)/libsbxsh.a $(BUILD)/sbxsh.pc
all: $(LIBSBXSH)

install-lib: $(LIBSBXSH)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	    $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(PYTHONDIR)/sbxsh
	install -m 755 $(LIBSBXSH_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIBSBXSH_SO)) $(DESTDIR)$(LIBDIR)/libsbxsh.so.$(SBXSH_SOVERSION)
	ln -sf $(notdir $(LIBSBXSH_SO)) $(DESTDIR)$(LIBDIR)/libsbxsh.so
	install -m 644 $(BUILD)/libsbxsh.a $(DESTDIR)$(LIBDIR)/
	install -m 644 lib/sbxsh.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(BUILD)/sbxsh.pc $(DESTDIR)$(PKGCONFIGDIR)/
	for m in $(MAN3_PAGES); do install -m 644 $$m $(DESTDIR)$(MANDIR)/man3/; done
	install -m 644 lib/python/sbxsh/__init__.py $(DESTDIR)$(PYTHONDIR)/sbxsh/
	sed -i 's|^_LIBDIR = .*|_LIBDIR = "$(LIBDIR)"|' $(DESTDIR)$(PYTHONDIR)/sbxsh/__init__.py
	@if [ -z '$(DESTDIR)' ] && command -v ldconfig >/dev/null && [ "$$(id -u)" = 0 ]; then ldconfig; fi

uninstall-lib:
	rm -f $(DESTDIR)$(LIBDIR)/libsbxsh.so* $(DESTDIR)$(LIBDIR)/libsbxsh.a \
	    $(DESTDIR)$(INCLUDEDIR)/sbxsh.h $(DESTDIR)$(PKGCONFIGDIR)/sbxsh.pc
	for m in $(MAN3_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man3/$$(basename $$m); done
	rm -rf $(DESTDIR)$(PYTHONDIR)/sbxsh

.PHONY: install-lib uninstall-lib

# Its tests: C (tests/libsbxsh/t-*.c, linked with libsbxsh.a, not libsbx), the Python
# module's (tests/libsbxsh/python.t), the example (tests/libsbxsh/example.t).
TEST_C += tests/libsbxsh/t-libsbxsh.c
$(BUILD)/tests/libsbxsh/%.t: tests/libsbxsh/%.c $(BUILD)/libsbxsh.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/tests/libsbxsh/$*.d -MT $@ $(LDFLAGS) -o $@ $< \
	    $(BUILD)/libsbxsh.a -lpthread

# The example of libsbxsh(3), built as a user builds it (<sbxsh.h>, the library): make check
# builds it, tests/libsbxsh/example.t runs it.
LIBSBXSH_EXAMPLE = $(BUILD)/doc/libsbxsh-example
$(LIBSBXSH_EXAMPLE): doc/libsbxsh-example.c $(LIBSBXSH_SO)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ilib $(LDFLAGS) -o $@ $< -L$(BUILD) -lsbxsh -Wl,-rpath,$(abspath $(BUILD))
check check-units: $(LIBSBXSH_EXAMPLE)

# The captures under libFuzzer (clang): `make fuzz-capture`; tests/libsbxsh/fuzz-capture.t
# runs it for a few seconds.
FUZZ_C += tests/fuzz/fuzz-capture.c
# (the driver includes lib/sbxsh.c, for its static capture functions: one .c to compile)
build-fuzz/fuzz-capture: tests/fuzz/fuzz-capture.c lib/sbxsh.c lib/sbxsh.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz-capture.c -lpthread
fuzz-capture: build-fuzz/fuzz-capture
	$(call fuzz_run,capture,8192)
fuzz: fuzz-capture
.PHONY: fuzz-capture
