#!/bin/bash
# A third backend is a new folder plus one line (HACKING.md, "Adding a backend"): in a copy
# of the tree, a backend third/ with a setting of its own (a section the session layer
# keeps opaque), its fragment included from the Makefile and nothing else changed, builds
# into sbx; sbx --help lists it and its variable, its bad value is refused whichever
# backend is used, and AGENT_SANDBOX_BACKEND=third reaches its factory with its setting.
# The copy starts from make check's objects, so only the new backend compiles.
. "$(dirname "$0")/../lib/tap.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${SBXSH_BUILD:-$top/build}
[ "$(cd "$build" 2>/dev/null && pwd)" = "$top/build" ] ||
    skip_all "copies the plain build's objects ($top/build), and this run's are $build"
[ -f "$build/libsbx.a" ] || skip_all "no build in $build to start from (make first)"
{ command -v make && command -v cc; } >/dev/null || skip_all "no make or cc"
[ -x "$SBXSH_BIN/sbx-agent" ] || skip_all "no sbx-agent in $SBXSH_BIN"

copy=$SBX_TEST_TMP/tree
mkdir -p "$copy"
tar -C "$top" --exclude=./build --exclude=./build-asan --exclude=./build-fuzz -cf - . |
    tar -C "$copy" -xf -
cp -a "$build" "$copy/build"
session_before=$(cd "$copy" && find session -type f -exec md5sum {} + | sort)

mkdir "$copy/third"
cat >"$copy/third/third.mk" <<'MK'
LIB_SRCS += third/third.c
BACKENDS += third
MK
cat >"$copy/third/third.c" <<'C'
/* A third backend for tests/session/third-backend.t: one setting, in a section of its
 * own, and a factory that says what it was given. */
#include <stdlib.h>
#include <string.h>

#include "session/backend.h"
#include "session/config.h"

extern const sbx_backend_class third_backend_class;

typedef struct third_settings {
    char *where;
} third_settings;

static int third_configure(const sbx_config *cfg, void **settings, sbx_err *err)
{
    third_settings *t = xcalloc(1, sizeof(*t));
    const char *v = getenv("AGENT_SANDBOX_THIRD_WHERE");

    (void)cfg;
    *settings = t;
    if (v && !strcmp(v, "bad"))
        return sbx_errf(err, "AGENT_SANDBOX_THIRD_WHERE='bad': the third backend refuses it");
    t->where = xstrdup(v ? v : "nowhere");
    return 0;
}

static void third_settings_free(void *settings)
{
    third_settings *t = settings;
    free(t->where);
    free(t);
}

static void third_fingerprint(const sbx_config *cfg, strbuf *out)
{
    const third_settings *t = session_backend_settings(cfg, &third_backend_class);
    strbuf_addf(out, "third=%s ", t && t->where ? t->where : "-");
}

static sbx_backend *third_new(const sbx_config *cfg, const sbx_sandbox_spec *spec,
                              sbx_err *err)
{
    const third_settings *t = session_backend_settings(cfg, &third_backend_class);
    (void)spec;
    sbx_errf(err, "the third backend would claim a sandbox at %s", t->where);
    return NULL;
}

const sbx_backend_class third_backend_class = {
    .name = "third",
    .configure = third_configure,
    .settings_free = third_settings_free,
    .fingerprint = third_fingerprint,
    .create = third_new,
    .help_env = "  AGENT_SANDBOX_THIRD_WHERE      third: where its sandboxes come from\n",
};
C
# the one line outside the folder
sed -i 's|^include kube/kube.mk$|&\ninclude third/third.mk|' "$copy/Makefile"
is "$(diff "$top/Makefile" "$copy/Makefile" | grep -c '^>')" 1 "one line added to the Makefile"

out=$(make -C "$copy" sbx 2>&1)
rc=$?
is "$rc" 0 "sbx builds with the third backend" || diag "$out"
is "$(cd "$copy" && find session -type f -exec md5sum {} + | sort)" "$session_before" \
   "... and no file of session/ changed"

help=$("$copy/sbx" --help 2>&1)
like "$help" 'AGENT_SANDBOX_BACKEND +local \(default\) \| .*third' "sbx --help lists it among the backends"
like "$help" 'AGENT_SANDBOX_THIRD_WHERE +third: where' "... and its variable"

# a clean environment of our own for each call (nothing of the caller's sessions)
mkdir -p "$SBX_TEST_TMP/home" "$SBX_TEST_TMP/run" "$SBX_TEST_TMP/code"
sbx() {
    (cd "$SBX_TEST_TMP/code" &&
     env -i PATH="$PATH" HOME="$SBX_TEST_TMP/home" XDG_RUNTIME_DIR="$SBX_TEST_TMP/run" \
         AGENT_SANDBOX_STATE_DIR="$SBX_TEST_TMP/state" AGENT_SANDBOX_AGENT="$SBXSH_BIN/sbx-agent" \
         AGENT_SANDBOX_IDLE_TIMEOUT=0 "$@")
}

out=$(sbx AGENT_SANDBOX_THIRD_WHERE=bad timeout 60 "$copy/sbx" status 2>&1)
is "$?" 125 "its bad value is refused with the local backend in use"
like "$out" "^sbx: AGENT_SANDBOX_THIRD_WHERE='bad': the third backend refuses it" "... in its words"

out=$(sbx AGENT_SANDBOX_BACKEND=third AGENT_SANDBOX_THIRD_WHERE=mars timeout 60 \
          "$copy/sbx" exec true 2>&1)
is "$?" 125 "AGENT_SANDBOX_BACKEND=third runs its factory"
like "$out" "the third backend would claim a sandbox at mars" "... with its own setting"

out=$(sbx AGENT_SANDBOX_BACKEND=fourth timeout 60 "$copy/sbx" exec true 2>&1)
like "$out" "AGENT_SANDBOX_BACKEND='fourth': this build has no such backend; use local, kube or third" \
     "a backend not built is refused, naming the ones that are"

done_testing
