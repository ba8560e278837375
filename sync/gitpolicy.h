/*
 * What git data may cross, in which direction (DESIGN.md section 5).
 *
 * sandbox -> host: inside a code directory, the top-level `.git` directory is written only
 * through an allowlist (objects, refs, logs, HEAD, index, packed-refs, and the state files of
 * merges, rebases, cherry-picks, reverts and bisects). Config, hooks, info, modules,
 * worktrees, lock files, object alternates, a `.git` that is not a directory (a gitfile), and
 * any `.git` below the top level are never written from the sandbox.
 *
 * host -> sandbox: everything is sent, but a git config file (`.git/config`,
 * `.git/config.worktree`, `.git/modules/NAME/config`, `sub/.git/config`, ...) is filtered by
 * an exact key allowlist, and the user's ~/.gitconfig by another (identity and everyday
 * settings). Never aliases, core.sshCommand, askpass, hooks paths, credential helpers,
 * includes, http.*, url.*, filter or diff drivers, or a value with credentials in a URL.
 * A config that cannot be parsed gives an empty config.
 */
#ifndef SBX_SYNC_GITPOLICY_H
#define SBX_SYNC_GITPOLICY_H

#include "common/strbuf.h"

#include <stdbool.h>
#include <stddef.h>

#define GITCONFIG_MAX (1024 * 1024)  /* bigger config files are treated as unparsable */

/* For a path (relative to a code directory) that the sandbox wants to write with file type
 * ftype (WIRE_REG/WIRE_DIR/WIRE_LNK): NULL when allowed, else why not (a static string). */
const char *git_pull_refusal(const char *rel, size_t len, int ftype);
/* The same for a path below a sync path's base directory: any `.git` component is refused. */
const char *git_pull_refusal_syncpath(const char *rel, size_t len);

/* Whether a pushed file is a git config file to filter (a config under a `.git` component). */
bool git_is_repo_config(const char *rel, size_t len);

/* Filters a repository config / a user config to its allowlist, appending git config text
 * to out. Unparsable input gives nothing (an empty config). Returns the number of settings
 * kept, or -1 when the input could not be parsed. */
int gitconfig_filter_repo(const char *text, size_t len, strbuf *out);
int gitconfig_filter_user(const char *text, size_t len, strbuf *out);

/* Whether a remote URL carries credentials (user:password@, or any user@ on http(s)). */
bool git_url_has_credentials(const char *url, size_t len);

#endif
