/*
 * libFuzzer driver for the host side of flow control (sync/conn*.c): a well-behaved agent,
 * simulated here over a socketpair, runs one command whose output (fds 1 and 2) and input
 * (fd 0) move in steps the fuzz input chooses: how much the agent sends, when the host reads,
 * how the host's consumer credits (in the callback, by auto_credit, or later from the loop),
 * how much input the host offers and when the agent takes it. Checked at every step:
 *   - the connection never dies (a window-respecting agent is never called a violator);
 *   - the host never grants more output credit than the window, nor sends input past the
 *     agent's credit;
 *   - every output byte reaches the callback once, in order;
 * and once the steps run out and everything is consumed and exchanged (liveness, the
 * property a lost wake-up breaks): the agent may send at least a quarter window more on each
 * fd, and the host accepts input again, having said so through the writable callback.
 *
 *   make fuzz-flow FUZZ_SECONDS=300
 */
#include "sync/conn.h"
#include "sync/wire.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHAN 1
#define QUARTER (SYNC_OUTPUT_WINDOW / 4)

static sync_host *host;

typedef struct sim {
    int hfd, afd;               /* host's end, agent's end */
    sync_conn *conn;
    strbuf ain;                 /* bytes the agent has read, not yet parsed */
    /* agent side */
    uint32_t credit[3];         /* output credit on fds 1 and 2 */
    uint64_t sent[3];           /* output bytes sent */
    uint64_t in_got, in_granted;/* input bytes received, credited back */
    /* host side */
    int mode;                   /* 0 credit in the callback, 1 auto_credit, 2 later */
    uint64_t recv[3], owed[3];
    uint64_t in_accepted;
    bool writable_seen, want_writable;
    bool exited;
    char error[512];
} sim;

static uint8_t pattern(int fd, uint64_t off)
{
    return (uint8_t)(off * 131 + (uint64_t)fd * 17 + (off >> 9));
}

static void on_output(void *ctx, uint32_t chan, int fd, const void *buf, size_t len)
{
    sim *s = ctx;
    const uint8_t *p = buf;
    if (chan != CHAN || fd < 1 || fd > 2)
        abort();
    for (size_t i = 0; i < len; i++)
        if (p[i] != pattern(fd, s->recv[fd] + i))
            abort();   /* a byte lost, doubled or reordered */
    s->recv[fd] += len;
    if (s->mode == 0)
        sync_conn_credit(s->conn, chan, fd, len);
    else if (s->mode == 2)
        s->owed[fd] += len;
}

static void on_writable(void *ctx, uint32_t chan, int fd)
{
    sim *s = ctx;
    if (chan == CHAN && fd == 0)
        s->writable_seen = true;
}

static void on_exit_cb(void *ctx, uint32_t chan, const sync_exit_status *st)
{
    sim *s = ctx;
    (void)st;
    if (chan == CHAN)
        s->exited = true;
}

static void on_error(void *ctx, const char *msg)
{
    sim *s = ctx;
    snprintf(s->error, sizeof(s->error), "%s", msg);
}

static const sync_conn_ops ops = { .output = on_output, .writable = on_writable,
                                   .exit = on_exit_cb, .error = on_error };

static void host_step(sim *s)
{
    struct pollfd pfd[SYNC_CONN_MAX_POLLFDS];
    size_t n = sync_conn_pollfds(s->conn, pfd, SYNC_CONN_MAX_POLLFDS);
    if (poll(pfd, (nfds_t)n, 0) < 0 && errno != EINTR)
        abort();
    if (sync_conn_handle_events(s->conn, pfd, n) < 0) {
        fprintf(stderr, "connection died: %s\n", s->error);
        abort();
    }
}

/* The host's consumer credits what it took but has not credited (mode 2). */
static void host_credit_owed(sim *s)
{
    for (int fd = 1; fd <= 2; fd++)
        if (s->owed[fd]) {
            sync_conn_credit(s->conn, CHAN, fd, s->owed[fd]);
            s->owed[fd] = 0;
        }
}

static void agent_write(sim *s, const strbuf *b)
{
    size_t off = 0;
    while (off < b->len) {
        ssize_t n = write(s->afd, b->buf + off, b->len - off);
        if (n < 0 && errno == EAGAIN) {
            host_step(s);   /* the host reads, so the socket takes more */
            continue;
        }
        if (n <= 0)
            abort();
        off += (size_t)n;
    }
}

/* The agent reads what the host sent and applies CREDIT and DATA. */
static void agent_read(sim *s)
{
    for (;;) {
        ssize_t n;
        strbuf_grow(&s->ain, 65536);
        n = read(s->afd, s->ain.buf + s->ain.len, 65536);
        if (n <= 0)
            break;
        strbuf_setlen(&s->ain, s->ain.len + (size_t)n);
    }
    for (;;) {
        wire_frame f;
        sbx_err err;
        int r = wire_parse((const uint8_t *)s->ain.buf, s->ain.len, &f, &err);
        if (r < 0)
            abort();
        if (r == 0)
            break;
        if (f.type == WIRE_CREDIT && f.chan == CHAN) {
            uint32_t c;
            if (wire_get_u32_one(&f, &c, &err) < 0 || f.fd < 1 || f.fd > 2)
                abort();
            if ((uint64_t)s->credit[f.fd] + c > SYNC_OUTPUT_WINDOW)
                abort();   /* the host granted more than the window */
            s->credit[f.fd] += c;
        } else if (f.type == WIRE_DATA && f.chan == CHAN && f.fd == 0) {
            s->in_got += f.len;
            if (s->in_got - s->in_granted > SYNC_INPUT_WINDOW)
                abort();   /* the host sent input past the agent's credit */
        }
        strbuf_remove(&s->ain, 0, WIRE_HEADER + f.len);
    }
}

static void agent_send_output(sim *s, int fd, size_t n)
{
    strbuf b = STRBUF_INIT;
    uint8_t *tmp;
    if (n > s->credit[fd])
        n = s->credit[fd];
    if (!n)
        return;
    tmp = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        tmp[i] = pattern(fd, s->sent[fd] + i);
    wire_frame_raw(&b, WIRE_DATA, (unsigned)fd, CHAN, tmp, n);
    agent_write(s, &b);
    s->credit[fd] -= (uint32_t)n;
    s->sent[fd] += n;
    free(tmp);
    strbuf_release(&b);
}

static void agent_grant_input(sim *s, uint64_t n)
{
    strbuf b = STRBUF_INIT;
    size_t at;
    if (n > s->in_got - s->in_granted)
        n = s->in_got - s->in_granted;
    if (!n)
        return;
    at = wire_begin(&b, WIRE_CREDIT, 0, CHAN);
    wire_u32(&b, (uint32_t)n);
    wire_end(&b, at);
    agent_write(s, &b);
    s->in_granted += n;
    strbuf_release(&b);
}

static void host_offer_input(sim *s, size_t n)
{
    static char buf[SYNC_INPUT_WINDOW + 4096];
    ssize_t took = sync_conn_write(s->conn, CHAN, 0, buf, n);
    if (took < 0)
        abort();
    s->in_accepted += (uint64_t)took;
    if ((size_t)took < n)
        s->want_writable = true;
}

static char root[64];

static void remove_root(void)
{
    rmdir(root);   /* empty: no delta ever runs */
}

static void setup(void)
{
    const char *dirs[2] = { root, NULL };
    sync_config cfg = { .code_dirs = dirs, .no_watch = true };
    sbx_err err;
    snprintf(root, sizeof(root), "/tmp/sbx-fuzz-flow-%d", (int)getpid());
    if (mkdir(root, 0700) < 0 && errno != EEXIST)
        abort();
    atexit(remove_root);
    if (sync_host_new(&cfg, &host, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sim s;
    int sv[2];
    strbuf b = STRBUF_INIT;
    sbx_err err;
    wire_hello hello = { .version = SYNC_PROTOCOL_VERSION, .pid = 1 };
    const char *argv[] = { "cat", NULL };
    sync_fd_spec fds[] = { { 0, SYNC_FD_IN }, { 1, SYNC_FD_OUT }, { 2, SYNC_FD_OUT } };
    sync_run_req req = { .exe = "cat", .argv = argv, .cwd = "/", .fds = fds, .nfds = 3,
                         .no_push = true, .no_pull = true };
    size_t i = 0;

    if (!host)
        setup();
    if (size < 1)
        return 0;
    memset(&s, 0, sizeof(s));
    strbuf_init(&s.ain, 0);
    s.mode = data[i++] % 3;
    req.auto_credit = s.mode == 1;
    s.credit[1] = s.credit[2] = SYNC_OUTPUT_WINDOW;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
        abort();
    s.hfd = sv[0];
    s.afd = sv[1];
    wire_put_hello(&b, &hello);
    agent_write(&s, &b);   /* the socket takes a hello before anyone reads */
    strbuf_release(&b);
    if (sync_conn_open(host, s.hfd, s.hfd, &ops, &s, 5000, &s.conn, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    if (sync_conn_run(s.conn, CHAN, &req, &err) < 0)
        abort();

    while (i + 2 <= size) {
        uint8_t op = data[i] % 8;
        size_t arg = (size_t)data[i + 1] << 10 | (data[i] >> 3);   /* 0 .. 256 KiB */
        i += 2;
        switch (op) {
        case 0: agent_send_output(&s, 1, arg); break;
        case 1: agent_send_output(&s, 2, arg); break;
        case 2: host_step(&s); break;
        case 3: host_credit_owed(&s); break;
        case 4: agent_read(&s); break;
        case 5: host_offer_input(&s, arg); break;
        case 6: agent_grant_input(&s, arg); break;
        case 7: host_step(&s); agent_read(&s); break;
        }
    }

    /* Quiescence: everything consumed, credited and exchanged. */
    for (int round = 0; round < 8; round++) {
        host_step(&s);
        host_credit_owed(&s);
        host_step(&s);
        agent_read(&s);
        agent_grant_input(&s, UINT64_MAX);
    }
    for (int fd = 1; fd <= 2; fd++) {
        if (s.recv[fd] != s.sent[fd])
            abort();   /* output sent and never delivered */
        if (s.credit[fd] < QUARTER) {
            fprintf(stderr, "fd %d: the agent may send only %u bytes with everything "
                    "consumed (mode %d)\n", fd, s.credit[fd], s.mode);
            abort();   /* a stall: the agent waits for credit the host never sends */
        }
    }
    if (s.in_got != s.in_accepted)
        abort();   /* input accepted and never sent */
    if (s.want_writable && !s.writable_seen)
        abort();   /* the host's window reopened without a writable callback */
    {
        char one = 'x';
        if (sync_conn_write(s.conn, CHAN, 0, &one, 1) != 1)
            abort();   /* the window did not reopen */
    }
    sync_conn_free(s.conn);
    close(s.hfd);
    close(s.afd);
    strbuf_release(&s.ain);
    return 0;
}
