/*
 * The session client (session.h): session_open() (starting the holder when none runs),
 * session_run(), session_start(), session_write(), session_read_record(), session_sync(),
 * session_wait(), session_release(), the tty's pause and resume. May call common/ and sync/; a
 * backend only through backend.h. Untrusted: the holder's frames carry the sandbox's output and
 * text; proto_parse() bounds each, messages go out sanitized (sbx_sanitize), and output relayed
 * to a terminal passes session/termfilter.c.
 */
#include "session/session.h"
#include "session/backend.h"

#include <errno.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "session/holder.h"
#include "session/proto.h"
#include "session/termfilter.h"
#include "sync/conn.h"
#include "common/framebuf.h"
#include "common/run.h"

#define MAX_FDS 16
/* Credit is returned in batches of at least this much (or when a queue
 * drains), so that a byte-at-a-time writer does not cost a frame per byte. */
#define CREDIT_BATCH (32u * 1024)
#define HELLO_TIMEOUT_MS 30000
#define TYPED_MAX (64u * 1024)
#define PROGRESS_DELAY_NS (500u * 1000000)

typedef struct outfd {
    int child_fd;
    sbx_fd_mode mode;
    int client_fd;
    strbuf q;           /* relay: bytes to write locally; api: bytes not yet read */
    size_t raw_pending; /* bytes received, not yet credited */
    size_t written;     /* bytes written locally since the last credit */
    bool eof;
    bool closed;        /* the local reader went away: output is discarded */
    bool filter;
    bool capped;        /* a pipe or socket: never a blocking write */
    bool nowait;        /* ...and pwritev2(RWF_NOWAIT) works on it */
    sbx_termfilter tf;
} outfd;

typedef struct infd {
    int child_fd;
    sbx_fd_mode mode;
    int client_fd;
    size_t inflight;    /* sent, not acknowledged by the holder */
    bool done;          /* EOF sent */
} infd;

struct sbx_session {
    sbx_config *cfg;
    sbx_open_opts opts;
    int fd;
    framebuf_in in;     /* frames from the holder */
    framebuf_out out;   /* frames to the holder */
    long holder_pid;
    /* the command */
    bool running, exited;
    sbx_exit exit;
    bool forward_signals, tty, raw;
    bool ignores_term;  /* sbx_command.ignores_term */
    /* A SIGTERM or SIGHUP forwarded to the command: if no answer came by end_deadline
     * (the way to the sandbox may be dead, and then nothing ever answers), sbxsh dies of
     * end_sig itself, as bash would have at once (end_unanswered). 0: none pending. */
    int end_sig;
    uint64_t end_deadline;
    /* A SIGINT forwarded to the command, or a Ctrl-C typed on the raw terminal (probed with
     * a signal 0 the agent answers without sending anything on): the agent answers it at
     * once (P_SIGNAL_ACK) when the way works, and the command's output or end are answers
     * too. None by int_deadline: the way is dead (a black hole, whose stream would be given
     * up only after 20 s and reconnects). sbxsh -c then ends as for an unanswered SIGTERM
     * (end_unanswered); the interactive prompt, which outlives a Ctrl-C as bash -i does,
     * gives the command up and returns to the prompt (abandon_unanswered). 0: none
     * pending. */
    uint64_t int_deadline;
    bool abandoned;     /* abandon_unanswered gave the command up: the session is unusable */
    bool tty_paused;    /* the caller has the terminal back (session_tty_pause) */
    bool tty_held;      /* the terminal is not read until the next resume (tty_mark) */
    strbuf typed;       /* the terminal's bytes sent since the last resume (the last 64 KiB) */
    /* a progress line (starting the sandbox, the first sync): shown once it has lasted
     * PROGRESS_DELAY_NS, on one line of stderr, and erased before anything else reaches
     * the terminal, so that it leaves no trace */
    strbuf progress;
    uint64_t progress_due;
    bool progress_shown;
    /* warnings for stderr (a sync's, a full space's), printed once the command's output
     * queued before them is out: "sbxsh: warning: ..." comes after the output it follows */
    strbuf warnings;
    struct termios saved_tio;
    outfd outs[MAX_FDS];
    size_t nouts;
    infd ins[MAX_FDS];
    size_t nins;
    /* replies */
    bool got_sync_done, got_released, got_status;
    strbuf status;
    bool failed;
    bool conn_lost;     /* the holder's socket closed or failed: the holder is gone */
    char failmsg[sizeof(((sbx_err *)0)->msg)];
};

static bool outputs_drained(sbx_session *s);
static void pump(sbx_session *s, int timeout_ms);
static void restore_tty(sbx_session *s);
static void warnings_flush(sbx_session *s, bool force);

/* ---- signals ----------------------------------------------------------- */

static int sig_pipe[2] = { -1, -1 };
static const int fwd_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH };
static struct sigaction saved_sa[ARRAY_SIZE(fwd_signals)];
static struct sigaction saved_pipe_sa;
static bool signals_on;

/* The signal handler: a byte on the self-pipe, which the event loop reads and
 * forwards (nothing else is async-signal-safe to do here). */
static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* the pipe is full: the signal is already pending there */
    }
    errno = saved;
}

/* While a command runs: SIGPIPE ignored (a relayed reader going away is an
 * EPIPE to handle, not our death) and, with forward, the signals a terminal
 * sends caught for the command (forward_signal) instead of ending sbxsh. */
static void signals_install(bool forward)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &saved_pipe_sa);
    if (!forward)
        return;
    if (sig_pipe[0] < 0) {
        if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
            return;
    }
    sa.sa_handler = on_signal;
    for (size_t i = 0; i < ARRAY_SIZE(fwd_signals); i++)
        sigaction(fwd_signals[i], &sa, &saved_sa[i]);
    signals_on = true;
}

/* Puts back what signals_install changed, when the command ends. */
static void signals_restore(void)
{
    sigaction(SIGPIPE, &saved_pipe_sa, NULL);
    if (!signals_on)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(fwd_signals); i++)
        sigaction(fwd_signals[i], &saved_sa[i], NULL);
    signals_on = false;
}

/* ---- framing ----------------------------------------------------------- */

/* Queues a frame of up to two numbers for the holder (credit, acks, signals). */
static void send_u32s(sbx_session *s, int type, int n, uint32_t a, uint32_t b)
{
    size_t start = s->out.q.len;
    proto_begin(&s->out.q, type);
    if (n > 0)
        proto_u32(&s->out.q, a);
    if (n > 1)
        proto_u32(&s->out.q, b);
    proto_end(&s->out.q, start);
}

/* The failure that ended the session call, as the caller's error. */
static int fail(sbx_session *s, sbx_err *err)
{
    /* the caller prints the failure next: the warnings that came before it go first */
    warnings_flush(s, true);
    return sbx_errf(err, "%s", s->failmsg);
}

static void set_failed(sbx_session *s, const char *fmt, ...) SBX_PRINTF(2, 3);
/* Records the first failure (later ones are consequences) and stops waiting
 * for the command: the caller reports it and exits 125. */
static void set_failed(sbx_session *s, const char *fmt, ...)
{
    va_list ap;
    if (s->failed)
        return;
    va_start(ap, fmt);
    vsnprintf(s->failmsg, sizeof(s->failmsg), fmt, ap);
    va_end(ap);
    /* the holder's error quotes the sandbox's and the backend's text: shown, never run */
    sbx_sanitize_inplace(s->failmsg, sizeof(s->failmsg));
    s->failed = true;
    s->running = false;
}

/* The relayed output for the command's fd child_fd, or NULL. */
static outfd *out_by_child(sbx_session *s, int child_fd)
{
    for (size_t i = 0; i < s->nouts; i++)
        if (s->outs[i].child_fd == child_fd)
            return &s->outs[i];
    return NULL;
}

/* The relayed input for the command's fd child_fd, or NULL. */
static infd *in_by_child(sbx_session *s, int child_fd)
{
    for (size_t i = 0; i < s->nins; i++)
        if (s->ins[i].child_fd == child_fd)
            return &s->ins[i];
    return NULL;
}

/* Gives the holder back n bytes of an output's window: what is credited is
 * what this side has consumed, so a slow reader here slows the writer in the
 * sandbox and memory stays bounded. */
static void credit(sbx_session *s, outfd *o, size_t n)
{
    if (!n)
        return;
    o->raw_pending -= n;
    if (s->running && !s->exited)
        send_u32s(s, P_CREDIT, 2, (uint32_t)o->child_fd, (uint32_t)n);
}

/* Output of the command for one fd: queued for its local fd (through the
 * terminal filter when it goes to a terminal), or credited at once when that
 * fd's reader is gone (the sandbox writer then gets SIGPIPE). */
static void handle_output(sbx_session *s, uint32_t fd, const char *p, size_t n)
{
    outfd *o = out_by_child(s, (int)fd);
    if (!o)
        return;
    o->raw_pending += n;
    if (o->closed) {
        credit(s, o, o->raw_pending);
        return;
    }
    if (o->filter)
        session_termfilter_feed(&o->tf, p, n, &o->q);
    else
        strbuf_add(&o->q, p, n);
}

/* The progress line goes (the cursor back at the start of an empty line), and any that is
 * still due is forgotten. */
static void progress_clear(sbx_session *s)
{
    if (s->progress_shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        s->progress_shown = false;
    }
    strbuf_reset(&s->progress);
    s->progress_due = 0;
}

/* Shows the progress line once it is due: within the terminal's width, so that erasing
 * one line erases it all. */
static void progress_show(sbx_session *s, bool now)
{
    struct winsize ws;
    size_t n = s->progress.len;
    if (!n || s->progress_shown || (!now && now_ns() < s->progress_due))
        return;
    if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8 && n + 8 > ws.ws_col)
        n = ws.ws_col - 8;
    fprintf(stderr, "sbxsh: %.*s", (int)n, s->progress.buf);
    fflush(stderr);
    s->progress_shown = true;
}

/* One frame from the holder; an unknown or malformed one fails the call, since
 * holder and client are the same build and disagreeing means a bug. */
static void handle_frame(sbx_session *s, int type, proto_reader *r)
{
    uint32_t a = 0, b = 0;
    const char *str;
    size_t len;
    infd *in;

    switch (type) {
    case P_OUTPUT:
        s->int_deadline = 0;    /* the sandbox answers */
        if (proto_get_u32(r, &a) == 0)
            handle_output(s, a, (const char *)r->p, r->left);
        return;
    case P_SIGNAL_ACK:
        s->int_deadline = 0;
        return;
    case P_OUTPUT_EOF:
        if (proto_get_u32(r, &a) == 0 && out_by_child(s, (int)a))
            out_by_child(s, (int)a)->eof = true;
        return;
    case P_INPUT_ACK:
        if (proto_get_u32(r, &a) == 0 && proto_get_u32(r, &b) == 0 &&
            (in = in_by_child(s, (int)a)))
            in->inflight -= b < in->inflight ? b : in->inflight;
        return;
    case P_EXIT: {
        uint32_t kind, code, core, ws;
        if (proto_get_u32(r, &kind) < 0 || proto_get_u32(r, &code) < 0 ||
            proto_get_u32(r, &core) < 0 || proto_get_u32(r, &ws) < 0 ||
            proto_get_str(r, &str, &len) < 0) {
            set_failed(s, "malformed exit status from the session holder");
            return;
        }
        progress_clear(s);
        s->exited = true;
        s->int_deadline = 0;
        s->exit.wait_status = (int)ws;
        s->exit.spawn_failed = kind == SYNC_SPAWN_FAILED;
        /* why a command could not start: it may quote the sandbox's text */
        sbx_sanitize_buf(s->exit.message, sizeof(s->exit.message), str, len);
        return;
    }
    case P_SYNC_DONE:
        progress_clear(s);
        s->got_sync_done = true;
        return;
    case P_RELEASED:
        s->got_released = true;
        return;
    case P_STATUS_REPLY:
        if (proto_get_str(r, &str, &len) == 0) {
            strbuf_reset(&s->status);
            strbuf_add(&s->status, str, len);
            s->got_status = true;
        }
        return;
    case P_WARNING:
        if (proto_get_str(r, &str, &len) == 0) {
            /* sync warnings name the sandbox's files: every one goes out sanitized, to the
             * caller's callback or to the terminal (common/report.h) */
            strbuf msg = STRBUF_INIT;
            sbx_sanitize(&msg, str, len);
            progress_clear(s);
            if (s->opts.warning)
                s->opts.warning(s->opts.warning_ctx, msg.buf);
            else
                strbuf_addf(&s->warnings, "sbxsh: warning: %s%s", msg.buf, s->raw ? "\r\n" : "\n");
            strbuf_release(&msg);
        }
        return;
    case P_PROGRESS:
        /* a new phase replaces the line at once when one shows, else waits its turn */
        if (proto_get_str(r, &str, &len) == 0 && isatty(2)) {
            bool shown = s->progress_shown;
            progress_clear(s);
            sbx_sanitize(&s->progress, str, len);   /* it may name a sandbox's file */
            s->progress_due = now_ns() + PROGRESS_DELAY_NS;
            progress_show(s, shown);
        }
        return;
    case P_ERROR:
        progress_clear(s);
        if (proto_get_str(r, &str, &len) == 0)
            set_failed(s, "%.*s", (int)len, str);
        else
            set_failed(s, "the session holder failed");
        return;
    case P_HELLO_OK:
        if (proto_get_u32(r, &a) == 0 && proto_get_u32(r, &b) == 0)
            s->holder_pid = b;
        return;
    default:
        set_failed(s, "unexpected message %d from the session holder", type);
    }
}

/* Reads what the holder sent and handles each complete frame; the holder
 * going away fails the call with where its log is. */
static void sock_read(sbx_session *s)
{
    ssize_t n = framebuf_fill(&s->in, s->fd, 65536 + 64);
    if (n < 0 && errno == EAGAIN)
        return;
    if (n <= 0) {
        char *log = session_log_path(s->cfg);
        s->conn_lost = true;
        set_failed(s, "the session holder went away (see %s); the next command starts a new "
                   "one", log);
        free(log);
        return;
    }
    while (!s->failed) {
        int type;
        proto_reader r;
        long flen = proto_parse(framebuf_data(&s->in), framebuf_len(&s->in), &type, &r);
        if (flen == 0)
            break;
        if (flen < 0) {
            set_failed(s, "malformed message from the session holder");
            break;
        }
        handle_frame(s, type, &r);
        framebuf_consume(&s->in, (size_t)flen);
    }
    framebuf_in_compact(&s->in);
}

/* Sends queued frames without blocking; the rest waits for POLLOUT. */
static void sock_write(sbx_session *s)
{
    if (framebuf_send(&s->out, s->fd, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        s->conn_lost = true;
        set_failed(s, "lost the connection to the session holder: %s", strerror(errno));
    }
}

/* ---- relaying ---------------------------------------------------------- */

/* How long sbxsh waits for the sandbox's answer to a forwarded SIGTERM, SIGHUP or SIGINT
 * (or a Ctrl-C typed on the raw terminal). A live
 * sandbox answers in milliseconds (the command's end, or the pull interrupted); a dead way
 * to it (a cluster's node or load balancer gone, no RST) never answers. */
#define END_SIGNAL_GRACE_NS (3 * 1000000000ULL)

/* Reads a relayed input fd as far as its window (SBX_PROTO_INPUT_WINDOW minus
 * what is unacknowledged) allows and sends it; end of file or an error ends
 * the child's input. */
static void relay_input(sbx_session *s, infd *in)
{
    char buf[SBX_PROTO_CHUNK];
    size_t room = SBX_PROTO_INPUT_WINDOW - in->inflight;
    ssize_t n = read(in->client_fd, buf, room < sizeof(buf) ? room : sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        /* End of file, or an error such as EIO on a hung-up terminal: to
         * the child it is the end of its input either way. */
        send_u32s(s, P_INPUT_EOF, 1, (uint32_t)in->child_fd, 0);
        in->done = true;
        return;
    }
    size_t start = s->out.q.len;
    proto_begin(&s->out.q, P_INPUT);
    proto_u32(&s->out.q, (uint32_t)in->child_fd);
    strbuf_add(&s->out.q, buf, (size_t)n);
    proto_end(&s->out.q, start);
    in->inflight += (size_t)n;
    /* Ctrl-C on the raw terminal is a byte for the sandbox's pty, not a SIGINT here: a
     * signal 0 after it asks the agent whether the way works (it answers without signalling
     * anything), so that a dead way is told within int_deadline, as for a SIGINT. */
    if (s->tty && s->raw && in->child_fd == 0 && !s->int_deadline &&
        s->saved_tio.c_cc[VINTR] != _POSIX_VDISABLE &&
        memchr(buf, s->saved_tio.c_cc[VINTR], (size_t)n)) {
        send_u32s(s, P_SIGNAL, 1, 0, 0);
        s->int_deadline = now_ns() + END_SIGNAL_GRACE_NS;
    }
    if (s->tty && in->child_fd == 0) {
        strbuf_add(&s->typed, buf, (size_t)n);
        if (s->typed.len > TYPED_MAX)
            strbuf_remove(&s->typed, 0, s->typed.len - TYPED_MAX);
    }
}

/* Writes queued output to its local fd without blocking it for others (a
 * pipe shared with other processes is never made O_NONBLOCK: RWF_NOWAIT, or
 * PIPE_BUF at a time), and credits the holder for what was consumed. */
static void relay_output(sbx_session *s, outfd *o)
{
    /* Output at the terminal: the phase is over (the command runs). A line not yet due is
     * forgotten too, or it would show later over what the command drew (vi's first line). */
    if (s->progress.len && o->q.len && isatty(o->client_fd))
        progress_clear(s);
    while (o->q.len) {
        ssize_t n;
        if (o->capped && o->nowait) {
            /* A pipe or socket shared with others must not be made
             * O_NONBLOCK; RWF_NOWAIT gives one non-blocking write. */
            struct iovec iov = { o->q.buf, o->q.len };
            n = pwritev2(o->client_fd, &iov, 1, -1, RWF_NOWAIT);
            if (n < 0 && (errno == EOPNOTSUPP || errno == EINVAL)) {
                o->nowait = false;  /* an older kernel: PIPE_BUF at a time */
                continue;
            }
        } else {
            n = write(o->client_fd, o->q.buf,
                      o->capped && o->q.len > PIPE_BUF ? PIPE_BUF : o->q.len);
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return;
            /* EPIPE (or any error): the reader is gone. The sandbox's
             * writer gets SIGPIPE on its next write, as under bash. */
            o->closed = true;
            strbuf_reset(&o->q);
            if (s->running && !s->exited)
                send_u32s(s, P_CLOSE_OUTPUT, 1, (uint32_t)o->child_fd, 0);
            credit(s, o, o->raw_pending);
            return;
        }
        strbuf_remove(&o->q, 0, (size_t)n);
        o->written += (size_t)n;
        if (o->capped && !o->nowait)
            break;      /* poll again before the next PIPE_BUF */
    }
    /* Unfiltered, bytes written are bytes received; filtered, only a
     * drained queue says how much of the input is consumed. */
    if (!o->q.len) {
        credit(s, o, o->raw_pending);
        o->written = 0;
    } else if (!o->filter && o->written >= CREDIT_BATCH) {
        credit(s, o, o->written < o->raw_pending ? o->written : o->raw_pending);
        o->written = 0;
    }
}

/* A signal sbxsh got while the command runs goes to the command (SIGWINCH as
 * the terminal's new size); SIGINT and SIGTERM also interrupt a pull the
 * holder may be writing for an ended command. A SIGTERM (unless ignored, as an interactive
 * bash ignores it) or SIGHUP must end sbxsh within seconds whatever the network does: it
 * arms end_deadline. */
static void forward_signal(sbx_session *s, int sig)
{
    if ((sig == SIGHUP || (sig == SIGTERM && !s->ignores_term)) && !s->end_sig) {
        s->end_sig = sig;
        s->end_deadline = now_ns() + END_SIGNAL_GRACE_NS;
    }
    if (!s->running || s->exited)
        return;
    if (sig == SIGINT && !s->int_deadline)
        s->int_deadline = now_ns() + END_SIGNAL_GRACE_NS;
    if (sig == SIGWINCH) {
        struct winsize ws;
        if (ioctl(1, TIOCGWINSZ, &ws) == 0 || ioctl(0, TIOCGWINSZ, &ws) == 0)
            send_u32s(s, P_WINSIZE, 2, ws.ws_row, ws.ws_col);
        return;
    }
    send_u32s(s, P_SIGNAL, 1, (uint32_t)sig, 0);
    /* The command may have ended already, and its pull be what we wait for: SIGINT and
     * SIGTERM then interrupt the pull (the holder answers at once, as killed by sig). */
    if (sig == SIGINT || sig == SIGTERM)
        send_u32s(s, P_ABORT_PULL, 1, (uint32_t)sig, 0);
}

/* No answer to a SIGTERM or SIGHUP (or to a SIGINT: int_deadline) within
 * END_SIGNAL_GRACE_NS: say that the sandbox may still be running the command (it is not
 * waited for), put the terminal back, and die of the signal, as bash dies of it (a
 * harness's timeout must always end sbxsh). */
static void end_unanswered(sbx_session *s)
{
    int sig = s->end_sig;
    progress_clear(s);
    restore_tty(s);
    signals_restore();
    sbx_error("no answer from the sandbox %llu s after %s (the way to it may be lost); its "
              "command may still be running there: `sbx status` shows the session, "
              "`sbx release` ends it", END_SIGNAL_GRACE_NS / 1000000000ULL, strsignal(sig));
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);   /* (not reached) */
}

/* The interactive prompt's int_deadline passed: a Ctrl-C (a SIGINT here while the terminal
 * was cooked, or the key on the raw terminal) got no answer from the sandbox. bash -i
 * survives a Ctrl-C, so sbxsh does too: the command is given up (the session fails with
 * this message, the caller drops it and the next sandbox command connects afresh), the
 * terminal and the signals are the prompt's again. The holder goes on trying the way on
 * its own, within its own bounds. */
static void abandon_unanswered(sbx_session *s)
{
    progress_clear(s);
    restore_tty(s);
    signals_restore();
    s->int_deadline = 0;
    s->abandoned = true;
    set_failed(s, "no answer from the sandbox %llu s after Ctrl-C (the way to it may be "
               "lost); its command may still be running there: `sbx status` shows the "
               "session, `sbx release` ends it", END_SIGNAL_GRACE_NS / 1000000000ULL);
}

/* Prints the warnings waiting for the output queued before them (all of it, with force:
 * the session ends). */
static void warnings_flush(sbx_session *s, bool force)
{
    if (!s->warnings.len || (!force && !outputs_drained(s)))
        return;
    progress_clear(s);
    fwrite(s->warnings.buf, 1, s->warnings.len, stderr);
    fflush(stderr);
    strbuf_reset(&s->warnings);
}

/* One round of the event loop: waits up to timeout_ms for something to do
 * and does it. */
static void pump(sbx_session *s, int timeout_ms)
{
    struct pollfd pfd[2 * MAX_FDS + 2];
    void *who[2 * MAX_FDS + 2];
    size_t n = 0;

    pfd[n] = (struct pollfd){ s->fd, (short)(POLLIN | (framebuf_pending(&s->out) ? POLLOUT : 0)), 0 };
    who[n++] = NULL;
    if (signals_on) {
        pfd[n] = (struct pollfd){ sig_pipe[0], POLLIN, 0 };
        who[n++] = &sig_pipe;
    }
    for (size_t i = 0; s->running && !s->exited && i < s->nins; i++) {
        infd *in = &s->ins[i];
        /* a paused or held terminal is the caller's: not read */
        if (s->tty && (s->tty_paused || s->tty_held) && in->child_fd == 0)
            continue;
        if (in->mode == SBX_FD_RELAY_IN && !in->done && in->inflight < SBX_PROTO_INPUT_WINDOW) {
            pfd[n] = (struct pollfd){ in->client_fd, POLLIN, 0 };
            who[n++] = in;
        }
    }
    for (size_t i = 0; i < s->nouts; i++) {
        outfd *o = &s->outs[i];
        if (o->mode == SBX_FD_RELAY_OUT && o->q.len && !o->closed) {
            pfd[n] = (struct pollfd){ o->client_fd, POLLOUT, 0 };
            who[n++] = o;
        }
    }
    if (s->progress.len && !s->progress_shown) {
        uint64_t now = now_ns();
        int due = s->progress_due > now ? (int)((s->progress_due - now) / 1000000) + 1 : 0;
        if (timeout_ms < 0 || due < timeout_ms)
            timeout_ms = due;
    }
    if (s->int_deadline && !s->end_sig) {
        uint64_t now = now_ns();
        if (now >= s->int_deadline) {
            if (s->ignores_term) {
                abandon_unanswered(s);
                return;
            }
            s->end_sig = SIGINT;
            end_unanswered(s);
        }
        int left = (int)((s->int_deadline - now) / 1000000) + 1;
        if (timeout_ms < 0 || left < timeout_ms)
            timeout_ms = left;
    }
    if (s->end_sig) {
        uint64_t now = now_ns();
        if (now >= s->end_deadline)
            end_unanswered(s);
        int left = (int)((s->end_deadline - now) / 1000000) + 1;
        if (timeout_ms < 0 || left < timeout_ms)
            timeout_ms = left;
    }
    int pr = poll(pfd, n, timeout_ms);
    progress_show(s, false);
    if (pr < 0) {
        if (errno != EINTR)
            set_failed(s, "poll: %s", strerror(errno));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!pfd[i].revents)
            continue;
        if (who[i] == NULL) {
            if (pfd[i].revents & POLLOUT)
                sock_write(s);
            if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                sock_read(s);
        } else if (who[i] == (void *)&sig_pipe) {
            unsigned char sigs[32];
            ssize_t k = read(sig_pipe[0], sigs, sizeof(sigs));
            for (ssize_t j = 0; j < k; j++)
                forward_signal(s, sigs[j]);
        } else if (who[i] >= (void *)s->ins && who[i] < (void *)(s->ins + MAX_FDS)) {
            relay_input(s, who[i]);
        } else {
            relay_output(s, who[i]);
        }
    }
    if (framebuf_pending(&s->out) && !s->failed)
        sock_write(s);
    warnings_flush(s, false);
}

/* ---- connecting -------------------------------------------------------- */

/* Connects to the holder's socket; -1 with errno (ENOENT, ECONNREFUSED: no
 * holder, so the caller starts one). */
static int sock_connect(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* The holder's start, as run.h's child function: a session leader's child (double fork,
 * nobody's zombie), in /, stdin and stdout /dev/null, stderr the session's log, the
 * listening socket at 3 and no other fd of ours (a pipe's write end kept in a long-lived
 * process would keep its reader from EOF), default signals and an empty mask. */
typedef struct holder_start {
    sbx_config *cfg;
    char *dir;
} holder_start;

static int holder_child(void *ctx)
{
    holder_start *h = ctx;

    free(h->dir);
    set_cloexec(3, true);
    /* ps and pgrep show it as what it is, not as the command that happened to start it. */
    prctl(PR_SET_NAME, "sbx-holder", 0, 0, 0);
    return session_holder_main(h->cfg, 3);
}

/* Forks the holder, which inherits the listening socket and nothing else of
 * ours. The socket is bound and listening before the fork, so our connect
 * right after cannot miss it. */
static int start_holder(sbx_config *cfg, const char *sock_path, sbx_err *err)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char *dir = session_state_dir(cfg), *log = NULL;
    holder_start hs = { cfg, dir };
    int lfd = -1, lg = -1, root = -1, r = -1;
    pid_t pid;

    if (session_private_dir(cfg->state_root, err) < 0 || session_private_dir(dir, err) < 0)
        goto out;
    unlink(sock_path);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 128) < 0) {
        sbx_errno(err, "cannot listen on %s", sock_path);
        goto out;
    }
    log = session_log_path(cfg);
    lg = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (lg < 0 || root < 0) {
        sbx_errno(err, "cannot open %s", lg < 0 ? log : "/");
        goto out;
    }
    sbx_run run = { .fn = holder_child, .ctx = &hs, .file = "sbx-holder", .cwd_fd = root,
                    .setsid = true, .daemon = true, .stdout_null = true,
                    .fds = { { lg, 2 }, { lfd, 3 } }, .nfds = 2 };
    r = sbx_run_start(&run, &pid, NULL, err);
out:
    if (lfd >= 0)
        close(lfd);
    if (lg >= 0)
        close(lg);
    if (root >= 0)
        close(root);
    free(log);
    free(dir);
    return r;
}

/* P_HELLO: the protocol version, the fingerprint of the session's shape (a
 * holder serves only clients of the same runtime, network and code
 * directories) and the sync paths, task files, excludes and create paths this call adds;
 * waits, bounded, for HELLO_OK or the holder's refusal. */
static int hello(sbx_session *s, sbx_err *err)
{
    uint64_t deadline = now_ns() + (uint64_t)(s->opts.hello_timeout_ms ? s->opts.hello_timeout_ms
                                                                        : HELLO_TIMEOUT_MS) *
                                   1000000;
    char *fp = s->opts.any_shape ? xstrdup("") : session_config_fingerprint(s->cfg);
    size_t start = s->out.q.len;
    proto_begin(&s->out.q, P_HELLO);
    proto_u32(&s->out.q, SBX_PROTO_VERSION);
    proto_u32(&s->out.q, isatty(2) ? P_HELLO_PROGRESS : 0);
    proto_strz(&s->out.q, fp);
    /* What this call wants synced besides the code directories; the holder
     * adds it to what it syncs. */
    static const char *const none[] = { NULL };
    bool any = s->opts.any_shape;
    proto_list(&s->out.q, any ? none : (const char *const *)s->cfg->sync_paths.v);
    proto_list(&s->out.q, any ? none : (const char *const *)s->cfg->task_files.v);
    proto_list(&s->out.q, any ? none : (const char *const *)s->cfg->excludes.v);
    proto_list(&s->out.q, any ? none : (const char *const *)s->cfg->create_paths.v);
    proto_end(&s->out.q, start);
    free(fp);
    while (!s->holder_pid && !s->failed) {
        uint64_t now = now_ns();
        if (now >= deadline) {
            char *log = session_log_path(s->cfg);
            sbx_errf(err, "the session holder does not answer; see %s", log);
            free(log);
            return -1;
        }
        pump(s, (int)((deadline - now) / 1000000) + 1);
    }
    return s->failed ? fail(s, err) : 0;
}

bool session_pid_is_holder(long pid)
{
    char *path = xasprintf("/proc/%ld/comm", pid), comm[32] = "";
    FILE *f = pid > 1 ? fopen(path, "r") : NULL;
    free(path);
    if (f) {
        if (!fgets(comm, sizeof(comm), f))
            comm[0] = '\0';
        fclose(f);
    }
    return !strncmp(comm, "sbx-holder", 10);
}

/*
 * The holder serving this session, found through STATE/SESSION/holder.lock ("PID SOCKET",
 * holder.c's take_holder_lock) when our own socket path has none: two clients of one
 * session with different runtime directories (an MCP client that starts `sbx mcp` without
 * XDG_RUNTIME_DIR, a terminal with it) share one holder instead of each starting its own,
 * which would push the other's out mid-command. The state directory is ours (0700, outside
 * the sandbox's reach); the pid must be a live sbx-holder, and the socket a socket of ours.
 * -1 when there is none.
 */
static int connect_recorded_holder(const sbx_config *cfg, const char *own)
{
    char *dir = session_state_dir(cfg), *path = xasprintf("%s/holder.lock", dir);
    char buf[PATH_MAX + 32] = "", *sock, *end;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
    struct stat st;

    free(dir);
    free(path);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    long pid = strtol(buf, &sock, 10);
    if (pid <= 1 || *sock != ' ' || !(end = strchr(++sock, '\n')))
        return -1;
    *end = '\0';
    if (sock[0] != '/' || !strcmp(sock, own) || lstat(sock, &st) < 0 || !S_ISSOCK(st.st_mode) ||
        st.st_uid != geteuid())
        return -1;
    return session_pid_is_holder(pid) ? sock_connect(sock) : -1;
}

int session_open(sbx_config *cfg, const sbx_open_opts *opts, sbx_session **out,
                     sbx_err *err)
{
    static const sbx_open_opts none;
    char *sock = NULL, *lockp = NULL;
    int lock = -1;

    *out = NULL;
    if (!cfg->agent_path && !(cfg->agent_path = session_find_agent(err)))
        return -1;
    if (session_private_dir(cfg->run_dir, err) < 0)
        return -1;
    sock = session_socket_path(cfg);
    lockp = session_lock_path(cfg);
    if (strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        sbx_errf(err, "the session socket path %s is too long; set XDG_RUNTIME_DIR to a "
                 "shorter directory", sock);
        goto fail;
    }
    /* A holder that is exiting (idle, released, killed) may still accept our
     * connection and then drop it: a killed process tears its memory down
     * before its sockets close. Then we try again, a little later each time,
     * and start a new holder once the old socket refuses. */
    for (int attempt = 0; attempt < 8; attempt++) {
        if (attempt)
            usleep((useconds_t)(attempt < 5 ? 25000 << (attempt - 1) : 400000));
        int fd = sock_connect(sock);
        if (fd < 0)
            fd = connect_recorded_holder(cfg, sock);
        if (fd < 0 && !(opts && opts->no_start)) {
            lock = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
            if (lock < 0 || flock(lock, LOCK_EX) < 0) {
                sbx_errno(err, "cannot lock %s", lockp);
                goto fail;
            }
            fd = sock_connect(sock);
            if (fd < 0)
                fd = connect_recorded_holder(cfg, sock);
            if (fd < 0) {
                if (start_holder(cfg, sock, err) < 0)
                    goto fail;
                fd = sock_connect(sock);
            }
            close(lock);
            lock = -1;
        }
        if (fd < 0) {
            if (opts && opts->no_start) {
                sbx_errf(err, "no session '%s' is running", cfg->session);
                goto fail;
            }
            sbx_errno(err, "cannot reach the session holder at %s", sock);
            goto fail;
        }
        sbx_session *s = xcalloc(1, sizeof(*s));
        s->cfg = cfg;
        s->opts = opts ? *opts : none;
        s->fd = fd;
        framebuf_in_init(&s->in);
        framebuf_out_init(&s->out);
        strbuf_init(&s->status, 0);
        strbuf_init(&s->typed, 0);
        strbuf_init(&s->progress, 0);
        set_nonblock(fd, true);
        if (hello(s, err) == 0) {
            free(sock);
            free(lockp);
            *out = s;
            return 0;
        }
        bool gone = s->failed && s->conn_lost;
        session_close(s);
        if (!gone)
            goto fail;
    }
fail:
    if (lock >= 0)
        close(lock);
    free(sock);
    free(lockp);
    return -1;
}

/* The terminal as it was before make_raw(): a copy the signal handler below can use. */
static struct termios tty_restore_tio;
static volatile sig_atomic_t tty_restore_armed;

/* A signal that kills sbxsh while the terminal is raw (and is not one forwarded to the
 * command): the terminal first goes back as it was (tcsetattr is async-signal-safe), then
 * the signal does what it would have done. SIGKILL cannot be caught: after it, `stty sane`
 * or `reset` puts the terminal right. */
static const int fatal_signals[] = { SIGALRM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGPROF, SIGXCPU,
                                     SIGXFSZ, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL };
static struct sigaction fatal_saved[ARRAY_SIZE(fatal_signals)];

static void on_fatal_signal(int sig)
{
    int saved = errno;
    if (tty_restore_armed)
        tcsetattr(0, TCSANOW, &tty_restore_tio);
    tty_restore_armed = 0;
    signal(sig, SIG_DFL);
    raise(sig);
    errno = saved;
}

static void fatal_signals_arm(bool on)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    for (size_t i = 0; i < ARRAY_SIZE(fatal_signals); i++) {
        if (on) {
            sigaction(fatal_signals[i], NULL, &fatal_saved[i]);
            /* an ignored signal stays ignored; one the caller handles stays its */
            if (fatal_saved[i].sa_handler == SIG_DFL)
                sigaction(fatal_signals[i], &sa, NULL);
        } else if (fatal_saved[i].sa_handler == SIG_DFL) {
            sigaction(fatal_signals[i], &fatal_saved[i], NULL);
        }
    }
}

/* Local fd 0 (the terminal) in raw mode: every key goes to the command's pty, whose line
 * discipline in the sandbox makes Ctrl-C a SIGINT for the command there. */
static void make_raw(sbx_session *s)
{
    struct termios raw;
    if (s->raw || !isatty(0) || tcgetattr(0, &s->saved_tio) < 0)
        return;
    raw = s->saved_tio;
    cfmakeraw(&raw);
    tty_restore_tio = s->saved_tio;
    tty_restore_armed = 1;
    fatal_signals_arm(true);
    if (tcsetattr(0, TCSADRAIN, &raw) == 0) {
        s->raw = true;
    } else {
        tty_restore_armed = 0;
        fatal_signals_arm(false);
    }
}

/* The terminal exactly as make_raw() found it. */
static void restore_tty(sbx_session *s)
{
    if (s->raw) {
        tcsetattr(0, TCSADRAIN, &s->saved_tio);
        s->raw = false;
        tty_restore_armed = 0;
        fatal_signals_arm(false);
    }
}

/* The terminal's modes the tty command left on (the alternate screen, a hidden cursor, mouse
 * reports: termfilter.h) go back to their defaults, after all it wrote: a program that
 * crashed, was killed or is hostile leaves none of them to the prompt or the next program. */
static void tty_reset_modes(sbx_session *s)
{
    for (size_t i = 0; i < s->nouts; i++) {
        outfd *o = &s->outs[i];
        if (o->mode == SBX_FD_RELAY_OUT && o->filter && o->tf.pty && !o->closed)
            session_termfilter_pty_reset(&o->tf, &o->q);
    }
    while (!s->failed && !outputs_drained(s))
        pump(s, -1);
}

int session_tty_pause(sbx_session *s, sbx_err *err)
{
    if (!s->running || !s->tty || s->tty_paused)
        return s->failed ? fail(s, err) : 0;
    /* what the command wrote so far reaches the terminal before the caller writes to it */
    while (!s->failed && !outputs_drained(s))
        pump(s, -1);
    tty_reset_modes(s);
    progress_clear(s);
    restore_tty(s);
    s->tty_paused = true;
    return s->failed ? fail(s, err) : 0;
}

const char *session_tty_typed(const sbx_session *s, size_t *len)
{
    *len = s->typed.len;
    return s->typed.buf;
}

int session_tty_mark(sbx_session *s, sbx_err *err)
{
    infd *in = in_by_child(s, 0);
    size_t start;
    if (!s->running || !s->tty || !in || in->done)
        return s->failed ? fail(s, err) : 0;
    s->tty_held = true;
    /* after everything relayed so far, within the input window: the shell asking for the
     * mark reads the pty meanwhile, so the window opens */
    while (!s->failed && !s->exited && in->inflight >= SBX_PROTO_INPUT_WINDOW)
        pump(s, -1);
    if (s->failed || s->exited)
        return s->failed ? fail(s, err) : 0;
    start = s->out.q.len;
    proto_begin(&s->out.q, P_INPUT);
    proto_u32(&s->out.q, 0);
    strbuf_addch(&s->out.q, '\0');
    proto_end(&s->out.q, start);
    in->inflight += 1;
    sock_write(s);
    return s->failed ? fail(s, err) : 0;
}

int session_tty_resume(sbx_session *s, sbx_err *err)
{
    struct winsize ws;
    if (!s->running || !s->tty || !s->tty_paused)
        return s->failed ? fail(s, err) : 0;
    s->tty_paused = false;
    s->tty_held = false;
    strbuf_reset(&s->typed);
    make_raw(s);
    /* the window may have changed while the caller had the terminal */
    if (!s->exited && (ioctl(1, TIOCGWINSZ, &ws) == 0 || ioctl(0, TIOCGWINSZ, &ws) == 0)) {
        send_u32s(s, P_WINSIZE, 2, ws.ws_row, ws.ws_col);
        sock_write(s);
    }
    return s->failed ? fail(s, err) : 0;
}

/* The command is over for this side: the terminal and the signals as they
 * were, the relays forgotten. */
static void end_command(sbx_session *s)
{
    s->end_sig = 0;     /* answered */
    s->int_deadline = 0;
    restore_tty(s);
    signals_restore();
    for (size_t i = 0; i < s->nouts; i++)
        strbuf_release(&s->outs[i].q);
    s->nouts = s->nins = 0;
    s->running = false;
}

void session_close(sbx_session *s)
{
    if (!s)
        return;
    if (s->running)
        end_command(s);
    close(s->fd);
    framebuf_in_release(&s->in);
    framebuf_out_release(&s->out);
    strbuf_release(&s->status);
    progress_clear(s);
    warnings_flush(s, true);
    strbuf_release(&s->warnings);
    strbuf_release(&s->typed);
    strbuf_release(&s->progress);
    free(s);
}

int session_failed(const sbx_session *s)
{
    return !s->failed ? 0 : s->abandoned ? 128 + SIGINT : 125;
}

long session_holder_pid(const sbx_session *s)
{
    return s->holder_pid;
}

/* ---- commands ---------------------------------------------------------- */

static bool is_capped(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

/* Are local fds a and b one output: one open file description (`>log 2>&1`,
 * a terminal, one pipe)? Relayed on two pipes, their bytes could be reordered. */
static bool same_output(int a, int b)
{
    struct stat sa, sb;
    long same;

    if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0)
        return false;
    if (sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino || sa.st_rdev != sb.st_rdev)
        return false;
    /* One open file description (dup'd, as `2>&1` makes them) is exactly what
     * bash shares; kcmp() says so where the kernel has it. */
    pid_t me = getpid();
    same = syscall(SYS_kcmp, me, me, KCMP_FILE, a, b);
    if (same >= 0)
        return same == 0;
    /* Without kcmp: the same pipe, socket or terminal is one output; a
     * regular file opened twice (`>f 2>f`) is not, unless its offsets and
     * flags agree as dup'd descriptions' would. */
    if (!S_ISREG(sa.st_mode))
        return true;
    return lseek(a, 0, SEEK_CUR) == lseek(b, 0, SEEK_CUR) &&
           fcntl(a, F_GETFL) == fcntl(b, F_GETFL);
}

int session_start(sbx_session *s, const sbx_command *cmd, sbx_err *err)
{
    struct winsize ws = { 0 };
    size_t start;

    if (s->failed)
        return fail(s, err);
    if (s->running)
        return sbx_errf(err, "a command is already running in this session handle");
    if (cmd->nfds > MAX_FDS)
        return sbx_errf(err, "too many fds in the command's map (at most %d)", MAX_FDS);
    memset(&s->exit, 0, sizeof(s->exit));
    s->exited = false;
    s->nouts = s->nins = 0;
    s->tty = cmd->tty;
    s->tty_paused = false;
    s->tty_held = false;
    strbuf_reset(&s->typed);
    /* A relayed output that is one output with the relayed output before it
     * shares its pipe in the sandbox (the wire's "shared" direction). */
    bool shared[MAX_FDS] = { false };
    for (size_t i = 0, prev = SIZE_MAX; i < cmd->nfds && !cmd->tty; i++) {
        const sbx_fd_map *m = &cmd->fds[i];
        if (m->mode != SBX_FD_RELAY_OUT && m->mode != SBX_FD_API_OUT)
            continue;
        shared[i] = m->mode == SBX_FD_RELAY_OUT && prev != SIZE_MAX &&
                    cmd->fds[prev].mode == SBX_FD_RELAY_OUT &&
                    same_output(cmd->fds[prev].client_fd, m->client_fd);
        if (!shared[i])
            prev = i;
    }
    for (size_t i = 0; i < cmd->nfds; i++) {
        const sbx_fd_map *m = &cmd->fds[i];
        if (shared[i])
            continue; /* its bytes come as its partner's */
        if (m->mode == SBX_FD_RELAY_OUT || m->mode == SBX_FD_API_OUT) {
            outfd *o = &s->outs[s->nouts++];
            memset(o, 0, sizeof(*o));
            o->child_fd = m->child_fd;
            o->mode = m->mode;
            o->client_fd = m->client_fd;
            strbuf_init(&o->q, 0);
            if (m->mode == SBX_FD_RELAY_OUT) {
                o->capped = o->nowait = is_capped(m->client_fd);
                /* A pty's output keeps what TTY programs need, but never what a hostile
                 * one could use against the person (termfilter.h, pty mode). */
                o->filter = cmd->filter == SBX_FILTER_ON ||
                            (cmd->filter == SBX_FILTER_AUTO && isatty(m->client_fd));
                if (cmd->tty)
                    session_termfilter_init_pty(&o->tf);
                else
                    session_termfilter_init(&o->tf);
            }
        } else {
            infd *in = &s->ins[s->nins++];
            memset(in, 0, sizeof(*in));
            in->child_fd = m->child_fd;
            in->mode = m->mode;
            in->client_fd = m->client_fd;
        }
    }
    if (cmd->tty) {
        if (ioctl(1, TIOCGWINSZ, &ws) < 0)
            ioctl(0, TIOCGWINSZ, &ws);
        make_raw(s);
    }

    start = s->out.q.len;
    proto_begin(&s->out.q, P_RUN);
    proto_strz(&s->out.q, cmd->exe);
    proto_list(&s->out.q, cmd->argv);
    proto_list(&s->out.q, cmd->env);
    proto_strz(&s->out.q, cmd->cwd);
    proto_u32(&s->out.q, (uint32_t)cmd->nfds);
    for (size_t i = 0; i < cmd->nfds; i++) {
        proto_u32(&s->out.q, (uint32_t)cmd->fds[i].child_fd);
        sbx_fd_mode mode = cmd->fds[i].mode;
        proto_u32(&s->out.q, shared[i] ? SBX_PROTO_FD_SHARED
                           : mode == SBX_FD_RELAY_OUT || mode == SBX_FD_API_OUT ? SBX_PROTO_FD_OUT
                           : SBX_PROTO_FD_IN);
    }
    proto_u32(&s->out.q, cmd->tty);
    proto_u32(&s->out.q, ws.ws_row);
    proto_u32(&s->out.q, ws.ws_col);
    proto_end(&s->out.q, start);
    if (s->out.q.len - start > SBX_PROTO_MAX_FRAME) {
        strbuf_setlen(&s->out.q, start);
        restore_tty(s);
        return sbx_errf(err, "the command, its arguments and environment are too large "
                        "(over %u bytes)", SBX_PROTO_MAX_FRAME);
    }
    s->running = true;
    s->ignores_term = cmd->ignores_term;
    s->end_sig = 0;
    s->int_deadline = 0;
    signals_install(cmd->forward_signals);
    sock_write(s);
    return s->failed ? (end_command(s), fail(s, err)) : 0;
}

/* Whether every relayed output's queue is written out (an EOF or the exit must
 * not overtake output still queued). */
static bool outputs_drained(sbx_session *s)
{
    for (size_t i = 0; i < s->nouts; i++) {
        outfd *o = &s->outs[i];
        if (o->mode == SBX_FD_RELAY_OUT && o->q.len && !o->closed)
            return false;
    }
    return true;
}

int session_write(sbx_session *s, int child_fd, const void *buf, size_t len, sbx_err *err)
{
    infd *in = in_by_child(s, child_fd);
    const char *p = buf;

    if (!in || in->mode != SBX_FD_API_IN || in->done)
        return sbx_errf(err, "fd %d is not an open API input of the command", child_fd);
    while (len) {
        if (s->failed)
            return fail(s, err);
        if (s->exited)
            return sbx_errf(err, "the command has exited");
        size_t room = SBX_PROTO_INPUT_WINDOW - in->inflight;
        if (!room) {
            pump(s, -1);
            continue;
        }
        size_t n = len < room ? len : room;
        if (n > SBX_PROTO_CHUNK)
            n = SBX_PROTO_CHUNK;
        size_t start = s->out.q.len;
        proto_begin(&s->out.q, P_INPUT);
        proto_u32(&s->out.q, (uint32_t)child_fd);
        strbuf_add(&s->out.q, p, n);
        proto_end(&s->out.q, start);
        in->inflight += n;
        p += n;
        len -= n;
        sock_write(s);
    }
    return s->failed ? fail(s, err) : 0;
}

int session_close_fd(sbx_session *s, int child_fd, sbx_err *err)
{
    infd *in = in_by_child(s, child_fd);
    if (!in || in->mode != SBX_FD_API_IN)
        return sbx_errf(err, "fd %d is not an API input of the command", child_fd);
    if (!in->done) {
        send_u32s(s, P_INPUT_EOF, 1, (uint32_t)child_fd, 0);
        in->done = true;
        sock_write(s);
    }
    return s->failed ? fail(s, err) : 0;
}

/* Takes from an API output's queue up to and including delim (delim >= 0) or exactly n bytes
 * (delim < 0), pumping the connection until they are there; at the output's end (or the
 * command's), what is left. 1: a whole record, 0: the rest at the end. */
static int read_api(sbx_session *s, int child_fd, int delim, size_t n, strbuf *out,
                    sbx_err *err)
{
    outfd *o = out_by_child(s, child_fd);
    if (!o || o->mode != SBX_FD_API_OUT)
        return sbx_errf(err, "fd %d is not an API output of the command", child_fd);
    for (;;) {
        size_t take = 0;
        if (delim >= 0) {
            char *hit = o->q.len ? memchr(o->q.buf, delim, o->q.len) : NULL;
            take = hit ? (size_t)(hit - o->q.buf) + 1 : 0;
        } else if (o->q.len >= n) {
            take = n;
        }
        if (take) {
            strbuf_add(out, o->q.buf, take);
            strbuf_remove(&o->q, 0, take);
            credit(s, o, take);
            sock_write(s);
            return 1;
        }
        if (s->failed)
            return fail(s, err);
        if (o->eof || s->exited) {
            strbuf_add(out, o->q.buf, o->q.len);
            strbuf_reset(&o->q);
            return 0;
        }
        pump(s, -1);
    }
}

int session_read_record(sbx_session *s, int child_fd, int delim, strbuf *out,
                            sbx_err *err)
{
    return read_api(s, child_fd, delim & 0xff, 0, out, err);
}

int session_read_bytes(sbx_session *s, int child_fd, size_t n, strbuf *out, sbx_err *err)
{
    if (n == 0)
        return 1;
    return read_api(s, child_fd, -1, n, out, err);
}

int session_signal(sbx_session *s, int signo, sbx_err *err)
{
    if (s->failed)
        return fail(s, err);
    if (s->running && !s->exited) {
        send_u32s(s, P_SIGNAL, 1, (uint32_t)signo, 0);
        sock_write(s);
    }
    return 0;
}

int session_wait(sbx_session *s, sbx_exit *st, sbx_err *err)
{
    if (!s->running)
        return s->failed ? fail(s, err) : sbx_errf(err, "no command is running");
    while (!s->failed && !(s->exited && outputs_drained(s)))
        pump(s, -1);
    if (s->tty && !s->tty_paused)
        tty_reset_modes(s);
    end_command(s);
    if (s->failed)
        return fail(s, err);
    *st = s->exit;
    return 0;
}

int session_run(sbx_session *s, const sbx_command *cmd, sbx_exit *st, sbx_err *err)
{
    if (session_start(s, cmd, err) < 0)
        return -1;
    return session_wait(s, st, err);
}

/* Waits for a one-shot reply while relaying (a command may be running). */
static int await(sbx_session *s, bool *flag, sbx_err *err)
{
    sock_write(s);
    while (!*flag && !s->failed)
        pump(s, -1);
    *flag = false;
    return s->failed ? fail(s, err) : 0;
}

void session_label(sbx_session *s, const char *line)
{
    size_t start = s->out.q.len, n = strlen(line);
    /* a label is for people (sbx log): its first 4 KiB, no NUL */
    proto_begin(&s->out.q, P_LABEL);
    proto_str(&s->out.q, line, n > 4096 ? 4096 : n);
    proto_end(&s->out.q, start);
}

int session_sync(sbx_session *s, sbx_err *err)
{
    send_u32s(s, P_SYNC, 0, 0, 0);
    if (await(s, &s->got_sync_done, err) < 0)
        return -1;
    /* A sync is an output barrier (sync/PROTOCOL.md): what the command wrote
     * before it is relayed before we return, so the caller prints in order. */
    while (!s->failed && !outputs_drained(s))
        pump(s, -1);
    return s->failed ? fail(s, err) : 0;
}

int session_release(sbx_session *s, unsigned timeout_s, sbx_err *err)
{
    uint64_t deadline = now_ns() + (uint64_t)timeout_s * 1000000000;

    send_u32s(s, P_RELEASE, 0, 0, 0);
    if (!timeout_s)
        return await(s, &s->got_released, err);
    /* A stuck holder (a sandbox that stopped answering) must not make release hang: the
     * caller says how long to wait, and `sbx release --force` is what comes next. */
    sock_write(s);
    while (!s->got_released && !s->failed) {
        uint64_t now = now_ns();
        if (now >= deadline)
            return sbx_errf(err, "the session's holder did not finish the release in %u s; "
                            "`sbx release --force` stops it and its sandbox", timeout_s);
        pump(s, (int)((deadline - now) / 1000000) + 1);
    }
    s->got_released = false;
    return s->failed ? fail(s, err) : 0;
}

int session_status(sbx_session *s, strbuf *json, sbx_err *err)
{
    send_u32s(s, P_STATUS, 0, 0, 0);
    if (await(s, &s->got_status, err) < 0)
        return -1;
    strbuf_add(json, s->status.buf, s->status.len);
    return 0;
}

/* Variables that say how to talk to the person, never who they are: carried to every
 * sandbox command, so colours, locales and times look as they do on the host. By exact
 * name, never by prefix: any name can be set on the host (a CI's LC_DEPLOY_TOKEN, a
 * TERM_SESSION_ID), and a prefix would carry it into the sandbox. The locale ones are
 * glibc's categories (locale(7)). */
static bool terminal_or_locale_var(const char *name, size_t len)
{
    static const char *const names[] = {
        "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "TZ", "LANG", "LANGUAGE",
        "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY",
        "LC_MESSAGES", "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT",
        "LC_IDENTIFICATION",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i]) == len && !memcmp(names[i], name, len))
            return true;
    return false;
}

/* Sets (or replaces) NAME=VALUE in out. */
static void env_set(strvec *out, const char *name, size_t len, const char *value)
{
    for (size_t j = 0; j < out->n; j++) {
        if (!strncmp(out->v[j], name, len) && out->v[j][len] == '=') {
            free(out->v[j]);
            out->v[j] = xasprintf("%.*s=%s", (int)len, name, value);
            return;
        }
    }
    strvec_pushf(out, "%.*s=%s", (int)len, name, value);
}

void session_sandbox_env(const sbx_config *cfg, bool tty, strvec *out)
{
    static const char standard_path[] =
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    extern char **environ;
    strbuf path = STRBUF_INIT;
    const char *v;

    (void)tty;
    /* PATH: the caller's entries that lie inside the code directories (npm's
     * node_modules/.bin, a venv's bin, a project's scripts/), in the caller's order, then
     * the standard PATH. Other entries name host directories the sandbox does not have. */
    if ((v = getenv("PATH"))) {
        for (const char *p = v, *end; *p; p = *end ? end + 1 : end) {
            char entry[PATH_MAX];
            size_t n;
            end = strchrnul(p, ':');
            n = (size_t)(end - p);
            if (!n || n >= sizeof(entry) || p[0] != '/')
                continue;
            memcpy(entry, p, n);
            entry[n] = '\0';
            for (size_t i = 0; i < cfg->code_dirs.n; i++) {
                if (session_path_within(entry, cfg->code_dirs.v[i]) && !strstr(entry, "/../")) {
                    strbuf_addstr(&path, entry);
                    strbuf_addch(&path, ':');
                    break;
                }
            }
        }
    }
    strbuf_addstr(&path, standard_path);
    strvec_pushf(out, "PATH=%s", path.buf);
    strbuf_release(&path);
    strvec_pushf(out, "HOME=%s", cfg->home);

    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : 0;
        bool named = false;
        char name[256];

        if (!eq || !len || len >= sizeof(name))
            continue;
        memcpy(name, *e, len);
        name[len] = '\0';
        /* AGENT_SANDBOX_FORWARD_ENV: names or shell patterns (npm_*), comma-separated. */
        for (size_t i = 0; i < cfg->forward_env.n && !named; i++)
            named = fnmatch(cfg->forward_env.v[i], name, 0) == 0;
        /* PATH and HOME forwarded on purpose replace the defaults. */
        if (named || terminal_or_locale_var(name, len))
            env_set(out, name, len, eq + 1);
    }
    /* What the session's backend sets for every command (the local allowlist's proxy
     * variables), replacing forwarded ones of the same name. */
    const sbx_backend_class *bc = session_backend_class_find(cfg->backend);
    if (bc && bc->sandbox_env) {
        strvec vars = STRVEC_INIT;
        bc->sandbox_env(cfg, &vars);
        for (size_t i = 0; i < vars.n; i++) {
            const char *eq = strchr(vars.v[i], '=');
            if (eq)
                env_set(out, vars.v[i], (size_t)(eq - vars.v[i]), eq + 1);
        }
        strvec_clear(&vars);
    }
}
