/*
 * Small helpers by path for the host's own files (fsutil.h): sbx_rm_rf() (through
 * common/fsat.h), sbx_write_file_atomic(), sbx_proc_starttime(), sbx_which(), sbx_file_tail().
 * For the session layer, the local backend, sbx-kube, sbx and sbx-egress; the agent does not
 * link it. May call libc and common/ only (common/README.md).
 */
#include "common/fsutil.h"
#include "common/fsat.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strbuf.h"

/* rm -rf of a path whose parent is sbxsh's own (a session's state, the agent's directory
 * that the sandbox writes): the parent by its path, everything below by fd with no link
 * followed and no mount crossed (sbx_rm_beneath), so that a symlink the sandbox left in
 * the tree removes the link, never the host files it points to. A missing path is 0. */
int sbx_rm_rf(const char *path, sbx_err *err)
{
    char *copy = xstrdup(path), *slash, *name;
    size_t n = strlen(copy);
    int dfd, r;

    while (n > 1 && copy[n - 1] == '/')
        copy[--n] = '\0';      /* "dir/" is dir */
    slash = strrchr(copy, '/');
    name = slash ? slash + 1 : copy;
    if (slash == copy)
        dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    else if (slash) {
        *slash = '\0';
        dfd = open(copy, O_PATH | O_DIRECTORY | O_CLOEXEC);
    } else
        dfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    /* the parent by its path (sbxsh's own state directory), the tree beneath it by fd */
    r = dfd < 0 ? (errno == ENOENT ? 0 : -1) : sbx_rm_beneath(dfd, name);
    if (r < 0)
        sbx_errno(err, "cannot remove %s", path);
    if (dfd >= 0)
        close(dfd);
    free(copy);
    return r;
}

/* Writes path whole or not at all: a temp file beside it (O_NOFOLLOW: not through a link
 * planted at that name), fsync'ed before the rename over path, so that a crash or a full
 * disk leaves the old content, never a torn file that the next reader takes for state. */
int sbx_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                          sbx_err *err)
{
    char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        sbx_errno(err, "cannot write %s", tmp);
        free(tmp);
        return -1;
    }
    if (write_full(fd, data, len) < 0 || fsync(fd) < 0 || close(fd) < 0) {
        sbx_errno(err, "cannot write %s", tmp);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    if (rename(tmp, path) < 0) {
        sbx_errno(err, "cannot rename %s to %s", tmp, path);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

/* A process's start time (clock ticks since boot, /proc/PID/stat's field 22), 0 when it
 * is gone or a zombie. With the pid it names one process for good: what sbxsh records of
 * a sandbox or a proxy, so that a reused pid is never signalled (or taken for alive). */
uint64_t sbx_proc_starttime(pid_t pid)
{
    char path[64], buf[1024];
    int fd;
    ssize_t n;
    char *p;
    unsigned long long start = 0;

    if (pid <= 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read_full(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields restart
     * after its last ')'. Field 3 is the state; a zombie is not alive. */
    p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
        return 0;
    p += 2;
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    if (!p || sscanf(p, "%llu", &start) != 1)
        return 0;
    return start;
}

/* A regular file we may execute (a directory named like the program is not one). */
static bool is_exec(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The program name as PATH finds it (then the system directories), or NULL. Relative
 * PATH entries are skipped: "." or "bin" would find a program in whatever directory sbxsh
 * runs in, a code directory the sandbox writes. */
char *sbx_which(const char *name)
{
    const char *path = getenv("PATH");
    strbuf dirs = STRBUF_INIT;

    strbuf_addf(&dirs, "%s:/usr/sbin:/usr/bin:/sbin:/bin", path ? path : "");
    for (char *d = dirs.buf, *e; d; d = e) {
        e = strchr(d, ':');
        if (e)
            *e++ = '\0';
        if (d[0] != '/')
            continue;
        char *cand = xasprintf("%s/%s", d, name);
        if (is_exec(cand)) {
            strbuf_release(&dirs);
            return cand;
        }
        free(cand);
    }
    strbuf_release(&dirs);
    return NULL;
}

/* The last max bytes of a file (a log), for a message; "" when it cannot be read. The
 * caller shows it through the report sink, which escapes what the sandbox wrote there. */
char *sbx_file_tail(const char *path, size_t max)
{
    char *buf = xmalloc(max + 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = 0;
    buf[0] = '\0';
    if (fd < 0)
        return buf;
    off_t size = lseek(fd, 0, SEEK_END);
    if (size > 0) {
        off_t from = size > (off_t)max ? size - (off_t)max : 0;
        if (lseek(fd, from, SEEK_SET) == from)
            n = read_full(fd, buf, max);
    }
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    /* Trim a trailing newline so that the tail fits in a message. */
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    return buf;
}
