#!/bin/bash
# The undo journal's cost (docs/undo.md): a sandbox command that changes 1,000 files of 4 KiB,
# and one that appends to a 100 MB file, each pulled back, timed end to end (`sbxsh -c`) on
# bwrap with the journal off (AGENT_SANDBOX_UNDO_MAX=0), saving by hard link (the default),
# by reflink (FICLONE: on XFS or btrfs; elsewhere it falls back to a copy) and by copy. The
# median of RUNS commands each; the journal's own share is the difference with "none".
#
#   bench/undo.sh [--runs N] [--dir DIR]     DIR: where the code and the state live (its file
#                                            system decides whether reflinks exist; default
#                                            a directory under /tmp)
#
# A reflinking file system for the clone case, as root: truncate -s 2G x.img; mkfs.xfs -m
# reflink=1 x.img; mount -o loop x.img /mnt/x; bench/undo.sh --dir /mnt/x
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
runs=5
base=
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --dir) base=$2; shift 2 ;;
    *) echo "usage: bench/undo.sh [--runs N] [--dir DIR]" >&2; exit 2 ;;
    esac
done
command -v bwrap >/dev/null || { echo "bench/undo.sh: bubblewrap is not installed (make deps)" >&2; exit 1; }
tmp=$(mktemp -d "${base:-/tmp}/sbx-bench-undo.XXXXXX") || exit 1
cleanup() {
    local s
    for s in $(AGENT_SANDBOX_STATE_DIR=$tmp/state "$top/sbx" ls 2>/dev/null | awk 'NR > 1 { print $1 }'); do
        AGENT_SANDBOX_STATE_DIR=$tmp/state "$top/sbx" release --session "$s" >/dev/null 2>&1
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=$tmp/home XDG_RUNTIME_DIR=$tmp/run AGENT_SANDBOX_STATE_DIR=$tmp/state
export AGENT_SANDBOX_LOCAL_RUNTIME=bwrap AGENT_SANDBOX_DISK_MAX=0
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$AGENT_SANDBOX_STATE_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# prepare NAME MODE SETUP: a session of its own for MODE, SETUP run in its code directory on
# the host, and one command to push it
prepare() {
    local code=$tmp/code-$1-$2
    mkdir -p "$code" && (cd "$code" && eval "$3")
    (cd "$code" && env_for "$1" "$2" "$top/sbxsh" -c true) || exit 1
}
env_for() { # NAME MODE CMD...: CMD in that session's environment
    local name=$1 mode=$2
    shift 2
    if [ "$mode" = none ]; then
        env -u SBXSH_TEST_JOURNAL_COPY AGENT_SANDBOX_CODE_DIRS="$tmp/code-$name-$mode" \
            AGENT_SANDBOX_SESSION="bench-$name-$mode" AGENT_SANDBOX_UNDO_MAX=0 "$@"
    else
        env AGENT_SANDBOX_CODE_DIRS="$tmp/code-$name-$mode" AGENT_SANDBOX_SESSION="bench-$name-$mode" \
            AGENT_SANDBOX_UNDO_MAX=8G SBXSH_TEST_JOURNAL_COPY="$mode" "$@"
    fi
}
# measure NAME SETUP CMD: prints the median per mode, the modes taking turns each run (the
# machine's load drifts alike over all of them); CMD gets the run's number as $1
measure() {
    local name=$1 setup=$2 cmd=$3 m i t0 t1
    for m in $modes; do prepare "$name" "$m" "$setup"; done
    for ((i = 1; i <= runs; i++)); do
        for m in $modes; do
            t0=$(ms)
            (cd "$tmp/code-$name-$m" && env_for "$name" "$m" "$top/sbxsh" -c "$cmd" _ "$i") >/dev/null 2>&1
            t1=$(ms)
            echo "$m $((t1 - t0))" >>"$tmp/times-$name"
        done
    done
    for m in $modes; do
        awk -v m="$m" '$1 == m { print $2 }' "$tmp/times-$name" | median
    done | tr '\n' ' '
    for m in $modes; do env_for "$name" "$m" "$top/sbx" release >/dev/null 2>&1; rm -rf "$tmp/code-$name-$m"; done
}
modes="none link clone copy"

fs=$(df -T "$tmp" | awk 'NR == 2 { print $2 }')
echo "# the undo journal's cost, bwrap, $fs, median of $runs (ms per command, pull included)"
printf '%-34s %8s %8s %8s %8s\n' case none link clone copy
files_setup='mkdir d; for i in $(seq 1000); do head -c 4096 /dev/urandom >d/f$i; done'
files_cmd='for f in d/*; do echo "$1" >>"$f"; done'
big_setup='head -c 100000000 /dev/urandom >big'
big_cmd='echo "$1" >>big'
# shellcheck disable=SC2046,SC2183 # the medians are four numbers
printf '%-34s %8s %8s %8s %8s\n' "1,000 files of 4 KiB changed" $(measure files "$files_setup" "$files_cmd")
# shellcheck disable=SC2046,SC2183
printf '%-34s %8s %8s %8s %8s\n' "one 100 MB file appended to" $(measure big "$big_setup" "$big_cmd")
