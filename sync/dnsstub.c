/*
 * The sandbox's network helper: the DNS stub that says the sandbox has no network, and the
 * relay to the host's egress proxy (see dnsstub.h).
 *
 * Why NXDOMAIN: every resolver fails a lookup at once on it (checked with getent, curl, git,
 * python's urllib, pip, npm and apt-get), and it is a final answer ("Name or service not
 * known", node's ENOTFOUND), where REFUSED becomes EAI_AGAIN ("Temporary failure in name
 * resolution"), which more tools retry. Either way npm's and pip's own retries remain (npm
 * spends about 70 s in its fetch-retries); the notice is what tells the user at once.
 */
#include "sync/dnsstub.h"
#include "common/run.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#endif
#ifndef PR_CAP_AMBIENT_CLEAR_ALL
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* ---- the DNS answer ------------------------------------------------------------------- */

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && !memcmp(s + n - k, suffix, k);
}

/* 127.x.y.z as "z.y.x.127.in-addr.arpa", or ::1 as the 32 nibbles "1.0.0. ... .0.ip6.arpa". */
static bool is_loopback_reverse(const char *name, size_t n)
{
    static const char v6[] = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa";
    if (n == sizeof(v6) - 1 && !memcmp(name, v6, n))
        return true;
    if (!ends_with(name, n, ".127.in-addr.arpa"))
        return false;
    /* three labels of digits before it */
    size_t labels = 0, digits = 0;
    for (size_t i = 0; i < n - strlen(".127.in-addr.arpa"); i++) {
        if (name[i] == '.') {
            if (!digits)
                return false;
            labels++;
            digits = 0;
        } else if (name[i] >= '0' && name[i] <= '9' && digits < 3) {
            digits++;
        } else {
            return false;
        }
    }
    return digits && labels == 2;
}

bool dns_name_is_reverse(const char *name)
{
    size_t n = strlen(name);
    return ends_with(name, n, ".in-addr.arpa") || ends_with(name, n, ".ip6.arpa") ||
           !strcmp(name, "in-addr.arpa") || !strcmp(name, "ip6.arpa");
}

size_t dns_answer(const uint8_t *q, size_t qlen, const char *self, uint8_t *out, size_t outsz,
                  char *name, size_t namesz)
{
    static const uint8_t v4[4] = { 127, 0, 0, 1 };
    static const uint8_t v6[16] = { [15] = 1 };
    unsigned qtype = 0, qclass = 0;
    char nb[256];
    size_t at = 12, nlen = 0, qend = 0;
    unsigned rcode = 3;     /* NXDOMAIN */
    unsigned qd;

    if (namesz)
        name[0] = '\0';
    /* A header, a query (QR clear), and room for ours. */
    if (qlen < 12 || (q[2] & 0x80) || outsz < DNS_MAX_ANSWER)
        return 0;
    qd = (unsigned)q[4] << 8 | q[5];
    if (((q[2] >> 3) & 0xf) != 0) {
        rcode = 4;          /* NOTIMP: not a standard query */
    } else if (qd != 1) {
        rcode = 1;          /* FORMERR: resolvers ask one question */
    } else {
        /* The question's name: labels of 1..63 bytes up to a zero byte, no compression (a
         * question has nothing to point back to), at most 255 bytes on the wire, so at most
         * 253 characters as text. */
        for (;;) {
            if (at >= qlen) {
                rcode = 1;
                break;
            }
            size_t l = q[at];
            if (l == 0) {
                at++;
                break;
            }
            if (l > 63 || at + 1 + l > qlen || at - 12 + 1 + l > 254) {
                rcode = 1;
                break;
            }
            if (nlen)
                nb[nlen++] = '.';
            for (size_t i = 0; i < l; i++) {
                unsigned char c = q[at + 1 + i];
                if (c >= 'A' && c <= 'Z')
                    c = (unsigned char)(c - 'A' + 'a');
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
                    c = '?';
                nb[nlen++] = (char)c;
            }
            at += 1 + l;
        }
        if (rcode == 3 && at + 4 > qlen)
            rcode = 1;      /* no type and class */
        if (rcode == 3) {
            qend = at + 4;
            qtype = (unsigned)q[at] << 8 | q[at + 1];
            qclass = (unsigned)q[at + 2] << 8 | q[at + 3];
            /* The sandbox's own names, which a machine's /etc/hosts answers (the sandbox
             * sees the host's /etc/hosts, which does not name it): `hostname -f`, Python's
             * socket.getfqdn() and Java's InetAddress.getLocalHost() look the host name up
             * and fail on NXDOMAIN. A name the sandbox sets for itself adds nothing it
             * could not reach anyway: both answers are loopback. */
            if (nlen && ((self && *self && strlen(self) == nlen && !memcmp(nb, self, nlen)) ||
                         (nlen == 9 && !memcmp(nb, "localhost", 9))))
                rcode = 0;
            /* The reverse names of loopback addresses (getfqdn() asks for the name of the
             * address it was given): no record, and not a name that does not exist. */
            nb[nlen] = '\0';
            if (is_loopback_reverse(nb, nlen))
                rcode = 0;
            if (namesz) {
                size_t k = nlen < namesz - 1 ? nlen : namesz - 1;
                memcpy(name, nb, k);
                name[k] = '\0';
            }
        }
    }
    /* ID, then QR=1, the query's opcode and RD, RA=1, the rcode; the question (if it was
     * well formed) echoed back; no answers. */
    memcpy(out, q, 2);
    out[2] = (uint8_t)(0x80 | (q[2] & 0x79));
    out[3] = (uint8_t)(0x80 | rcode);
    memset(out + 4, 0, 8);
    if (qend) {
        const uint8_t *addr = NULL;
        size_t alen = 0, n = qend;
        out[5] = 1;
        memcpy(out + 12, q + 12, qend - 12);
        if (rcode == 0 && qclass == 1 && (qtype == 1 || qtype == 28)) {
            addr = qtype == 1 ? v4 : v6;
            alen = qtype == 1 ? sizeof(v4) : sizeof(v6);
        }
        if (addr) {
            /* one answer: the question's name by pointer (offset 12), its type and class,
             * TTL 0 (nothing to cache: the answer never changes, and costs nothing), the
             * address */
            static const uint8_t rr[] = { 0xc0, 0x0c };
            out[7] = 1;
            memcpy(out + n, rr, 2);
            out[n + 2] = (uint8_t)(qtype >> 8);
            out[n + 3] = (uint8_t)qtype;
            out[n + 4] = 0;
            out[n + 5] = 1;
            memset(out + n + 6, 0, 4);
            out[n + 10] = 0;
            out[n + 11] = (uint8_t)alen;
            memcpy(out + n + 12, addr, alen);
            n += 12 + alen;
        }
        return n;
    }
    return 12;
}

void dnsstub_notice(const char *mode, const char *name, char *out, size_t outsz)
{
    const char *n = *name ? name : "a name";
    if (mode && !strcmp(mode, "allowlist"))
        snprintf(out, outsz, "sbxsh: the sandbox reaches the network only through its HTTP(S) "
                 "proxy (it looked up %s directly); a host not in AGENT_SANDBOX_EGRESS is "
                 "refused there, and programs that ignore https_proxy get no network\n", n);
    else
        snprintf(out, outsz, "sbxsh: the sandbox has no network (it looked up %s); allow it "
                 "with AGENT_SANDBOX_LOCAL_NETWORK=host, or AGENT_SANDBOX_LOCAL_NETWORK=allowlist "
                 "AGENT_SANDBOX_EGRESS=%s\n", n, *name ? name : "HOST");
}

/* ---- the helper process --------------------------------------------------------------- */

#define TCP_DNS_MAX 16
#define RELAY_MAX 64
#define RELAY_BUF 16384
#define DNS_TCP_TIMEOUT_MS 5000
#define RELAY_IDLE_MS (10 * 60 * 1000)

typedef struct tcpdns {
    int fd;
    size_t len;
    int64_t deadline;
    uint8_t buf[2 + DNS_MAX_MSG];
} tcpdns;

typedef struct half {
    char buf[RELAY_BUF];
    size_t len;
    bool eof;       /* the reading side ended: shut the writing side once flushed */
    bool shut;
} half;

typedef struct relay {
    int fd[2];      /* 0: the sandbox's TCP connection, 1: the proxy's Unix socket */
    half h[2];      /* h[i]: bytes read from fd[i], to be written to fd[1 - i] */
    int64_t idle_until;
    bool asked;     /* the client's first bytes were looked at */
    bool is_connect;/* ... and were a CONNECT */
    bool answered;  /* the proxy's first bytes were looked at (relay_refusal) */
} relay;

static int notice_pipe = -1;
/* The sandbox's host name, lower-cased, read when the helper starts: the stub answers it
 * (dns_answer). */
static char self_name[DNS_MAX_NAME + 1];

/* A CONNECT the proxy refused (403, or 400/502/503): clients show only "CONNECT tunnel
 * failed, response 403", not the body that says which variable to set, so the agent shows
 * that line on the running commands' stderr ("!": every time, not once). Before a tunnel
 * is up, every answer but 200 is the proxy's own. A plain http:// request's client shows
 * the body itself. */
static void relay_refusal(relay *r)
{
    const half *resp = &r->h[1];
    static const char forbidden[] = "HTTP/1.1 ";
    const char *body, *end;
    char line[700];
    size_t n;

    if (r->answered || resp->len < sizeof(forbidden) - 1)
        return;
    if (memcmp(resp->buf, forbidden, sizeof(forbidden) - 1) ||
        !memcmp(resp->buf + sizeof(forbidden) - 1, "200", 3) || notice_pipe < 0) {
        r->answered = true;
        return;
    }
    /* the proxy writes its refusal at once; until its first line is here, wait */
    body = memmem(resp->buf, resp->len, "\r\n\r\n", 4);
    end = body ? memchr(body + 4, '\n', (size_t)(resp->buf + resp->len - body - 4)) : NULL;
    if (!end && resp->len < RELAY_BUF)
        return;
    r->answered = true;
    if (!end || (size_t)(end - body) < 4 + 7 || memcmp(body + 4, "sbxsh: ", 7))
        return;
    body += 4;
    n = (size_t)(end - body);
    if (!n || n > sizeof(line) - 3)
        return;
    line[0] = '!';
    for (size_t i = 0; i < n; i++)
        line[1 + i] = body[i] >= ' ' && body[i] < 0x7f ? body[i] : '?';
    line[1 + n] = '\n';
    ssize_t w = write(notice_pipe, line, n + 2);
    (void)w;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int bind_lo(int type, int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int one = 1, fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        (type == SOCK_STREAM && listen(fd, 64) < 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* No capability survives into anything the agent runs, should a runtime have given the
 * agent one (for port 53, say): permitted, effective, inheritable and ambient. */
static void drop_caps(void)
{
    /* _LINUX_CAPABILITY_VERSION_3 (no libcap: the agent is libc only) */
    struct { uint32_t version; int pid; } hdr = { 0x20080522, 0 };
    struct { uint32_t effective, permitted, inheritable; } data[2];
    memset(data, 0, sizeof(data));
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (syscall(SYS_capset, &hdr, data) < 0)
        fprintf(stderr, "sbx-agent: cannot drop capabilities: %s\n", strerror(errno));
}

static void notify(int pipefd, const char *mode, const char *name, int64_t *last)
{
    char line[600];
    int64_t t = now_ms();
    /* a few lines per second at most: the agent needs the first one a command sees */
    if (*last && t - *last < 300)
        return;
    *last = t;
    dnsstub_notice(mode, name, line, sizeof(line));
    ssize_t r = write(pipefd, line, strlen(line));   /* non-blocking: dropped when full */
    (void)r;
}

static void relay_close(relay *r)
{
    for (int i = 0; i < 2; i++)
        if (r->fd[i] >= 0)
            close(r->fd[i]);
    r->fd[0] = r->fd[1] = -1;
}

/* An answer of the relay's own to a client it cannot serve. */
static void relay_reply(int c, const char *status, const char *body)
{
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "HTTP/1.1 %s\r\nContent-Type: text/plain\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", status,
                     strlen(body), body);
    ssize_t w = write(c, msg, (size_t)n);
    (void)w;
}

static void relay_accept(int lfd, relay *rl, const char *path)
{
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    relay *r = NULL;
    int u;

    if (c < 0)
        return;
    for (size_t i = 0; i < RELAY_MAX && !r; i++)
        if (rl[i].fd[0] < 0)
            r = &rl[i];
    if (!r) {
        relay_reply(c, "503 Service Unavailable",
                    "sbxsh: too many connections to the sandbox's egress proxy at once\n");
        close(c);
        return;
    }
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (u < 0 || connect(u, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        relay_reply(c, "502 Bad Gateway", "sbxsh: the sandbox's egress proxy is not running "
                    "(sbx release starts the session anew)\n");
        if (u >= 0)
            close(u);
        close(c);
        return;
    }
    fcntl(u, F_SETFL, fcntl(u, F_GETFL) | O_NONBLOCK);
    memset(r, 0, sizeof(*r));
    r->fd[0] = c;
    r->fd[1] = u;
    r->idle_until = now_ms() + RELAY_IDLE_MS;
}

/* A CONNECT's answer is held back until relay_refusal has seen it: its notice must be in
 * the agent's pipe before the client sees the 403 and exits. */
static bool held(const relay *r, int i)
{
    return i == 1 && r->is_connect && !r->answered && !r->h[1].eof;
}

/* Moves what it can through one relay; closes it when both ways are done or on an error. */
static void relay_step(relay *r, const short revents[2])
{
    bool moved = false;
    for (int i = 0; i < 2; i++) {
        half *h = &r->h[i];
        int from = r->fd[i], to = r->fd[1 - i];
        if (!h->eof && h->len < RELAY_BUF && (revents[i] & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(from, h->buf + h->len, RELAY_BUF - h->len);
            if (n > 0) {
                h->len += (size_t)n;
                moved = true;
                if (i == 0 && !r->asked) {
                    r->asked = true;
                    r->is_connect = h->len >= 8 && !memcmp(h->buf, "CONNECT ", 8);
                }
                if (i == 1 && r->is_connect)
                    relay_refusal(r);
            } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                h->eof = true;
            }
        }
        if (h->len && !held(r, i)) {
            ssize_t n = write(to, h->buf, h->len);
            if (n > 0) {
                memmove(h->buf, h->buf + n, h->len - (size_t)n);
                h->len -= (size_t)n;
                moved = true;
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                relay_close(r);
                return;
            }
        }
        if (h->eof && !h->len && !h->shut) {
            shutdown(to, SHUT_WR);
            h->shut = true;
        }
    }
    if (moved)
        r->idle_until = now_ms() + RELAY_IDLE_MS;
    if ((r->h[0].shut && r->h[1].shut) || now_ms() > r->idle_until)
        relay_close(r);
}

static void tcpdns_step(tcpdns *t, int pipefd, const char *mode, int64_t *last)
{
    ssize_t n = read(t->fd, t->buf + t->len, sizeof(t->buf) - t->len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        close(t->fd);
        t->fd = -1;
        return;
    }
    t->len += (size_t)n;
    while (t->len >= 2) {
        size_t want = (size_t)t->buf[0] << 8 | t->buf[1];
        uint8_t resp[2 + DNS_MAX_ANSWER];
        char name[DNS_MAX_NAME + 1];
        if (want > DNS_MAX_MSG || want < 12) {
            close(t->fd);
            t->fd = -1;
            return;
        }
        if (t->len < 2 + want)
            return;
        size_t rl = dns_answer(t->buf + 2, want, self_name, resp + 2, sizeof(resp) - 2, name,
                               sizeof(name));
        if (rl) {
            resp[0] = (uint8_t)(rl >> 8);
            resp[1] = (uint8_t)rl;
            if (dns_answer_refused(resp + 2, rl) && !dns_name_is_reverse(name))
                notify(pipefd, mode, name, last);
            /* a short answer on a fresh socket: it fits, or the client is not reading */
            if (write(t->fd, resp, rl + 2) != (ssize_t)(rl + 2)) {
                close(t->fd);
                t->fd = -1;
                return;
            }
        }
        memmove(t->buf, t->buf + 2 + want, t->len - 2 - want);
        t->len -= 2 + want;
    }
}

static void serve(int udp, int tcp, int rlfd, const dnsstub_opts *o, int pipefd)
{
    static tcpdns td[TCP_DNS_MAX];
    static relay rl[RELAY_MAX];
    struct pollfd pfd[3 + TCP_DNS_MAX + 2 * RELAY_MAX];
    int64_t last = 0;

    for (size_t i = 0; i < TCP_DNS_MAX; i++)
        td[i].fd = -1;
    for (size_t i = 0; i < RELAY_MAX; i++)
        rl[i].fd[0] = rl[i].fd[1] = -1;
    for (;;) {
        size_t n = 0;
        int64_t t = now_ms(), next = -1;
        pfd[n++] = (struct pollfd){ .fd = udp, .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = tcp, .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = rlfd, .events = POLLIN };
        for (size_t i = 0; i < TCP_DNS_MAX; i++) {
            if (td[i].fd >= 0 && t > td[i].deadline) {
                close(td[i].fd);
                td[i].fd = -1;
            }
            pfd[n++] = (struct pollfd){ .fd = td[i].fd, .events = POLLIN };
            if (td[i].fd >= 0 && (next < 0 || td[i].deadline < next))
                next = td[i].deadline;
        }
        for (size_t i = 0; i < RELAY_MAX; i++) {
            relay *r = &rl[i];
            for (int k = 0; k < 2; k++) {
                short ev = 0;
                if (r->fd[0] >= 0) {
                    if (!r->h[k].eof && r->h[k].len < RELAY_BUF)
                        ev |= POLLIN;
                    if (r->h[1 - k].len && !held(r, 1 - k))
                        ev |= POLLOUT;
                }
                pfd[n++] = (struct pollfd){ .fd = r->fd[0] >= 0 ? r->fd[k] : -1, .events = ev };
            }
            if (r->fd[0] >= 0 && (next < 0 || r->idle_until < next))
                next = r->idle_until;
        }
        int timeout = next < 0 ? -1 : (int)(next - t + 1);
        if (poll(pfd, (nfds_t)n, timeout < 0 ? -1 : timeout < 1 ? 1 : timeout) < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        if (pfd[0].revents & POLLIN) {
            /* a burst of queries: answer what is queued, bounded per turn */
            for (int k = 0; k < 64; k++) {
                uint8_t q[DNS_MAX_MSG], resp[DNS_MAX_ANSWER];
                char name[DNS_MAX_NAME + 1];
                struct sockaddr_storage from;
                socklen_t fl = sizeof(from);
                ssize_t ql = recvfrom(udp, q, sizeof(q), 0, (struct sockaddr *)&from, &fl);
                if (ql < 0)
                    break;
                size_t rlen = dns_answer(q, (size_t)ql, self_name, resp, sizeof(resp), name,
                                         sizeof(name));
                if (rlen) {
                    /* the notice first: the client may exit as soon as it has the answer */
                    if (dns_answer_refused(resp, rlen) && !dns_name_is_reverse(name))
                        notify(pipefd, o->notice_mode, name, &last);
                    sendto(udp, resp, rlen, 0, (struct sockaddr *)&from, fl);
                }
            }
        }
        if (pfd[1].revents & POLLIN) {
            int c = accept4(tcp, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            size_t i = 0;
            while (c >= 0 && i < TCP_DNS_MAX && td[i].fd >= 0)
                i++;
            if (c >= 0 && i < TCP_DNS_MAX) {
                td[i].fd = c;
                td[i].len = 0;
                td[i].deadline = now_ms() + DNS_TCP_TIMEOUT_MS;
            } else if (c >= 0) {
                close(c);
            }
        }
        if (pfd[2].revents & POLLIN)
            relay_accept(rlfd, rl, o->relay_socket);
        for (size_t i = 0; i < TCP_DNS_MAX; i++)
            if (td[i].fd >= 0 && pfd[3 + i].revents)
                tcpdns_step(&td[i], pipefd, o->notice_mode, &last);
        for (size_t i = 0; i < RELAY_MAX; i++) {
            relay *r = &rl[i];
            short ev[2] = { pfd[3 + TCP_DNS_MAX + 2 * i].revents,
                            pfd[3 + TCP_DNS_MAX + 2 * i + 1].revents };
            if (r->fd[0] >= 0 && (ev[0] || ev[1] || now_ms() > r->idle_until))
                relay_step(r, ev);
        }
    }
}

/* The stub's process (run.h's child function): a broken pipe is an error to handle,
 * SIGTERM ends it, Ctrl-C is for the commands. */
typedef struct stub_child {
    int udp, tcp, rlfd;
    const dnsstub_opts *o;
    int *p;
} stub_child;

static int stub_child_main(void *ctx)
{
    stub_child *sc = ctx;

    close(sc->p[0]);
    notice_pipe = sc->p[1];
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_IGN);
    serve(sc->udp, sc->tcp, sc->rlfd, sc->o, sc->p[1]);
    return 0;
}

int dnsstub_start(const dnsstub_opts *o)
{
    int udp = -1, tcp = -1, rlfd = -1, p[2];
    pid_t pid;

    if (o->dns && o->dns_fds[0] > 0 && o->dns_fds[1] > 0) {
        /* bound by the backend before the sandbox ran, when nothing inside may */
        int t0 = 0, t1 = 0;
        socklen_t l = sizeof(int);
        if (getsockopt(o->dns_fds[0], SOL_SOCKET, SO_TYPE, &t0, &l) == 0 && t0 == SOCK_DGRAM &&
            getsockopt(o->dns_fds[1], SOL_SOCKET, SO_TYPE, &t1, &l) == 0 && t1 == SOCK_STREAM) {
            udp = o->dns_fds[0];
            tcp = o->dns_fds[1];
            fcntl(udp, F_SETFL, fcntl(udp, F_GETFL) | O_NONBLOCK);
            fcntl(tcp, F_SETFL, fcntl(tcp, F_GETFL) | O_NONBLOCK);
        }
    }
    if (o->dns && udp < 0) {
        udp = bind_lo(SOCK_DGRAM, 53);
        tcp = udp >= 0 ? bind_lo(SOCK_STREAM, 53) : -1;
        if (udp < 0 || tcp < 0) {
            fprintf(stderr, "sbx-agent: cannot serve DNS on 127.0.0.1:53 (%s): lookups fail "
                    "without saying that the sandbox has no network\n", strerror(errno));
            if (udp >= 0)
                close(udp);
            udp = tcp = -1;
        }
    }
    if (o->relay_port > 0 && o->relay_socket) {
        if (strlen(o->relay_socket) >= sizeof(((struct sockaddr_un *)0)->sun_path))
            fprintf(stderr, "sbx-agent: the egress socket's path is too long\n");
        else if ((rlfd = bind_lo(SOCK_STREAM, o->relay_port)) < 0)
            fprintf(stderr, "sbx-agent: cannot listen on 127.0.0.1:%d for the egress proxy: "
                    "%s\n", o->relay_port, strerror(errno));
    }
    drop_caps();
    if (udp < 0 && rlfd < 0)
        return -1;
    if (gethostname(self_name, sizeof(self_name)) < 0)
        self_name[0] = '\0';
    self_name[sizeof(self_name) - 1] = '\0';
    for (char *c = self_name; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        perror("sbx-agent: pipe");
        return -1;
    }
    /* the stub's process dies with the agent; ours but the pipe's read end otherwise */
    stub_child sc = { udp, tcp, rlfd, o, p };
    sbx_run run = { .fn = stub_child_main, .ctx = &sc, .file = "the DNS stub", .cwd_fd = -1,
                    .stdin_inherit = true, .stderr_to = SBX_RUN_ERR_INHERIT,
                    .keep_fds = true, .sig_inherit = true, .parent_death_kill = true };
    sbx_err err;
    if (sbx_run_start(&run, &pid, NULL, &err) < 0) {
        fprintf(stderr, "sbx-agent: %s\n", err.msg);
        close(p[0]);
        close(p[1]);
        return -1;
    }
    close(p[1]);
    if (udp >= 0)
        close(udp);
    if (tcp >= 0)
        close(tcp);
    if (rlfd >= 0)
        close(rlfd);
    return p[0];
}
