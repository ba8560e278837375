/*
 * Starting the runtimes' processes: detached from us (a new session, stdio
 * to the sandbox's log, none of our fds), inside the sandbox's cgroup or
 * under its rlimits from before exec.
 */
#include "local/local.h"
#include "common/run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The log pump. Whatever a runtime writes to its stdout and stderr reaches the
 * host's file system, and the sandbox can write there too: under runsc the
 * agent's own fd 2 is that stream, and any process inside can open
 * /proc/1/fd/2. So the stream never is the file itself: it is a pipe, and a
 * small process of ours appends what arrives to the log while the log is under
 * SBX_LOG_MAX, then keeps reading and drops the rest (a writer never blocks on
 * a full pipe, and never sees EPIPE while the sandbox lives). The pump is forked
 * after the cgroup join, so the CPU it spends reading a flood counts against the
 * sandbox; it ends at end of file, when the last writer (the last process of the
 * sandbox) is gone, and it is nobody's child (double fork), so no zombie waits on
 * us. The limit is checked against the file's size, so that every pump of one
 * sandbox (runsc's commands each get one) shares it. What it appends is sanitized.
 */
#define SBX_LOG_MAX (8 << 20)

static void pump_log(int in, int out)
{
    static const char note[] = "sbxsh: sandbox.log reached its limit; the sandbox's further "
                               "output to it is dropped\n";
    char buf[65536];
    bool noted = false;

    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        /* The sandbox's bytes, shown: a person reads this log with cat or less, so its
         * escape sequences go in escaped (common/report.h), lines and tabs kept. A UTF-8
         * character cut by a read boundary shows as escaped bytes. */
        static char shown[4 * sizeof(buf) + 1];
        size_t len = 0;
        for (ssize_t i = 0; i < n;) {
            ssize_t j = i;
            while (j < n && buf[j] != '\n' && buf[j] != '\t')
                j++;
            len += sbx_sanitize_buf(shown + len, sizeof(shown) - len, buf + i, (size_t)(j - i));
            if (j < n)
                shown[len++] = buf[j];
            i = j + 1;
        }
        struct stat st;
        if (out < 0 || fstat(out, &st) < 0)
            continue;
        if (st.st_size + (off_t)len <= SBX_LOG_MAX) {
            write_full(out, shown, len);
        } else if (!noted) {
            noted = true;
            write_full(out, note, sizeof(note) - 1);
        }
    }
}

/* The pump as run.h's child function: SIGHUP, SIGINT and SIGTERM are not its to end on
 * (it ends at end of file, when the sandbox's last writer is gone). */
typedef struct pump_fds {
    int in, out;
} pump_fds;

static int pump_child(void *ctx)
{
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    pump_log(((pump_fds *)ctx)->in, ((pump_fds *)ctx)->out);
    return 0;
}

/* A pipe whose read end a detached pump drains into log (above); gives the
 * write end, or -1 (errno set). The pump is nobody's child (double fork) and keeps
 * none of our fds but the pipe's read end and the log. */
static int start_log_pump(const char *log)
{
    int p[2], out, r, e;
    pid_t pid;
    sbx_err err;

    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    pump_fds pf = { p[0], out };
    sbx_run run = { .fn = pump_child, .ctx = &pf, .file = "the log pump", .cwd_fd = -1,
                    .daemon = true, .stdout_null = true, .sig_inherit = true,
                    .fds = { { p[0], p[0] }, { out, out } }, .nfds = out >= 0 ? 2 : 1 };
    r = sbx_run_start(&run, &pid, NULL, &err);
    e = errno;
    close(p[0]);
    if (out >= 0)
        close(out);
    if (r < 0) {
        close(p[1]);
        errno = e;
        return -1;
    }
    return p[1];
}

/* What the runtime's child does between run.h's set-up and the exec, in order: join the
 * sandbox's cgroup (so that it and everything it starts count there, the pump too),
 * apply the rlimit fallback, put the log pump on stdout and stderr, and for bwrap make
 * the network namespace with its DNS sockets (or fall back to bwrap's own). Messages go
 * to the log file (its stdout and stderr until the pump takes them). */
typedef struct spawn_child {
    const char *log;
    const spawn_opts *o;
    strvec fallback;
} spawn_child;

static int spawn_before_exec(void *ctx, char *const **argv)
{
    spawn_child *c = ctx;
    const spawn_opts *o = c->o;
    int e;

    for (size_t i = 0; i < o->njoin; i++) {
        int fd = open(o->join[i], O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || dprintf(fd, "%d\n", (int)getpid()) < 0) {
            e = errno;
            dprintf(2, "sbxsh: cannot join the sandbox's cgroup %s: %s\n", o->join[i],
                    strerror(e));
            errno = e;
            return -1;
        }
        close(fd);
    }
    if (o->rlimits)
        local_apply_rlimits(o->rlimits);
    /* From here on the runtime's output goes through the pump; until here (a
     * failed join) it went to the file, a few bytes of ours. Without a pump
     * the runtime does not run: its output would be unbounded. */
    int piped = start_log_pump(c->log);
    if (piped < 0 || dup2(piped, 1) < 0 || dup2(piped, 2) < 0) {
        e = errno;
        dprintf(2, "sbxsh: cannot start the sandbox's log pump: %s\n", strerror(e));
        errno = e;
        return -1;
    }
    close(piped);
    if (o->dns_netns && local_dns_netns() < 0) {
        /* fail closed: bwrap's own namespace, and no stub (the agent says so) */
        dprintf(2, "sbxsh: cannot make the sandbox's network namespace for its DNS "
                "stub (%s); lookups will not say that the sandbox has no network\n",
                strerror(errno));
        strvec_push(&c->fallback, (*argv)[0]);
        strvec_push(&c->fallback, "--unshare-net");
        for (size_t i = 1; (*argv)[i]; i++)
            strvec_push(&c->fallback, (*argv)[i]);
        *argv = c->fallback.v;
    }
    return 0;
}

/* Runs argv as a new session with stdin /dev/null, stdout and stderr
 * going to log through a log pump (above, at most SBX_LOG_MAX of it), and none of our fds
 * but o->pass_fds (at 3, 4, 5). With wait: waits for it and gives its status in *status.
 * Without: double-forks, so that the child is nobody's zombie, and returns once it has
 * execed. A child that cannot join its cgroup does not run (fails closed): -1, with the
 * reason in the log too. */
int local_spawn(char *const argv[], char *const envp[], const char *log, const spawn_opts *o,
                 bool wait, int *status, sbx_err *err)
{
    static const spawn_opts none = { { -1, -1, -1 }, NULL, 0, NULL, false };
    spawn_child c = { log, o ? o : &none, STRVEC_INIT };
    sigset_t dfl;
    pid_t pid;
    int out, r;

    o = c.o;
    out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (out < 0)
        return sbx_errno(err, "cannot open %s", log);
    /* our signals but SIGPIPE, which the runtime gets as its default */
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sbx_run run = { .argv = argv, .env = envp, .cwd_fd = -1, .setsid = true, .daemon = !wait,
                    .sig_inherit = true, .sig_default = &dfl,
                    .before_exec = spawn_before_exec, .ctx = &c,
                    .fds = { { out, 1 }, { out, 2 } }, .nfds = 2 };
    for (int i = 0; i < 3; i++)
        if (o->pass_fds[i] >= 0)
            run.fds[run.nfds++] = (sbx_run_fd){ o->pass_fds[i], 3 + i };
    r = sbx_run_start(&run, &pid, NULL, err);
    close(out);
    if (r < 0 || !wait)
        return r;
    return sbx_run_wait(pid, status, err);
}

void local_agent_argv(local_backend *lb, strvec *argv)
{
    strvec_push(argv, SBX_IN_AGENT_BIN);
    strvec_push(argv, "--listen");
    strvec_push(argv, SBX_SANDBOX_AGENT_DIR "/" SBX_AGENT_SOCKET);
    /* Rootless runsc starts the agent as uid 0 (runsc.c, write_bundle says why): it
     * becomes the caller once its socket is bound. */
    if (lb->runtime == LOCAL_RUNTIME_RUNSC && getuid() != 0) {
        strvec_push(argv, "--user");
        strvec_pushf(argv, "%u:%u", (unsigned)getuid(), (unsigned)getgid());
    }
    if (!lb->network_host) {
        strvec_push(argv, "--no-network");
        strvec_push(argv, lb->network_allowlist ? "allowlist" : "none");
        /* bwrap: bound before it ran (local_dns_netns); runsc's netstack lets the agent bind
         * port 53 itself */
        if (lb->runtime == LOCAL_RUNTIME_BWRAP) {
            strvec_push(argv, "--dns-fds");
            strvec_push(argv, SBX_DNS_FDS);
        }
    }
    if (lb->network_allowlist) {
        strvec_push(argv, "--egress-relay");
        strvec_pushf(argv, "%d:%s/%s", SBX_EGRESS_PORT, SBX_IN_EGRESS_DIR, SBX_EGRESS_SOCKET);
    }
    for (size_t i = 0; i < lb->agent_args.n; i++)
        strvec_push(argv, lb->agent_args.v[i]);
}
