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

/* fd moved to 3 or above (a pipe made while our 0, 1 or 2 was closed would otherwise be
 * overwritten by the dup2s that set up the child's own 0, 1 and 2). */
static int above2(int fd)
{
    return fd >= 0 && fd < 3 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : fd;
}

/* The child, up to exec: async-signal-safe calls only (sigaction, dup2, fchdir, close,
 * exec, write, _exit). Reports a failure's errno on epw and exits 127. */
static void child(const sbx_run *r, char *const *env, int nul, int outw, int errw, int epw)
{
    struct sigaction dfl, ign;
    sigset_t none;
    int e, cwd = above2(r->cwd_fd);

    /* the signal policy (run.h): a disposition of ours, or an ignored SIGPIPE, must not
     * leak into a program that expects the defaults */
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ign = dfl;
    ign.sa_handler = SIG_IGN;
    /* (glibc refuses its own real-time signals, 32 and 33: they stay as they were) */
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, r->keep_ignored && sigismember(r->keep_ignored, s) ? &ign : &dfl, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (r->new_pgrp)
        setpgid(0, 0);

    nul = above2(nul);
    outw = above2(outw);
    errw = above2(errw);
    epw = above2(epw);
    if (nul < 0 || outw < 0 || epw < 0 || (r->stdin_inherit ? 0 : dup2(nul, 0)) < 0 ||
        dup2(outw, 1) < 0)
        goto fail;
    switch (r->stderr_to) {
    case SBX_RUN_ERR_NULL: e = dup2(nul, 2); break;
    case SBX_RUN_ERR_INHERIT: e = 0; break;
    case SBX_RUN_ERR_OUT: e = dup2(outw, 2); break;
    default: e = errw < 0 ? -1 : dup2(errw, 2); break;
    }
    if (e < 0 || (cwd >= 0 && fchdir(cwd) < 0))
        goto fail;
    /* no fd of ours reaches the program (a session's socket, a held directory), but the
     * exec-error pipe, which its CLOEXEC closes at the exec */
    if (!r->keep_fds) {
        if (epw > 3 && close_range(3, (unsigned)epw - 1, 0) < 0)
            for (int fd = 3; fd < epw; fd++)
                close(fd);
        if (close_range((unsigned)epw + 1, ~0U, 0) < 0)
            for (int fd = epw + 1; fd < 4096; fd++)
                close(fd);
    }
    if (r->path_search)
        execvpe(r->file ? r->file : r->argv[0], r->argv, env);
    else
        execve(r->file ? r->file : r->argv[0], r->argv, env);
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

int sbx_run_capture(const sbx_run *r, strbuf *out, int *status, sbx_err *err)
{
    const char *name = r->file ? r->file : r->argv[0];
    size_t max = r->max ? r->max : (size_t)1 << 20, tail = r->err_tail ? r->err_tail : 4096;
    size_t kept = 0;
    bool bounded = r->timeout_ms || r->interrupted;
    uint64_t deadline = r->timeout_ms ? now_ms() + r->timeout_ms : 0;
    int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, ep[2] = { -1, -1 }, nul, st = 0, ce;
    char buf[8192];         /* zeroed on the way out when the output is a secret */
    pid_t pid;

    if (status)
        *status = 0;
    nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul < 0 || pipe2(outp, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0 ||
        (r->stderr_to == SBX_RUN_ERR_CAPTURE && pipe2(errp, O_CLOEXEC) < 0)) {
        sbx_errno(err, "cannot run %s: pipe", name);
        goto fail;
    }
    pid = fork();
    if (pid < 0) {
        sbx_errno(err, "cannot run %s: fork", name);
        goto fail;
    }
    if (pid == 0)
        child(r, r->env ? r->env : environ, nul, outp[1], errp[1], ep[1]);
    close_fd(&nul);
    close_fd(&outp[1]);
    close_fd(&errp[1]);
    close_fd(&ep[1]);

    /* the exec-error pipe: EOF at a successful exec, an errno when it failed */
    if (read_full(ep[0], &ce, sizeof(ce)) == (ssize_t)sizeof(ce)) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        errno = ce;
        sbx_errno(err, "cannot run %s", name);
        goto fail;
    }
    close_fd(&ep[0]);

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

int sbx_run_exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status)
           : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}
