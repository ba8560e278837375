#!/bin/bash
# Execution parity with bash on a corpus of bash case files: each case runs through
# `bash -c`, `sbxsh -c` and (with --stdin) `sbxsh < FILE`, from the same directory
# with the same environment, and stdout, stderr and the exit status are compared.
#
#   bench/exec-parity.sh [--stdin] [--runtime bwrap|runsc] [--show N] [--list IDS] CASEDIR
#
# CASEDIR holds one folder per file of cases, each with NNN.sh files (the layout of
# Oils' spec tests split into single cases). --list takes a file of ids (folder/NNN) to
# run instead of all. Prints the share that agrees and the first N differences.
# A measurement, not a test: it is not part of `make check`.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
stdin_mode=0 runtime=${AGENT_SANDBOX_LOCAL_RUNTIME:-bwrap} show=15 list=
while [ $# -gt 1 ]; do
    case $1 in
    --stdin) stdin_mode=1; shift ;;
    --runtime) runtime=$2; shift 2 ;;
    --show) show=$2; shift 2 ;;
    --list) list=$2; shift 2 ;;
    *) break ;;
    esac
done
cases=${1:?usage: exec-parity.sh [--stdin] [--runtime R] [--show N] [--list IDS] CASEDIR}
cases=$(cd "$cases" && pwd)
SBXSH=${SBXSH:-$top/sbxsh}
SBX=${SBX:-$top/sbx}

work=$(mktemp -d /var/tmp/sbx-parity.XXXXXX)
trap '"$SBX" release --session "$AGENT_SANDBOX_SESSION" >/dev/null 2>&1; rm -rf "$work"' EXIT
export HOME=$work/home XDG_RUNTIME_DIR=$work/run AGENT_SANDBOX_STATE_DIR=$work/state
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$AGENT_SANDBOX_STATE_DIR" "$work/code" "$work/out"
chmod 700 "$XDG_RUNTIME_DIR"
export AGENT_SANDBOX_CODE_DIRS=$work/code AGENT_SANDBOX_SESSION=parity-$$
export AGENT_SANDBOX_LOCAL_RUNTIME=$runtime
git -C "$work/code" init -q
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

if [ -n "$list" ]; then
    ids=$(cat "$list")
else
    ids=$(cd "$cases" && ls -d */*.sh | sed 's/\.sh$//')
fi
total=0 same=0 same_out=0 shown=0
for id in $ids; do
    f=$cases/$id.sh
    [ -f "$f" ] || continue
    total=$((total + 1))
    d=$work/code/w/${id//\//-}
    mkdir -p "$d/b/tmp" "$d/s/tmp"
    script=$(cat "$f")
    (cd "$d/b" && env -i PATH="$path" HOME="$HOME" LANG=C.UTF-8 TMP=tmp timeout 10 \
        bash -c 'exec -a "$0" bash -c "$1"' "$SBXSH" "$script" \
        >"$work/out/b.out" 2>"$work/out/b.err" </dev/null; echo "status=$?" >>"$work/out/b.out")
    if [ "$stdin_mode" = 1 ]; then
        (cd "$d/s" && env -i PATH="$path" HOME="$HOME" LANG=C.UTF-8 TMP=tmp AGENT_SANDBOX_FORWARD_ENV=TMP XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" \
            AGENT_SANDBOX_STATE_DIR="$AGENT_SANDBOX_STATE_DIR" AGENT_SANDBOX_CODE_DIRS="$work/code" \
            AGENT_SANDBOX_SESSION="$AGENT_SANDBOX_SESSION" AGENT_SANDBOX_LOCAL_RUNTIME="$runtime" \
            timeout 20 "$SBXSH" <"$f" >"$work/out/s.out" 2>"$work/out/s.err"
         echo "status=$?" >>"$work/out/s.out")
        # bash reads the script from stdin in a fresh directory (the -c run above left
        # its files in the first), called as sbxsh was, so its messages name the same
        rm -rf "$d/b"; mkdir -p "$d/b/tmp"
        (cd "$d/b" && env -i PATH="$path" HOME="$HOME" LANG=C.UTF-8 TMP=tmp timeout 10 \
            bash -c 'exec -a "$0" bash' "$SBXSH" <"$f" >"$work/out/b.out" 2>"$work/out/b.err"
         echo "status=$?" >>"$work/out/b.out")
    else
        (cd "$d/s" && env -i PATH="$path" HOME="$HOME" LANG=C.UTF-8 TMP=tmp AGENT_SANDBOX_FORWARD_ENV=TMP XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" \
            AGENT_SANDBOX_STATE_DIR="$AGENT_SANDBOX_STATE_DIR" AGENT_SANDBOX_CODE_DIRS="$work/code" \
            AGENT_SANDBOX_SESSION="$AGENT_SANDBOX_SESSION" AGENT_SANDBOX_LOCAL_RUNTIME="$runtime" \
            timeout 20 "$SBXSH" -c "$script" >"$work/out/s.out" 2>"$work/out/s.err" </dev/null
         echo "status=$?" >>"$work/out/s.out")
    fi
    # The directories differ by their last component (b or s): compare with it masked.
    sed -i "s#$d/[bs]#DIR#g" "$work"/out/*.out "$work"/out/*.err
    cmp -s "$work/out/b.out" "$work/out/s.out" && same_out=$((same_out + 1))
    if cmp -s "$work/out/b.out" "$work/out/s.out" && cmp -s "$work/out/b.err" "$work/out/s.err"; then
        same=$((same + 1))
    elif [ "$shown" -lt "$show" ]; then
        shown=$((shown + 1))
        echo "--- $id differs"
        diff <(cat "$work/out/b.out"; echo ==stderr==; cat "$work/out/b.err") \
             <(cat "$work/out/s.out"; echo ==stderr==; cat "$work/out/s.err") | head -12
    fi
done
mode=-c; [ "$stdin_mode" = 1 ] && mode=stdin
awk -v a="$same" -v o="$same_out" -v b="$total" -v m="$mode" -v r="$runtime" \
    'BEGIN {printf "execution parity with bash (%s mode, %s): %d/%d (%.2f%%) stdout, stderr and status; %d/%d (%.2f%%) stdout and status\n", m, r, a, b, b ? 100*a/b : 0, o, b, b ? 100*o/b : 0}'
