/*
 * bash's echo and printf builtins, for host parts.
 *
 * They behave as bash 5.2's (xpg_echo off, not POSIX mode): the same
 * options, escapes, format reuse, number parsing, %b, %q, error messages and
 * exit statuses, in the locale the environment names (LANG, LC_*), as bash
 * sets it at startup. A few features are left to the sandbox's bash, and
 * the router checks for them first with BI_CHECK: printf's %n (assigns a
 * shell variable) and %(...)T (the clock and TZ), \u and \U escapes (their
 * output depends on iconv), and output beyond ROUTE_MAX_OUTPUT.
 *
 * Standard output is collected in a strbuf and written by the caller when
 * the builtin returns, as bash's stdio buffer is flushed; error messages go
 * to err_fd at once, so their order relative to the output matches bash's.
 */
#ifndef SBX_ROUTER_BUILTINS_H
#define SBX_ROUTER_BUILTINS_H

#include "common/strbuf.h"

#include <stdbool.h>
#include <stddef.h>

enum {
    BI_CHECK = 1 << 0,   /* a dry run: print no messages, refuse what is not supported */
};

/* Returned instead of a status when a BI_CHECK run meets something the
 * host does not do; *why (if not NULL) names it. */
#define BI_REFUSE (-1)

typedef struct bi_env {
    int err_fd;             /* where messages go; -1 for none */
    const char *errname;    /* "sbxsh": messages start "sbxsh: line N: printf: " */
    unsigned line;          /* 0: no "line N: " (interactive) */
    unsigned flags;         /* BI_* */
    const char *why;        /* set on BI_REFUSE */
} bi_env;

/* args excludes the command name. Appends the output to out and returns the
 * exit status (or BI_REFUSE). */
int bi_echo(char *const *args, size_t nargs, bi_env *env, strbuf *out);
int bi_printf(char *const *args, size_t nargs, bi_env *env, strbuf *out);

/* Writes out to fd as bash flushes its stdout: on a failure prints
 * "NAME: line N: CMD: write error: ..." and returns 1, else status. */
int bi_flush(const char *cmd, int fd, const strbuf *out, int status, const bi_env *env);

#endif
