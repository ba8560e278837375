# shellcheck shell=bash
# Each command starts as a fresh `bash -c` would, whatever the commands before it did, on one
# runtime: sourced by fresh-runsc.t and fresh-bwrap.t with RT set. The agent spawns as little
# as it can (sync/agent_spawn.c: it resets only the signals it ignores, and its child is a
# clone that shares its memory until the exec); these are what that must not change, and what
# a warm spare (a child made ahead of the command) would have to keep: every test runs its
# command after others in the same session, most of them after one that changed the state
# they look at.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

runtime_env "fresh-$RT"
teardown() {
    "$SBX" release >/dev/null 2>&1
    local_teardown
    tap_cleanup
}
trap teardown EXIT
T=$SBX_TEST_TMP
C() { "$SBXSH" -c "$@"; }
PTY=$HERE/ptyrun.py

is "$(C 'cat /proc/version >/dev/null && echo started')" "started" "the session starts"
sleep 1.5 # not a wait for anything: a gap, which a bash started before the command would count
is "$(C 'echo $SECONDS')" "0" "SECONDS starts at the command (bash starts with it)"

# ---- $0, BASH_ARGV0, positional parameters, $-, options ------------------------
is "$(C 'echo "$0|$#|$*|$BASH_ARGV0"')" "$SBXSH|0||$SBXSH" '$0 is how sbxsh was called, no arguments'
is "$(C 'BASH_ARGV0=changed; echo "$0"' name one)" "changed" 'BASH_ARGV0= sets $0...'
is "$(C 'echo "$0|$#|$*|$BASH_ARGV0"' name one 'two three')" "name|2|one two three|name" \
   '...and the next command has its own $0 and positional parameters'
is "$(C 'set -- x y z; shift; echo "$#"')" "2" "set -- in one command..."
is "$(C 'echo "$#|${1-unset}"')" "0|unset" "...is not in the next"
is "$(C 'echo "$-"')" "$(bash -c 'echo "$-"')" '$- is bash -c'"'"'s'
is "$("$SBXSH" -e -u -c 'echo "$-"')" "$(bash -e -u -c 'echo "$-"')" '-e -u reach $-'
"$SBXSH" -e -c 'false; cat <<<after-false' >"$T/o"
is "$?/$(cat "$T/o")" "1/" "-e: the command stops at the first failure"
"$SBXSH" -u -c 'echo "$no_such_var"; echo after' >"$T/o" 2>"$T/e"
is "$?/$(cat "$T/o")" "127/" "-u: an unset variable stops it (127, as bash)"
like "$(cat "$T/e")" "no_such_var: unbound variable" "...with bash's message"
is "$(C 'false; cat <<<after-false')" "after-false" "...and the next command without -e goes on"
C 'shopt -s extglob nullglob; set -o pipefail -o noglob -o allexport' >/dev/null
is "$(C 'shopt extglob nullglob; set -o | grep -E "^(pipefail|noglob|allexport) " | tr -s " \t" " "')" \
   "extglob        	off
nullglob       	off
allexport off
noglob off
pipefail off" "shopt and set -o of one command are not in the next"
is "$("$SBXSH" -O extglob -o pipefail -c 'shopt extglob; set -o | grep ^pipefail' | tr -s ' \t' ' ')" \
   "extglob on
pipefail on" "-O and -o options reach the command"
is "$(C '[ "$BASH_EXECUTION_STRING" = "${BASH_EXECUTION_STRING}" ] && echo "$BASH_EXECUTION_STRING"')" \
   '[ "$BASH_EXECUTION_STRING" = "${BASH_EXECUTION_STRING}" ] && echo "$BASH_EXECUTION_STRING"' \
   'BASH_EXECUTION_STRING is the command'

# ---- traps and signal dispositions ------------------------------------------------
is "$(C 'trap "echo bye" EXIT; trap "" INT QUIT USR1; kill -0 $$')" "bye" "a command's traps run..."
is "$(C 'trap -p; echo "traps:$(trap -p | wc -l)"')" "traps:0" \
   "...and no trap nor ignored signal reaches the next (the agent's SIGPIPE and SIGHUP neither)"
is "$(C 'bash -c "trap -p"; echo end')" "end" "...nor a child of it"
C 'yes | head -c 1 >/dev/null; yes; echo "yes=$?" >&2' 2>"$T/e" | head -c 1 >/dev/null
is "$(cat "$T/e")" "yes=141" "SIGPIPE is the default's (141)"

# SIGINT (Ctrl-C; sbxsh forwards it) and SIGTERM to a running command (each its own output
# file: a "ready" left by the last one would send the signal before the command started).
"$SBXSH" -c 'trap "echo got-int; exit 130" INT; echo ready; while :; do sleep 0.1; done' \
    >"$T/sig1" 2>&1 &
pid=$!
for _ in $(seq 400); do grep -q ready "$T/sig1" 2>/dev/null && break; sleep 0.05; done
kill -INT $pid
wait $pid
is "$?/$(tr '\n' ' ' <"$T/sig1")" "130/ready got-int " "SIGINT reaches a running command's trap"
"$SBXSH" -c 'echo ready; exec sleep 300' >"$T/sig2" 2>&1 &
pid=$!
for _ in $(seq 400); do grep -q ready "$T/sig2" 2>/dev/null && break; sleep 0.05; done
kill -TERM $pid
wait $pid
is "$?" 143 "SIGTERM ends a running command with the default action (143)"
"$SBXSH" -c 'echo ready; sleep 300' >"$T/sig3" 2>&1 &
pid=$!
for _ in $(seq 400); do grep -q ready "$T/sig3" 2>/dev/null && break; sleep 0.05; done
kill -INT $pid
wait $pid
is "$?" 130 "SIGINT ends a command in its foreground job (130)"

# ---- the environment, cwd, umask, limits ------------------------------------------
is "$(SBX_T1=set AGENT_SANDBOX_FORWARD_ENV=SBX_T1 C 'echo "${SBX_T1-unset}"; export SBX_T2=leak')" \
   "set" "a forwarded variable reaches the command"
is "$(C 'echo "${SBX_T1-unset}/${SBX_T2-unset}"')" "unset/unset" \
   "...and is unset in the next command that does not forward it (nor what one exported)"
is "$(C 'echo "$SHLVL|$_"')" "$(C 'echo "$SHLVL|$_"')" 'SHLVL and $_ are the same from one command to the next'
mkdir -p "$PROJ/sub"
is "$(cd "$PROJ/sub" && C 'pwd; cd /; pwd')" "$PROJ/sub
/" "the command runs in the caller's directory"
is "$(C 'pwd; echo "$PWD"')" "$PROJ
$PROJ" "...and the next in its own, whatever the last did"
rm -rf "$PROJ/sub"
mkdir -p "$PROJ/sub"
is "$(cd "$PROJ/sub" && C 'pwd -P; ls -a | tr "\n" " "')" "$PROJ/sub
. .. " "a directory removed and made again between commands: the new one"
# A tty command (another fd map) is the reference for what the agent's children inherit.
fresh() { "$PTY" -- "$SBX" exec --keep --tty -- bash -c "$1" | tr -d '\r'; }
C 'umask 077; ulimit -S -n 64; ulimit -S -c 0' >/dev/null
is "$(C 'umask; ulimit -S -n')" "$(fresh 'umask; ulimit -S -n')" \
   "a command's umask and limits are a fresh child's, not the last command's"
is "$(C 'exec ls /proc/self/fd' | tr '\n' ' ')" "0 1 2 3 " \
   "the command has fds 0, 1 and 2 only (3: ls's own; nothing of the agent's)"
is "$(printf 'line1\nline2\n' | C 'cat; echo "$$" >/dev/null')" "line1
line2" "stdin reaches the command"
is "$(C 'read -r pg sid < <(ps -o pgid=,sid= -p $$); [ "$pg.$sid" = "$$.$$" ] && echo own')" "own" \
   "...in its own session and process group"

# ---- a command right after one that killed its own process group ---------------------
(C 'kill -9 0') 2>/dev/null
is "$?" 137 "a command that kills its own process group (137)"
is "$(C 'echo next $(( 1 + 1 ))')" "next 2" "...the next command runs normally"

# ---- errors as a fresh child's -------------------------------------------------------
C 'no-such-cmd-xyz' 2>"$T/e"
is "$?" 127 "not found: 127"
like "$(cat "$T/e")" "no-such-cmd-xyz: command not found" "...with bash's message"
(cd "$PROJ" && mkdir -p gone && cd gone && rmdir "$PROJ/gone" && "$SBXSH" -c 'pwd') \
    >/dev/null 2>"$T/e"
isnt "$?" 0 "a cwd that does not exist: the command fails"

# ---- several clients of one session at once ------------------------------------------
mkdir -p "$PROJ/p1" "$PROJ/p2" "$PROJ/p3"
for i in 1 2 3; do
    (cd "$PROJ/p$i" && SBX_P=$i AGENT_SANDBOX_FORWARD_ENV=SBX_P \
     "$SBXSH" -c 'echo "$SBX_P $(pwd) $0 $*"; sleep 0.5; echo "$$" > pid' "n$i" "a$i") \
        >"$T/par$i" 2>&1 &
    pp[i]=$!
done
wait "${pp[1]}"; r1=$?; wait "${pp[2]}"; r2=$?; wait "${pp[3]}"; r3=$?
is "$r1$r2$r3" "000" "three clients of one session at once all succeed"
is "$(cat "$T/par1" "$T/par2" "$T/par3")" "1 $PROJ/p1 n1 a1
2 $PROJ/p2 n2 a2
3 $PROJ/p3 n3 a3" "...each with its own environment, cwd, \$0 and arguments"
is "$(sort -u "$PROJ"/p[123]/pid | wc -l)" "3" "...and its own process"

# A command started while another one's stdin is open must not hold a copy of it.
mkfifo "$T/in"
"$SBXSH" -c 'cat; echo cat-ended' <"$T/in" >"$T/cat" 2>&1 &
cp=$!
exec 8>"$T/in"
echo data >&8
for _ in $(seq 200); do grep -q data "$T/cat" 2>/dev/null && break; sleep 0.05; done
C 'true'; C 'true'
exec 8>&-
for _ in $(seq 400); do kill -0 $cp 2>/dev/null || break; sleep 0.05; done
kill -0 $cp 2>/dev/null && kill $cp
wait $cp
is "$(cat "$T/cat")" "data
cat-ended" "a command's stdin still ends while other commands start"

done_testing
