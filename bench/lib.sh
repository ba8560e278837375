# shellcheck shell=bash
# The start the A/B benchmarks share (bench/true-ab.sh, bench/index-ab.sh): source it, set
# the options' defaults, then call
#
#   ab_setup "OPTIONS" "WHOLE" "$@"
#
# It parses `--NAME VALUE` for each NAME of OPTIONS (setting the variable NAME), checks that
# each variable of WHOLE is a whole number from 1, and takes the rest as built trees
# (`make`): builds (A, B, C... in that order), dirs (their absolute paths), rts (the
# runtimes of $runtimes installed here; the others are left out with a word). A wrong call
# prints the script's `#   bench/...` usage line and exits 2. $dir falls back to $TMPDIR
# (or /tmp) when it is not a writable directory.
#
#   ab_work NAME
#
# makes the run's private directory $work under $dir, with HOME, XDG_RUNTIME_DIR (0700) and
# AGENT_SANDBOX_STATE_DIR in it, sessions kept 15 minutes idle, and none of the caller's
# session, code directories or runtime choice.

ab_usage() { sed -n '/^#   bench/p' "$0" | sed 's/^# *//' >&2; exit 2; }

ab_setup() {
    local opts=" $1 " whole=$2 d rt v
    shift 2
    [ -d "$dir" ] && [ -w "$dir" ] || dir=${TMPDIR:-/tmp}
    while [ $# -gt 0 ]; do
        case $1 in
        --*) if ! [[ $opts == *" ${1#--} "* ]] || [ $# -lt 2 ]; then ab_usage; fi
             printf -v "${1#--}" %s "$2"; shift 2 ;;
        -*) ab_usage ;;
        *) break ;;
        esac
    done
    [ $# -ge 1 ] || ab_usage
    for v in $whole; do
        [[ ${!v} =~ ^[1-9][0-9]*$ ]] || ab_usage
    done
    builds=() dirs=()
    for d in "$@"; do
        d=$(cd "$d" && pwd) || exit 1
        if ! [ -x "$d/sbxsh" ] || ! [ -x "$d/sbx" ]; then echo "$0: $d has no built sbxsh (make)" >&2; exit 1; fi
        # the build's letter: A, B, C... (an octal escape made from its index)
        # shellcheck disable=SC2059
        builds+=("$(printf "\\$(printf %o $((65 + ${#builds[@]})))")")
        dirs+=("$d")
    done
    rts=()
    # shellcheck disable=SC2154 # (the caller's default, or --runtimes)
    for rt in ${runtimes//,/ }; do
        command -v "$rt" >/dev/null && rts+=("$rt") || echo "$0: $rt is not installed: left out" >&2
    done
}

ab_work() {
    work=$(mktemp -d "$dir/sbx-$1.XXXXXX") || exit 1
    export HOME=$work/home XDG_RUNTIME_DIR=$work/run AGENT_SANDBOX_STATE_DIR=$work/state
    export AGENT_SANDBOX_IDLE_TIMEOUT=15m
    unset AGENT_SANDBOX_SESSION AGENT_SANDBOX_CODE_DIRS AGENT_SANDBOX_LOCAL_RUNTIME
    mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
    chmod 700 "$XDG_RUNTIME_DIR"
}
