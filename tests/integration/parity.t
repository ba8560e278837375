#!/bin/bash
# Execution parity: every case of parity.cases gives the same stdout, stderr,
# exit status and files under `sbxsh -c` (in the sandbox) as under `bash -c`
# on the host. Runs on each runtime that works here.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_PARITY_RUNTIMES:-runsc bwrap}

# Splits the case files into $SBX_TEST_TMP/cases/FILE-NNN.{name,sh}; a case
# named "@setup" is run on the host in the case directory before every run
# of each case of its file.
mkdir -p "$SBX_TEST_TMP/cases"
for cases in "$(dirname "$0")"/parity.cases "$(dirname "$0")"/parity-mixed.cases; do
    awk -v dir="$SBX_TEST_TMP/cases" -v file="$(basename "$cases" .cases)" '
        /^#### / { n++; f = sprintf("%s/%s-%03d", dir, file, n); print substr($0, 6) > (f ".name"); next }
        n { print > (f ".sh") }
    ' "$cases"
done

run_case() { # DIR SCRIPT OUTPREFIX ref|sbxsh
    local dir=$1 script=$2 out=$3
    if [ "$dir" = "$CODE" ]; then
        # the code directory itself stays (the session holds it); its contents go
        find "$dir" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
    else
        rm -rf "$dir"; mkdir -p "$dir"
    fi
    if [ -n "$setup" ]; then
        (cd "$dir" && REMOTE=$GITBASE/case.git GITROOT=$GITROOT bash -e -c "$setup") \
            >/dev/null 2>&1 || echo "setup failed" >"$out.setup"
    fi
    if [ "$4" = ref ]; then
        # what `sbxsh -c` must reproduce: the host's bash with the sandbox's
        # environment and sbxsh's name as $0
        carried_env
        (cd "$dir" && timeout 60 env -i PATH="$SANDBOX_PATH" HOME="$HOME" "${CARRIED[@]}" \
            bash -c 'exec -a sbxsh bash -c "$1"' _ "$script" </dev/null >"$out.out" 2>"$out.err"
         echo $? >"$out.rc") 2>/dev/null # not bash's "Terminated" job notice
    else
        (cd "$dir" && timeout 60 bash -c 'exec -a sbxsh "$0" -c "$1"' "$SBXSH" "$script" \
            </dev/null >"$out.out" 2>"$out.err"; echo $? >"$out.rc") 2>/dev/null
    fi
    # git objects hold commit times: the mixed cases compare git through output
    if [ -n "$setup" ]; then
        tree_listing "$dir" ./.git >"$out.tree"
    else
        tree_listing "$dir" >"$out.tree"
    fi
}

have_daemon=
start_git_daemon && have_daemon=1

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "parity on $rt: $why"
        continue
    fi
    setup_session "parity-$rt-$$" "$rt"
    if ! out=$(cd "$CODE" && "$SBXSH" -c 'echo ready' 2>&1) || [ "$out" != ready ]; then
        tap_result 1 "parity on $rt: the sandbox starts"
        diag "$out"
        end_session
        continue
    fi
    printf '[user]\n\tname = Parity\n\temail = parity@example.com\n[init]\n\tdefaultBranch = main\n' \
        >"$HOME/.gitconfig"
    for f in "$SBX_TEST_TMP"/cases/*.name; do
        id=${f%.name}
        [ "$(cat "$f")" = @setup ] && continue
        setup=
        first=$(printf '%s\n' "${id%-*}"-*.name | head -1)
        [ "$(cat "$first")" = @setup ] && setup=$(cat "${first%.name}.sh")
        if [ -n "$setup" ] && [ -z "$have_daemon" ]; then
            skip "$rt: $(cat "$f"): git daemon could not start on loopback"
            continue
        fi
        name="$rt: $(cat "$f")"
        script=$(cat "$id.sh" 2>/dev/null)
        # Host git runs only in a code directory's own repository (router/README.md,
        # "Where host git runs"): the mixed cases' repository is the code directory.
        if [ -n "$setup" ]; then dir=$CODE; else dir=$CODE/case; fi
        # bash's side is the same on every runtime (the same directory, HOME and
        # environment): made once, on the first, unless a setup (git and its remote, whose
        # state the runs change) comes before it
        if [ -n "$setup" ] || [ ! -e "$id.bash.rc" ]; then
            run_case "$dir" "$script" "$id.bash" ref
        fi
        run_case "$dir" "$script" "$id.sbx" sbxsh
        bad=
        for k in out err rc tree; do
            cmp -s "$id.bash.$k" "$id.sbx.$k" || bad="$bad $k"
        done
        if [ -z "$bad" ]; then
            tap_result 0 "$name"
        else
            tap_result 1 "$name (differs in:$bad)"
            for k in $bad; do
                diag "--- $k: bash vs sbxsh"
                diag "$(diff "$id.bash.$k" "$id.sbx.$k" | head -20)"
            done
        fi
    done
    end_session
done
stop_git_daemon
done_testing
