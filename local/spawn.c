/*
 * Starting the runtimes' processes: detached from us (a new session, stdio
 * to the sandbox's log, none of our fds), inside the sandbox's cgroup or
 * under its rlimits from before exec.
 */
#include "local/local.h"

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

/* A pipe whose read end a detached pump drains into log (above); gives the
 * write end, or -1 (errno set). */
static int start_log_pump(const char *log)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        if (fork() != 0)
            _exit(0);
        int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        for (int fd = 0; fd < 1024; fd++)
            if (fd != p[0] && fd != out)
                close(fd);
        signal(SIGHUP, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        pump_log(p[0], out);
        _exit(0);
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    close(p[0]);
    return p[1];
}

/* Runs argv as a new session with stdin /dev/null, stdout and stderr
 * going to log through a log pump (above, at most SBX_LOG_MAX of it), and none of our fds but o->pass_fds. With wait: waits
 * for it and gives its status in *status. Without: double-forks, so that
 * the child is nobody's zombie, and returns once the intermediate process
 * is gone. A child that cannot join its cgroup does not run (fails closed). */
int local_spawn(char *const argv[], char *const envp[], const char *log, const spawn_opts *o,
                 bool wait, int *status, sbx_err *err)
{
    static const spawn_opts none = { { -1, -1, -1 }, NULL, 0, NULL, false };
    if (!o)
        o = &none;
    pid_t pid = fork();
    if (pid < 0)
        return sbx_errno(err, "fork");
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        int keep = 3;
        setsid();
        if (!wait && fork() != 0)
            _exit(0);
        if (null < 0 || out < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(127);
        for (size_t i = 0; i < o->njoin; i++) {
            int fd = open(o->join[i], O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
            if (fd < 0 || dprintf(fd, "%d\n", (int)getpid()) < 0) {
                dprintf(2, "sbxsh: cannot join the sandbox's cgroup %s: %s\n", o->join[i],
                        strerror(errno));
                _exit(127);
            }
            close(fd);
        }
        if (o->rlimits)
            local_apply_rlimits(o->rlimits);
        /* From here on the runtime's output goes through the pump; until here (a
         * failed join) it went to the file, a few bytes of ours. Without a pump
         * the runtime does not run: its output would be unbounded. */
        int piped = start_log_pump(log);
        if (piped < 0 || dup2(piped, 1) < 0 || dup2(piped, 2) < 0) {
            dprintf(2, "sbxsh: cannot start the sandbox's log pump: %s\n", strerror(errno));
            _exit(127);
        }
        close(piped);
        /* Move the passed fds out of the way before placing them at 3, 4, 5. */
        int tmp[3] = { -1, -1, -1 };
        for (int i = 0; i < 3; i++)
            if (o->pass_fds[i] >= 0 && (tmp[i] = fcntl(o->pass_fds[i], F_DUPFD_CLOEXEC, 10)) < 0)
                _exit(127);
        for (int i = 0; i < 3; i++)
            if (tmp[i] >= 0) {
                if (dup2(tmp[i], 3 + i) < 0)
                    _exit(127);
                keep = 4 + i;
            }
        char *const *args = argv;
        strvec fallback = {0};
        if (o->dns_netns) {
            if (local_dns_netns() == 0) {
                keep = 8;
            } else {
                /* fail closed: bwrap's own namespace, and no stub (the agent says so) */
                dprintf(2, "sbxsh: cannot make the sandbox's network namespace for its DNS "
                        "stub (%s); lookups will not say that the sandbox has no network\n",
                        strerror(errno));
                strvec_push(&fallback, argv[0]);
                strvec_push(&fallback, "--unshare-net");
                for (size_t i = 1; argv[i]; i++)
                    strvec_push(&fallback, argv[i]);
                args = fallback.v;
            }
        }
        for (int fd = keep; fd < 1024; fd++)
            close(fd);
        signal(SIGPIPE, SIG_DFL);
        execve(argv[0], args, envp);
        dprintf(2, "sbxsh: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return sbx_errno(err, "waitpid");
    }
    if (status)
        *status = st;
    return 0;
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
