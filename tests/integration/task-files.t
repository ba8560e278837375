#!/bin/bash
# A call that names more to sync (AGENT_SANDBOX_TASK_FILES, AGENT_SANDBOX_SYNC_PATHS) than the
# session had rebuilds its sync state for the union (session/holder.c, ensure_conn): what
# both sides knew of the code directories stays known (sync_host_adopt, mf_adopt_roots), so
# a host edit made meanwhile is pushed as an edit, never taken for a change on both sides:
# no "conflict" warning, no *.sbx-conflict-sandbox-* copies. On each runtime.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "task files added on $rt: $why"
        continue
    fi
    setup_session "taskfiles-$rt-$$" "$rt"
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
    cd "$CODE" || bail_out "no code dir"
    git init -q . && git config user.email t@example.com && git config user.name T
    echo v1 > t.txt && git add t.txt && git commit -qm one
    tasks=$SBX_TEST_TMP/tasks-$rt
    syncp=$SBX_TEST_TMP/syncp-$rt
    mkdir -p "$tasks" "$syncp"
    echo 'task file' > "$tasks/snap.sh"

    is "$("$SBXSH" -c 'cat t.txt' 2>&1)" "v1" "$rt: the session starts"
    # the host edits a tracked file and the repository's config between two calls
    echo v2 > t.txt
    git config core.abbrev 9
    out=$(AGENT_SANDBOX_TASK_FILES=$tasks "$SBXSH" -c "cat t.txt; cat $tasks/snap.sh; git config core.abbrev; echo made > made.txt" 2>&1)
    is "$out" "v2
task file
9" "$rt: a call naming task files sees the host's edits and the task file"
    unlike "$out" 'conflict' "$rt: ...with no conflict warning"
    is "$(find . -name '*sbx-conflict*' | wc -l)" 0 "$rt: ...and no conflict copy"
    is "$(cat made.txt 2>&1)" made "$rt: ...what it makes comes back"
    echo v3 > t.txt
    out=$(AGENT_SANDBOX_SYNC_PATHS=$syncp "$SBXSH" -c "cat t.txt; echo back > $syncp/f" 2>&1)
    is "$out" "v3" "$rt: then a call naming a sync path: the next edit arrives, no conflict"
    is "$(cat "$syncp/f" 2>&1)" back "$rt: ...and the sync path syncs"
    is "$(find . -name '*sbx-conflict*' | wc -l)" 0 "$rt: ...still no conflict copy"
    end_session
done
done_testing
