/*
 * Helpers every part uses (util.h): the error convention (sbx_errf(), sbx_errno(),
 * sbx_err_prefix(), which sanitize what they format through common/report.h), allocation that
 * aborts on out-of-memory (xmalloc() and kin), EINTR-safe I/O (read_full(), write_full()),
 * read_file(), set_cloexec(), set_nonblock(), now_ns(). May call libc and common/ only.
 */
#include "common/util.h"
#include "common/report.h"
#include "common/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int sbx_errf(sbx_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        /* the message may quote a file name the sandbox chose or a server's text: no
         * control byte of it may reach a terminal or a log (common/report.h) */
        sbx_sanitize_inplace(err->msg, sizeof(err->msg));
    }
    return -1;
}

int sbx_errno(sbx_err *err, const char *fmt, ...)
{
    int saved = errno;
    if (err) {
        va_list ap;
        size_t n;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        n = strlen(err->msg);
        snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", strerror(saved));
        sbx_sanitize_inplace(err->msg, sizeof(err->msg));
    }
    errno = saved;
    return -1;
}

int sbx_err_prefix(sbx_err *err, const char *fmt, ...)
{
    if (err) {
        char old[sizeof(err->msg)];
        char pre[sizeof(err->msg)];
        va_list ap;
        memcpy(old, err->msg, sizeof(old));
        va_start(ap, fmt);
        vsnprintf(pre, sizeof(pre), fmt, ap);
        va_end(ap);
        /* Truncation is fine: the message is for people, not parsers. */
        size_t n = strnlen(pre, sizeof(err->msg) - 3);
        memcpy(err->msg, pre, n);
        memcpy(err->msg + n, ": ", 2);
        snprintf(err->msg + n + 2, sizeof(err->msg) - n - 2, "%s", old);
        sbx_sanitize_inplace(err->msg, sizeof(err->msg));
    }
    return -1;
}

void xdie_oom(void)
{
    static const char msg[] = "sbxsh: out of memory\n";
    ssize_t r = write(2, msg, sizeof(msg) - 1);
    (void)r;
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        xdie_oom();
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        xdie_oom();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        xdie_oom();
    return p;
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        xdie_oom();
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    strbuf sb = STRBUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    return strbuf_detach(&sb, NULL);
}

void *xgrow(void *arr, size_t *alloc, size_t n, size_t elem)
{
    size_t a = *alloc;
    if (n <= a)
        return arr;
    if (!a)
        a = 8;
    while (a < n) {
        if (a > SIZE_MAX / 2 / elem)
            xdie_oom();
        a *= 2;
    }
    arr = xrealloc(arr, a * elem);
    *alloc = a;
    return arr;
}

ssize_t read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t r = write(fd, p, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int set_cloexec(int fd, bool on)
{
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0)
        return -1;
    fl = on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC);
    return fcntl(fd, F_SETFD, fl);
}

int set_nonblock(int fd, bool on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
    return fcntl(fd, F_SETFL, fl);
}

int read_file(const char *path, size_t max, char **out, size_t *len, sbx_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    strbuf sb = STRBUF_INIT;
    if (fd < 0)
        return sbx_errno(err, "%s", path);
    if (strbuf_read_fd(&sb, fd, max) < 0) {
        int e = errno;
        close(fd);
        strbuf_release(&sb);
        if (e == EFBIG)
            return sbx_errf(err, "%s: larger than %zu bytes", path, max);
        errno = e;
        return sbx_errno(err, "read %s", path);
    }
    close(fd);
    *out = strbuf_detach(&sb, len);
    return 0;
}

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
