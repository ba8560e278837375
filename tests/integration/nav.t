#!/bin/bash
# shellcheck disable=SC2088 # a prompt's ~ is matched as the text it shows
# Issue 21, a login shell and prompt that navigate like bash, at a real terminal (tmux), on
# both runtimes: from ~, `cd code` (a plain directory) runs on the host and the scratch
# sandbox gets a push-only view of it (cli/view.c), so `ls`, `cat` and Tab see what bash
# would; `cd myrepo` moves into the project's session; `cd ..` out of it lands in the view
# again (ls, Tab); `cd -` goes back into the project, a bare `cd` home. A hidden directory (~/.ssh) never
# reaches the sandbox, a file written in the view never reaches the host, and Tab offers
# neither a hidden name nor one the sandbox lacks.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

tmux_usable || skip_all "$TMUX_WHY"
command -v git >/dev/null || skip_all "git not installed (make deps)"
runtimes=${SBX_IT_RUNTIMES:-bwrap runsc}

if [ "$(id -u)" = 0 ]; then D='#'; else D='$'; fi

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "navigation on $rt: $why"
        continue
    fi
    setup_home_session "nav-$rt-$$" "$rt"
    mkdir -p "$HOME/code/zz-plain-dir" "$HOME/.ssh" "$HOME/code/.hidden-dir"
    echo 'SECRET-KEY-zq' >"$HOME/.ssh/id_rsa"
    echo 'readme-text-zq' >"$HOME/code/README"
    printf 'a\0b\\%%\x01\x7f'"'"'end\n' >"$HOME/code/bytes.bin"
    head -c 300000 /dev/zero >"$HOME/code/big-file.bin"      # over the 256 KiB cap
    # credentials left in a plain directory: never in a view (by name, or by a key's bytes)
    echo 'SECRET-KEY-zq-ssh' >"$HOME/code/id_ed25519"
    echo 'SECRET-KEY-zq-aws' >"$HOME/code/aws-credentials.txt"
    printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\nSECRET-KEY-zq-pk\n' >"$HOME/code/notes.txt"
    ln -s "$HOME/.ssh" "$HOME/code/keys-link"
    { git init -q "$HOME/code/myrepo-zq" && echo 'repo-file-zq' >"$HOME/code/myrepo-zq/a.txt" &&
        git -C "$HOME/code/myrepo-zq" add . && git -C "$HOME/code/myrepo-zq" commit -qm x; } ||
        bail_out "cannot make the repository"
    cd "$HOME" || bail_out "no home"
    tmux_start 150 40
    trap 'tmux_stop; release_all; tap_cleanup' EXIT
    tmux_type "$SBXSH --norc"; tmux_keys Enter
    tmux_wait_last "~$D ?\$" || bail_out "no sbxsh prompt"

    # Tab from ~: code/ completes (the sandbox has ~'s view), .ssh does not
    tmux_type 'cd co'; tmux_keys Tab
    ok "$rt: cd co<Tab> in ~ completes code/" tmux_wait 'cd code/ ?$'
    tmux_keys C-u
    tmux_type 'cd .ss'; tmux_keys Tab
    tmux_type 'X'
    ok "$rt: cd .ss<Tab>: a hidden name is not offered" tmux_wait 'cd \.ssX *$'
    tmux_keys C-u
    tmux_type 'cd code'; tmux_keys Enter
    tmux_wait_last "~/code$D ?\$"
    tmux_type 'ls -1; cat README; od -An -c bytes.bin | tr -s " "'; tmux_keys Enter
    ok "$rt: cd code, then ls shows the directory's files and repositories (not the big file, the link)" \
        tmux_wait $'\nREADME\nbytes.bin\nmyrepo-zq\nzz-plain-dir\nreadme-text-zq\n'
    ok "$rt: ...and a file's bytes arrive as they are (NUL, backslash, %, \\001, DEL, quote)" \
        tmux_wait ' a \\0 b \\ % 001 177 '"'"' e n d \\n'
    tmux_type 'cat ~/.ssh/id_rsa; ls -a ~; ls -a'; tmux_keys Enter
    ok "$rt: ~/.ssh is not in the sandbox" tmux_wait 'cat: /.*/\.ssh/id_rsa: No such file or directory'
    tmux_wait_last "~/code$D ?\$"
    screen=$(tmux_screen)
    unlike "$screen" 'SECRET-KEY-zq|\.hidden-dir|keys-link|big-file|id_ed25519|aws-credentials|notes\.txt' \
        "$rt: no hidden entry, symlink, file over the cap or credential in the sandbox's view"
    tmux_type 'echo sandbox-wrote >made-in-view.txt; rm README; ls -1'; tmux_keys Enter
    tmux_wait $'\nbytes.bin\nmade-in-view.txt\n'
    tmux_type 'cd my'; tmux_keys Tab
    ok "$rt: cd my<Tab> completes the project" tmux_wait 'cd myrepo-zq/ ?$'
    tmux_keys Enter
    ok "$rt: cd myrepo-zq moves into the project's session" \
        tmux_wait "is in project 'myrepo-zq-[0-9a-f]+'"
    tmux_wait_last "~/code/myrepo-zq$D ?\$"
    tmux_type 'cat a.txt; echo from-project >b.txt'; tmux_keys Enter
    ok "$rt: ...where its files are" tmux_wait $'\nrepo-file-zq\n'
    tmux_type 'cd ..'; tmux_keys Enter
    ok "$rt: cd .. out of the project: back to the scratch session, with a view" \
        tmux_wait "outside every project: its commands run in session 'scratch-[0-9a-f]+'"
    tmux_wait_last "~/code$D ?\$"
    tmux_type 'ls -1 | tr "\n" " "; echo'; tmux_keys Enter
    ok "$rt: ls there: the host's files again, README back, the sandbox's own file kept" \
        tmux_wait $'\nREADME bytes.bin made-in-view.txt myrepo-zq zz-plain-dir \n'
    tmux_type 'cd zz'; tmux_keys Tab
    ok "$rt: Tab after cd .. completes from the view" tmux_wait 'cd zz-plain-dir/ ?$'
    tmux_keys C-u
    tmux_type 'cat keys'; tmux_keys Tab
    tmux_type 'X'
    ok "$rt: Tab does not offer a symlink the view left out" tmux_wait 'cat keysX *$'
    tmux_keys C-u
    tmux_type 'cd -'; tmux_keys Enter
    ok "$rt: cd - goes back into the project (bash prints where)" \
        tmux_wait $'\n'"$HOME/code/myrepo-zq"$'\n'
    tmux_wait_last "~/code/myrepo-zq$D ?\$"
    tmux_type 'pwd; cat a.txt'; tmux_keys Enter
    ok "$rt: ...and its commands run there" tmux_wait $'\n'"$HOME/code/myrepo-zq"$'\nrepo-file-zq\n'
    tmux_type 'cd'; tmux_keys Enter
    ok "$rt: a bare cd from the project goes home, to the scratch session" \
        tmux_wait_last "~$D ?\$"
    tmux_type 'ls -1 | tr "\n" " "; echo; cd ~/code/zz-plain-dir && pwd'; tmux_keys Enter
    ok "$rt: ...whose sandbox has ~'s view; cd ~/DIR goes on the host too" \
        tmux_wait $'\ncode \n'"$HOME/code/zz-plain-dir"$'\n'
    tmux_type 'exit'; tmux_keys Enter
    tmux_wait_last '^host\$ ?$'

    ok "$rt: nothing written in the view came back to the host" test ! -e "$HOME/code/made-in-view.txt"
    is "$(cat "$HOME/code/README")" readme-text-zq "$rt: ...nor its rm"
    is "$(cat "$HOME/code/myrepo-zq/b.txt" 2>&1)" from-project "$rt: the project's file did come back"
    tmux_stop

    # A directory of many entries: the view is the first 1000 by name, and the prompt says so
    mkdir -p "$HOME/many-zq"
    for i in $(seq -w 1 1200); do : >"$HOME/many-zq/f$i"; done
    out=$(printf '%s\n' 'cd many-zq' 'ls | wc -l; ls | tail -n 1' | "$SBXSH" -i 2>&1)
    like "$out" "many-zq: the sandbox sees 1000 of its entries, not 200 more" \
        "$rt: a directory of 1200 files: the view says it holds 1000"
    like "$out" $'\n1000\nf1000\n' "$rt: ...and the sandbox has the first 1000 by name"
    # cd - on the host only with the OLDPWD the host knows: one the sandbox's shell holds
    # instead (assigned there) keeps the cd in the sandbox, which moves nowhere
    out=$(printf '%s\n' 'cd code' "OLDPWD=$HOME/code/myrepo-zq" 'cd -' \
        'sbx status | grep "^session:"; ls' | "$SBXSH" -i 2>&1)
    unlike "$out" 'is in project' "$rt: cd - to an OLDPWD the sandbox's shell holds: no move"
    like "$out" $'\nsession: +scratch-[0-9a-f]+\n' "$rt: ...the scratch session still runs it"
    unlike "$out" 'a\.txt' "$rt: ...and the project's files are not there"
    # not at a prompt: sbxsh -c keeps its cd into a plain directory in the sandbox (no view)
    is "$("$SBXSH" --route -c 'cd code' | cut -f1)" sandbox \
        "$rt: sbxsh -c 'cd code' from ~: the sandbox's cd, as before"
    release_all
done
done_testing
