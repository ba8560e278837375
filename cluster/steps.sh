# shellcheck shell=bash
# The step list the node scripts print and run (node-install.sh, gvisor-node.sh,
# cache-gc-install.sh source it): each step numbered, with its command as it would be typed;
# with dry=1 (--dry-run) only printed.
n=0
# step DESCRIPTION CMD...: prints the step and its command; runs it unless --dry-run.
step() {
    local desc=$1
    shift
    n=$((n + 1))
    printf 'step %d: %s\n' "$n" "$desc"
    printf '  $'
    printf ' %q' "$@"
    printf '\n'
    # shellcheck disable=SC2154 # dry: set by the script that sources this (--dry-run)
    [ "$dry" = 1 ] || "$@"
}
