# shellcheck shell=bash
# Shared setup for tests/local/*.t (sourced after tests/lib/tap.sh).
#
# local_env: an isolated world under $SBX_TEST_TMP: a runtime directory and a git
# repository $PROJ as the code directory, beside the HOME and state directory of tap.sh
# (which cleared every AGENT_SANDBOX_*): nothing of the real user's sessions is touched.
# runtime_skip_reason RT: empty when runtime RT can start sandboxes here,
# else why not (for skip messages).
# runtime_env SESSION: the set-up of the files run once a runtime (exec.sh, fresh.sh,
# quota.sh, ...: sourced by NAME-runsc.t and NAME-bwrap.t with RT set).

local_env() {
    export XDG_RUNTIME_DIR=$SBX_TEST_TMP/run
    # exec.sh under tests/kube/exec-kube.t: the same tests on the kube backend (which set
    # AGENT_SANDBOX_KUBECONFIG and AGENT_SANDBOX_POOL for it)
    [ "${RT:-}" = kube ] && export AGENT_SANDBOX_BACKEND=kube
    mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
    PROJ=$SBX_TEST_TMP/proj
    mkdir -p "$PROJ"
    git -C "$PROJ" init -q
    printf 'hello\n' > "$PROJ/README"
    cd "$PROJ" || exit 1
}

# runtime_env SESSION: the file is skipped, saying why, when runtime $RT cannot start a
# sandbox here or sbxsh is not built; else local_env, $RT the runtime (kube: the backend,
# which local_env chose) and SESSION the session (''; none: the file names its own).
runtime_env() { # SESSION
    local why
    why=$(runtime_skip_reason "$RT")
    [ -z "$why" ] || skip_all "$RT: $why"
    if [ ! -x "$SBXSH" ] || [ ! -x "$SBX" ]; then
        skip_all "sbxsh is not built (make)"
    fi
    local_env
    [ "$RT" = kube ] || export AGENT_SANDBOX_LOCAL_RUNTIME=$RT
    [ -z "$1" ] || export AGENT_SANDBOX_SESSION=$1
}

runtime_skip_reason() {
    case $1 in
    kube)
        [ -n "${AGENT_SANDBOX_KUBECONFIG:-}" ] && [ -n "${AGENT_SANDBOX_POOL:-}" ] ||
            echo "AGENT_SANDBOX_KUBECONFIG and AGENT_SANDBOX_POOL are not set (tests/kube/exec-kube.t sets them)"
        ;;
    runsc)
        command -v runsc >/dev/null || { echo "runsc is not installed (make deps)"; return; }
        # shellcheck disable=SC2046 # --rootless or nothing: one word or none
        runsc --network=none --ignore-cgroups $([ "$(id -u)" = 0 ] || echo --rootless) \
            'do' /bin/true >/dev/null 2>&1 ||
            echo "runsc cannot start a sandbox on this machine"
        ;;
    bwrap)
        command -v bwrap >/dev/null || { echo "bubblewrap is not installed (make deps)"; return; }
        bwrap --unshare-user --unshare-pid --ro-bind /usr /usr --symlink usr/lib64 /lib64 \
            --symlink usr/lib /lib --symlink usr/bin /bin --proc /proc --dev /dev \
            /bin/true >/dev/null 2>&1 ||
            echo "bubblewrap cannot create user namespaces here"
        ;;
    esac
}

# sbx-agent beside which the runsc shim sits (so that `ls` works under runsc).
agent_dir_with_shim() { # AGENT_BINARY
    local d=$SBX_TEST_TMP/libexec
    mkdir -p "$d"
    cp "$1" "$d/"
    [ -f "$SBXSH_BIN/sbx-runsc-compat.so" ] && cp "$SBXSH_BIN/sbx-runsc-compat.so" "$d/"
    printf '%s/%s\n' "$d" "$(basename "$1")"
}

# Stops whatever sandboxes and holders a test left in its state directory
# (a failing test must not leave processes behind): by pid, from the files
# the backend writes.
local_teardown() {
    local f pid
    for f in "$AGENT_SANDBOX_STATE_DIR"/*/sandbox.json; do
        [ -f "$f" ] || continue
        pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$f")
        [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    done
}
