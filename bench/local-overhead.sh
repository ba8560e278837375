#!/bin/bash
# Per-command overhead of a warm local session (bench/local.md has the
# figures): `sbx exec --keep -- true` and `sbxsh -c true` in a session whose
# code directory holds N files, against `bash -c true`, a fresh
# `runsc do true` and a bare bubblewrap `true`, all in the same run.
#
#   bench/local-overhead.sh [--sizes 1000,10000,100000] [--runtimes runsc,bwrap] [--runs 30]
#
# Needs hyperfine and jq (make deps). Times are milliseconds: mean and
# median of --runs runs after 5 warm-up runs; "overhead" is the median of
# the sandboxed command minus the median of `bash -c true`.
set -u
sizes=1000,10000,100000
runtimes=runsc,bwrap
runs=30
while [ $# -gt 0 ]; do
    case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --runtimes) runtimes=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--sizes N,N] [--runtimes runsc,bwrap] [--runs N]" >&2; exit 2 ;;
    esac
done
top=$(cd "$(dirname "$0")/.." && pwd)
SBX=$top/sbx SBXSH=$top/sbxsh
for t in hyperfine jq "$SBX" "$SBXSH"; do
    command -v "$t" >/dev/null || { echo "$0: $t not found (make deps && make)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench.XXXXXX")
export HOME=$work/home XDG_RUNTIME_DIR=$work/run AGENT_SANDBOX_STATE_DIR=$work/state
mkdir -p "$HOME"
cleanup() {
    for rt in ${runtimes//,/ }; do
        for n in ${sizes//,/ }; do
            (cd "$work/tree-$n" 2>/dev/null && AGENT_SANDBOX_SESSION=bench-$rt-$n "$SBX" release) \
                >/dev/null 2>&1
        done
    done
    rm -rf "$work"
}
trap cleanup EXIT

# Median and mean (ms) of one hyperfine command from its JSON export.
stats() { # FILE INDEX
    jq -r ".results[$2] | \"\(.median * 1000) \(.mean * 1000)\"" "$1" |
        awk '{ printf "%.1f %.1f", $1, $2 }'
}

# A tree of n files, 100 per directory, small contents, as a git repository.
make_tree() { # DIR N
    mkdir -p "$1"
    (cd "$1" && git init -q && awk -v n="$2" 'BEGIN {
        for (i = 0; i < n; i++) {
            d = sprintf("d%04d", int(i / 100)); if (i % 100 == 0) system("mkdir -p " d)
            f = sprintf("%s/f%05d.txt", d, i); print "line " i > f; close(f)
        } }')
}

printf '# host: %s, %s cores, load %s\n' "$(uname -r)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '# runs: %s after 5 warm-up runs; times in ms (median / mean)\n\n' "$runs"

base=$work/base.json
hyperfine -N -w 5 -r "$runs" --export-json "$base" 'bash -c true' >/dev/null 2>&1
read -r bash_med bash_mean <<<"$(stats "$base" 0)"
printf '| baseline | median | mean |\n|---|---|---|\n'
printf '| `bash -c true` | %s | %s |\n' "$bash_med" "$bash_mean"
if [[ ,$runtimes, == *,runsc,* ]] && command -v runsc >/dev/null; then
    hyperfine -N -w 2 -r 10 --export-json "$work/runsc.json" \
        'runsc --network=none --ignore-cgroups do true' >/dev/null 2>&1
    read -r m a <<<"$(stats "$work/runsc.json" 0)"
    printf '| `runsc do true` (a fresh gVisor sandbox) | %s | %s |\n' "$m" "$a"
fi
if [[ ,$runtimes, == *,bwrap,* ]] && command -v bwrap >/dev/null; then
    hyperfine -N -w 5 -r "$runs" --export-json "$work/bwrap.json" \
        'bwrap --unshare-user --unshare-pid --unshare-net --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --proc /proc --dev /dev /bin/true' \
        >/dev/null 2>&1
    read -r m a <<<"$(stats "$work/bwrap.json" 0)"
    printf '| bare `bwrap ... true` (a fresh bubblewrap sandbox) | %s | %s |\n' "$m" "$a"
fi

printf '\n| files | runtime | first call (s) | `sbx exec --keep -- true` | `sbxsh -c true` | `bash -c true` | overhead of sbxsh -c (median) |\n'
printf '|---|---|---|---|---|---|---|\n'
for n in ${sizes//,/ }; do
    make_tree "$work/tree-$n" "$n"
    for rt in ${runtimes//,/ }; do
        cd "$work/tree-$n" || exit 1
        export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=bench-$rt-$n
        t0=$(date +%s%N)
        "$SBX" exec --keep -- true || { echo "$0: sbx exec failed ($rt, $n files)" >&2; continue; }
        t1=$(date +%s%N)
        out=$work/r-$rt-$n.json
        hyperfine -N -w 5 -r "$runs" --export-json "$out" \
            "$SBX exec --keep -- true" "$SBXSH -c true" 'bash -c true' >/dev/null 2>&1
        read -r em ea <<<"$(stats "$out" 0)"
        read -r sm sa <<<"$(stats "$out" 1)"
        read -r bm ba <<<"$(stats "$out" 2)"
        printf '| %s | %s | %.1f | %s / %s | %s / %s | %s / %s | %s |\n' "$n" "$rt" \
            "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1e9 }')" \
            "$em" "$ea" "$sm" "$sa" "$bm" "$ba" \
            "$(awk -v s="$sm" -v b="$bm" 'BEGIN { printf "%+.1f ms", s - b }')"
        "$SBX" release >/dev/null 2>&1
    done
done
