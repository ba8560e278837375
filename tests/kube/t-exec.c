/*
 * kube/exec.c against a server in the test: a thread on the other end of a socketpair (or
 * of a loopback TCP connection, for the curl transport) that answers the upgrade and
 * speaks v5.channel.k8s.io or v4.channel.k8s.io with kube/ws.c in the server role; and
 * kube_exec_open() through the real client (kube/client.c) against the same server behind
 * TLS (OpenSSL, a certificate made here).
 */
#include "kube/client.h"
#include "kube/exec_int.h"
#include "kube/ws.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/lib/tap.h"

/* ---- the server ---------------------------------------------------------------------------- */

typedef struct srv srv;
typedef void script_fn(srv *s);

struct srv {
    int fd;
    SSL *ssl;               /* NULL: plain */
    script_fn *script;
    const char *proto;      /* the subprotocol to choose */
    const char *answer;     /* instead of a 101: this raw answer (then the script is not run) */
    ws_encoder enc;
    ws_decoder dec;
    strbuf out;
    uint8_t rbuf[65536];
    size_t rlen, roff;
    /* what it saw */
    strbuf request;
    strbuf stdin_;
    bool stdin_closed;
    strbuf pong;
    bool got_pong, got_ping;
    unsigned close_code;
    strbuf resize;
    const char *param;      /* the script's parameter */
    size_t big;
    pthread_t th;
    bool joined;
};

static ssize_t srv_rd(srv *s, void *buf, size_t n)
{
    if (s->ssl) {
        int r = SSL_read(s->ssl, buf, (int)n);
        return r > 0 ? r : 0;
    }
    for (;;) {
        ssize_t r = read(s->fd, buf, n);
        if (r < 0 && errno == EINTR)
            continue;
        return r;
    }
}

static void srv_flush(srv *s)
{
    if (s->ssl) {
        for (size_t off = 0; off < s->out.len;) {
            int r = SSL_write(s->ssl, s->out.buf + off, (int)(s->out.len - off));
            if (r <= 0)
                break;
            off += (size_t)r;
        }
    } else if (s->out.len && write_full(s->fd, s->out.buf, s->out.len) < 0 && errno != EPIPE) {
        diag("server: write: %s", strerror(errno));
    }
    strbuf_reset(&s->out);
}

static void srv_msg(srv *s, int ch, const void *data, size_t len)
{
    uint8_t c = (uint8_t)ch;
    struct iovec iov[2] = { { &c, 1 }, { (void *)data, len } };
    ws_encodev(&s->enc, &s->out, WS_BINARY, true, iov, 2);
}

static void srv_str(srv *s, int ch, const char *str)
{
    srv_msg(s, ch, str, strlen(str));
}

static void srv_close(srv *s, unsigned code, const char *reason)
{
    ws_encode_close(&s->enc, &s->out, code, reason);
    srv_flush(s);
}

/* The next event from the client (1), 0 at EOF or on an error. */
static int srv_event(srv *s, ws_event *ev)
{
    for (;;) {
        if (s->roff < s->rlen) {
            size_t used;
            sbx_err err;
            int r = ws_decode(&s->dec, s->rbuf + s->roff, s->rlen - s->roff, &used, ev, &err);
            s->roff += used;
            if (r < 0) {
                diag("server: %s", err.msg);
                return 0;
            }
            if (r == 1)
                return 1;
            continue;
        }
        ssize_t n = srv_rd(s, s->rbuf, sizeof(s->rbuf));
        if (n <= 0)
            return 0;
        s->rlen = (size_t)n;
        s->roff = 0;
    }
}

/* Reads client messages, recording them, until stdin's end (v5), a Close or EOF. Answers
 * pings. Returns at the first event matching until (an opcode), or 0 for stdin's end. */
static void srv_read_until(srv *s, int until)
{
    ws_event ev;
    while (srv_event(s, &ev)) {
        if (ev.opcode == WS_BINARY && ev.len >= 1) {
            if (ev.data[0] == 0)
                strbuf_add(&s->stdin_, ev.data + 1, ev.len - 1);
            else if (ev.data[0] == 4)
                strbuf_add(&s->resize, ev.data + 1, ev.len - 1);
            else if (ev.data[0] == 255 && ev.len == 2 && ev.data[1] == 0) {
                s->stdin_closed = true;
                if (until == 0)
                    return;
            }
            if (until == 4 && ev.data[0] == 4)
                return;
        } else if (ev.opcode == WS_PONG) {
            s->got_pong = true;
            strbuf_add(&s->pong, ev.data, ev.len);
            if (until == WS_PONG)
                return;
        } else if (ev.opcode == WS_PING) {
            s->got_ping = true;
            if (until == WS_PING)
                return;
        } else if (ev.opcode == WS_CLOSE) {
            s->close_code = ev.close_code;
            return;
        }
    }
}

#define EXIT3 "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with " \
              "non-zero exit code: error executing command [sh -c exit 3], exit code 3\"," \
              "\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\"," \
              "\"message\":\"3\"}]}}"
#define SUCCESS "{\"metadata\":{},\"status\":\"Success\"}"

/* The end as the apiserver does it: the status, Close 1000, wait for the client's Close. */
static void srv_end(srv *s, const char *status)
{
    srv_str(s, 3, status);
    srv_close(s, 1000, NULL);
    srv_read_until(s, WS_CLOSE);
}

static void *srv_main(void *arg)
{
    srv *s = arg;
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, NULL);
    /* The request: up to its blank line. */
    char buf[8192];
    size_t n = 0;
    while (!memmem(buf, n, "\r\n\r\n", 4) && n < sizeof(buf)) {
        ssize_t r = srv_rd(s, buf + n, sizeof(buf) - n);
        if (r <= 0)
            return NULL;
        n += (size_t)r;
    }
    char *end = memmem(buf, n, "\r\n\r\n", 4);
    if (!end)
        return NULL;
    strbuf_add(&s->request, buf, (size_t)(end - buf) + 4);
    if (s->answer) {
        strbuf_addstr(&s->out, s->answer);
        srv_flush(s);
        shutdown(s->fd, SHUT_WR);
        return NULL;
    }
    char *k = strcasestr(s->request.buf, "\r\nSec-WebSocket-Key: ");
    char key[64] = "";
    if (k)
        sscanf(k + 21, "%63[^\r]", key);
    char accept[WS_ACCEPT_LEN + 1];
    ws_accept_key(key, accept);
    strbuf_addf(&s->out, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                "Sec-WebSocket-Protocol: %s\r\n\r\n", accept, s->proto);
    /* The first frames go in the same write as the header block, as servers do: the
     * client must keep the bytes after it. */
    srv_str(s, 1, "");
    s->script(s);
    srv_flush(s);
    return NULL;
}

static int cfd;

static srv *srv_start(script_fn *script, const char *proto)
{
    srv *s = xcalloc(1, sizeof(*s));
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        abort();
    s->fd = sv[1];
    cfd = sv[0];
    s->script = script;
    s->proto = proto ? proto : "v5.channel.k8s.io";
    s->enc.role = WS_SERVER;
    ws_decoder_init(&s->dec, WS_SERVER, 64 << 20);
    strbuf_init(&s->out, 0);
    strbuf_init(&s->request, 0);
    strbuf_init(&s->stdin_, 0);
    strbuf_init(&s->pong, 0);
    strbuf_init(&s->resize, 0);
    return s;
}

static void srv_run(srv *s)
{
    pthread_create(&s->th, NULL, srv_main, s);
}

/* Waits for the server thread (once): its records are safe to read after this. */
static void srv_join(srv *s)
{
    if (!s->joined)
        pthread_join(s->th, NULL);
    s->joined = true;
}

static void srv_stop(srv *s)
{
    srv_join(s);
    if (s->fd >= 0)
        close(s->fd);
    ws_decoder_release(&s->dec);
    strbuf_release(&s->out);
    strbuf_release(&s->request);
    strbuf_release(&s->stdin_);
    strbuf_release(&s->pong);
    strbuf_release(&s->resize);
    free(s);
}

static const char *hdrs[] = { "Authorization: Bearer test-token", NULL };

static int open_over(srv *s, const kube_exec_opts *o, kube_exec **x, sbx_err *err)
{
    srv_run(s);
    return kube_exec_over_fd(cfd, "apiserver.test:6443",
                             "/api/v1/namespaces/ns/pods/p/exec?command=sh&stdout=true", hdrs,
                             o, x, err);
}

static int memfd_with(const void *data, size_t len)
{
    int fd = memfd_create("t-exec", MFD_CLOEXEC);
    if (fd < 0 || (len && write_full(fd, data, len) < 0))
        abort();
    lseek(fd, 0, SEEK_SET);
    return fd;
}

static char *memfd_read(int fd, size_t *len)
{
    strbuf sb = STRBUF_INIT;
    lseek(fd, 0, SEEK_SET);
    strbuf_read_fd(&sb, fd, 1u << 30);
    return strbuf_detach(&sb, len);
}

/* Relays with output into memfds; returns the relay's result. */
typedef struct run {
    int rc, code;
    char *out, *errout;
    size_t out_len, err_len;
    sbx_err err;
    char *message;          /* a copy of kube_exec_exit_code()'s */
} run;

static void run_free(run *r)
{
    free(r->out);
    free(r->errout);
    free(r->message);
}

static void relay(kube_exec *x, int in_fd, run *r)
{
    int o = memfd_with(NULL, 0), e = memfd_with(NULL, 0);
    r->code = -99;
    r->err.msg[0] = '\0';
    r->rc = kube_exec_relay(x, in_fd, o, e, &r->code, &r->err);
    const char *m;
    kube_exec_exit_code(x, &m);
    r->message = m ? xstrdup(m) : NULL;
    r->out = memfd_read(o, &r->out_len);
    r->errout = memfd_read(e, &r->err_len);
    close(o);
    close(e);
}

/* ---- scripts ------------------------------------------------------------------------------- */

static void sc_exit3(srv *s)
{
    srv_str(s, 1, "out1\n");
    srv_str(s, 2, "err1\n");
    srv_str(s, 1, "out2\n");
    srv_flush(s);
    srv_end(s, EXIT3);
}

static void sc_status(srv *s)
{
    srv_str(s, 1, "hi\n");
    srv_end(s, s->param);
}

static void sc_echo_stdin(srv *s)
{
    srv_flush(s);
    /* Echo each stdin message as it comes, until stdin's end. */
    ws_event ev;
    while (srv_event(s, &ev)) {
        if (ev.opcode != WS_BINARY || ev.len < 1)
            continue;
        if (ev.data[0] == 0) {
            strbuf_add(&s->stdin_, ev.data + 1, ev.len - 1);
            srv_msg(s, 1, ev.data + 1, ev.len - 1);
            srv_flush(s);
        } else if (ev.data[0] == 255 && ev.len == 2 && ev.data[1] == 0) {
            s->stdin_closed = true;
            break;
        }
    }
    srv_end(s, SUCCESS);
}

static void sc_v4_stdin(srv *s)
{
    srv_flush(s);
    /* v4 has no stdin end: read what the test sends (it says "end" last). */
    ws_event ev;
    while (srv_event(s, &ev)) {
        if (ev.opcode == WS_BINARY && ev.len >= 1 && ev.data[0] == 0) {
            strbuf_add(&s->stdin_, ev.data + 1, ev.len - 1);
            if (s->stdin_.len >= 3 && memcmp(s->stdin_.buf + s->stdin_.len - 3, "end", 3) == 0)
                break;
        }
    }
    srv_end(s, "{\"metadata\":{},\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\","
               "\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"7\"}]}}");
}

static void sc_ping(srv *s)
{
    ws_encode(&s->enc, &s->out, WS_PING, true, "abc", 3);
    srv_flush(s);
    srv_read_until(s, WS_PONG);
    srv_end(s, SUCCESS);
}

static void sc_fragmented(srv *s)
{
    ws_encode(&s->enc, &s->out, WS_BINARY, false, "\x01" "fr", 3);
    srv_flush(s);
    ws_encode(&s->enc, &s->out, WS_PING, true, "x", 1);
    ws_encode(&s->enc, &s->out, WS_CONT, false, "agm", 3);
    srv_flush(s);
    ws_encode(&s->enc, &s->out, WS_CONT, true, "ented\n", 6);
    srv_flush(s);
    srv_end(s, SUCCESS);
}

static void sc_drop(srv *s)
{
    srv_str(s, 1, "partial");
    srv_flush(s);
    shutdown(s->fd, SHUT_RDWR);
}

static void sc_close1011(srv *s)
{
    srv_str(s, 1, "partial");
    srv_close(s, 1011, "boom");
    srv_read_until(s, WS_CLOSE);
}

static void sc_close1000(srv *s)
{
    srv_close(s, 1000, NULL);
    srv_read_until(s, WS_CLOSE);
}

static void sc_big(srv *s)
{
    /* 16 MiB in the 32 KiB messages the apiserver sends. */
    uint8_t *chunk = xmalloc(32768);
    for (size_t off = 0; off < s->big; off += 32768) {
        for (size_t i = 0; i < 32768; i++)
            chunk[i] = (uint8_t)((off + i) * 2654435761u >> 13);
        srv_msg(s, 1, chunk, 32768);
        srv_flush(s);
    }
    free(chunk);
    srv_end(s, SUCCESS);
}

static void sc_resize(srv *s)
{
    srv_flush(s);
    srv_read_until(s, 4);
    srv_end(s, SUCCESS);
}

static void sc_masked(srv *s)
{
    /* A masked frame from a server breaks the rules. */
    ws_encoder bad = { .role = WS_CLIENT };
    ws_encode(&bad, &s->out, WS_BINARY, true, "\x01oops", 5);
    srv_flush(s);
    srv_read_until(s, WS_CLOSE);
}

static void sc_text(srv *s)
{
    ws_encode(&s->enc, &s->out, WS_TEXT, true, "1hello", 6);
    srv_flush(s);
    srv_read_until(s, WS_CLOSE);
}

static void sc_silent_until_ping(srv *s)
{
    srv_flush(s);
    srv_read_until(s, WS_PING);
    srv_end(s, SUCCESS);
}

static void sc_silent(srv *s)
{
    srv_flush(s);
    /* Reads (not answering pings) until the client goes away. */
    ws_event ev;
    while (srv_event(s, &ev))
        if (ev.opcode == WS_PING)
            s->got_ping = true;
}

/* ---- the scenario runner ------------------------------------------------------------------ */

/* A scenario's hooks: on the open exec before the relay (send stdin, a resize, raise a
 * flag), or after it (calls on the exec the relay ended, and checks of the relay's result
 * that must come before later ones). */
typedef struct run_ctx run_ctx;
typedef void exec_fn(kube_exec *x, run_ctx *c);
/* The checks once the exchange is over: what the relay gave, what the server saw. */
typedef void check_fn(const srv *s, const run *r, run_ctx *c);

/* One exchange over the socketpair, as most tests make one. */
typedef struct scenario {
    const char *what;       /* names the upgrade's check if it fails */
    script_fn *script;      /* the server's side */
    const char *proto;      /* the subprotocol the server picks (NULL: v5) */
    const char *param;      /* the script's parameter (sc_status: the status) */
    size_t big;             /* sc_big: how many bytes of output */
    kube_exec_opts opts;    /* the client's */
    const char *in;         /* the relay's stdin, in_len bytes (NULL: none) */
    size_t in_len;
    exec_fn *before, *after;
    check_fn *check;
} scenario;

/* What the hooks of one scenario share: the scenario (its parameters), the relay's result,
 * and a test's own (want: what it expects, flag: test_interrupt's). */
struct run_ctx {
    const scenario *sc;
    run *r;
    const void *want;
    bool flag;
};

/* Plays one scenario: the server thread with its script, the client's upgrade, `before`,
 * the relay, `after`, the client freed and the server thread joined (what it saw is then
 * safe to read), `check`, and everything released. A failed upgrade is one failing check,
 * naming sc->what, and the end. */
static void play(const scenario *sc, run_ctx *c)
{
    run r = { 0 };
    run_ctx own = { 0 };
    if (!c)
        c = &own;
    c->sc = sc;
    c->r = &r;
    srv *s = srv_start(sc->script, sc->proto);
    s->param = sc->param;
    s->big = sc->big;
    kube_exec *x;
    sbx_err err;
    if (open_over(s, &sc->opts, &x, &err) < 0) {
        ok(0, "%s: upgrade: %s", sc->what, err.msg);
        srv_stop(s);
        return;
    }
    if (sc->before)
        sc->before(x, c);
    int in = sc->in ? memfd_with(sc->in, sc->in_len) : -1;
    relay(x, in, &r);
    if (sc->after)
        sc->after(x, c);
    kube_exec_free(x);
    if (in >= 0)
        close(in);
    srv_join(s);
    if (sc->check)
        sc->check(s, &r, c);
    srv_stop(s);
    run_free(&r);
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_order_and_exit(void)
{
    srv *s = srv_start(sc_exit3, NULL);
    kube_exec *x;
    sbx_err err;
    int r = open_over(s, &(kube_exec_opts){ 0 }, &x, &err);
    ok(r == 0, "v5: the upgrade succeeds%s%s", r ? ": " : "", r ? err.msg : "");
    if (r) {
        srv_stop(s);
        return;
    }
    is_str(kube_exec_protocol(x), "v5.channel.k8s.io", "v5 is agreed");
    ok(strstr(s->request.buf, "GET /api/v1/namespaces/ns/pods/p/exec?command=sh&stdout=true "
                              "HTTP/1.1\r\nHost: apiserver.test:6443\r\n") &&
           strstr(s->request.buf,
                  "\r\nSec-WebSocket-Protocol: v5.channel.k8s.io, v4.channel.k8s.io\r\n") &&
           strstr(s->request.buf, "\r\nAuthorization: Bearer test-token\r\n"),
       "the request: the path, Host, one Sec-WebSocket-Protocol offering v5 then v4, the "
       "credentials' header");
    strbuf seen = STRBUF_INIT;
    int done = 0;
    for (int i = 0; i < 100000 && !done; i++) {
        int ch;
        const void *d;
        size_t n;
        r = kube_exec_recv(x, &ch, &d, &n, &err);
        if (r == 1)
            strbuf_addf(&seen, "[%d]%.*s", ch, (int)n, (const char *)d);
        else if (r == KUBE_EXEC_DONE)
            done = 1;
        else if (r < 0)
            break;
        else {
            struct pollfd p = { .fd = kube_exec_fd(x), .events = POLLIN };
            poll(&p, 1, 5000);
        }
    }
    is_str(seen.buf, "[1]out1\n[2]err1\n[1]out2\n",
           "output on channels 1 and 2 arrives in order (the opening empty message skipped)");
    ok(done, "then the process ends (KUBE_EXEC_DONE)");
    const char *msg;
    is_int(kube_exec_exit_code(x, &msg), 3, "the exit code is the status's ExitCode cause (3)");
    is_int(kube_exec_recv(x, &(int){ 0 }, &(const void *){ 0 }, &(size_t){ 0 }, &err),
           KUBE_EXEC_DONE, "recv after the end keeps saying done");
    kube_exec_free(x);
    srv_stop(s);
    strbuf_release(&seen);
}

/* test_status's want: the exit code and a piece of the message (NULL: not checked). */
typedef struct status_want {
    int code;
    const char *msg;
} status_want;

static void check_status(const srv *s, const run *r, run_ctx *c)
{
    const status_want *w = c->want;
    const char *what = c->sc->what;
    ok(r->rc == 0 && r->code == w->code && r->out_len == 3 && memcmp(r->out, "hi\n", 3) == 0,
       "%s: the relay ends with %d (got %d)%s%s", what, w->code, r->code, r->rc ? ": " : "",
       r->rc ? r->err.msg : "");
    if (w->msg)
        ok(r->message && strstr(r->message, w->msg), "... and the message says '%s': %s",
           w->msg, r->message ? r->message : "(none)");
    is_int(s->close_code, 1000, "%s: the server got the client's Close 1000", what);
}

static void test_status(const char *status, int want, const char *want_msg, const char *what)
{
    play(&(scenario){ what, sc_status, .param = status, .check = check_status },
         &(run_ctx){ .want = &(status_want){ want, want_msg } });
}

static void check_stdin_v5(const srv *s, const run *r, run_ctx *c)
{
    ok(r->rc == 0 && r->code == 0, "v5 stdin: the relay ends with 0%s%s", r->rc ? ": " : "",
       r->rc ? r->err.msg : "");
    ok(r->out_len == 12 && memcmp(r->out, "hello\nworld\n", 12) == 0,
       "stdin reached the server and came back as output");
}

static void send_then_close_stdin(kube_exec *x, run_ctx *c)
{
    sbx_err err;
    ok(kube_exec_send_stdin(x, "abc", 3, &err) == 0, "kube_exec_send_stdin sends");
    is_int(kube_exec_close_stdin(x, &err), 0, "kube_exec_close_stdin on v5 returns 0");
}

static void check_stdin_end(const srv *s, const run *r, run_ctx *c)
{
    ok(s->stdin_closed, "the server saw stdin's end as the [255, 0] CLOSE message");
    is_str(s->stdin_.buf, "abc", "... after the stdin sent");
    ok(r->rc == 0 && r->code == 0, "and the command ended with 0");
}

static void v4_stdin(kube_exec *x, run_ctx *c)
{
    sbx_err err;
    is_str(kube_exec_protocol(x), "v4.channel.k8s.io", "v4: agreed when the server picks it");
    is_int(kube_exec_close_stdin(x, &err), 1, "v4: close_stdin says there is no way (1)");
    ok(kube_exec_send_stdin(x, "the end", 7, &err) == 0, "v4: stdin still sends");
}

static void check_v4(const srv *s, const run *r, run_ctx *c)
{
    ok(r->rc == 0 && r->code == 7, "v4: the status's exit code (7) (got %d)%s%s", r->code,
       r->rc ? ": " : "", r->rc ? r->err.msg : "");
    ok(!s->stdin_closed, "v4: no [255, 0] was sent");
}

static void check_ping(const srv *s, const run *r, run_ctx *c)
{
    ok(s->got_pong, "a ping from the server is answered with a pong");
    is_str(s->pong.buf, "abc", "... carrying the ping's payload");
    ok(r->rc == 0 && r->code == 0, "and the command ends with 0");
}

static void check_fragmented(const srv *s, const run *r, run_ctx *c)
{
    ok(r->rc == 0 && r->out_len == 11 && memcmp(r->out, "fragmented\n", 11) == 0,
       "a message in three fragments with a ping between arrives whole");
}

/* test_failure's want. */
typedef struct failure_want {
    const char *err, *out; /* a piece of the relay's error; the output before it (or NULL) */
    unsigned close;        /* the client's Close code (0: not checked) */
} failure_want;

/* The relay failed with the error wanted, after the output that came; and a call on the
 * exec it left fails the same way. */
static void failed(kube_exec *x, run_ctx *c)
{
    const failure_want *w = c->want;
    const run *r = c->r;
    ok(r->rc < 0 && strstr(r->err.msg, w->err), "%s: an error: %s", c->sc->what, r->err.msg);
    if (w->out)
        ok(r->out_len == strlen(w->out) && memcmp(r->out, w->out, r->out_len) == 0,
           "... after the output that came (%s)", w->out);
    sbx_err again;
    ok(kube_exec_recv(x, &(int){ 0 }, &(const void *){ 0 }, &(size_t){ 0 }, &again) < 0 &&
           strcmp(again.msg, r->err.msg) == 0,
       "... and every later call fails the same way");
}

static void check_failure_close(const srv *s, const run *r, run_ctx *c)
{
    const failure_want *w = c->want;
    if (w->close)
        is_int(s->close_code, w->close, "... the client's Close says %u", w->close);
}

static void test_failure(script_fn *sc, const char *what, const char *want_err,
                         const char *want_out, unsigned want_close)
{
    play(&(scenario){ what, sc, .after = failed, .check = check_failure_close },
         &(run_ctx){ .want = &(failure_want){ want_err, want_out, want_close } });
}

static void check_close1000(const srv *s, const run *r, run_ctx *c)
{
    ok(r->rc == 0 && r->code == -1 && r->message &&
           strstr(r->message, "without the command's exit"),
       "a Close 1000 without a status ends the exec, the exit code unknown (-1): %s",
       r->message ? r->message : r->err.msg);
    is_int(s->close_code, 1000, "... and the client answers the Close with 1000");
}

/* The output sc_big sends, all of it (want bytes) and intact. */
static bool big_intact(const run *r, size_t want)
{
    bool same = r->out_len == want;
    for (size_t i = 0; same && i < r->out_len; i++)
        same = (uint8_t)r->out[i] == (uint8_t)(i * 2654435761u >> 13);
    return same;
}

static void check_big(const srv *s, const run *r, run_ctx *c)
{
    ok(r->rc == 0 && big_intact(r, c->sc->big), "16 MiB of output are relayed intact (%zu bytes)",
       r->out_len);
}

static volatile sig_atomic_t ticks;

/* At most 1000 of them (the relay natively ends well before; under valgrind, whose signal
 * delivery is slow, a storm without end would make it crawl). */
static void on_tick(int sig)
{
    (void)sig;
    if (++ticks >= 1000) {
        struct itimerval off = { { 0, 0 }, { 0, 0 } };
        setitimer(ITIMER_REAL, &off, NULL);
    }
}

/* A signal every millisecond, without SA_RESTART, from just before the relay (ticks_on) to
 * just after it (ticks_off): every poll and read may see EINTR. */
static struct sigaction old_alrm;

static void ticks_on(kube_exec *x, run_ctx *c)
{
    struct sigaction sa = { .sa_handler = on_tick };
    sigaction(SIGALRM, &sa, &old_alrm);
    struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
    /* Only this thread takes the signal (the server's thread blocks it). */
    setitimer(ITIMER_REAL, &it, NULL);
}

static void ticks_off(kube_exec *x, run_ctx *c)
{
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &old_alrm, NULL);
}

static void check_big_echo(const srv *s, const run *r, run_ctx *c)
{
    size_t len = c->sc->in_len;
    ok(r->rc == 0 && r->out_len == len && memcmp(r->out, c->sc->in, len) == 0,
       "4 MiB of stdin echoed back while it is sent arrive intact (%zu bytes), with a "
       "signal interrupting every millisecond%s%s", r->out_len, r->rc ? ": " : "",
       r->rc ? r->err.msg : "");
    diag("(%d signals during the relay)", (int)ticks);
}

static void test_big_echo(void)
{
    /* 4 MiB through stdin and back at once: neither side may wait for the other. */
    size_t len = 4u << 20;
    char *data = xmalloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (char)(i * 131 >> 7);
    play(&(scenario){ "echo", sc_echo_stdin, .opts.stdin_ = true, .in = data, .in_len = len,
                      .before = ticks_on, .after = ticks_off, .check = check_big_echo },
         NULL);
    free(data);
}

static void test_out_gone(void)
{
    srv *s = srv_start(sc_status, NULL);
    s->param = SUCCESS;
    kube_exec *x;
    sbx_err err;
    if (open_over(s, NULL, &x, &err) < 0) {
        ok(0, "out gone: upgrade: %s", err.msg);
        srv_stop(s);
        return;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        abort();
    close(p[0]);
    /* SIGPIPE as a program gets it by default: the relay must not die of it. */
    signal(SIGPIPE, SIG_DFL);
    int code = -99;
    int r = kube_exec_relay(x, -1, p[1], -1, &code, &err);
    signal(SIGPIPE, SIG_IGN);
    ok(r < 0 && strstr(err.msg, "writing the command's output: Broken pipe"),
       "stdout's reader gone: an error, not a SIGPIPE: %s", err.msg);
    close(p[1]);
    kube_exec_free(x);
    srv_stop(s);
}

static void send_resize(kube_exec *x, run_ctx *c)
{
    sbx_err err;
    ok(kube_exec_resize(x, 80, 24, &err) == 0, "a resize is sent");
}

static void check_resize(const srv *s, const run *r, run_ctx *c)
{
    is_str(s->resize.buf, "{\"Width\":80,\"Height\":24}\n", "... on channel 4 as kubectl sends it");
}

static void check_pinged(const srv *s, const run *r, run_ctx *c)
{
    ok(s->got_ping && r->rc == 0 && r->code == 0, "a silent server gets pinged by the relay");
}

static void check_given_up(const srv *s, const run *r, run_ctx *c)
{
    ok(r->rc < 0 && strstr(r->err.msg, "not even an answer to a ping"),
       "a server that answers nothing at all is given up: %s", r->err.msg);
}

static bool flag_raised(void *ctx)
{
    return ((run_ctx *)ctx)->flag;
}

/* Raises the flag the exec's interrupted() reads, once it is open. */
static void raise_flag(kube_exec *x, run_ctx *c)
{
    c->flag = true;
}

static void check_interrupted(const srv *s, const run *r, run_ctx *c)
{
    ok(r->rc < 0 && strstr(r->err.msg, "interrupted"), "an interrupt ends the relay: %s",
       r->err.msg);
}

static void test_interrupt(void)
{
    run_ctx c = { 0 };
    play(&(scenario){ "interrupt", sc_silent,
                      .opts = { .interrupted = flag_raised, .interrupt_ctx = &c },
                      .before = raise_flag, .check = check_interrupted },
         &c);
}

static void test_upgrade_failures(void)
{
    static const struct { const char *answer; const char *want; } cases[] = {
        { "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: 97\r\n"
          "\r\n{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods \\\"p\\\" is "
          "forbidden: no pods/exec\",\"code\":403}",
          "(HTTP 403): pods \"p\" is forbidden: no pods/exec" },
        { "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          "Sec-WebSocket-Accept: nope\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
          "does not match" },
        { "", "without answering" },
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        srv *s = srv_start(NULL, NULL);
        s->answer = cases[i].answer;
        kube_exec *x = (kube_exec *)1;
        sbx_err err;
        int r = open_over(s, NULL, &x, &err);
        srv_stop(s);
        ok(r < 0 && x == NULL && strstr(err.msg, cases[i].want), "upgrade refused (%s): %s",
           cases[i].want, err.msg);
    }
    /* A protocol not offered. */
    srv *s = srv_start(sc_exit3, "channel.k8s.io");
    kube_exec *x;
    sbx_err err;
    int r = open_over(s, NULL, &x, &err);
    srv_stop(s);
    ok(r < 0 && strstr(err.msg, "'channel.k8s.io', which was not offered"),
       "a subprotocol not offered is refused: %s", err.msg);
}

static void test_path(void)
{
    const char *argv[] = { "/bin/sh", "-c", "echo a&b=c", NULL };
    char *p = kube_exec_path("ns 1", "pod", "main", argv, &(kube_exec_opts){ .stdin_ = true });
    is_str(p, "/api/v1/namespaces/ns%201/pods/pod/exec?command=%2Fbin%2Fsh&command=-c&"
              "command=echo%20a%26b%3Dc&container=main&stdin=true&stdout=true&stderr=true",
           "the exec path: one command= per argument, escaped, and the streams asked for");
    free(p);
    p = kube_exec_path("ns", "pod", NULL, argv, &(kube_exec_opts){ .tty = true });
    ok(strstr(p, "&stdout=true&tty=true") && !strstr(p, "stderr") && !strstr(p, "container"),
       "a tty asks for no stderr, no container lets the server pick: %s", p);
    free(p);
}

/* The curl transport: a CONNECT_ONLY handle on loopback TCP, as kube_client_connect_only
 * gives one (without TLS). */
typedef struct tcp_srv {
    int lfd;
    srv *s;
} tcp_srv;

static void *accept_main(void *arg)
{
    tcp_srv *t = arg;
    int fd = accept4(t->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return NULL;
    close(t->s->fd);
    t->s->fd = fd;
    srv_main(t->s);
    return NULL;
}

static void test_curl(void)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof(a);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 1) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) < 0) {
        skip("no loopback TCP socket for the curl transport");
        return;
    }
    srv *s = srv_start(sc_big, NULL);
    s->big = 4u << 20;
    close(cfd); /* the socketpair's client end is not used here */
    tcp_srv t = { lfd, s };
    pthread_create(&s->th, NULL, accept_main, &t);
    CURL *h = curl_easy_init();
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(a.sin_port));
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    CURLcode rc = curl_easy_perform(h);
    ok(rc == CURLE_OK, "curl connects (CONNECT_ONLY): %s", curl_easy_strerror(rc));
    kube_exec *x;
    sbx_err err;
    int r = kube_exec_over_curl(h, "/api/v1/namespaces/ns/pods/p/exec?command=x&stdout=true",
                                hdrs, NULL, &x, NULL, &err);
    ok(r == 0, "the upgrade over curl_easy_send/recv succeeds%s%s", r ? ": " : "",
       r ? err.msg : "");
    if (r == 0) {
        run rr;
        relay(x, -1, &rr);
        kube_exec_free(x);
        ok(rr.rc == 0 && rr.code == 0 && big_intact(&rr, 4u << 20),
           "4 MiB of output and the status over the curl transport%s%s",
           rr.rc ? ": " : "", rr.rc ? rr.err.msg : "");
        run_free(&rr);
    }
    pthread_join(s->th, NULL);
    s->joined = true;
    char host[64];
    snprintf(host, sizeof(host), "\r\nHost: 127.0.0.1:%d\r\n", ntohs(a.sin_port));
    ok(strstr(s->request.buf, host) != NULL, "Host is the authority of the handle's URL");
    srv_stop(s);
    close(lfd);
}

/* ---- kube_exec_open over TLS, through the client ------------------------------------------ */

/* A self-signed certificate for 127.0.0.1, made in memory. */
static int make_cert(EVP_PKEY **key, X509 **cert, char **pem, size_t *pem_len)
{
    *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (!*key || !x)
        return -1;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, *key);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"kube.test", -1,
                               -1, 0);
    X509_set_issuer_name(x, n);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    X509_EXTENSION *san = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1");
    X509_EXTENSION *bc = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "CA:TRUE");
    if (!san || !bc)
        return -1;
    X509_add_ext(x, san, -1);
    X509_add_ext(x, bc, -1);
    X509_EXTENSION_free(san);
    X509_EXTENSION_free(bc);
    if (!X509_sign(x, *key, EVP_sha256()))
        return -1;
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    char *p;
    long len = BIO_get_mem_data(b, &p);
    *pem = xstrndup(p, (size_t)len);
    *pem_len = (size_t)len;
    BIO_free(b);
    *cert = x;
    return 0;
}

typedef struct tls_srv {
    int lfd;
    SSL_CTX *ctx;
    srv *conn[2];           /* the connections it serves, in order */
    int n;
    const char *token_file; /* rewritten to "new" once the first connection is accepted */
} tls_srv;

static void *tls_main(void *arg)
{
    tls_srv *t = arg;
    for (int i = 0; i < t->n; i++) {
        int fd = accept4(t->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            return NULL;
        /* The client read its token before it connected: a new one now is what its
         * reauth after the 401 finds. */
        if (i == 0 && t->token_file) {
            FILE *f = fopen(t->token_file, "w");
            if (f) {
                fputs("new\n", f);
                fclose(f);
            }
        }
        srv *s = t->conn[i];
        close(s->fd); /* the socketpair's end, unused here */
        s->fd = fd;
        s->ssl = SSL_new(t->ctx);
        SSL_set_fd(s->ssl, fd);
        if (SSL_accept(s->ssl) == 1)
            srv_main(s);
        else
            diag("server: the TLS handshake failed");
        SSL_shutdown(s->ssl);
        SSL_free(s->ssl);
        s->ssl = NULL;
    }
    return NULL;
}

#define UNAUTHORIZED_BODY "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{}," \
                          "\"status\":\"Failure\",\"message\":\"Unauthorized\"," \
                          "\"reason\":\"Unauthorized\",\"code\":401}"

static void test_open_tls(void)
{
    EVP_PKEY *key;
    X509 *cert;
    char *pem;
    size_t pem_len;
    if (make_cert(&key, &cert, &pem, &pem_len) < 0) {
        skip("OpenSSL could not make a certificate");
        return;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate(ctx, cert);
    SSL_CTX_use_PrivateKey(ctx, key);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof(a);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 2) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) < 0) {
        skip("no loopback TCP socket for the TLS server");
        return;
    }
    char tokpath[] = "/tmp/t-exec-token.XXXXXX";
    int tfd = mkstemp(tokpath);
    if (tfd < 0 || write_full(tfd, "old\n", 4) < 0) {
        skip("no temporary file for the token");
        return;
    }
    close(tfd);

    /* First the upgrade is refused with 401 (the old token), then the exec runs. */
    srv *first = srv_start(NULL, NULL);
    first->answer = "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                    "Content-Length: 128\r\n\r\n" UNAUTHORIZED_BODY;
    close(cfd);
    srv *s = srv_start(sc_big, NULL);
    s->big = 4u << 20;
    close(cfd);
    tls_srv t = { .lfd = lfd, .ctx = ctx, .conn = { first, s }, .n = 2, .token_file = tokpath };
    pthread_t th;
    pthread_create(&th, NULL, tls_main, &t);

    kube_target kt = { 0 };
    kt.source = xstrdup("t-exec");
    kt.server = xasprintf("https://127.0.0.1:%d", ntohs(a.sin_port));
    kt.ca_pem = pem;
    kt.ca_len = pem_len;
    kt.token_file = xstrdup(tokpath);
    sbx_err err;
    kube_client *c = kube_client_new(&kt, &err);
    ok(c != NULL, "a client for the TLS server%s%s", c ? "" : ": ", c ? "" : err.msg);
    kube_exec *x = NULL;
    const char *argv[] = { "sh", "-c", "big", NULL };
    int r = c ? kube_exec_open(c, "ns", "p", "main", argv, &(kube_exec_opts){ 0 }, &x, &err)
              : -1;
    ok(r == 0, "kube_exec_open over TLS succeeds after a 401 and new credentials%s%s",
       r ? ": " : "", r ? err.msg : "");
    if (r == 0) {
        is_str(kube_exec_protocol(x), "v5.channel.k8s.io", "... on v5");
        run rr;
        relay(x, -1, &rr);
        kube_exec_free(x);
        ok(rr.rc == 0 && rr.code == 0 && big_intact(&rr, 4u << 20),
           "4 MiB of output and the status over TLS%s%s",
           rr.rc ? ": " : "", rr.rc ? rr.err.msg : "");
        run_free(&rr);
    }
    pthread_join(th, NULL);
    first->joined = s->joined = true;
    ok(strstr(first->request.buf, "\r\nAuthorization: Bearer old\r\n") != NULL,
       "the first upgrade carried the token file's first token");
    ok(strstr(s->request.buf, "GET /api/v1/namespaces/ns/pods/p/exec?command=sh&command=-c&"
                              "command=big&container=main&stdout=true&stderr=true HTTP/1.1\r\n") &&
           strstr(s->request.buf, "\r\nAuthorization: Bearer new\r\n"),
       "the second, the exec's path and the token re-read after the 401");

    /* A refusal that new credentials do not cure: the message says what, prefixed. */
    srv *denied = srv_start(NULL, NULL);
    denied->answer = "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                     "Content-Length: 2\r\n\r\n{}";
    close(cfd);
    tls_srv t2 = { .lfd = lfd, .ctx = ctx, .conn = { denied }, .n = 1 };
    pthread_create(&th, NULL, tls_main, &t2);
    r = c ? kube_exec_open(c, "ns", "p", NULL, argv, NULL, &x, &err) : 0;
    pthread_join(th, NULL);
    denied->joined = true;
    ok(r < 0 && x == NULL && strstr(err.msg, "exec in pod ns/p: the API server refused the "
                                             "WebSocket upgrade (HTTP 403)"),
       "a 403 is an error naming the pod: %s", err.msg);

    kube_client_free(c);
    free(kt.source);
    free(kt.server);
    free(kt.token_file);
    srv_stop(first);
    srv_stop(s);
    srv_stop(denied);
    unlink(tokpath);
    close(lfd);
    SSL_CTX_free(ctx);
    X509_free(cert);
    EVP_PKEY_free(key);
    free(pem);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    test_path();
    test_order_and_exit();
    test_status(SUCCESS, 0, NULL, "a success status");
    test_status(EXIT3, 3, NULL, "an exit code status");
    test_status("{\"metadata\":{},\"status\":\"Failure\",\"message\":\"container \\\"x\\\" not "
                "found in pod p\",\"reason\":\"InternalError\"}",
                -1, "container \"x\" not found in pod p", "a Failure without an exit code");
    test_status("{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"message\":\"m\","
                "\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"256\"}]}}",
                -1, "m", "an exit code out of range");
    test_status("not json", -1, "not a JSON object", "a status that is not JSON");
    play(&(scenario){ "stdin", sc_echo_stdin, .opts.stdin_ = true, .in = "hello\nworld\n",
                      .in_len = 12, .check = check_stdin_v5 }, NULL);
    play(&(scenario){ "stdin end", sc_echo_stdin, .opts.stdin_ = true,
                      .before = send_then_close_stdin, .check = check_stdin_end }, NULL);
    play(&(scenario){ "v4", sc_v4_stdin, .proto = "v4.channel.k8s.io", .opts.stdin_ = true,
                      .before = v4_stdin, .check = check_v4 }, NULL);
    play(&(scenario){ "ping", sc_ping, .check = check_ping }, NULL);
    play(&(scenario){ "fragmented", sc_fragmented, .check = check_fragmented }, NULL);
    test_failure(sc_drop, "a drop before the status", "lost before the command's exit status",
                 "partial", 0);
    test_failure(sc_close1011, "a Close 1011", "code 1011 (internal error): boom", "partial",
                 1011);
    test_failure(sc_masked, "a masked frame from the server", "masked frame from the server",
                 NULL, 1002);
    test_failure(sc_text, "a text message", "text message", NULL, 1003);
    play(&(scenario){ "close 1000", sc_close1000, .check = check_close1000 }, NULL);
    play(&(scenario){ "big", sc_big, .big = 16u << 20, .check = check_big }, NULL);
    test_big_echo();
    play(&(scenario){ "resize", sc_resize, .opts.tty = true, .before = send_resize,
                      .check = check_resize }, NULL);
    test_out_gone();
    play(&(scenario){ "keepalive", sc_silent_until_ping, .opts.keepalive_ms = 20,
                      .check = check_pinged }, NULL);
    play(&(scenario){ "keepalive", sc_silent, .opts.keepalive_ms = 10,
                      .check = check_given_up }, NULL);
    test_interrupt();
    test_upgrade_failures();
    test_curl();
    test_open_tls();
    curl_global_cleanup();
    return done_testing();
}
