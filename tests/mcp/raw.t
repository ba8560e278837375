#!/bin/bash
# `sbx mcp` spoken to in raw JSON-RPC lines (tests/mcp/rawrpc.py), as a careless or hostile
# client would: malformed lines get JSON-RPC errors and the server reads on; a notification
# gets no answer; a command's bytes that are not UTF-8, its NULs, its terminal escapes and a
# line of it shaped like a message all stay inside the result's strings; a timeout and a
# cancellation stop their commands; calls run concurrently; a progressToken gets progress
# notifications; at the end of input the running call is answered; and every byte on stdout
# is a protocol message.
. "$(dirname "$0")/../integration/lib.sh"

command -v python3 >/dev/null || skip_all "python3 is not installed (make deps)"
command -v jq >/dev/null || skip_all "jq is not installed (make deps)"
[ -x "$SBXSH_BIN/sbx-mcp" ] || skip_all "sbx-mcp is not built (make)"
why=$(runtime_usable "${SBX_IT_RUNTIME:-runsc}") || why=$(runtime_usable bwrap) ||
    skip_all "no sandbox runtime: $why"
here=$(cd "$(dirname "$0")" && pwd)
setup_session "mcp-raw-$$"
cd "$CODE" || bail_out "no code directory"

res=$SBX_TEST_TMP/raw.json
python3 "$here/rawrpc.py" "$res" "$SBX" 2>"$SBX_TEST_TMP/rawrpc.err"
[ -s "$res" ] || { diag "$(cat "$SBX_TEST_TMP/rawrpc.err")"; bail_out "rawrpc.py wrote no result"; }
j() { jq -c "$@" "$res"; }

is "$(j .lines_ok)" true "every line on stdout is a JSON-RPC 2.0 message"
is "$(j .exited)" true "the server exits after its input ends (the cancelled sleep 3000 ended)"
is "$(j .exit)" 0 "with status 0"
is "$(j '.responses["1"].result.protocolVersion')" '"2025-06-18"' "initialize: the client's version"
is "$(j '.responses["2"].result')" '{}' "ping: {}"
is "$(j '.order[0:3]')" '["1","2","null"]' "no answer to the notification"
is "$(j '.null_errors')" '[-32700,-32700,-32600,-32700]' \
   "cut-off JSON, a non-UTF-8 line, a batch, a line over 8 MiB: errors with id null"
is "$(j '.responses["\"unknown\""].error.code')" -32601 "an unknown method: -32601, its id kept"
is "$(j '.responses["5"].error.code')" -32602 "an unknown tool: -32602"
is "$(j '.responses["6"].result.isError')" true "execute_command without a command: a tool error"
is "$(j '.responses["7"].result.isError')" true "a negative timeout: a tool error"
is "$(j '.responses["8"].error.code')" -32600 "params that are not an object: -32600"
is "$(j '.responses["10"].result')" '{}' "the server reads on after a line over 8 MiB"

r11='.responses["11"].result.structuredContent'
is "$(j "$r11.exit_code")" 7 "a command's exit code"
is "$(j "$r11.stdout")" '"a\\xff\\x00b\n{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n"' \
   "stdout: a bad byte and a NUL as \\xNN, a fake message kept inside the string"
is "$(j "$r11.stderr")" '"\u001b[31mred\n"' "stderr: the escape byte JSON-escaped"
is "$(j '.responses["99"]')" null "the fake message is no answer"
is "$(j '.responses["11"].result.content[0].text | fromjson | .exit_code')" 7 \
   "the text content is the same result as JSON"
is "$(j '.responses["12"].result.structuredContent.timed_out')" true "timeout 1: the command was stopped"
is "$(j '.responses["42"].result.structuredContent | [.stdout, .stderr]')" '["host-side\n","to-err\n"]' \
   "a line run on the host: its output in the result, none on the server's stdout"

is "$(j '.responses["30"].result.structuredContent | [.stdout, .timed_out]')" '["a\n",false]' \
   "two calls run at once: the first saw the second's file"
is "$(j '.responses["31"].result.structuredContent.stdout')" '"b\n"' "and the second was answered"
p40='[.notifications[] | select(.params.progressToken == "p40") | .params.progress]'
ok "a call with a progressToken gets notifications/progress while it runs" \
   test "$(j "$p40 | length")" -ge 1
is "$(j "$p40 | . == (sort | unique)")" true "their progress only grows"
is "$(j '.responses["40"].result.structuredContent.stdout')" '"done-40\n"' "then its answer"
is "$(j '(.order | index("40")) > (.order | rindex("progress:p40"))')" true \
   "and no progress after the answer"
is "$(j '[.notifications[] | select(.params.progressToken != "p40")] | length')" 0 \
   "no progress for calls that asked none"
is "$(j '[.responses["13"].result.tools[].name]')" \
   '["execute_command","session_status","release_session"]' "tools/list: the three tools"
is "$(j '.responses["20"]')" null "a cancelled call is not answered"
is "$(j '.responses["21"].result')" '{}' "the server answers on after a cancel"
is "$(j '.responses["14"].result.structuredContent.session')" "\"$AGENT_SANDBOX_SESSION\"" \
   "session_status: the session's status"
is "$(j '.responses["15"].result.structuredContent.released')" true "release_session: released"
is "$(j '.responses["16"].result.protocolVersion')" '"2025-11-25"' \
   "initialize with a version not spoken: the newest"
is "$(j '.responses["17"].result.protocolVersion')" '"2024-11-05"' "initialize with 2024-11-05: taken"
is "$(j '[.responses["18"].result.tools[] | has("outputSchema")] | any')" false \
   "2024-11-05: no outputSchema"
is "$(j '.responses["22"].result | has("structuredContent")')" false "nor structuredContent"
is "$(j '.responses["22"].result.content[0].text | fromjson | .stdout')" '"late\n"' \
   "a call running at the end of input is answered (in a new sandbox after the release)"
is "$(j '.order[-1]')" '"22"' "and last"

# the command line: a usage error is 2; a session sbxsh refuses is sbx's own failure, 125,
# said on stderr, with nothing on stdout
"$SBX" mcp --no-such-option </dev/null >"$SBX_TEST_TMP/o" 2>"$SBX_TEST_TMP/e"
is "$?" 2 "sbx mcp --no-such-option: status 2"
"$SBX" mcp --session 'bad name!' </dev/null >"$SBX_TEST_TMP/o" 2>"$SBX_TEST_TMP/e"
is "$?" 125 "a bad session name: status 125"
like "$(cat "$SBX_TEST_TMP/e")" '^sbx mcp: .*session' "said on stderr"
is "$(wc -c <"$SBX_TEST_TMP/o")" 0 "nothing on stdout"
"$SBX" mcp --cwd "$SBX_TEST_TMP/nowhere" </dev/null >"$SBX_TEST_TMP/o" 2>"$SBX_TEST_TMP/e"
is "$?" 125 "a --cwd that does not exist: status 125"
like "$("$SBX" mcp --help)" 'execute_command' "sbx mcp --help names the tools"
got=$(cd "$CODE/.." && printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":"pwd"}}}' |
      "$SBX" mcp --cwd "$(basename "$CODE")" | jq -r .result.structuredContent.stdout)
is "$got" "$CODE" "a relative --cwd: commands run there"
done_testing
