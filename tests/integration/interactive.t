#!/bin/bash
# sbxsh at a terminal (a pty): prompts, state between commands, PS2 for an
# unfinished command, Ctrl-C at the prompt and during a sandbox command, a
# syntax error that does not end the shell, stdout and stderr in order, and exit.
. "$(dirname "$0")/lib.sh"

if ! why=$(runtime_usable bwrap); then
    skip_all "$why"
fi
command -v python3 >/dev/null || skip_all "python3 is needed to drive a pty (make deps)"
setup_session "interactive-$$" bwrap
mkdir -p "$CODE/sub"

out=$(cd "$CODE" && TERM=dumb python3 - "$SBXSH" <<'PY'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], ['sbxsh'])
out = b''
def read_for(t):
    global out
    end = time.time() + t
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                return
def until(marker, start, t=60):
    # waits for MARKER in what was printed since START; a slow machine only
    # waits longer, it never types ahead of the prompt
    end = time.time() + t
    while marker.encode() not in out[start:] and time.time() < end:
        read_for(0.05)
# the default prompt, `[sbx:SESSION] ~/dir$ `, ends in $ or # and a space
PS1, PS2 = ('# ' if os.getuid() == 0 else '$ '), '> '
def send(s, marker=PS1):
    start = len(out)
    os.write(fd, s.encode())
    until(marker, start)
until(PS1, 0)
send('x=5\n'); send('echo "x is $x"\n')
send("alias zz_al='echo aliased-$x'\n"); send('zz_al\n')
send('cd sub\n'); send('pwd\n')
send('half-typed\x03'); send('echo after-prompt-ctrl-c\n')
send('sleep 30\n', 'sleep 30\r\n'); time.sleep(1.5); send('\x03'); send('echo "still $x"\n')
send('if true\n', PS2); send('then echo multi\n', PS2); send('fi\n')
send('fi\n'); send('echo alive\n')
send('for i in 1 2 3 4 5; do echo o$i; echo e$i >&2; done\n')
os.write(fd, b'exit 7\n')
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors='replace').replace('\r', ''))
print('STATUS', os.waitstatus_to_exitcode(st))
PY
)
like "$out" $'x is 5' "variables persist between commands"
like "$out" "$CODE/sub" "and the cwd"
like "$out" $'\naliased-5' "an alias defined at the prompt expands on the next line (expand_aliases, as interactive bash)"
ok "Ctrl-C at the prompt drops the half-typed line (it never runs)" \
    bash -c '! grep -q "half-typed.*not found" <<<"$1" && grep -q "^after-prompt-ctrl-c$" <<<"$1"' _ "$out"
like "$out" $'still 5' "Ctrl-C stops a sandbox command, not the shell"
like "$out" $'> then echo multi\n> fi\nmulti' "an unfinished command gets PS2"
like "$out" "syntax error near unexpected token .fi'" "a syntax error is reported"
like "$out" $'\nalive\n' "and the shell goes on"
like "$out" $'\no1\ne1\no2\ne2\no3\ne3\no4\ne4\no5\ne5\n' "output and errors reach the terminal in the order written"
like "$out" 'STATUS 7$' "exit N ends with N"
[ "$tap_failed" = 0 ] || diag "what the terminal showed:" "$out"
done_testing
