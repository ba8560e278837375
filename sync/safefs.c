/*
 * Safe operations beneath a root (safefs.h): the checks every path the agent sends passes
 * before the host acts on it, and the small file-system steps the host's apply
 * (sync/hostwrite.c) and the agent's (sync/agent_apply.c) build on. The sandbox is assumed
 * to send any bytes as a path and to change anything beneath the root at any moment, so
 * nothing here trusts a name it did not just check or an entry it did not just open.
 */
#include "sync/safefs.h"
#include "sync/wire.h"
#include "common/fsat.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A relative path as the wire carries it, refused unless every component is a plain name.
 * Each refusal is an attack the host would otherwise act on: an absolute path or a ".."
 * names a file outside the tree (a pull writing ~/.bashrc), a NUL cuts the name the C
 * calls see short of the one that was checked, an empty component ("a//b") or "." gives
 * two spellings of one file (a second, unchecked manifest entry for it), and the length,
 * name and depth limits keep a hostile path from costing unbounded memory or stack in the
 * walks that follow. The first 200 bytes at most are quoted back (a message stays short). */
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

/* The names the appliers make for themselves (a temp file, a pull's stage directory): the
 * sandbox may not send one, or it could make the host commit, or clean up, a file of its
 * choosing as if it were the host's own half-written one; the scans skip them too. */
bool sf_is_internal_name(const char *name, size_t len)
{
    return (len >= sizeof(SF_TEMP_PREFIX) - 1 &&
            !memcmp(name, SF_TEMP_PREFIX, sizeof(SF_TEMP_PREFIX) - 1)) ||
           (len >= sizeof(SF_STAGE_PREFIX) - 1 &&
            !memcmp(name, SF_STAGE_PREFIX, sizeof(SF_STAGE_PREFIX) - 1));
}

/* "a/b/c" into the directory "a/b" and the name "c" (no copy); a path already checked. */
void sf_split(const char *rel, size_t len, size_t *dir_len, const char **name)
{
    size_t i = len;
    while (i > 0 && rel[i - 1] != '/')
        i--;
    *name = rel + i;
    *dir_len = i ? i - 1 : 0;
}

/* The directory an entry goes in, as an O_PATH fd: every later step is an *at() call on
 * it, so a symlink the sandbox swaps in for a directory after this open changes nothing
 * (the fd is the directory that was opened, beneath the root, with no link followed). */
int sf_open_dir(int rootfd, const char *rel, size_t rel_len, bool create, sbx_err *err)
{
    int fd;

    /* (checked again here: a caller that skipped sf_check_relpath still cannot walk far) */
    if (rel_len > SYNC_MAX_PATH) {
        errno = ENAMETOOLONG;
        return sbx_errno(err, "open directory");
    }
    /* the walk that follows no symlink and never leaves rootfd: common/fsat.h */
    fd = create ? sbx_mkdir_beneath(rootfd, rel, rel_len, O_PATH, 0755)
                : sbx_open_beneath(rootfd, rel, rel_len, O_PATH);
    if (fd < 0)
        return rel_len ? sbx_errno(err, "open directory '%.*s'", (int)rel_len, rel)
                       : sbx_errno(err, "dup");
    return fd;
}

/* A name unlikely to be taken (pid, a counter, the clock), under SF_TEMP_PREFIX, which the
 * sandbox cannot send (sf_is_internal_name). Unlikely is enough: sf_mktemp creates it with
 * O_EXCL and tries again when it is taken. */
void sf_tempname(char *name, size_t namesz)
{
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(name, namesz, SF_TEMP_PREFIX "%ld-%u-%lx", (long)getpid(), ++counter,
             (unsigned long)(ts.tv_nsec ^ ts.tv_sec));
}

/* O_EXCL | O_NOFOLLOW: a name the sandbox made first (a file to be overwritten, or a
 * symlink to a host file for our write to go through) is never opened, only skipped. */
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

/* Whether two open files hold the same bytes: 1, 0, or -1 on a read error. Compared by
 * pread on fds already opened (and checked) by the caller, never by name, so the answer is
 * about the files that will be used. A conflict that is no conflict (both sides wrote the
 * same bytes) is then not reported. */
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

/* Copies from's whole content to to's current offset, by fds (see sf_same_content). */
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

/* A rename that never replaces what is at newname: the host's conflict copies and new
 * files must not overwrite a file that appeared there since the check (the sandbox's own
 * racing write, or a person's), which plain rename() would do silently. */
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

/* The entry's mtime (nanoseconds, negative before 1970: the remainder made positive), set
 * on the open fd; the manifest compares mtimes, so a pulled file keeps the sandbox's. */
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

/* A stat's times in nanoseconds, as the manifest keeps them. */
int64_t sf_stat_mtime(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

int64_t sf_stat_ctime(const struct stat *st)
{
    return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}
