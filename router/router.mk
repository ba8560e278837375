# router/: host-or-sandbox decisions for every part of a line, and the host
# runner (argv, pipes, echo/printf in-process; never a host shell).
ROUTER_SRCS := router/builtins.c router/classify.c router/filters.c router/git.c \
               router/hostrun.c router/paths.c router/print.c
LIB_SRCS += $(ROUTER_SRCS)

TEST_C += tests/router/t-builtins.c tests/router/t-route-table.c

# The line executor (the lead engineer's): runs parsed lines part by part.
LIB_SRCS += router/line.c
TEST_HELPERS += tests/router/route-run.c
