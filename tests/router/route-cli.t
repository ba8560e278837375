#!/bin/bash
# sbxsh --route and --route --json: one line per part, valid JSON, nothing
# executed, syntax errors as bash reports them.
. "$(dirname "$0")/../lib/tap.sh"

[ -x "$SBXSH" ] || bail_out "sbxsh not built ($SBXSH)"
command -v jq >/dev/null || skip_all "jq not installed (make deps)"

export HOME=$SBX_TEST_TMP/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git init -q "$SBX_TEST_TMP/code" && cd "$SBX_TEST_TMP/code" && mkdir sub
CODE=$(pwd -P)
unset CDPATH

out=$("$SBXSH" --route -c 'cd sub && git push origin HEAD; make test'); st=$?
is "$st" 0 "--route exits 0"
is "$out" "$(printf 'host\tcd: within the code directories\tcd sub\nhost\tgit push: network command, options allowed\tgit push origin HEAD\nsandbox\tmake is not a host command\tmake test')" \
    "one host<TAB>reason<TAB>text line per part"

out=$("$SBXSH" --route -c 'git fetch --upload-pa=/tmp/x origin')
like "$out" "^sandbox	git fetch: --upload-pa abbreviates an option that runs a program	" \
    "the reason names the abbreviated option"

out=$("$SBXSH" --route -c $'echo "a\tb\nc\\\\d"')
is "$out" "$(printf 'host\techo: builtin glue\t%s' 'echo "a\tb\nc\\\\d"')" \
    "tabs, newlines and backslashes of the text are escaped"

json=$("$SBXSH" --route --json -c $'printf "%s\\n" x | grep -c x && ls\necho bg &')
jq -e . <<<"$json" >/dev/null; is $? 0 "--route --json is valid JSON"
is "$(jq -r '.code_dirs[0]' <<<"$json")" "$CODE" "code_dirs: the repository's top level"
is "$(jq -r '.cwd' <<<"$json")" "$CODE" "cwd"
is "$(jq -r '[.parts[].route] | join(",")' <<<"$json")" "host,sandbox,sandbox" "routes"
is "$(jq -c '[.parts[].join]' <<<"$json")" '["","&&","\n"]' "joins: none, &&, newline"
is "$(jq -r '.parts[2].background' <<<"$json")" "true" "background part"
is "$(jq -r '.parts[0].text' <<<"$json")" 'printf "%s\n" x | grep -c x' "text of a part"
is "$(jq -r '.parts[1].start, .parts[1].end' <<<"$json" | tr '\n' ' ')" "31 33 " "offsets"

"$SBXSH" --route -c 'echo hi > created; git push' >/dev/null
ok "--route executes nothing" test ! -e created

out=$("$SBXSH" --route -c 'if then' 2>&1); st=$?
is "$st" 2 "a syntax error exits 2"
like "$out" "syntax error near unexpected token" "and is reported as bash does"

out=$(AGENT_SANDBOX_CODE_DIRS=$CODE/sub "$SBXSH" --route -c 'git push')
like "$out" "^sandbox	git push: the directory is outside the code directories" \
    "AGENT_SANDBOX_CODE_DIRS decides the code directories"
out=$(cd sub && AGENT_SANDBOX_CODE_DIRS=$CODE/sub "$SBXSH" --route -c 'git push')
like "$out" "^sandbox	git push: not in a git repository" \
    "a code directory without its own .git: host git would look above it, so the sandbox's"
git init -q own
out=$(cd own && AGENT_SANDBOX_CODE_DIRS=$CODE/own "$SBXSH" --route -c 'git push')
like "$out" "^host	" "a code directory that is a repository's top level is fine"

# --route uses execution's configuration and context: what execution refuses, it refuses
# (it used to read AGENT_SANDBOX_* raw, print "host" and exit 0).
for bad in "AGENT_SANDBOX_SYNC_PATHS=rel/x" "AGENT_SANDBOX_SESSION=bad name!"; do
    route_err=$(env "$bad" "$SBXSH" --route -c 'echo hi' 2>&1 >/dev/null); route_st=$?
    exec_err=$(env "$bad" "$SBXSH" -c 'echo hi' 2>&1 >/dev/null); exec_st=$?
    is "$route_st:$exec_st" "125:125" "$bad: --route exits 125 as execution does"
    is "$route_err" "$exec_err" "$bad: ... with execution's message"
    like "$route_err" "^sbxsh: " "$bad: ... an sbxsh: message"
done
out=$("$SBXSH" --session 'a/b' --route -c 'echo hi' 2>&1); st=$?
is "$st" 125 "--route checks --session as execution does"

# A sandbox cd with a literal target: the plan follows it (at run time the sandbox's
# $PWD comes back and the host part is checked again from there).
out=$("$SBXSH" --route -c 'cd / && git push origin HEAD')
is "$(sed -n 2p <<<"$out")" "$(printf 'sandbox\tgit push: the directory is outside the code directories\tgit push origin HEAD')" \
    "cd / && git push: the push goes to the sandbox, as it does at run time"
out=$("$SBXSH" --route -c 'cd .. ; git push; cd '"$CODE"'/sub; git push')
is "$(cut -f1 <<<"$out" | tr '\n' ' ')" "sandbox sandbox host host " \
    "a sandbox cd out and a host cd back: the plan follows both"
out=$(HOME=$CODE/sub AGENT_SANDBOX_CODE_DIRS=$CODE AGENT_SANDBOX_STATE_DIR=$SBX_TEST_TMP/state "$SBXSH" --route -c 'cd /tmp; cd; git push')
like "$(sed -n 3p <<<"$out")" "^host	git push: network command" "a bare cd goes to HOME"
# A cd the plan cannot follow: a part that needs the cwd says so; one that does not, not.
out=$("$SBXSH" --route -c 'cd "$D" && git push; echo hi')
is "$(sed -n 2p <<<"$out")" "$(printf 'host\thost if the cwd is still inside the code directories, else sandbox (git push: network command, options allowed)\tgit push')" \
    "cd \"\$D\" && git push: host if the cwd is still inside the code directories, else sandbox"
is "$(sed -n 3p <<<"$out")" "$(printf 'host\techo: builtin glue\techo hi')" \
    "... while echo, host from anywhere, is plain host"
json=$("$SBXSH" --route --json -c 'cd - && git fetch')
is "$(jq -c '[.parts[].cwd_known]' <<<"$json")" "[true,false]" "--json: cwd_known is false for such a part"
out=$("$SBXSH" --route -c 'popd; git push')
like "$(sed -n 2p <<<"$out")" "^host	host if the cwd is still inside" "popd: the plan cannot follow it"

# sbxsh's own commands: the sbx beside the running sbxsh, on the host
out=$("$SBXSH" --route -c 'sbx status')
is "$out" "$(printf 'host\tsbx status: sbxsh'"'"'s own command, on the host\tsbx status')" \
    "sbx status: host, the one line --route prints for it"
out=$("$SBXSH" --route -c 'sbx release --force; sbx ls --json | jq .; sbx doctor; sbx exec --tty -- vi; sbx render-pool')
is "$(cut -f1 <<<"$out" | tr '\n' ' ')" "host host host host sandbox " \
    "sbx release --force, ls --json piped, doctor and exec are host; render-pool is not"
like "$(sed -n 4p <<<"$out")" "^host	sbx exec: not run; sbxsh says to type the command itself" \
    "sbx exec: host, running nothing"
# A password or token in a git URL: a host part that runs nothing and says why (in the
# sandbox the secret would be the sandbox's); the reason never repeats the secret.
out=$("$SBXSH" --route -c 'git pull https://u:t0ken@h/r')
like "$out" "^host	git pull: not run: a password or token in a URL .*credential helper" \
    "git pull https://u:t@h/r: host, not run, the reason says to use a credential helper"
unlike "$out" "	.*t0ken.*	" "...and the reason does not repeat the secret"
out=$(AGENT_SANDBOX_SESSION=mine "$SBXSH" --route -c 'sbx status --session mine; sbx release --session other')
is "$(cut -f1 <<<"$out" | tr '\n' ' ')" "host sandbox " "--session: only the shell's own session"
out=$("$SBXSH" --session mine --route -c 'sbx status --session mine')
like "$out" "^host	" "--session NAME of sbxsh names the session sbx may be given"
# a copy of sbxsh without sbx beside it: sbx stays a sandbox command, with the reason
mkdir -p "$SBX_TEST_TMP/alone" && cp "$SBXSH" "$SBX_TEST_TMP/alone/sbxsh"
out=$("$SBX_TEST_TMP/alone/sbxsh" --route -c 'sbx status')
is "$out" "$(printf 'sandbox\tsbx: no sbx is installed beside sbxsh (%s)\tsbx status' "$SBX_TEST_TMP/alone/sbx")" \
    "no sbx beside sbxsh: sandbox"
# an sbx first on PATH is not the one: sbxsh's directory decides
mkdir -p "$SBX_TEST_TMP/pathbin" && printf '#!/bin/sh\necho planted\n' > "$SBX_TEST_TMP/pathbin/sbx" &&
    chmod +x "$SBX_TEST_TMP/pathbin/sbx"
out=$(PATH=$SBX_TEST_TMP/pathbin:$PATH "$SBX_TEST_TMP/alone/sbxsh" --route -c 'sbx status')
like "$out" "^sandbox	sbx: no sbx is installed beside sbxsh" "an sbx on PATH is not used"
# a build of sbxsh inside the code directory: its sbx is the sandbox's to replace
mkdir -p "$CODE/bin" && cp "$SBXSH" "$CODE/bin/sbxsh" && cp "$SBX" "$CODE/bin/sbx"
out=$("$CODE/bin/sbxsh" --route -c 'sbx status')
like "$out" "^sandbox	sbx: the sbx beside sbxsh is inside the code directories" \
    "an sbx inside the code directories is not run on the host"
rm -rf "${CODE:?}/bin"

printf 'git fetch\nrm -rf x\n' > script.sh
out=$("$SBXSH" --route script.sh)
is "$(cut -f1 <<<"$out" | tr '\n' ' ')" "host sandbox " "a script file is routed too"

done_testing
