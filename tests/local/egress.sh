# shellcheck shell=bash
# AGENT_SANDBOX_LOCAL_NETWORK=allowlist on one runtime; sourced by egress-runsc.t and
# egress-bwrap.t with RT set. A python3 http.server on the host's loopback stands in for a
# registry, reached by the name "localhost" (which resolves to 127.0.0.1 on the host, so
# the loopback range must be listed for it: the private-range rule is tested too).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"
. "$HERE/../lib/user.sh"

command -v python3 >/dev/null || skip_all "python3 is not installed (make deps)"
command -v curl >/dev/null || skip_all "curl is not installed"
runtime_env ''
S=eg-$RT
server=
teardown() {
    for s in $S $S-b $S-c; do
        AGENT_SANDBOX_SESSION=$s "$SBX" release --force >/dev/null 2>&1
    done
    local_teardown
    [ -n "$server" ] && kill "$server" 2>/dev/null
    test_user_del
    tap_cleanup
}
trap teardown EXIT

# The stand-in registry, on a free port of the host's loopback.
mkdir -p "$SBX_TEST_TMP/www"
echo registry-ok > "$SBX_TEST_TMP/www/index.txt"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$SBX_TEST_TMP/www" && exec timeout 600 python3 -m http.server "$port" --bind 127.0.0.1) \
    >"$SBX_TEST_TMP/http.log" 2>&1 &
server=$!
for _ in $(seq 100); do
    curl -s "http://127.0.0.1:$port/index.txt" >/dev/null 2>&1 && break
    sleep 0.1
done
is "$(curl -s "http://127.0.0.1:$port/index.txt")" registry-ok "the stand-in registry serves on the host"

run() { # SESSION EGRESS SCRIPT: sbxsh -c SCRIPT in that session; stdout, stderr to $E
    AGENT_SANDBOX_SESSION=$1 AGENT_SANDBOX_LOCAL_NETWORK=allowlist AGENT_SANDBOX_EGRESS=$2 \
        timeout 120 "$SBXSH" -c "$3" 2>"$SBX_TEST_TMP/e"
}
E=$SBX_TEST_TMP/e
list="localhost:$port,127.0.0.0/8"
# "localhost" is in no_proxy (the sandbox's own loopback): --noproxy '' sends it anyway.
curl_p="curl -sS --noproxy ''"

# ---- an allowed name, through the proxy ---------------------------------------------
out=$(run $S "$list" "$curl_p -p http://localhost:$port/index.txt")
is "$out" registry-ok "$RT: an allowed name is fetched through the proxy (CONNECT tunnel)"
out=$(run $S "$list" "$curl_p http://localhost:$port/index.txt")
is "$out" registry-ok "$RT: ...and as a plain http:// request through the proxy"
out=$(run $S "$list" 'echo "$https_proxy $HTTP_PROXY $no_proxy"')
is "$out" "http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1" \
   "$RT: commands get the proxy in their environment"
out=$(run $S "$list" 'python3 -c "import urllib.request as u; print(u.getproxies()[\"https\"])"')
is "$out" "http://127.0.0.1:3128" "$RT: ...which python's urllib (pip) picks up"

# ---- refused ------------------------------------------------------------------------
out=$(run $S "$list" 'curl -sS https://example.org/; echo "curl=$?"')
is "$out" "curl=56" "$RT: an unlisted name is refused (CONNECT gets 403)"
like "$(cat "$E")" "sbxsh: the sandbox may not reach example\.org: it is not in AGENT_SANDBOX_EGRESS; add it there" \
     "$RT: ...and stderr says which variable to set"
out=$(run $S "$list" 'curl -s -w " %{http_code}" http://example.org/')
like "$out" "^sbxsh: the sandbox may not reach example\.org: it is not in AGENT_SANDBOX_EGRESS.* 403$" \
     "$RT: a plain http:// request gets the 403 whose body says it"
out=$(run $S "$list" "$curl_p -p -x http://127.0.0.1:3128 http://127.0.0.1:$port/index.txt; echo \"curl=\$?\"")
is "$out" "curl=56" "$RT: an IP literal is refused, even one whose range is listed"
like "$(cat "$E")" "host names only, not an IP address" "$RT: ...saying why"
out=$(run $S "$list" "$curl_p -p http://localhost:$((port == 65535 ? 1 : port + 1))/; echo \"curl=\$?\"")
is "$out" "curl=56" "$RT: a listed name on a port not listed is refused"
like "$(cat "$E")" "ports 443 and 80 only; add localhost:$((port == 65535 ? 1 : port + 1)) to AGENT_SANDBOX_EGRESS" \
     "$RT: ...saying how to add the port"
out=$(run $S "$list" "curl -sS --connect-timeout 10 --noproxy '*' http://127.0.0.1:$port/index.txt; echo \"curl=\$?\"")
is "$out" "curl=7" "$RT: no network outside the proxy (a direct connect to the host's loopback fails)"

out=$(run "$S"-b "localhost:$port" "$curl_p -p http://localhost:$port/index.txt; echo \"curl=\$?\"")
is "$out" "curl=56" "$RT: a name resolving to loopback is refused unless its range is listed"
like "$(cat "$E")" "it resolves to 127\.0\.0\.1, a loopback address \(127\.0\.0\.0/8\); list that range in AGENT_SANDBOX_EGRESS" \
     "$RT: ...saying which range to list"

# ---- the proxy's life -----------------------------------------------------------------
# gone PID: no such process, or a zombie (its reaper, this machine's pid 1, may be slow)
gone() { [ ! -e "/proc/$1" ] || grep -q '^State:.*[ZX]' "/proc/$1/status" 2>/dev/null; }
st=$(AGENT_SANDBOX_SESSION=$S "$SBX" status 2>&1)
like "$st" "network allowlist" "$RT: sbx status shows the network mode"
like "$st" "egress:    localhost:$port, 127\.0\.0\.0/8 \(proxy pid [0-9]+, running\)" \
     "$RT: ...the list, and the proxy running"
out=$(AGENT_SANDBOX_LOCAL_NETWORK=allowlist AGENT_SANDBOX_EGRESS="$list" "$SBX" doctor 2>&1)
like "$out" "ok    network: allowlist, HTTP\(S\) through [^ ]*/sbx-egress to localhost:$port,127\.0\.0\.0/8" \
     "$RT: sbx doctor shows the mode, the list and the proxy"
pid=$(printf '%s\n' "$st" | sed -n 's/.*proxy pid \([0-9]*\).*/\1/p')
is "$(cat "/proc/$pid/comm" 2>/dev/null)" "sbx-egress" "$RT: the proxy is a host process of its own"
AGENT_SANDBOX_SESSION=$S "$SBX" release >/dev/null 2>&1
ok "$RT: sbx release ends the proxy" gone "$pid"

run "$S"-c "$list" true
pid=$(AGENT_SANDBOX_SESSION=$S-c "$SBX" status 2>&1 | sed -n 's/.*proxy pid \([0-9]*\).*/\1/p')
ok "$RT: a new session's proxy runs" test -n "$pid" -a -e "/proc/${pid:-0}"
AGENT_SANDBOX_SESSION=$S-c "$SBX" release --force >/dev/null 2>&1
ok "$RT: sbx release --force ends it too" gone "${pid:-0}"

run "$S"-c "$list" true
pid=$(AGENT_SANDBOX_SESSION=$S-c "$SBX" status 2>&1 | sed -n 's/.*proxy pid \([0-9]*\).*/\1/p')
sb=$(sed -n 's/^{"runtime":"[a-z]*","id":"[^"]*","pid":\([0-9]*\).*/\1/p' "$AGENT_SANDBOX_STATE_DIR/$S-c/sandbox.json")
[ -n "$sb" ] && kill -9 "$sb"
for _ in $(seq 100); do gone "${pid:-0}" && break; sleep 0.1; done
ok "$RT: the proxy goes when its sandbox dies" gone "${pid:-0}"
out=$(run "$S"-c "$list" "$curl_p -p http://localhost:$port/index.txt")
is "$out" registry-ok "$RT: ...and the next command's new sandbox gets a new one"
AGENT_SANDBOX_SESSION=$S-c "$SBX" release >/dev/null 2>&1

# ---- a holder that dies -------------------------------------------------------------------
run "$S"-c "$list" true
pid=$(AGENT_SANDBOX_SESSION=$S-c "$SBX" status 2>&1 | sed -n 's/.*proxy pid \([0-9]*\).*/\1/p')
holder=$(AGENT_SANDBOX_SESSION=$S-c "$SBX" status 2>&1 | sed -n 's/^holder: *running (pid \([0-9]*\)).*/\1/p')
[ -n "$holder" ] && kill -9 "$holder"
out=$(run "$S"-c "$list" "$curl_p -p http://localhost:$port/index.txt")
is "$out" registry-ok "$RT: after the holder dies, the next command reattaches and still goes through"
is "$(AGENT_SANDBOX_SESSION=$S-c "$SBX" status 2>&1 | sed -n 's/.*proxy pid \([0-9]*\).*/\1/p')" "$pid" \
   "$RT: ...through the same proxy (it lives with the sandbox, not the holder)"
AGENT_SANDBOX_SESSION=$S-c "$SBX" release >/dev/null 2>&1

# ---- as an ordinary user ------------------------------------------------------------------
if test_user_add sbxe; then
    out=$(as_test_user "mkdir -p p; cd p; git init -q .; \
          export AGENT_SANDBOX_LOCAL_RUNTIME=$RT AGENT_SANDBOX_LOCAL_NETWORK=allowlist \
          AGENT_SANDBOX_EGRESS=$list; timeout 120 '$SBXSH' -c \"$curl_p -p http://localhost:$port/index.txt; \
          curl -sS https://example.org/\"; '$SBX' release >/dev/null" 2>&1)
    like "$out" "^registry-ok"$'\n'"sbxsh: the sandbox may not reach example\.org" \
         "$RT as an ordinary user: allowed through the proxy, unlisted refused"
    test_user_del
else
    skip "$RT as an ordinary user: $TEST_USER_WHY"
fi

# ---- configuration ----------------------------------------------------------------------
out=$(AGENT_SANDBOX_SESSION=$S-b AGENT_SANDBOX_LOCAL_NETWORK=allowlist \
      AGENT_SANDBOX_EGRESS="localhost:$port,pypi.org" timeout 60 "$SBXSH" -c true 2>&1)
st=$?
is "$st" 125 "$RT: a changed list for a running session is refused (125), like another runtime"
like "$out" "network=allowlist egress=localhost:$port" "$RT: ...saying what the session runs with"
AGENT_SANDBOX_SESSION=$S-b "$SBX" release >/dev/null 2>&1
out=$(AGENT_SANDBOX_EGRESS=pypi.org "$SBXSH" -c true 2>&1); st=$?
is "$st:$out" "125:sbxsh: AGENT_SANDBOX_EGRESS is set, but AGENT_SANDBOX_LOCAL_NETWORK is 'none': the list applies only with AGENT_SANDBOX_LOCAL_NETWORK=allowlist" \
   "$RT: AGENT_SANDBOX_EGRESS without allowlist is an error"
out=$(AGENT_SANDBOX_LOCAL_NETWORK=allowlist "$SBXSH" -c true 2>&1); st=$?
like "$st:$out" "^125:sbxsh: AGENT_SANDBOX_LOCAL_NETWORK=allowlist needs AGENT_SANDBOX_EGRESS" \
     "$RT: allowlist without a list is an error"
out=$(AGENT_SANDBOX_LOCAL_NETWORK=allowlist AGENT_SANDBOX_EGRESS=pypi.org,10.1.2.3 "$SBXSH" -c true 2>&1); st=$?
like "$st:$out" "^125:sbxsh: AGENT_SANDBOX_EGRESS: '10\.1\.2\.3' is an IP address" \
     "$RT: an IP address in the list is an error naming it"
out=$(AGENT_SANDBOX_LOCAL_NETWORK=allowlist AGENT_SANDBOX_EGRESS='pypi.org,ex ample.com' "$SBXSH" -c true 2>&1); st=$?
like "$st:$out" "^125:sbxsh: AGENT_SANDBOX_EGRESS: 'ex ample\.com' is not a host name" \
     "$RT: a bad name is an error naming it"
out=$(AGENT_SANDBOX_LOCAL_NETWORK=allowlist AGENT_SANDBOX_EGRESS='pypi.org:99999' "$SBXSH" -c true 2>&1); st=$?
like "$st:$out" "^125:sbxsh: AGENT_SANDBOX_EGRESS: 'pypi\.org:99999': the port must be" \
     "$RT: a bad port is an error naming it"
out=$(AGENT_SANDBOX_LOCAL_NETWORK=sometimes "$SBXSH" -c true 2>&1); st=$?
like "$st:$out" "^125:sbxsh: AGENT_SANDBOX_LOCAL_NETWORK='sometimes': use none \(the default\), host, or allowlist" \
     "$RT: an unknown network mode is an error listing the modes"
done_testing
