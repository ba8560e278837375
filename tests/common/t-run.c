/* Unit tests of common/run.c: what a child prints is captured (capped, merged, tailed),
 * its status read as a shell reads it; a timeout, a program not found and too much output
 * fail without leaving a child; the child gets none of our fds and default signals. */
#include "common/run.h"
#include "tests/lib/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int sh(const char *script, sbx_run *r, strbuf *out, int *st, sbx_err *err)
{
    static char *argv[4];
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = (char *)script;
    argv[3] = NULL;
    r->argv = argv;
    strbuf_reset(out);
    return sbx_run_capture(r, out, st, err);
}

/* The standard signals (1-31) ignored, from a "SigIgn:\tHEX" line: glibc's own real-time
 * signals (32, 33) are not the program's to change, and make leaves them ignored. */
static unsigned long sig_ignored(const strbuf *status)
{
    const char *p = strchr(status->buf, '\t');
    return p ? strtoull(p + 1, NULL, 16) & 0x7fffffffu : ~0ul;
}

/* A child function: writes its ctx's text on fd 1, exits 7. */
static int say(void *ctx)
{
    write_full(1, ctx, strlen(ctx));
    return 7;
}

/* A before_exec that swaps the argv for its ctx's. */
static int swap_argv(void *ctx, char *const **argv)
{
    *argv = ctx;
    return 0;
}

static int refuse(void *ctx, char *const **argv)
{
    errno = EPERM;
    return -1;
}

/* Reads fd to EOF into out; the bytes read. */
static size_t slurp(int fd, strbuf *out)
{
    strbuf_reset(out);
    strbuf_read_fd(out, fd, 1 << 20);
    close(fd);
    return out->len;
}

static void count_chunk(void *ctx, const char *buf, size_t n)
{
    (void)buf;
    *(size_t *)ctx += n;
}

int main(void)
{
    strbuf out = STRBUF_INIT, errs = STRBUF_INIT;
    sbx_err err;
    int st = -1;

    sbx_run r = { 0 };
    r.cwd_fd = -1;
    ok(sh("echo hi; echo no >&2; exit 3", &r, &out, &st, &err) == 0 && !strcmp(out.buf, "hi\n") &&
           sbx_run_exit_code(st) == 3,
       "stdout captured, stderr to /dev/null, the exit status read");
    r.stderr_to = SBX_RUN_ERR_OUT;
    ok(sh("echo a; echo b >&2", &r, &out, &st, &err) == 0 && !strcmp(out.buf, "a\nb\n"),
       "stderr merged into the output");
    r.stderr_to = SBX_RUN_ERR_CAPTURE;
    r.err_out = &errs;
    r.err_tail = 4;
    ok(sh("echo out; printf 0123456789 >&2", &r, &out, &st, &err) == 0 &&
           !strcmp(out.buf, "out\n") && errs.len <= 8 && errs.len >= 4 &&
           !memcmp(errs.buf + errs.len - 4, "6789", 4),
       "stderr captured apart, its tail kept (%s)", errs.buf);
    r.stderr_to = SBX_RUN_ERR_NULL;
    ok(sh("kill -TERM $$", &r, &out, &st, &err) == 0 && sbx_run_exit_code(st) == 128 + SIGTERM,
       "a signal's death is 128 + the signal");

    r.max = 10;
    ok(sh("head -c 200000 /dev/zero; echo done >&2", &r, &out, &st, &err) == 0 && out.len == 10 &&
           sbx_run_exit_code(st) == 0,
       "past max the output is dropped and the child runs to its end (kept %zu)", out.len);
    r.over_max_fails = true;
    errno = 0;
    ok(sh("head -c 200000 /dev/zero", &r, &out, &st, &err) < 0 && errno == EFBIG &&
           strstr(err.msg, "wrote more than 10 bytes"),
       "with over_max_fails it is killed: %s", err.msg);
    r.max = 0;
    r.over_max_fails = false;

    r.timeout_ms = 300;
    r.new_pgrp = true;
    errno = 0;
    ok(sh("sleep 60 & sleep 60", &r, &out, &st, &err) < 0 && errno == ETIMEDOUT &&
           strstr(err.msg, "no answer within 300 ms"),
       "a timeout kills it and its group: %s", err.msg);
    ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "no child is left behind");
    r.timeout_ms = 0;
    r.new_pgrp = false;

    char *missing[] = { "/nonexistent/program", NULL };
    sbx_run m = { .argv = missing, .cwd_fd = -1 };
    errno = 0;
    ok(sbx_run_capture(&m, &out, &st, &err) < 0 && errno == ENOENT &&
           strstr(err.msg, "cannot run /nonexistent/program"),
       "a program not found: -1 with ENOENT: %s", err.msg);
    char *search[] = { "sh", "-c", "echo found", NULL };
    sbx_run ps = { .argv = search, .cwd_fd = -1, .path_search = true };
    strbuf_reset(&out);
    ok(sbx_run_capture(&ps, &out, &st, &err) == 0 && !strcmp(out.buf, "found\n"),
       "path_search looks the program up in PATH");

    int leak = open("/dev/null", O_RDONLY);   /* not CLOEXEC: only the closing stops it */
    char script[128];
    snprintf(script, sizeof(script), "[ -e /proc/self/fd/%d ] && echo leaked || echo closed", leak);
    ok(sh(script, &r, &out, &st, &err) == 0 && !strcmp(out.buf, "closed\n"),
       "no fd of ours from 3 up reaches the child");
    r.keep_fds = true;
    ok(sh(script, &r, &out, &st, &err) == 0 && !strcmp(out.buf, "leaked\n"),
       "unless keep_fds (the check can see one)");
    r.keep_fds = false;
    close(leak);

    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    ok(sh("grep SigIgn /proc/self/status", &r, &out, &st, &err) == 0 && sig_ignored(&out) == 0,
       "signals we ignore are the default in the child (%.*s)", (int)out.len - 1, out.buf);
    sigset_t keep;
    sigemptyset(&keep);
    sigaddset(&keep, SIGINT);
    r.keep_ignored = &keep;
    ok(sh("grep SigIgn /proc/self/status", &r, &out, &st, &err) == 0 &&
           sig_ignored(&out) == 1u << (SIGINT - 1),
       "but those in keep_ignored (SIGINT)");
    r.keep_ignored = NULL;

    r.cwd_fd = open("/usr", O_PATH | O_DIRECTORY);
    ok(sh("pwd", &r, &out, &st, &err) == 0 && !strcmp(out.buf, "/usr\n"), "it runs in cwd_fd");
    close(r.cwd_fd);
    r.cwd_fd = -1;
    char *env[] = { "X=from-env", NULL };
    r.env = env;
    ok(sh("echo $X", &r, &out, &st, &err) == 0 && !strcmp(out.buf, "from-env\n"),
       "with its own environment");
    r.env = NULL;
    size_t seen = 0;
    r.on_output = count_chunk;
    r.ctx = &seen;
    ok(sh("echo 12345", &r, &out, &st, &err) == 0 && seen == 6 && out.len == 0,
       "on_output gets the output instead of the buffer");

    /* sbx_run_start: the child is not waited for there */
    pid_t pid = -1;
    int ofd = -1;
    sbx_run f = { .fn = say, .ctx = "from fn\n", .file = "say", .cwd_fd = -1 };
    ok(sbx_run_start(&f, &pid, &ofd, &err) == 0 && pid > 0 && slurp(ofd, &out) &&
           !strcmp(out.buf, "from fn\n") && sbx_run_wait(pid, &st, &err) == 0 &&
           sbx_run_exit_code(st) == 7,
       "the child function mode runs fn in the child and exits with what it returns");
    ok(sbx_run_wait(pid, &st, &err) < 0 && errno == ECHILD, "sbx_run_wait: reaped once");

    int pfd[2];
    char *fd3[] = { "/bin/sh", "-c", "echo on-three >&3; echo on-one", NULL };
    sbx_run c3 = { .argv = fd3, .cwd_fd = -1, .capture_fd = 3, .stdout_null = true };
    strbuf_reset(&out);
    ok(sbx_run_capture(&c3, &out, &st, &err) == 0 && !strcmp(out.buf, "on-three\n"),
       "capture_fd: the output pipe is the child's fd 3 (stdout /dev/null)");
    ok(pipe(pfd) == 0, "a pipe");
    char *placed[] = { "/bin/sh", "-c", "echo placed >&5", NULL };
    sbx_run pl = { .argv = placed, .cwd_fd = -1, .fds = { { pfd[1], 5 } }, .nfds = 1 };
    ok(sbx_run_start(&pl, &pid, NULL, &err) == 0, "fds: one of ours placed at 5");
    close(pfd[1]);
    ok(slurp(pfd[0], &out) && !strcmp(out.buf, "placed\n") &&
           sbx_run_wait(pid, &st, &err) == 0 && sbx_run_exit_code(st) == 0,
       "...where the child writes it");

    /* under an fd limit below the high place the child's fds first move to: the same */
    struct rlimit was, low;
    getrlimit(RLIMIT_NOFILE, &was);
    low = was;
    low.rlim_cur = 16;
    ok(pipe(pfd) == 0 && setrlimit(RLIMIT_NOFILE, &low) == 0, "a pipe, and a limit of 16 fds");
    pl.fds[0].from = pfd[1];
    ok(sbx_run_start(&pl, &pid, NULL, &err) == 0, "fds: placed at 5 under that limit (%s)",
       err.msg);
    setrlimit(RLIMIT_NOFILE, &was);
    close(pfd[1]);
    ok(slurp(pfd[0], &out) && !strcmp(out.buf, "placed\n") &&
           sbx_run_wait(pid, &st, &err) == 0 && sbx_run_exit_code(st) == 0,
       "...where the child writes it");

    char *daemon[] = { "/bin/sh", "-c", "echo $PPID $$ >&3", NULL };
    ok(pipe(pfd) == 0, "a pipe");
    sbx_run dm = { .argv = daemon, .cwd_fd = -1, .daemon = true, .setsid = true,
                   .fds = { { pfd[1], 3 } }, .nfds = 1 };
    ok(sbx_run_start(&dm, &pid, NULL, &err) == 0 && pid == 0, "daemon: started, no pid");
    close(pfd[1]);
    ok(slurp(pfd[0], &out) && atoi(out.buf) != getpid(), "...and it is not our child (%s)",
       out.buf);
    ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "...nor is the intermediate left");

    char *ign[] = { "/bin/sh", "-c", "grep SigIgn /proc/self/status", NULL };
    sigset_t dfl;
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sbx_run si = { .argv = ign, .cwd_fd = -1, .sig_inherit = true, .sig_default = &dfl };
    strbuf_reset(&out);
    ok(sbx_run_capture(&si, &out, &st, &err) == 0 && sig_ignored(&out) == 1u << (SIGINT - 1),
       "sig_inherit: ours kept (SIGINT ignored) but sig_default's (SIGPIPE) (%.*s)",
       (int)out.len - 1, out.buf);

    char *first[] = { "/nonexistent/first", NULL }, *second[] = { "/bin/echo", "swapped", NULL };
    sbx_run be = { .argv = first, .cwd_fd = -1, .before_exec = swap_argv, .ctx = second };
    strbuf_reset(&out);
    ok(sbx_run_capture(&be, &out, &st, &err) == 0 && !strcmp(out.buf, "swapped\n"),
       "before_exec runs in the child and may replace the argv");
    be.before_exec = refuse;
    errno = 0;
    ok(sbx_run_start(&be, &pid, NULL, &err) < 0 && errno == EPERM,
       "before_exec failing: -1 with its errno (%s)", err.msg);
    m.fn = NULL;
    errno = 0;
    ok(sbx_run_start(&m, &pid, NULL, &err) < 0 && errno == ENOENT,
       "sbx_run_start of a program not found: -1 with ENOENT");
    ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "no child is left behind");

    strbuf_release(&out);
    strbuf_release(&errs);
    return done_testing();
}
