# shellcheck shell=bash
# A full sandbox space names its limit, on one runtime; sourced by diskfull-runsc.t and
# diskfull-bwrap.t with RT set (issue 21). Each code directory's copy, /tmp and HOME in the
# sandbox is a tmpfs of AGENT_SANDBOX_DISK_MAX: filling one gives a bare ENOSPC, so after a
# command that leaves one full, sbxsh adds one line on its stderr naming the space, the
# variable and its value; the command's own output and status are bash's. Once per fill: a
# second failing write in the same full space adds nothing, a space emptied and filled again
# is named again. Also in stdin mode (the persistent shell). Every call is bounded.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

runtime_env "diskfull-$RT"
export AGENT_SANDBOX_DISK_MAX=1M
# the undo journal's default bound is a quarter of that (256 KiB): the megabyte files here
# would make it say, rightly, that it drops them (docs/undo.md); these checks count sbxsh's
# lines about full spaces only
export AGENT_SANDBOX_UNDO_MAX=64M
teardown() {
    timeout -s KILL 30 "$SBX" release >/dev/null 2>&1
    local_teardown
    tap_cleanup
}
trap teardown EXIT
out=$SBX_TEST_TMP/out err=$SBX_TEST_TMP/err
S() { timeout -s KILL 120 "$SBXSH" -c "$1" >"$out" 2>"$err"; }   # LINE
notes() { grep -c '^sbxsh: ' "$err"; }
limit='AGENT_SANDBOX_DISK_MAX=1048576 \(1 MiB\) bounds each code directory.s copy, /tmp and HOME'

S true
is "$?" 0 "the session starts with AGENT_SANDBOX_DISK_MAX=1M"

# ---- the code directory's copy ---------------------------------------------------------------
S 'head -c 2M /dev/zero > big'
is "$?" 1 "code: a 2 MB write into the 1 MiB copy fails with head's status, as under bash"
is "$(wc -c <"$out")" 0 "code: ...and prints nothing on stdout"
like "$(head -n 1 "$err")" "^head: .*No space left on device" "code: head's own message comes first"
like "$(tail -n 1 "$err")" "^sbxsh: warning: the sandbox has no space left in $PROJ \\(its copy of the code directory\\): $limit" \
     "code: ...then one sbxsh line naming the copy, the variable and its value"
is "$(notes)" 1 "code: ...only one"
is "$(sed -n 's/^sbxsh: warning: the sandbox has no space left in \(.*\): AGENT_SANDBOX_DISK_MAX=.*/\1/p' "$err")" \
   "$PROJ (its copy of the code directory)" "code: ...and names nothing else as full"

S 'echo more > more.txt'
is "$?" 1 "code: a second write into the full copy fails too"
is "$(notes)" 0 "code: ...without a second sbxsh line (once per fill)"

S 'rm -f big more.txt && echo freed'
is "$(cat "$out")" freed "code: removing the file frees the copy"
is "$(notes)" 0 "code: ...and says nothing"
S 'head -c 2M /dev/zero > big2'
like "$(tail -n 1 "$err")" "^sbxsh: warning: the sandbox has no space left in $PROJ " \
     "code: filled again after being freed, it is named again"
S 'rm -f big2'

# ---- /tmp and HOME ---------------------------------------------------------------------------
S 'head -c 2M /dev/zero > /tmp/t; echo "status $?"'
is "$(cat "$out")" "status 1" "tmp: the write into /tmp fails, and the line goes on (status 0)"
like "$(tail -n 1 "$err")" "^sbxsh: warning: the sandbox has no space left in /tmp: $limit" \
     "tmp: one line names /tmp and the limit, even though the command's status is 0"
is "$(notes)" 1 "tmp: ...only one"

S 'head -c 2M /dev/zero > ~/h'
like "$(tail -n 1 "$err")" "^sbxsh: warning: the sandbox has no space left in /tmp and HOME \\($HOME\\): $limit" \
     "home: filling HOME names it (with /tmp, still full)"

# ---- stdin mode: the persistent shell's parts ------------------------------------------------
S 'rm -f /tmp/t ~/h'
printf 'head -c 2M /dev/zero > /tmp/u\necho "st=$?"\n' |
    timeout -s KILL 120 "$SBXSH" >"$out" 2>"$err"
is "$?" 0 "stdin: the script's status is its last command's"
is "$(cat "$out")" "st=1" "stdin: the write fails inside, the next command sees status 1"
like "$(cat "$err")" "sbxsh: warning: the sandbox has no space left in /tmp: $limit" \
     "stdin: the part that filled /tmp names it"
is "$(notes)" 1 "stdin: ...once"

done_testing
