/*
 * Paths for the router: inside-the-code-directories tests, the
 * symlink-refusing walk every host path goes through, and the PATH search
 * that never picks a program the sandbox could have written.
 */
#include "router/rules.h"
#include "common/fsat.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool route_path_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 1 && dir[0] == '/')
        return path[0] == '/';
    return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

bool route_view_dir(const char *home, const char *abs)
{
    size_t n;

    if (!home || home[0] != '/' || !abs || abs[0] != '/')
        return false;
    n = strlen(home);
    while (n > 1 && home[n - 1] == '/')
        n--;
    if (n == 1 || strncmp(abs, home, n) || (abs[n] != '\0' && abs[n] != '/'))
        return false;   /* HOME=/ would make every directory a view: none is */
    for (const char *p = abs + n; *p; p++)
        if (p[0] == '/' && p[1] == '.')
            return false;
    return true;
}

/* As git finds its work tree (and session/config.c a code directory): the nearest ancestor
 * of abs, abs included, holding `.git`, a directory or a gitfile; never `/` itself. Only a
 * question about the host's own tree: the answer routes a `cd` to the host, where the
 * directory is checked again when the cd runs (route_run_host). */
bool route_in_git_work_tree(const char *abs)
{
    char probe[PATH_MAX + 8];
    size_t len = strlen(abs);

    if (abs[0] != '/' || len >= PATH_MAX)
        return false;
    while (len > 1) {
        struct stat st;
        snprintf(probe, sizeof(probe), "%.*s/.git", (int)len, abs);
        if (lstat(probe, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
            return true;
        while (len > 0 && abs[len - 1] != '/')
            len--;
        if (len > 1)
            len--;      /* drop the slash; the root is not asked */
    }
    return false;
}

bool route_in_code_dirs(const route_ctx *ctx, const char *abs)
{
    for (size_t i = 0; i < ctx->n_code_dirs; i++)
        if (route_path_within(abs, ctx->code_dirs[i]))
            return true;
    return false;
}

/* A sync path entry may be a glob: abs is under it when abs or one of its
 * parent directories matches. */
static bool under_pattern(const char *abs, const char *pat)
{
    char buf[PATH_MAX];
    size_t n = strlen(abs);

    if (n >= sizeof(buf))
        return true;        /* too long to judge: count it as synced */
    memcpy(buf, abs, n + 1);
    for (;;) {
        if (fnmatch(pat, buf, FNM_PATHNAME) == 0)
            return true;
        while (n > 1 && buf[n - 1] != '/')
            n--;
        if (n <= 1)
            return false;
        buf[--n] = '\0';
    }
}

bool route_in_synced(const route_ctx *ctx, const char *abs)
{
    if (route_in_code_dirs(ctx, abs))
        return true;
    for (size_t i = 0; i < ctx->n_sync_paths; i++) {
        const char *e = ctx->sync_paths[i];
        if (strpbrk(e, "*?[") ? under_pattern(abs, e) : route_path_within(abs, e))
            return true;
    }
    return false;
}

int route_walk(const char *base, const char *path, unsigned flags, strbuf *out, bool *exists,
               const char **why)
{
    bool missing = false;

    strbuf_reset(out);
    if (path[0] == '/')
        strbuf_addch(out, '/');
    else
        strbuf_addstr(out, base);
    while (*path) {
        const char *end = strchrnul(path, '/');
        size_t n = (size_t)(end - path), keep = out->len;
        struct stat st;

        if (n == 0 || (n == 1 && path[0] == '.')) {
            path = *end ? end + 1 : end;
            continue;
        }
        if (n == 2 && path[0] == '.' && path[1] == '.') {
            if (missing) {
                *why = "'..' after a directory that does not exist";
                return -1;
            }
            /* every component so far is a real directory, so '..' is
             * its textual parent, as bash's logical cd has it */
            while (out->len > 1 && out->buf[out->len - 1] != '/')
                out->len--;
            if (out->len > 1)
                out->len--;
            strbuf_setlen(out, out->len);
            path = *end ? end + 1 : end;
            continue;
        }
        if (out->len > 1)
            strbuf_addch(out, '/');
        strbuf_add(out, path, n);
        if (out->len >= PATH_MAX) {
            *why = "path too long";
            return -1;
        }
        path = *end ? end + 1 : end;
        if (missing)
            continue;
        if (lstat(out->buf, &st) < 0) {
            if (errno == ENOENT && (flags & WALK_MISSING_OK)) {
                missing = true;
                continue;
            }
            *why = errno == ENOENT ? "no such directory" : "cannot be examined";
            strbuf_setlen(out, keep);
            return -1;
        }
        if (S_ISLNK(st.st_mode)) {
            *why = "goes through a symbolic link";
            return -1;
        }
        if (!S_ISDIR(st.st_mode) && (*path || (flags & WALK_DIR))) {
            *why = "not a directory";
            return -1;
        }
    }
    *exists = !missing;
    return 0;
}

int route_code_dir_of(const route_ctx *ctx, const char *abs)
{
    int best = -1;
    size_t best_len = 0;

    for (size_t i = 0; i < ctx->n_code_dirs; i++) {
        size_t n = strlen(ctx->code_dirs[i]);
        if (route_path_within(abs, ctx->code_dirs[i]) && (best < 0 || n > best_len)) {
            best = (int)i;
            best_len = n;
        }
    }
    return best;
}

int route_open_code_dir(const route_ctx *ctx, int which)
{
    /* The code directory itself and the directories above it are the host's:
     * the pull only ever writes beneath it. */
    return open(ctx->code_dirs[which], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int route_open_dir(const route_ctx *ctx, const char *abs, int *which, const char **why)
{
    int root, fd, i = route_code_dir_of(ctx, abs);
    const char *rel;

    if (i < 0) {
        *why = "outside the code directories";
        return -1;
    }
    rel = abs + strlen(ctx->code_dirs[i]);
    while (*rel == '/')
        rel++;
    if ((root = route_open_code_dir(ctx, i)) < 0) {
        *why = "the code directory cannot be opened";
        return -1;
    }
    fd = sbx_open_beneath(root, rel, strlen(rel), O_PATH);     /* common/fsat.h */
    close(root);
    if (fd < 0) {
        *why = errno == ELOOP || errno == EXDEV ? "goes through a symbolic link (it changed)"
               : errno == ENOENT ? "no such directory (it changed)"
               : errno == ENOTDIR ? "not a directory (it changed)"
               : "cannot be opened";
        return -1;
    }
    if (which)
        *which = i;
    return fd;
}

int route_find_program(const route_ctx *ctx, const char *name, strbuf *out, const char **why)
{
    const char *p = ctx->path;
    char real[PATH_MAX];
    bool skipped = false;

    if (!p || !*p) {
        *why = "PATH is not set";
        return -1;
    }
    while (p) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        struct stat st;

        strbuf_reset(out);
        strbuf_add(out, p, n);
        p = end ? end + 1 : NULL;
        /* "" and relative entries mean the cwd, which the sandbox writes */
        if (!n || out->buf[0] != '/') {
            skipped = true;
            continue;
        }
        if (out->buf[out->len - 1] != '/')
            strbuf_addch(out, '/');
        strbuf_addstr(out, name);
        if (stat(out->buf, &st) < 0 || !S_ISREG(st.st_mode) || access(out->buf, X_OK) < 0)
            continue;
        if (!realpath(out->buf, real) || route_in_synced(ctx, out->buf) ||
            route_in_synced(ctx, real)) {
            skipped = true;
            continue;
        }
        return 0;
    }
    strbuf_reset(out);
    *why = skipped ? "not found on the host PATH outside the code directories"
                   : "not found on the host PATH";
    return -1;
}

void route_safe_path(const route_ctx *ctx, strbuf *out)
{
    const char *p = ctx->path;
    strbuf dir = STRBUF_INIT;
    char real[PATH_MAX];

    strbuf_reset(out);
    while (p && *p) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);

        strbuf_reset(&dir);
        strbuf_add(&dir, p, n);
        p = end ? end + 1 : NULL;
        if (!n || dir.buf[0] != '/' || route_in_synced(ctx, dir.buf) ||
            (realpath(dir.buf, real) && route_in_synced(ctx, real)))
            continue;
        if (out->len)
            strbuf_addch(out, ':');
        strbuf_add(out, dir.buf, dir.len);
    }
    strbuf_release(&dir);
}

int route_find_host_program(const route_ctx *ctx, const char *name, strbuf *out,
                            const char **why)
{
    char real[PATH_MAX];
    struct stat st;

    if (!strchr(name, '/'))
        return route_find_program(ctx, name, out, why);
    strbuf_reset(out);
    if (name[0] != '/' || stat(name, &st) < 0 || !S_ISREG(st.st_mode) || access(name, X_OK) < 0) {
        *why = "not an absolute path to a program";
        return -1;
    }
    if (!realpath(name, real) || route_in_synced(ctx, name) || route_in_synced(ctx, real)) {
        *why = "inside the code directories, which the sandbox can change";
        return -1;
    }
    strbuf_addstr(out, name);
    return 0;
}

void route_host_path(const route_ctx *ctx, strbuf *out)
{
    route_safe_path(ctx, out);
}

bool route_sandbox_writable(const route_ctx *ctx, const char *abs)
{
    return route_in_synced(ctx, abs);
}
