/*
 * A plain host directory's view, for the scratch session's sandbox (docs/terminals.md, "Walking
 * to a project at the prompt"): at the prompt, a `cd` to a directory below $HOME that is neither hidden nor in
 * a project runs on the host (router: route_ctx.cd_views), and the sandbox, which has its own
 * private HOME, gets a copy of that one level: the subdirectories as (empty) directories, the
 * regular files up to VIEW_MAX_FILE bytes each, VIEW_MAX_BYTES in all and VIEW_MAX_ENTRIES
 * entries, by name order; never a name starting with '.', a symlink, a device, fifo or
 * socket, nor a name with a control byte. Pushed only: what the sandbox writes there stays
 * there. The copy travels as a bash script of builtins (printf with octal escapes for the
 * bytes bash cannot hold in a word) that a `bash -s` in the sandbox reads on its stdin: no
 * mount and no program but bash, mkdir and chmod, so the kube backend's pod gets it the same.
 */
#ifndef SBX_CLI_VIEW_H
#define SBX_CLI_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"
#include "common/strvec.h"
#include "common/util.h"
#include "session/config.h"

#define VIEW_MAX_ENTRIES 1000
#define VIEW_MAX_FILE (256 * 1024)
#define VIEW_MAX_BYTES (4 * 1024 * 1024)
/* How many names of a directory are read at most (a directory of millions of entries costs
 * no more than this): the view is the first VIEW_MAX_ENTRIES of them in name order. */
#define VIEW_MAX_SCAN 100000

typedef struct sbx_view {
    char *dir;          /* absolute, normalized */
    strvec names;       /* what the sandbox gets, sorted: a directory's name ends in '/' */
    strbuf script;      /* the bash text that makes them */
    size_t left_out;    /* entries it does not get (hidden, special and symlinks not counted) */
} sbx_view;

/* Reads dir (opened with no symlink on the way) into v; with !list, v is the directory
 * alone (sbxsh's own state: the sandbox sees it empty). -1 with err when it cannot be
 * opened or read. */
int view_build(const char *dir, bool list, sbx_view *v, sbx_err *err);
void view_free(sbx_view *v);
/* Runs v's script in cfg's session (a connection of its own: the session's shell may be
 * running), with env. -1 with err when the sandbox could not make it. */
int view_push(sbx_config *cfg, const strvec *env, const sbx_view *v, sbx_err *err);
/* Whether v gives the sandbox name (a single component). */
bool view_has(const sbx_view *v, const char *name, size_t len);

#endif
