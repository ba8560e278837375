/*
 * sbx-egress: the host-side HTTP(S) proxy of a sandbox started with
 * AGENT_SANDBOX_LOCAL_NETWORK=allowlist (see egress.h for the policy).
 *
 * It listens on a Unix socket that the backend binds into the sandbox, where the agent's
 * relay (sync/dnsstub.c) joins 127.0.0.1:3128 to it. One process per sandbox, started after
 * the sandbox and watching it (a pidfd): when the sandbox goes, so does the proxy; release
 * also kills it by its recorded pid. Each connection is served by a child of its own (at
 * most SBX_EGRESS_CONNS at once), with bounded buffers and timeouts: the head must arrive
 * within 15 s and fit in 8 KiB, a connect takes at most 10 s per address, and a tunnel
 * idle for 10 minutes is closed.
 *
 * The name in the request is checked against the list, resolved here, each address checked
 * (loopback, private, link-local, multicast and reserved ranges refused unless a CIDR entry
 * lists them), and the connection made to that very sockaddr: no second lookup, so no DNS
 * rebinding between the check and the connect.
 */
#include "local/egress.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/fsutil.h"
#include "common/run.h"

#define SBX_EGRESS_CONNS 64
#define HEAD_TIMEOUT_MS 15000
#define CONNECT_TIMEOUT_MS 10000
#define IDLE_TIMEOUT_MS (10 * 60 * 1000)
#define RELAY_BUF 65536

static const char usage[] =
    "usage: sbx-egress --socket PATH --allow LIST [--watch PID:STARTTIME] [--ready-fd FD]\n"
    "\n"
    "The egress proxy of one sandbox (AGENT_SANDBOX_LOCAL_NETWORK=allowlist): HTTP CONNECT\n"
    "and absolute-URI http:// requests to the hosts LIST admits (AGENT_SANDBOX_EGRESS's\n"
    "syntax), on a Unix socket. Started by the local backend; exits when the process\n"
    "--watch names ends. With --ready-fd, writes its pid to FD once it listens.\n";

static local_egress_policy policy;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One write, head and body: the sandbox's relay looks for the body in the first bytes. */
static void reply(int fd, int code, const char *reason, const char *body)
{
    char msg[1536];
    int n = snprintf(msg, sizeof(msg), "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", code, reason,
                     strlen(body), body);
    if (n > 0 && (size_t)n < sizeof(msg))
        (void)write_full(fd, msg, (size_t)n);
}

/* Each decision is a line in sandbox.log, while it is under 1 MiB: the sandbox chooses how
 * many requests it makes, and must not fill the host's disk with them. */
static bool log_ok(void)
{
    struct stat st;
    return fstat(2, &st) == 0 && (!S_ISREG(st.st_mode) || st.st_size < (1 << 20));
}

static void refuse(int fd, int code, const char *fmt, ...) SBX_PRINTF(3, 4);
static void refuse(int fd, int code, const char *fmt, ...)
{
    char body[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof(body) - 1, fmt, ap);
    va_end(ap);
    strcat(body, "\n");
    if (log_ok())
        sbx_report("sbx-egress", "refused: %.*s", (int)strlen(body) - 1, body);  /* the sandbox's host name: sanitized */
    reply(fd, code, code == 403 ? "Forbidden" : code == 400 ? "Bad Request" : "Bad Gateway", body);
}

/* Connects to sa within CONNECT_TIMEOUT_MS; the socket, or -1. */
static int connect_to(const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), e = 0;
    socklen_t el = sizeof(e);
    if (fd < 0)
        return -1;
    if (connect(fd, sa, len) < 0) {
        struct pollfd p = { fd, POLLOUT, 0 };
        if (errno != EINPROGRESS || poll(&p, 1, CONNECT_TIMEOUT_MS) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* Both ways until both ends are done, or nothing moved for IDLE_TIMEOUT_MS. */
static void relay(int a, int b)
{
    static char buf[2][RELAY_BUF];
    size_t len[2] = { 0, 0 };
    bool eof[2] = { false, false }, shut[2] = { false, false };
    int fd[2] = { a, b };
    set_nonblock(a, true);
    set_nonblock(b, true);
    while (!(shut[0] && shut[1])) {
        struct pollfd p[2];
        for (int i = 0; i < 2; i++) {
            /* fd[i]: read into buf[i] when it has room; write buf[1 - i] to it */
            p[i].fd = fd[i];
            p[i].events = (short)((!eof[i] && len[i] < RELAY_BUF ? POLLIN : 0) |
                                  (len[1 - i] ? POLLOUT : 0));
        }
        int r = poll(p, 2, IDLE_TIMEOUT_MS);
        if (r == 0)
            return;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (int i = 0; i < 2; i++) {
            if (!eof[i] && len[i] < RELAY_BUF && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                ssize_t n = read(fd[i], buf[i] + len[i], RELAY_BUF - len[i]);
                if (n > 0)
                    len[i] += (size_t)n;
                else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                    eof[i] = true;
            }
            int o = 1 - i;
            if (len[i]) {
                ssize_t n = write(fd[o], buf[i], len[i]);
                if (n > 0) {
                    memmove(buf[i], buf[i] + n, len[i] - (size_t)n);
                    len[i] -= (size_t)n;
                } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                    return;
                }
            }
            if (eof[i] && !len[i] && !shut[i]) {
                shutdown(fd[o], SHUT_WR);
                shut[i] = true;
            }
        }
    }
}

static void serve_one(int c)
{
    char head[SBX_EGRESS_HEAD_MAX];
    size_t len = 0;
    local_egress_req r;
    const char *why = NULL;
    int64_t deadline = now_ms() + HEAD_TIMEOUT_MS;
    int pr;

    for (;;) {
        struct pollfd p = { c, POLLIN, 0 };
        int64_t left = deadline - now_ms();
        if (left <= 0 || poll(&p, 1, (int)left) != 1)
            return;
        ssize_t n = read(c, head + len, sizeof(head) - len);
        if (n <= 0)
            return;
        len += (size_t)n;
        pr = local_egress_parse_request(head, len, &r, &why);
        if (pr <= 0)
            break;
    }
    if (pr < 0 && !strncmp(why, "an IP address", 13))
        return refuse(c, 403, "sbxsh: the sandbox's egress proxy admits host names only, not "
                      "an IP address: name the host, and list it in AGENT_SANDBOX_EGRESS");
    if (pr < 0)
        return refuse(c, 400, "sbxsh: the sandbox's egress proxy cannot serve this request: %s",
                      why);
    if (!local_egress_host_allowed(&policy, r.host, r.port)) {
        bool listed = local_egress_host_allowed(&policy, r.host, 443);
        if (listed)
            return refuse(c, 403, "sbxsh: the sandbox may reach %s on ports 443 and 80 only; "
                          "add %s:%u to AGENT_SANDBOX_EGRESS (then sbx release, for a new "
                          "session)", r.host, r.host, r.port);
        return refuse(c, 403, "sbxsh: the sandbox may not reach %s: it is not in "
                      "AGENT_SANDBOX_EGRESS; add it there (AGENT_SANDBOX_EGRESS=...,%s, then "
                      "sbx release, for a new session)", r.host, r.host);
    }

    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%u", r.port);
    int ge = getaddrinfo(r.host, port, &hints, &res);
    if (ge)
        return refuse(c, 502, "sbxsh: the sandbox's egress proxy cannot resolve %s: %s",
                      r.host, gai_strerror(ge));
    int up = -1;
    const char *refused = NULL;
    char addr[INET6_ADDRSTRLEN] = "", raddr[INET6_ADDRSTRLEN] = "";
    for (struct addrinfo *ai = res; ai && up < 0; ai = ai->ai_next) {
        const void *in = ai->ai_family == AF_INET
                         ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
                         : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
        inet_ntop(ai->ai_family, in, addr, sizeof(addr));
        if (!local_egress_addr_allowed(&policy, ai->ai_addr, &why)) {
            if (!refused) {
                refused = why;
                snprintf(raddr, sizeof(raddr), "%s", addr);
            }
            continue;
        }
        /* the checked sockaddr itself: nothing is looked up again */
        up = connect_to(ai->ai_addr, ai->ai_addrlen);
    }
    freeaddrinfo(res);
    if (up < 0 && refused)
        return refuse(c, 403, "sbxsh: the sandbox may not reach %s: it resolves to %s, %s; "
                      "list that range in AGENT_SANDBOX_EGRESS (e.g. %s/%d) to allow it",
                      r.host, raddr, refused, raddr, strchr(raddr, ':') ? 128 : 32);
    if (up < 0)
        return refuse(c, 502, "sbxsh: the sandbox's egress proxy cannot connect to %s port %u",
                      r.host, r.port);
    if (log_ok())
        sbx_report("sbx-egress", "%s %s:%u -> %s", r.method, r.host, r.port, addr);  /* sanitized */
    if (r.connect) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        if (write_full(c, ok, sizeof(ok) - 1) < 0) {
            close(up);
            return;
        }
    } else {
        /* origin-form request line, the headers less the proxy's own */
        strbuf sb = STRBUF_INIT;
        strbuf_addf(&sb, "%s ", r.method);
        if (r.target_len && head[r.target_off] == '/')
            strbuf_add(&sb, head + r.target_off, r.target_len);
        else {
            strbuf_addch(&sb, '/');
            strbuf_add(&sb, head + r.target_off, r.target_len);
        }
        strbuf_addch(&sb, ' ');
        strbuf_add(&sb, head + r.version_off, 8);
        strbuf_addstr(&sb, "\r\n");
        for (size_t at = r.line_end; at < r.head_len - 2;) {
            const char *e = memmem(head + at, r.head_len - at, "\r\n", 2);
            size_t n = (size_t)(e - (head + at)) + 2;
            if (strncasecmp(head + at, "Proxy-", 6))
                strbuf_add(&sb, head + at, n);
            at += n;
        }
        strbuf_addstr(&sb, "\r\n");
        int w = write_full(up, sb.buf, sb.len);
        strbuf_release(&sb);
        if (w < 0) {
            close(up);
            return;
        }
    }
    if (len > r.head_len && write_full(up, head + r.head_len, len - r.head_len) < 0) {
        close(up);
        return;
    }
    relay(c, up);
    close(up);
}

static bool watched_alive(pid_t pid, uint64_t starttime)
{
    return pid <= 0 || sbx_proc_starttime(pid) == starttime;
}

/* A connection's process (run.h's child function). */
typedef struct conn_child {
    int c, lfd, pidfd;
} conn_child;

static int serve_child(void *ctx)
{
    conn_child *cc = ctx;

    close(cc->lfd);
    if (cc->pidfd >= 0)
        close(cc->pidfd);
    serve_one(cc->c);
    return 0;
}

int main(int argc, char **argv)
{
    const char *sock = NULL, *allow = NULL;
    int ready_fd = -1;
    pid_t watch = 0;
    uint64_t watch_start = 0;
    sbx_err err;
    int lfd, pidfd = -1, nchildren = 0;
    struct sockaddr_un sun = { .sun_family = AF_UNIX };

    /* OPTION VALUE pairs: each turn takes two words */
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "sbx-egress: unknown option or missing value: %s\n", a);
            return 2;
        }
        if (!strcmp(a, "--socket"))
            sock = v;
        else if (!strcmp(a, "--allow"))
            allow = v;
        else if (!strcmp(a, "--ready-fd"))
            ready_fd = atoi(v);
        else if (!strcmp(a, "--watch")) {
            char *end;
            watch = (pid_t)strtol(v, &end, 10);
            watch_start = *end == ':' ? strtoull(end + 1, NULL, 10) : 0;
        } else {
            fprintf(stderr, "sbx-egress: unknown option: %s\n", a);
            return 2;
        }
    }
    if (!sock || !allow || !strchr(sock, '/')) {
        fputs(usage, stderr);
        return 2;
    }
    if (local_egress_parse(allow, &policy, &err) < 0) {
        fprintf(stderr, "sbx-egress: %s\n", err.msg);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (watch > 0) {
        pidfd = (int)syscall(SYS_pidfd_open, watch, 0);
        if (!watched_alive(watch, watch_start)) {
            fprintf(stderr, "sbx-egress: the sandbox (pid %d) is gone\n", (int)watch);
            return 1;
        }
    }
    /* bound through its directory's fd: a state directory's path may be longer than a
     * socket address holds */
    {
        char *dir = xstrndup(sock, (size_t)(strrchr(sock, '/') - sock));
        const char *base = strrchr(sock, '/') + 1;
        int dfd = open(*dir ? dir : "/", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        free(dir);
        if (dfd < 0 || strlen(base) > 64) {
            fprintf(stderr, "sbx-egress: cannot open the directory of %s\n", sock);
            return 1;
        }
        unlinkat(dfd, base, 0);
        snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d/%s", dfd, base);
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        /* Any uid may connect: its directory (0700, or 0711 where the sandbox's uid is
         * "other" to the caller's files: rootless runsc), in the session's 0700 state
         * directory, is what keeps the host's other users out (local_backend.c). */
        mode_t old = umask(0);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
            listen(lfd, 64) < 0) {
            fprintf(stderr, "sbx-egress: cannot listen on %s: %s\n", sock, strerror(errno));
            return 1;
        }
        umask(old);
        close(dfd);
    }
    if (ready_fd >= 0) {
        dprintf(ready_fd, "%d\n", (int)getpid());
        close(ready_fd);
    }
    fprintf(stderr, "sbx-egress: serving %s for %s\n", sock, allow);
    for (;;) {
        struct pollfd p[2] = { { lfd, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
        /* the timeout reaps children and checks a watched pid without a pidfd */
        int r = poll(p, 2, 1000);
        while (waitpid(-1, NULL, WNOHANG) > 0)
            nchildren--;
        if ((pidfd >= 0 && (p[1].revents & POLLIN)) || !watched_alive(watch, watch_start)) {
            fprintf(stderr, "sbx-egress: the sandbox is gone; exiting\n");
            return 0;
        }
        if (r <= 0 || !(p[0].revents & POLLIN))
            continue;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        /* the sandbox reaches this socket as our uid (or runsc's gofer, as root) */
        if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 && cred.uid != 0 &&
            cred.uid != getuid()) {
            close(c);
            continue;
        }
        if (nchildren >= SBX_EGRESS_CONNS) {
            reply(c, 503, "Service Unavailable",
                  "sbxsh: too many connections through the sandbox's egress proxy at once\n");
            close(c);
            continue;
        }
        /* one process per connection, which dies with us (no connection outlives the
         * proxy, whose end is the sandbox's), with our fds and signals but the listening
         * socket and the pidfd */
        conn_child cc = { c, lfd, pidfd };
        sbx_run run = { .fn = serve_child, .ctx = &cc, .file = "a connection", .cwd_fd = -1,
                        .stdin_inherit = true, .stderr_to = SBX_RUN_ERR_INHERIT,
                        .keep_fds = true, .sig_inherit = true, .parent_death_kill = true };
        pid_t pid;
        sbx_err why;
        if (sbx_run_start(&run, &pid, NULL, &why) == 0)
            nchildren++;
        close(c);
    }
}
