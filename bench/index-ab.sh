#!/bin/bash
# The git index ping-pong (issue 22): `git status` alternating between the host (an IDE
# polling git) and the sandbox (`sbxsh -c 'git status'`) in a repository of N files, for
# builds side by side (e.g. main's and this tree's), on both local runtimes, in one run; and
# the same commands steady (the same side twice). Each build and runtime has its own copy of
# the repository and its own session; the rounds of every column are interleaved.
#
#   bench/index-ab.sh [--runs N] [--files N] [--runtimes bwrap,runsc] [--dir DIR] DIR [DIR...]
#
# Each DIR is a built tree (`make`); builds are named A, B, ... in that order. --runs (default
# 10) rounds after 2 warm-up rounds, --files (default 10000, in directories of 100); each round
# times two alternating and one steady status per side and column. Prints a
# Markdown table of medians in ms: git status on the host and in the sandbox (timed inside the
# sandbox, what the agent's git costs), and the whole `sbxsh -c 'git status'` (its syncs
# included), alternating and steady. Sessions live under --dir (default /dev/shm).
set -u
runs=10 files=10000 runtimes=bwrap,runsc dir=/dev/shm
. "$(dirname "$0")/lib.sh"
ab_setup "runs files runtimes dir" "runs files" "$@"
ab_work index-ab
export GIT_CONFIG_NOSYSTEM=1
printf '[user]\n\tname = B\n\temail = b@example.com\n' > "$HOME/.gitconfig"

# The repository once, then a copy per column (cp -a: the same files, each copy its own inodes).
mkdir -p "$work/seed" && (
    cd "$work/seed" && git init -q . &&
    for ((d = 0; d < (files + 99) / 100; d++)); do
        mkdir -p "d$d"
        for ((i = 0; i < 100 && d * 100 + i < files; i++)); do echo "file $d/$i" > "d$d/f$i"; done
    done &&
    git add -A && git -c gc.auto=0 commit -qm seed && git gc -q   # packed now, not by a gc --auto
) || exit 1                                                         # in the background mid-copy

cols=()
declare -A sbxsh sbx code
for rt in "${rts[@]}"; do
    for i in "${!builds[@]}"; do
        c=${builds[$i]}-$rt
        cols+=("$c")
        sbxsh[$c]=${dirs[$i]}/sbxsh sbx[$c]=${dirs[$i]}/sbx code[$c]=$work/code-$c
        cp -a "$work/seed" "${code[$c]}"
    done
done
rm -rf "$work/seed"
cleanup() {
    for c in "${cols[@]}"; do
        AGENT_SANDBOX_SESSION=$c timeout 60 "${sbx[$c]}" release >/dev/null 2>&1
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run COL CMD...: the command in the column's session and code directory.
run() {
    local c=$1; shift
    (cd "${code[$c]}" && AGENT_SANDBOX_SESSION=$c AGENT_SANDBOX_CODE_DIRS=${code[$c]} \
        AGENT_SANDBOX_LOCAL_RUNTIME=${c#*-} "$@")
}
# One host git status, one sandbox one (timed inside), and the whole sbxsh -c around it, in
# microseconds into t[COL/host], t[COL/sandbox], t[COL/sbxsh] (suffix: alt or steady).
declare -A t
host_status() { # COL KIND
    local s=${EPOCHREALTIME/./}
    run "$1" git status --porcelain >/dev/null || { echo "$0: $1: git status failed" >&2; exit 1; }
    t[$1/host/$2]+=" $((${EPOCHREALTIME/./} - s))"
}
sandbox_status() { # COL KIND
    local s=${EPOCHREALTIME/./} in
    # shellcheck disable=SC2016 # expanded by the sandbox's bash
    in=$(run "$1" "${sbxsh[$1]}" -c 's=${EPOCHREALTIME/./}; git status --porcelain >/dev/null;
                                         echo $((${EPOCHREALTIME/./} - s))') ||
        { echo "$0: $1: sbxsh -c git status failed" >&2; exit 1; }
    t[$1/sbxsh/$2]+=" $((${EPOCHREALTIME/./} - s))"
    t[$1/sandbox/$2]+=" $in"
}

for c in "${cols[@]}"; do
    run "$c" "${sbxsh[$c]}" -c true || { echo "$0: $c: the first command failed" >&2; exit 1; }
done
# Each round, per column: host, sandbox, sandbox again (steady), host (alternating), host
# again (steady), sandbox (alternating); the next round's first host status alternates too.
for ((r = -2; r < runs; r++)); do
    for c in "${cols[@]}"; do
        host_status "$c" alt
        sandbox_status "$c" alt
        sandbox_status "$c" steady
        host_status "$c" alt
        host_status "$c" steady
        sandbox_status "$c" alt
    done
done

# The median in ms of the samples after the warm-up rounds' (the first WARM).
median() { # SAMPLES WARM
    tr ' ' '\n' <<<"$1" | sed '/^$/d' | tail -n +$(($2 + 1)) | sort -n |
        awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                                   printf "%.1f", m / 1000 }'
}
echo "git status, $files files, medians of $((2 * runs)) alternating and $runs steady (ms); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
for i in "${!builds[@]}"; do
    echo "- ${builds[$i]}: ${dirs[$i]}$(git -C "${dirs[$i]}" rev-parse --short HEAD 2>/dev/null | sed "s/.*/ (&)/")"
done
echo
echo "| build, runtime | host, alternating | sandbox, alternating | \`sbxsh -c\`, alternating | host, steady | sandbox, steady | \`sbxsh -c\`, steady |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for c in "${cols[@]}"; do
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$(median "${t[$c/host/alt]}" 4)" \
        "$(median "${t[$c/sandbox/alt]}" 4)" "$(median "${t[$c/sbxsh/alt]}" 4)" \
        "$(median "${t[$c/host/steady]}" 2)" "$(median "${t[$c/sandbox/steady]}" 2)" \
        "$(median "${t[$c/sbxsh/steady]}" 2)"
done
