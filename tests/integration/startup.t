#!/bin/bash
# Issue 13, startup files as bash reads them: an interactive sbxsh runs ~/.sbxshrc (a host
# file) in the session's shell, then the sandbox's own ~/.bashrc; --norc skips both,
# --rcfile FILE replaces both; a login shell (argv[0] starting with '-', or -l at a
# terminal) takes the environment of the host's profile files (so AGENT_SANDBOX_* set there
# apply), its sandbox bash is a login bash, and it reads no sandbox ~/.bashrc; --noprofile
# skips the profile; `sbxsh -l -c` (an agent's call) runs no host profile, and its sandbox
# bash reads the user's profile files, which reach the sandbox's HOME filtered of secrets,
# as does the user's ~/.bashrc, which an interactive sbxsh then sources there. Driven with
# -i on a pipe: none of this depends on the terminal.
. "$(dirname "$0")/lib.sh"

if ! why=$(runtime_usable bwrap); then
    skip_all "$why"
fi
setup_session "startup-$$" bwrap
cd "$CODE" || bail_out "no code dir"
export XDG_STATE_HOME=$SBX_TEST_TMP/xdg-state

# interactive: run LINES as typed, the rest of the arguments sbxsh's
inter() { local lines=$1; shift; printf '%s\n' "$lines" | "$SBXSH" "$@" 2>&1; }

# the sandbox's own ~/.bashrc (its private home), written from inside
"$SBXSH" -c 'echo "order=\"\$order sandbox-bashrc\"" > ~/.bashrc' ||
    bail_out "cannot write the sandbox's ~/.bashrc"
ok "control: the host has no such ~/.bashrc" test ! -e "$HOME/.bashrc"
printf '%s\n' 'PS1="rc> "' 'greet() { echo "hi $1"; }' 'order=sbxshrc' >"$HOME/.sbxshrc"
printf '%s\n' 'order=rcfile' >"$SBX_TEST_TMP/other-rc"

out=$(inter $'greet you\necho "order=$order"' -i)
# shellcheck disable=SC2088 # "~/" in a test's name is the text the person reads, not a path
like "$out" $'\nhi you\n' "~/.sbxshrc's function is there at the prompt"
like "$out" 'rc> ' "...and its PS1"
# shellcheck disable=SC2088 # as above
like "$out" $'\norder=sbxshrc sandbox-bashrc\n' "~/.sbxshrc runs first, then the sandbox's ~/.bashrc"
out=$(inter 'echo "order=$order."' --norc -i)
like "$out" $'\norder=.\n' "--norc: neither"
unlike "$out" 'rc> ' "...so the default prompt"
out=$(inter 'echo "order=$order."' --rcfile "$SBX_TEST_TMP/other-rc" -i)
like "$out" $'\norder=rcfile.\n' "--rcfile FILE instead of both"
rm "$HOME/.sbxshrc"
out=$(inter 'echo "order=$order."' -i)
like "$out" $'\norder= sandbox-bashrc.\n' "no ~/.sbxshrc: the sandbox's ~/.bashrc still runs (when its shell starts)"
printf 'echo "oops' >"$HOME/.sbxshrc"
out=$(inter 'echo still-here' -i)
# shellcheck disable=SC2088 # as above: the message names the file as the person wrote it
like "$out" '~/.sbxshrc: line [0-9]+: unexpected EOF' "a syntax error in ~/.sbxshrc is reported with its name"
like "$out" $'\nstill-here\n' "...and the shell goes on"
rm "$HOME/.sbxshrc"

# a login shell: the host's ~/.profile, run by the host's bash; what it exports is sbxsh's
printf '%s\n' 'export FROM_PROFILE=yes AGENT_SANDBOX_FORWARD_ENV=FROM_PROFILE' 'echo profile-ran' \
    >"$HOME/.profile"
printf '%s\n' 'order=sbxshrc' >"$HOME/.sbxshrc"
out=$(printf '%s\n' 'echo "fp=$FROM_PROFILE order=$order."' 'shopt -q login_shell && echo sandbox-login' |
      (exec -a -sbxsh "$SBXSH" -i) 2>&1)
like "$out" 'profile-ran' "argv[0] -sbxsh: the host's ~/.profile runs"
like "$out" $'\nfp=yes order=sbxshrc.\n' "...its environment (and AGENT_SANDBOX_FORWARD_ENV) applies; ~/.sbxshrc runs, no sandbox ~/.bashrc"
like "$out" $'\nsandbox-login\n' "...and the sandbox's bash is a login shell"
out=$(printf '%s\n' 'echo "fp=$FROM_PROFILE."' | "$SBXSH" --login --noprofile -i 2>&1)
unlike "$out" 'profile-ran' "--noprofile: no profile"
like "$out" $'\nfp=.\n' "...nor its environment"
# shellcheck disable=SC2016 # run by the profile, on whichever side
printf '%s\n' 'export FROM_PROFILE=yes' 'echo "profile-ran-on-${HOST_MARK:-the-sandbox}"' >"$HOME/.profile"
out=$(HOST_MARK=the-host "$SBXSH" -l -c 'echo "fp=$FROM_PROFILE."' 2>&1)
is "$out" $'profile-ran-on-the-sandbox\nfp=yes.' \
   "sbxsh -l -c (an agent's call): no host profile; the sandbox's login bash reads the user's, as bash -l -c does"

# the user's ~/.bashrc reaches the sandbox's HOME (filtered): an interactive sbxsh sources it
rm -f "$HOME/.profile" "$HOME/.sbxshrc"
printf '%s\n' 'hostrc_fn() { echo from-the-host-bashrc; }' 'export API_TOKEN=s3cr3t-value' >"$HOME/.bashrc"
out=$(printf '%s\n' 'hostrc_fn; echo "[$API_TOKEN]"' | "$SBXSH" -i 2>&1)
like "$out" $'\nfrom-the-host-bashrc\n\\[\\]\n' \
     "an interactive sbxsh sources the user's ~/.bashrc in the sandbox, without its secret's value"
out=$("$SBXSH" -c 'cat ~/.bashrc' 2>&1)
unlike "$out" 's3cr3t' "...which is not in the sandbox's copy"
rm -f "$HOME/.bashrc"
done_testing
