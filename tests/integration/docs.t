#!/bin/bash
# The README, --help, the man pages and the completions stay in step with the
# code: every option and command the programs accept is documented and
# completed; make install and uninstall put and take away every file.
. "$(dirname "$0")/../lib/tap.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
comp_bash=$top/completions/sbxsh.bash
comp_zsh=$top/completions/_sbxsh
comp_fish=$top/completions/sbxsh.fish

# sbxsh's own long options, as its --help lists them.
help=$("$SBXSH" --help)
opts=$(grep -oE -- '--(ast|route|json|session|help|version|login|norc|noprofile|posix)\b' <<<"$help" | sort -u)
is "$(wc -l <<<"$opts")" 10 "sbxsh --help lists its long options"
for o in $opts; do
    ok "sbxsh $o: in the man page" grep -q -- "${o//-/\\\\-}" "$top/doc/sbxsh.1"
    ok "sbxsh $o: in the bash completion" grep -q -- "$o\\b" "$comp_bash"
    ok "sbxsh $o: in the zsh completion" grep -q -- "'$o\\[" "$comp_zsh"
    ok "sbxsh $o: in the fish completion" grep -q -- "-l ${o#--}\\b" "$comp_fish"
done
# shellcheck disable=SC2013 # the matches are variable names, one word each
for v in $(grep -oE 'AGENT_SANDBOX_[A-Z_]+' <<<"$help" | sort -u); do
    ok "sbxsh --help's $v: in the man page" grep -q "$v" "$top/doc/sbxsh.1"
done

# sbx's commands and each command's options, as their --help texts list them.
cmds=$("$SBX" --help | sed -n 's/^  \([a-z-]\+\) .*/\1/p; s/^  \([a-z-]\+\)$/\1/p' | sort -u)
# shellcheck disable=SC2086,SC2116 # echo joins the names with single spaces
is "$(echo $cmds)" "doctor exec log ls mcp policy release render-pool status undo" "sbx --help lists its commands"
for c in $cmds; do
    ok "sbx $c: in the man page" grep -q "^\\.B $c\$" "$top/doc/sbx.1"
    ok "sbx $c: in the bash completion" grep -q "\\b$c\\b" "$comp_bash"
    ok "sbx $c: in the zsh completion" grep -q "'$c:" "$comp_zsh"
    ok "sbx $c: in the fish completion" grep -q -- "-a $c " "$comp_fish"
    for o in $("$SBX" "$c" --help | grep -oE -- '--[a-z]+' | sort -u); do
        [ "$o" = --help ] && continue
        ok "sbx $c $o: in the man page" grep -q -- "${o//-/\\\\-}" "$top/doc/sbx.1"
        ok "sbx $c $o: in the bash completion" \
            grep -q -- "$o\\b" <(sed -n "/^    $c)/,/;;/p" "$comp_bash")
        ok "sbx $c $o: in the fish completion" grep -qE -- "from [a-z ]*${c}[a-z ]*\" -l ${o#--}\\b" "$comp_fish"
    done
done

# The bash completion works in bash.
out=$(bash -c '. "$1"; COMP_WORDS=(sbxsh --ro); COMP_CWORD=1; _sbxsh; echo "${COMPREPLY[*]}"' _ "$comp_bash" 2>&1)
is "$out" "--route" "bash completion completes sbxsh --ro"
out=$(bash -c '. "$1"; COMP_WORDS=(sbx rel); COMP_CWORD=1; _sbx; echo "${COMPREPLY[*]}"' _ "$comp_bash" 2>&1)
is "$out" "release" "bash completion completes sbx rel"
out=$(bash -c '. "$1"; COMP_WORDS=(sbxsh -o pipe); COMP_CWORD=2; _sbxsh; echo "${COMPREPLY[*]}"' _ "$comp_bash" 2>&1)
is "$out" "pipefail" "bash completion completes -o names"
if command -v zsh >/dev/null; then
    ok "zsh completion parses" zsh -n "$comp_zsh"
else
    skip "zsh not installed: the zsh completion is not parsed"
fi
if command -v fish >/dev/null; then
    ok "fish completion parses" fish -n "$comp_fish"
else
    skip "fish not installed: the fish completion is not parsed"
fi

# The man pages render without warnings.
for m in "$top"/doc/*.[135]; do
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
    is "$out" "" "$(basename "$m") renders without warnings"
done

# The README's first lines give the two commands CI and newcomers run.
is "$(sed -n 3p "$top/README.md")" "    make deps && make && ./sbxsh -c 'cat /proc/version'" \
   "README line 3: set up and run a command in a sandbox"
is "$(sed -n 4p "$top/README.md")" "    make deps && make check" "README line 4: set up and test"
ok ".ci/run runs the README's test command" grep -q 'make deps && make check' "$top/.ci/run"
ok ".ci/run then builds everything with clang (make check-clang)" grep -q '&& make check-clang"$' "$top/.ci/run"

# make install / uninstall with DESTDIR, from a build of its own: a new PREFIX recompiles
# where the agent is looked for (session/session.mk), which in the shared build would relink
# ./sbxsh under the tests running meanwhile ("sbxsh: Permission denied" in git-history.t).
# The build of its own starts as a copy of make check's own build when that is the default
# one (same flags; times kept), so that only what PREFIX changes is compiled again and the
# programs linked (half a minute of CPU less); another (build-asan's flags) is not reused.
dest=$SBX_TEST_TMP/dest
if [ -n "${SBXSH_BUILD:-}" ] && [ "$(cd "$SBXSH_BUILD" 2>/dev/null && pwd -P)" = "$(cd "$top" && pwd -P)/build" ]; then
    cp -a "$SBXSH_BUILD" "$SBX_TEST_TMP/build"
fi
mk=(env -u MAKEFLAGS -u MFLAGS make -s -j2 -C "$top" BUILD="$SBX_TEST_TMP/build" BIN="$SBX_TEST_TMP/bin")
if "${mk[@]}" install DESTDIR="$dest" PREFIX=/usr >"$SBX_TEST_TMP/install.log" 2>&1; then
    for f in usr/bin/sbxsh usr/bin/sbx usr/lib/sbxsh/sbx-agent usr/lib/sbxsh/sbx-agent-static \
             usr/lib/sbxsh/sbx-mcp \
             usr/share/man/man1/sbxsh.1 usr/share/man/man1/sbx.1 usr/share/man/man5/sbxsh-policy.5 \
             usr/share/bash-completion/completions/sbxsh usr/share/zsh/vendor-completions/_sbxsh \
             usr/share/fish/vendor_completions.d/sbx.fish \
             usr/lib/libsbxsh.so.1 usr/lib/libsbxsh.so usr/lib/libsbxsh.a usr/include/sbxsh.h \
             usr/lib/pkgconfig/sbxsh.pc usr/share/man/man3/libsbxsh.3 \
             usr/lib/python3/dist-packages/sbxsh/__init__.py; do
        ok "make install puts $f" test -e "$dest/$f"
    done
    ok "the installed sbx looks for its agent under PREFIX" grep -q /usr/lib/sbxsh "$dest/usr/bin/sbx"
    ok "the installed libsbxsh runs the installed sbxsh" grep -q /usr/bin/sbxsh "$dest/usr/lib/libsbxsh.so.1"
    ok "the installed Python module loads the installed library" \
       grep -qx '_LIBDIR = "/usr/lib"' "$dest/usr/lib/python3/dist-packages/sbxsh/__init__.py"
    "${mk[@]}" uninstall DESTDIR="$dest" PREFIX=/usr >/dev/null 2>&1
    is "$(find "$dest" -type f -o -type l)" "" "make uninstall takes every file away"
else
    tap_result 1 "make install DESTDIR=... PREFIX=/usr"
    diag "$(tail -5 "$SBX_TEST_TMP/install.log")"
fi
done_testing
