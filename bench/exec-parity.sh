#!/bin/bash
# Execution parity with bash on a corpus of bash case files: each case runs through bash and
# through sbxsh, from the same directory with the same environment, and stdout, stderr and
# the exit status are compared.
#
#   bench/exec-parity.sh [--stdin | --file] [--runtime bwrap|runsc] [--show N] [--list IDS] CASEDIR
#
#   (default)  `bash -c TEXT`  vs `sbxsh -c TEXT`
#   --file     `bash FILE`     vs `sbxsh FILE` (FILE is the case, copied into the code directory)
#   --stdin    `bash < FILE`   vs `sbxsh < FILE`
#
# CASEDIR holds one folder per file of cases, each with NNN.sh files (the layout of
# Oils' spec tests split into single cases). --list takes a file of ids (folder/NNN) to
# run instead of all. Prints the share that agrees and the first N differences.
# A measurement, not a test: it is not part of `make check`.
#
# What keeps the comparison fair to both sides:
# - Both sides run in the same directory (made afresh for each run), so a case that prints
#   its cwd or its name agrees.
# - Output written after the shell exits (a process substitution, a background job) is
#   waited for on both sides, up to 2 s, as a caller reading a pipe would: every process
#   that holds the output files holds a shared lock on them. The status goes to its own
#   file, so a late writer cannot overwrite it.
# - As root, bash runs without capabilities (an empty bounding set): a sandbox's root has
#   none, so `[ -r ]` on a mode-000 file or `rm` in a read-only directory would otherwise
#   measure the harness's privileges, not sbxsh.
# - Each case runs through bash three times, and a case where sbxsh differs up to
#   PARITY_RECHECK (20) times more; a case whose bash runs differ (process ids, $RANDOM,
#   times, the order of two processes' writes, which of two racing processes wins) measures
#   nothing and is counted apart. sbxsh agrees with such a case when it matches a bash run.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
mode=-c runtime=${AGENT_SANDBOX_LOCAL_RUNTIME:-bwrap} show=15 list='' recheck=${PARITY_RECHECK:-20}
while [ $# -gt 1 ]; do
    case $1 in
    --stdin) mode=stdin; shift ;;
    --file) mode='file'; shift ;;
    --runtime) runtime=$2; shift 2 ;;
    --show) show=$2; shift 2 ;;
    --list) list=$2; shift 2 ;;
    *) break ;;
    esac
done
cases=${1:?usage: exec-parity.sh [--stdin | --file] [--runtime R] [--show N] [--list IDS] CASEDIR}
cases=$(cd "$cases" && pwd)
SBXSH=${SBXSH:-$top/sbxsh}
SBX=${SBX:-$top/sbx}

work=$(mktemp -d /var/tmp/sbx-parity.XXXXXX)
trap '"$SBX" release --session "$AGENT_SANDBOX_SESSION" >/dev/null 2>&1; rm -rf "$work"' EXIT
export HOME=$work/home XDG_RUNTIME_DIR=$work/run AGENT_SANDBOX_STATE_DIR=$work/state
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$AGENT_SANDBOX_STATE_DIR" "$work/code/scripts" "$work/out"
chmod 700 "$XDG_RUNTIME_DIR"
chmod 755 "$work" "$work/code" "$work/code/scripts"
export AGENT_SANDBOX_CODE_DIRS=$work/code AGENT_SANDBOX_SESSION=parity-$$
export AGENT_SANDBOX_LOCAL_RUNTIME=$runtime
git -C "$work/code" init -q
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
nocaps=()
[ "$(id -u)" = 0 ] && nocaps=(setpriv --bounding-set=-all --inh-caps=-all --)

if [ -n "$list" ]; then
    ids=$(cat "$list")
else
    ids=$(cd "$cases" && printf '%s\n' */*.sh | sed 's/\.sh$//')
fi

# side NAME INPUT CMD...: runs CMD in a fresh $d with stdin from INPUT; leaves NAME.out,
# NAME.err and NAME.rc in $work/out once every writer of the output is gone (or 2 s passed).
side() {
    local name=$1 input=$2 o=$work/out/$1
    shift 2
    chmod -R u+rwx "$d" 2>/dev/null
    rm -rf "$d"
    mkdir -p "$d/tmp"
    # (the subshell's own death by a signal is the case's status, not news for our stderr)
    { (cd "$d" && exec >"$o.out" 2>"$o.err" <"$input" && flock -s 1 && flock -s 2 && exec "$@")
      echo "status=$?" >"$o.rc"; } 2>/dev/null
    flock -w 2 -x "$o.out" true
    flock -w 2 -x "$o.err" true
    # bash reading a script from stdin calls itself bash, not sbxsh
    [ "$mode" = stdin ] && [ "$name" != s ] && sed -i "s#^bash: #$SBXSH: #" "$o.err"
    cat "$o.rc" >>"$o.out"
}

same_as() { # A B: the two runs printed and ended the same
    cmp -s "$work/out/$1.out" "$work/out/$2.out" && cmp -s "$work/out/$1.err" "$work/out/$2.err"
}

total=0 same=0 same_out=0 shown=0 unstable=0 unstable_same=0 unstable_ids=
for id in $ids; do
    f=$cases/$id.sh
    [ -f "$f" ] || continue
    total=$((total + 1))
    d=$work/code/w/${id//\//-}
    benv=(env -i PATH="$path" HOME="$HOME" LANG=C.UTF-8 TMP=tmp)
    senv=(env -i PATH="$path" HOME="$HOME" LANG=C.UTF-8 TMP=tmp AGENT_SANDBOX_FORWARD_ENV=TMP
          XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" AGENT_SANDBOX_STATE_DIR="$AGENT_SANDBOX_STATE_DIR"
          AGENT_SANDBOX_CODE_DIRS="$work/code" AGENT_SANDBOX_SESSION="$AGENT_SANDBOX_SESSION"
          AGENT_SANDBOX_LOCAL_RUNTIME="$runtime")
    case $mode in
    -c)
        script=$(cat "$f")
        # $0 is sbxsh's path on both sides: bash's messages then name it alike
        bcmd=(bash -c 'exec -a "$0" bash -c "$1"' "$SBXSH" "$script")
        scmd=("$SBXSH" -c "$script")
        input=/dev/null ;;
    file)
        sf=$work/code/scripts/${id//\//-}.sh
        cp "$f" "$sf"
        # bash's own name (\s in a prompt) is sbxsh's on both sides, as in -c mode
        bcmd=(bash -c 'exec -a "$0" bash "$1"' "$SBXSH" "$sf")
        scmd=("$SBXSH" "$sf") input=/dev/null ;;
    stdin)
        # bash's own name (\s in a prompt, $0) is sbxsh's on both sides, as in -c mode
        bcmd=(bash -c 'exec -a "$0" bash' "$SBXSH") scmd=("$SBXSH") input=$f ;;
    esac
    # bash three times, then sbxsh: nothing touches the directory after sbxsh's run (the
    # host's changes there would meet the sandbox's in the next case's sync)
    stable=1
    side b "$input" "${nocaps[@]}" "${benv[@]}" timeout 10 "${bcmd[@]}"
    for b in b3 b2; do
        side $b "$input" "${nocaps[@]}" "${benv[@]}" timeout 10 "${bcmd[@]}"
        same_as b $b || stable=0
    done
    side s "$input" "${senv[@]}" timeout 20 "${scmd[@]}"
    # A difference is checked against more bash runs before it counts: a race that bash
    # loses one time in twenty (a killed job reaped before or after the next line) agrees
    # with itself three times often enough.
    if [ "$stable" = 1 ] && ! same_as b s; then
        for _ in $(seq "$recheck"); do
            side b2 "$input" "${nocaps[@]}" "${benv[@]}" timeout 10 "${bcmd[@]}"
            same_as b b2 || { stable=0; break; }
        done
        # bash rewrote the directory sbxsh left: gone on the host, and a sync that removes
        # it in the sandbox too, so that the next case does not meet it as a conflict
        chmod -R u+rwx "$d" 2>/dev/null
        rm -rf "$d"
        "${senv[@]}" "$SBXSH" -c true >/dev/null 2>&1 </dev/null
    fi
    if [ "$stable" = 1 ]; then
        cmp -s "$work/out/b.out" "$work/out/s.out" && same_out=$((same_out + 1))
        same_as b s && { same=$((same + 1)); continue; }
    else
        unstable=$((unstable + 1)) unstable_ids="$unstable_ids $id"
        same_as b s || same_as b2 s || same_as b3 s && { unstable_same=$((unstable_same + 1)); continue; }
    fi
    if [ "$shown" -lt "$show" ]; then
        shown=$((shown + 1))
        echo "--- $id differs$([ "$stable" = 1 ] || echo ' (bash differs from itself too)')"
        diff <(cat "$work/out/b.out"; echo '==stderr=='; cat "$work/out/b.err") \
             <(cat "$work/out/s.out"; echo '==stderr=='; cat "$work/out/s.err") | head -12
    fi
done
[ -n "$unstable_ids" ] && echo "--- bash differs from itself on:$unstable_ids"
awk -v a="$same" -v o="$same_out" -v t="$total" -v u="$unstable" -v us="$unstable_same" \
    -v m="$mode" -v r="$runtime" 'BEGIN {
    b = t - u
    printf "execution parity with bash (%s mode, %s): %d/%d (%.2f%%) stdout, stderr and status; %d/%d (%.2f%%) stdout and status", m, r, a, b, b ? 100*a/b : 0, o, b, b ? 100*o/b : 0
    printf " (%d cases where bash differs from itself left out; with them, sbxsh matching either bash run: %d/%d, %.2f%%)\n", u, a + us, t, t ? 100*(a+us)/t : 0 }'
