#!/bin/bash
# sbx-agent's command line and daemon modes, driven by tests/sync/sync-run (a minimal host):
# --help/--version/usage errors, stdio mode, --listen with --connect (the bridge runsc exec
# and kubectl exec use), a new holder reattaching to the agent's state and background
# processes, takeover by a new connection, --state across agent restarts, --idle-timeout,
# and the static (musl) build.
. "$(dirname "$0")/../lib/tap.sh"
SYNC_RUN=${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/sync/sync-run
[ -x "$SBX_AGENT" ] || skip_all "$SBX_AGENT not built"
[ -x "$SYNC_RUN" ] || skip_all "$SYNC_RUN not built"

out=$("$SBX_AGENT" --help)
is "$?" 0 "--help exits 0"
like "$out" "--listen SOCKET" "--help documents --listen"
like "$out" "--root-prefix DIR" "and --root-prefix"
like "$("$SBX_AGENT" --version)" "^sbx-agent .*\(protocol 6\)$" "--version names the protocol"
err=$("$SBX_AGENT" --bogus 2>&1)
is "$?" 2 "an unknown option exits 2"
like "$err" "unknown option.*--bogus" "naming it"
err=$("$SBX_AGENT" --fsmonitor-link /tmp/elsewhere 2>&1)
is "$?:$err" "2:sbx-agent: --fsmonitor-link wants an absolute path ending in /sbx-fsmonitor-hook" \
    "--fsmonitor-link refuses a name git would not run as the hook"

T=$SBX_TEST_TMP
code=$T/host/code
prefix=$T/sbx
mkdir -p "$code" "$prefix"
echo host > "$code/g"
sock=$T/agent.sock
tag=sbx-agent-t-$$

# stdio mode, through sh -c, as a backend would start it.
out=$("$SYNC_RUN" --code "$code" --agent "exec '$SBX_AGENT' --root-prefix '$prefix'" -- \
      'cat g; echo made > f; exit 4')
is "$?" 4 "stdio mode: the command's status"
is "$out" "host" "stdio mode: the host's file was pushed"
is "$(cat "$code/f")" "made" "stdio mode: the sandbox's file was pulled"

# --listen, reached through --connect; also git's fsmonitor, its hook linked (as on kube:
# over a stale link).
rm -rf "$prefix" && mkdir -p "$prefix" "$T/hookdir"
ln -s /nonexistent "$T/hookdir/sbx-fsmonitor-hook"
"$SBX_AGENT" --listen "$sock" --root-prefix "$prefix" --state "$T/agent.state" \
    --fsmonitor "$T/fsm.sock" --fsmonitor-link "$T/hookdir/sbx-fsmonitor-hook" &
agent=$!
for _ in $(seq 400); do [ -S "$sock" ] && break; sleep 0.05; done # 20 s: a loaded machine
[ -S "$sock" ] || diag "the agent made no socket at $sock within 20 s"
ok "--listen creates its socket" test -S "$sock"
is "$(stat -c %a "$sock")" 600 "the socket is private (mode 600)"
is "$(readlink -f "$T/hookdir/sbx-fsmonitor-hook")" "$(readlink -f "$SBX_AGENT")" \
    "--fsmonitor-link: the hook's path is a link to the agent's program"
like "$("$T/hookdir/sbx-fsmonitor-hook" 2 sbx1:x:1 | tr '\0' ' ')" "^sbx1:[0-9a-z:]+ / $" \
    "and runs as the hook (a token it cannot vouch for: everything)"
bridge="exec '$SBX_AGENT' --connect '$sock'"
out=$("$SYNC_RUN" --code "$code" --state "$T/host.state" --agent "$bridge" -- \
      "(exec -a $tag sleep 300) & echo one > one; cat g")
is "$?" 0 "--connect bridges a host to the listening agent"
is "$out" "host" "through the bridge: push"
is "$(cat "$code/one")" "one" "through the bridge: pull"

out=$("$SYNC_RUN" --code "$code" --state "$T/host.state" --stats --socket "$sock" -- \
      "pgrep -f $tag >/dev/null && echo alive" 2>"$T/stats")
is "$out" "alive" "a new holder finds the background process of an earlier command"
like "$(cat "$T/stats")" "resumed=1 .*push_entries=0 " "and resumes without pushing the tree again"

# Takeover: a second connection while the first still runs a command.
"$SYNC_RUN" --code "$code" --state "$T/host.state" --socket "$sock" -- \
    "touch '$T/first-running'; sleep 30" >/dev/null 2>"$T/first.err" &
first=$!
for _ in $(seq 200); do [ -e "$T/first-running" ] && break; sleep 0.05; done
out=$("$SYNC_RUN" --code "$code" --state "$T/host.state" --socket "$sock" -- 'echo second')
is "$out" "second" "a new connection takes over from the old one"
wait "$first"
is "$?" 125 "the old connection's command fails with 125"
like "$(cat "$T/first.err")" "closed the connection" "saying the agent closed it"

# --state: the agent restarted keeps its manifest.
kill -TERM "$agent"
wait "$agent"
is "$?" 0 "SIGTERM stops the agent cleanly"
ok "the agent saved its state" test -s "$T/agent.state"
rm -f "$sock" # else the wait below could see the old agent's socket and connect too early
"$SBX_AGENT" --listen "$sock" --root-prefix "$prefix" --state "$T/agent.state" &
agent=$!
for _ in $(seq 400); do [ -S "$sock" ] && break; sleep 0.05; done # 20 s: a loaded machine
[ -S "$sock" ] || diag "the agent made no socket at $sock within 20 s"
out=$("$SYNC_RUN" --code "$code" --state "$T/host.state" --stats --socket "$sock" -- \
      'cat one' 2>"$T/stats")
is "$out" "one" "a restarted agent serves the same tree"
like "$(cat "$T/stats")" "resumed=1 .*push_entries=0 " "and resumes from its state file"
pkill -f "$tag"
kill -TERM "$agent"
wait "$agent"

# --idle-timeout: no host for that long, the agent exits.
"$SBX_AGENT" --listen "$T/idle.sock" --idle-timeout 1 &
idle=$!
for _ in $(seq 200); do kill -0 "$idle" 2>/dev/null || break; sleep 0.05; done
ok "--idle-timeout: the agent exits without a host" bash -c "! kill -0 $idle 2>/dev/null"

# Signals the agent inherited ignored are not its commands' (it resets those, and the ones it
# ignores itself, in each child), nor what an earlier command ignored.
tp='trap -p; echo "run:$(trap -p | wc -l):$(ps -o comm= -p $$)"; trap "" INT TERM HUP USR2'
"$SYNC_RUN" --code "$code" --agent "trap '' USR1 QUIT; exec '$SBX_AGENT' --root-prefix '$prefix'" \
    -- "$tp" "$tp" "$tp" >"$T/traps" 2>&1
is "$(cat "$T/traps")" "run:0:bash
run:0:bash
run:0:bash" "a signal the agent inherited ignored is default in each command"
# The static build speaks the same protocol.
if [ -x "$SBXSH_BIN/sbx-agent-static" ]; then
    rm -rf "$prefix" && mkdir -p "$prefix"
    out=$("$SYNC_RUN" --code "$code" --agent \
          "exec '$SBXSH_BIN/sbx-agent-static' --root-prefix '$prefix'" -- 'cat g; echo s > st')
    is "$out" "host" "sbx-agent-static: push"
    is "$(cat "$code/st")" "s" "sbx-agent-static: pull"
    like "$(ldd "$SBXSH_BIN/sbx-agent-static" 2>&1)" "not a dynamic executable" \
        "sbx-agent-static is a static binary"
else
    skip "sbx-agent-static not built"
fi
done_testing
