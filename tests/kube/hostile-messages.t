#!/bin/bash
# What an API server or a pod says reaches the person escaped, never raw (common/report.h):
# a Status error whose reason and message hold a hostile string (ESC ] 0 title, OSC 52
# clipboard write, ESC [ 6n query, a raw 8-bit CSI 0x9b, U+009B, and bytes that are not
# UTF-8) makes sbxsh exit 125 with the text escaped and no control byte on its stderr; text
# the pod writes on the agent's stderr reaches the holder's log escaped, line by line.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"
CONTROLS=$HERE/../lib/controls.py

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool f=1 --agent "$SBXSH_BIN/sbx-agent-static" ||
    bail_out "the fake API server did not start"
kube_env kh
export AGENT_SANDBOX_POOL=f
trap kube_teardown EXIT

# the hostile string, percent-encoded for the fault (its bytes as they go on the wire)
HOSTILE_PCT='%1B%5D0%3Bx%07%1B%5D52%3Bc%3BaGk%3D%07%1B%5B6n%9B6n%C2%9B6n%FF'
# how the sink shows it, as an extended regex
SHOWN_RE='\\x1b\]0;x\\x07\\x1b\]52;c;aGk=\\x07\\x1b\[6n\\x9b6n\\xc2\\x9b6n\\xff'

clean() { "$CONTROLS" "$1" | head -5 | sed 's/^/# /'; return "${PIPESTATUS[0]}"; }

for code in 403 422; do
    fake_fault "status=$code,count=1,path=sandboxclaims,reason=Bad$HOSTILE_PCT,message=no$HOSTILE_PCT" ||
        diag "the fault was refused"
    AGENT_SANDBOX_SESSION=kh-$code "$SBXSH" -c 'cat README' >/dev/null 2>"$SBX_TEST_TMP/err"
    is "$?" 125 "a $code Status with a hostile reason and message: exit 125"
    ok "$code: no control byte on sbxsh's stderr" clean "$SBX_TEST_TMP/err"
    like "$(cat "$SBX_TEST_TMP/err")" "no$SHOWN_RE" "$code: the server's message shown escaped"
    "$SBX" release --session kh-$code >/dev/null 2>&1
    fake_fault clear
done

# the pod writes on the agent's own stderr (the exec's channel 2, which sbx-kube logs)
cat >"$PROJ/stderr.sh" <<'EOS'
for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = sbx-agent ] || continue
    printf 'pod says \033]0;x\007\033]52;c;aGk=\007\033[6n\2336n\302\2336n\nsecond line \033[c\n' > "$p/fd/2" && echo wrote
done
EOS
out=$("$SBXSH" -c 'sh stderr.sh' 2>"$SBX_TEST_TMP/err")
like "$out" wrote "the pod wrote on the agent's stderr"
ok "no control byte on sbxsh's stderr" clean "$SBX_TEST_TMP/err"
log=$XDG_RUNTIME_DIR/sbxsh/kh.log
for _ in $(seq 100); do
    grep -q 'second line' "$log" 2>/dev/null && break
    sleep 0.1
done
ok "the holder's log: no control byte" clean "$log"
like "$(grep 'pod says' "$log")" "sbx-kube: pod: pod says $(printf '%s' "$SHOWN_RE" | sed 's/\\\\xff$//')" \
     "the pod's text in the log, escaped"
like "$(grep 'second line' "$log")" 'sbx-kube: pod: second line \\x1b\[c' "each of its lines on a log line of its own"
"$SBX" status >"$SBX_TEST_TMP/err" 2>&1
ok "sbx status: no control byte" clean "$SBX_TEST_TMP/err"
done_testing
