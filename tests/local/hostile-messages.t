#!/bin/bash
# sbxsh's own messages never write a sandbox's text raw to the terminal (common/report.h).
# Files named with a hostile string (a title set, an OSC 52 clipboard write, a cursor
# position query, a raw 8-bit CSI and a UTF-8 encoded one) go through the messages that
# name a sandbox's file: a conflict of a file and of a directory (told by the host and by
# the sandbox), an unreadable file; on both runtimes, sbxsh's stderr, `sbx status` and the holder's log then
# hold no control byte (tests/lib/controls.py), and the messages show the name escaped.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib.sh"

CONTROLS=$(cd "$(dirname "$0")/../lib" && pwd)/controls.py
NTESTS=11

local_env
trap 'for rt in runsc bwrap; do "$SBX" release --session hostile-$rt >/dev/null 2>&1; done; local_teardown; tap_cleanup' EXIT

# ESC ] 0 ; x BEL, ESC ] 52 ; c ; aGk= BEL, ESC [ 6n, 0x9b 6n, U+009B 6n
HOSTILE='\033]0;x\007\033]52;c;aGk=\007\033[6n\2336n\302\2336n'
H=$(printf '%b' "$HOSTILE")
# the name as the sink shows it, as an extended regex
SHOWN_RE='\\x1b\]0;x\\x07\\x1b\]52;c;aGk=\\x07\\x1b\[6n\\x9b6n\\xc2\\x9b6n'
# what the sandbox runs to make the names (a file of the project, so it is in the sandbox)
cat >"$PROJ/hostile.sh" <<EOS
H=\$(printf '$HOSTILE')
case \$1 in
conflict) printf sandbox > "d/\$H" ;;
dir) mkdir -p "d/dir\$H" && echo x > "d/dir\$H/f" ;;
unreadable) echo u > "d/u\$H" && chmod 0200 "d/u\$H" ;;
log) printf 'says %s\n' "\$H" > /proc/1/fd/2 ;;
esac
EOS

# Runs `hostile.sh WHAT` in the sandbox with stdin from a fifo, waits (bounded) until its
# output says "started", runs the host command, then lets the sandbox command end: what
# changed on the host meanwhile meets what the command changed when its changes are pulled.
# sbxsh's stderr goes to $SBX_TEST_TMP/err.
during() { # WHAT HOST-CMD
    local fifo=$SBX_TEST_TMP/fifo out=$SBX_TEST_TMP/out
    rm -f "$fifo" "$out"
    mkfifo "$fifo"
    exec 3<>"$fifo"
    timeout 120 "$SBXSH" -c "sh -c 'sh hostile.sh $1; echo started; read -r go; echo done'" \
        <"$fifo" >"$out" 2>"$SBX_TEST_TMP/err" &
    local pid=$!
    for _ in $(seq 1200); do
        grep -q started "$out" 2>/dev/null && break
        sleep 0.1
    done
    eval "$2"
    echo go >&3
    wait "$pid"
    exec 3>&-
}

# in_sandbox WHAT: runs `hostile.sh WHAT` in the sandbox, stderr to $SBX_TEST_TMP/err
in_sandbox() { timeout 120 "$SBXSH" -c "sh hostile.sh $1" >/dev/null 2>"$SBX_TEST_TMP/err"; }

# clean FILE: no control byte in it (what there is goes to the TAP output)
clean() { "$CONTROLS" "$1" | head -5 | sed 's/^/# /'; return "${PIPESTATUS[0]}"; }

for rt in runsc bwrap; do
    why=$(runtime_skip_reason "$rt")
    if [ -n "$why" ]; then
        for _ in $(seq $NTESTS); do skip "$rt: $why"; done
        continue
    fi
    export AGENT_SANDBOX_LOCAL_RUNTIME=$rt AGENT_SANDBOX_SESSION=hostile-$rt
    rm -rf "$PROJ/d"
    mkdir -p "$PROJ/d"

    # a file changed on both sides during a command
    during conflict 'printf host > "$PROJ/d/$H"'
    ok "$rt: a conflict: no control byte on sbxsh's stderr" clean "$SBX_TEST_TMP/err"
    like "$(cat "$SBX_TEST_TMP/err")" "conflict: .*/d/$SHOWN_RE changed both" \
         "$rt: and the message names the file escaped"
    is "$(cat "$PROJ/d/$H")" host "$rt: the host's version kept"

    # a directory in the sandbox where the host made a file
    during dir 'printf host > "$PROJ/d/dir$H"'
    ok "$rt: a directory against a file: no control byte on stderr" clean "$SBX_TEST_TMP/err"
    like "$(cat "$SBX_TEST_TMP/err")" "d/dir$SHOWN_RE" "$rt: and the message names it escaped"

    # a file the sandbox cannot read (the agent's own message)
    in_sandbox unreadable
    ok "$rt: an unreadable file: no control byte on stderr" clean "$SBX_TEST_TMP/err"
    like "$(cat "$SBX_TEST_TMP/err")" "cannot read d/u$SHOWN_RE" "$rt: and the message names it escaped"

    # sbx status and the holder's log, which the person reads
    "$SBX" status >"$SBX_TEST_TMP/err" 2>&1
    ok "$rt: sbx status: no control byte" clean "$SBX_TEST_TMP/err"
    ok "$rt: the holder's log: no control byte" clean "$XDG_RUNTIME_DIR/sbxsh/hostile-$rt.log"

    # the sandbox writes into its runtime's log (sandbox.log, which messages point at)
    in_sandbox log
    sblog=$AGENT_SANDBOX_STATE_DIR/hostile-$rt/sandbox.log
    ok "$rt: sandbox.log: no control byte" clean "$sblog"
    like "$(grep -a 'says ' "$sblog")" "says $SHOWN_RE" "$rt: and the sandbox's text is in it, escaped"
    "$SBX" release >/dev/null 2>&1
    rm -rf "$PROJ/d"
done
done_testing
