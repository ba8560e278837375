/*
 * pods/exec over WebSocket: a process in a pod, its stdin, stdout, stderr and exit status.
 *
 * The upgrade is a hand-written HTTP/1.1 GET over libcurl's CONNECT_ONLY connection
 * (Debian 12's libcurl 7.88 has no WebSocket support, and curl_easy_send crashes over
 * h2), offering v5.channel.k8s.io, then v4.channel.k8s.io. The framing is kube/ws.h.
 *
 *   kube_exec *x;
 *   const char *argv[] = { "/bin/sh", "-c", "echo hi", NULL };
 *   if (kube_exec_open(client, "ns", "pod", NULL, argv, &(kube_exec_opts){ .stdin_ = true },
 *                      &x, &err) < 0) ...
 *   int code;
 *   kube_exec_relay(x, 0, 1, 2, &code, &err);   // until the process ends
 *   kube_exec_free(x);
 */
#ifndef SBX_KUBE_EXEC_H
#define SBX_KUBE_EXEC_H

#include <stdbool.h>
#include <stddef.h>

#include "common/util.h"
#include "kube/client.h"

typedef struct kube_exec kube_exec;

typedef struct kube_exec_opts {
    bool stdin_;            /* open channel 0 */
    bool tty;               /* a pty in the pod (then no stderr channel) */
    bool no_stderr;         /* do not ask for channel 2 */
    unsigned timeout_ms;    /* bounds the upgrade and each blocking send (0: 30 s) */
    unsigned keepalive_ms;  /* kube_exec_relay() pings after this long without a byte from
                               the server, and gives the connection up after 12 times as
                               long plus a second, as kubectl (0: 5 s) */
    unsigned dead_ms;       /* no byte for this long, not even a pong: the connection is
                               given up (0: 12 keepalives and a second, kubectl's rule) */
    unsigned retry_ms;      /* kube_exec_open() tries again, with a doubling pause, while
                               the upgrade gets no answer or a 429/500/502/503/504, for up
                               to this long (0: one try) */
    bool (*interrupted)(void *ctx); /* polled by every wait (NULL: nothing interrupts) */
    void *interrupt_ctx;
} kube_exec_opts;

/* container NULL: the pod's only (or first) container. Returns after the 101. */
int kube_exec_open(kube_client *c, const char *ns, const char *pod, const char *container,
                   const char *const *argv, const kube_exec_opts *o, kube_exec **out,
                   sbx_err *err);
void kube_exec_free(kube_exec *x);

/* The subprotocol agreed ("v5.channel.k8s.io" or "v4.channel.k8s.io"). */
const char *kube_exec_protocol(const kube_exec *x);
/* The socket to poll for reading (and for writing when a send would block). */
int kube_exec_fd(const kube_exec *x);

/* Sends bytes on stdin (channel 0), a resize (channel 4), or stdin's end (v5: the
 * [255,0] CLOSE message; v4 has none, and it returns 1: the caller must close the
 * exec to end stdin). Blocks until sent (each bit of progress bounded by o->timeout_ms;
 * what arrives meanwhile is kept for kube_exec_recv). */
int kube_exec_send_stdin(kube_exec *x, const void *buf, size_t len, sbx_err *err);
int kube_exec_resize(kube_exec *x, unsigned cols, unsigned rows, sbx_err *err);
int kube_exec_close_stdin(kube_exec *x, sbx_err *err);

/* The same without blocking, for a caller's own poll loop: kube_exec_queue_stdin() only
 * queues (messages of at most 64 KiB); kube_exec_flush() writes what is queued until the
 * socket would block (0: all sent, 1: some left, -1: error); kube_exec_want_write() says
 * whether something is left (then poll kube_exec_fd() for POLLOUT too). */
int kube_exec_queue_stdin(kube_exec *x, const void *buf, size_t len, sbx_err *err);
int kube_exec_flush(kube_exec *x, sbx_err *err);
bool kube_exec_want_write(const kube_exec *x);

/* One message's worth of what arrived, without blocking when nothing has:
 *   returns 1 with *channel (1 stdout, 2 stderr) and *data, *len (valid until the next
 *   call) for output; 0 when nothing is ready; KUBE_EXEC_DONE when the process ended
 *   (status read, Close seen or the stream ended after the status); -1 on error (a
 *   protocol violation, the connection lost before the status: err says which).
 * Pings are answered inside. */
#define KUBE_EXEC_DONE 2
int kube_exec_recv(kube_exec *x, int *channel, const void **data, size_t *len, sbx_err *err);

/* For a caller's own poll loop while the exec lives: pings after keepalive_ms of silence
 * (queued and flushed), and -1 (err says which) when nothing came for dead_ms or a send
 * made no progress for timeout_ms: the connection is dead, though no RST may ever come (a
 * node or load balancer gone). Else 0 with *wait_ms, the longest the caller may poll before
 * calling it again. kube_exec_relay() uses it; so must any other loop over a long exec. */
int kube_exec_keepalive(kube_exec *x, int *wait_ms, sbx_err *err);

/* After KUBE_EXEC_DONE: the exit status (0..255) from the status channel, or -1 when the
 * status was another failure (message then says what, e.g. the container not found). */
int kube_exec_exit_code(const kube_exec *x, const char **message);

/* Pumps until the process ends: in_fd (or -1) to stdin (EOF closes stdin; on v4, which
 * cannot say so, stdin then just stays open), stdout and stderr to out_fd and err_fd (-1:
 * dropped). *exit_code as kube_exec_exit_code(). The fds' flags are left alone: a blocking
 * out_fd that its reader does not drain holds the relay (and so the server) back. Returns
 * -1 when the connection is lost (no byte for the keepalive's limit, a send stuck for the
 * timeout, an end before the status), on a protocol error, or when interrupted. */
int kube_exec_relay(kube_exec *x, int in_fd, int out_fd, int err_fd, int *exit_code,
                    sbx_err *err);

#endif
