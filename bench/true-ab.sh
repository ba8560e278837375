#!/bin/bash
# `sbxsh -c true` in a warm session, builds side by side (e.g. main's and this tree's), on
# both local runtimes, in one run: the runs of every column are interleaved (one of each per
# round), so that a machine whose load swings (a shared one) weighs on every column alike.
# Prints a Markdown table of medians (and the spread between the quartiles), each with its
# ratio to `bash -c true` on the host and its change against the first build.
#
#   bench/true-ab.sh [--runs N] [--clients K] [--runtimes bwrap,runsc] [--dir DIR] DIR [DIR...]
#
# Each DIR is a built tree (`make`): its sbxsh, sbx and sbx-agent are used; builds are named
# A, B, C... in that order. --runs (default 100) rounds after 5 warm-up rounds. --clients K
# (default 1): each sample is K clients of the session running `sbxsh -c true` at once, timed
# until the last one ends (bash's column: K `bash -c true` at once). Sessions and state live
# under --dir (default /dev/shm) and are released on exit.
set -u
runs=100 clients=1 runtimes=bwrap,runsc dir=/dev/shm
. "$(dirname "$0")/lib.sh"
ab_setup "runs clients runtimes dir" "runs clients" "$@"
ab_work true-ab
mkdir -p "$work/proj"
cd "$work/proj" && git init -q && for i in $(seq 1000); do echo "$i" > "f$i"; done
cols=(host)
declare -A cmd
cmd[host]="bash -c true"
for rt in "${rts[@]}"; do
    for i in "${!builds[@]}"; do
        ab=${builds[$i]} d=${dirs[$i]}
        cols+=("$ab-$rt")
        cmd[$ab-$rt]="env AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=$ab-$rt $d/sbxsh -c true"
    done
done
cleanup() {
    for rt in "${rts[@]}"; do
        for i in "${!builds[@]}"; do
            ab=${builds[$i]} d=${dirs[$i]}
            AGENT_SANDBOX_SESSION=$ab-$rt timeout 60 "$d/sbx" release >/dev/null 2>&1
        done
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

declare -A t # COL -> the times in microseconds, space-separated
for ((r = -5; r < runs; r++)); do
    for c in "${cols[@]}"; do
        s=${EPOCHREALTIME/./}
        if [ "$clients" = 1 ]; then
            ${cmd[$c]} || { echo "$0: $c failed: ${cmd[$c]}" >&2; exit 1; }
        else
            pids=()
            for ((k = 0; k < clients; k++)); do ${cmd[$c]} & pids+=($!); done
            for p in "${pids[@]}"; do
                wait "$p" || { echo "$0: $c failed: ${cmd[$c]}" >&2; exit 1; }
            done
        fi
        e=${EPOCHREALTIME/./}
        [ $r -ge 0 ] && t[$c]+="$((e - s)) "
    done
done
q() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p); if (i < 1) i = 1; printf "%.1f", v[i] / 1000 }'; }
declare -A med
for c in "${cols[@]}"; do med[$c]=$(q 0.5 <<<"${t[$c]}"); done
printf 'Medians of %s interleaved runs (after 5 warm-up rounds)%s, in ms, [lower-upper quartile]; load average %s at the end.\n\n' \
    "$runs" "$([ "$clients" = 1 ] || echo ", each $clients clients at once")" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| what | `bash -c true` on the host |'
for rt in "${rts[@]}"; do
    for ab in "${builds[@]}"; do printf ' %s, %s |' "$rt" "$ab"; done
done
printf '\n|---|---:|'
for rt in "${rts[@]}"; do for ab in "${builds[@]}"; do printf -- '---:|'; done; done
printf '\n| `sbxsh -c true`, warm, 1000 files | %s [%s-%s] |' "${med[host]}" \
    "$(q 0.25 <<<"${t[host]}")" "$(q 0.75 <<<"${t[host]}")"
for rt in "${rts[@]}"; do
    for ab in "${builds[@]}"; do
        c=$ab-$rt
        printf ' %s [%s-%s] (%.1fx' "${med[$c]}" "$(q 0.25 <<<"${t[$c]}")" \
            "$(q 0.75 <<<"${t[$c]}")" "$(bc -l <<<"${med[$c]} / ${med[host]}")"
        [ "$ab" = A ] || printf ', %+.1f' "$(bc -l <<<"${med[$c]} - ${med[A-$rt]}")"
        printf ') |'
    done
done
printf '\n\n'
for i in "${!builds[@]}"; do printf '%s: %s\n' "${builds[$i]}" "${dirs[$i]}"; done
