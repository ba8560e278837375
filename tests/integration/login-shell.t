#!/bin/bash
# Issue 13, sbxsh as a login shell: `make install` says how to list sbxsh in /etc/shells,
# `make install-shell` adds it once (to $DESTDIR/etc/shells with DESTDIR, leaving the real
# one alone), and a throwaway user whose login shell is the installed sbxsh lands in a
# working sbxsh through `su - USER -c` and an interactive `su - USER` at a terminal (tmux):
# its prompt, a sandbox command, `exit`; on the default runtime (nothing set: runsc, rootless
# for that user), then on bubblewrap. /etc/shells is put back exactly, the user removed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

TOP=$(cd "$(dirname "$0")/../.." && pwd -P)
[ "$(id -u)" = 0 ] || skip_all "needs root: it adds a user and edits /etc/shells (CI runs as root)"
for c in useradd userdel su pgrep make; do
    command -v "$c" >/dev/null || skip_all "$c is not installed"
done
tmux_usable || skip_all "$TMUX_WHY"
[ -w /etc/shells ] || skip_all "/etc/shells is not writable here"

# The installed tree must be reachable by the new user: the scratch directory is 0700.
chmod 755 "$SBX_TEST_TMP"
PREFIX=$SBX_TEST_TMP/prefix
USER_NAME=sbxlogin$$
SU=(su -)
USER_HOME=$SBX_TEST_TMP/home-$USER_NAME
SAVED=$SBX_TEST_TMP/shells.saved
cp -p /etc/shells "$SAVED" || bail_out "cannot save /etc/shells"

cleanup_user() {
    tmux_stop
    if id "$USER_NAME" >/dev/null 2>&1; then
        # its sessions: released through its own login shell (a host `sbx release`), then
        # whatever is left of them, by pid
        timeout 60 "${SU[@]}" "$USER_NAME" -c 'sbx release' >/dev/null 2>&1
        end=$((SECONDS + 30))
        while pgrep -u "$USER_NAME" >/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
        for pid in $(pgrep -u "$USER_NAME"); do kill -9 "$pid" 2>/dev/null; done
        userdel "$USER_NAME" 2>/dev/null
    fi
    [ -f "$SAVED" ] && cat "$SAVED" > /etc/shells
}
trap 'cleanup_user; tap_cleanup' EXIT

# ---- make install, make install-shell ------------------------------------------------------
# A build of its own (BUILD, BIN under the scratch directory): `make install PREFIX=...`
# compiles where the agent goes into the programs (session/session.mk), and must not relink
# the programs the other tests are running.
MK=(env -u MAKEFLAGS -u MFLAGS make -s -j2 -C "$TOP" BUILD="$SBX_TEST_TMP/build" BIN="$SBX_TEST_TMP/bin")

out=$("${MK[@]}" install PREFIX="$PREFIX" 2>&1)
is "$?" 0 "make install PREFIX=..."
ok "...installs sbxsh and sbx" test -x "$PREFIX/bin/sbxsh" -a -x "$PREFIX/bin/sbx"
like "$out" "To make sbxsh a login shell \(chsh -s, su -, login\), list it in /etc/shells: make install-shell PREFIX=$PREFIX" \
    "...and says how to list it in /etc/shells"
ok "...without touching /etc/shells" cmp -s /etc/shells "$SAVED"

out=$("${MK[@]}" install-shell PREFIX="$PREFIX" DESTDIR="$SBX_TEST_TMP/dest" 2>&1)
is "$(cat "$SBX_TEST_TMP/dest/etc/shells" 2>/dev/null)" "$PREFIX/bin/sbxsh" \
    "make install-shell DESTDIR=D: D/etc/shells gets the line"
ok "...and the real /etc/shells is left alone" cmp -s /etc/shells "$SAVED"

out=$("${MK[@]}" install-shell PREFIX="$PREFIX" 2>&1)
is "$out" "added $PREFIX/bin/sbxsh to /etc/shells" "make install-shell adds \$(BINDIR)/sbxsh"
out=$("${MK[@]}" install-shell PREFIX="$PREFIX" 2>&1)
is "$out" "$PREFIX/bin/sbxsh is in /etc/shells already" "...once: a second run adds nothing"
is "$(grep -cxF "$PREFIX/bin/sbxsh" /etc/shells)" 1 "...the line is there once"
is "$(head -n "$(wc -l <"$SAVED")" /etc/shells)" "$(cat "$SAVED")" "...after the lines that were there"
out=$("${MK[@]}" install PREFIX="$PREFIX" 2>&1)
unlike "$out" "To make sbxsh a login shell" "make install says nothing more once it is listed"

# ---- a login through su ---------------------------------------------------------------------
useradd -m -d "$USER_HOME" -s "$PREFIX/bin/sbxsh" "$USER_NAME" || bail_out "useradd failed"
is "$(getent passwd "$USER_NAME" | cut -d: -f7)" "$PREFIX/bin/sbxsh" "a user whose login shell is sbxsh"

# as_login TAG LABEL: the user's login through `su -` (SU), with `-c` and then interactively at
# a terminal; its sessions are released after, so the next run claims afresh.
as_login() {
    local label=$2 failed_before=$tap_failed probe=/tmp/sbx-login-probe-$1-$$ out st
    out=$(timeout 120 "${SU[@]}" "$USER_NAME" -c "echo \"\$0\"; echo in-sandbox > $probe && cat $probe; echo \"home=\$HOME\"; sbx status | grep '^sandbox:'" 2>&1)
    st=$?
    is "$st" 0 "$label: su - USER -c CMD: runs"
    is "$(sed -n 1p <<<"$out")" "-sbxsh" "$label: ...as a login shell (\$0 is -sbxsh, as su gives a login shell)"
    is "$(sed -n 2p <<<"$out")" "in-sandbox" "$label: ...the command ran"
    ok "$label: ...in the sandbox (its /tmp is private: nothing on the host's)" test ! -e "$probe"
    is "$(sed -n 3p <<<"$out")" "home=$USER_HOME" "$label: ...with the user's HOME"
    like "$(sed -n 4p <<<"$out")" "^sandbox: +$want " "$label: ...on $want (sbx status)"
    [ "$tap_failed" = "$failed_before" ] ||
        diag "the output:" "$out" "the user's sandbox.log:" \
            "$(tail -n 20 "$USER_HOME"/.local/state/sbxsh/*/sandbox.log 2>&1)"

    tmux_start 120 30
    trap 'cleanup_user; tap_cleanup' EXIT     # tmux_start set its own
    tmux_type "${SU[*]} $USER_NAME"; tmux_keys Enter
    ok "$label: an interactive su - USER: sbxsh's prompt, in ~" tmux_wait_last '^\[sbx:[^]]+\] ~\$ ?$' 120
    tmux_type "echo hi-\$((2+3)) > $probe.2; cat $probe.2"; tmux_keys Enter
    ok "$label: ...a sandbox command runs" tmux_wait $'\nhi-5\n'
    tmux_wait_last '^\[sbx:[^]]+\] ~\$ ?$'
    ok "$label: ...in the sandbox" test ! -e "$probe.2"
    tmux_type 'sbx status | grep -E "^(session|sandbox):"'; tmux_keys Enter
    ok "$label: ...sbx status there runs on the host (the sbx installed beside that sbxsh), on $want" \
        tmux_wait $'\nsession: +[^\n]+\nsandbox: +'"$want "
    tmux_type 'exit'; tmux_keys Enter
    ok "$label: ...and exit ends it: back at the host's prompt" tmux_wait_last '^host\$ ?$'
    [ "$tap_failed" = "$failed_before" ] || diag "$label: the screen at the end:" "$(tmux_screen)"
    tmux_stop
    timeout 60 "${SU[@]}" "$USER_NAME" -c 'sbx release' >/dev/null 2>&1
}

# The default runtime, what a person gets: nothing set, so auto, runsc when it is installed
# (rootless for this user: uid 0 inside, its state under the user's ~/.local/state).
SU=(su -)
if command -v runsc >/dev/null; then want=runsc; else want=bwrap; fi
as_login default "default ($want)"
# bubblewrap too, when the user can make namespaces: passed through su's fresh environment
# with -w, as a person would set it in the profile.
if [ "$want" = bwrap ]; then
    : # the default was bubblewrap already
elif su "$USER_NAME" -s /bin/sh -c 'bwrap --ro-bind / / --unshare-user --unshare-pid true' \
        >/dev/null 2>&1; then
    export AGENT_SANDBOX_LOCAL_RUNTIME=bwrap
    SU=(su - -w AGENT_SANDBOX_LOCAL_RUNTIME)
    want=bwrap
    as_login bwrap bwrap
    unset AGENT_SANDBOX_LOCAL_RUNTIME
    SU=(su -)
else
    skip "bwrap: the user cannot make namespaces with bubblewrap here"
fi

cleanup_user
ok "the user is gone" bash -c "! id $USER_NAME >/dev/null 2>&1"
ok "/etc/shells is exactly as it was" cmp /etc/shells "$SAVED"
done_testing
