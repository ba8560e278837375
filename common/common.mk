# common/: helpers every part uses (strbuf, arena, allocation, I/O, errors).
COMMON_SRCS := common/strbuf.c common/util.c common/arena.c common/strvec.c common/framebuf.c \
               common/bytes.c common/base64.c common/json.c \
               common/fsat.c common/run.c \
               common/urlcred.c common/report.c
LIB_SRCS += $(COMMON_SRCS)
AGENT_SRCS += $(COMMON_SRCS)
# File-system and process helpers only the host programs use (not the agent).
LIB_SRCS += common/fsutil.c common/audit.c
TEST_C += tests/common/t-strbuf.c tests/common/t-arena.c tests/common/t-strvec.c \
          tests/common/t-framebuf.c tests/common/t-report.c tests/common/t-fsat.c \
          tests/common/t-bytes.c tests/common/t-json.c tests/common/t-run.c

# common/'s readers of untrusted bytes (the bounded little-endian reader, base64) under
# libFuzzer: `make fuzz-bytes`; tests/common/fuzz-bytes.t runs it for a few seconds.
FUZZ_C += tests/fuzz/fuzz-bytes.c
build-fuzz/fuzz-bytes: tests/fuzz/fuzz-bytes.c common/bytes.c common/base64.c common/strbuf.c \
                       common/util.c common/report.c common/bytes.h common/base64.h common/strbuf.h
	$(call fuzz_link,)
fuzz-bytes: build-fuzz/fuzz-bytes
	$(call fuzz_run,bytes,4096)
fuzz: fuzz-bytes
.PHONY: fuzz-bytes
