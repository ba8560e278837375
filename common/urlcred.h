/*
 * Credentials in URLs: the part of a `scheme://userinfo@host/...` URL that git would send
 * to the server as a secret, found anywhere in a text (a reflog line, FETCH_HEAD, a git
 * command's words), so that it can be kept out of the sandbox.
 *
 * What counts as a secret:
 *   - http, https, ftp, ftps (any letter case): the whole userinfo, `user:password@` and a
 *     lone `TOKEN@` alike (git sends a lone user as the user name and GitHub, GitLab and
 *     others take a token there);
 *   - any other scheme (ssh, git+ssh, git, ...): only a password, `:password` of
 *     `user:password@`; the user name stays (`ssh://git@host/r` is not a secret).
 * The authority is what follows `://` up to the first `/`, `?`, `#`, blank or control
 * byte; its userinfo ends at its last `@` (git and curl disagree on a second `@`: the
 * longer one is removed). scp-like `git@host:path` has no `://` and is never touched, nor
 * is an `@` in a path.
 */
#ifndef SBX_COMMON_URLCRED_H
#define SBX_COMMON_URLCRED_H

#include "common/strbuf.h"

#include <stdbool.h>
#include <stddef.h>

/* The next secret in text[from..len): true with text[*start..*end) the bytes to remove
 * (a whole "userinfo@", or a ":password" before an '@'). */
bool urlcred_find(const char *text, size_t len, size_t from, size_t *start, size_t *end);
/* Whether text holds a secret at all. */
bool urlcred_has(const char *text, size_t len);
/* Appends text to out with every secret removed; returns how many were removed. */
size_t urlcred_strip(const char *text, size_t len, strbuf *out);

#endif
