#!/bin/bash
# The sbxsh Python module (lib/python/sbxsh), tested with Debian's python3 and its unittest
# (tests/libsbxsh/test_sbxsh.py) against the built libsbxsh and sbxsh in a session of its own:
# one TAP line per Python test, then unittest's verdict.
. "$(dirname "$0")/../integration/lib.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3
[ -x "$py" ] || skip_all "Debian's python3 is not installed (make deps)"
lib=$SBXSH_BUILD/libsbxsh.so.1
[ -e "$lib" ] || skip_all "$lib is not built (make)"
why=$(runtime_usable "${AGENT_SANDBOX_LOCAL_RUNTIME:-runsc}") || skip_all "$why"

setup_session "pytest-$$"
mkdir -p "$CODE/sub"
echo 'read me' >"$CODE/README"
git -C "$CODE" init -q
git -C "$CODE" -c user.name=T -c user.email=t@example.com add README
git -C "$CODE" -c user.name=T -c user.email=t@example.com commit -qm one

# the module as the tree has it; the library and sbxsh as built. The variables say where
# (the test's own SBXSH_TEST_*; SBXSH_LIBRARY is the module's, docs/library.md).
# A library built with ASan (make check-asan) needs its runtime loaded first: python3 is
# not built with it. Python's own allocations are not the library's to check for leaks.
preload=
if asan=$(ldd "$lib" | awk '/libasan/ { print $3 }') && [ -n "$asan" ]; then
    preload=$asan
    export ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
fi
log=$SBX_TEST_TMP/unittest.log
(cd "$SBX_TEST_TMP" &&
 LD_PRELOAD=$preload PYTHONPATH=$top/lib/python:$top/tests/libsbxsh SBXSH_LIBRARY=$lib \
 SBXSH_TEST_PROGRAM=$SBXSH_BIN/sbxsh SBXSH_TEST_CODE=$CODE SBXSH_TEST_SESSION=$AGENT_SANDBOX_SESSION \
 "$py" -m unittest -v test_sbxsh) >"$log" 2>&1
rc=$?

n=0
while IFS= read -r line; do
    if [[ $line =~ ^(test_[a-z_0-9]+)\ \((test_sbxsh\.[A-Za-z]+)\.[a-z_0-9]+\)(.*)\ \.\.\.\ (ok|FAIL|ERROR|skipped.*)$ ]]; then
        n=$((n + 1))
        case ${BASH_REMATCH[4]} in
        ok) ok "${BASH_REMATCH[2]}: ${BASH_REMATCH[1]}" true ;;
        skipped*) skip "${BASH_REMATCH[2]}: ${BASH_REMATCH[1]}: ${BASH_REMATCH[4]}" ;;
        *) ok "${BASH_REMATCH[2]}: ${BASH_REMATCH[1]}" false ;;
        esac
    fi
done <"$log"
ok "unittest ran the module's tests ($n)" test "$n" -ge 14
is "$rc" 0 "unittest passed" || diag "$(cat "$log")"
done_testing
