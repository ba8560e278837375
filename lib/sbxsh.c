/*
 * libsbxsh (lib/sbxsh.h): a session handle, and lines run on it exactly as `sbxsh -c`.
 *
 * Why each line is an sbxsh process, and not the line executor called in the caller's
 * process: what runs a line is process-wide state. The session client installs handlers
 * for SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH and ignores SIGPIPE while a command runs
 * (session/session.c, one static copy of the saved dispositions), the host runner and the
 * sandbox relays use fds 0, 1 and 2, sbxsh's own messages go to stderr, and the first use
 * of a session double-forks its holder. In a caller's process that is a signal handler
 * behind its back, its stdio written to, and two threads on two sessions trampling one
 * another's saved handlers. So a run is `sbxsh -c LINE`, started by posix_spawn (a vfork
 * and exec: safe from a threaded caller, no code of ours between fork and exec), in a
 * process group of its own, with the caller's signal mask and dispositions reset as a
 * shell would give a command. The executor is the one `sbxsh -c` runs (cli/main.c,
 * cli/run.c, cli/line.c), so routing, sync, messages and statuses cannot drift; what a
 * line costs over `sbxsh -c` from a shell is this file's pipes and poll loop
 * (bench/library.sh measures it).
 *
 * The run's state machine (sbxsh_run, run_loop):
 *
 *   RUNNING --output--> callbacks and captures; stdin fed from the buffer as the pipe
 *      |                takes it (then closed: the command sees end of file)
 *      |--cancel (sbxsh_cancel, a callback's non-zero, the timeout)--> TERMINATING:
 *      |       SIGTERM to the process group (sbxsh forwards it to the sandbox's command and
 *      |       still pulls its changes back; host parts get it too)
 *      |       --CANCEL_GRACE_MS without an exit--> SIGKILL to the group
 *      `--sbxsh exits (pidfd readable)--> DRAINING: what sbxsh wrote before it exited is
 *              all in the pipes (its writes completed), so they are read until EAGAIN and
 *              the run ends; output a background process writes later is not waited for.
 *
 * Everything a run holds (pipes, pidfd, child) is released on every path, so a handle can
 * run any number of lines. The handle's lock serializes runs, status and release on it;
 * the cancel lock (held briefly) guards the one thing another thread may touch mid-run:
 * whether a run is in progress, and the cancel pipe it watches.
 */
#include "sbxsh.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#ifndef SBXSH_LIB_PROGRAM
#define SBXSH_LIB_PROGRAM "/usr/local/bin/sbxsh"
#endif

/* How long a cancelled run's processes get to end after SIGTERM before SIGKILL: above
 * sbxsh's own 3 s bound on a sandbox that does not answer a forwarded SIGTERM
 * (session/session.h, forward_signals), so that sbxsh says so itself first. */
#define CANCEL_GRACE_MS 5000
/* What sbxsh --route and sbx print is small; more is refused rather than held. */
#define SMALL_OUTPUT_MAX ((size_t)4 << 20)

#define EXPORT __attribute__((visibility("default")))

/* ---- errors and small helpers ---------------------------------------------------------- */

/* Fills err (when given) with code and a message made one line of plain characters:
 * whatever sbxsh or the sandbox said may hold control bytes, which become \xNN. */
static int fail(sbxsh_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(sbxsh_error *err, int code, const char *fmt, ...)
{
    char raw[sizeof(err->message)];
    va_list ap;
    size_t o = 0;

    if (!err)
        return -1;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    err->code = code;
    for (const unsigned char *p = (const unsigned char *)raw; *p && o + 5 < sizeof(err->message);
         p++) {
        if (*p == '\n')
            o += (size_t)snprintf(err->message + o, sizeof(err->message) - o, "%s",
                                  p[1] ? "; " : "");
        else if (*p < 0x20 || *p == 0x7f)
            o += (size_t)snprintf(err->message + o, sizeof(err->message) - o, "\\x%02x", *p);
        else
            err->message[o++] = (char)*p;
    }
    err->message[o] = '\0';
    return -1;
}

static int fail_errno(sbxsh_error *err, const char *what)
{
    int e = errno;
    return fail(err, SBXSH_E_SYSTEM, "%s: %s", what, strerror(e));
}

static void ok(sbxsh_error *err)
{
    if (err) {
        err->code = SBXSH_OK;
        err->message[0] = '\0';
    }
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A growable NULL-terminated list of strings. */
typedef struct list {
    char **v;
    size_t n, alloc;
} list;

static int list_push_owned(list *l, char *s)
{
    if (!s)
        return -1;
    if (l->n + 2 > l->alloc) {
        size_t na = l->alloc ? 2 * l->alloc : 8;
        char **nv = realloc(l->v, na * sizeof(*nv));
        if (!nv) {
            free(s);
            return -1;
        }
        l->v = nv;
        l->alloc = na;
    }
    l->v[l->n++] = s;
    l->v[l->n] = NULL;
    return 0;
}

static int list_push(list *l, const char *s)
{
    return list_push_owned(l, strdup(s));
}

static void list_clear(list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int list_copy(list *dst, const list *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (list_push(dst, src->v[i]) < 0)
            return -1;
    return 0;
}

/* A byte buffer. */
typedef struct buf {
    char *p;
    size_t len, alloc;
} buf;

static int buf_add(buf *b, const void *data, size_t n)
{
    if (b->len + n + 1 > b->alloc) {
        size_t na = b->alloc ? b->alloc : 256;
        while (na < b->len + n + 1)
            na *= 2;
        char *np = realloc(b->p, na);
        if (!np)
            return -1;
        b->p = np;
        b->alloc = na;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* ---- versions and names ---------------------------------------------------------------- */

EXPORT const char *sbxsh_version(void)
{
    return SBXSH_VERSION_STRING;
}

EXPORT const char *sbxsh_code_name(int code)
{
    switch (code) {
    case SBXSH_OK: return "SBXSH_OK";
    case SBXSH_E_INVALID: return "SBXSH_E_INVALID";
    case SBXSH_E_CONFIG: return "SBXSH_E_CONFIG";
    case SBXSH_E_RELEASED: return "SBXSH_E_RELEASED";
    case SBXSH_E_SYSTEM: return "SBXSH_E_SYSTEM";
    case SBXSH_E_SBXSH: return "SBXSH_E_SBXSH";
    }
    return "unknown";
}

EXPORT void sbxsh_free(void *p)
{
    free(p);
}

/* ---- options --------------------------------------------------------------------------- */

struct sbxsh_options {
    char *cwd, *session, *backend, *program;
    list code_dirs;
    list forward;     /* AGENT_SANDBOX_FORWARD_ENV additions */
    list env;         /* "NAME=VALUE" to set, "NAME" to remove, in order */
};

EXPORT sbxsh_options *sbxsh_options_new(void)
{
    return calloc(1, sizeof(sbxsh_options));
}

EXPORT void sbxsh_options_free(sbxsh_options *o)
{
    if (!o)
        return;
    free(o->cwd);
    free(o->session);
    free(o->backend);
    free(o->program);
    list_clear(&o->code_dirs);
    list_clear(&o->forward);
    list_clear(&o->env);
    free(o);
}

static int set_string(char **slot, const char *v, sbxsh_error *err)
{
    char *c = strdup(v);
    if (!c)
        return fail_errno(err, "out of memory");
    free(*slot);
    *slot = c;
    ok(err);
    return 0;
}

static int check_abs(const char *what, const char *path, sbxsh_error *err)
{
    if (!path || path[0] != '/')
        return fail(err, SBXSH_E_INVALID, "%s must be an absolute path (got %s%s%s)", what,
                    path ? "'" : "", path ? path : "NULL", path ? "'" : "");
    return 0;
}

EXPORT int sbxsh_options_add_code_dir(sbxsh_options *o, const char *dir, sbxsh_error *err)
{
    if (!o)
        return fail(err, SBXSH_E_INVALID, "no options");
    if (check_abs("a code directory", dir, err) < 0)
        return -1;
    if (strchr(dir, ':'))
        return fail(err, SBXSH_E_INVALID, "a code directory cannot hold ':' (%s)", dir);
    if (list_push(&o->code_dirs, dir) < 0)
        return fail_errno(err, "out of memory");
    ok(err);
    return 0;
}

EXPORT int sbxsh_options_set_cwd(sbxsh_options *o, const char *cwd, sbxsh_error *err)
{
    if (!o)
        return fail(err, SBXSH_E_INVALID, "no options");
    if (check_abs("the cwd", cwd, err) < 0)
        return -1;
    return set_string(&o->cwd, cwd, err);
}

EXPORT int sbxsh_options_set_session(sbxsh_options *o, const char *name, sbxsh_error *err)
{
    if (!o)
        return fail(err, SBXSH_E_INVALID, "no options");
    if (!name || !*name)
        return fail(err, SBXSH_E_INVALID, "a session name cannot be empty");
    return set_string(&o->session, name, err);
}

EXPORT int sbxsh_options_set_backend(sbxsh_options *o, const char *name, sbxsh_error *err)
{
    if (!o)
        return fail(err, SBXSH_E_INVALID, "no options");
    if (!name || !*name)
        return fail(err, SBXSH_E_INVALID, "a backend name cannot be empty");
    return set_string(&o->backend, name, err);
}

EXPORT int sbxsh_options_forward_env(sbxsh_options *o, const char *pattern, sbxsh_error *err)
{
    if (!o)
        return fail(err, SBXSH_E_INVALID, "no options");
    if (!pattern || !*pattern || strchr(pattern, ','))
        return fail(err, SBXSH_E_INVALID, "a forwarded variable is a name or a pattern, "
                    "without ',' (got '%s')", pattern ? pattern : "");
    if (list_push(&o->forward, pattern) < 0)
        return fail_errno(err, "out of memory");
    ok(err);
    return 0;
}

EXPORT int sbxsh_options_setenv(sbxsh_options *o, const char *name, const char *value,
                                sbxsh_error *err)
{
    char *e;
    if (!o)
        return fail(err, SBXSH_E_INVALID, "no options");
    if (!name || !*name || strchr(name, '='))
        return fail(err, SBXSH_E_INVALID, "a variable's name cannot be empty or hold '='");
    if (value) {
        size_t n = strlen(name) + strlen(value) + 2;
        e = malloc(n);
        if (e)
            snprintf(e, n, "%s=%s", name, value);
    } else {
        e = strdup(name);
    }
    if (list_push_owned(&o->env, e) < 0)
        return fail_errno(err, "out of memory");
    ok(err);
    return 0;
}

EXPORT int sbxsh_options_set_program(sbxsh_options *o, const char *path, sbxsh_error *err)
{
    if (!o)
        return fail(err, SBXSH_E_INVALID, "no options");
    if (check_abs("the sbxsh program", path, err) < 0)
        return -1;
    return set_string(&o->program, path, err);
}

/* ---- the handle ------------------------------------------------------------------------ */

struct sbxsh {
    pthread_mutex_t lock;         /* serializes run, status, release and close */
    pthread_mutex_t cancel_lock;  /* guards running and cancel_w */
    bool running;
    int cancel_w;                 /* the running run's cancel pipe (write end), -1 */
    bool released;
    char *cwd;
    char *program;                /* sbxsh */
    char *sbx;                    /* sbx, beside it */
    char *session;                /* the name, given or derived */
    bool session_given;           /* --session is passed (else sbxsh derives it, as here) */
    list env;                     /* the children's whole environment */
};

/* Removes NAME's entries from env. */
static void env_unset(list *env, const char *name)
{
    size_t n = strlen(name), j = 0;
    for (size_t i = 0; i < env->n; i++) {
        if (!strncmp(env->v[i], name, n) && env->v[i][n] == '=')
            free(env->v[i]);
        else
            env->v[j++] = env->v[i];
    }
    env->n = j;
    if (env->v)
        env->v[j] = NULL;
}

static const char *env_get(const list *env, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < env->n; i++)
        if (!strncmp(env->v[i], name, n) && env->v[i][n] == '=')
            return env->v[i] + n + 1;
    return NULL;
}

static int env_set(list *env, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *e = malloc(n);
    if (!e)
        return -1;
    snprintf(e, n, "%s=%s", name, value);
    env_unset(env, name);
    return list_push_owned(env, e);
}

/* A list joined by sep, after an existing value when there is one. */
static char *joined(const char *before, const list *l, char sep)
{
    buf b = { 0 };
    char s[2] = { sep, 0 };
    if (before && *before && buf_add(&b, before, strlen(before)) < 0)
        goto oom;
    for (size_t i = 0; i < l->n; i++)
        if ((b.len && buf_add(&b, s, 1) < 0) || buf_add(&b, l->v[i], strlen(l->v[i])) < 0)
            goto oom;
    if (!b.p && buf_add(&b, "", 0) < 0)
        goto oom;
    return b.p;
oom:
    free(b.p);
    return NULL;
}

/* The environment sbxsh runs with: the caller's, then the options' changes. */
static int build_env(sbxsh *h, const sbxsh_options *o)
{
    for (char **e = environ; e && *e; e++)
        if (strchr(*e, '=') && list_push(&h->env, *e) < 0)
            return -1;
    for (size_t i = 0; i < o->env.n; i++) {
        char *eq = strchr(o->env.v[i], '=');
        if (eq) {
            *eq = '\0';
            int rc = env_set(&h->env, o->env.v[i], eq + 1);
            *eq = '=';
            if (rc < 0)
                return -1;
        } else {
            env_unset(&h->env, o->env.v[i]);
        }
    }
    if (o->code_dirs.n) {
        char *v = joined(NULL, &o->code_dirs, ':');
        if (!v || env_set(&h->env, "AGENT_SANDBOX_CODE_DIRS", v) < 0) {
            free(v);
            return -1;
        }
        free(v);
    }
    if (o->backend && env_set(&h->env, "AGENT_SANDBOX_BACKEND", o->backend) < 0)
        return -1;
    if (o->forward.n) {
        char *v = joined(env_get(&h->env, "AGENT_SANDBOX_FORWARD_ENV"), &o->forward, ',');
        if (!v || env_set(&h->env, "AGENT_SANDBOX_FORWARD_ENV", v) < 0) {
            free(v);
            return -1;
        }
        free(v);
    }
    return 0;
}

/* ---- one child process ----------------------------------------------------------------- */

/* What a child gets and what came of it. */
typedef struct child {
    /* in */
    const char *const *argv;
    int stdin_fd;                 /* the caller's fd for stdin, or -1 */
    const void *stdin_data;       /* else these bytes (NULL: /dev/null) */
    size_t stdin_len;
    uint64_t timeout_ms;
    int cancel_r;                 /* readable: cancel (-1: none) */
    int cancel_fd;                /* the caller's: readable, cancel (-1: none) */
    /* called with each piece of output; non-zero: cancel */
    int (*out)(void *ctx, int stream, const char *data, size_t len);
    void *ctx;
    /* out */
    int wait_status;
    bool timed_out, cancelled;
} child;

static int sys_pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* Starts argv (in the handle's cwd and environment) in a process group of its own, with
 * stdin as c says and stdout, stderr on the pipes out[0], err[0] (read ends returned);
 * in[1]: the stdin pipe's write end (when c has stdin bytes). */
static int spawn_child(sbxsh *h, const child *c, pid_t *pid, int *out_r, int *err_r, int *in_w,
                       sbxsh_error *err)
{
    int op[2] = { -1, -1 }, ep[2] = { -1, -1 }, ip[2] = { -1, -1 };
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t all, none;
    int rc;

    if (pipe2(op, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0 ||
        (c->stdin_fd < 0 && c->stdin_data && pipe2(ip, O_CLOEXEC) < 0)) {
        fail_errno(err, "making a pipe");
        goto fail_pipes;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    if (c->stdin_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, c->stdin_fd, 0);
    else if (c->stdin_data)
        posix_spawn_file_actions_adddup2(&fa, ip[0], 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, op[1], 1);
    posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
    posix_spawn_file_actions_addchdir_np(&fa, h->cwd);
    /* as a shell starts a command: every signal at its default (a caller that ignores
     * SIGPIPE, as Python does, would otherwise pass that on to every command), none
     * blocked, and a process group of its own so that a cancel reaches its host parts */
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETPGROUP);
    rc = posix_spawn(pid, c->argv[0], &fa, &at, (char *const *)c->argv, h->env.v);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
        errno = rc;
        if (rc == ENOENT || rc == EACCES || rc == ENOEXEC)
            fail(err, SBXSH_E_SBXSH, "cannot run %s: %s", c->argv[0], strerror(rc));
        else
            fail_errno(err, "starting sbxsh");
        goto fail_pipes;
    }
    close(op[1]);
    close(ep[1]);
    if (ip[0] >= 0)
        close(ip[0]);
    *out_r = op[0];
    *err_r = ep[0];
    *in_w = ip[1];
    return 0;
fail_pipes:
    for (int i = 0; i < 2; i++) {
        if (op[i] >= 0)
            close(op[i]);
        if (ep[i] >= 0)
            close(ep[i]);
        if (ip[i] >= 0)
            close(ip[i]);
    }
    return -1;
}

/*
 * write() to the stdin pipe without a SIGPIPE: a command that does not read its stdin (or
 * stops) closes the pipe, and the write's SIGPIPE would kill the caller's process, which
 * may not ignore it. SIGPIPE is blocked in this thread for the write, and the one the write
 * raised (a thread-directed signal) is taken back with sigtimedwait before the mask is
 * restored, unless one was pending already (then it is the caller's, and stays).
 */
static ssize_t write_nosigpipe(int fd, const void *data, size_t n)
{
    sigset_t pipe_set, old, pending;
    bool was_pending;
    ssize_t r;
    int e;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    r = write(fd, data, n);
    e = errno;
    if (r < 0 && e == EPIPE && !was_pending) {
        struct timespec zero = { 0, 0 };
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return r;
}

/* Reads what fd has now into the callback; returns 0 at end of file, 1 when more may
 * come, -1 on error. */
static int pump(child *c, int fd, int stream, char *chunk, size_t chunk_size, bool *cancel)
{
    for (;;) {
        ssize_t n = read(fd, chunk, chunk_size);
        if (n > 0) {
            if (c->out(c->ctx, stream, chunk, (size_t)n) != 0)
                *cancel = true;
            continue;
        }
        if (n == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN)
            return 1;
        return -1;
    }
}

/* Runs the child to its end: the state machine in this file's opening comment. */
static int run_child(sbxsh *h, child *c, sbxsh_error *err)
{
    int fds[2] = { -1, -1 }, in_w = -1, pidfd = -1;
    size_t in_off = 0;
    pid_t pid;
    uint64_t start = mono_ns(), kill_at = 0;
    bool exited = false, terminating = false, cancel = false;
    char *chunk = malloc(65536);
    int rc = -1;

    if (!chunk)
        return fail_errno(err, "out of memory");
    if (spawn_child(h, c, &pid, &fds[0], &fds[1], &in_w, err) < 0) {
        free(chunk);
        return -1;
    }
    pidfd = sys_pidfd_open(pid);
    for (int i = 0; i < 2; i++)
        fcntl(fds[i], F_SETFL, O_NONBLOCK);
    if (in_w >= 0) {
        fcntl(in_w, F_SETFL, O_NONBLOCK);
        if (c->stdin_len == 0) {
            close(in_w);
            in_w = -1;
        }
    }

    while (!exited) {
        struct pollfd p[6];
        int np = 0, ix_out = -1, ix_err = -1, ix_in = -1, ix_cancel = -1, ix_pid = -1;
        int ix_cancel_fd = -1;
        int timeout = -1;
        uint64_t now = mono_ns();

        /* the timeout, then the grace after a cancel */
        if (!terminating && c->timeout_ms && now >= start + c->timeout_ms * 1000000u) {
            c->timed_out = true;
            cancel = true;
        }
        if (cancel && !terminating) {
            terminating = true;
            c->cancelled = !c->timed_out;
            kill(-pid, SIGTERM);
            kill_at = now + (uint64_t)CANCEL_GRACE_MS * 1000000u;
        }
        if (terminating && kill_at && now >= kill_at) {
            kill(-pid, SIGKILL);
            kill_at = 0;
        }
        if (!terminating && c->timeout_ms)
            timeout = (int)((start + c->timeout_ms * 1000000u - now) / 1000000u) + 1;
        if (terminating && kill_at) {
            int t = (int)((kill_at - now) / 1000000u) + 1;
            timeout = timeout < 0 || t < timeout ? t : timeout;
        }
        /* without a pidfd (an old kernel), the exit is noticed by polling waitpid */
        if (pidfd < 0 && (timeout < 0 || timeout > 20))
            timeout = 20;

        if (fds[0] >= 0) {
            ix_out = np;
            p[np++] = (struct pollfd){ .fd = fds[0], .events = POLLIN };
        }
        if (fds[1] >= 0) {
            ix_err = np;
            p[np++] = (struct pollfd){ .fd = fds[1], .events = POLLIN };
        }
        if (in_w >= 0) {
            ix_in = np;
            p[np++] = (struct pollfd){ .fd = in_w, .events = POLLOUT };
        }
        if (c->cancel_r >= 0 && !terminating) {
            ix_cancel = np;
            p[np++] = (struct pollfd){ .fd = c->cancel_r, .events = POLLIN };
        }
        if (c->cancel_fd >= 0 && !terminating) {
            ix_cancel_fd = np;
            p[np++] = (struct pollfd){ .fd = c->cancel_fd, .events = POLLIN };
        }
        if (pidfd >= 0) {
            ix_pid = np;
            p[np++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
        }
        if (poll(p, (nfds_t)np, timeout) < 0) {
            if (errno == EINTR)
                continue;
            fail_errno(err, "waiting for sbxsh");
            kill(-pid, SIGKILL);
            break;
        }
        if (ix_out >= 0 && p[ix_out].revents) {
            int r = pump(c, fds[0], SBXSH_STDOUT, chunk, 65536, &cancel);
            if (r <= 0) {
                close(fds[0]);
                fds[0] = -1;
            }
        }
        if (ix_err >= 0 && p[ix_err].revents) {
            int r = pump(c, fds[1], SBXSH_STDERR, chunk, 65536, &cancel);
            if (r <= 0) {
                close(fds[1]);
                fds[1] = -1;
            }
        }
        if (ix_in >= 0 && p[ix_in].revents) {
            /* the stdin bytes as the pipe takes them; a reader gone (EPIPE, POLLERR) ends
             * it, as a shell's here-string would end */
            ssize_t n = write_nosigpipe(in_w, (const char *)c->stdin_data + in_off,
                                        c->stdin_len - in_off);
            if (n > 0)
                in_off += (size_t)n;
            if ((n < 0 && errno != EAGAIN && errno != EINTR) || in_off == c->stdin_len ||
                (p[ix_in].revents & (POLLERR | POLLHUP))) {
                close(in_w);
                in_w = -1;
            }
        }
        if (ix_cancel >= 0 && p[ix_cancel].revents)
            cancel = true;
        /* the caller's fd is theirs: readable (or hung up) is the word, nothing is read */
        if (ix_cancel_fd >= 0 && p[ix_cancel_fd].revents)
            cancel = true;
        if ((ix_pid >= 0 && p[ix_pid].revents) || pidfd < 0) {
            int ws;
            pid_t w = waitpid(pid, &ws, pidfd < 0 ? WNOHANG : 0);
            if (w == pid) {
                exited = true;
                c->wait_status = ws;
            } else if (w < 0 && errno != EINTR) {
                fail_errno(err, "waiting for sbxsh");
                break;
            }
        }
    }
    if (exited) {
        /* DRAINING: sbxsh's writes are done, so what it wrote is in the pipes */
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0)
                pump(c, fds[i], i ? SBXSH_STDERR : SBXSH_STDOUT, chunk, 65536, &cancel);
        rc = 0;
    } else {
        /* an error above: the child is killed and reaped, never left behind */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (in_w >= 0)
        close(in_w);
    if (pidfd >= 0)
        close(pidfd);
    free(chunk);
    return rc;
}

/* ---- captures -------------------------------------------------------------------------- */

/* One stream as a result keeps it: the first head_cap bytes, then a ring of the last
 * tail_cap bytes. */
typedef struct capture {
    size_t head_cap, tail_cap;
    buf head;
    char *ring;
    size_t ring_len, ring_pos;    /* bytes in the ring; where the next one goes */
    uint64_t total;
} capture;

static int capture_init(capture *k, size_t cap)
{
    memset(k, 0, sizeof(*k));
    k->tail_cap = cap / 2;
    k->head_cap = cap - k->tail_cap;
    return 0;
}

static int capture_add(capture *k, const char *d, size_t n)
{
    k->total += n;
    if (k->head.len < k->head_cap) {
        size_t take = k->head_cap - k->head.len < n ? k->head_cap - k->head.len : n;
        if (buf_add(&k->head, d, take) < 0)
            return -1;
        d += take;
        n -= take;
    }
    if (!k->tail_cap || !n)
        return 0;
    /* the ring only once the head is full: a large cap costs nothing for a short output */
    if (!k->ring && !(k->ring = malloc(k->tail_cap)))
        return -1;
    if (n >= k->tail_cap) {
        memcpy(k->ring, d + n - k->tail_cap, k->tail_cap);
        k->ring_len = k->tail_cap;
        k->ring_pos = 0;
        return 0;
    }
    while (n) {
        size_t room = k->tail_cap - k->ring_pos, take = n < room ? n : room;
        memcpy(k->ring + k->ring_pos, d, take);
        k->ring_pos = (k->ring_pos + take) % k->tail_cap;
        k->ring_len = k->ring_len + take > k->tail_cap ? k->tail_cap : k->ring_len + take;
        d += take;
        n -= take;
    }
    return 0;
}

static bool utf8_cont(unsigned char c)
{
    return (c & 0xc0) == 0x80;
}

/* How many bytes of s[0..n) to keep so that it does not end inside a UTF-8 character. */
static size_t utf8_cut_end(const unsigned char *s, size_t n)
{
    size_t i = n, back = 0;
    while (i > 0 && back < 3 && utf8_cont(s[i - 1])) {
        i--;
        back++;
    }
    if (i == 0 || s[i - 1] < 0xc0)
        return n;             /* ASCII, or not UTF-8: as it is */
    size_t want = s[i - 1] >= 0xf0 ? 4 : s[i - 1] >= 0xe0 ? 3 : 2;
    return back + 1 >= want ? n : i - 1;
}

/* Turns a capture into the result's form: head, then tail (UTF-8 characters cut at
 * neither end of the gap). */
typedef struct kept {
    char *data;
    size_t len, head_len;
    uint64_t total;
    bool truncated;
} kept;

static int capture_finish(capture *k, kept *out)
{
    buf b = { 0 };
    size_t head_len = k->head.len;
    bool truncated = k->total > (uint64_t)k->head.len + k->ring_len;
    size_t start = k->ring_len == k->tail_cap ? k->ring_pos : 0, skip = 0;

    if (truncated) {
        head_len = utf8_cut_end((const unsigned char *)k->head.p, k->head.len);
        while (skip < 3 && skip < k->ring_len &&
               utf8_cont((unsigned char)k->ring[(start + skip) % k->tail_cap]))
            skip++;
    }
    if (buf_add(&b, k->head.p ? k->head.p : "", head_len) < 0)
        goto oom;
    for (size_t i = skip; i < k->ring_len; i++) {
        size_t at = (start + i) % k->tail_cap, run = k->tail_cap - at;
        if (run > k->ring_len - i)
            run = k->ring_len - i;
        if (buf_add(&b, k->ring + at, run) < 0)
            goto oom;
        i += run - 1;
    }
    out->data = b.p;
    out->len = b.len;
    out->head_len = truncated ? head_len : b.len;
    out->total = k->total;
    out->truncated = truncated;
    return 0;
oom:
    free(b.p);
    return -1;
}

static void capture_free(capture *k)
{
    free(k->head.p);
    free(k->ring);
}

/* ---- results --------------------------------------------------------------------------- */

struct sbxsh_result {
    int exit_code, signal;
    bool timed_out, cancelled;
    uint64_t duration_ns;
    kept s[3];                    /* SBXSH_OUTPUT, SBXSH_STDOUT, SBXSH_STDERR */
};

static const kept *result_stream(const sbxsh_result *res, int stream)
{
    static const kept none = { .data = (char *)"" };
    if (!res || stream < 0 || stream > 2 || !res->s[stream].data)
        return &none;
    return &res->s[stream];
}

EXPORT int sbxsh_result_exit_code(const sbxsh_result *res)
{
    return res ? res->exit_code : -1;
}

EXPORT int sbxsh_result_signal(const sbxsh_result *res)
{
    return res ? res->signal : 0;
}

EXPORT int sbxsh_result_timed_out(const sbxsh_result *res)
{
    return res && res->timed_out;
}

EXPORT int sbxsh_result_cancelled(const sbxsh_result *res)
{
    return res && res->cancelled;
}

EXPORT const char *sbxsh_result_data(const sbxsh_result *res, int stream, size_t *len)
{
    const kept *k = result_stream(res, stream);
    if (len)
        *len = k->len;
    return k->data;
}

EXPORT size_t sbxsh_result_head_len(const sbxsh_result *res, int stream)
{
    return result_stream(res, stream)->head_len;
}

EXPORT uint64_t sbxsh_result_total(const sbxsh_result *res, int stream)
{
    return result_stream(res, stream)->total;
}

EXPORT int sbxsh_result_truncated(const sbxsh_result *res, int stream)
{
    return result_stream(res, stream)->truncated;
}

EXPORT uint64_t sbxsh_result_duration_ns(const sbxsh_result *res)
{
    return res ? res->duration_ns : 0;
}

EXPORT void sbxsh_result_free(sbxsh_result *res)
{
    if (!res)
        return;
    for (int i = 0; i < 3; i++)
        free(res->s[i].data);
    free(res);
}

/* ---- run options ----------------------------------------------------------------------- */

struct sbxsh_run_options {
    void *stdin_data;
    size_t stdin_len;
    bool stdin_buffer;
    int stdin_fd;
    uint64_t timeout_ms;
    size_t capture;
    sbxsh_output_fn fn;
    void *ctx;
    int cancel_fd;
};

static const sbxsh_run_options default_run = {
    .stdin_fd = -1,
    .cancel_fd = -1,
    .capture = SBXSH_DEFAULT_CAPTURE,
};

EXPORT sbxsh_run_options *sbxsh_run_options_new(void)
{
    sbxsh_run_options *r = malloc(sizeof(*r));
    if (r)
        *r = default_run;
    return r;
}

EXPORT void sbxsh_run_options_free(sbxsh_run_options *r)
{
    if (!r)
        return;
    free(r->stdin_data);
    free(r);
}

EXPORT int sbxsh_run_options_set_stdin_buffer(sbxsh_run_options *r, const void *data, size_t len,
                                              sbxsh_error *err)
{
    void *copy;
    if (!r || (!data && len))
        return fail(err, SBXSH_E_INVALID, "no run options or no data");
    copy = malloc(len ? len : 1);
    if (!copy)
        return fail_errno(err, "out of memory");
    if (len)
        memcpy(copy, data, len);
    free(r->stdin_data);
    r->stdin_data = copy;
    r->stdin_len = len;
    r->stdin_buffer = true;
    r->stdin_fd = -1;
    ok(err);
    return 0;
}

EXPORT int sbxsh_run_options_set_stdin_fd(sbxsh_run_options *r, int fd, sbxsh_error *err)
{
    if (!r)
        return fail(err, SBXSH_E_INVALID, "no run options");
    if (fd >= 0 && fcntl(fd, F_GETFD) < 0)
        return fail(err, SBXSH_E_INVALID, "stdin fd %d is not open", fd);
    free(r->stdin_data);
    r->stdin_data = NULL;
    r->stdin_len = 0;
    r->stdin_buffer = false;
    r->stdin_fd = fd < 0 ? -1 : fd;
    ok(err);
    return 0;
}

EXPORT int sbxsh_run_options_set_timeout_ms(sbxsh_run_options *r, uint64_t ms, sbxsh_error *err)
{
    if (!r)
        return fail(err, SBXSH_E_INVALID, "no run options");
    /* beyond a year is no limit a caller means; it also keeps the arithmetic in range */
    if (ms > (uint64_t)366 * 24 * 3600 * 1000)
        return fail(err, SBXSH_E_INVALID, "a timeout of %llu ms is too long",
                    (unsigned long long)ms);
    r->timeout_ms = ms;
    ok(err);
    return 0;
}

EXPORT int sbxsh_run_options_set_capture(sbxsh_run_options *r, size_t cap, sbxsh_error *err)
{
    if (!r)
        return fail(err, SBXSH_E_INVALID, "no run options");
    r->capture = cap;
    ok(err);
    return 0;
}

EXPORT int sbxsh_run_options_set_output(sbxsh_run_options *r, sbxsh_output_fn fn, void *ctx,
                                        sbxsh_error *err)
{
    if (!r)
        return fail(err, SBXSH_E_INVALID, "no run options");
    r->fn = fn;
    r->ctx = ctx;
    ok(err);
    return 0;
}

EXPORT int sbxsh_run_options_set_cancel_fd(sbxsh_run_options *r, int fd, sbxsh_error *err)
{
    if (!r)
        return fail(err, SBXSH_E_INVALID, "no run options");
    if (fd >= 0 && fcntl(fd, F_GETFD) < 0)
        return fail(err, SBXSH_E_INVALID, "cancel fd %d is not open", fd);
    r->cancel_fd = fd < 0 ? -1 : fd;
    ok(err);
    return 0;
}

/* ---- running --------------------------------------------------------------------------- */

/* A run's output: the three captures and the caller's callback. */
typedef struct run_sink {
    capture k[3];
    const sbxsh_run_options *r;
    bool oom;
} run_sink;

static int sink_out(void *ctx, int stream, const char *data, size_t len)
{
    run_sink *s = ctx;
    if (capture_add(&s->k[SBXSH_OUTPUT], data, len) < 0 ||
        capture_add(&s->k[stream], data, len) < 0)
        s->oom = true;
    if (s->r->fn)
        return s->r->fn(s->r->ctx, stream, data, len);
    return 0;
}

/* The argv of `sbxsh [--session NAME] ARGS...` */
static int sbxsh_argv(const sbxsh *h, const char *prog, list *argv, const char *const *args)
{
    if (list_push(argv, prog) < 0)
        return -1;
    if (h->session_given &&
        (list_push(argv, "--session") < 0 || list_push(argv, h->session) < 0))
        return -1;
    for (size_t i = 0; args[i]; i++)
        if (list_push(argv, args[i]) < 0)
            return -1;
    return 0;
}

/* Marks h as running (with its cancel pipe), or not. */
static void set_running(sbxsh *h, bool running, int cancel_w)
{
    pthread_mutex_lock(&h->cancel_lock);
    h->running = running;
    h->cancel_w = cancel_w;
    pthread_mutex_unlock(&h->cancel_lock);
}

/* Runs argv to its end with sink collecting its output, under h's lock (held by the
 * caller). */
static int run_locked(sbxsh *h, const char *const *argv, const sbxsh_run_options *r,
                      run_sink *sink, child *c, sbxsh_error *err)
{
    int cp[2];
    int rc;

    if (pipe2(cp, O_CLOEXEC | O_NONBLOCK) < 0)
        return fail_errno(err, "making a pipe");
    memset(c, 0, sizeof(*c));
    c->argv = argv;
    c->stdin_fd = r->stdin_fd;
    c->stdin_data = r->stdin_buffer ? r->stdin_data : NULL;
    if (r->stdin_buffer && !c->stdin_data)
        c->stdin_data = "";
    c->stdin_len = r->stdin_len;
    c->timeout_ms = r->timeout_ms;
    c->cancel_r = cp[0];
    c->cancel_fd = r->cancel_fd;
    c->out = sink_out;
    c->ctx = sink;
    set_running(h, true, cp[1]);
    rc = run_child(h, c, err);
    set_running(h, false, -1);
    close(cp[0]);
    close(cp[1]);
    return rc;
}

EXPORT int sbxsh_run(sbxsh *h, const char *line, const sbxsh_run_options *r, sbxsh_result **out,
                     sbxsh_error *err)
{
    const char *args[] = { "-c", line, NULL };
    list argv = { 0 };
    run_sink sink;
    child c;
    sbxsh_result *res = NULL;
    uint64_t start = mono_ns();
    int rc = -1;

    if (out)
        *out = NULL;
    if (!h || !line || !out)
        return fail(err, SBXSH_E_INVALID, "sbxsh_run needs a handle, a line and a result");
    if (!r)
        r = &default_run;
    memset(&sink, 0, sizeof(sink));
    sink.r = r;
    pthread_mutex_lock(&h->lock);
    if (h->released) {
        fail(err, SBXSH_E_RELEASED, "session %s was released: open a new handle", h->session);
        goto out;
    }
    for (int i = 0; i < 3; i++)
        if (capture_init(&sink.k[i], r->capture) < 0) {
            fail_errno(err, "out of memory");
            goto out;
        }
    if (sbxsh_argv(h, h->program, &argv, args) < 0) {
        fail_errno(err, "out of memory");
        goto out;
    }
    if (run_locked(h, (const char *const *)argv.v, r, &sink, &c, err) < 0)
        goto out;
    if (sink.oom || !(res = calloc(1, sizeof(*res)))) {
        fail(err, SBXSH_E_SYSTEM, "out of memory keeping the output");
        goto out;
    }
    for (int i = 0; i < 3; i++)
        if (capture_finish(&sink.k[i], &res->s[i]) < 0) {
            sbxsh_result_free(res);
            res = NULL;
            fail(err, SBXSH_E_SYSTEM, "out of memory keeping the output");
            goto out;
        }
    if (WIFSIGNALED(c.wait_status)) {
        res->signal = WTERMSIG(c.wait_status);
        res->exit_code = 128 + res->signal;
    } else {
        res->exit_code = WEXITSTATUS(c.wait_status);
    }
    res->timed_out = c.timed_out;
    res->cancelled = c.cancelled;
    res->duration_ns = mono_ns() - start;
    *out = res;
    ok(err);
    rc = 0;
out:
    pthread_mutex_unlock(&h->lock);
    for (int i = 0; i < 3; i++)
        capture_free(&sink.k[i]);
    list_clear(&argv);
    return rc;
}

EXPORT int sbxsh_cancel(sbxsh *h)
{
    int done = 0;
    if (!h)
        return 0;
    pthread_mutex_lock(&h->cancel_lock);
    if (h->running && h->cancel_w >= 0) {
        /* a full pipe already holds a cancel: that is enough */
        ssize_t n = write(h->cancel_w, "x", 1);
        (void)n;
        done = 1;
    }
    pthread_mutex_unlock(&h->cancel_lock);
    return done;
}

/* Runs a small sbxsh or sbx command (--route, status, release) to its end under h's lock:
 * its stdout into *out, its stderr's message into *msg, its exit status returned (-1:
 * could not run it, err set). */
static int run_small(sbxsh *h, const char *const *argv, buf *out, buf *msg, sbxsh_error *err)
{
    sbxsh_run_options r = default_run;
    run_sink sink;
    child c;
    kept ko = { 0 }, ke = { 0 };
    int rc = -1;

    r.capture = SMALL_OUTPUT_MAX;
    memset(&sink, 0, sizeof(sink));
    sink.r = &r;
    for (int i = 0; i < 3; i++)
        if (capture_init(&sink.k[i], i ? SMALL_OUTPUT_MAX : 0) < 0) {
            fail_errno(err, "out of memory");
            goto out;
        }
    if (run_locked(h, argv, &r, &sink, &c, err) < 0)
        goto out;
    if (sink.oom || capture_finish(&sink.k[SBXSH_STDOUT], &ko) < 0 ||
        capture_finish(&sink.k[SBXSH_STDERR], &ke) < 0) {
        fail(err, SBXSH_E_SYSTEM, "out of memory");
        goto out;
    }
    if (buf_add(out, ko.data, ko.len) < 0 || buf_add(msg, ke.data, ke.len) < 0) {
        fail(err, SBXSH_E_SYSTEM, "out of memory");
        goto out;
    }
    rc = WIFEXITED(c.wait_status) ? WEXITSTATUS(c.wait_status) : 128 + WTERMSIG(c.wait_status);
out:
    for (int i = 0; i < 3; i++)
        capture_free(&sink.k[i]);
    free(ko.data);
    free(ke.data);
    return rc;
}

/* A program's message without its "sbxsh: " or "sbx: " and its final newline. */
static const char *message_of(buf *msg, const char *fallback)
{
    char *m = msg->p;
    if (!m || !*m)
        return fallback;
    while (msg->len && msg->p[msg->len - 1] == '\n')
        msg->p[--msg->len] = '\0';
    if (!strncmp(m, "sbxsh: ", 7))
        m += 7;
    else if (!strncmp(m, "sbx: ", 5))
        m += 5;
    return m;
}

/* The value of a top-level string member "key" of a small JSON object that sbxsh printed
 * (its own output: no escapes are in a session name, which is checked). */
static char *json_string_member(const char *json, const char *key)
{
    char pat[64];
    const char *p, *e;
    snprintf(pat, sizeof(pat), "\"%s\":\"", key);
    p = json ? strstr(json, pat) : NULL;
    if (!p)
        return NULL;
    p += strlen(pat);
    e = strchr(p, '"');
    return e ? strndup(p, (size_t)(e - p)) : NULL;
}

static void handle_free(sbxsh *h)
{
    pthread_mutex_destroy(&h->lock);
    pthread_mutex_destroy(&h->cancel_lock);
    free(h->cwd);
    free(h->program);
    free(h->sbx);
    free(h->session);
    list_clear(&h->env);
    free(h);
}

EXPORT int sbxsh_open(const sbxsh_options *o, sbxsh **out, sbxsh_error *err)
{
    static const sbxsh_options none;
    const char *args[] = { "--route", "--json", "-c", "true", NULL };
    list argv = { 0 };
    buf json = { 0 }, msg = { 0 };
    sbxsh *h;
    char *slash;
    int st;

    if (!out)
        return fail(err, SBXSH_E_INVALID, "sbxsh_open needs somewhere to put the handle");
    *out = NULL;
    if (!o)
        o = &none;
    h = calloc(1, sizeof(*h));
    if (!h)
        return fail_errno(err, "out of memory");
    pthread_mutex_init(&h->lock, NULL);
    pthread_mutex_init(&h->cancel_lock, NULL);
    h->cancel_w = -1;
    h->cwd = o->cwd ? strdup(o->cwd) : getcwd(NULL, 0);
    h->program = strdup(o->program ? o->program : SBXSH_LIB_PROGRAM);
    if (!h->cwd) {
        fail_errno(err, "reading the current directory");
        goto fail;
    }
    if (!h->program || build_env(h, o) < 0 ||
        (o->session && !(h->session = strdup(o->session)))) {
        fail_errno(err, "out of memory");
        goto fail;
    }
    h->session_given = o->session != NULL;
    /* sbx is installed beside sbxsh, and the build puts them together */
    h->sbx = malloc(strlen(h->program) + 4);
    if (!h->sbx) {
        fail_errno(err, "out of memory");
        goto fail;
    }
    strcpy(h->sbx, h->program);
    slash = strrchr(h->sbx, '/');
    strcpy(slash + 1, "sbx");

    /* a clear word for a program that is not there: posix_spawn may report a failed exec
     * only as the child's 127 (it does so where it cannot vfork, as under valgrind) */
    if (access(h->program, X_OK) < 0) {
        fail(err, SBXSH_E_SBXSH, "cannot run %s: %s", h->program, strerror(errno));
        goto fail;
    }
    /* sbxsh checks the configuration as a run would, and names the session */
    if (sbxsh_argv(h, h->program, &argv, args) < 0) {
        fail_errno(err, "out of memory");
        goto fail;
    }
    st = run_small(h, (const char *const *)argv.v, &json, &msg, err);
    if (st < 0)
        goto fail;
    if (st != 0) {
        fail(err, st == 125 ? SBXSH_E_CONFIG : SBXSH_E_SBXSH, "%s",
             message_of(&msg, "sbxsh refused the configuration"));
        goto fail;
    }
    if (!h->session && !(h->session = json_string_member(json.p, "session"))) {
        fail(err, SBXSH_E_SBXSH, "%s --route did not name the session (an older sbxsh?)",
             h->program);
        goto fail;
    }
    list_clear(&argv);
    free(json.p);
    free(msg.p);
    *out = h;
    ok(err);
    return 0;
fail:
    list_clear(&argv);
    free(json.p);
    free(msg.p);
    handle_free(h);
    return -1;
}

EXPORT const char *sbxsh_session(const sbxsh *h)
{
    return h ? h->session : NULL;
}

EXPORT void sbxsh_close(sbxsh *h)
{
    if (!h)
        return;
    /* a run in progress on another thread ends first */
    pthread_mutex_lock(&h->lock);
    pthread_mutex_unlock(&h->lock);
    handle_free(h);
}

EXPORT int sbxsh_status(sbxsh *h, char **json, sbxsh_error *err)
{
    const char *args[] = { "status", "--json", "--session", NULL, NULL };
    list argv = { 0 };
    buf out = { 0 }, msg = { 0 };
    int rc = -1, st;

    if (json)
        *json = NULL;
    if (!h || !json)
        return fail(err, SBXSH_E_INVALID, "sbxsh_status needs a handle and a place for the JSON");
    pthread_mutex_lock(&h->lock);
    if (h->released) {
        fail(err, SBXSH_E_RELEASED, "session %s was released: open a new handle", h->session);
        goto out;
    }
    args[3] = h->session;
    if (list_push(&argv, h->sbx) < 0 || list_copy(&argv, &(list){ .v = (char **)args, .n = 4 }) < 0) {
        fail_errno(err, "out of memory");
        goto out;
    }
    st = run_small(h, (const char *const *)argv.v, &out, &msg, err);
    if (st < 0)
        goto out;
    while (out.len && (out.p[out.len - 1] == '\n'))
        out.p[--out.len] = '\0';
    if (out.p && !strcmp(out.p, "null")) {
        /* no holder: the session is not running (sbx status exits 1 then) */
        size_t n = strlen(h->session) + 64;
        char *j = malloc(n);
        if (!j) {
            fail_errno(err, "out of memory");
            goto out;
        }
        snprintf(j, n, "{\"session\":\"%s\",\"active\":false}", h->session);
        *json = j;
    } else if (st == 0 && out.p && out.p[0] == '{') {
        /* the holder's JSON, with "active": true put first */
        size_t n = out.len + 32;
        char *j = malloc(n);
        if (!j) {
            fail_errno(err, "out of memory");
            goto out;
        }
        snprintf(j, n, "{\"active\":true%s%s", out.p[1] == '}' ? "" : ",", out.p + 1);
        *json = j;
    } else {
        fail(err, SBXSH_E_SBXSH, "%s", message_of(&msg, "sbx status failed"));
        goto out;
    }
    ok(err);
    rc = 0;
out:
    pthread_mutex_unlock(&h->lock);
    list_clear(&argv);
    free(out.p);
    free(msg.p);
    return rc;
}

EXPORT int sbxsh_release(sbxsh *h, sbxsh_error *err)
{
    const char *args[] = { "release", "--session", NULL, NULL };
    list argv = { 0 };
    buf out = { 0 }, msg = { 0 };
    int rc = -1, st;

    if (!h)
        return fail(err, SBXSH_E_INVALID, "sbxsh_release needs a handle");
    pthread_mutex_lock(&h->lock);
    if (h->released) {
        fail(err, SBXSH_E_RELEASED, "session %s was released already", h->session);
        goto out;
    }
    args[2] = h->session;
    if (list_push(&argv, h->sbx) < 0 || list_copy(&argv, &(list){ .v = (char **)args, .n = 3 }) < 0) {
        fail_errno(err, "out of memory");
        goto out;
    }
    st = run_small(h, (const char *const *)argv.v, &out, &msg, err);
    if (st < 0)
        goto out;
    if (st != 0) {
        fail(err, SBXSH_E_SBXSH, "%s", message_of(&msg, "sbx release failed"));
        goto out;
    }
    h->released = true;
    ok(err);
    rc = 0;
out:
    pthread_mutex_unlock(&h->lock);
    list_clear(&argv);
    free(out.p);
    free(msg.p);
    return rc;
}
