/*
 * Small helpers every part uses: allocation that cannot fail (out of memory
 * aborts, as git's xmalloc does), EINTR-safe I/O, and the error convention.
 *
 * Error convention: a function that can fail returns 0 on success and -1 on
 * failure, and fills a caller-provided `sbx_err` with a message that says
 * what went wrong and, where possible, what to do. Only main() decides to
 * exit. sbx_errf() returns -1 so that `return sbx_errf(err, ...)` reads well.
 */
#ifndef SBX_COMMON_UTIL_H
#define SBX_COMMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SBX_UNUSED __attribute__((unused))
#define SBX_NORETURN __attribute__((noreturn))
#define SBX_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* sbxsh's own failures exit with this status, never confused with a command's. */
#define SBX_EXIT_INTERNAL 125

typedef struct sbx_err {
    char msg[1024];
} sbx_err;

int sbx_errf(sbx_err *err, const char *fmt, ...) SBX_PRINTF(2, 3);
/* Like sbx_errf, with ": strerror(errno)" appended. */
int sbx_errno(sbx_err *err, const char *fmt, ...) SBX_PRINTF(2, 3);
/* Prefixes an existing message: "what: <old message>". */
int sbx_err_prefix(sbx_err *err, const char *fmt, ...) SBX_PRINTF(2, 3);

SBX_NORETURN void xdie_oom(void);
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) SBX_PRINTF(1, 2);

/* Grows *arr (of *alloc elements of elem bytes) to hold at least n. */
void *xgrow(void *arr, size_t *alloc, size_t n, size_t elem);
#define XGROW(arr, alloc, n) ((arr) = xgrow((arr), &(alloc), (n), sizeof(*(arr))))

/* Reads/writes everything, retrying on EINTR and short counts.
 * read_full returns the number of bytes read (short only at EOF) or -1. */
ssize_t read_full(int fd, void *buf, size_t n);
int write_full(int fd, const void *buf, size_t n);
int set_cloexec(int fd, bool on);
int set_nonblock(int fd, bool on);

/* Reads a whole file (up to max bytes) into a malloc'd NUL-terminated buffer. */
int read_file(const char *path, size_t max, char **out, size_t *len, sbx_err *err);

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);

/* The sink for sbxsh's own messages and the sanitizer of quoted text, in every file that
 * reports errors (as git-compat-util.h declares die, error and warning). */
#include "common/report.h"

#endif
