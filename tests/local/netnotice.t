#!/bin/bash
# Without network (the default), the first lookup of a session says so on the stderr of
# the command that made it, once, with how to allow it; lookups fail at once (the
# sandbox's DNS stub answers NXDOMAIN, over UDP and TCP). On both runtimes, as root and as
# an ordinary user the test creates (and removes).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"
. "$HERE/../lib/user.sh"

[ -x "$SBX" ] || skip_all "sbx not built"
command -v curl >/dev/null || skip_all "curl is not installed"
local_env
teardown() {
    for rt in runsc bwrap; do
        AGENT_SANDBOX_SESSION=nn-$rt "$SBX" release >/dev/null 2>&1
        AGENT_SANDBOX_SESSION=nn-$rt-self "$SBX" release >/dev/null 2>&1
    done
    local_teardown
    test_user_del
    tap_cleanup
}
trap teardown EXIT

notice='sbxsh: the sandbox has no network (it looked up registry.npmjs.org); allow it with AGENT_SANDBOX_LOCAL_NETWORK=host, or AGENT_SANDBOX_LOCAL_NETWORK=allowlist AGENT_SANDBOX_EGRESS=registry.npmjs.org'
has_line() { # FILE LINE: the file has that very line
    grep -qxF -- "$2" "$1" || { diag "$(cat "$1")"; return 1; }
}

# A DNS query of our own, straight at the stub: its rcode (3 is NXDOMAIN).
cat > "$PROJ/ask.py" <<'EOF'
import socket, struct, sys
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in sys.argv[2].split(".")) + b"\0"
q += struct.pack(">HH", 1, 1)
if sys.argv[1] == "tcp":
    s = socket.create_connection(("127.0.0.1", 53), timeout=5)
    s.sendall(struct.pack(">H", len(q)) + q)
    n = struct.unpack(">H", s.recv(2))[0]
    r = s.recv(n)
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(q, ("127.0.0.1", 53))
    r = s.recv(4096)
print("id=%x qr=%d rcode=%d question=%s" % (struct.unpack(">H", r[:2])[0], r[2] >> 7,
      r[3] & 15, r[12:len(q)] == q[12:]))
EOF

for rt in runsc bwrap; do
    why=$(runtime_skip_reason "$rt")
    if [ -n "$why" ]; then
        skip "$rt: $why"
        continue
    fi
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=nn-$rt
    timeout 120 "$SBXSH" -c 'curl -sS https://registry.npmjs.org/left-pad; echo "curl=$?"' \
        >"$SBX_TEST_TMP/o" 2>"$SBX_TEST_TMP/e"
    ok "$rt: the first lookup says the sandbox has no network, and how to allow it" \
       has_line "$SBX_TEST_TMP/e" "$notice"
    like "$(cat "$SBX_TEST_TMP/e")" "curl: \(6\) Could not resolve host: registry\.npmjs\.org" \
         "$rt: ...and the lookup itself fails as usual"
    is "$(cat "$SBX_TEST_TMP/o")" "curl=6" "$rt: ...on stderr, not stdout (curl exits 6)"
    is "$(grep -c 'has no network' "$SBX_TEST_TMP/e")" 1 "$rt: ...one line, once"

    timeout 120 "$SBXSH" -c 'getent hosts pypi.org; echo "getent=$?"' \
        >"$SBX_TEST_TMP/o" 2>"$SBX_TEST_TMP/e"
    is "$(cat "$SBX_TEST_TMP/o")" "getent=2" "$rt: a later lookup fails at once (not found)"
    is "$(cat "$SBX_TEST_TMP/e")" "" "$rt: ...and the session says it only once"

    out=$(timeout 60 "$SBXSH" -c 'python3 ask.py udp example.org; python3 ask.py tcp example.org' 2>&1)
    is "$out" "id=1234 qr=1 rcode=3 question=True"$'\n'"id=1234 qr=1 rcode=3 question=True" \
       "$rt: the stub answers over UDP and TCP with NXDOMAIN and the question echoed"
    out=$(timeout 60 "$SBXSH" -c 'grep Cap[EPI] /proc/self/status | grep -vc 0000000000000000')
    is "$out" 0 "$rt: commands have no capability (the stub's port 53 gave the agent none to pass on)"
    "$SBX" release >/dev/null 2>&1

    # The sandbox's own name resolves offline, as a machine's /etc/hosts resolves it, and
    # saying so is no reason for the notice (a fresh session: the notice comes once).
    export AGENT_SANDBOX_SESSION=nn-$rt-self
    timeout 120 "$SBXSH" -c 'hostname -f; getent hosts "$(hostname)" >/dev/null && echo found;
        python3 -c "import socket; print(socket.gethostbyname(socket.gethostname()), socket.getfqdn() == socket.gethostname())"' \
        >"$SBX_TEST_TMP/o" 2>"$SBX_TEST_TMP/e"
    is "$(cat "$SBX_TEST_TMP/o")" "$(timeout 60 "$SBXSH" -c hostname)
found
127.0.0.1 True" "$rt: hostname -f, getent and Python's getfqdn() find the sandbox's own name"
    is "$(cat "$SBX_TEST_TMP/e")" "" "$rt: ...with no notice about the network"
    "$SBX" release >/dev/null 2>&1
    export AGENT_SANDBOX_SESSION=nn-$rt
done
unset AGENT_SANDBOX_SESSION AGENT_SANDBOX_LOCAL_RUNTIME

# ---- as an ordinary user --------------------------------------------------------------
if ! test_user_add sbxn; then
    skip "as an ordinary user: $TEST_USER_WHY"
    done_testing
    exit
fi
for rt in runsc bwrap; do
    why=$(runtime_skip_reason "$rt")
    if [ -n "$why" ]; then
        skip "$rt as an ordinary user: $why"
        continue
    fi
    as_test_user "mkdir -p p-$rt; cd p-$rt; \
          git init -q .; AGENT_SANDBOX_LOCAL_RUNTIME=$rt timeout 120 '$SBXSH' -c \
          'curl -sS https://registry.npmjs.org/left-pad; id -u >/dev/null'; '$SBX' release" \
        >"$SBX_TEST_TMP/o" 2>&1
    ok "$rt as an ordinary user: the notice too" has_line "$SBX_TEST_TMP/o" "$notice"
done
done_testing
