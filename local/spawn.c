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
#include <sys/wait.h>
#include <unistd.h>

/* Runs argv as a new session with stdin /dev/null, stdout and stderr
 * appended to log, and none of our fds but o->pass_fds. With wait: waits
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
    if (!lb->network_host) {
        strvec_push(argv, "--no-network");
        strvec_push(argv, lb->network_allowlist ? "allowlist" : "none");
        /* bwrap: bound before it ran (local_dns_netns); runsc's netstack lets the agent bind
         * port 53 itself */
        if (lb->runtime == SBX_RUNTIME_BWRAP) {
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
