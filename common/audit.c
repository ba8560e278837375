/*
 * The audit log's writer (audit.h). The directory is sbxsh's own state root (never inside a
 * code directory, never the sandbox's); it is opened once and every name beneath it by
 * *at() without following a symlink. A record is one write() with O_APPEND, so concurrent
 * writers (sbxsh processes, holders) never interleave within a record; the lock is for the
 * rotation: a writer holding it sees the file's size and renames it before anyone appends
 * to the old one. The lock is waited for at most 2 s; without it the record is written all
 * the same (an append cannot be lost to a rotation it did not see: that rotation renamed the
 * file the writer then opens anew). The secrets of URLs (urlcred.h) are stripped from it.
 */
#include "common/audit.h"
#include "common/fsat.h"
#include "common/urlcred.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int sbx_audit_append(const char *dir, uint64_t max, const char *record, size_t len, sbx_err *err)
{
    int dfd, lfd, fd;
    bool locked = false;
    struct stat st;
    strbuf line = STRBUF_INIT;

    if (!max)
        return 0;
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0 && errno == ENOENT && sbx_mkdir_p(dir, 0700, err) == 0)
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return sbx_errno(err, "cannot open %s for the audit log", dir);
    lfd = openat(dfd, "audit.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    for (int i = 0; lfd >= 0 && i < 100; i++) {
        if (flock(lfd, LOCK_EX | LOCK_NB) == 0) {
            locked = true;
            break;
        }
        usleep(20000);
    }
    if (locked && fstatat(dfd, SBX_AUDIT_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (uint64_t)st.st_size + len + 1 > max && st.st_size > 0) {
        /* rotation: .2 -> .3, .1 -> .2, the file -> .1 (the oldest is replaced) */
        for (int k = SBX_AUDIT_KEEP - 1; k >= 1; k--) {
            char from[64], to[64];
            snprintf(from, sizeof(from), SBX_AUDIT_FILE ".%d", k);
            snprintf(to, sizeof(to), SBX_AUDIT_FILE ".%d", k + 1);
            renameat(dfd, from, dfd, to);
        }
        renameat(dfd, SBX_AUDIT_FILE, dfd, SBX_AUDIT_FILE ".1");
    }
    /* a token in a URL (https://user:TOKEN@host) typed in a line never reaches the file */
    urlcred_strip(record, len, &line);
    strbuf_addch(&line, '\n');
    fd = openat(dfd, SBX_AUDIT_FILE, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    int ret = 0;
    if (fd < 0 || write(fd, line.buf, line.len) != (ssize_t)line.len)
        ret = sbx_errno(err, "cannot write the audit log %s/" SBX_AUDIT_FILE, dir);
    if (fd >= 0)
        close(fd);
    if (lfd >= 0)
        close(lfd);
    close(dfd);
    strbuf_release(&line);
    return ret;
}
