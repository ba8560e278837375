#!/bin/bash
# doc/libsbxsh-example.c, libsbxsh(3)'s example, built by make check as a user builds it
# (<sbxsh.h>, -lsbxsh) and run in a session of its own: its output streamed, then its
# summary lines, and its exit status the last line's.
. "$(dirname "$0")/../integration/lib.sh"

ex=$SBXSH_BUILD/doc/libsbxsh-example
[ -x "$ex" ] || skip_all "$ex is not built (make check builds it)"
why=$(runtime_usable "${AGENT_SANDBOX_LOCAL_RUNTIME:-runsc}") || skip_all "$why"
setup_session "example-$$"
printf 'one\n' >"$CODE/a file.txt"

out=$(cd "$CODE" && "$ex" --program "$SBXSH_BIN/sbxsh" 'cat "a file.txt"' 'seq 5000 | tail -n 1; exit 4' 2>&1)
rc=$?
is "$(head -n 1 <<<"$out")" "libsbxsh 0.1.0, session $AGENT_SANDBOX_SESSION" "it names the library and the session"
like "$out" $'one\n\\[cat "a file.txt"\\] exit 0, 4 bytes of output' "a line's output streams, then its summary"
like "$out" '\[seq 5000 \| tail -n 1; exit 4\] exit 4, 5 bytes of output' "the second line's status"
is "$rc" 4 "the example exits with the last line's status"
# at a terminal (script(1) gives it one), the sandbox's control bytes are shown, not obeyed
out=$(cd "$CODE" && script -qec "$(printf '%q ' "$ex" --program "$SBXSH_BIN/sbxsh" \
      'printf "a\033]0;T\007b\n" >f.txt; cat f.txt')" /dev/null </dev/null)
like "$out" 'a\\x1b\]0;T\\x07b' "at a terminal, an escape sequence from the sandbox is shown as text"
unlike "$out" $'\e]0;' "and never written raw"
out=$(cd "$CODE" && "$ex" --program /nonexistent/sbxsh true 2>&1)
is "$?/$out" "125/example: cannot run /nonexistent/sbxsh: No such file or directory (SBXSH_E_SBXSH)" \
   "an error is a value with a message"
done_testing
