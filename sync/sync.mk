# sync/: the manifest, deltas, safe apply, git allowlists, the wire protocol, the host-side
# connection (libsbx) and sbx-agent (libc only; also built static with musl).
SYNC_COMMON := sync/wire.c sync/safefs.c sync/ignore.c sync/gitpolicy.c sync/gitindex.c sync/githash.c \
               sync/manifest.c sync/fsmonitor.c \
               sync/gitcred.c sync/manifest_watch.c sync/manifest_scan.c sync/manifest_save.c sync/manifest_pathmap.c \
               sync/delta.c sync/apply.c
# The two sides of a delta's apply: each binary links only its own (sync/apply_int.h).
SYNC_HOSTWRITE := sync/hostwrite.c sync/journal.c
SYNC_AGENT_APPLY := sync/agent_apply.c
SYNC_CONN := sync/conn.c sync/conn_host.c sync/conn_request.c sync/conn_wait.c
LIB_SRCS += $(SYNC_COMMON) $(SYNC_HOSTWRITE) $(SYNC_CONN) sync/resume.c sync/rcfile.c
AGENT_SRCS += $(SYNC_COMMON) $(SYNC_AGENT_APPLY) sync/agent.c sync/agent_fsmon.c sync/agent_chan.c sync/agent_spawn.c sync/agent_sync.c sync/dnsstub.c \
              sync/agent_pod.c sync/resume.c
AGENT_MAIN := sync/agent_main.c
TEST_C += tests/sync/t-wire.c tests/sync/t-ignore.c tests/sync/t-gitpolicy.c tests/sync/t-manifest.c \
          tests/sync/t-delta.c tests/sync/t-sparse.c \
          tests/sync/t-conn.c tests/sync/t-hostile.c tests/sync/t-flow.c
TEST_HELPERS += tests/sync/hostile-agent.c tests/sync/sync-run.c

# The DNS stub is the agent's alone (not in libsbx): its unit test links its object.
TEST_C += tests/sync/t-dnsstub.c tests/sync/t-safefs.c tests/sync/t-journal.c
$(BUILD)/tests/sync/t-dnsstub.t: tests/sync/t-dnsstub.c $(BUILD)/sync/dnsstub.o $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/tests/sync/t-dnsstub.d -MT $@ $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LDLIBS)

# The agent's apply is not in libsbx either: the tests that apply as the agent link its object.
SYNC_AGENT_APPLY_TESTS := t-delta t-sparse t-unsynced
$(patsubst %,$(BUILD)/tests/sync/%.t,$(SYNC_AGENT_APPLY_TESTS)): $(BUILD)/tests/sync/%.t: tests/sync/%.c $(BUILD)/sync/agent_apply.o $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $(BUILD)/tests/sync/$*.d -MT $@ $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LDLIBS)

# The protocol decoder and host-side applier under libFuzzer (clang): `make fuzz` runs it
# FUZZ_SECONDS from the seeds in tests/fuzz/corpus-wire; tests/sync/fuzz-wire.t runs it for a
# few seconds in make check when clang's libFuzzer is installed.
FUZZ_C += tests/fuzz/fuzz-wire.c
build-fuzz/fuzz-wire: tests/fuzz/fuzz-wire.c $(SYNC_COMMON) $(SYNC_HOSTWRITE) $(COMMON_SRCS) $(wildcard sync/*.h common/*.h)
	$(call fuzz_link,)
fuzz-wire: build-fuzz/fuzz-wire
	$(call fuzz_run,wire,65536)
fuzz: fuzz-wire
.PHONY: fuzz-wire

# The host's flow control (windows, credits, writable) against a simulated agent whose
# steps the fuzz input chooses; checks that nothing stalls once everything is consumed.
FUZZ_C += tests/fuzz/fuzz-flow.c
build-fuzz/fuzz-flow: tests/fuzz/fuzz-flow.c $(SYNC_CONN) sync/rcfile.c $(SYNC_COMMON) $(SYNC_HOSTWRITE) $(COMMON_SRCS) $(wildcard sync/*.h common/*.h)
	$(call fuzz_link,)
fuzz-flow: build-fuzz/fuzz-flow
	$(call fuzz_run,flow,4096)
fuzz: fuzz-flow
.PHONY: fuzz-flow

# The sandbox's DNS stub (sync/dnsstub.c) answering fuzzed queries.
FUZZ_C += tests/fuzz/fuzz-dns.c
build-fuzz/fuzz-dns: tests/fuzz/fuzz-dns.c sync/dnsstub.c sync/dnsstub.h common/run.c common/run.h \
                    common/strbuf.c common/strvec.c common/util.c common/report.c
	$(call fuzz_link,)
fuzz-dns: build-fuzz/fuzz-dns
	$(call fuzz_run,dns,4096)
fuzz: fuzz-dns
.PHONY: fuzz-dns

TEST_C += tests/sync/t-unsynced.c tests/sync/t-resume.c tests/sync/t-gitcred.c tests/sync/t-rcfile.c tests/sync/t-quota.c \
          tests/sync/t-gitindex.c tests/sync/t-fsmonitor.c

# The resumable stream under the kube backend's exec (sync/resume.c): the keeper in the pod
# is the sandbox's, so its frames are fuzzed as the agent's are (tests/sync/fuzz-resume.t).
FUZZ_C += tests/fuzz/fuzz-resume.c
build-fuzz/fuzz-resume: tests/fuzz/fuzz-resume.c sync/resume.c $(COMMON_SRCS) sync/resume.h common/strbuf.h
	$(call fuzz_link,)
fuzz-resume: build-fuzz/fuzz-resume
	$(call fuzz_run,resume,8192)
fuzz: fuzz-resume
.PHONY: fuzz-resume

# The startup-file filter (sync/rcfile.c) under libFuzzer: tests/sync/fuzz-rcfile.t runs it
# for a few seconds in make check when clang's libFuzzer is installed.
FUZZ_C += tests/fuzz/fuzz-rcfile.c
build-fuzz/fuzz-rcfile: tests/fuzz/fuzz-rcfile.c sync/rcfile.c $(COMMON_SRCS) sync/rcfile.h common/strbuf.h common/strvec.h common/urlcred.h
	$(call fuzz_link,)
fuzz-rcfile: build-fuzz/fuzz-rcfile
	$(call fuzz_run,rcfile,16384)
fuzz: fuzz-rcfile
.PHONY: fuzz-rcfile

# The .git/index merge (sync/gitindex.c): on the host the received index is the sandbox's.
FUZZ_C += tests/fuzz/fuzz-gitindex.c
build-fuzz/fuzz-gitindex: tests/fuzz/fuzz-gitindex.c sync/gitindex.c sync/githash.c $(COMMON_SRCS) sync/gitindex.h sync/githash.h common/strbuf.h
	$(call fuzz_link,)
fuzz-gitindex: build-fuzz/fuzz-gitindex
	$(call fuzz_run,gitindex,65536)
fuzz: fuzz-gitindex
.PHONY: fuzz-gitindex

# git's fsmonitor in the sandbox (sync/fsmonitor.c): requests, the hook's check of an answer,
# and the journal's answers to a fuzzed series of events (tests/sync/fuzz-fsmonitor.t).
FUZZ_C += tests/fuzz/fuzz-fsmonitor.c
build-fuzz/fuzz-fsmonitor: tests/fuzz/fuzz-fsmonitor.c sync/fsmonitor.c $(COMMON_SRCS) sync/fsmonitor.h common/strbuf.h
	$(call fuzz_link,)
fuzz-fsmonitor: build-fuzz/fuzz-fsmonitor
	$(call fuzz_run,fsmonitor,4096)
fuzz: fuzz-fsmonitor
.PHONY: fuzz-fsmonitor

# The undo journal's parser (sync/journal.c): the log is ours (the state directory), but a
# crash may cut a record and its paths name host files (tests/sync/fuzz-journal.t).
FUZZ_C += tests/fuzz/fuzz-journal.c
build-fuzz/fuzz-journal: tests/fuzz/fuzz-journal.c sync/journal.c $(SYNC_COMMON) $(COMMON_SRCS) sync/journal.h sync/safefs.h
	$(call fuzz_link,)
fuzz-journal: build-fuzz/fuzz-journal
	$(call fuzz_run,journal,8192)
fuzz: fuzz-journal
.PHONY: fuzz-journal
