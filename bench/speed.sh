#!/bin/bash
# Speed of sbxsh against bash on the host, for each local runtime, in one run
# (issue 10's table; bench/local.md says how to read it). Prints a Markdown
# table of medians, each sandboxed cell with its ratio to the host's.
#
#   bench/speed.sh [--quick] [--sizes 1000,10000,100000] [--runtimes bwrap,runsc]
#                  [--rows LIST] [--runs N] [--big-runs N] [--file-size 1G]
#                  [--dir DIR] [--timeout SECONDS]
#
# Rows (--rows, comma-separated; default: all of them, in this order):
#   true   `-c true` in a warm session, per tree size
#   exec   `sbx exec --keep -- true` in a warm session, per tree size
#   git    `-c 'git status'` in a warm session, per tree size (a committed tree)
#   fresh  a fresh sandbox per command (`runsc do true`, a bare bwrap `true`)
#   make   `make -j2` of this project's sources (git archive HEAD), `make clean` between runs
#   seq    `seq 1e7` (78 MB) relayed to a file and to a pipe on the host
#   first  the first command of a new session (sandbox start + sync of the whole tree),
#          per tree size; the host's figure is `cp -a` of the tree
#   big    a --file-size file written in the sandbox until it is on the host, and one
#          written on the host read in the sandbox (push included)
# --runs (default 10, after 3 warm-up runs) is for true, exec, git, fresh and seq;
# --big-runs (default 3, no warm-up) for make, first and big. --quick: one 1,000-file
# tree, 3 runs, 1 big run, a 64M file: a smoke run, not figures.
#
# Every session and state directory lives in a temporary directory under --dir
# (default /dev/shm: this VM's ext4 swings by 5x between runs) and is released on
# exit, Ctrl-C or SIGTERM; every measurement runs under `timeout` (--timeout,
# default 1800 s). Needs hyperfine and jq (make deps) and a built tree (make).
set -u
sizes=1000,10000,100000
runtimes=bwrap,runsc
rows=true,exec,git,fresh,make,seq,first,big
runs=10 big_runs=3 file_size=1G limit=1800
dir=/dev/shm
[ -d "$dir" ] && [ -w "$dir" ] || dir=${TMPDIR:-/tmp}
usage() {
    sed -n '/^#   bench/,/^#  *\[--dir/p' "$0" | sed 's/^# *//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --quick) sizes=1000 runs=3 big_runs=1 file_size=64M; shift ;;
    --sizes | --runtimes | --rows | --runs | --big-runs | --file-size | --dir | --timeout)
        [ $# -ge 2 ] || usage
        v=${1#--} v=${v//-/_}
        [ "$v" = timeout ] && v=limit
        printf -v "$v" %s "$2"
        shift 2 ;;
    *) usage ;;
    esac
done
[[ $runs =~ ^[1-9][0-9]*$ && $big_runs =~ ^[1-9][0-9]*$ && $limit =~ ^[1-9][0-9]*$ ]] || usage
[[ $sizes =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || usage
bytes=$(numfmt --from=iec "$file_size" 2>/dev/null) || usage
has() { [[ ,$1, == *,$2,* ]]; } # LIST ITEM

top=$(cd "$(dirname "$0")/.." && pwd)
SBX=$top/sbx SBXSH=$top/sbxsh
for t in hyperfine jq timeout numfmt git "$SBX" "$SBXSH"; do
    command -v "$t" >/dev/null || { echo "$0: $t not found (make deps && make)" >&2; exit 1; }
done
rts=()
for rt in ${runtimes//,/ }; do
    case $rt in
    runsc | bwrap)
        if command -v "$rt" >/dev/null; then rts+=("$rt")
        else echo "$0: $rt is not installed: its column is left out" >&2; fi ;;
    *) echo "$0: unknown runtime $rt (runsc, bwrap)" >&2; exit 2 ;;
    esac
done

work=$(mktemp -d "$dir/sbx-speed.XXXXXX") || exit 1
export HOME=$work/home XDG_RUNTIME_DIR=$work/run AGENT_SANDBOX_STATE_DIR=$work/state
# A safety net if this script is killed with SIGKILL: its holders leave by themselves.
export AGENT_SANDBOX_IDLE_TIMEOUT=15m
unset AGENT_SANDBOX_SESSION AGENT_SANDBOX_CODE_DIRS AGENT_SANDBOX_LOCAL_RUNTIME
# Under `make bench-speed`, the make row's host make would see the outer make's flags (the
# sandbox's does not: its environment is filtered).
unset MAKEFLAGS MFLAGS MAKELEVEL
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$work/json" "$work/log" "$work/bin"
chmod 700 "$XDG_RUNTIME_DIR"
sessions=() # "dir session" pairs to release
child=
cleanup() {
    trap '' INT TERM
    [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
    for s in "${sessions[@]}"; do
        (cd "${s% *}" 2>/dev/null || cd /; timeout 60 "$SBX" release --session "${s##* }") \
            >/dev/null 2>&1
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "$0: interrupted" >&2; exit 130' INT TERM

# Runs its arguments under timeout in the background and waits for them, so
# that a Ctrl-C reaches this script's trap at once (timeout's own process group
# does not get the terminal's signals) and the trap can end the measurement.
bounded() { # COMMAND...
    timeout -k 10 "$limit" "$@" &
    child=$!
    wait "$child"
    local rc=$?
    child=
    return $rc
}

# A script in $work/bin, for hyperfine's --prepare and for commands that need
# a shell's redirections (hyperfine -N runs argv). Prints its path.
script() { # NAME BODY
    printf '#!/bin/bash\n%s\n' "$2" >"$work/bin/$1"
    chmod +x "$work/bin/$1"
    echo "$work/bin/$1"
}

declare -A med  # "ROW|COLUMN" -> median in seconds, or "fail"
order=()        # rows in the order they are printed
declare -A what # ROW -> its label
row() { # KEY LABEL
    [ -n "${what[$1]:-}" ] || order+=("$1")
    what[$1]=$2
}

# One hyperfine measurement of one command in the current directory; its
# median goes to med[ROW|COL]. Options before the command go to hyperfine.
measure() { # ROW COL RUNS WARMUP [HYPERFINE-OPTION...] COMMAND
    local key="$1|$2" runs=$3 warm=$4
    shift 4
    local out=$work/json/${key//[^a-zA-Z0-9]/_}.json
    printf '# %-40s %s\n' "$key" "${*: -1}" >&2
    if bounded hyperfine -N -r "$runs" -w "$warm" --export-json "$out" "$@" \
        >"$work/log/${key//[^a-zA-Z0-9]/_}.log" 2>&1; then
        med[$key]=$(jq -r '.results[0].median' "$out")
    else
        med[$key]=fail
        echo "$0: $key failed or timed out; its log, then its stderr run once more:" >&2
        tail -n 5 "$work/log/${key//[^a-zA-Z0-9]/_}.log" >&2
        bounded bash -c "${*: -1}" 2>&1 >/dev/null | tail -n 5 >&2
    fi
}

# Starts (or reuses) session NAME on the current directory for runtime RT;
# the measurements that follow use it.
use_session() { # RT NAME
    export AGENT_SANDBOX_LOCAL_RUNTIME=$1 AGENT_SANDBOX_SESSION=$2
    sessions+=("$PWD $2")
}
no_session() { unset AGENT_SANDBOX_LOCAL_RUNTIME AGENT_SANDBOX_SESSION; }

# A git repository of n files, 100 per directory, small contents, committed
# and packed (so that .git adds a handful of files, not n loose objects).
make_tree() { # DIR N
    mkdir -p "$1"
    (cd "$1" && git init -q && awk -v n="$2" 'BEGIN {
        for (i = 0; i < n; i++) {
            d = sprintf("d%04d", int(i / 100)); if (i % 100 == 0) system("mkdir -p " d)
            f = sprintf("%s/f%05d.txt", d, i); print "line " i > f; close(f)
        } }' && git add -A && git -c user.name=bench -c user.email=bench@localhost \
        commit -qm tree && git repack -adq && git prune-packed)
}
# This project's sources as of HEAD, as a git repository of their own.
make_src() { # DIR
    mkdir -p "$1" && git -C "$top" archive HEAD | tar x -C "$1" && (cd "$1" && git init -q)
}

release_s=$(script release '"$SBX" release >/dev/null 2>&1; true')
export SBX SBXSH
rc_s=$(script sbx-c '"$SBXSH" -c "$1"')
yes_cmd="yes abcdefghijklmnopqrstuvwxyz | head -c $bytes > big"

# Per tree size: first command, then the warm rows in the session it left.
for n in ${sizes//,/ }; do
    has "$rows" true || has "$rows" exec || has "$rows" git || has "$rows" first || break
    tree=$work/tree-$n
    echo "# building a $n-file tree" >&2
    bounded bash -c "$(declare -f make_tree); make_tree \"\$@\"" _ "$tree" "$n" >/dev/null || { echo "$0: cannot build $tree" >&2; exit 1; }
    cd "$tree" || exit 1
    has "$rows" first && row "first-$n" "first command of a session, $n files"
    has "$rows" true && row "true-$n" "\`-c true\`, warm, $n files"
    has "$rows" exec && row "exec-$n" "\`sbx exec --keep -- true\`, warm, $n files"
    has "$rows" git && row "git-$n" "\`-c 'git status'\`, $n files"
    if has "$rows" first; then
        measure "first-$n" host "$big_runs" 0 -p "rm -rf $work/copy" "cp -a $tree $work/copy"
        rm -rf "$work/copy"
    fi
    has "$rows" true && measure "true-$n" host "$runs" 3 'bash -c true'
    has "$rows" exec && med["exec-$n|host"]=${med["true-$n|host"]:-}
    has "$rows" git && measure "git-$n" host "$runs" 3 "bash -c 'git status'"
    for rt in "${rts[@]}"; do
        use_session "$rt" "speed-$rt-$n"
        if has "$rows" first; then
            measure "first-$n" "$rt" "$big_runs" 0 -p "$release_s" "$SBXSH -c true"
        fi
        has "$rows" true && measure "true-$n" "$rt" "$runs" 3 "$SBXSH -c true"
        has "$rows" exec && measure "exec-$n" "$rt" "$runs" 3 "$SBX exec --keep -- true"
        has "$rows" git && measure "git-$n" "$rt" "$runs" 3 "$SBXSH -c 'git status'"
        bounded "$release_s"
    done
    no_session
    cd "$work" && rm -rf "$tree"
done

if has "$rows" fresh; then
    row fresh "a fresh sandbox: \`runsc do true\`, bare \`bwrap true\`"
    # From /: `runsc do` runs the command in its cwd, which must exist in the sandbox's root.
    cd / || exit 1
    measure fresh host "$runs" 3 'bash -c true'
    for rt in "${rts[@]}"; do
        case $rt in
        runsc) measure fresh runsc "$runs" 3 'runsc --network=none --ignore-cgroups do true' ;;
        bwrap) measure fresh bwrap "$runs" 3 'bwrap --unshare-user --unshare-pid --unshare-net --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --proc /proc --dev /dev /bin/true' ;;
        esac
    done
fi

if has "$rows" make; then
    row make "\`make -j2\` of this project"
    echo "# copying the sources (git archive HEAD)" >&2
    for c in host "${rts[@]}"; do
        make_src "$work/src-$c" || { echo "$0: cannot copy the sources" >&2; exit 1; }
        cd "$work/src-$c" || exit 1
        if [ "$c" = host ]; then
            measure make host "$big_runs" 0 -p 'make clean' 'make -j2'
        else
            use_session "$c" "speed-$c-src"
            measure make "$c" "$big_runs" 0 -p "$rc_s 'make clean'" "$SBXSH -c 'make -j2'"
            bounded "$release_s"
            no_session
        fi
        cd "$work" && rm -rf "$work/src-$c"
    done
fi

# seq and big: a one-file repository per column.
if has "$rows" seq || has "$rows" big; then
    has "$rows" seq && row seq-file "\`seq 1e7\` (78 MB) to a file" &&
        row seq-pipe "\`seq 1e7\` (78 MB) to a pipe"
    has "$rows" big && row big-out "a $file_size file written in the sandbox, on the host" &&
        row big-in "a $file_size file from the host, read in the sandbox"
    for c in host "${rts[@]}"; do
        mkdir -p "$work/small-$c" && cd "$work/small-$c" && git init -q && echo x >README ||
            exit 1
        if [ "$c" = host ]; then
            sh_c=(bash -c) pre=
        else
            use_session "$c" "speed-$c-small"
            sh_c=("$SBXSH" -c) pre="$SBXSH -c true;"
        fi
        q=$(printf '%q ' "${sh_c[@]}")
        if has "$rows" seq; then
            measure seq-file "$c" "$runs" 3 --output="$work/seq.out" "$q 'seq 1e7'"
            measure seq-pipe "$c" "$runs" 3 --output=pipe "$q 'seq 1e7'"
            rm -f "$work/seq.out"
        fi
        if has "$rows" big; then
            measure big-out "$c" "$big_runs" 0 -p "$(script "rm-$c" "$q 'rm -f big'")" \
                "$q '$yes_cmd'"
            # The file must have reached the host whole, or the figure means nothing.
            [ "$(stat -c %s big 2>/dev/null)" = "$bytes" ] || {
                echo "$0: big-out ($c): big is not $bytes bytes on the host" >&2
                med["big-out|$c"]=fail
            }
            measure big-in "$c" "$big_runs" 0 \
                -p "$(script "new-$c" "rm -f big; $pre $yes_cmd")" "$q 'cat big >/dev/null'"
        fi
        if [ "$c" != host ]; then bounded "$release_s"; no_session; fi
        cd "$work" && rm -rf "$work/small-$c"
    done
fi

# The table: each cell the median; a sandboxed one with its ratio to the host's.
fmt() { # SECONDS
    awk -v s="$1" 'BEGIN { if (s < 1) printf "%.1f ms", s * 1000; else printf "%.2f s", s }'
}
cell() { # ROW COL
    local v=${med["$1|$2"]:-} h=${med["$1|host"]:-}
    if [ -z "$v" ]; then printf ' |'
    elif [ "$v" = fail ]; then printf ' failed |'
    elif [ "$2" = host ] || [ -z "$h" ] || [ "$h" = fail ]; then printf ' %s |' "$(fmt "$v")"
    else
        case $1 in
        true-* | exec-* | fresh)
            awk -v v="$v" -v h="$h" 'BEGIN {
                printf " %.1f ms (%+.1f ms, %.1fx) |", v * 1000, (v - h) * 1000, v / h }' ;;
        *) printf ' %s (%.1fx) |' "$(fmt "$v")" "$(awk -v v="$v" -v h="$h" 'BEGIN { print v / h }')" ;;
        esac
    fi
}
runsc_v=$(runsc --version 2>/dev/null | sed -n 's/^runsc version //p')
platform=$(runsc flags 2>&1 | awk '$1 == "-platform" { getline; if (match($0, /default "[^"]*"/)) print substr($0, RSTART + 9, RLENGTH - 10) }')
printf '\n'
printf 'Machine: %s CPUs (%s), kernel %s, runsc %s (%s platform), %s; load average %s at the end.\n' \
    "$(nproc)" "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" "$(uname -r)" \
    "${runsc_v:-not installed}" "${platform:-?}" "$(bwrap --version 2>/dev/null || echo 'no bwrap')" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'Medians of %s runs (after 3 warm-up runs) for `-c true`, git status and seq; of %s for make, first command and the %s file; in %s.\n\n' \
    "$runs" "$big_runs" "$file_size" "$dir"
printf '| what | bash on the host |'
for rt in "${rts[@]}"; do printf ' sbxsh, %s |' "$rt"; done
printf '\n|---|---:|'
for rt in "${rts[@]}"; do printf -- '---:|'; done
printf '\n'
# Grouped by kind, in the order the header comment lists the rows.
for k in true exec git fresh make seq first big; do
    for r in "${order[@]}"; do
        [[ $r == "$k" || $r == "$k"-* ]] || continue
        printf '| %s |' "${what[$r]}"
        cell "$r" host
        for rt in "${rts[@]}"; do cell "$r" "$rt"; done
        printf '\n'
    done
done
