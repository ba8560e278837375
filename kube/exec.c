/*
 * pods/exec over WebSocket (exec.h): the v5/v4 channel protocols over a small transport,
 * either libcurl's CONNECT_ONLY connection (curl_easy_send/recv; kube_exec_open in
 * exec_open.c) or a plain fd (tests). Everything is non-blocking underneath; the functions
 * that block (the upgrade, kube_exec_send_stdin, ...) wait in poll(2) with a deadline.
 *
 * Every message is one channel byte and its payload (k8s-protocols.md 1.4): we send 0
 * (stdin), 4 (resize) and, on v5, [255, 0] (stdin's end); the server sends 1 (stdout),
 * 2 (stderr) and 3 (the status, a metav1.Status whose details.causes[] carries the exit
 * code under reason "ExitCode"), then a Close 1000.
 */
#include "kube/exec_int.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "kube/ws.h"

const char *const kube_exec_protocols[] = { "v5.channel.k8s.io", "v4.channel.k8s.io", NULL };

#define KX_MAX_MESSAGE (16u << 20)   /* a server message; the apiserver sends ~32 KiB ones */
#define KX_STDIN_CHUNK (64u << 10)   /* stdin messages we send, at most */
#define KX_OUT_HIGH (1u << 20)       /* queued output above which stdin is not read */
#define KX_IN_CAP (64u << 20)        /* bytes read ahead while a send waits */
#define KX_SLICE_MS 200              /* the longest poll when an interrupt is to be seen */
#define KX_EOF (-2)

typedef struct kx_ops {
    /* > 0 bytes moved, 0 would block, -1 error (err), KX_EOF (recv) the stream ended */
    ssize_t (*send)(void *ctx, const void *buf, size_t len, sbx_err *err);
    ssize_t (*recv)(void *ctx, void *buf, size_t len, sbx_err *err);
    int (*fd)(void *ctx);
    void (*close)(void *ctx);
} kx_ops;

struct kube_exec {
    const kx_ops *ops;
    void *ctx;
    kube_exec_opts o;
    unsigned timeout_ms, keepalive_ms;
    char protocol[64];
    bool v5;
    ws_encoder enc;
    ws_decoder dec;
    strbuf in;              /* bytes read, not yet decoded (from in_off) */
    size_t in_off;
    strbuf out;             /* frames encoded, not yet sent (from out_off) */
    size_t out_off;
    uint64_t out_since;     /* the last progress sending (or when out became non-empty) */
    uint64_t last_rx, last_ping;
    bool eof;               /* the transport ended */
    bool close_sent, close_seen;
    bool stdin_closed;
    bool done, status_seen;
    int exit_code;
    char *message;
    bool failed;
    sbx_err fail;           /* the failure every later call returns */
};

/* ---- transports --------------------------------------------------------------------------- */

typedef struct nopipe nopipe;
static void nopipe_begin(nopipe *np);
static void nopipe_end(nopipe *np);
static ssize_t pipe_write(int fd, const void *buf, size_t len);

static ssize_t fd_send(void *ctx, const void *buf, size_t len, sbx_err *err)
{
    int fd = (int)(intptr_t)ctx;
    for (;;) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == ENOTSOCK)
            n = pipe_write(fd, buf, len);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return sbx_errno(err, "sending to the API server");
    }
}

static ssize_t fd_recv(void *ctx, void *buf, size_t len, sbx_err *err)
{
    int fd = (int)(intptr_t)ctx;
    for (;;) {
        ssize_t n = read(fd, buf, len);
        if (n > 0)
            return n;
        if (n == 0)
            return KX_EOF;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return sbx_errno(err, "receiving from the API server");
    }
}

static int fd_fd(void *ctx)
{
    return (int)(intptr_t)ctx;
}

static void fd_close(void *ctx)
{
    close((int)(intptr_t)ctx);
}

static const kx_ops fd_ops = { fd_send, fd_recv, fd_fd, fd_close };

/* A write to a peer or a reader that went away raises SIGPIPE, which would kill sbx-kube
 * (OpenSSL writes to the socket with write(2); out_fd may be a pipe): block it around such a
 * write and swallow one the write caused. */
struct nopipe {
    sigset_t set, old;
    bool was_pending;
};

static void nopipe_begin(nopipe *np)
{
    sigset_t pending;
    sigemptyset(&np->set);
    sigaddset(&np->set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &np->set, &np->old);
    sigpending(&pending);
    np->was_pending = sigismember(&pending, SIGPIPE);
}

static void nopipe_end(nopipe *np)
{
    int e = errno;
    sigset_t pending;
    if (!np->was_pending) {
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) {
            struct timespec zero = { 0, 0 };
            while (sigtimedwait(&np->set, NULL, &zero) < 0 && errno == EINTR)
                ;
        }
    }
    pthread_sigmask(SIG_SETMASK, &np->old, NULL);
    errno = e;
}

/* write(2) without SIGPIPE: EPIPE instead. */
static ssize_t pipe_write(int fd, const void *buf, size_t len)
{
    nopipe np;
    nopipe_begin(&np);
    ssize_t n = write(fd, buf, len);
    nopipe_end(&np);
    return n;
}

static ssize_t curl_send_(void *ctx, const void *buf, size_t len, sbx_err *err)
{
    size_t n = 0;
    nopipe np;
    nopipe_begin(&np);
    CURLcode rc = curl_easy_send(ctx, buf, len, &n);
    nopipe_end(&np);
    if (rc == CURLE_AGAIN)
        return 0;
    if (rc != CURLE_OK)
        return sbx_errf(err, "sending to the API server: %s", curl_easy_strerror(rc));
    return (ssize_t)n;
}

static ssize_t curl_recv_(void *ctx, void *buf, size_t len, sbx_err *err)
{
    size_t n = 0;
    CURLcode rc = curl_easy_recv(ctx, buf, len, &n);
    if (rc == CURLE_AGAIN)
        return 0;
    if (rc != CURLE_OK)
        return sbx_errf(err, "receiving from the API server: %s", curl_easy_strerror(rc));
    return n ? (ssize_t)n : KX_EOF;
}

static int curl_fd_(void *ctx)
{
    curl_socket_t s = CURL_SOCKET_BAD;
    if (curl_easy_getinfo(ctx, CURLINFO_ACTIVESOCKET, &s) != CURLE_OK)
        return -1;
    return s == CURL_SOCKET_BAD ? -1 : (int)s;
}

static void curl_close_(void *ctx)
{
    curl_easy_cleanup(ctx);
}

static const kx_ops curl_ops = { curl_send_, curl_recv_, curl_fd_, curl_close_ };

/* ---- buffers and waits -------------------------------------------------------------------- */

static int kx_fail(kube_exec *x, sbx_err *err, const char *fmt, ...) SBX_PRINTF(3, 4);
static int kx_fail(kube_exec *x, sbx_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->fail.msg, sizeof(x->fail.msg), fmt, ap);
    va_end(ap);
    sbx_sanitize_inplace(x->fail.msg, sizeof(x->fail.msg));   /* the server's text in it */
    x->failed = true;
    if (err != &x->fail)
        *err = x->fail;
    return -1;
}

static bool pending_out(const kube_exec *x)
{
    return x->out_off < x->out.len;
}

static void queue_started(kube_exec *x, bool was_pending)
{
    if (!was_pending)
        x->out_since = now_ns();
}

static void queue_close(kube_exec *x, unsigned code, const char *reason)
{
    if (x->close_sent)
        return;
    bool was = pending_out(x);
    ws_encode_close(&x->enc, &x->out, code, reason);
    queue_started(x, was);
    x->close_sent = true;
}

/* Sends what is queued until the transport would block: 0 all sent, 1 some left, -1. */
static int flush_some(kube_exec *x, sbx_err *err)
{
    while (pending_out(x)) {
        ssize_t n = x->ops->send(x->ctx, x->out.buf + x->out_off, x->out.len - x->out_off, err);
        if (n < 0)
            return -1;
        if (n == 0)
            return 1;
        x->out_off += (size_t)n;
        x->out_since = now_ns();
    }
    strbuf_reset(&x->out);
    x->out_off = 0;
    return 0;
}

/* One read from the transport into in: 1 bytes came, 0 none ready, KX_EOF, -1. */
static int fill(kube_exec *x, sbx_err *err)
{
    if (x->eof)
        return KX_EOF;
    if (x->in_off == x->in.len) {
        strbuf_reset(&x->in);
        x->in_off = 0;
    }
    strbuf_grow(&x->in, 64 * 1024);
    ssize_t n = x->ops->recv(x->ctx, x->in.buf + x->in.len, strbuf_avail(&x->in), err);
    if (n == KX_EOF) {
        x->eof = true;
        return KX_EOF;
    }
    if (n <= 0)
        return (int)n;
    strbuf_setlen(&x->in, x->in.len + (size_t)n);
    x->last_rx = now_ns();
    return 1;
}

static bool interrupted(const kube_exec *x)
{
    return x->o.interrupted && x->o.interrupted(x->o.interrupt_ctx);
}

/* Waits for events on the socket until deadline (now_ns clock). Returns the revents, 0 at
 * the deadline, -1 when interrupted (err says so). EINTR is retried. */
static int wait_sock(kube_exec *x, short events, uint64_t deadline, sbx_err *err)
{
    for (;;) {
        if (interrupted(x))
            return kx_fail(x, err, "interrupted");
        uint64_t now = now_ns();
        if (now >= deadline)
            return 0;
        uint64_t ms = (deadline - now + 999999) / 1000000;
        if (x->o.interrupted && ms > KX_SLICE_MS)
            ms = KX_SLICE_MS;
        struct pollfd p = { .fd = x->ops->fd(x->ctx), .events = events };
        if (p.fd < 0)
            return kx_fail(x, err, "the connection to the API server has no socket any more");
        int r = poll(&p, 1, (int)ms);
        if (r < 0 && errno != EINTR)
            return kx_fail(x, err, "poll: %s", strerror(errno));
        if (r > 0)
            return p.revents;
    }
}

/* Sends everything queued, waiting at most the timeout for each bit of progress. While it
 * waits it also reads ahead (up to KX_IN_CAP), so that a server blocked writing to us
 * while we write to it cannot deadlock the two. */
static int flush_all(kube_exec *x, const char *what, sbx_err *err)
{
    for (;;) {
        int r = flush_some(x, err);
        if (r < 0)
            return kx_fail(x, err, "the connection to the API server was lost sending %s: %s",
                           what, err->msg);
        if (r == 0)
            return 0;
        bool can_read = !x->eof && x->in.len - x->in_off < KX_IN_CAP;
        uint64_t deadline = x->out_since + (uint64_t)x->timeout_ms * 1000000;
        int ev = wait_sock(x, POLLOUT | (can_read ? POLLIN : 0), deadline, err);
        if (ev < 0)
            return -1;
        if (ev == 0)
            return kx_fail(x, err, "sending %s to the API server made no progress for %u ms "
                           "(it stopped reading)", what, x->timeout_ms);
        if (can_read && (ev & (POLLIN | POLLHUP | POLLERR)) && fill(x, err) == -1)
            return kx_fail(x, err, "the connection to the API server was lost: %s", err->msg);
    }
}

/* ---- setup -------------------------------------------------------------------------------- */

/* Percent-encodes all but RFC 3986's unreserved characters: an argument holding '&', '='
 * or '#' would otherwise add query parameters of its own (another container, tty=true)
 * or cut the command short. */
static void add_escaped(strbuf *sb, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~')
            strbuf_addch(sb, c);
        else
            strbuf_addf(sb, "%%%02X", c);
    }
}

/* The pods/exec request's path: one command= per argument (the API server's argv, no
 * shell), the streams wanted. Every name and argument escaped (add_escaped). */
char *kube_exec_path(const char *ns, const char *pod, const char *container,
                     const char *const *argv, const kube_exec_opts *o)
{
    strbuf sb = STRBUF_INIT;
    strbuf_addstr(&sb, "/api/v1/namespaces/");
    add_escaped(&sb, ns);
    strbuf_addstr(&sb, "/pods/");
    add_escaped(&sb, pod);
    strbuf_addstr(&sb, "/exec?");
    for (size_t i = 0; argv && argv[i]; i++) {
        strbuf_addstr(&sb, "command=");
        add_escaped(&sb, argv[i]);
        strbuf_addch(&sb, '&');
    }
    if (container) {
        strbuf_addstr(&sb, "container=");
        add_escaped(&sb, container);
        strbuf_addch(&sb, '&');
    }
    if (o && o->stdin_)
        strbuf_addstr(&sb, "stdin=true&");
    strbuf_addstr(&sb, "stdout=true");
    if (!(o && (o->tty || o->no_stderr)))
        strbuf_addstr(&sb, "&stderr=true");
    if (o && o->tty)
        strbuf_addstr(&sb, "&tty=true");
    return strbuf_detach(&sb, NULL);
}

static kube_exec *kx_new(const kx_ops *ops, void *ctx, const kube_exec_opts *o)
{
    kube_exec *x = xcalloc(1, sizeof(*x));
    x->ops = ops;
    x->ctx = ctx;
    if (o)
        x->o = *o;
    x->timeout_ms = x->o.timeout_ms ? x->o.timeout_ms : 30000;
    x->keepalive_ms = x->o.keepalive_ms ? x->o.keepalive_ms : 5000;
    x->enc.role = WS_CLIENT;
    ws_decoder_init(&x->dec, WS_CLIENT, KX_MAX_MESSAGE);
    strbuf_init(&x->in, 0);
    strbuf_init(&x->out, 0);
    x->exit_code = -1;
    x->last_rx = x->last_ping = now_ns();
    return x;
}

/* Sends the upgrade, reads the answer to its header block's end; the bytes after it are
 * the first frames and stay in x->in. */
static int handshake(kube_exec *x, const char *host, const char *path,
                     const char *const *headers, int *http_status, sbx_err *err)
{
    char key[WS_KEY_LEN + 1];
    ws_make_key(&x->enc, key);
    if (ws_upgrade_request(&x->out, host, path, key, kube_exec_protocols, headers, err) < 0)
        return kx_fail(x, err, "%s", err->msg);
    x->out_since = now_ns();
    if (flush_all(x, "the WebSocket upgrade", err) < 0)
        return -1;
    uint64_t deadline = now_ns() + (uint64_t)x->timeout_ms * 1000000;
    for (;;) {
        ws_upgrade_result res;
        int r = ws_parse_upgrade_response(x->in.buf, x->in.len, x->eof, key,
                                          kube_exec_protocols, &res, err);
        if (r < 0) {
            if (http_status)
                *http_status = res.status;
            return kx_fail(x, err, "%s", err->msg);
        }
        if (r == 1) {
            x->in_off = res.head_len;
            snprintf(x->protocol, sizeof(x->protocol), "%s", res.protocol);
            x->v5 = strcmp(res.protocol, "v5.channel.k8s.io") == 0;
            return 0;
        }
        int f = fill(x, err);
        if (f == -1)
            return kx_fail(x, err, "the connection to the API server was lost during the "
                           "WebSocket upgrade: %s", err->msg);
        if (f != 0)
            continue;
        int ev = wait_sock(x, POLLIN, deadline, err);
        if (ev < 0)
            return -1;
        if (ev == 0)
            return kx_fail(x, err, "the API server did not answer the WebSocket upgrade "
                           "within %u ms", x->timeout_ms);
    }
}

static int kx_start(kube_exec *x, const char *host, const char *path,
                    const char *const *headers, kube_exec **out, int *http_status,
                    sbx_err *err)
{
    if (handshake(x, host, path, headers, http_status, err) < 0) {
        kube_exec_free(x);
        return -1;
    }
    *out = x;
    return 0;
}

int kube_exec_over_fd(int fd, const char *host, const char *path, const char *const *headers,
                      const kube_exec_opts *o, kube_exec **out, sbx_err *err)
{
    *out = NULL;
    if (set_nonblock(fd, true) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return sbx_errno(err, "making the exec connection non-blocking");
    }
    return kx_start(kx_new(&fd_ops, (void *)(intptr_t)fd, o), host, path, headers, out, NULL,
                    err);
}

int kube_exec_over_curl(void *curl, const char *path, const char *const *headers,
                        const kube_exec_opts *o, kube_exec **out, int *http_status,
                        sbx_err *err)
{
    *out = NULL;
    if (http_status)
        *http_status = 0;
    kube_exec *x = kx_new(&curl_ops, curl, o);
    /* Host: the authority of the URL the handle connected to. */
    char *url = NULL, *host = NULL, *port = NULL;
    CURLU *u = curl_url();
    if (!u)
        xdie_oom();
    if (curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &url) != CURLE_OK || !url ||
        curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        curl_url_cleanup(u);
        kx_fail(x, err, "the exec connection has no URL to take the Host from");
        kube_exec_free(x);
        return -1;
    }
    char *authority = curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK && port
                          ? xasprintf("%s:%s", host, port)
                          : xstrdup(host);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    if (x->ops->fd(x->ctx) < 0) {
        free(authority);
        kx_fail(x, err, "the exec connection to the API server is not connected");
        kube_exec_free(x);
        return -1;
    }
    int r = kx_start(x, authority, path, headers, out, http_status, err);
    free(authority);
    return r;
}

void kube_exec_free(kube_exec *x)
{
    if (!x)
        return;
    /* A polite end: our Close, if the connection is still good, without waiting. */
    if (!x->failed && !x->eof) {
        sbx_err e;
        queue_close(x, WS_CLOSE_NORMAL, NULL);
        flush_some(x, &e);
    }
    x->ops->close(x->ctx);
    ws_decoder_release(&x->dec);
    strbuf_release(&x->in);
    strbuf_release(&x->out);
    free(x->message);
    free(x);
}

const char *kube_exec_protocol(const kube_exec *x)
{
    return x->protocol;
}

int kube_exec_fd(const kube_exec *x)
{
    return x->ops->fd(x->ctx);
}

/* ---- sending ------------------------------------------------------------------------------ */

static int can_send(kube_exec *x, const char *what, sbx_err *err)
{
    if (x->failed) {
        *err = x->fail;
        return -1;
    }
    if (x->done || x->close_sent)
        return sbx_errf(err, "cannot send %s: the command in the pod already ended", what);
    return 0;
}

static void queue_message(kube_exec *x, uint8_t channel, const void *buf, size_t len)
{
    bool was = pending_out(x);
    struct iovec iov[2] = { { &channel, 1 }, { (void *)buf, len } };
    ws_encodev(&x->enc, &x->out, WS_BINARY, true, iov, 2);
    queue_started(x, was);
}

int kube_exec_queue_stdin(kube_exec *x, const void *buf, size_t len, sbx_err *err)
{
    if (can_send(x, "stdin", err) < 0)
        return -1;
    if (!x->o.stdin_)
        return sbx_errf(err, "cannot send stdin: the exec was opened without it");
    if (x->stdin_closed)
        return sbx_errf(err, "cannot send stdin: it was closed");
    /* (Nothing to send is no message: an empty one would mean nothing to the server.) */
    for (const char *p = buf; len;) {
        size_t n = len < KX_STDIN_CHUNK ? len : KX_STDIN_CHUNK;
        queue_message(x, 0, p, n);
        p += n;
        len -= n;
    }
    return 0;
}

int kube_exec_flush(kube_exec *x, sbx_err *err)
{
    if (x->failed) {
        *err = x->fail;
        return -1;
    }
    int r = flush_some(x, err);
    if (r < 0)
        return kx_fail(x, err, "the connection to the API server was lost: %s", err->msg);
    return r;
}

bool kube_exec_want_write(const kube_exec *x)
{
    return !x->failed && pending_out(x);
}

int kube_exec_send_stdin(kube_exec *x, const void *buf, size_t len, sbx_err *err)
{
    if (kube_exec_queue_stdin(x, buf, len, err) < 0)
        return -1;
    return flush_all(x, "stdin", err);
}

int kube_exec_resize(kube_exec *x, unsigned cols, unsigned rows, sbx_err *err)
{
    if (can_send(x, "a terminal resize", err) < 0)
        return -1;
    /* the resize channel's message: {"Width":C,"Height":R} and a newline, as kubectl's */
    cJSON *size = cJSON_CreateObject();
    cJSON_AddNumberToObject(size, "Width", cols);
    cJSON_AddNumberToObject(size, "Height", rows);
    char *js = cJSON_PrintUnformatted(size);
    cJSON_Delete(size);
    if (!js)
        xdie_oom();
    strbuf msg = STRBUF_INIT;
    strbuf_addf(&msg, "%s\n", js);
    cJSON_free(js);
    queue_message(x, 4, msg.buf, msg.len);
    strbuf_release(&msg);
    return flush_all(x, "a terminal resize", err);
}

/* stdin's end without blocking: 1 on v4 (no way to say it), 0 when queued. */
static int queue_close_stdin(kube_exec *x, sbx_err *err)
{
    if (can_send(x, "stdin's end", err) < 0)
        return -1;
    if (!x->v5)
        return 1;
    if (x->stdin_closed || !x->o.stdin_)
        return 0;
    static const uint8_t zero = 0;
    queue_message(x, 255, &zero, 1);
    x->stdin_closed = true;
    return 0;
}

int kube_exec_close_stdin(kube_exec *x, sbx_err *err)
{
    int r = queue_close_stdin(x, err);
    if (r != 0)
        return r;
    return flush_all(x, "stdin's end", err);
}

/* ---- receiving ---------------------------------------------------------------------------- */

/* A copy of s fit for a terminal and a one-line message: controls become '?'. */
static char *printable(const char *s, size_t n)
{
    if (n > 512)
        n = 512;
    char *r = xmalloc(n + 1);
    for (size_t i = 0; i < n; i++)
        r[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
    r[n] = '\0';
    return r;
}

/* Channel 3: the metav1.Status that says how the command ended. It becomes sbxsh's exit
 * status, so it is read as client-go reads it and no looser: Success is 0, a
 * NonZeroExitCode's ExitCode cause a decimal of at most 255; anything else is a failure
 * whose message (printable only) is shown, never a status made up from it. */
static void take_status(kube_exec *x, const uint8_t *p, size_t n)
{
    x->status_seen = true;
    x->exit_code = -1;
    free(x->message);
    x->message = NULL;
    cJSON *j = cJSON_ParseWithLength((const char *)p, n);
    if (!cJSON_IsObject(j)) {
        char *raw = printable((const char *)p, n);
        x->message = xasprintf("the API server sent a status that is not a JSON object: '%s'",
                               raw);
        free(raw);
        cJSON_Delete(j);
        return;
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(j, "reason");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "message");
    if (cJSON_IsString(st) && strcmp(st->valuestring, "Success") == 0) {
        x->exit_code = 0;
        cJSON_Delete(j);
        return;
    }
    if (cJSON_IsString(reason) && strcmp(reason->valuestring, "NonZeroExitCode") == 0) {
        const cJSON *details = cJSON_GetObjectItemCaseSensitive(j, "details");
        const cJSON *causes = cJSON_GetObjectItemCaseSensitive(details, "causes");
        const cJSON *c;
        cJSON_ArrayForEach(c, causes) {
            const cJSON *cr = cJSON_GetObjectItemCaseSensitive(c, "reason");
            const cJSON *cm = cJSON_GetObjectItemCaseSensitive(c, "message");
            if (!cJSON_IsString(cr) || strcmp(cr->valuestring, "ExitCode") != 0 ||
                !cJSON_IsString(cm))
                continue;
            /* A decimal that fits a uint8, as client-go parses it. */
            const char *s = cm->valuestring;
            size_t len = strlen(s);
            if (len == 0 || len > 3 || strspn(s, "0123456789") != len)
                break;
            int v = atoi(s);
            if (v > 255)
                break;
            x->exit_code = v;
            cJSON_Delete(j);
            return;
        }
    }
    if (cJSON_IsString(msg) && msg->valuestring[0]) {
        x->message = printable(msg->valuestring, strlen(msg->valuestring));
    } else {
        char *raw = printable((const char *)p, n);
        x->message = xasprintf("the command failed without an exit code: %s", raw);
        free(raw);
    }
    cJSON_Delete(j);
}

/* One decoded event: 1 output for the caller, KUBE_EXEC_DONE, 0 go on, -1. Only channels 1
 * and 2 reach the caller's stdout and stderr and 3 ends the command: the server cannot
 * write into stdin's channel or invent another.
 * Pings are answered, but a peer that pings faster than it reads the pongs is cut off
 * (the pongs would pile up in our memory). */
static int handle(kube_exec *x, const ws_event *ev, int *channel, const void **data,
                  size_t *len, sbx_err *err)
{
    switch (ev->opcode) {
    case WS_BINARY:
        if (ev->len < 1)
            return 0;
        switch (ev->data[0]) {
        case 1:
        case 2:
            /* Servers open with an empty message on their first channel: nothing to say. */
            if (ev->len == 1)
                return 0;
            *channel = ev->data[0];
            *data = ev->data + 1;
            *len = ev->len - 1;
            return 1;
        case 3:
            take_status(x, ev->data + 1, ev->len - 1);
            x->done = true;
            queue_close(x, WS_CLOSE_NORMAL, NULL);
            flush_some(x, err); /* best effort: the status is what counts */
            return KUBE_EXEC_DONE;
        default:
            /* Channels the server has no business sending (0, 4, 255: kubectl ignores
             * them as "unknown stream id"). */
            return 0;
        }
    case WS_TEXT:
        queue_close(x, WS_CLOSE_UNSUPPORTED, "binary messages only");
        flush_some(x, err);
        return kx_fail(x, err, "the API server sent a text message; the %s protocol has "
                       "binary messages only", x->protocol);
    case WS_PING: {
        bool was = pending_out(x);
        ws_encode(&x->enc, &x->out, WS_PONG, true, ev->data, ev->len);
        queue_started(x, was);
        if (x->out.len - x->out_off > KX_IN_CAP)
            return kx_fail(x, err, "the API server sends pings faster than it reads the pongs");
        if (flush_some(x, err) < 0)
            return kx_fail(x, err, "the connection to the API server was lost: %s", err->msg);
        return 0;
    }
    case WS_PONG:
        return 0;
    case WS_CLOSE: {
        x->close_seen = true;
        /* Answer with the same code (RFC 6455 5.5.1), then we are done with the stream. */
        queue_close(x, ev->close_code == WS_CLOSE_NO_STATUS ? 0 : ev->close_code, NULL);
        sbx_err e;
        flush_some(x, &e);
        if (ev->close_code == WS_CLOSE_NORMAL) {
            x->done = true;
            free(x->message);
            x->message = xstrdup("the API server ended the exec (WebSocket Close 1000) "
                                 "without the command's exit status");
            x->exit_code = -1;
            return KUBE_EXEC_DONE;
        }
        char *why = printable((const char *)ev->data, ev->len);
        int r = kx_fail(x, err, "the API server closed the exec stream with code %u (%s)%s%s",
                        ev->close_code, ws_close_code_name(ev->close_code), why[0] ? ": " : "",
                        why);
        free(why);
        return r;
    }
    }
    return 0;
}

/* The next output or the end, without blocking: queued frames go out first (a pong, a
 * window), then whole frames are decoded from what arrived and one read is made when
 * none is left. A stream that ends before the status is a lost connection, never a
 * success: the command's outcome is unknown. */
int kube_exec_recv(kube_exec *x, int *channel, const void **data, size_t *len, sbx_err *err)
{
    if (x->failed) {
        *err = x->fail;
        return -1;
    }
    if (x->done)
        return KUBE_EXEC_DONE;
    if (flush_some(x, err) < 0)
        return kx_fail(x, err, "the connection to the API server was lost: %s", err->msg);
    for (;;) {
        if (x->in_off < x->in.len) {
            size_t used;
            ws_event ev;
            int r = ws_decode(&x->dec, x->in.buf + x->in_off, x->in.len - x->in_off, &used,
                              &ev, err);
            x->in_off += used;
            if (r < 0) {
                queue_close(x, ws_decoder_fail_code(&x->dec), "protocol error");
                sbx_err e;
                flush_some(x, &e);
                return kx_fail(x, err, "the API server broke the exec stream: %s", err->msg);
            }
            if (r == 1) {
                int h = handle(x, &ev, channel, data, len, err);
                if (h != 0)
                    return h;
            }
            continue;
        }
        int f = fill(x, err);
        if (f == 1)
            continue;
        if (f == 0)
            return 0;
        if (f == KX_EOF) {
            if (x->status_seen) {
                x->done = true;
                return KUBE_EXEC_DONE;
            }
            return kx_fail(x, err, "the connection to the API server was lost before the "
                           "command's exit status arrived (the stream ended without a "
                           "WebSocket Close)");
        }
        return kx_fail(x, err, "the connection to the API server was lost before the "
                       "command's exit status arrived: %s", err->msg);
    }
}

int kube_exec_exit_code(const kube_exec *x, const char **message)
{
    if (message)
        *message = x->message;
    return x->exit_code;
}

/* ---- the relay ---------------------------------------------------------------------------- */

/* Writes all of buf to the caller's fd. The fd's flags are the caller's: when it is
 * non-blocking and full, wait for it (in slices, so an interrupt is seen). */
static int write_out(kube_exec *x, int fd, const char *buf, size_t len, sbx_err *err)
{
    while (len) {
        ssize_t n = pipe_write(fd, buf, len);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = { .fd = fd, .events = POLLOUT };
            if (poll(&p, 1, KX_SLICE_MS) < 0 && errno != EINTR)
                return kx_fail(x, err, "poll: %s", strerror(errno));
            if (interrupted(x))
                return kx_fail(x, err, "interrupted");
            continue;
        }
        return kx_fail(x, err, "writing the command's output: %s",
                       n < 0 ? strerror(errno) : "no progress");
    }
    return 0;
}

/* The keepalive of a live exec (kube_exec.h): a ping after keepalive_ms of silence, the
 * connection given up after dead_ms without a byte (not even a pong), and a send that
 * makes no progress for timeout_ms. Returns -1 (err says which) when the connection is to
 * be given up, else 0 with *wait_ms how long the caller may poll before calling again. */
int kube_exec_keepalive(kube_exec *x, int *wait_ms, sbx_err *err)
{
    uint64_t keep = (uint64_t)x->keepalive_ms * 1000000;
    uint64_t dead = x->o.dead_ms ? (uint64_t)x->o.dead_ms * 1000000 : 12 * keep + 1000000000ull;
    uint64_t now = now_ns();

    if (x->failed)
        return sbx_errf(err, "%s", x->fail.msg);
    if (now >= x->last_rx + dead)
        return kx_fail(x, err, "the connection to the API server was lost: nothing came for "
                       "%llu s, not even an answer to a ping",
                       (unsigned long long)(dead / 1000000000ull));
    uint64_t since = x->last_rx > x->last_ping ? x->last_rx : x->last_ping;
    if (now >= since + keep) {
        bool was = pending_out(x);
        ws_encode(&x->enc, &x->out, WS_PING, true, NULL, 0);
        queue_started(x, was);
        x->last_ping = now;
        since = now;
    }
    if (pending_out(x)) {
        if (kube_exec_flush(x, err) < 0)
            return -1;
        /* (A fresh now: the flush moves out_since, and an older now would be before it.) */
        now = now_ns();
        if (pending_out(x) && now >= x->out_since + (uint64_t)x->timeout_ms * 1000000)
            return kx_fail(x, err, "sending to the API server made no progress for %u ms (it "
                           "stopped reading)", x->timeout_ms);
    }
    /* The next deadline: the keepalive's, the dead peer's, the stuck send's. */
    uint64_t next = since + keep;
    if (x->last_rx + dead < next)
        next = x->last_rx + dead;
    if (pending_out(x) && x->out_since + (uint64_t)x->timeout_ms * 1000000 < next)
        next = x->out_since + (uint64_t)x->timeout_ms * 1000000;
    *wait_ms = next > now ? (int)((next - now + 999999) / 1000000) : 0;
    return 0;
}

int kube_exec_relay(kube_exec *x, int in_fd, int out_fd, int err_fd, int *exit_code,
                    sbx_err *err)
{
    bool in_open = in_fd >= 0 && x->o.stdin_ && !x->stdin_closed;
    char *ibuf = in_open ? xmalloc(KX_STDIN_CHUNK) : NULL;
    int ret = -1;
    for (;;) {
        int ch;
        const void *d;
        size_t n;
        int r = kube_exec_recv(x, &ch, &d, &n, err);
        if (r < 0)
            goto out;
        if (r == KUBE_EXEC_DONE) {
            *exit_code = kube_exec_exit_code(x, NULL);
            ret = 0;
            goto out;
        }
        if (r == 1) {
            int fd = ch == 1 ? out_fd : err_fd;
            if (fd >= 0 && write_out(x, fd, d, n, err) < 0)
                goto out;
            continue;
        }

        /* Nothing is ready: is the connection still alive? */
        int wait_ms;
        if (kube_exec_keepalive(x, &wait_ms, err) < 0)
            goto out;
        uint64_t ms = (uint64_t)wait_ms;
        if (x->o.interrupted && ms > KX_SLICE_MS)
            ms = KX_SLICE_MS;
        struct pollfd p[2] = {
            { .fd = kube_exec_fd(x), .events = POLLIN | (pending_out(x) ? POLLOUT : 0) },
            { .fd = -1 },
        };
        if (in_open && x->out.len - x->out_off < KX_OUT_HIGH) {
            p[1].fd = in_fd;
            p[1].events = POLLIN;
        }
        int pr = poll(p, 2, (int)ms);
        if (pr < 0 && errno != EINTR) {
            kx_fail(x, err, "poll: %s", strerror(errno));
            goto out;
        }
        if (interrupted(x)) {
            kx_fail(x, err, "interrupted");
            goto out;
        }
        if (pr <= 0)
            continue;
        if (p[1].fd >= 0 && p[1].revents) {
            ssize_t got = read(in_fd, ibuf, KX_STDIN_CHUNK);
            if (got > 0) {
                if (kube_exec_queue_stdin(x, ibuf, (size_t)got, err) < 0)
                    goto out;
            } else if (got == 0) {
                in_open = false;
                if (queue_close_stdin(x, err) < 0)
                    goto out;
            } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
                kx_fail(x, err, "reading the command's stdin: %s", strerror(errno));
                goto out;
            }
        }
        /* The socket's readiness is acted on by the next kube_exec_recv() (reading) and
         * flush (writing) at the loop's top. */
    }
out:
    free(ibuf);
    return ret;
}
