# cli/: sbxsh's front end: main(), the options, the input loops (run.c), the line
# executor (line.c) and --route (route_main.c). The top layer: it may call every other.
SBXSH_MAIN := cli/main.c
CLI_SRCS := cli/options.c cli/run.c cli/line.c cli/route_main.c cli/prompt.c cli/interactive.c cli/startup.c cli/view.c cli/policy.c
LIB_SRCS += $(CLI_SRCS)
TEST_C += tests/cli/t-prompt.c

# Where the system's policy file is (cli/policy.c): $(SYSCONFDIR)/sbxsh/policy.
$(BUILD)/cli/policy.o: ALL_CFLAGS += -DSBX_SYSCONFDIR='"$(SYSCONFDIR)"'
