#!/bin/bash
# Issue 8, item 2: everything a host part prints to a terminal passes the
# same filter as the sandbox's output. Through a real pty (tests/local/ptyrun.py):
# host printf and echo with OSC 52 (the clipboard), a title (OSC 0) and a
# screen clear, and host git printing a file name the sandbox chose
# (`Auto-merging NAME` of `git pull --no-rebase --no-edit . x`) reach the
# terminal without those sequences, while SGR colours, \r and text still do.
# These lines run on the host only, so no sandbox is started.
. "$(dirname "$0")/lib.sh"

PTYRUN=$(cd "$(dirname "$0")/../local" && pwd)/ptyrun.py
command -v python3 >/dev/null || skip_all "python3 not installed (ptyrun.py runs commands on a pty)"
command -v git >/dev/null || skip_all "git not installed (make deps)"
python3 -c 'import pty' 2>/dev/null || skip_all "python3 has no pty module"

setup_session "term-$$"
cd "$CODE" || bail_out "no code dir"
export GIT_CONFIG_NOSYSTEM=1
printf '[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n' >"$HOME/.gitconfig"
git init -q . || bail_out "git init"

# on_pty NAME LINE: runs `sbxsh -c LINE` on a pty; the bytes the terminal got, as hex
on_pty() {
    timeout 120 python3 "$PTYRUN" -- "$SBXSH" -c "$2" >"$SBX_TEST_TMP/$1.raw" 2>&1
    echo $? >"$SBX_TEST_TMP/$1.rc"
    od -An -v -tx1 "$SBX_TEST_TMP/$1.raw" | tr -d ' \n'
}
has() { case $1 in *"$2"*) return 0 ;; esac; return 1; }
# shellcheck disable=SC2034 # read inside the eval strings below
ESC_OSC52=1b5d3532     # ESC ] 5 2
# shellcheck disable=SC2034 # read inside the eval strings below
ESC_OSC0=1b5d303b      # ESC ] 0 ;
# shellcheck disable=SC2034 # read inside the eval strings below
ESC_CLEAR=1b5b324a     # ESC [ 2 J
SGR_RED=1b5b33316d     # ESC [ 3 1 m

is "$("$SBXSH" --route -c "printf 'x'" | cut -f1)" host "printf runs on the host"

hex=$(on_pty printf "printf 'a\\033]52;c;R0lUUFdO\\007b\\033]0;TITLE\\007c\\033[31mred\\033[0m\\r\\n'")
is "$(cat "$SBX_TEST_TMP/printf.rc")" 0 "host printf on a pty: status 0"
ok "host printf: no OSC 52 reaches the terminal" eval '! has "$hex" $ESC_OSC52'
ok "host printf: no title (OSC 0) reaches the terminal" eval '! has "$hex" $ESC_OSC0'
ok "host printf: the SGR colour still does" has "$hex" "$SGR_RED"
ok "host printf: and the text around them (a b c, then red)" has "$hex" "616263${SGR_RED}726564"

hex=$(on_pty echo "echo -e 'x\\e[2Jy\\e]52;c;R0lUUFdO\\ay' >&2")
ok "host echo -e to stderr: no screen clear reaches the terminal" eval '! has "$hex" $ESC_CLEAR'
ok "host echo -e: no OSC 52 either" eval '! has "$hex" $ESC_OSC52'
ok "host echo -e: the text does" grep -q 'xyy' "$SBX_TEST_TMP/echo.raw"

# Output order across stdout and stderr on one terminal is kept (one pipe for both).
hex=$(on_pty order "echo one; echo two >&2; echo three")
is "$(tr -d '\r' <"$SBX_TEST_TMP/order.raw" | tr '\n' ,)" "one,two,three," \
    "host parts' stdout and stderr keep their order on one terminal"

# A file name chosen like the sandbox chose it: two branches change it, and
# the host's `git pull . x` merges them, printing `Auto-merging NAME`.
name=$(printf 'a\033]0;TITLE\a\033]52;c;R0lUUFdO\ab')
# shellcheck disable=SC2015 # any failure of the chain bails out
printf '1\n2\n3\n4\n5\n' >"$name" && git add -A && git commit -qm base &&
    git checkout -qb x && printf '1\nX\n3\n4\n5\n' >"$name" && git commit -qam x &&
    git checkout -q main && printf '1\n2\n3\n4\nY\n' >"$name" && git commit -qam y ||
    bail_out "cannot make the branches"
like "$("$SBXSH" --route -c 'git pull --no-rebase --no-edit . x')" '^host' \
    "git pull . x runs on the host (. is the repository itself)"
hex=$(on_pty pull 'git pull --no-rebase --no-edit . x')
is "$(cat "$SBX_TEST_TMP/pull.rc")" 0 "the host's git pull merged"
ok "git printed the file name" grep -q 'Auto-merging a' "$SBX_TEST_TMP/pull.raw"
ok "host git: no OSC 52 reaches the terminal" eval '! has "$hex" $ESC_OSC52'
ok "host git: no title (OSC 0) reaches the terminal" eval '! has "$hex" $ESC_OSC0'
is "$(git log -1 --format=%s)" "Merge branch 'x'" "the merge is git's own (. passed as git reads it)"

# Not a terminal: bytes pass untouched (a pipe or a file is not filtered).
is "$("$SBXSH" -c "printf 'a\\033]52;c;x\\007b'" | od -An -tx1 | tr -d ' \n')" \
    "611b5d35323b633b780762" "to a pipe, host output is unchanged"
end_session
done_testing
