#!/bin/bash
# sbx doctor notes when the person's git would use a bare repository it discovers (no
# safe.bareRepository=explicit in their global or the system config), with the command
# that sets it, and says it is set once it is. Starts no sandbox.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"

[ -x "$SBX" ] || skip_all "sbx not built"
command -v git >/dev/null || skip_all "git not installed"
local_env
# Only the test's own HOME config counts, not this machine's system one.
export GIT_CONFIG_NOSYSTEM=1

out=$("$SBX" doctor)
like "$out" "note  host git would use a bare repository it discovers in a code directory" \
    "without safe.bareRepository=explicit, doctor notes it"
like "$out" "run: git config --global safe.bareRepository explicit" "...with what to run"

git config --global safe.bareRepository explicit
out=$("$SBX" doctor)
like "$out" "ok    host git uses no bare repository it discovers: safe.bareRepository=explicit" \
    "with it set, doctor says so"
unlike "$out" "would use a bare repository" "...and has no note"

git config --global safe.bareRepository all
like "$("$SBX" doctor)" "note  host git would use a bare repository" \
    "safe.bareRepository=all gets the note again"
done_testing
