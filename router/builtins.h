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
 * Standard output is buffered as bash buffers it (bash makes stdout line
 * buffered): an error message written while output is pending first lets
 * out every complete line before it, so stdout and stderr sent to the same
 * place interleave as they do under bash.
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
    int out_fd;             /* standard output; ignored with BI_CHECK */
    int err_fd;             /* where messages go; -1 for none */
    const char *errname;    /* "sbxsh": messages start "sbxsh: line N: printf: " */
    unsigned line;          /* 0: no "line N: " (interactive) */
    unsigned flags;         /* BI_* */
    const char *why;        /* set on BI_REFUSE */
    /* the builtins' own */
    strbuf out;             /* output not yet written */
    int write_errno;        /* a write to out_fd failed */
} bi_env;

/* args excludes the command name. Returns the exit status (or BI_REFUSE). */
int route_builtin_echo(char *const *args, size_t nargs, bi_env *env);
int route_builtin_printf(char *const *args, size_t nargs, bi_env *env);

#endif
