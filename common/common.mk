# common/: helpers every part uses (strbuf, arena, allocation, I/O, errors).
COMMON_SRCS := common/strbuf.c common/util.c common/arena.c common/strvec.c common/framebuf.c \
               common/fsat.c \
               common/urlcred.c common/report.c
LIB_SRCS += $(COMMON_SRCS)
AGENT_SRCS += $(COMMON_SRCS)
# File-system and process helpers only the host programs use (not the agent).
LIB_SRCS += common/fsutil.c
TEST_C += tests/common/t-strbuf.c tests/common/t-arena.c tests/common/t-strvec.c \
          tests/common/t-framebuf.c tests/common/t-report.c tests/common/t-fsat.c
