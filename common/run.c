/*
 * Starting a child and reading its output (run.h). The parent's side is a small state
 * machine over three pipes: the exec-error pipe (closed by a successful exec, or carrying
 * the exec's errno), stdout and, when captured, stderr; it polls the open ones, bounded by
 * the timeout and the interruption check, until both output pipes are closed, then reaps.
 * Every way out after the fork reaps the child: a timeout, an interruption or too much
 * output kill it (its process group with new_pgrp) first.
 */
#include "common/run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Where the child's own fds are first moved: above every number it is given (fds[].to,
 * capture_fd, and the 6 and 7 a before_exec of the local backend makes), so that placing
 * one never overwrites another that is still to be placed. */
#define RUN_FD_HIGH 64

/* *fd copied (close-on-exec) to RUN_FD_HIGH or up, else (a low fd limit) to low or up, low
 * being above every number the child is given; false when it could not be. A negative fd
 * stays as it is. */
static bool lift(int *fd, int low)
{
    int h;

    if (*fd < 0)
        return true;
    h = low < RUN_FD_HIGH ? fcntl(*fd, F_DUPFD_CLOEXEC, RUN_FD_HIGH) : -1;
    if (h < 0)
        h = fcntl(*fd, F_DUPFD_CLOEXEC, low);
    if (h < 0)
        return false;
    *fd = h;
    return true;
}

/* lift for a pipe of run.c's own: the original is closed (the exec-error pipe's write end
 * must have no second copy, or the parent would wait on it past the exec). */
static bool lift_own(int *fd, int low)
{
    int orig = *fd;

    if (!lift(fd, low))
        return false;
    if (orig >= 0)
        close(orig);
    return true;
}

/* Whether fd (3 or up) is one the child keeps: a placed one, the output pipe's, or the
 * exec-error pipe (which its close-on-exec closes at the exec). */
static bool kept(const sbx_run *r, int cap, int fd, int epw)
{
    if (fd == epw || fd == cap)
        return true;
    for (size_t i = 0; i < r->nfds; i++)
        if (r->fds[i].to == fd)
            return true;
    return false;
}

/* Every fd from 3 up closed but the kept ones. */
static void close_others(const sbx_run *r, int cap, int epw)
{
    int hi = epw > cap ? epw : cap, fd;

    for (size_t i = 0; i < r->nfds; i++)
        if (r->fds[i].to > hi)
            hi = r->fds[i].to;
    for (fd = 3; fd < hi; fd++)
        if (!kept(r, cap, fd, epw))
            close(fd);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0) == 0)
        return;
#endif
    /* (a kernel without close_range: up to the fd limit, which bounds what can be open) */
    struct rlimit rl;
    int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
    for (fd = hi + 1; fd < top; fd++)
        close(fd);
}

/* The signal policy (run.h), first thing in the child: a disposition of ours, or an
 * ignored SIGPIPE, must not leak into a program that expects the defaults. */
static void child_signals(const sbx_run *r)
{
    struct sigaction dfl, ign;
    sigset_t none;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ign = dfl;
    ign.sa_handler = SIG_IGN;
    if (r->sig_inherit) {
        for (int s = 1; s < NSIG && r->sig_default; s++)
            if (s != SIGKILL && s != SIGSTOP && sigismember(r->sig_default, s) == 1)
                sigaction(s, &dfl, NULL);
        return;
    }
    /* (glibc refuses its own real-time signals, 32 and 33: they stay as they were) */
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, r->keep_ignored && sigismember(r->keep_ignored, s) ? &ign : &dfl, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The child, up to exec (or fn): async-signal-safe calls only but in the two hooks
 * (sigaction, prctl, setsid, fork, fcntl, dup2, fchdir, close, exec, write, _exit).
 * Reports a failure's errno on epw and exits 127. Its steps, in order: signals; the
 * parent's death, the session and the double fork (so that what follows is done by the
 * process that runs); the fds (all lifted high first, then placed); the directory; every
 * other fd closed; before_exec; then fn or the exec. */
static void child(const sbx_run *r, char *const *env, pid_t parent, int nul, int outw,
                  int errw, int epw)
{
    int e, cwd = r->cwd_fd, cap = r->capture_fd > 0 ? r->capture_fd : 1, low = 3;
    int from[SBX_RUN_FDS];
    char *const *argv = r->argv;

    child_signals(r);
    /* a child that must not outlive us, whose parent was already gone at the prctl */
    if (r->parent_death_kill &&
        (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent))
        _exit(0);
    if (r->setsid)
        setsid();
    else if (r->new_pgrp)
        setpgid(0, 0);
    if (r->daemon) {
        pid_t pid = fork();
        if (pid < 0)
            goto fail;
        if (pid > 0)
            _exit(0);       /* the intermediate: reaped by the caller at once */
    }

    if (outw < 0)
        cap = -1;           /* no output pipe: no fd is the capture's */
    if (cap >= low)
        low = cap + 1;
    for (size_t i = 0; i < r->nfds && i < SBX_RUN_FDS; i++) {
        from[i] = r->fds[i].from;
        if (r->fds[i].to >= low)
            low = r->fds[i].to + 1;
    }
    if (!lift_own(&nul, low) || !lift_own(&outw, low) || !lift_own(&errw, low) ||
        !lift_own(&epw, low) || !lift(&cwd, low))
        goto fail;
    for (size_t i = 0; i < r->nfds && i < SBX_RUN_FDS; i++)
        if (!lift(&from[i], low))
            goto fail;
    if (nul < 0 || (r->stdin_inherit ? 0 : dup2(nul, 0)) < 0 ||
        (outw >= 0 && dup2(outw, cap) < 0) ||
        (cap != 1 ? (r->stdout_null ? dup2(nul, 1) : 0) : 0) < 0)
        goto fail;
    switch (r->stderr_to) {
    case SBX_RUN_ERR_NULL: e = dup2(nul, 2); break;
    case SBX_RUN_ERR_INHERIT: e = 0; break;
    case SBX_RUN_ERR_OUT: e = outw < 0 ? 0 : dup2(outw, 2); break;
    default: e = errw < 0 ? -1 : dup2(errw, 2); break;
    }
    if (e < 0)
        goto fail;
    for (size_t i = 0; i < r->nfds && i < SBX_RUN_FDS; i++)
        if (dup2(from[i], r->fds[i].to) < 0)
            goto fail;
    if (cwd >= 0 && fchdir(cwd) < 0)
        goto fail;
    /* no fd of ours reaches the program (a session's socket, a held directory), but the
     * exec-error pipe, which its CLOEXEC closes at the exec; with keep_fds, only the
     * copies made here go */
    if (!r->keep_fds) {
        close_others(r, cap, epw);
    } else {
        int mine[] = { nul, outw, errw, cwd };
        for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
            if (mine[i] >= 0)
                close(mine[i]);
        for (size_t i = 0; i < r->nfds && i < SBX_RUN_FDS; i++)
            close(from[i]);
    }
    if (r->before_exec && r->before_exec(r->ctx, &argv) < 0)
        goto fail;
    if (r->fn) {
        close(epw);         /* started: the parent's sbx_run_start returns */
        _exit(r->fn(r->ctx));
    }
    if (r->path_search)
        execvpe(r->file ? r->file : argv[0], argv, env);
    else
        execve(r->file ? r->file : argv[0], argv, env);
fail:
    e = errno;
    if (write(epw, &e, sizeof(e)) < 0)
        _exit(127);
    _exit(127);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Kills (the group with new_pgrp) and reaps; EINTR retried. */
static void kill_reap(const sbx_run *r, pid_t pid)
{
    kill(r->new_pgrp ? -pid : pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

static const char *run_name(const sbx_run *r)
{
    return r->file ? r->file : r->argv ? r->argv[0] : "a child";
}

/* Forks r's child with its pipes (the output's read end in *outr when outr, stderr's in
 * *errr when errr), then waits on the exec-error pipe: EOF at a successful exec (or fn's
 * start), an errno when it failed. With daemon the intermediate is reaped here and *pidp
 * is 0. Nothing is left open or running on failure. */
static int start(const sbx_run *r, pid_t *pidp, int *outr, int *errr, sbx_err *err)
{
    const char *name = run_name(r);
    int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, ep[2] = { -1, -1 }, nul, ce;
    pid_t pid, parent = getpid();

    nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul < 0 || (outr && pipe2(outp, O_CLOEXEC) < 0) || pipe2(ep, O_CLOEXEC) < 0 ||
        (errr && pipe2(errp, O_CLOEXEC) < 0)) {
        sbx_errno(err, "cannot run %s: pipe", name);
        goto fail;
    }
    pid = fork();
    if (pid < 0) {
        sbx_errno(err, "cannot run %s: fork", name);
        goto fail;
    }
    if (pid == 0)
        child(r, r->env ? r->env : environ, parent, nul, outp[1], errp[1], ep[1]);
    close_fd(&nul);
    close_fd(&outp[1]);
    close_fd(&errp[1]);
    close_fd(&ep[1]);
    if (read_full(ep[0], &ce, sizeof(ce)) == (ssize_t)sizeof(ce)) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        errno = ce;
        sbx_errno(err, "cannot run %s", name);
        goto fail;
    }
    close_fd(&ep[0]);
    if (r->daemon) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        pid = 0;
    }
    *pidp = pid;
    if (outr)
        *outr = outp[0];
    if (errr)
        *errr = errp[0];
    return 0;
fail:
    ce = errno;
    close_fd(&nul);
    close_fd(&outp[0]);
    close_fd(&outp[1]);
    close_fd(&errp[0]);
    close_fd(&errp[1]);
    close_fd(&ep[0]);
    close_fd(&ep[1]);
    errno = ce;
    return -1;
}

int sbx_run_start(const sbx_run *r, pid_t *pid, int *out_fd, sbx_err *err)
{
    return start(r, pid, out_fd, NULL, err);
}

int sbx_run_wait(pid_t pid, int *status, sbx_err *err)
{
    int st = 0;

    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return sbx_errno(err, "waitpid");
    if (status)
        *status = st;
    return 0;
}

int sbx_run_capture(const sbx_run *r, strbuf *out, int *status, sbx_err *err)
{
    const char *name = run_name(r);
    size_t max = r->max ? r->max : (size_t)1 << 20, tail = r->err_tail ? r->err_tail : 4096;
    size_t kept = 0;
    bool bounded = r->timeout_ms || r->interrupted;
    uint64_t deadline = r->timeout_ms ? now_ms() + r->timeout_ms : 0;
    int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, st = 0, ce;
    char buf[8192];         /* zeroed on the way out when the output is a secret */
    pid_t pid;

    if (status)
        *status = 0;
    if (start(r, &pid, &outp[0], r->stderr_to == SBX_RUN_ERR_CAPTURE ? &errp[0] : NULL,
              err) < 0)
        return -1;

    /* reading: until both output pipes are at EOF, or a limit is hit */
    while (outp[0] >= 0 || errp[0] >= 0) {
        struct pollfd pf[2];
        int nf = 0, wait_ms = -1;
        const char *why = NULL;

        if (r->interrupted && r->interrupted(r->ctx))
            why = "interrupted";
        else if (deadline && now_ms() >= deadline)
            why = "no answer within";
        if (why) {
            kill_reap(r, pid);
            if (!strcmp(why, "interrupted"))
                sbx_errf(err, "%s: interrupted", name);
            else
                sbx_errf(err, "%s: no answer within %u ms", name, r->timeout_ms);
            errno = !strcmp(why, "interrupted") ? EINTR : ETIMEDOUT;
            goto fail;
        }
        if (outp[0] >= 0)
            pf[nf++] = (struct pollfd){ outp[0], POLLIN, 0 };
        if (errp[0] >= 0)
            pf[nf++] = (struct pollfd){ errp[0], POLLIN, 0 };
        if (bounded)
            wait_ms = 100;      /* the interruption and the deadline are checked this often */
        int pr = poll(pf, (nfds_t)nf, wait_ms);
        if (pr < 0 && errno != EINTR) {
            sbx_errno(err, "%s: poll", name);
            kill_reap(r, pid);
            goto fail;
        }
        for (int i = 0; i < nf && pr > 0; i++) {
            ssize_t n;
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = read(pf[i].fd, buf, sizeof(buf));
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n <= 0) {
                close_fd(pf[i].fd == outp[0] ? &outp[0] : &errp[0]);
                continue;
            }
            if (pf[i].fd == errp[0]) {
                strbuf_add(r->err_out, buf, (size_t)n);
                if (r->err_out->len > 2 * tail)
                    strbuf_remove(r->err_out, 0, r->err_out->len - tail);
            } else if (kept + (size_t)n > max && r->over_max_fails) {
                kill_reap(r, pid);
                sbx_errf(err, "%s: wrote more than %zu bytes", name, max);
                errno = EFBIG;
                goto fail;
            } else {
                /* past max the rest is read and dropped, so that the child never blocks
                 * on a full pipe */
                size_t take = kept + (size_t)n > max ? max - kept : (size_t)n;
                kept += take;
                if (r->on_output)
                    r->on_output(r->ctx, buf, take);
                else if (out)
                    strbuf_add(out, buf, take);
            }
        }
    }

    /* reaping: blocking, unless a deadline or an interruption still applies (a child that
     * closed its output but lives on) */
    for (;;) {
        pid_t w = waitpid(pid, &st, bounded ? WNOHANG : 0);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            sbx_errno(err, "%s: waitpid", name);
            goto fail;
        }
        if (w == 0) {
            bool late = deadline && now_ms() >= deadline;
            if (late || (r->interrupted && r->interrupted(r->ctx))) {
                kill_reap(r, pid);
                if (late)
                    sbx_errf(err, "%s: no answer within %u ms", name, r->timeout_ms);
                else
                    sbx_errf(err, "%s: interrupted", name);
                errno = late ? ETIMEDOUT : EINTR;
                goto fail;
            }
            struct timespec ts = { 0, 20 * 1000000 };
            nanosleep(&ts, NULL);
        }
    }
    if (status)
        *status = st;
    if (r->secret)
        explicit_bzero(buf, sizeof(buf));
    return 0;
fail:
    ce = errno;
    if (r->secret)
        explicit_bzero(buf, sizeof(buf));
    close_fd(&outp[0]);
    close_fd(&errp[0]);
    errno = ce;
    return -1;
}

int sbx_run_exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status)
           : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}
