/*
 * What git data may cross, in which direction (sync/README.md, "What comes
 * back into `.git`", and docs/threat-model.md).
 *
 * sandbox -> host: inside a code directory, the top-level `.git` directory is written only
 * through an allowlist (objects, refs, logs, HEAD, index, packed-refs, and the state files of
 * merges, rebases, cherry-picks, reverts and bisects). Config, hooks, info, modules,
 * worktrees, lock files, object alternates, a `.git` that is not a directory (a gitfile), and
 * any `.git` below the top level are never written from the sandbox.
 *
 * The allowlist is about shapes, so that no repository can be assembled inside the host's
 * .git: under objects/ only loose objects, packs and their indexes, info/packs, commit-graphs
 * and the multi-pack-index, by exact name and checked signature; under refs/ only ref files
 * (an object id or "ref: refs/..."); under logs/ only reflog lines; nothing named HEAD,
 * config, hooks, commondir or gitdir below the top (but refs/remotes/NAME/HEAD and logs/HEAD);
 * no executable file, no symlink.
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
/* An executable file under .git: NULL when rel is not under .git, else why not. */
const char *git_pull_exec_refusal(const char *rel, size_t len);
/* For a file the sandbox wants to write under .git, its content (fd, read with pread from
 * offset 0): NULL when it has the shape its path asks for, else why not. */
const char *git_pull_content_refusal(const char *rel, size_t len, int fd);
/* Whether rel is the top-level .git or below it. */
bool git_path_in_git(const char *rel, size_t len);

#define GIT_REF_MAX 4096                        /* a ref file */
#define GIT_REFLOG_MAX (16 * 1024 * 1024)       /* one reflog */
#define GIT_PACKED_REFS_MAX (64 * 1024 * 1024)  /* packed-refs */

/* A ref file's content ("<oid>\n" or "ref: refs/...\n"): its value (the id, or the target
 * of a symbolic ref) in *val. */
bool git_ref_parse(const char *text, size_t len, const char **val, size_t *val_len, bool *symref);
/* The refs of a packed-refs text, one per call (peeled lines and the header skipped). */
bool git_packed_next(const char **p, const char *end, const char **oid, size_t *oid_len,
                     const char **name, size_t *name_len);
/* A ref's id in a packed-refs text. */
bool git_packed_find(const char *text, size_t len, const char *ref, size_t ref_len,
                     const char **oid, size_t *oid_len);

/*
 * Repository shapes anywhere in a pulled tree (sync/README.md, "No repository comes back"). Git's
 * discovery takes a directory for a repository (is_git_directory() in git's setup.c) when it
 * has a HEAD and refs/ (and objects/, unless GIT_OBJECT_DIRECTORY names another), or a HEAD
 * and a commondir file naming where those are. A person's own `git status` in such a
 * directory (a prompt, an editor) would read its config (core.fsmonitor runs a command) and
 * its hooks, so no pull may complete one: the shape is HEAD beside refs or commondir (any
 * file type: git follows symlinks, and takes an executable file for a directory), objects/
 * left out, since the environment can stand in for it.
 */
/* Whether name (one component) is one of the names of that shape, in any letter case. */
bool git_repo_shape_name(const char *name, size_t len);
/* Whether directory dfd is a repository shape, with `adding` (one name, or NULL) counted as
 * present: what it would be once an entry named so lands in it. An fstatat that fails for
 * another reason than a missing name counts the name as present (fail toward refusing). */
bool git_dir_is_repo_shape(int dfd, const char *adding, size_t adding_len);

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
