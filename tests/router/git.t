#!/bin/bash
# Real git through the host runner: push, fetch, pull, clone and ls-remote
# against a bare repository served by `git daemon` on loopback, and a
# the repository itself as a local remote (file://, `.`). Checks exit statuses, pipes
# into filters, >/dev/null, that a planted `git` never runs, and that hooks
# and remotes the sandbox could have written are not used.
. "$(dirname "$0")/../lib/tap.sh"

RUN=${SBXSH_BUILD:-$SBXSH_BIN/build}/tests/router/route-run
[ -x "$RUN" ] || bail_out "route-run not built ($RUN)"
command -v git >/dev/null || skip_all "git not installed (make deps)"
[ -x "$(git --exec-path)/git-daemon" ] || skip_all "git daemon not available (Debian's git package has it)"

T=$SBX_TEST_TMP
export HOME=$T/home GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com \
       GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
mkdir -p "$HOME" "$T/srv"
git config --global init.defaultBranch main
git config --global protocol.file.allow always

# The served repository, with one commit.
git init -q --bare "$T/srv/repo.git"
git init -q "$T/seed" && (cd "$T/seed" && echo one > f && git add f && git commit -qm one &&
    git push -q "$T/srv/repo.git" main)

# git daemon on a free loopback port.
daemon_pid=
for port in $(shuf -i 20000-60000 -n 20); do
    git daemon --reuseaddr --listen=127.0.0.1 "--port=$port" --base-path="$T/srv" --export-all \
        --enable=receive-pack --informative-errors "$T/srv" 2>"$T/daemon.log" &
    daemon_pid=$!
    for _ in $(seq 50); do
        git ls-remote "git://127.0.0.1:$port/repo.git" >/dev/null 2>&1 && break 2
        kill -0 $daemon_pid 2>/dev/null || break
        sleep 0.1
    done
    kill $daemon_pid 2>/dev/null; wait $daemon_pid 2>/dev/null; daemon_pid=
done
[ -n "$daemon_pid" ] || skip_all "git daemon did not start on loopback"
trap 'kill $daemon_pid 2>/dev/null; wait $daemon_pid 2>/dev/null; tap_cleanup' EXIT
URL=git://127.0.0.1:$port/repo.git

# The code directory: a clone, with a nested repository to fetch with file://.
git clone -q "$URL" "$T/code"
CODE=$(cd "$T/code" && pwd -P)
mkdir -p "$CODE/sub"
git init -q "$CODE/vendor/lib" && (cd "$CODE/vendor/lib" && echo lib > l && git add l &&
    git commit -qm lib)
export AGENT_SANDBOX_CODE_DIRS=$CODE
cd "$CODE" || bail_out "cannot enter $CODE"

run() { "$RUN" "$@"; }

# ---- ls-remote -------------------------------------------------------------------
out=$(run 'git ls-remote origin'); st=$?
is "$st" 0 "ls-remote origin exits 0"
like "$out" "refs/heads/main" "ls-remote origin lists main"
is "$(run 'git ls-remote --heads origin | grep -c main')" 1 "ls-remote | grep -c counts the branch"
is "$(run 'git ls-remote origin | wc -l')" "$(git ls-remote origin | wc -l)" "ls-remote | wc -l as git"
run 'git ls-remote --exit-code origin refs/heads/nope' >/dev/null; is $? 2 "ls-remote --exit-code: 2 for no match"
run '! git ls-remote --exit-code origin refs/heads/nope' >/dev/null; is $? 0 "! negates a host status"
out=$(run 'git ls-remote git://127.0.0.1:1/nope.git 2>/dev/null'); st=$?
is "$st" 128 "ls-remote to a closed port: 128"
is "$out" "" "2>/dev/null hides git's error"
out=$(run 'git ls-remote git://127.0.0.1:1/nope.git 2>&1 | head -1'); st=$?
is "$st" 0 "status of the last command of a pipeline"
like "$out" "fatal" "2>&1 | head shows git's error"
run -o pipefail 'git ls-remote git://127.0.0.1:1/nope.git 2>/dev/null | wc -l' >/dev/null
is $? 128 "pipefail takes git's status"
out=$(run 'git ls-remote file://'"$CODE"'/.git | cut -f2'); st=$?
is "$st" 0 "ls-remote file:// of the repository itself"
like "$out" "refs/heads/main" "its refs"
out=$(run 'git ls-remote file://'"$CODE"'/vendor/lib' 2>&1); st=$?
is "$st" 125 "ls-remote file:// of another repository inside the code directory: sandbox"
like "$out" "other than this one" "with the reason"

# ---- fetch ---------------------------------------------------------------------------
(cd "$T/seed" && echo two >> f && git commit -qam two && git push -q "$URL" main)
out=$(run 'git fetch origin >/dev/null' 2>/dev/null); st=$?
is "$st" 0 "fetch origin >/dev/null exits 0"
is "$out" "" ">/dev/null: no output"
is "$(git rev-parse origin/main)" "$(git -C "$T/seed" rev-parse HEAD)" "fetch updated origin/main"
out=$(run 'git fetch nosuchremote' 2>&1); st=$?
is "$st" 125 "fetch of a name that is no remote and nothing on disk: sandbox"
like "$out" "not a configured remote" "(git would take it for a path the sandbox can create)"
out=$(run 'GIT_TRACE=1 git fetch origin 2>&1 >/dev/null | grep -c trace:'); st=$?
isnt "$out" 0 "GIT_TRACE=1 prefix reaches git"
out=$(run 'git fetch file://'"$CODE"'/vendor/lib main' 2>&1); st=$?
is "$st" 125 "fetch file:// of a nested repository: sandbox"
out=$(run 'git fetch -q . main:refs/heads/copy 2>&1'); st=$?
is "$st" 0 "fetch from . (the repository itself)"
is "$(git rev-parse copy)" "$(git rev-parse main)" "the local fetch made the branch"
out=$(run 'git -C sub fetch -q .git main:refs/heads/copy2 2>&1'); st=$?
is "$st" 0 "git -C sub fetch .git: the repository's own .git, from the top level as git reads it"
is "$(git rev-parse copy2)" "$(git rev-parse main)" "that fetch made the branch too"
out=$(run 'git -C vendor/lib fetch' 2>&1); st=$?
is "$st" 125 "git -C into a nested repository: sandbox"
like "$out" "nested repository" "with the reason"
out=$(run 'cd .git && git fetch' 2>&1); st=$?
is "$st" 125 "cd .git && git fetch: sandbox"
like "$out" "inside the repository's .git" "with the reason"

# ---- pull ----------------------------------------------------------------------------
(cd "$T/seed" && echo three >> f && git commit -qam three && git push -q "$URL" main)
out=$(run 'cd sub && git pull --ff-only -q'); st=$?
is "$st" 0 "cd sub && git pull --ff-only"
is "$(git rev-parse HEAD)" "$(git -C "$T/seed" rev-parse HEAD)" "pull moved HEAD"

# ---- push ----------------------------------------------------------------------------
echo four >> f && git commit -qam four
out=$(run 'git push origin HEAD 2>&1'); st=$?
is "$st" 0 "git push origin HEAD"
is "$(git --git-dir="$T/srv/repo.git" rev-parse main)" "$(git rev-parse HEAD)" "the push arrived"
run 'git push -u origin HEAD:feature >/dev/null 2>&1'; is $? 0 "git push -u origin HEAD:feature"
is "$(git config branch.main.merge)" "refs/heads/feature" "-u set the upstream"
is "$(run 'git ls-remote --heads origin feature | wc -l')" 1 "the new branch is on the server"
run 'git push origin :feature 2>/dev/null'; is $? 0 "delete a remote branch"
(cd "$T/seed" && git pull -q "$URL" main && echo five >> f && git commit -qam five &&
    git push -q "$URL" main)
git reset -q --hard HEAD~1 && echo local >> f && git commit -qam diverge
out=$(run 'git push origin HEAD:main 2>&1'); st=$?
is "$st" 1 "a rejected push exits 1"
like "$out" "rejected" "and says so"
run 'git fetch -q origin && git push --force-with-lease origin HEAD:main 2>/dev/null'
is $? 0 "fetch && push --force-with-lease"

# ---- clone ---------------------------------------------------------------------------
out=$(run "git clone -q $URL cloned"); st=$?
is "$st" 0 "clone over git:// into the code directory"
ok "the clone has a work tree" test -f cloned/f
out=$(run 'git clone -q file://'"$CODE"'/vendor/lib libcopy' 2>&1); st=$?
is "$st" 125 "clone file:// of a nested repository: sandbox"
ok "nothing was cloned" test ! -e libcopy
out=$(run 'git clone -q . new/dirs/selfcopy'); st=$?
is "$st" 0 "clone of the repository itself into new directories"
ok "the clone has the file" test -f new/dirs/selfcopy/f
out=$(run "git clone -q $URL cloned" 2>&1); st=$?
is "$st" 125 "clone into an existing directory: sandbox"
like "$out" "already exists" "with the reason"
out=$(run "git clone $URL /tmp/outside-$$" 2>&1); st=$?
is "$st" 125 "clone outside the code directory is the sandbox's"
like "$out" "outside the code directories" "with the reason"
ok "nothing was cloned outside" test ! -e /tmp/outside-$$

# ---- what must not run ---------------------------------------------------------------
mkdir -p bin && printf '#!/bin/sh\ntouch "%s/planted-ran"\n' "$T" > bin/git && chmod +x bin/git
PATH=$CODE/bin:.:$PATH run 'git ls-remote origin >/dev/null'; is $? 0 "with a planted git first on PATH"
ok "the planted git did not run" test ! -e "$T/planted-ran"
PATH=$CODE/bin run 'git ls-remote origin' 2>/dev/null; is $? 125 "only a planted git: the sandbox's"

git config core.hooksPath .husky
mkdir -p .husky && printf '#!/bin/sh\ntouch "%s/husky-ran"\n' "$T" > .husky/pre-push && chmod +x .husky/pre-push
out=$(run 'git push -q origin HEAD:hooktest' 2>&1); st=$?
is "$st" 0 "push with core.hooksPath in the work tree"
ok "the work tree's hook did not run" test ! -e "$T/husky-ran"
like "$out" "hooks not run" "a warning says so"
git config --unset core.hooksPath
printf '#!/bin/sh\ntouch "%s/githook-ran"\n' "$T" > .git/hooks/pre-push && chmod +x .git/hooks/pre-push
run 'git push -q origin HEAD:hooktest2' >/dev/null 2>&1; is $? 0 "push with the host's own .git/hooks"
ok "the host's own hook ran" test -e "$T/githook-ran"
rm -f .git/hooks/pre-push
ln -s ../../.husky/pre-push .git/hooks/pre-push
run 'git push -q origin HEAD:hooktest3' >/dev/null 2>&1; is $? 0 "push with a hook linked into the work tree"
ok "the linked hook did not run" test ! -e "$T/husky-ran"
rm -f .git/hooks/pre-push

git init -q --bare vendor/mirror.git && git remote add inside "$CODE/vendor/mirror.git"
out=$(run 'git push inside HEAD' 2>&1); st=$?
is "$st" 125 "push to a remote that is a bare repository in the code directory: sandbox"
like "$out" "hooks the sandbox can change" "with the reason"
out=$(run 'git fetch inside' 2>&1); st=$?
is "$st" 125 "fetch from it: sandbox"
out=$(run 'git fetch --multiple origin inside' 2>&1); st=$?
is "$st" 125 "fetch --multiple with it as the second remote: sandbox"
git remote remove inside
out=$(run 'git push --receive-pack=/bin/false origin HEAD' 2>&1); is $? 125 "--receive-pack: sandbox"
out=$(run "git fetch --upload-pa=/bin/false origin" 2>&1); is $? 125 "abbreviated --upload-pack: sandbox"
out=$(run "git ls-remote 'ext::sh -c touch% $T/ext-ran'" 2>&1); is $? 125 "ext:: URL: sandbox"
ok "ext:: never ran" test ! -e "$T/ext-ran"

# A password in the URL: the host runner runs nothing (git would write the URL into the
# reflog, the sandbox would get it), says to use a credential helper, and exits 2.
rm -f .git/FETCH_HEAD
cp .git/logs/HEAD "$T/head.before"
out=$(run "git fetch git://u:s3cr3t@127.0.0.1:$port/repo.git main" 2>&1); st=$?
is "$st" 2 "git fetch with a password in the URL: not run, status 2"
like "$out" "not run: a password or token in a URL.*credential helper" "with the reason"
unlike "$out" "s3cr3t" "the message does not repeat the secret"
ok "git did not run: no FETCH_HEAD" test ! -e .git/FETCH_HEAD
ok "and the reflog is unchanged" cmp -s .git/logs/HEAD "$T/head.before"
out=$(run "git ls-remote git://127.0.0.1:$port/repo.git | grep -c main" 2>&1)
is "$out" 1 "the same URL without the password runs"

done_testing
