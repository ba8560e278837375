/*
 * The local backend's network modes beyond none and host: the network namespace
 * made before bwrap (with the DNS stub's sockets bound in it), and the egress proxy
 * of AGENT_SANDBOX_LOCAL_NETWORK=allowlist, started and stopped with the sandbox.
 */
#include "local/local.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/fsutil.h"

const char *local_net_name(bool host, bool allowlist)
{
    return host ? "host" : allowlist ? "allowlist" : "none";
}

/* bwrap without the host's network: the sandbox's network namespace is made here, in the
 * process that becomes bwrap, and the DNS stub's UDP and TCP sockets on 127.0.0.1:53 bound
 * in it, at fds 6 and 7, which bwrap passes on to the agent. bwrap's own --unshare-net
 * would not do: --disable-userns leaves the sandbox in a nested user namespace, where no
 * capability reaches a network namespace bwrap made, so port 53 could not be bound there.
 * As root, the namespace is the host user namespace's; as a user, it needs a user
 * namespace of ours first (the caller's uid and gid mapped to themselves), inside which
 * bwrap makes its own as usual. */
int local_dns_netns(void)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct ifreq ifr;
    int s, fds[2];

    if (unshare(CLONE_NEWNET) < 0) {
        char map[64];
        int fd;
        if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
            return -1;
        if ((fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC)) >= 0) {
            (void)write_full(fd, "deny", 4);
            close(fd);
        }
        snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
        if ((fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC)) < 0 ||
            write_full(fd, map, strlen(map)) < 0)
            return -1;
        close(fd);
        snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
        if ((fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC)) < 0 ||
            write_full(fd, map, strlen(map)) < 0)
            return -1;
        close(fd);
    }
    /* a new network namespace's loopback starts down */
    if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
        close(s);
        return -1;
    }
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
        close(s);
        return -1;
    }
    close(s);
    for (int i = 0; i < 2; i++) {
        int one = 1;
        s = socket(AF_INET, (i ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
        if (s < 0)
            return -1;
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || (i && listen(s, 64) < 0) ||
            (fds[i] = fcntl(s, F_DUPFD_CLOEXEC, 10)) < 0)
            return -1;
        close(s);
    }
    /* not close-on-exec: bwrap passes them to the agent */
    if (dup2(fds[0], 6) < 0 || dup2(fds[1], 7) < 0)
        return -1;
    return 0;
}

/* The egress proxy (AGENT_SANDBOX_LOCAL_NETWORK=allowlist):
 * sbx-egress (local/egress_main.c) is a host process of its own per sandbox, started once
 * the sandbox runs and watching it (it exits when the sandbox's pid ends); release and a
 * claim that replaces the sandbox kill it by its recorded pid and start time. */

bool local_egress_alive(pid_t pid, uint64_t start)
{
    return local_state_alive(pid, start);
}

void local_stop_egress(pid_t pid, uint64_t start)
{
    if (local_egress_alive(pid, start))
        kill(pid, SIGKILL);
    for (int i = 0; i < 400 && local_egress_alive(pid, start); i++)
        usleep(5000);
}

int local_start_egress(local_backend *lb, sbx_err *err)
{
    char *bin = session_find_libexec(lb->agent_path, "sbx-egress");
    char *dir = local_state_path(lb, "egress"), *log = local_state_path(lb, "sandbox.log");
    strbuf allow = STRBUF_INIT;
    strvec argv = {0};
    int ready[2] = { -1, -1 }, r = -1;
    char buf[32];
    ssize_t n = 0;

    lb->egress_pid = 0;
    lb->egress_start = 0;
    if (!bin) {
        sbx_errf(err, "sbx-egress (the egress proxy) is not installed beside sbx-agent; "
                 "make install, or unset AGENT_SANDBOX_LOCAL_NETWORK=allowlist");
        goto out;
    }
    if (pipe2(ready, O_CLOEXEC) < 0) {
        sbx_errno(err, "pipe");
        goto out;
    }
    for (size_t i = 0; i < lb->egress.n; i++)
        strbuf_addf(&allow, "%s%s", i ? "," : "", lb->egress.v[i]);
    strvec_push(&argv, bin);
    strvec_push(&argv, "--socket");
    strvec_pushf(&argv, "%s/%s", dir, SBX_EGRESS_SOCKET);
    strvec_push(&argv, "--allow");
    strvec_push(&argv, allow.buf);
    strvec_push(&argv, "--watch");
    strvec_pushf(&argv, "%d:%llu", (int)lb->pid, (unsigned long long)lb->starttime);
    strvec_push(&argv, "--ready-fd");
    strvec_push(&argv, "3");
    {
        char *env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        spawn_opts so = { { ready[1], -1, -1 }, NULL, 0, NULL, false };
        int sr = local_spawn(argv.v, env, log, &so, false, NULL, err);
        close(ready[1]);
        if (sr < 0)
            goto out;
    }
    /* it writes its pid once it listens, and closes the pipe */
    for (size_t got = 0;;) {
        struct pollfd pfd = { ready[0], POLLIN, 0 };
        if (poll(&pfd, 1, SBX_EGRESS_START_TIMEOUT_MS) <= 0)
            break;
        ssize_t k = read(ready[0], buf + got, sizeof(buf) - 1 - got);
        if (k <= 0)
            break;
        got += (size_t)k;
        n = (ssize_t)got;
        if (memchr(buf, '\n', got) || got == sizeof(buf) - 1)
            break;
    }
    buf[n > 0 ? n : 0] = '\0';
    if (atoi(buf) <= 1) {
        char *tail = sbx_file_tail(log, 400);
        sbx_errf(err, "the egress proxy did not start%s%s%s", *tail ? " (" : "", tail,
                 *tail ? ")" : "; see sandbox.log");
        free(tail);
        goto out;
    }
    lb->egress_pid = atoi(buf);
    lb->egress_start = sbx_proc_starttime(lb->egress_pid);
    r = 0;
out:
    if (ready[0] >= 0)
        close(ready[0]);
    strvec_clear(&argv);
    strbuf_release(&allow);
    free(bin);
    free(dir);
    free(log);
    return r;
}

