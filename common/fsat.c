/*
 * The file system beneath a held directory fd (fsat.h): the trusted core's one walk that
 * follows no symlink, and the mkdir -p and rm -rf built on it. Every check below names the
 * attack it stops; the sandbox is assumed to write anything beneath the fd, at any moment.
 */
#include "common/fsat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Spelled out rather than taken from <linux/openat2.h>: musl's kernel headers (the static
 * agent) may predate it. The numbers are the kernel ABI. */
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define FSAT_RESOLVE_NO_MAGICLINKS 0x02
#define FSAT_RESOLVE_NO_SYMLINKS 0x04
#define FSAT_RESOLVE_BENEATH 0x08

struct fsat_open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};

/* Whether openat2 works here. -1: not yet known; 0: missing (ENOSYS on an old kernel, or a
 * seccomp filter, gVisor's or a container runtime's, that answers EPERM or EINVAL to a
 * syscall it does not know: only the first answer is read so); 1: works. Once 0, every
 * open takes the walk, which gives the same guarantee at one syscall per component. */
static int have_openat2 = -1;

/* The same guarantee without openat2: one component at a time, each opened with
 * O_NOFOLLOW beneath the fd of the one before, so
 *   - a symlink anywhere (planted before, or swapped in during the walk) is never followed:
 *     O_NOFOLLOW | O_DIRECTORY fails on it, and the component is not used;
 *   - nothing leaves dirfd: ".." is refused (openat2's RESOLVE_BENEATH would allow one that
 *     stays inside; refusing every one is stricter, and no caller passes one), and each
 *     step is relative to an fd already held, so renaming a directory above does not move
 *     the walk;
 *   - with create, a missing component is made with mkdirat in the held directory and then
 *     opened O_NOFOLLOW like any other: if the sandbox raced a symlink into the name, the
 *     open refuses it.
 * Intermediate components are opened O_PATH (search permission is enough, as for openat2);
 * the last is reopened with the caller's flags through "." of its O_PATH fd. */
static int walk(int dirfd, const char *rel, int flags, bool create, mode_t mode)
{
    char comp[NAME_MAX + 1];
    int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);

    while (cur >= 0 && *rel) {
        size_t n = strcspn(rel, "/");
        int next, e;
        struct stat st;

        if (n == 0) {           /* "a//b", a trailing '/' */
            rel++;
            continue;
        }
        if (n > NAME_MAX) {
            close(cur);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(comp, rel, n);
        comp[n] = '\0';
        rel += n;
        if (!strcmp(comp, "..")) {
            close(cur);
            errno = ELOOP;      /* out of dirfd: openat2 says EXDEV, said as ELOOP below */
            return -1;
        }
        next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            /* EEXIST: made meanwhile (another client, the sandbox); the open decides */
            if (mkdirat(cur, comp, mode) < 0 && errno != EEXIST) {
                e = errno;
                close(cur);
                errno = e;
                return -1;
            }
            next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (next < 0) {
            e = errno;
            /* O_NOFOLLOW | O_DIRECTORY on a symlink fails with ENOTDIR; say ELOOP, as
             * openat2 does, so that callers can tell "a link was in the way". */
            if (e == ENOTDIR && fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(st.st_mode))
                e = ELOOP;
            close(cur);
            errno = e;
            return -1;
        }
        close(cur);
        cur = next;
    }
    if (cur >= 0 && !(flags & O_PATH)) {
        /* the held directory itself, with the caller's access (readdir wants O_RDONLY) */
        int fd = openat(cur, ".", flags | O_DIRECTORY | O_CLOEXEC);
        int e = errno;
        close(cur);
        errno = e;
        cur = fd;
    }
    return cur;
}

static int open_at(int dirfd, const char *rel, size_t len, int flags, bool create, mode_t mode)
{
    char path[PATH_MAX];
    const char *p = path;
    int fd;

    /* a copy: openat2 wants a NUL-terminated string, and the caller's may be a slice */
    if (len >= sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, rel, len);
    path[len] = '\0';
    /* relative to dirfd whatever it starts with: a leading '/' would make openat2 refuse
     * (EXDEV) where the walk would not, so both read "/a" as "a" */
    while (*p == '/')
        p++;
    if (!*p)
        return flags & O_PATH ? fcntl(dirfd, F_DUPFD_CLOEXEC, 3)
                              : openat(dirfd, ".", flags | O_DIRECTORY | O_CLOEXEC);
    if (have_openat2 != 0) {
        /* RESOLVE_BENEATH: no ".." above dirfd, no absolute symlink, no escape however the
         * tree changes during the lookup; RESOLVE_NO_SYMLINKS: no symlink anywhere, even one
         * that stays inside (a name that was checked must be the name that is used);
         * RESOLVE_NO_MAGICLINKS: no /proc/PID/fd-style link that jumps to any open file. */
        struct fsat_open_how how = {
            .flags = (uint64_t)(flags | O_DIRECTORY | O_CLOEXEC),
            .resolve = FSAT_RESOLVE_BENEATH | FSAT_RESOLVE_NO_SYMLINKS |
                       FSAT_RESOLVE_NO_MAGICLINKS,
        };
        fd = (int)syscall(SYS_openat2, dirfd, p, &how, sizeof(how));
        if (fd >= 0) {
            have_openat2 = 1;
            return fd;
        }
        if (errno == ENOSYS || (have_openat2 < 0 && (errno == EPERM || errno == EINVAL))) {
            have_openat2 = 0;
        } else if (!(create && errno == ENOENT)) {
            /* EXDEV from RESOLVE_BENEATH means an escape attempt: said as a link in the way */
            if (errno == EXDEV)
                errno = ELOOP;
            return -1;
        }
        /* create and a component missing: the walk makes it (openat2 cannot) */
    }
    return walk(dirfd, p, flags, create, mode);
}

void sbx_fsat_walk_only(void)
{
    have_openat2 = 0;
}

int sbx_open_beneath(int dirfd, const char *rel, size_t len, int flags)
{
    return open_at(dirfd, rel, len, flags, false, 0);
}

int sbx_mkdir_beneath(int dirfd, const char *rel, size_t len, int flags, mode_t mode)
{
    return open_at(dirfd, rel, len, flags, true, mode);
}

/* Opens a directory the sandbox made unreadable (chmod 000 on a directory in a session's
 * state, which sbxsh owns) so that it can be emptied: chmod 0700 through the O_PATH fd of
 * the directory itself (/proc/self/fd/N names that inode, not a path the sandbox could
 * swap a symlink into: chmod(path) would follow one to a host file). */
static int open_unreadable(int dirfd, const char *name)
{
    char proc[64];
    int pfd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), fd = -1;

    if (pfd < 0)
        return -1;
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
    if (chmod(proc, 0700) == 0)
        fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    else
        errno = EACCES;         /* no /proc (or not ours): the original failure */
    int e = errno;
    close(pfd);
    errno = e;
    return fd;
}

/*
 * rm -rf, as a loop over an explicit stack of levels rather than a recursion: a tree the
 * sandbox made can be deeper than our fd limit (and than our stack), and neither may stop
 * its removal. Each level keeps its name in the level above, its identity (device and
 * inode) and the names in it whose removal failed; only the deepest RM_HELD levels keep
 * their directory open (fewer when the fd limit is lower: EMFILE lets the oldest go).
 *
 * The walk down is by openat(O_NOFOLLOW) from a held fd, as always. The walk back up to a
 * level let go is through "..", the one step that could leave the tree: the sandbox may
 * have moved the directory we are in elsewhere meanwhile, and ".." is then its new parent,
 * possibly outside the held fd. So a level reopened through ".." must be the directory it
 * was (same device and inode), and must still hold the one we came from under its name;
 * anything else stops the whole removal (ESTALE), and what is left stays. A reopened level
 * is read again from its start: what was removed is gone, what failed is skipped.
 */
#define RM_HELD 32

typedef struct rm_level {
    char *name;             /* in the level above */
    dev_t dev;
    ino_t ino;
    DIR *d;                 /* NULL: let go, reopened through ".." on the way back */
    char **failed;          /* names in it not removed: not tried again when reread */
    size_t nfailed, afailed;
} rm_level;

typedef struct rm_walk {
    rm_level *lv;
    size_t n, alloc;
    size_t lo;              /* levels [lo, n) are held; those below lo are let go */
    dev_t dev;              /* the file system it stays on */
    int first;              /* the first failure's errno */
} rm_walk;

static void rm_fail(rm_walk *w, int e)
{
    if (!w->first)
        w->first = e;
}

static bool rm_failed(const rm_level *l, const char *name)
{
    for (size_t i = 0; i < l->nfailed; i++)
        if (!strcmp(l->failed[i], name))
            return true;
    return false;
}

static void rm_note_failed(rm_level *l, const char *name)
{
    if (l->nfailed == l->afailed) {
        l->afailed = l->afailed ? 2 * l->afailed : 4;
        l->failed = xrealloc(l->failed, l->afailed * sizeof(*l->failed));
    }
    l->failed[l->nfailed++] = xstrdup(name);
}

static void rm_level_free(rm_level *l)
{
    if (l->d)
        closedir(l->d);
    for (size_t i = 0; i < l->nfailed; i++)
        free(l->failed[i]);
    free(l->failed);
    free(l->name);
}

/* Lets the oldest held level go (never the deepest, which the walk reads); false when
 * there is none. */
static bool rm_let_go(rm_walk *w)
{
    if (w->n < 2 || w->lo >= w->n - 1)
        return false;
    closedir(w->lv[w->lo].d);
    w->lv[w->lo++].d = NULL;
    return true;
}

/* Removes name in parent when it is not a directory (a file, a symlink removed as itself,
 * never followed, a device...); a directory is opened into *d instead. 0 (removed, or
 * gone), or an errno value. */
static int rm_open(rm_walk *w, int parent, const char *name, DIR **d, struct stat *st)
{
    int fd;

    *d = NULL;
    if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)      /* EPERM: POSIX's word for a directory */
        return errno;
    for (;;) {
        /* O_NOFOLLOW: a symlink swapped in since the unlink is not followed into */
        fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == EACCES)
            fd = open_unreadable(parent, name);
        if (fd >= 0 || (errno != EMFILE && errno != ENFILE) || !rm_let_go(w))
            break;
    }
    if (fd < 0)
        return errno == ENOENT ? 0 : errno;
    /* another file system mounted here (a bind the sandbox's tree holds, /proc in a
     * rootfs): its files are not ours to remove; the mount point stays, and so its
     * parents, which then fail with ENOTEMPTY, as rm --one-file-system does */
    if (fstat(fd, st) < 0 || (w->dev && st->st_dev != w->dev && (errno = EXDEV)) ||
        !(*d = fdopendir(fd))) {
        int e = errno;
        close(fd);
        return e;
    }
    if (!w->dev)
        w->dev = st->st_dev;
    return 0;
}

/* The level above the deepest, reopened through ".." when it was let go (see above): its
 * fd, or -1 (ESTALE when it is not the directory it was). */
static int rm_parent_fd(rm_walk *w, int top)
{
    rm_level *cur = &w->lv[w->n - 1], *up;
    struct stat st, here;
    int fd;

    if (w->n == 1)
        return top;
    up = &w->lv[w->n - 2];
    if (up->d)
        return dirfd(up->d);
    fd = openat(dirfd(cur->d), "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || st.st_dev != up->dev || st.st_ino != up->ino ||
        fstatat(fd, cur->name, &here, AT_SYMLINK_NOFOLLOW) < 0 || here.st_dev != cur->dev ||
        here.st_ino != cur->ino || !(up->d = fdopendir(fd))) {
        close(fd);
        errno = ESTALE;
        return -1;
    }
    w->lo = w->n - 2;
    return fd;
}

static void rm_push(rm_walk *w, const char *name, DIR *d, const struct stat *st)
{
    if (w->n == w->alloc) {
        w->alloc = w->alloc ? 2 * w->alloc : 16;
        w->lv = xrealloc(w->lv, w->alloc * sizeof(*w->lv));
    }
    w->lv[w->n++] = (rm_level){ .name = xstrdup(name), .dev = st->st_dev, .ino = st->st_ino,
                                .d = d };
    if (w->n - w->lo > RM_HELD)
        rm_let_go(w);
}

/* rm -rf of name in top. Returns 0 or an errno value, the first failure's (the rest of the
 * tree is still removed, but after an ESTALE). */
static int rm_tree(int top, const char *name)
{
    rm_walk w = { 0 };
    struct stat st;
    DIR *d;
    int e = rm_open(&w, top, name, &d, &st);

    if (e || !d)
        return e;
    rm_push(&w, name, d, &st);
    while (w.n) {
        rm_level *cur = &w.lv[w.n - 1];
        struct dirent *de = readdir(cur->d);

        if (de) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
                rm_failed(cur, de->d_name))
                continue;
            if ((e = rm_open(&w, dirfd(cur->d), de->d_name, &d, &st))) {
                rm_fail(&w, e);
                rm_note_failed(cur, de->d_name);
            } else if (d) {
                rm_push(&w, de->d_name, d, &st);
            }
            continue;
        }
        /* the end of the deepest level: it is removed from the one above */
        int up = rm_parent_fd(&w, top);
        if (up < 0) {
            rm_fail(&w, errno);
            break;
        }
        if (unlinkat(up, cur->name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
            rm_fail(&w, errno);
            if (w.n > 1)
                rm_note_failed(&w.lv[w.n - 2], cur->name);
        }
        rm_level_free(cur);
        w.n--;
    }
    while (w.n)
        rm_level_free(&w.lv[--w.n]);
    free(w.lv);
    return w.first;
}

int sbx_rm_beneath(int dirfd, const char *name)
{
    int e = rm_tree(dirfd, name);

    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

int sbx_mkdir_p(const char *path, mode_t mode, sbx_err *err)
{
    char *p = xstrdup(path);

    /* each prefix ending at a '/' (the first character skipped: "/" itself exists), then
     * the whole; EEXIST is what most of them say */
    for (char *s = p + (p[0] != '\0');; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (p[0] && mkdir(p, mode) < 0 && errno != EEXIST) {
                sbx_errno(err, "cannot create directory %s", p);
                free(p);
                return -1;
            }
            if (!c)
                break;
            *s = c;
        }
    }
    free(p);
    return 0;
}
