/* Safe operations beneath a root; see safefs.h. */
#include "sync/safefs.h"
#include "sync/wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef RESOLVE_NO_MAGICLINKS
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#endif

struct sf_open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};

int sf_check_relpath(const char *p, size_t len, sbx_err *err)
{
    size_t depth = 0, start = 0;
    if (!len)
        return sbx_errf(err, "empty path");
    if (len > SYNC_MAX_PATH)
        return sbx_errf(err, "path of %zu bytes is over the %d-byte limit", len, SYNC_MAX_PATH);
    if (memchr(p, '\0', len))
        return sbx_errf(err, "path contains a NUL byte");
    if (p[0] == '/')
        return sbx_errf(err, "absolute path '%.*s'", (int)(len > 200 ? 200 : len), p);
    for (size_t i = 0; i <= len; i++) {
        if (i < len && p[i] != '/')
            continue;
        size_t n = i - start;
        if (n == 0)
            return sbx_errf(err, "empty component in '%.*s'", (int)(len > 200 ? 200 : len), p);
        if (n > SYNC_MAX_NAME)
            return sbx_errf(err, "a component of %zu bytes is over the %d-byte limit", n,
                            SYNC_MAX_NAME);
        if ((n == 1 && p[start] == '.') || (n == 2 && p[start] == '.' && p[start + 1] == '.'))
            return sbx_errf(err, "'.' or '..' component in '%.*s'",
                            (int)(len > 200 ? 200 : len), p);
        if (++depth > SYNC_MAX_DEPTH)
            return sbx_errf(err, "path deeper than %d components", SYNC_MAX_DEPTH);
        start = i + 1;
    }
    return 0;
}

bool sf_is_internal_name(const char *name, size_t len)
{
    return (len >= sizeof(SF_TEMP_PREFIX) - 1 &&
            !memcmp(name, SF_TEMP_PREFIX, sizeof(SF_TEMP_PREFIX) - 1)) ||
           (len >= sizeof(SF_STAGE_PREFIX) - 1 &&
            !memcmp(name, SF_STAGE_PREFIX, sizeof(SF_STAGE_PREFIX) - 1));
}

void sf_split(const char *rel, size_t len, size_t *dir_len, const char **name)
{
    size_t i = len;
    while (i > 0 && rel[i - 1] != '/')
        i--;
    *name = rel + i;
    *dir_len = i ? i - 1 : 0;
}

/* -1: unknown, 0: missing (ENOSYS, or a sandbox that refuses it), 1: works. */
static int have_openat2 = -1;

static int open_beneath2(int rootfd, const char *path)
{
    struct sf_open_how how = {
        .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    return (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
}

/* Without openat2: the same guarantee one component at a time, each opened O_NOFOLLOW
 * beneath the one before (made when create), so no symlink is followed and nothing leaves
 * rootfd (the caller checked that rel has no "..", sf_check_relpath()). */
static int open_walk(int rootfd, const char *rel, size_t len, bool create)
{
    char comp[SYNC_MAX_NAME + 1];
    int cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
    size_t i = 0;
    if (cur < 0)
        return -1;
    while (i < len) {
        size_t j = i;
        int next;
        while (j < len && rel[j] != '/')
            j++;
        memcpy(comp, rel + i, j - i);
        comp[j - i] = '\0';
        next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
                int e = errno;
                close(cur);
                errno = e;
                return -1;
            }
            next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (next < 0) {
            int e = errno;
            /* O_PATH|O_NOFOLLOW on a symlink opens the link itself only without
             * O_DIRECTORY; with it, the kernel says ENOTDIR. Say ELOOP like openat2. */
            struct stat st;
            if (e == ENOTDIR && fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(st.st_mode))
                e = ELOOP;
            close(cur);
            errno = e;
            return -1;
        }
        close(cur);
        cur = next;
        i = j + 1;
    }
    return cur;
}

int sf_open_dir(int rootfd, const char *rel, size_t rel_len, bool create, sbx_err *err)
{
    char path[SYNC_MAX_PATH + 1];
    int fd;

    if (rel_len == 0) {
        fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
            sbx_errno(err, "dup");
        return fd;
    }
    if (rel_len > SYNC_MAX_PATH) {
        errno = ENAMETOOLONG;
        return sbx_errno(err, "open directory");
    }
    memcpy(path, rel, rel_len);
    path[rel_len] = '\0';
    if (have_openat2 != 0) {
        fd = open_beneath2(rootfd, path);
        if (fd >= 0) {
            have_openat2 = 1;
            return fd;
        }
        if (errno == ENOSYS || (have_openat2 < 0 && (errno == EPERM || errno == EINVAL))) {
            have_openat2 = 0;
        } else if (!(create && errno == ENOENT)) {
            /* EXDEV from RESOLVE_BENEATH means an escape attempt: say so plainly. */
            if (errno == EXDEV)
                errno = ELOOP;
            return sbx_errno(err, "open directory '%s'", path);
        }
    }
    fd = open_walk(rootfd, path, rel_len, create);
    if (fd < 0)
        return sbx_errno(err, "open directory '%s'", path);
    return fd;
}

void sf_tempname(char *name, size_t namesz)
{
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(name, namesz, SF_TEMP_PREFIX "%ld-%u-%lx", (long)getpid(), ++counter,
             (unsigned long)(ts.tv_nsec ^ ts.tv_sec));
}

int sf_mktemp(int dirfd, char *name, size_t namesz, mode_t mode)
{
    for (int tries = 0; tries < 100; tries++) {
        int fd;
        sf_tempname(name, namesz);
        fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

int sf_same_content(int fd_a, int fd_b)
{
    char a[65536], b[65536];
    off_t off = 0;
    for (;;) {
        ssize_t na = pread(fd_a, a, sizeof(a), off);
        ssize_t nb;
        if (na < 0)
            return -1;
        nb = pread(fd_b, b, (size_t)na ? (size_t)na : 1, off);
        if (nb < 0)
            return -1;
        if (na == 0)
            return nb == 0;
        /* A short read on b is a different length (regular files read fully). */
        if (nb != na || memcmp(a, b, (size_t)na))
            return 0;
        off += na;
    }
}

void sf_remove_tree(int parent, const char *name)
{
    int fd;
    DIR *d;
    struct dirent *de;

    if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
        return;
    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        sf_remove_tree(dirfd(d), de->d_name);
    }
    closedir(d);
    unlinkat(parent, name, AT_REMOVEDIR);
}

int sf_copy_fd(int from, int to)
{
    char buf[65536];
    off_t off = 0;
    for (;;) {
        ssize_t n = pread(from, buf, sizeof(buf), off);
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        if (write_full(to, buf, (size_t)n) < 0)
            return -1;
        off += n;
    }
}

/*
 * The name is chosen by trying to make the entry, not by looking first: a look then a
 * rename left a window in which the name could be taken, and after 1,000 taken names the
 * last one was returned anyway and the caller's rename replaced that file. place() fails
 * with EEXIST on a taken name, and the next one is tried.
 */
int sf_conflict_place(int dirfd, const char *name, char *out, size_t outsz,
                      int (*place)(int dirfd, const char *cname, void *ctx), void *ctx)
{
    char stamp[32];
    time_t t = time(NULL);
    struct tm tm;
    size_t nlen = strlen(name);

    gmtime_r(&t, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
    for (int n = 0; n < 1000; n++) {
        char suffix[64];
        size_t slen = (size_t)snprintf(suffix, sizeof(suffix), ".sbx-conflict-sandbox-%s%s%.0d",
                                       stamp, n ? "-" : "", n);
        size_t keep = nlen;
        if (keep + slen > NAME_MAX)
            keep = NAME_MAX - slen;
        snprintf(out, outsz, "%.*s%s", (int)keep, name, suffix);
        if (place(dirfd, out, ctx) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

int sf_rename_noreplace(int olddirfd, const char *oldname, int newdirfd, const char *newname)
{
    struct stat st;
#ifdef SYS_renameat2
    /* RENAME_NOREPLACE (1): the libc wrapper is not in every libc the agent builds with */
    if (syscall(SYS_renameat2, olddirfd, oldname, newdirfd, newname, 1) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
#endif
    /* No RENAME_NOREPLACE here (an old kernel, a file system without it): a look first. A
     * writer racing this very name wins, which the names' timestamp makes unlikely. */
    if (fstatat(newdirfd, newname, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        return -1;
    }
    return renameat(olddirfd, oldname, newdirfd, newname);
}

int sf_set_mtime(int fd, int64_t mtime_ns)
{
    struct timespec ts[2];
    int64_t s = mtime_ns / 1000000000, ns = mtime_ns % 1000000000;
    if (ns < 0) {
        ns += 1000000000;
        s--;
    }
    ts[0].tv_sec = ts[1].tv_sec = (time_t)s;
    ts[0].tv_nsec = ts[1].tv_nsec = (long)ns;
    return futimens(fd, ts);
}

int64_t sf_stat_mtime(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

int64_t sf_stat_ctime(const struct stat *st)
{
    return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}
