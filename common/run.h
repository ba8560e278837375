/*
 * Starting a child process and reading what it prints, in one place (git's run-command is
 * the model): argv, environment, working directory (a held fd), the child's stdin and
 * stderr, its fds from 3 up closed, a signal policy, a cap on what is kept of its output,
 * a timeout and an interruption, EINTR handled once. The host programs' small queries
 * (git config, a tool's --version, sbx-kube's progress lines, a credential plugin) go
 * through sbx_run_capture; a child that is not waited for here (an editor, the holder, a
 * runtime, a relay) is started with sbx_run_start and reaped with sbx_run_wait. Every fork
 * of the product goes through here but the host runner's pipeline stages (router/hostrun.c)
 * and the agent's clone of a command (sync/agent_spawn.c): common/README.md says why.
 *
 * In the child, between fork and exec, only async-signal-safe calls are made: everything
 * it needs (argv, environment, /dev/null) is prepared before the fork. Two hooks run
 * ordinary code there, in a process forked from a single-threaded one: before_exec (the
 * runtime's cgroup join) and fn, the child function mode (a process of ours that runs a
 * function of this program instead of an exec: the holder, a relay, a log pump).
 */
#ifndef SBX_COMMON_RUN_H
#define SBX_COMMON_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/strbuf.h"
#include "common/util.h"

/* Where the child's stderr goes. */
typedef enum sbx_run_err {
    SBX_RUN_ERR_NULL,       /* /dev/null */
    SBX_RUN_ERR_INHERIT,    /* ours (the terminal, a log) */
    SBX_RUN_ERR_OUT,        /* into the captured output, with stdout */
    SBX_RUN_ERR_CAPTURE,    /* into err_out, its last err_tail bytes kept */
} sbx_run_err;

/* One of our fds placed in the child at a number of its own (close-on-exec cleared). */
#define SBX_RUN_FDS 6

typedef struct sbx_run_fd {
    int from;               /* ours */
    int to;                 /* the child's: 0, 1 and 2 too, over what the fields below chose */
} sbx_run_fd;

typedef struct sbx_run {
    char *const *argv;      /* argv[0] is run: a path, or looked up in PATH with path_search */
    const char *file;       /* else this file is run, with argv[0] only its name ("git") */
    char *const *env;       /* NULL: this process's environment */
    bool path_search;
    int cwd_fd;             /* the directory it runs in, held (fchdir); -1: ours */
    bool stdin_inherit;     /* stdin ours (an interactive plugin); else /dev/null */
    sbx_run_err stderr_to;
    bool keep_fds;          /* false (the default): every fd from 3 up is closed */
    bool new_pgrp;          /* its own process group: a timeout kills what it started too */
    bool setsid;            /* a new session (no controlling terminal: a detached process) */
    /* Double fork: the child is nobody's (no zombie waits on us, it outlives us);
     * sbx_run_start returns once it has execed (or fn has started), with no pid. */
    bool daemon;
    bool parent_death_kill; /* killed when we end (PR_SET_PDEATHSIG); not with daemon */
    bool stdout_null;       /* with no output read: stdout /dev/null, not ours */
    int capture_fd;         /* the child's fd the output pipe is; 0: 1 (its stdout) */
    sbx_run_fd fds[SBX_RUN_FDS];    /* placed last; kept when those from 3 up are closed */
    size_t nfds;
    /* Signals: every disposition is the default in the child and the mask is empty (a
     * handler of ours never runs there, and nothing we ignore, SIGPIPE first, is ignored
     * by the program), except the signals in keep_ignored, which stay ignored (the ones
     * sbxsh found ignored at its start, as bash leaves them). NULL: none. */
    const sigset_t *keep_ignored;
    /* Or the signals as they are here (dispositions and mask, as fork leaves them; a
     * handler is reset by the exec anyway) but those in sig_default, set to the default
     * (an editor's Ctrl-C is its own while sbxsh ignores it). */
    bool sig_inherit;
    const sigset_t *sig_default;
    /* Called in the child once everything above is in place, just before the exec: may
     * replace the argv; -1: the child ends (127), having said why on its stderr. */
    int (*before_exec)(void *ctx, char *const **argv);
    /* The child function mode: no exec, the child runs fn(ctx) and _exits with what it
     * returns. argv may then be NULL (file names it in messages). */
    int (*fn)(void *ctx);
    size_t max;             /* bytes of output kept; 0: 1 MiB. Past it: see over_max_fails */
    bool over_max_fails;    /* past max: killed, and -1 ("wrote more than"); else dropped */
    unsigned timeout_ms;    /* 0: none. Past it: killed, and -1 ("no answer within") */
    bool (*interrupted)(void *ctx);     /* polled; true: killed, and -1 ("interrupted") */
    void *ctx;
    bool secret;            /* the output holds a secret: the read buffer is zeroed after use */
    /* Output as it comes (progress lines), instead of into out: called with each chunk. */
    void (*on_output)(void *ctx, const char *buf, size_t n);
    strbuf *err_out;        /* SBX_RUN_ERR_CAPTURE's buffer */
    size_t err_tail;        /* bytes of it kept (the last); 0: 4 KiB */
} sbx_run;

/* Runs r->argv to its end, its stdout (and stderr when so asked) appended to out (may be
 * NULL with on_output, or when the output is not wanted). 0 when it ran and was reaped,
 * with its wait status in *status (see sbx_run_exit_code); -1 with err filled and errno
 * set when it could not start (pipe, fork, the exec's own errno: ENOENT for a program not
 * found), or was killed (then reaped, never left behind): ETIMEDOUT for the timeout, EINTR
 * for the interruption, EFBIG for too much output with over_max_fails. */
int sbx_run_capture(const sbx_run *r, strbuf *out, int *status, sbx_err *err);

/* Starts r->argv (or r->fn) without waiting: returns once it has execed (fn started), its
 * pid in *pid (0 with daemon: nobody waits for it). With out_fd its output comes on a pipe
 * whose read end (close-on-exec) is put there; without, stdout is ours (or /dev/null).
 * -1 with err filled and errno set when it could not start (the exec's errno: ENOENT for
 * a program not found; before_exec's); nothing is then left running. max, timeout_ms,
 * interrupted, on_output and stderr_to SBX_RUN_ERR_CAPTURE are sbx_run_capture's only. */
int sbx_run_start(const sbx_run *r, pid_t *pid, int *out_fd, sbx_err *err);

/* Waits for pid to end, EINTR retried: 0 with its wait status in *status (may be NULL), or
 * -1 with err filled and errno set (ECHILD). */
int sbx_run_wait(pid_t pid, int *status, sbx_err *err);

/* A wait status as a shell's $?: the exit status, or 128 + the signal. */
int sbx_run_exit_code(int status);

#endif
