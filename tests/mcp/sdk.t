#!/bin/bash
# `sbx mcp` driven by a real MCP client that no one here wrote: the official TypeScript
# SDK's Client over its StdioClientTransport (tests/mcp/sdk/client.mjs; the SDK pinned by
# tests/mcp/sdk/package-lock.json, installed with `npm ci --ignore-scripts` into the build
# directory once). It connects (version negotiation), lists the tools, runs a command in a
# git repository and gets its output and exit code (and the file it made, on the host),
# gets 1 MB of output back truncated as documented, gets progress for a call that waits,
# cancels a call, and closes.
. "$(dirname "$0")/../integration/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || skip_all "node is not installed (make deps)"
command -v npm >/dev/null || skip_all "npm is not installed (make deps)"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
[ "${major:-0}" -ge 18 ] || skip_all "node $major is too old for the MCP SDK (18 or later)"
command -v jq >/dev/null || skip_all "jq is not installed (make deps)"
[ -x "$SBXSH_BIN/sbx-mcp" ] || skip_all "sbx-mcp is not built (make)"
why=$(runtime_usable "${SBX_IT_RUNTIME:-runsc}") || why=$(runtime_usable bwrap) ||
    skip_all "no sandbox runtime: $why"

# The SDK, once per build directory and lock file: a directory named after the lock's hash,
# made whole before it is renamed into place (two runs at once each make their own).
build=${SBXSH_BUILD:-$here/../../build}
lockhash=$(sha256sum "$here/sdk/package-lock.json" | cut -c1-12)
sdk=$build/mcp-sdk-$lockhash
if [ ! -d "$sdk/node_modules/@modelcontextprotocol/sdk" ]; then
    tmp=$(mktemp -d "$build/mcp-sdk-tmp.XXXXXX")
    cp "$here/sdk/package.json" "$here/sdk/package-lock.json" "$tmp/"
    if ! log=$(cd "$tmp" && npm_config_cache=$build/npm-cache timeout 300 \
               npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>&1); then
        rm -rf "$tmp"
        case $log in
        *ENOTFOUND*|*EAI_AGAIN*|*ECONNREFUSED*|*ETIMEDOUT*|*ECONNRESET*|*network*|*proxy*)
            skip_all "the npm registry is unreachable, so the MCP SDK cannot be installed: $(printf '%s' "$log" | grep -m1 -i 'err')" ;;
        esac
        bail_out "npm ci of the MCP SDK failed: $(printf '%s' "$log" | tail -n 3)"
    fi
    mv -T "$tmp" "$sdk" 2>/dev/null || rm -rf "$tmp"
fi
cp "$here/sdk/client.mjs" "$SBX_TEST_TMP/"
ln -s "$sdk/node_modules" "$SBX_TEST_TMP/node_modules"

setup_session "mcp-sdk-$$"
cd "$CODE" || bail_out "no code directory"
if ! { git init -q -b main . && echo one >one.txt && git add one.txt &&
        git -c user.name=T -c user.email=t@example.com commit -qm "first commit"; }; then
    bail_out "cannot make the repository"
fi

res=$SBX_TEST_TMP/sdk.json
node "$SBX_TEST_TMP/client.mjs" "$res" "$SBX" "$CODE" 2>"$SBX_TEST_TMP/node.err"
[ -s "$res" ] || { diag "$(tail -n 20 "$SBX_TEST_TMP/node.err")"; bail_out "client.mjs wrote no result"; }
j() { jq -r "$@" "$res"; }
is "$(j '.error // "none"')" none "the SDK client ran through without an error" ||
    diag "$(j .error)" "$(j .stderr)"

is "$(j .protocolVersion)" 2025-11-25 "the SDK's newest protocol version was agreed"
is "$(j .server.name)" sbx "the server says it is sbx"
is "$(j '.tools | join(" ")')" "execute_command session_status release_session" "tools/list"

is "$(j .git.structuredContent.exit_code)" 3 "the command's exit code"
is "$(j .git.structuredContent.stdout)" "$(printf 'first commit\n0')" "its stdout: git's log and status"
is "$(j .git.structuredContent.stderr)" "to-stderr" "its stderr"
is "$(j .git.isError)" false "a command's failure is its exit code, not a tool error"
is "$(j '.git.content[0].text | fromjson | .exit_code')" 3 "the text content holds the same result"
is "$(cat "$CODE/made-by-mcp.txt" 2>&1)" made "the file it made is on the host"

big='.big.structuredContent'
is "$(j "$big.stdout_truncated")" true "1 MB of output: stdout_truncated"
is "$(j "$big.stderr_truncated")" false "stderr not truncated"
n=$(j "$big.stdout | length")
ok "at most 30000 characters kept ($n)" test "$n" -le 30000 -a "$n" -ge 29000
like "$(j "$big.stdout" | head -n 1)" '^0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmn$' \
     "the head is the output's start"
is "$(j "$big.stdout | split(\"\\n\")[-2:] | join(\"|\")")" "THE-END|" "the tail is its end"
like "$(j "$big.stdout")" $'\n\\[\\.\\.\\. [0-9]+ bytes omitted \\.\\.\\.\\]\n' "a line says what was left out"

is "$(j .status.structuredContent.session)" "$AGENT_SANDBOX_SESSION" "session_status names the session"
ok "a call with onprogress gets progress notifications" test "$(j '.progress | length')" -ge 1
is "$(j .waited.structuredContent.stdout)" waited "and then its result"
like "$(j .cancelled)" "^rejected: .*" "a call aborted by the client: cancelled"
is "$(j .after.structuredContent.stdout)" after "the server runs calls after a cancel"
pid=$(j .pid)
ok "the server ended when the client closed" bash -c "! kill -0 $pid 2>/dev/null"
done_testing
