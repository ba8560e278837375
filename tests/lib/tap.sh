# shellcheck shell=bash
# TAP helpers for shell integration tests; source it from a *.t script:
#
#   . "$(dirname "$0")/../lib/tap.sh"
#   is "$(echo hi)" "hi" "echo prints hi"
#   ok test -d /tmp "tmp exists"        # runs the command
#   tap_todo "why not yet" ok "a known gap" CMD...
#   skip_all "no runsc: install with make deps"
#   done_testing
#
# Environment: SBXSH_BIN (directory holding sbxsh, sbx, sbx-agent; set by the
# Makefile), SBX_TEST_TMP (a scratch directory removed at exit; SBX_TEST_KEEP=1 keeps it
# when a check failed, and says where).
#
# Diagnostics for CI's log: when a check failed or the file bailed out, tap_cleanup (every
# file's exit) prints to stderr, which prove shows even when not verbose, the last
# SBX_TEST_LOG_LINES (40) lines of each log registered with `tap_logs GLOB...` (expanded
# then: the holders' logs $SBX_TEST_TMP/run/sbxsh/*.log always are), control bytes made
# visible (cat -v). A test whose evidence is not a file (a tmux pane) prints it itself.
#
# Isolation, for every test file in one place: sourcing this clears every AGENT_SANDBOX_*
# variable and XDG_STATE_HOME (a developer's shell or a CI job may set any of them, and
# each changes what sbxsh and sbx do), and points HOME at $SBX_TEST_TMP/home and
# AGENT_SANDBOX_STATE_DIR at $SBX_TEST_TMP/state, so that no test reads the user's
# configuration or touches their sessions. A test file run by another (tests/kube/exec-kube.t
# runs tests/local/exec.sh) keeps the environment its parent made for it: SBX_TEST_ISOLATED
# says the parent did the above.

set -u
tap_n=0
tap_failed=0
SBXSH_BIN=${SBXSH_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SBXSH=${SBXSH:-$SBXSH_BIN/sbxsh}
SBX=${SBX:-$SBXSH_BIN/sbx}
SBX_AGENT=${SBX_AGENT:-$SBXSH_BIN/sbx-agent}
SBX_TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sbxsh-test.XXXXXX")
# the holders' logs (local/lib.sh's local_env puts XDG_RUNTIME_DIR there)
tap_log_globs=("$SBX_TEST_TMP/run/sbxsh/*.log")
tap_logs() { tap_log_globs+=("$@"); }
tap_dump_logs() {
    local g f n=${SBX_TEST_LOG_LINES:-40}
    for g in "${tap_log_globs[@]}"; do
        while IFS= read -r f; do
            { [ -f "$f" ] && [ -s "$f" ]; } || continue
            printf '# --- %s (last %s lines) ---\n' "${f#"$SBX_TEST_TMP"/}" "$n" >&2
            tail -n "$n" "$f" | cat -v | sed 's/^/#   /' >&2
        done < <(compgen -G "$g")
    done
}
tap_cleanup() {
    if [ "$tap_failed" != 0 ]; then
        tap_dump_logs
        if [ -n "${SBX_TEST_KEEP:-}" ]; then
            printf '# SBX_TEST_KEEP: kept %s\n' "$SBX_TEST_TMP" >&2
            return
        fi
    fi
    rm -rf "$SBX_TEST_TMP"
}
trap tap_cleanup EXIT

# (XDG_STATE_HOME: where the state directory goes when AGENT_SANDBOX_STATE_DIR is not set;
# XDG_CONFIG_HOME: where the person's host-command policy is, docs/policy.md.)
if [ -z "${SBX_TEST_ISOLATED:-}" ]; then
    # shellcheck disable=SC2046 # the names: words, none empty
    unset $(compgen -e AGENT_SANDBOX_) XDG_STATE_HOME XDG_CONFIG_HOME
    export HOME=$SBX_TEST_TMP/home AGENT_SANDBOX_STATE_DIR=$SBX_TEST_TMP/state
    mkdir -p "$HOME"
    export SBX_TEST_ISOLATED=1
fi

tap_todo_reason=
tap_result() { # COND NAME
    tap_n=$((tap_n + 1))
    if [ -n "$tap_todo_reason" ]; then
        # a known gap: reported, never a failure (prove lists one that passes)
        printf '%s %d - %s # TODO %s\n' "$([ "$1" = 0 ] && echo ok || echo 'not ok')" \
            "$tap_n" "$2" "$tap_todo_reason"
    elif [ "$1" = 0 ]; then
        printf 'ok %d - %s\n' "$tap_n" "$2"
    else
        tap_failed=$((tap_failed + 1))
        printf 'not ok %d - %s\n' "$tap_n" "$2"
        # the outermost frame: the line of the test file that made the check
        local top=$((${#BASH_SOURCE[@]} - 1))
        printf '#   failed at %s line %s\n' "${BASH_SOURCE[$top]}" "${BASH_LINENO[$((top - 1))]}"
    fi
}

# diag: TAP comments on stderr, as Test::More's diag: prove shows a test's stderr even when
# not verbose, so a failure in make check's log (CI's) says what was got and expected.
diag() { printf '%s\n' "$@" | sed 's/^/# /' >&2; }

# ok NAME CMD...: passes when CMD exits 0.
ok() {
    local name=$1; shift
    "$@"
    tap_result $? "$name"
}

# is GOT WANT NAME (returns 1 when it failed, for `is ... || diag ...`)
is() {
    if [ "$1" = "$2" ]; then
        tap_result 0 "$3"
    else
        tap_result 1 "$3"
        diag "     got: $(printf '%q' "$1")" "expected: $(printf '%q' "$2")"
        return 1
    fi
}

# isnt GOT UNWANTED NAME
isnt() {
    if [ "$1" != "$2" ]; then tap_result 0 "$3"; else tap_result 1 "$3"; diag "got unwanted: $(printf '%q' "$1")"; fi
}

# like GOT EXTENDED-REGEX NAME
like() {
    if [[ $1 =~ $2 ]]; then
        tap_result 0 "$3"
    else
        tap_result 1 "$3"
        diag "     got: $(printf '%q' "$1")" "expected to match: $2"
    fi
}

# unlike GOT EXTENDED-REGEX NAME
unlike() {
    if [[ $1 =~ $2 ]]; then
        tap_result 1 "$3"
        diag "     got: $(printf '%q' "$1")" "expected not to match: $2"
    else
        tap_result 0 "$3"
    fi
}

# tap_todo REASON CHECK...: runs the check (ok, is, like...) as a TODO test: what should
# hold and does not yet, with why; its failure does not fail the file.
tap_todo() {
    local rc
    tap_todo_reason=$1; shift
    "$@"; rc=$?
    tap_todo_reason=
    return $rc
}

skip() { tap_n=$((tap_n + 1)); printf 'ok %d # SKIP %s\n' "$tap_n" "$1"; }
skip_all() { printf '1..0 # SKIP %s\n' "$1"; trap - EXIT; rm -rf "$SBX_TEST_TMP"; exit 0; }
bail_out() { printf 'Bail out! %s\n' "$1"; printf '# Bail out! %s\n' "$1" >&2; tap_failed=$((tap_failed + 1)); exit 255; }

done_testing() {
    printf '1..%d\n' "$tap_n"
    [ "$tap_failed" = 0 ]
}
