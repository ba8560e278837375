#!/bin/bash
# stdin mode (an agent keeps one sbxsh and writes commands to it) against bash
# reading the same script on its stdin: each case's stdout, stderr and status
# must be bash's. These are the places where the persistent shell's wrapper
# (cli/line.c) showed through, or where sbxsh hung or gave up: set -n,
# aliases that open a quote or a here-document, PWD unset or assigned, the
# wrapper's helpers in `declare -F` and `set`, PIPESTATUS, `cd -` with no
# OLDPWD, line numbers (the wrapper's lines counted as bash's), a DEBUG trap
# firing for the wrapper's commands, fd 10. Runs on each runtime that can
# start here.
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
    is "$(cat "$SBX_TEST_TMP/got.out"; echo '==stderr=='; cat "$SBX_TEST_TMP/got.err")" \
       "$(cat "$SBX_TEST_TMP/want.out"; echo '==stderr=='; cat "$SBX_TEST_TMP/want.err")" "$rt: $name"
    rm -rf "$d"
}

# check_agent NAME PART1 PART2: as check, but the script comes as an agent
# writes it: PART1, then (once its output shows "ready", a bounded wait) PART2,
# into a stdin that stays open between the two.
check_agent() {
    local name=$1 d i
    n=$((n + 1))
    d=$CODE/case$n
    printf '%s%s' "$2" "$3" >"$SBX_TEST_TMP/in"
    rm -rf "$d"; mkdir -p "$d/tmp"
    (cd "$d" && ref_stdin "$SBX_TEST_TMP/in" >"$SBX_TEST_TMP/want.out" 2>"$SBX_TEST_TMP/want.err"
     echo "status=$?" >>"$SBX_TEST_TMP/want.out")
    rm -rf "$d" "$SBX_TEST_TMP/fifo"; mkdir -p "$d/tmp"; mkfifo "$SBX_TEST_TMP/fifo"
    (cd "$d" && timeout 60 "$SBXSH" <"$SBX_TEST_TMP/fifo" >"$SBX_TEST_TMP/got.out" 2>"$SBX_TEST_TMP/got.err"
     echo "status=$?" >>"$SBX_TEST_TMP/got.out") &
    exec 7>"$SBX_TEST_TMP/fifo"
    printf '%s' "$2" >&7
    for ((i = 0; i < 300; i++)); do
        grep -q ready "$SBX_TEST_TMP/got.out" 2>/dev/null && break
        sleep 0.1
    done
    printf '%s' "$3" >&7
    exec 7>&-
    wait
    is "$(cat "$SBX_TEST_TMP/got.out"; echo '==stderr=='; cat "$SBX_TEST_TMP/got.err")" \
       "$(cat "$SBX_TEST_TMP/want.out"; echo '==stderr=='; cat "$SBX_TEST_TMP/want.err")" "$rt: $name"
    rm -rf "$d" "$SBX_TEST_TMP/fifo"
}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "stdin mode on $rt: $why"
        continue
    fi
    setup_session "stdin-$rt-$$" "$rt"
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
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
    # bash's line numbers: the wrapper's own lines are not counted
    check "line numbers after multi-line commands and comments" \
        $'# a comment\n\nif true; then\n  echo $LINENO\nfi\nfor i in 1; do\n  :\ndone\necho ${u?unset here}\n'
    check "line numbers after here-documents" \
        $'cat <<EOF\nbody $LINENO\nEOF\ncat <<-A <<B\n\ta\n\tA\nb\nB\necho $LINENO\nset -u\necho $nope\n'
    check "a function's lines when it is called chunks later" \
        $'f() {\n  echo "f: $LINENO"\n  caller\n  echo "${BASH_LINENO[*]}"\n  echo ${u?in f}\n}\n\necho between\nf\n'
    check "the line of a syntax error after other commands" \
        $'echo one\ncat <<E\nx\nE\n\n# c\nif then\n'
    check "errors bash names by the last line it read" \
        $'foo$x() {\n  echo hi\n}\n{ cat; } < not_exist.txt\nfor - in a; do\n  :\ndone\necho end\n'
    # the wrapper's commands are not the user's: a DEBUG trap fires for the user's only
    check "a DEBUG trap fires once per command" \
        $'n=0\ntrap \'n=$((n+1)); echo "D: $BASH_COMMAND"\' DEBUG\necho one\nfalse | true\necho "${PIPESTATUS[*]} $n"\n(exit 3)\necho "$? $n $LINENO"\ntrap - DEBUG\necho "$n $_"\n'
    check "a DEBUG trap set by a function defined earlier" \
        $'on() {\n  trap \'echo "D: $BASH_COMMAND"\' DEBUG\n}\non\necho a\ntrue | false\necho "$? ${PIPESTATUS[*]}"\n'
    check "functions named builtin and return do not take the wrapper's calls" \
        $'builtin echo b\nbuiltin() {\n  echo builtin-redef "$@"\n}\nreturn() { echo ret; }\nbuiltin echo c\nfalse\necho $?\n'
    check_agent "line numbers when an agent writes commands one at a time" \
        $'f() {\n  echo "${u?in f}"\n}\n# ready?\necho ready\n' $'\n(f)\ncat <<E\n$LINENO\nE\necho ${v?top}\n'
    # set -v: bash echoes the input's lines as it reads them, and only those
    check "set -v echoes the input's lines, not the wrapper's" \
        $'set -o verbose\nx=foo # c\n\nif true; then\n  echo $x\nfi\nset +v\necho quiet\n'
    # an fd the user opens stays open (bash's save of fd 0 once took fd 10)
    check "exec 10>f is still open on the next line" \
        $'exec 10>f\necho one >&10\necho two >&10\ncat f\nexec 10>&-\nls /proc/$$/fd | grep -cx 10\n'
    # a file the host writes between two commands (an agent's own edit tool) is there for the
    # second: the persistent shell's chunk is preceded by a sync, as a one-shot command is
    rm -f "$SBX_TEST_TMP/fifo" "$CODE/between.txt"; mkfifo "$SBX_TEST_TMP/fifo"
    (cd "$CODE" && timeout 60 "$SBXSH" <"$SBX_TEST_TMP/fifo" >"$SBX_TEST_TMP/got.out" 2>&1) &
    exec 7>"$SBX_TEST_TMP/fifo"
    printf 'x=1; echo "ready $x"\n' >&7
    for ((i = 0; i < 300; i++)); do
        grep -q 'ready 1' "$SBX_TEST_TMP/got.out" 2>/dev/null && break
        sleep 0.1
    done
    echo written-on-the-host >"$CODE/between.txt"
    printf 'cat between.txt\n' >&7
    exec 7>&-
    wait
    is "$(cat "$SBX_TEST_TMP/got.out")" $'ready 1\nwritten-on-the-host' \
        "$rt: a file the host wrote between two commands is seen by the second"
    rm -f "$SBX_TEST_TMP/fifo" "$CODE/between.txt"
    end_session
done

done_testing
