# tests/: TAP tests run by prove. C unit tests (tests/<part>/t-*.c) are built
# into $(BUILD)/tests/<part>/t-*.t; shell tests are tests/<part>/*.t.
# SBX_TEST_FILTER=part limits `make check` to tests/<part>; a name that is no part, to the
# tests named name.t (or t-name.t) in any part (layers: tests/integration/layers.t).

TEST_PARTS := common shell router sync session local kube cli mcp cluster integration libsbxsh
TEST_SH = $(wildcard $(addsuffix /*.t,$(addprefix tests/,$(TEST_PARTS))))
PROVE ?= prove
PROVE_FLAGS ?= -j2

check: all $(TEST_PROGS) $(HELPER_PROGS)
	@SBXSH_BIN=$(abspath $(BIN)) SBXSH_BUILD=$(abspath $(BUILD)) \
	  $(PROVE) $(PROVE_FLAGS) $(if $(SBX_TEST_FILTER),$(foreach t,$(addprefix ./,$(TEST_PROGS) $(TEST_SH)),$(if $(if $(wildcard tests/$(SBX_TEST_FILTER)/),$(findstring /tests/$(SBX_TEST_FILTER)/,$(t)),$(filter %/$(SBX_TEST_FILTER).t %/t-$(SBX_TEST_FILTER).t,$(t))),$(t))),$(addprefix ./,$(TEST_PROGS) $(TEST_SH)))

# The C unit tests alone (every program and helper built): what `make check-clang` runs
# against its build.
check-units: all $(TEST_PROGS) $(HELPER_PROGS)
	@SBXSH_BIN=$(abspath $(BIN)) SBXSH_BUILD=$(abspath $(BUILD)) $(PROVE) $(PROVE_FLAGS) $(TEST_PROGS)

.PHONY: check check-units
