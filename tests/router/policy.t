#!/bin/bash
# The host-command policy (router/policy.c, sbxsh-policy(5)) end to end: a stub `gh` on the
# host records the argv and environment it gets; every accepted line runs it with exactly
# the words bash would give it, and nothing else of the environment than the base and the
# rule's `env`; every refused line is routed to the sandbox and the stub never runs. Then the
# trust rules for the policy file (inside a code directory, group-writable, in a writable
# directory, a link into the code directory), `sbx policy check|show`, and a pattern with
# catastrophic backtracking stopped by pcre2's limit.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/user.sh"

RUN=${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/router/route-run
top=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$RUN" ] || bail_out "route-run not built ($RUN)"

umask 022
export HOME=$SBX_TEST_TMP/home GIT_CONFIG_NOSYSTEM=1 XDG_CONFIG_HOME=
unset XDG_CONFIG_HOME AGENT_SANDBOX_POLICY AGENT_SANDBOX_SESSION
mkdir -p "$HOME"
chmod 755 "$SBX_TEST_TMP"
git init -q "$SBX_TEST_TMP/my code" && cd "$SBX_TEST_TMP/my code" && mkdir -p bin
CODE=$(pwd -P)
export AGENT_SANDBOX_CODE_DIRS=$CODE

# the host's gh: its argv NUL-separated, then its environment, into $REC
HOSTBIN=$SBX_TEST_TMP/host-bin
REC=$SBX_TEST_TMP/gh.rec
mkdir -p "$HOSTBIN"
cat > "$HOSTBIN/gh" <<EOF
#!/bin/bash
{ printf '%s\0' "\$@"; } > "$REC.argv"
env > "$REC.env"
pwd -P > "$REC.pwd"
# pr view 99: what a hostile server could make it print: the clipboard (OSC 52), a colour
[ "\${3:-}" = 99 ] && printf 'a\033]52;c;R0lUUFdO\007b\033[31mred\033[0m\n'
echo "gh ran"
EOF
chmod 755 "$HOSTBIN/gh"
# ... and one the sandbox planted in the code directory, first on PATH: never the one run
printf '#!/bin/sh\necho planted gh\n' > bin/gh && chmod 755 bin/gh
export PATH="$CODE/bin:$HOSTBIN:$PATH"

POL=$SBX_TEST_TMP/etc/policy
mkdir -p "$(dirname "$POL")"
cat > "$POL" <<'EOF'
# read a pull request
rule gh-pr-view
    program gh
    subcommand pr view
    flag --web
    option --repo ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$
    option --json*3 [a-z]+(,[a-z]+)*
    operand [0-9]{1,6}
    env GH_TOKEN

# open one
rule gh-pr-create
    program gh
    subcommand pr create
    option --title [^\n]{1,200}
    option --body (?s).{0,4000}
    option --label*4 [a-z -]+
    flag --draft
EOF
chmod 644 "$POL"

# what bash makes of a line's words: the argv the host program must get, NUL-separated
bash_words() { eval "set -- $1"; shift; printf '%s\0' "$@"; }

export GH_TOKEN=tok-123 SECRET_TOKEN=must-not-pass
accepted=(
    'gh pr view 12'
    'gh pr view'
    'gh pr view --web 12'
    "gh pr view 12 --repo 'acme/app' --json title,body"
    'gh pr view --repo=acme/app 7'
    'gh pr view -- 12'
    'gh pr view --json a --json b --json c'
    'gh pr create --title "Fix the login form" --body "Line one
line two;  \$(not expanded) *" --draft'
    "gh pr create --label 'good first issue' --label bug --title 'it'\"'\"'s fixed'"
    'gh pr create --body=--not-an-option'
)
for line in "${accepted[@]}"; do
    rm -f "$REC".*
    out=$("$RUN" --policy "$POL" "$line" 2>&1); st=$?
    shown=${line//$'\n'/\\n}
    is "$st:$out" "0:gh ran" "host: $shown"
    ok "...its argv is the words as checked" cmp -s "$REC.argv" <(bash_words "$line") ||
        diag "got: $(tr '\0' '|' < "$REC.argv" 2>/dev/null)" "want: $(bash_words "$line" | tr '\0' '|')"
done
rm -f "$REC".*
"$RUN" --policy "$POL" 'gh pr view 12' >/dev/null 2>&1
like "$(cat "$REC.env")" "GH_TOKEN=tok-123" "the rule's env: GH_TOKEN is kept"
unlike "$(cat "$REC.env")" "SECRET_TOKEN" "nothing else of sbxsh's environment passes"
unlike "$(grep '^PATH=' "$REC.env")" "my code" "PATH without the code directory"
is "$(cat "$REC.pwd")" "$CODE" "it runs in the cwd, held inside the code directory"
rm -f "$REC".*
out=$("$RUN" --policy "$POL" 'gh pr create --title x' 2>&1)
is "$(grep -c GH_TOKEN "$REC.env")" 0 "a rule without env gets no GH_TOKEN"

refused=(
    'gh pr view 12abc'
    'gh pr view 12 13'
    'gh pr view --exec=sh 12'
    'gh pr view --we 12'
    'gh pr view -- --web'
    'gh pr view "12
"'
    'gh pr view --repo --web'
    'gh pr view --json a --json b --json c --json d'
    'gh pr merge 12'
    'gh auth token'
    'GH_TOKEN=x gh pr view 12'
    'gh pr view $N'
    'gh pr view 12 >out.txt'
    "gh pr create --title 'a
b'"
)
for line in "${refused[@]}"; do
    rm -f "$REC".*
    out=$("$RUN" --policy "$POL" "$line" 2>&1); st=$?
    shown=${line//$'\n'/\\n}
    is "$st" 125 "sandbox: $shown"
    like "$out" "^route-run: sandbox: " "...routed to the sandbox, with the reason"
    ok "...and the host's gh did not run" test ! -e "$REC.argv"
done

# ---- sbxsh itself: --route names the rule, file and line; a host-only line runs it -------
SBXSH_=$SBXSH_BIN/sbxsh
out=$(AGENT_SANDBOX_POLICY=$POL "$SBXSH_" --route -c 'gh pr view 12' 2>&1)
is "$out" "host	gh: policy rule gh-pr-view ($POL:2)	gh pr view 12" "sbxsh --route: the rule, file and line"
out=$(AGENT_SANDBOX_POLICY=$POL "$SBXSH_" --route -c 'gh pr view --web=1' 2>&1)
like "$out" "^sandbox	gh: no policy rule allows it; nearest gh-pr-view \($POL:2\): word 4 '--web=1' --web takes no value" \
    "a near miss: which word failed which rule"
rm -f "$REC".*
out=$(AGENT_SANDBOX_POLICY=$POL "$SBXSH_" -c 'gh pr view 12 | tr a-z A-Z' 2>&1); st=$?
is "$st:$out" "0:GH RAN" "sbxsh -c: the policy command runs on the host, piped into a filter"
is "$(tr '\0' ' ' < "$REC.argv")" "pr view 12 " "...with its words"

# ... and a mixed line in a real sandbox: the refused command runs there (the sandbox's PATH
# starts with the code directory's bin/, where its own gh is), the accepted one on the host
runtime=
if command -v bwrap >/dev/null && bwrap --ro-bind / / --unshare-user --unshare-pid true 2>/dev/null; then
    runtime=bwrap
elif command -v runsc >/dev/null; then
    runtime=runsc
fi
if [ -n "$runtime" ]; then
    export XDG_RUNTIME_DIR=$SBX_TEST_TMP/run AGENT_SANDBOX_STATE_DIR=$SBX_TEST_TMP/state
    export AGENT_SANDBOX_SESSION=policy-t AGENT_SANDBOX_LOCAL_RUNTIME=$runtime
    mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
    trap '"$SBX_" release --session policy-t >/dev/null 2>&1; test_user_del; tap_cleanup' EXIT
    SBX_=$SBXSH_BIN/sbx
    rm -f "$REC".*
    out=$(AGENT_SANDBOX_POLICY=$POL "$SBXSH_" -c 'gh pr view 12x; gh pr view 12' 2>&1); st=$?
    is "$st:$out" "0:planted gh
gh ran" "a mixed line ($runtime): the refused gh ran in the sandbox (its own gh), the accepted one on the host"
    is "$(tr '\0' ' ' < "$REC.argv")" "pr view 12 " "...and the host's gh got only the accepted words"
    "$SBX_" release --session policy-t >/dev/null 2>&1
    unset AGENT_SANDBOX_SESSION AGENT_SANDBOX_LOCAL_RUNTIME
else
    skip "no sandbox runtime here (bubblewrap with namespaces, or runsc): the mixed line is not run"
    skip "(same)"
fi

# at a terminal, a policy command's output passes the terminal filter: the clipboard
# sequence is dropped, the colour kept (tests/local/ptyrun.py runs sbxsh on a pty)
if command -v python3 >/dev/null && python3 -c 'import pty' 2>/dev/null; then
    AGENT_SANDBOX_POLICY=$POL timeout 60 python3 "$top/tests/local/ptyrun.py" -- "$SBXSH_" -c 'gh pr view 99' \
        > "$SBX_TEST_TMP/pty.raw" 2>&1
    hex=$(od -An -v -tx1 "$SBX_TEST_TMP/pty.raw" | tr -d ' \n')
    ok "on a terminal: the output reached it" grep -q "gh ran" "$SBX_TEST_TMP/pty.raw"
    ok "...without the OSC 52 (clipboard) sequence gh printed" test "${hex/1b5d3532/}" = "$hex"
    ok "...with its SGR colour" test "${hex/1b5b33316d/}" != "$hex"
else
    skip "python3 with pty is not installed: the terminal filter is not checked"
    skip "(same)"
    skip "(same)"
fi

# the person's default file: $XDG_CONFIG_HOME/sbxsh/policy, else ~/.config/sbxsh/policy
mkdir -p "$HOME/.config/sbxsh" && cp "$POL" "$HOME/.config/sbxsh/policy"
out=$("$SBXSH_" --route -c 'gh pr view 12' 2>&1)
is "$out" "host	gh: policy rule gh-pr-view (~/.config/sbxsh/policy:2)	gh pr view 12" \
    "the person's ~/.config/sbxsh/policy is read when AGENT_SANDBOX_POLICY is unset"
out=$(AGENT_SANDBOX_POLICY='' "$SBXSH_" --route -c 'gh pr view 12' 2>&1)
like "$out" "^sandbox	gh is not a host command" "AGENT_SANDBOX_POLICY= (empty): no policy file"
rm -r "$HOME/.config/sbxsh"

# ---- trust: a file the sandbox or another user could write is refused whole ---------------
refused_file() { # FILE WHY-PATTERN NAME
    local out
    out=$(AGENT_SANDBOX_POLICY=$1 "$SBXSH_" --route -c 'gh pr view 12' 2>&1)
    like "$out" "sbxsh: warning: .*policy not used: $2" "$3: refused, saying why"
    like "$out" "sandbox	gh is not a host command" "...and its rules are not used"
}
cp "$POL" "$CODE/policy"
refused_file "$CODE/policy" "it is $CODE/policy, inside the code directories" "a policy inside a code directory"
cp -p "$POL" "$SBX_TEST_TMP/gw" && chmod 664 "$SBX_TEST_TMP/gw"
refused_file "$SBX_TEST_TMP/gw" "writable by its group or others" "a group-writable policy"
cp -p "$POL" "$SBX_TEST_TMP/ow" && chmod 646 "$SBX_TEST_TMP/ow"
refused_file "$SBX_TEST_TMP/ow" "writable by its group or others" "an other-writable policy"
mkdir -p "$SBX_TEST_TMP/gwdir" && cp -p "$POL" "$SBX_TEST_TMP/gwdir/policy" && chmod 775 "$SBX_TEST_TMP/gwdir"
refused_file "$SBX_TEST_TMP/gwdir/policy" "its directory $SBX_TEST_TMP/gwdir is writable" "a policy in a group-writable directory"
ln -s "$CODE/policy" "$SBX_TEST_TMP/link-in"
refused_file "$SBX_TEST_TMP/link-in" "it is $CODE/policy, inside the code directories" "a symlink to a policy inside a code directory"
ln -s "$SBX_TEST_TMP/gw" "$SBX_TEST_TMP/link-gw"
refused_file "$SBX_TEST_TMP/link-gw" "writable by its group or others" "a symlink to a group-writable policy"
ln -s "$POL" "$CODE/link-out"
refused_file "$CODE/link-out" "it is named through $CODE/link-out, inside the code directories" \
    "a symlink inside a code directory to a good policy (the sandbox can retarget it)"
refused_file "$SBX_TEST_TMP/no-such-policy" "No such file" "AGENT_SANDBOX_POLICY naming a missing file"
mkdir -p "$SBX_TEST_TMP/pdir"
refused_file "$SBX_TEST_TMP/pdir" "not a regular file" "a directory"

# ---- as an ordinary user: its own file is used; root does not use a file that user owns ----
if test_user_add pol "$HOSTBIN/gh" "$POL"; then
    trap '"$SBXSH_BIN/sbx" release --session policy-t >/dev/null 2>&1; test_user_del; tap_cleanup' EXIT
    out=$(as_test_user "mkdir -p .config/sbxsh && cp '$POL' .config/sbxsh/policy && chmod 600 .config/sbxsh/policy && mkdir -p 'odd dir' && cd 'odd dir' && PATH='$HOSTBIN':\$PATH '$SBXSH_' --route -c 'gh pr view 12'" 2>&1)
    is "$out" "host	gh: policy rule gh-pr-view (~/.config/sbxsh/policy:2)	gh pr view 12" \
        "an ordinary user's own ~/.config/sbxsh/policy (mode 0600) is used"
    refused_file "$TEST_HOME/.config/sbxsh/policy" "owned by another user" "root given a file another user owns"
else
    skip "no test user: $TEST_USER_WHY"
    skip "(same)"
    skip "(same)"
fi

# ---- sbx policy check | show -------------------------------------------------------------
SBX_=$SBXSH_BIN/sbx
cat > "$SBX_TEST_TMP/bad" <<'EOF'
rule ok-one
    program gh
    subcommand pr view
    operand [0-9]+
rule broken
    program gh
    subcommand pr list
    option --limit [0-9
rule calls-out
    program gh
    operand (?C1)x
rule shadowed
    program gh
    subcommand pr view
    operand [0-9]+
rule runs-programs
    program gh
    subcommand repo view
    option --exec .*
rule missing
    program no-such-program-here
rule planted
    program glab-planted
    frobnicate yes
rule env-path
    program gh
    env PATH
rule shell
    program bash
EOF
printf '#!/bin/sh\n' > "$CODE/bin/glab-planted"; chmod 755 "$CODE/bin/glab-planted"
chmod 644 "$SBX_TEST_TMP/bad"
out=$("$SBX_" policy check "$SBX_TEST_TMP/bad" 2>&1); st=$?
is "$st" 1 "sbx policy check: exit 1 on errors"
like "$out" "bad:8: rule broken: pattern \[0-9 does not compile: missing terminating \]" "...a pattern that does not compile, with its line"
like "$out" "bad:11: rule calls-out: pattern \(\?C1\)x uses a callout" "...a callout"
like "$out" "bad:12: rule shadowed: never used: rule ok-one \(.*bad:1\)" "...a rule an earlier one shadows"
like "$out" "bad:19: rule runs-programs: --exec: an option that runs a program" "...an option that runs programs"
like "$out" "bad:21: rule missing: program no-such-program-here not found on the host PATH" "...a program not found"
like "$out" "bad:24: frobnicate: not a keyword" "...a syntax error"
like "$out" "bad:27: env PATH: sbxsh sets it" "...a rule that would keep the host's whole PATH"
like "$out" "bad:29: rule shell: program bash runs the programs or code its words name" "...a program that runs code"
like "$out" "6 errors?$|[0-9]+ errors$" "...and a count"
out=$(AGENT_SANDBOX_POLICY=$SBX_TEST_TMP/bad "$SBXSH_" --route -c 'gh pr list --limit 5' 2>&1)
like "$out" "sbxsh: warning: .*bad:8: rule broken: pattern \[0-9 does not compile" \
    "sbxsh warns of a pattern that does not compile when it loads the policy"
like "$out" "sandbox	gh: no policy rule allows it; nearest broken .*does not compile" \
    "...and the rule accepts nothing there: the command stays in the sandbox"
out=$("$SBX_" policy check "$POL" 2>&1); st=$?
is "$st:$out" "0:2 rules, 0 errors" "sbx policy check: a good file"
out=$(AGENT_SANDBOX_POLICY=$POL "$SBX_" policy show 2>&1); st=$?
is "$st" 0 "sbx policy show"
like "$out" "rule builtin-git-push" "...the built-in git rules, in the same format"
like "$out" "option --push-option" "...with their options"
like "$out" "# $POL:2
rule gh-pr-view
    program gh    # $HOSTBIN/gh" "...then each rule, its file and line, and the program it runs (never the planted one)"
out=$(AGENT_SANDBOX_POLICY=$POL "$SBXSH_" -c 'sbx policy check' 2>&1); st=$?
is "$st:$out" "0:2 rules, 0 errors" "sbx policy check typed to sbxsh runs on the host"
# the example in doc/, with stand-ins for its programs on PATH: it checks clean
for p in gh glab kubectl curl; do printf '#!/bin/sh\n' > "$HOSTBIN/$p"; chmod 755 "$HOSTBIN/$p"; done
out=$("$SBX_" policy check "$top/doc/policy.example" 2>&1); st=$?
is "$st:$out" "0:8 rules, 0 errors" "doc/policy.example passes sbx policy check"
out=$(AGENT_SANDBOX_POLICY=$top/doc/policy.example "$SBXSH_" --route -c \
      'curl -sS https://api.internal.example/v1/status; curl -sS https://api.internal.example@evil.example/v1/status; kubectl get pods -n prod' 2>&1)
is "$(cut -f1 <<<"$out" | tr '\n' ' ')" "host sandbox sandbox " "...its curl rule pins the host, its kubectl rule the namespace"
out=$("$SBX_" policy frob 2>&1); st=$?
is "$st" 2 "sbx policy with an unknown word: usage, status 2"

# ---- pcre2's limits: catastrophic backtracking goes to the sandbox, with a warning ---------
cat > "$SBX_TEST_TMP/slow" <<'EOF'
rule slow
    program gh
    subcommand api
    operand (a|aa)+$
EOF
chmod 644 "$SBX_TEST_TMP/slow"
out=$(AGENT_SANDBOX_POLICY=$SBX_TEST_TMP/slow "$SBXSH_" --route -c "gh api $(printf 'a%.0s' {1..90})!" 2>&1)
like "$out" "sbxsh: warning: .*pattern \(a\|aa\)\+\\$ hit pcre2's match limit" "a catastrophic pattern stops at the match limit, with a warning"
like "$out" "sandbox	gh: no policy rule" "...and the command stays in the sandbox"
out=$(AGENT_SANDBOX_POLICY=$SBX_TEST_TMP/slow "$SBXSH_" --route -c "gh api aaaa" 2>&1)
like "$out" "^host	gh: policy rule slow" "...while a short word it matches is accepted"

done_testing
