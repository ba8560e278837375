#!/bin/bash
# stdin mode (an agent keeps one sbxsh and writes commands to it) against bash
# reading the same script on its stdin: each case's stdout, stderr and status
# must be bash's. These are the places where the persistent shell's wrapper
# (cli/line.c) showed through, or where sbxsh hung or gave up: set -n,
# aliases that open a quote or a here-document, PWD unset or assigned, the
# wrapper's helpers in `declare -F` and `set`, PIPESTATUS, `cd -` with no
# OLDPWD. Runs on each runtime that can start here.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}

# ref_stdin FILE: what `sbxsh < FILE` must reproduce: the host's bash with the
# sandbox's environment, named as sbxsh was (so its messages say the same name).
ref_stdin() {
    carried_env
    env -i PATH="$SANDBOX_PATH" HOME="$HOME" "${CARRIED[@]}" \
        bash -c 'exec -a "$0" bash' "$SBXSH" <"$1"
}

# check NAME SCRIPT: runs SCRIPT both ways in a fresh directory of the code
# directory and compares. A hang is bounded (timeout: status 124).
n=0
check() {
    local name=$1 script=$2 d
    n=$((n + 1))
    d=$CODE/case$n
    printf '%s' "$script" >"$SBX_TEST_TMP/in"
    rm -rf "$d"; mkdir -p "$d/tmp"
    (cd "$d" && ref_stdin "$SBX_TEST_TMP/in" >"$SBX_TEST_TMP/want.out" 2>"$SBX_TEST_TMP/want.err"
     echo "status=$?" >>"$SBX_TEST_TMP/want.out")
    rm -rf "$d"; mkdir -p "$d/tmp"
    (cd "$d" && timeout 20 "$SBXSH" <"$SBX_TEST_TMP/in" >"$SBX_TEST_TMP/got.out" 2>"$SBX_TEST_TMP/got.err"
     echo "status=$?" >>"$SBX_TEST_TMP/got.out")
    is "$(cat "$SBX_TEST_TMP/got.out"; echo ==stderr==; cat "$SBX_TEST_TMP/got.err")" \
       "$(cat "$SBX_TEST_TMP/want.out"; echo ==stderr==; cat "$SBX_TEST_TMP/want.err")" "$rt: $name"
    rm -rf "$d"
}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "stdin mode on $rt: $why"
        continue
    fi
    setup_session "stdin-$rt-$$" "$rt"
    rm -rf "$CODE"/* "$CODE"/.[!.]* 2>/dev/null
    git -C "$CODE" init -q
    cd "$CODE" || bail_out "no code dir"

    # set -n: bash reads the rest and runs nothing (sbxsh waited for a report for ever)
    check "set -n: nothing more runs, status 0" $'echo before\nset -n\necho not-run\nfalse\n'
    check "set -o noexec after a failure" $'false\nset -o noexec\necho not-run\n'
    check "set -n, then a syntax error is still reported" $'set -n\necho ok\nif then\n'
    # aliases: bash expands them as it parses, so where a command ends is bash's to say
    check "an alias that opens a quote takes the rest of the input" \
        $'shopt -s expand_aliases\nalias q="echo \\"unclosed"\nq\necho after\n'
    check "an alias that opens a here-document" \
        $'shopt -s expand_aliases\nalias h="cat <<E"\nh\nbody\nE\necho after\n'
    # PWD is the user's variable; the cwd comes from bash itself
    check "unset PWD, then commands and cd" $'unset PWD\necho x\nmkdir -p sub\ncd sub\npwd\necho $?\n'
    check "PWD assigned, then commands and cd" $'PWD=x\necho "$PWD"\nmkdir -p sub\ncd sub\necho "$PWD"\npwd\n'
    # the wrapper's helpers never show
    check "declare -F lists only the user's functions" $'f() { :; }\ndeclare -F\ndeclare -F\n'
    check "set and typeset -f show no helper" \
        $'set | grep -c __sbx\ntypeset -f | grep -c __sbx\ncompgen -A function | grep -c __sbx\ncompgen -v | grep -c __sbx\necho end\n'
    # PIPESTATUS outlives the command, as in bash
    check "PIPESTATUS on the next line" \
        $'false | true\necho ${PIPESTATUS[@]}\ntrue | (exit 3) | true\necho $? ${PIPESTATUS[@]}\n'
    check "PIPESTATUS with pipefail and !" \
        $'set -o pipefail\nfalse | true\necho $? ${PIPESTATUS[@]}\n! true | false\necho $? ${PIPESTATUS[@]}\n'
    check "PIPESTATUS under set -e" $'set -e\n! false | true\necho $? ${PIPESTATUS[@]}\ntrue | true\necho ${PIPESTATUS[@]}\n'
    check "an ERR trap fires for the user's pipeline only" \
        $'trap "echo ERR" ERR\nfalse | false\necho ${PIPESTATUS[@]}\nset -e\nfalse | false && echo no\necho ${PIPESTATUS[@]} $?\n'
    # a fresh shell has no OLDPWD
    check "cd - with no OLDPWD fails as in bash" $'cd -\necho $?\necho "[$OLDPWD]"\n'
    end_session
done

done_testing
