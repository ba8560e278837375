#!/bin/bash
# git's fsmonitor in the sandbox (issue 27, AGENT_SANDBOX_GIT_FSMONITOR, on by default): `git status` and
# `git diff --stat` in a repository of N files, in the sandbox with sbx-agent's fsmonitor
# hook and the untracked cache and without either, against the host's git, on each local
# runtime, in one run.
#
#   bench/fsmonitor.sh [--runs N] [--files N[,N...]] [--runtimes runsc,bwrap] [--dir DIR]
#
# Each round first appends a line to one tracked file (a change for git to find, as an agent's
# edit before its `git status`), then times each command once per column, interleaved; the
# host's columns are the host's git in a copy of its own (the same edit each round: an index
# the host's git writes in the code directory would go to the sandbox without the
# fsmonitor's token, sync/README.md, "The git index", and the sandbox's next git status
# would start over), timed in the same rounds so that the load weighs alike. Times in
# the sandbox are taken there (bash's EPOCHREALTIME around git: what git costs, without
# sbxsh's round trip); "sbxsh -c" columns time the whole `sbxsh -c 'git status'` from the host
# (its syncs included). "off" is git with core.fsmonitor=false and core.untrackedCache=false
# and --no-optional-locks (so that it leaves the index, and the fsmonitor's token in it, as
# they were); "untracked cache only" is git with core.fsmonitor=false (the untracked cache
# checked by the directories' stat data, git's own way); "on" is git as sbxsh configures it
# (sync/conn.c: the hook, the untracked cache, core.preloadIndex off), "on + preload" the same
# with core.preloadIndex on (git's default), so each setting's worth shows in the same run.
# Prints a Markdown table of medians in ms, "on / host" (the target: 1.3 at most), and the
# hook's own cost (the agent's answer through the hook, run directly). On runsc it also
# prints what a `git status` costs gVisor in CPU (the user and system time of the Sentry, the
# gofer and the stubs that run the sandbox's processes, over --runs statuses in one command,
# less the same loop without git): unlike the wall
# times, it does not move with the machine's load. Sessions live under --dir (default
# /dev/shm).
set -u
runs=10 files=10000 runtimes=runsc,bwrap dir=/dev/shm
[ -d "$dir" ] && [ -w "$dir" ] || dir=${TMPDIR:-/tmp}
usage() { sed -n '/^#   bench/p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --runs | --files | --runtimes | --dir) [ $# -ge 2 ] || usage; printf -v "${1#--}" %s "$2"; shift 2 ;;
    *) usage ;;
    esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || usage
top=$(cd "$(dirname "$0")/.." && pwd)
SBXSH=$top/sbxsh SBX=$top/sbx
[ -x "$SBXSH" ] || { echo "$0: build first (make)" >&2; exit 1; }

work=$(mktemp -d "$dir/sbx-fsmon.XXXXXX") || exit 1
export HOME=$work/home XDG_RUNTIME_DIR=$work/run AGENT_SANDBOX_STATE_DIR=$work/state
export AGENT_SANDBOX_IDLE_TIMEOUT=15m GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
printf '[user]\n\tname = B\n\temail = b@example.com\n' >"$HOME/.gitconfig"
sessions=()
cleanup() {
    for s in "${sessions[@]}"; do "$SBX" release --session "$s" >/dev/null 2>&1; done
    rm -rf "$work"
}
trap cleanup EXIT

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) printf "%.0f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ms() { local s=$EPOCHREALTIME; "$@" >/dev/null 2>&1; echo $(( (${EPOCHREALTIME/./} - ${s/./}) / 1000 )); }

# What one round runs in the sandbox: the change, then each timed command (one line each:
# NAME MS). Passed to `sbxsh -c` as text.
sandbox_round='
ms() { local s=$EPOCHREALTIME; "$@" >/dev/null 2>&1; echo $(( (${EPOCHREALTIME/./} - ${s/./}) / 1000 )); }
echo "edit $RANDOM" >> d0/f0
off="git --no-optional-locks -c core.fsmonitor=false -c core.untrackedCache=false"
echo "status-off $(ms $off status)"
echo "status-uc $(ms git --no-optional-locks -c core.fsmonitor=false status)"
echo "status-on $(ms git status)"
# Another edit: the first git with the fsmonitor after a change rewrites the index (the
# untracked cache of the edited directory changed), the next would not.
echo "edit $RANDOM" >> d0/f0
echo "status-pre $(ms git -c core.preloadIndex=true status)"
echo "diff-off $(ms $off diff --stat)"
echo "diff-on $(ms git diff --stat)"
t=$(git config --get core.fsmonitor)
echo "hook $(ms $t 2 "sbx1:0000000000000000:0")"
'

# runsc's CPU for a command: the user and system time of the Sentry and the gofer, and of
# their children, the systrap stubs in which the sandbox's processes run (live ones, and
# the reaped ones' in their parent's), in ms.
runsc_pids() { pgrep -f -- "--root=$AGENT_SANDBOX_STATE_DIR/$AGENT_SANDBOX_SESSION/runsc" | tr '\n' ' '; }
runsc_cpu() {
    local t=0 p c f s
    for p in $pids $(for c in $pids; do pgrep -P "$c"; done); do
        f=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || continue
        read -ra s <<<"$f"
        t=$((t + s[11] + s[12] + s[13] + s[14]))
    done
    echo $((t * 1000 / $(getconf CLK_TCK)))
}
# CPU ms per round of: an edit, then CMD (runs rounds in one sbxsh command).
cpu_per() {
    local a b
    a=$(runsc_cpu)
    "$SBXSH" -c "for ((i = 0; i < $runs; i++)); do echo \"e\$i\" >>d0/f0; $1 >/dev/null 2>&1; done"
    b=$(runsc_cpu)
    echo $(((b - a) / runs))
}

echo "| files | runtime | host status | sandbox status off | untracked cache only | on + preload | on | on / host | host diff --stat | sandbox diff --stat off | on | sbxsh -c 'git status' off | on | hook alone (/) | runsc CPU per status: off | on + preload | on |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in ${files//,/ }; do
    seed=$work/seed-$n
    mkdir -p "$seed" && (
        cd "$seed" && git init -q . &&
        for ((d = 0; d < (n + 99) / 100; d++)); do
            mkdir -p "d$d"
            for ((i = 0; i < 100 && d * 100 + i < n; i++)); do echo "file $d/$i" >"d$d/f$i"; done
        done && git add -A && git -c gc.auto=0 commit -qm seed && git gc -q
    ) || exit 1
    for rt in ${runtimes//,/ }; do
        command -v "$rt" >/dev/null || { echo "$0: $rt is not installed: left out" >&2; continue; }
        code=$work/code-$n-$rt
        cp -a "$seed" "$code"
        export AGENT_SANDBOX_CODE_DIRS=$code AGENT_SANDBOX_SESSION=fsmon-$n-$rt AGENT_SANDBOX_LOCAL_RUNTIME=$rt
        sessions+=("$AGENT_SANDBOX_SESSION")
        cd "$code" || exit 1
        # Warm: the sandbox, the agent's watch (a scan after the first command), git's index
        # with the fsmonitor's token and the untracked cache.
        "$SBXSH" -c 'git status' >/dev/null 2>&1
        "$SBXSH" -c 'git status; git status' >/dev/null 2>&1
        declare -A all=()
        hostcopy=$work/host-$n-$rt
        cp -a "$seed" "$hostcopy"
        git -C "$hostcopy" status >/dev/null 2>&1
        for ((r = 0; r < runs; r++)); do
            while read -r k v; do all[$k]+="$v "; done < <("$SBXSH" -c "$sandbox_round" 2>/dev/null)
            all[cmd-off]+="$(ms "$SBXSH" -c 'git --no-optional-locks -c core.fsmonitor=false -c core.untrackedCache=false status') "
            all[cmd-on]+="$(ms "$SBXSH" -c 'git status') "
            echo "edit $RANDOM" >>"$hostcopy/d0/f0"
            all[host-status]+="$(ms git -C "$hostcopy" status) "
            all[host-diff]+="$(ms git -C "$hostcopy" diff --stat) "
        done
        rm -rf "$hostcopy"
        cpu_off=- cpu_pre=- cpu_on=-
        if [ "$rt" = runsc ] && pids=$(runsc_pids) && [ -n "$pids" ]; then
            base=$(cpu_per true)
            cpu_off=$(($(cpu_per 'git --no-optional-locks -c core.fsmonitor=false -c core.untrackedCache=false status') - base))
            cpu_pre=$(($(cpu_per 'git -c core.preloadIndex=true status') - base))
            cpu_on=$(($(cpu_per 'git status') - base))
        fi
        m() { tr ' ' '\n' <<<"${all[$1]:-}" | sed '/^$/d' | median; }
        ratio=$(awk -v a="$(m status-on)" -v b="$(m host-status)" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }')
        echo "| $n | $rt | $(m host-status) | $(m status-off) | $(m status-uc) | $(m status-pre) | $(m status-on) | $ratio | $(m host-diff) | $(m diff-off) | $(m diff-on) | $(m cmd-off) | $(m cmd-on) | $(m hook) | $cpu_off | $cpu_pre | $cpu_on |"
        unset all
        "$SBX" release --session "$AGENT_SANDBOX_SESSION" >/dev/null 2>&1
        cd "$work" && rm -rf "$code"
    done
    rm -rf "$seed"
done
