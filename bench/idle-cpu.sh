#!/bin/bash
# The host CPU that idle sandboxes cost (issue 21): starts --sessions idle sessions, each
# on a code directory of its own, for each runtime; waits --settle seconds for their starts
# to end; then measures, over --seconds, the CPU time (utime+stime from /proc/PID/stat) of
# every host process that belongs to them: the session holder and its log pump, runsc's
# sandbox (the Sentry), its gofer and its stub processes, bwrap and the sbx-agent under it.
# Prints a Markdown table in % of one CPU, per session and for all of them (and how much of
# it is sbxsh's own processes: holders, log pumps, a bwrap agent), then releases
# them. bench/idle.md says how to read it and has the figures.
#
#   bench/idle-cpu.sh [--runtimes runsc,bwrap] [--rows sbxsh,bare,ptrace] [--sessions 8]
#                     [--seconds 60] [--settle 45] [--dir DIR]
#
# Rows (--rows, comma-separated; default: all of them, in this order):
#   sbxsh   --sessions idle sessions per runtime in --runtimes (`sbxsh -c true`, then nothing)
#   bare    the same number of bare `runsc do sleep` sandboxes (no sbxsh at all): what
#           gVisor's own idle costs on this machine (runsc's default platform, systrap)
#   ptrace  the same with `runsc --platform=ptrace do sleep`
# The processes measured are those that name the run's temporary directory in their
# command line or hold a file in it (holders, log pumps, runsc's, bwrap), and all their
# descendants (runsc's stubs, the agent), found once the settle time is over; a process
# that starts during the measurement is not counted but is reported (an idle session
# should start none). No assertions: this is a benchmark, not a test.
set -u
runtimes=runsc,bwrap
rows=sbxsh,bare,ptrace
# settle 45: past the 30 s after which the holder freezes an idle runsc sandbox (FREEZE_AFTER
# in session/holder.c), so that what is measured is the idle state, not its first half minute
sessions=8 seconds=60 settle=45
dir=/dev/shm
[ -d "$dir" ] && [ -w "$dir" ] || dir=${TMPDIR:-/tmp}
usage() {
    sed -n '/^#   bench/,/^#  *\[--seconds/p' "$0" | sed 's/^# *//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --runtimes | --rows | --sessions | --seconds | --settle | --dir)
        [ $# -ge 2 ] || usage
        printf -v "${1#--}" %s "$2"
        shift 2 ;;
    *) usage ;;
    esac
done
[[ $sessions =~ ^[1-9][0-9]*$ && $seconds =~ ^[1-9][0-9]*$ && $settle =~ ^[0-9]+$ ]] || usage
has() { [[ ,$1, == *,$2,* ]]; } # LIST ITEM

top=$(cd "$(dirname "$0")/.." && pwd)
SBX=$top/sbx SBXSH=$top/sbxsh
for t in git timeout "$SBX" "$SBXSH"; do
    command -v "$t" >/dev/null || { echo "$0: $t not found (make deps && make)" >&2; exit 1; }
done
hz=$(getconf CLK_TCK)

work=$(mktemp -d "$dir/sbx-idle.XXXXXX") || exit 1
export HOME=$work/home XDG_RUNTIME_DIR=$work/run AGENT_SANDBOX_STATE_DIR=$work/state
# A safety net if this script is killed with SIGKILL: its holders leave by themselves.
export AGENT_SANDBOX_IDLE_TIMEOUT=15m
unset AGENT_SANDBOX_SESSION AGENT_SANDBOX_CODE_DIRS AGENT_SANDBOX_LOCAL_RUNTIME
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$work/do"
chmod 700 "$XDG_RUNTIME_DIR"
started=()  # "dir session" pairs to release
dopids=()   # bare `runsc do` processes to end
cleanup() {
    trap '' INT TERM
    for p in "${dopids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${dopids[@]}"; do wait "$p" 2>/dev/null; done
    for s in "${started[@]}"; do
        (cd "${s% *}" 2>/dev/null || cd /; timeout 60 "$SBX" release --session "${s##* }") \
            >/dev/null 2>&1
    done
    dopids=() started=()
}
trap 'cleanup; [ -n "${SBX_IDLE_KEEP:-}" ] || rm -rf "$work"' EXIT
trap 'echo "$0: interrupted" >&2; exit 130' INT TERM

# The pids of the processes that name $work in their command line or hold a file, a cwd or
# a root in it, with all their descendants; never the processes of this scan (the $( )
# subshell that runs it, and its children).
procs() {
    {
        grep -alF "$work" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3
        find /proc/[0-9]*/fd /proc/[0-9]*/cwd /proc/[0-9]*/root -maxdepth 1 \
            -lname "$work/*" 2>/dev/null | cut -d/ -f3
        echo --
        # pid and parent of every process (the name, field 2, may hold spaces)
        cat /proc/[0-9]*/stat 2>/dev/null | sed 's/^\([0-9]*\) .*) . \([0-9]*\) .*/\1 \2/'
    } | awk -v self=$BASHPID '
        $0 == "--" { table = 1; next }
        !table { seed[$1] = 1; next }
        { parent[$1] = $2 }
        END {
            for (p in seed) {
                for (q = p; q in parent && q != self; q = parent[q]) {}
                if (p in parent && q != self) keep[p] = 1
            }
            # descendants, to a fixed point (runsc stubs are grandchildren of the Sentry)
            do { grew = 0
                for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 }
            } while (grew)
            for (p in keep) print p
        }'
}
# utime+stime of a pid in clock ticks ("" when it is gone). Field 2, the name, may hold
# spaces: count from the ") " that ends it.
ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'; }
# A bare `runsc do sleep` sandbox in the background, its runsc in dopids.
start_do() { # RUNSC-OPTION...
    local i=${#dopids[@]}
    mkdir -p "$work/do/root$i"
    # from /: `runsc do` gives the sandbox its cwd, and /dev/shm is not there
    (cd / && exec runsc --root="$work/do/root$i" --network=none "$@" \
        'do' sleep 100000) </dev/null >"$work/do/$i.log" 2>&1 &
    dopids+=($!)
}

declare -A total per own news # ROW -> figures
order=()
declare -A what
# Measures the processes of the row's sandboxes (already started) over --seconds.
measure() { # ROW LABEL
    local row=$1 p t sum=0 mine=0 gone=0
    local -A before=()
    order+=("$row")
    what[$row]=$2
    echo "# $row: settling for $settle s" >&2
    sleep "$settle"
    local pids after
    mapfile -t pids < <(cd / && procs)
    for p in "${pids[@]}"; do before[$p]=$(ticks "$p"); done
    echo "# $row: measuring ${#pids[@]} processes for $seconds s" >&2
    sleep "$seconds"
    for p in "${pids[@]}"; do
        t=$(ticks "$p")
        if [ -z "$t" ] || [ -z "${before[$p]}" ]; then gone=$((gone + 1)); continue; fi
        sum=$((sum + t - ${before[$p]}))
        # sbxsh's own processes: the holders and log pumps (named sbx-holder) and, under
        # bwrap, the agent (under runsc it runs inside the Sentry, counted as runsc's)
        case $(cat "/proc/$p/comm" 2>/dev/null) in
        sbx-holder | sbx-agent) mine=$((mine + t - ${before[$p]})) ;;
        esac
    done
    local n=0
    mapfile -t after < <(cd / && procs)
    for p in "${after[@]}"; do [ -n "${before[$p]+x}" ] || n=$((n + 1)); done
    total[$row]=$(awk -v t="$sum" -v hz="$hz" -v s="$seconds" 'BEGIN { printf "%.2f", 100 * t / hz / s }')
    per[$row]=$(awk -v t="$sum" -v hz="$hz" -v s="$seconds" -v k="$sessions" \
        'BEGIN { printf "%.2f", 100 * t / hz / s / k }')
    own[$row]=$(awk -v t="$mine" -v hz="$hz" -v s="$seconds" 'BEGIN { printf "%.2f", 100 * t / hz / s }')
    news[$row]="${#pids[@]} processes"
    [ "$gone" -gt 0 ] && news[$row]+=", $gone ended during it"
    [ "$n" -gt 0 ] && news[$row]+=", $n started during it"
}

if has "$rows" sbxsh; then
    for rt in ${runtimes//,/ }; do
        command -v "$rt" >/dev/null || { echo "$0: $rt is not installed: skipped" >&2; continue; }
        for i in $(seq "$sessions"); do
            d=$work/code-$rt-$i
            mkdir -p "$d" && (cd "$d" && git init -q && echo "file $i" >f.txt) || exit 1
            s=idle-$rt-$i
            started+=("$d $s")
            (cd "$d" && AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=$s \
                timeout 120 "$SBXSH" -c true) || { echo "$0: session $s did not start" >&2; exit 1; }
        done
        measure "sbxsh-$rt" "$sessions idle sbxsh sessions, $rt"
        cleanup
    done
fi
for r in bare ptrace; do
    has "$rows" $r || continue
    command -v runsc >/dev/null || { echo "$0: runsc is not installed: $r skipped" >&2; break; }
    for i in $(seq "$sessions"); do
        if [ $r = bare ]; then start_do; else start_do --platform=ptrace; fi
    done
    if [ $r = bare ]; then measure bare "$sessions bare \`runsc do sleep\` (systrap, no sbxsh)"
    else measure ptrace "$sessions bare \`runsc --platform=ptrace do sleep\`"; fi
    cleanup
done

printf '\n%s\n\n' "$(date -u '+%F %H:%M') UTC, $(nproc) CPUs, $(uname -r), $(runsc --version 2>/dev/null | head -1), load average $(cut -d' ' -f1-3 /proc/loadavg)"
# Each row's ratio to the bare systrap sandboxes of the same run, when they were measured:
# what sbxsh adds to (or saves on) gVisor's own idle cost.
ratio() { # ROW
    [ -n "${total[bare]:-}" ] || { echo -; return; }
    awk -v a="${total[$1]}" -v b="${total[bare]}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'
}
echo "| what | % of a CPU per sandbox | % of a CPU, all $sessions | of which sbxsh's own | to bare \`runsc do\` | measured |"
echo "|---|---:|---:|---:|---:|---|"
for r in "${order[@]}"; do
    echo "| ${what[$r]} | ${per[$r]} | ${total[$r]} | ${own[$r]} | $(ratio "$r") | ${news[$r]} |"
done
