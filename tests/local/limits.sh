# shellcheck shell=bash
# The sandbox's limits on one runtime, end to end through `sbx exec`; sourced
# by limits-runsc.t and limits-bwrap.t with RT set (prove runs them in
# parallel). A fork bomb and a memory hog hit the limits, the host and the
# session go on, and `sbx status` says what is in force.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

runtime_env "lim-$RT"
export AGENT_SANDBOX_PIDS_MAX=100 AGENT_SANDBOX_MEMORY_MAX=256M
teardown() {
    "$SBX" release >/dev/null 2>&1
    local_teardown
    tap_cleanup
}
trap teardown EXIT

X() { "$SBX" exec --keep -- "$@"; }

# ---- status -----------------------------------------------------------------
is "$(X echo started)" "started" "a session with AGENT_SANDBOX_PIDS_MAX=100 AGENT_SANDBOX_MEMORY_MAX=256M"
json=$("$SBX" status --json)
like "$json" '"limits":\{"pids_max":100,"memory_max":268435456,' "status --json shows the limits"
mech=$(printf '%s' "$json" | sed -n 's/.*"mechanism":"\([^"]*\)".*/\1/p')
like "$mech" '^(cgroup v1|cgroup v2|rlimit)$' "...and the mechanism enforcing them ($mech)"
human=$("$SBX" status)
like "$human" "limits: +100 processes, 256 MiB memory, all CPUs, 10 GiB per code copy and /tmp" \
   "sbx status shows the limits"
like "$human" "enforced: +by (cgroup v[12]: /sys/fs/cgroup/|rlimits)" "...and how they are enforced"
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/pids ] && [ -d /sys/fs/cgroup/memory ]; then
    # root on a v1 (or hybrid) host, as here and in CI: a cgroup is made
    is "$mech" "cgroup v1" "root on cgroup v1: the limits are a cgroup's"
    cgs=$(printf '%s' "$json" | sed -n 's/.*"cgroups":\[\([^]]*\)\].*/\1/p' | tr -d '"' | tr ',' ' ')
    memcg=$(for d in $cgs; do case $d in */memory/*) echo "$d";; esac; done)
    pidcg=$(for d in $cgs; do case $d in */pids/*) echo "$d";; esac; done)
    is "$(cat "$memcg/memory.limit_in_bytes" 2>&1)" "268435456" "...its memory limit is 256M"
    if [ "$RT" = bwrap ]; then
        is "$(cat "$pidcg/pids.max" 2>&1)" "100" "...its pids.max is 100"
    else
        # runsc: the Sentry enforces the 100 (RLIMIT_NPROC); the host
        # cgroup holds a backstop for its own threads and ptrace stubs
        like "$(cat "$pidcg/pids.max" 2>&1)" '^[0-9]+$' "...with a host pids.max as a backstop"
    fi
fi

# ---- a fork bomb --------------------------------------------------------------
# 400 background sleeps: bash's fork fails at the limit ("Resource temporarily
# unavailable", after its retries, and ends the loop). The command then counts the sleeps that
# started and waits on its stdin, so that the host can count the sandbox's
# processes while they run; it kills them with builtins (no fork needed).
bomb='bash -c "for i in \$(seq 400); do sleep 30 </dev/null >/dev/null 2>&1 & done"
count() { n=0; for p in /proc/[0-9]*; do read -r c < "$p/comm" 2>/dev/null && [ "$c" = sleep ] && n=$((n+1)); done; }
count; echo "sleeps=$n"
read -r go
for p in /proc/[0-9]*; do read -r c < "$p/comm" 2>/dev/null && [ "$c" = sleep ] && kill "${p#/proc/}"; done
echo killed'
# The sandbox's processes on the host: everything under its pid (bwrap's
# init; runsc's Sentry, whose ptrace stubs are host processes).
sandbox_procs() {
    local sbpid
    sbpid=$("$SBX" status --json | sed -n 's/.*"sandbox":{[^}]*"pid":\([0-9]*\).*/\1/p')
    ps -e -o pid=,ppid= | awk -v root="$sbpid" '
        { parent[$1] = $2 }
        END { n = 0
              for (p in parent) { q = p
                  for (i = 0; i < 64 && q != "" && q != 0 && q != root; i++) q = parent[q]
                  if (q == root) n++ }
              print n }'
}
before=$(sandbox_procs)
mkfifo "$SBX_TEST_TMP/go"
"$SBX" exec --keep -- bash -c "$bomb" <"$SBX_TEST_TMP/go" >"$SBX_TEST_TMP/bomb.out" \
    2>"$SBX_TEST_TMP/bomb.err" &
bpid=$!
exec 7>"$SBX_TEST_TMP/go"
# bash retries a failed fork for about 15 s before it gives up
for _ in $(seq 1200); do grep -q '^sleeps=' "$SBX_TEST_TMP/bomb.out" && break; sleep 0.1; done
during=$(sandbox_procs)
echo go >&7
exec 7>&-
wait $bpid
n=$(sed -n 's/^sleeps=//p' "$SBX_TEST_TMP/bomb.out")
ok "AGENT_SANDBOX_PIDS_MAX=100: at most 100 of 400 background sleeps start (${n:-none})" \
   test -n "$n" -a "${n:-0}" -le 100 -a "${n:-0}" -gt 0
like "$(cat "$SBX_TEST_TMP/bomb.err")" "fork: .*Resource temporarily unavailable" \
   "...the others fail to fork with the usual error"
# (under runsc the host's processes are gVisor's systrap stubs, which come to about two per
# sandbox process here: 204 for 96 sleeps; so the bound is the 400 asked for, not 200)
ok "...and the host gains far fewer than the 400 processes asked for ($before before, $during during)" \
   test "$((during - before))" -lt 300
like "$(cat "$SBX_TEST_TMP/bomb.out")" "killed" "...the command goes on"
is "$(X echo next)" "next" "the session runs the next command normally"

# ---- a memory hog ---------------------------------------------------------------
sbid=$("$SBX" status --json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
X python3 -c 'b = bytearray(512 << 20); print("allocated")' >"$SBX_TEST_TMP/hog.out" \
    2>"$SBX_TEST_TMP/hog.err"
rc=$?
isnt "$rc" 0 "AGENT_SANDBOX_MEMORY_MAX=256M: a 512 MB allocation fails or is killed ($rc)"
is "$(cat "$SBX_TEST_TMP/hog.out")" "" "...it never completes"
if [ "$rc" = 125 ]; then
    # runsc: the host's OOM killer takes the Sentry, so the sandbox died
    like "$(cat "$SBX_TEST_TMP/hog.err")" "sandbox stopped.*next command starts a new sandbox" \
       "...the sandbox died with it, saying so"
else
    is "$rc" 137 "...the process was killed (SIGKILL), not the sandbox"
fi
is "$(X echo after 2>&1)" "after" "the session runs the next command"
if [ "$rc" = 125 ]; then
    isnt "$("$SBX" status --json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')" "$sbid" "...in a new sandbox"
else
    is "$("$SBX" status --json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')" "$sbid" "...in the same sandbox"
fi
like "$("$SBX" status)" "limits: +100 processes, 256 MiB memory" "...with the same limits"

json=$("$SBX" status --json)
cgs=$(printf '%s' "$json" | sed -n 's/.*"cgroups":\[\([^]]*\)\].*/\1/p' | tr -d '"' | tr ',' ' ')
"$SBX" release
cgleft=$(for d in $cgs; do [ -d "$d" ] && echo "$d"; done)
is "$cgleft" "" "release removes the sandbox's cgroups"
done_testing
