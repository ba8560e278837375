#!/bin/bash
# The per-call cost of libsbxsh and its Python module against `sbxsh -c` (issue 24), in a
# warm session per local runtime. Prints Markdown tables of medians [quartiles]:
#   C: `sbxsh -c LINE` started with posix_spawn and its output read, against sbxsh_run()
#      (build/bench/library-bench; the two interleaved);
#   Python: subprocess.run([sbxsh, "-c", LINE]) against Sandbox.execute(LINE).
#
#   bench/library.sh [--runs N] [--runtimes bwrap,runsc] [--dir DIR]
#
# Each runtime gets a world of its own (HOME, runtime and state directories, a small git
# repository) under --dir (default /dev/shm), released and removed at exit. Needs a built
# tree (make bench-library builds what it needs).
set -u
runs=30 runtimes=bwrap,runsc dir=/dev/shm
[ -d "$dir" ] && [ -w "$dir" ] || dir=${TMPDIR:-/tmp}
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --runtimes) runtimes=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    *) sed -n '/^#   bench/p' "$0" | sed 's/^# *//' >&2; exit 2 ;;
    esac
done
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SBXSH_BUILD:-$top/build}
bench=$build/bench/library-bench
sbxsh=$top/sbxsh
if [ ! -x "$bench" ] || [ ! -x "$sbxsh" ]; then
    echo "build first: make bench-library" >&2
    exit 2
fi
work=$(mktemp -d "$dir/sbxsh-libbench.XXXXXX")
cleanup() {
    for s in "${sessions[@]}"; do
        HOME=$work/home XDG_RUNTIME_DIR=$work/run AGENT_SANDBOX_STATE_DIR=$work/state \
            "$top/sbx" release --session "$s" >/dev/null 2>&1
    done
    rm -rf "$work"
}
sessions=()
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$work/home" "$work/run" "$work/state" "$work/repo"
chmod 700 "$work/run"
export HOME=$work/home XDG_RUNTIME_DIR=$work/run AGENT_SANDBOX_STATE_DIR=$work/state
unset AGENT_SANDBOX_CODE_DIRS AGENT_SANDBOX_SESSION AGENT_SANDBOX_BACKEND
(cd "$work/repo" && git init -q && seq 100 >f.txt && git add . &&
 git -c user.name=b -c user.email=b@example.com commit -qm one)
cd "$work/repo" || exit 1

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $runs runs each, interleaved"
for rt in ${runtimes//,/ }; do
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=libbench-$rt
    sessions+=("$AGENT_SANDBOX_SESSION")
    echo
    echo "$rt, C:"
    echo
    echo "| line | \`sbxsh -c\` | sbxsh_run() | difference |"
    echo "|---|---:|---:|---:|"
    "$bench" "$sbxsh" "$runs" 'true' 'echo hi' 'seq 100000' || exit 1
    echo
    echo "$rt, Python:"
    echo
    PYTHONPATH=$top/lib/python SBXSH_LIBRARY=$build/libsbxsh.so.1 /usr/bin/python3 - "$sbxsh" "$runs" <<'PY'
import statistics, subprocess, sys, time
from sbxsh import Sandbox
prog, runs = sys.argv[1], int(sys.argv[2])
sb = Sandbox(program=prog)
print("| line | subprocess.run(sbxsh -c) | Sandbox.execute() | difference |")
print("|---|---:|---:|---:|")
for line in ("true", "echo hi"):
    a, b = [], []
    for i in range(runs + 3):
        t0 = time.monotonic()
        subprocess.run([prog, "-c", line], stdin=subprocess.DEVNULL, capture_output=True)
        t1 = time.monotonic()
        sb.execute(line)
        t2 = time.monotonic()
        if i >= 3:
            a.append((t1 - t0) * 1e3)
            b.append((t2 - t1) * 1e3)
    qa, qb = statistics.quantiles(a, n=4), statistics.quantiles(b, n=4)
    print("| `%s` | %.2f ms [%.2f-%.2f] | %.2f ms [%.2f-%.2f] | %+.2f ms |" % (
        line, qa[1], qa[0], qa[2], qb[1], qb[0], qb[2], qb[1] - qa[1]))
sb.close()
PY
done
