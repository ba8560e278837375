#!/bin/bash
# sbx typed to sbxsh, through the host runner (route-run --sbx PATH --session NAME): the
# program given (never one on PATH), the words as typed, the shell's own session and code
# directories in its environment whatever the caller's says, run in / with a PATH cut of
# the code directories, its status and pipes as bash's; `sbx exec` runs nothing.
. "$(dirname "$0")/../lib/tap.sh"

RUN=${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/router/route-run
[ -x "$RUN" ] || bail_out "route-run not built ($RUN)"

export HOME=$SBX_TEST_TMP/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git init -q "$SBX_TEST_TMP/code" && cd "$SBX_TEST_TMP/code" && mkdir -p sub bin
CODE=$(pwd -P)
export AGENT_SANDBOX_CODE_DIRS=$CODE

# a fake sbx outside the code directory: what it was given, where it runs
mkdir -p "$SBX_TEST_TMP/host-bin"
FAKE=$SBX_TEST_TMP/host-bin/sbx
cat > "$FAKE" <<'EOF'
#!/bin/bash
printf 'argv:'; printf ' <%s>' "$@"; echo
echo "session=$AGENT_SANDBOX_SESSION"
echo "code_dirs=$AGENT_SANDBOX_CODE_DIRS"
echo "pwd=$PWD real=$(pwd -P)"
echo "path=$PATH"
[ -n "$FAKE_MARK" ] && : > "$FAKE_MARK"
exit "${FAKE_STATUS:-0}"
EOF
chmod +x "$FAKE"
# ... and one first on PATH, which must never run
printf '#!/bin/sh\necho planted-on-path\n' > "$SBX_TEST_TMP/host-bin-2-sbx"
mkdir -p "$SBX_TEST_TMP/path-bin" && mv "$SBX_TEST_TMP/host-bin-2-sbx" "$SBX_TEST_TMP/path-bin/sbx"
chmod +x "$SBX_TEST_TMP/path-bin/sbx"

run() { "$RUN" --sbx "$FAKE" --session mine "$@"; }

out=$(cd sub && AGENT_SANDBOX_SESSION=someone-else PATH="$SBX_TEST_TMP/path-bin:$CODE/bin:$PATH" \
      run 'sbx status --json' 2>&1); st=$?
is "$st" 0 "sbx status --json runs on the host"
is "$(sed -n 1p <<<"$out")" "argv: <status> <--json>" "...with the words as typed"
is "$(sed -n 2p <<<"$out")" "session=mine" "...about the shell's session, not the caller's AGENT_SANDBOX_SESSION"
is "$(sed -n 3p <<<"$out")" "code_dirs=$CODE" "...and the shell's code directories"
is "$(sed -n 4p <<<"$out")" "pwd=/ real=/" "...run in /, not in the code directory"
unlike "$(sed -n 5p <<<"$out")" "(^path=|:)$CODE/bin(:|$)" "...with PATH cut of the code directories"
unlike "$out" "planted-on-path" "the sbx first on PATH is not the one run"

out=$(FAKE_STATUS=3 run 'sbx release --force' 2>&1); st=$?
is "$st" 3 "sbx's exit status is the part's"
is "$(sed -n 1p <<<"$out")" "argv: <release> <--force>" "sbx release --force"

out=$(run 'sbx ls | grep -c argv'); st=$?
is "$st:$out" "0:1" "sbx ls piped into a host filter"
out=$(FAKE_STATUS=1 run 'sbx doctor >/dev/null || echo doctor-failed')
is "$out" "doctor-failed" "sbx doctor >/dev/null, its failure seen by ||"

out=$(FAKE_MARK=$SBX_TEST_TMP/exec-ran run 'sbx exec --keep --tty -- vi "a b.txt"' 2>&1); st=$?
is "$st" 2 "sbx exec: status 2"
is "$out" "sbxsh: line 1: sbx exec: what is typed here runs in the session's sandbox already (on a terminal when sbxsh has one): type the command itself: vi 'a b.txt'" \
    "...and says to type the command itself, quoted as typed"
ok "...sbx itself never ran" test ! -e "$SBX_TEST_TMP/exec-ran"
out=$(run 'sbx exec -- ls 2>/dev/null; echo "st=$?"' 2>&1)
like "$out" "route-run: sandbox" "a line with an expansion after it: the rest goes to the sandbox"

out=$("$RUN" 'sbx status' 2>&1); st=$?
is "$st" 125 "no sbx given beside sbxsh: not run on the host"
like "$out" "route-run: sandbox: sbx: no sbx is installed beside sbxsh" "...with the reason"
out=$(run 'sbx status --session other' 2>&1)
like "$out" "route-run: sandbox: sbx status --session: only this shell's own session" \
    "another session: not run on the host"
cp "$FAKE" "$CODE/bin/sbx"
out=$("$RUN" --sbx "$CODE/bin/sbx" --session mine 'sbx status' 2>&1)
like "$out" "route-run: sandbox: sbx: the sbx beside sbxsh is inside the code directories" \
    "an sbx inside the code directory: not run"
done_testing
