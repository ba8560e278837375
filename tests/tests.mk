# tests/: TAP tests run by prove. C unit tests (tests/<part>/t-*.c) are built
# into $(BUILD)/tests/<part>/t-*.t; shell tests are tests/<part>/*.t.
# SBX_TEST_FILTER=part limits `make check` to tests/<part>; a name that is no part, to the
# tests named name.t (or t-name.t) in any part (layers: tests/integration/layers.t).

TEST_PARTS := common shell router sync session local kube cli mcp cluster integration libsbxsh
TEST_SH = $(wildcard $(addsuffix /*.t,$(addprefix tests/,$(TEST_PARTS))))
PROVE ?= prove
PROVE_FLAGS ?= -j2
# The slowest files first (as `prove --timer` measured them in make check; the order is all
# that this changes): prove -j2 runs files in the order given, so a long file started last
# leaves one core idle until it ends. Longest first keeps both busy to the end (minutes).
# A file not here runs after these, in the wildcard's order.
TEST_SLOW := tests/integration/parity.t tests/cluster/shellcheck.t \
    tests/integration/git-fsmonitor.t tests/local/quota-runsc.t tests/router/route-fuzz.t \
    tests/sync/stress.t tests/cluster/image.t tests/integration/host-race.t \
    tests/kube/deadpath.t tests/kube/deadpath-prompt.t tests/kube/expiry.t tests/local/quota-bwrap.t \
    tests/integration/login-shell.t tests/kube/edges.t tests/integration/sbxsh.t \
    tests/integration/agents-tmux.t tests/kube/status.t tests/kube/setup.t \
    tests/local/backend.t tests/kube/grace.t tests/sync/fuzz-flow.t tests/kube/fake.t \
    tests/kube/exec-kube.t tests/kube/kubectl.t tests/kube/sbxsh-kube.t \
    tests/local/exec-runsc.t tests/integration/tty.t tests/integration/git-index.t \
    tests/cluster/cluster-kubectl.t tests/kube/schema.t tests/kube/failures.t
TEST_ALL = $(filter $(TEST_SH),$(TEST_SLOW)) $(TEST_PROGS) $(filter-out $(TEST_SLOW),$(TEST_SH))

check: all $(TEST_PROGS) $(HELPER_PROGS)
	@SBXSH_BIN=$(abspath $(BIN)) SBXSH_BUILD=$(abspath $(BUILD)) \
	  $(PROVE) $(PROVE_FLAGS) $(if $(SBX_TEST_FILTER),$(foreach t,$(addprefix ./,$(TEST_ALL)),$(if $(if $(wildcard tests/$(SBX_TEST_FILTER)/),$(findstring /tests/$(SBX_TEST_FILTER)/,$(t)),$(filter %/$(SBX_TEST_FILTER).t %/t-$(SBX_TEST_FILTER).t,$(t))),$(t))),$(addprefix ./,$(TEST_ALL)))

# The C unit tests alone (every program and helper built): what `make check-clang` runs
# against its build.
check-units: all $(TEST_PROGS) $(HELPER_PROGS)
	@SBXSH_BIN=$(abspath $(BIN)) SBXSH_BUILD=$(abspath $(BUILD)) $(PROVE) $(PROVE_FLAGS) $(TEST_PROGS)

.PHONY: check check-units
