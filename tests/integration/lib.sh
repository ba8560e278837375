# shellcheck shell=bash
# Shared setup for integration tests: an isolated session per test file.
#
#   . "$(dirname "$0")/lib.sh"
#   setup_session NAME [RUNTIME]   # code dir $CODE, sandbox runtime or default
#   ref_bash SCRIPT                # bash -c SCRIPT as the sandbox would run it, on the host
#   end_session
#
# Each test file gets its own HOME, state and runtime directories under
# $SBX_TEST_TMP, so tests never touch the user's sessions or home (tap.sh cleared every
# AGENT_SANDBOX_* variable the caller had).

. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"

# The sandbox's default environment (session/session.c: session_sandbox_env).
SANDBOX_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# runtime_usable RUNTIME: can a sandbox of this kind start here? Prints why not.
runtime_usable() {
    case $1 in
    kube) if [ -z "${AGENT_SANDBOX_KUBECONFIG:-}" ] || [ -z "${AGENT_SANDBOX_POOL:-}" ]; then
              echo "AGENT_SANDBOX_KUBECONFIG and AGENT_SANDBOX_POOL are not set (tests/kube/sbxsh-kube.t sets them)"
              return 1
          fi ;;
    runsc) command -v runsc >/dev/null || { echo "runsc not installed (make deps)"; return 1; } ;;
    bwrap) command -v bwrap >/dev/null || { echo "bubblewrap not installed (make deps)"; return 1; }
           bwrap --ro-bind / / --unshare-user --unshare-pid true 2>/dev/null ||
               { echo "bubblewrap cannot create namespaces here"; return 1; } ;;
    esac
    return 0
}

setup_session() {
    local name=$1 runtime=${2:-}
    export HOME=$SBX_TEST_TMP/home
    export XDG_RUNTIME_DIR=$SBX_TEST_TMP/run
    export AGENT_SANDBOX_STATE_DIR=$SBX_TEST_TMP/state
    mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$AGENT_SANDBOX_STATE_DIR"
    chmod 700 "$XDG_RUNTIME_DIR"
    CODE=$SBX_TEST_TMP/code
    mkdir -p "$CODE"
    CODE=$(cd "$CODE" && pwd -P)
    export AGENT_SANDBOX_CODE_DIRS=$CODE
    export AGENT_SANDBOX_SESSION=$name
    # "kube": the Kubernetes backend (the caller points it at a cluster or the fake); else
    # the local one (a file calls this once a runtime)
    if [ "$runtime" = kube ]; then
        export AGENT_SANDBOX_BACKEND=kube
    else
        unset AGENT_SANDBOX_BACKEND
        [ -z "$runtime" ] || export AGENT_SANDBOX_LOCAL_RUNTIME=$runtime
    fi
    trap 'end_session; stop_git_daemon; tap_cleanup' EXIT
}

# setup_home_session NAME RUNTIME: setup_session, then a shell in ~ as a person's login
# shell has it: no code directory or session named (sbxsh derives both), and HOME a
# directory of its own for the runtime ($SBX_TEST_TMP/home-RUNTIME, by its physical path)
# with a git identity. release_all releases every session the state directory has.
setup_home_session() { # NAME RUNTIME
    setup_session "$1" "$2"
    unset AGENT_SANDBOX_CODE_DIRS AGENT_SANDBOX_SESSION
    export HOME=$SBX_TEST_TMP/home-$2
    mkdir -p "$HOME"
    HOME=$(cd "$HOME" && pwd -P)
    printf '[user]\n\tname = T\n\temail = t@example.com\n' >"$HOME/.gitconfig"
}

release_all() {
    local s
    for s in $("$SBX" ls 2>/dev/null | awk 'NR > 1 { print $1 }'); do
        "$SBX" release --session "$s" >/dev/null 2>&1
    done
}

end_session() {
    "$SBX" release --session "$AGENT_SANDBOX_SESSION" >/dev/null 2>&1 || true
}

# ref_bash SCRIPT: what `sbxsh -c SCRIPT` must reproduce, run by the host's
# bash with the sandbox's environment and sbxsh's name as $0.
# carried_env: sets CARRIED to the terminal and locale variables sbxsh carries into the
# sandbox (session/session.c: session_sandbox_env), as NAME=VALUE words.
carried_env() {
    local v
    CARRIED=()
    for v in $(compgen -e); do
        case $v in
        TERM|COLORTERM|NO_COLOR|FORCE_COLOR|CLICOLOR|TZ|LANG|LANGUAGE|LC_ALL|LC_CTYPE|LC_NUMERIC|\
        LC_TIME|LC_COLLATE|LC_MONETARY|LC_MESSAGES|LC_PAPER|LC_NAME|LC_ADDRESS|LC_TELEPHONE|\
        LC_MEASUREMENT|LC_IDENTIFICATION) CARRIED+=("$v=${!v}") ;;
        esac
    done
}

ref_bash() {
    carried_env
    env -i PATH="$SANDBOX_PATH" HOME="$HOME" "${CARRIED[@]}" bash -c 'exec -a sbxsh bash -c "$1"' _ "$1"
}

# tree_listing DIR [PRUNE...]: type, exec bit, size, content hash and link
# target of everything under DIR but the PRUNE paths (e.g. ./.git), sorted:
# what a sync must reproduce.
tree_listing() {
    local dir=$1 prune=() p; shift
    for p in "$@"; do prune+=(-path "$p" -prune -o); done
    (cd "$dir" && find . -mindepth 1 "${prune[@]}" -printf '%y %s %p -> %l\n' | LC_ALL=C sort | while read -r t s p rest; do
        case $t in
        f) x=-; [ -x "$p" ] && x=x
           printf '%s %s %s %s %s\n' "$t" "$x" "$s" "$(md5sum < "$p" | cut -c1-32)" "$p" ;;
        l) printf '%s %s %s\n' "$t" "$p" "$rest" ;;
        *) printf '%s %s\n' "$t" "$p" ;;
        esac
    done)
}

# start_git_daemon: serves $SBX_TEST_TMP/gitroot on loopback with push enabled
# and sets GITROOT and GITBASE (git://127.0.0.1:PORT); returns 1 if it cannot.
start_git_daemon() {
    GITROOT=$SBX_TEST_TMP/gitroot
    mkdir -p "$GITROOT"
    local port probe_name=.probe-$$-$RANDOM.git
    local probe=$GITROOT/$probe_name
    git init -q --bare "$probe"
    for port in $(seq 19418 19460); do
        git daemon --reuseaddr --listen=127.0.0.1 "--port=$port" --base-path="$GITROOT" \
            --export-all --enable=receive-pack --pid-file="$SBX_TEST_TMP/daemon.pid" \
            --detach "$GITROOT" 2>/dev/null || continue
        for _ in $(seq 50); do
            if git ls-remote "git://127.0.0.1:$port/$probe_name" >/dev/null 2>&1; then
                # shellcheck disable=SC2034 # read by the test files that source this one
                GITBASE=git://127.0.0.1:$port
                return 0
            fi
            sleep 0.1
        done
        stop_git_daemon
    done
    return 1
}

# repo_with_remote REMOTE FILE: the code directory ($CODE, emptied) as a repository on main
# whose first commit holds FILE ("one"), pushed to a new bare REMOTE under the git daemon
# (origin = $GITBASE/REMOTE), with an identity in ~/.gitconfig; the cwd is $CODE after.
repo_with_remote() {
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
    cd "$CODE" || bail_out "no code dir"
    printf '[user]\n\tname = T\n\temail = t@example.com\n' > "$HOME/.gitconfig"
    git init -q --bare "$GITROOT/$1"
    git init -q . && git symbolic-ref HEAD refs/heads/main
    mkdir -p "$(dirname "$2")" && echo one > "$2" && git add "$2" && git commit -qm one
    git remote add origin "$GITBASE/$1"
    git push -q origin main 2>/dev/null || bail_out "cannot push to $GITBASE/$1"
}

stop_git_daemon() {
    [ -f "$SBX_TEST_TMP/daemon.pid" ] && kill "$(cat "$SBX_TEST_TMP/daemon.pid")" 2>/dev/null
    rm -f "$SBX_TEST_TMP/daemon.pid"
}
