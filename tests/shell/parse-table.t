#!/usr/bin/env bash
# The parser against tests/shell/cases.txt: exit status and every stderr line
# as bash 5.2 prints them; then, when this machine's bash is 5.2, bash -n
# must accept or reject each case the same way.
. "$(dirname "$0")/../lib/tap.sh"

table=$(dirname "$0")/cases.txt
pc=${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/shell/parsecheck
[ -x "$pc" ] || bail_out "parsecheck not built: run make"

bash_ver=$(bash -c 'echo "${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}.${BASH_VERSINFO[2]}"' 2>/dev/null)
case $bash_ver in 5.2.*) with_bash=1 ;; *) with_bash=0 ;; esac

in=$SBX_TEST_TMP/in
name='' code='' opts='' nofinal='' status='' stderr='' bug='' state=none ncases=0

run_case() {
    local got_err got_rc exp_err='' line
    if [ -n "$nofinal" ]; then printf '%s' "${code%$'\n'}" >"$in"; else printf '%s' "$code" >"$in"; fi
    # shellcheck disable=SC2086 # the case's options, one word each
    got_err=$("$pc" $opts <"$in" 2>&1 >/dev/null)
    got_rc=$?
    while IFS= read -r line; do exp_err+="sbxsh: $line"$'\n'; done <<<"${stderr%$'\n'}"
    [ -n "$stderr" ] || exp_err=
    is "$got_rc:$got_err" "$status:${exp_err%$'\n'}" "$name"
    ncases=$((ncases + 1))
    [ "$with_bash" = 1 ] || return 0
    if [ -n "$bug" ] && [ "$bash_ver" = 5.2.15 ]; then
        skip "$name: bash $bash_ver accepts it (a [[ ]] bug fixed in 5.2.37)"
        return 0
    fi
    local berr brc baccept=0 oaccept=0
    # shellcheck disable=SC2086 # the case's options, one word each
    berr=$(LC_ALL=C.UTF-8 bash $opts -n <"$in" 2>&1 >/dev/null)
    brc=$?
    if [ "$brc" = 0 ] && ! grep -v 'warning:' <<<"$berr" | grep -q .; then baccept=1; fi
    [ "$got_rc" = 0 ] && oaccept=1
    is "$oaccept" "$baccept" "$name: accepted as by bash $bash_ver -n"
}

while IFS= read -r line || [ -n "$line" ]; do
    case $state:$line in
    *:'#### '*)
        [ "$state" = none ] || [ -z "$name" ] || bail_out "case '$name' has no ## status line"
        name=${line#'#### '} code='' opts='' nofinal='' status='' stderr='' bug='' state=code ;;
    code:'## options: '*) opts=${line#'## options: '} ;;
    code:'## no-final-newline') nofinal=1 ;;
    code:'## bash-5.2.15-accepts') bug=1 ;;
    code:'## status: '*) status=${line#'## status: '} state=after ;;
    code:*) code+=$line$'\n' ;;
    after:'## stderr:') state=stderr ;;
    stderr:'## end') state=after ;;
    stderr:*) stderr+=$line$'\n' ;;
    after:'') [ -z "$name" ] || run_case; name= ;;
    none:*|after:*) ;;
    esac
done <"$table"
[ -z "$name" ] || run_case
diag "$ncases cases (bash ${bash_ver:-absent})"
done_testing
