/*
 * Credentials in the `.git` files that go into the sandbox (docs/threat-model.md,
 * "No token in a URL reaches the sandbox through `.git`").
 *
 * A host `git pull https://user:TOKEN@host/r` writes that URL into the reflogs (and a
 * FETCH_HEAD or MERGE_MSG can name it too); every other file of `.git` goes to the sandbox
 * as it is, where hostile code reads it. So these files are pushed with every secret of
 * every URL removed (common/urlcred.h says what a secret is), and the host's own files are
 * never changed by that:
 *   - push: the filtered text goes in place of the file (delta.c); the host's manifest
 *     keeps recording the host's file, so nothing is pushed again until it changes;
 *   - pull: the sandbox's version comes back with the lines it got filtered, and with its
 *     own new lines. Before it is committed (hostwrite.c), each line that is exactly the
 *     filtered form of a line of the host's current file becomes that host line again, so
 *     that a sandbox commit appends to the host's reflog without stripping its old entries
 *     (and without a conflict: the host's file did not change). Only lines of the same
 *     file are restored, so nothing the host had moves anywhere else.
 */
#ifndef SBX_SYNC_GITCRED_H
#define SBX_SYNC_GITCRED_H

#include "common/strbuf.h"

#include <stdbool.h>
#include <stddef.h>

/* Bigger files are pushed empty (their secrets are not worth a larger buffer in the holder),
 * and a pull of one is refused (its lines could not be restored). */
#define GIT_CRED_FILTER_MAX (64 * 1024 * 1024)

/* Whether a pushed file, by its path (relative to its root), may hold a remote's URL and is
 * filtered: anything under a `logs/` directory below a `.git` component (reflogs, of the
 * repository, its submodules and worktrees) and `FETCH_HEAD`, `MERGE_MSG`, `SQUASH_MSG`
 * there (their conflict copies too). */
bool git_push_strips_credentials(const char *rel, size_t len);

/* Appends pulled to out, each of its lines that equals the filtered form of a line of host
 * (and differs from it) replaced by that host line. Returns how many were replaced. */
size_t gitcred_restore(const char *host, size_t host_len, const char *pulled, size_t pulled_len,
                       strbuf *out);

#endif
