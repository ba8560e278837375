/* sbx-agent: the host connection and the event loop; see agent.h (the entry points),
 * agent_int.h (how its files share the agent) and PROTOCOL.md. */
#include "sync/agent_int.h"
#include "common/fsat.h"

/* The self-pipe: signal handlers write one byte ('c' SIGCHLD, 't' SIGTERM/SIGINT) and the
 * loop reads them after poll(), so that nothing but write(2) runs in a handler. */
static int sig_pipe[2] = { -1, -1 };

/* In a command's child before its exec (not agent_pid), a signal does what its default would:
 * the command was signalled before it started, and the agent must not hear of it. */
static void in_child_default(int sig)
{
    signal(sig, SIG_DFL);
    raise(sig);
}

/* SIGCHLD ('c': reap) and SIGTERM, SIGINT ('t': the loop ends at its next turn, and saves
 * the state): a byte on the signal pipe that the loop polls, never more work in a handler. */
static void on_signal(int sig)
{
    int saved = errno;
    if (getpid() != agent_pid) {
        in_child_default(sig);
        errno = saved;
        return;
    }
    ssize_t r = write(sig_pipe[1], sig == SIGCHLD ? "c" : "t", 1);
    (void)r;
    errno = saved;
}

void agent_warn(void *ctx, const char *msg)
{
    agent *a = ctx;
    if (a->out_fd < 0)
        return;
    wire_frame_raw(&a->out.q, WIRE_WARN, 0, 0, msg, strnlen(msg, SYNC_MAX_TEXT));
}

void agent_warnf(agent *a, const char *fmt, ...)
{
    strbuf sb = STRBUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    agent_warn(a, sb.buf);
    strbuf_release(&sb);
}

/* ---- the host connection ---------------------------------------------------------------- */

/*
 * The host is gone (EOF, an error, a protocol error, or a new host taking over): everything
 * in flight toward it is dropped (a half-applied push is aborted, so no partial delta is
 * applied; the delta being sent and the finals are forgotten: the journal resends their paths
 * to the next host), and every channel becomes an orphan whose output is read and dropped
 * until its processes finish. Background processes keep running. Saves the state file.
 */
static void drop_connection(agent *a)
{
    if (a->in_fd < 0)
        return;
    if (a->in_fd != a->out_fd && a->out_fd >= 0)
        close(a->out_fd);
    close(a->in_fd);
    a->in_fd = a->out_fd = -1;
    if (a->rx && apply_active(a->rx))
        apply_abort(a->rx);
    if (a->tx_active) {
        delta_tx_release(&a->tx);
        a->tx_active = false;
    }
    a->nfinals = a->nsending = a->nbarred = 0;
    framebuf_in_reset(&a->in);
    framebuf_out_reset(&a->out);
    a->hello_seen = false;
    for (size_t i = 0; i < a->nchans; i++) {
        a->chans[i]->orphan = true;
        agent_chan_discard(a->chans[i]);
    }
    a->idle_since = mf_now_ns();
    agent_save_state(a, true);
}

/* Our HELLO: the protocol version, the pairing we remember and the last push we applied
 * (the host resumes from there), and a line about us (the holder's status shows it). */
static void send_hello(agent *a)
{
    struct utsname u;
    char about[256];
    wire_hello h = { .version = SYNC_PROTOCOL_VERSION, .pair_id = a->pair_id,
                     .applied_push_seq = a->applied_push_seq, .pid = (uint32_t)getpid() };
    if (uname(&u) < 0)
        snprintf(u.release, sizeof(u.release), "?");
    snprintf(about, sizeof(about), "sbx-agent %s; %s %s; uid %ld", SBX_AGENT_VERSION, u.sysname,
             u.release, (long)getuid());
    h.about = about;
    h.about_len = strlen(about);
    wire_put_hello(&a->out.q, &h);
}

/* Makes (in_fd, out_fd) the host stream, replacing the current host; big pipe buffers,
 * since a delta streams through them. */
static void attach(agent *a, int in_fd, int out_fd)
{
    drop_connection(a);
    a->in_fd = in_fd;
    a->out_fd = out_fd;
    set_nonblock(in_fd, true);
    set_nonblock(out_fd, true);
    fcntl(in_fd, F_SETPIPE_SZ, 1 << 20);
    fcntl(out_fd, F_SETPIPE_SZ, 1 << 20);
    send_hello(a);
}

/*
 * PUT_FILE: a file the host puts at an absolute path in the sandbox (sync_conn_put_file(),
 * e.g. the user's filtered git config). The agent trusts the host; the path is still checked
 * so that a bug cannot write through "..". Written whole (a temp file renamed over it), its
 * parents made as needed; a failure is a warning.
 */
static void put_file(agent *a, const wire_frame *f)
{
    wire_put_file p;
    sbx_err err;
    char path[SYNC_MAX_PATH * 2 + 2], tmp[96];
    char *slash;
    int dfd, fd;

    if (wire_get_put_file(f, &p, &err) < 0 || p.path[0] != '/' ||
        sf_check_relpath(p.path + 1, p.path_len - 1, &err) < 0) {
        agent_warnf(a, "bad PUT_FILE: %s", err.msg);
        return;
    }
    snprintf(path, sizeof(path), "%s%.*s", a->o->root_prefix ? a->o->root_prefix : "",
             (int)p.path_len, p.path);
    slash = strrchr(path, '/');
    *slash = '\0';
    sbx_mkdir_p(path, 0755, NULL);     /* mkdir -p of the parent; the open says if it failed */
    dfd = open(path[0] ? path : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        agent_warnf(a, "cannot write %.*s: %s", (int)p.path_len, p.path, strerror(errno));
        return;
    }
    fd = sf_mktemp(dfd, tmp, sizeof(tmp), 0600);
    if (fd < 0 || write_full(fd, p.data, p.len) < 0 || fchmod(fd, p.mode & 0777) < 0 ||
        renameat(dfd, tmp, dfd, slash + 1) < 0) {
        agent_warnf(a, "cannot write %.*s: %s", (int)p.path_len, p.path, strerror(errno));
        if (fd >= 0)
            unlinkat(dfd, tmp, 0);
    }
    if (fd >= 0)
        close(fd);
    close(dfd);
}

/*
 * One frame from the host. The first must be HELLO with our version. A frame for a channel
 * that is gone is dropped without an error (the host may not know yet), but input beyond
 * the window is a protocol error, as is anything malformed: the caller then drops the
 * connection. Returns 0 or -1 with err.
 */
static int dispatch(agent *a, const wire_frame *f, sbx_err *err)
{
    achan *ch;
    achan_fd *cf;

    if (!a->hello_seen) {
        wire_hello h;
        if (f->type != WIRE_HELLO)
            return sbx_errf(err, "expected HELLO, got %s", wire_type_name(f->type));
        if (wire_get_hello(f, &h, err) < 0)
            return -1;
        if (h.version != SYNC_PROTOCOL_VERSION)
            return sbx_errf(err, "the host speaks protocol %u, this agent %u", h.version,
                            SYNC_PROTOCOL_VERSION);
        a->hello_seen = true;
        return 0;
    }
    switch (f->type) {
    case WIRE_CONFIG: {
        wire_config c;
        if (wire_get_config(f, &c, err) < 0)
            return -1;
        agent_setup_tree(a, &c);
        wire_config_release(&c);
        return 0;
    }
    case WIRE_DELTA_BEGIN: {
        uint64_t seq, acked;
        if (!a->rx)
            return sbx_errf(err, "delta before CONFIG");
        if (wire_get_u64_pair(f, &seq, &acked, err) < 0)
            return -1;
        agent_journal_prune(a, acked);
        return apply_begin(a->rx, seq, acked, err);
    }
    case WIRE_ENTRY:
    case WIRE_CHUNK:
    case WIRE_HOLE:
    case WIRE_ENTRY_CANCEL:
    case WIRE_DELTA_END: {
        int r;
        if (!a->rx)
            return sbx_errf(err, "delta before CONFIG");
        r = apply_frame(a->rx, f, err);
        if (r < 0) {
            apply_abort(a->rx);
            return -1;
        }
        if (r == 1) {
            uint64_t seq, n;
            wire_get_u64_pair(f, &seq, &n, err);
            a->applied_push_seq = seq;
            a->dirty = true;
        }
        return 0;
    }
    case WIRE_RUN: {
        wire_run run;
        if (agent_find_chan(a, f->chan) || !f->chan)
            return sbx_errf(err, "RUN on channel %u, which is in use", f->chan);
        if (wire_get_run(f, &run, err) < 0)
            return -1;
        agent_spawn(a, f->chan, &run);
        wire_run_release(&run);
        return 0;
    }
    case WIRE_DATA:
        ch = agent_find_chan(a, f->chan);
        cf = agent_find_fd(ch, f->fd, false);
        if (!cf)
            return 0;   /* the command is gone: its input goes nowhere */
        if (cf->fd < 0)
            return 0;
        if (cf->in.len - cf->in_off + f->len > SYNC_INPUT_WINDOW)
            return sbx_errf(err, "input beyond the window on channel %u", f->chan);
        strbuf_add(&cf->in, f->payload, f->len);
        return 0;
    case WIRE_EOF:
        ch = agent_find_chan(a, f->chan);
        cf = agent_find_fd(ch, f->fd, false);
        /* not the pty's master (a terminal has no end of input); a pipe beside it does */
        if (cf && !(ch->tty && cf->child_fd == 0))
            cf->in_eof = true;
        return 0;
    case WIRE_CREDIT: {
        uint32_t n;
        if (wire_get_u32_one(f, &n, err) < 0)
            return -1;
        ch = agent_find_chan(a, f->chan);
        cf = agent_find_fd(ch, f->fd, true);
        if (cf) {
            uint64_t c = (uint64_t)cf->credit + n;
            cf->credit = c > SYNC_OUTPUT_WINDOW ? SYNC_OUTPUT_WINDOW : (uint32_t)c;
        }
        return 0;
    }
    case WIRE_SIGNAL: {
        uint32_t sig;
        if (wire_get_u32_one(f, &sig, err) < 0)
            return -1;
        ch = agent_find_chan(a, f->chan);
        if (ch && ch->pid > 0 && sig > 0 && sig < 65)
            kill(-ch->pid, (int)sig);
        /* The answer (whether or not the command was still there): the host learns the way
         * to the sandbox works, so that it need not wait for a command that handles the
         * signal quietly (bash -c 'trap "" INT; sleep 60') as for one on a dead way. */
        if (a->out_fd >= 0) {
            size_t at = wire_begin(&a->out.q, WIRE_SIGNALED, 0, f->chan);
            wire_u32(&a->out.q, sig);
            wire_end(&a->out.q, at);
        }
        return 0;
    }
    case WIRE_WINSIZE: {
        uint16_t rows, cols;
        if (wire_get_winsize(f, &rows, &cols, err) < 0)
            return -1;
        ch = agent_find_chan(a, f->chan);
        cf = agent_find_fd(ch, 1, true);
        if (ch && ch->tty && cf && cf->fd >= 0) {
            struct winsize ws = { .ws_row = rows, .ws_col = cols };
            ioctl(cf->fd, TIOCSWINSZ, &ws);
        }
        return 0;
    }
    case WIRE_CLOSE_OUTPUT:
        ch = agent_find_chan(a, f->chan);
        cf = agent_find_fd(ch, f->fd, true);
        if (cf && cf->fd >= 0) {
            agent_close_fd(cf);
            cf->drain_left = 0;
            cf->barrier_left = 0;
        }
        return 0;
    case WIRE_SYNC: {
        final fin = { .is_exit = false, .scan = a->tree != NULL };
        if (wire_get_u64_one(f, &fin.id, err) < 0)
            return -1;
        agent_sync_barrier(a, &fin);
        agent_release_barred(a);
        return 0;
    }
    case WIRE_PUT_FILE:
        put_file(a, f);
        return 0;
    case WIRE_PULL_CANCEL: {
        /* The host dropped this pull (Ctrl-C while it was written, over its quota): what is
         * left of it would only be read and thrown away there, and every EXIT and SYNC_DONE
         * queued behind it would wait for that. End it at once; a cancel for a delta that is
         * already complete (it crossed our DELTA_END) is nothing to do. */
        uint64_t seq;
        if (wire_get_u64_one(f, &seq, err) < 0)
            return -1;
        if (a->tx_active && a->tx.seq == seq) {
            delta_tx_cancel(&a->tx, &a->out.q);
            agent_pump(a);
        }
        return 0;
    }
    }
    return sbx_errf(err, "unexpected %s frame from the host", wire_type_name(f->type));
}

/* Reads what the host sent and dispatches every complete frame. At most 16 reads a turn, so
 * a host streaming a large push does not starve the commands' fds. */
static void read_host(agent *a)
{
    for (int rounds = 0; rounds < 16 && a->in_fd >= 0; rounds++) {
        ssize_t n = framebuf_fill(&a->in, a->in_fd, 256 * 1024);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                drop_connection(a);
            return;
        }
        if (n == 0) {
            drop_connection(a);
            return;
        }
        while (a->in_fd >= 0) {
            wire_frame f;
            sbx_err err;
            int r = wire_parse((const uint8_t *)framebuf_data(&a->in), framebuf_len(&a->in), &f,
                               &err);
            if (r == 0)
                break;
            /* Taken before it is handled (its bytes stay put until the compaction below),
             * so that a handler that drops the connection leaves the buffer consistent. */
            if (r > 0)
                framebuf_consume(&a->in, WIRE_HEADER + f.len);
            if (r < 0 || dispatch(a, &f, &err) < 0) {
                fprintf(stderr, "sbx-agent: protocol error from the host: %s\n", err.msg);
                drop_connection(a);
                return;
            }
        }
        framebuf_in_compact(&a->in);
    }
}

/* Writes buffered frames until the stream would block; an error drops the host. */
static void write_host(agent *a)
{
    if (a->out_fd >= 0 && framebuf_write(&a->out, a->out_fd) < 0)
        drop_connection(a);
}

/* ---- the loop ------------------------------------------------------------------------------ */

/* What one poll() waits for: the agent's own fds first (signals, the listening socket, the
 * host stream, inotify), then from `base` on the channels' fds, with refs[i - base] saying
 * whose each one is. The arrays are kept across turns. */
typedef struct pollref {
    achan *ch;
    achan_fd *f;
} pollref;

typedef struct pollset {
    struct pollfd *pfd;
    pollref *refs;
    size_t apfd, arefs;
    size_t n, base;
} pollset;

/* A new host on the --listen socket takes over from the current one (attach() drops it). */
static int accept_host(agent *a)
{
    int fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return -1;
    {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        /* Only the agent's own user (or root) may drive it. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid != 0 &&
            cred.uid != getuid()) {
            close(fd);
            return -1;
        }
    }
    attach(a, fd, fd);
    return 0;
}

/*
 * The channel rules of one turn, as poll events. An output fd is read only while the host
 * can take it: the channel has credit (the host's window), our buffer to the host is under
 * OUT_HIGH, and, after the exit, the drain still wants bytes; output nobody will receive (a
 * channel done or orphaned, or no host) is read and dropped at once, so the writer never
 * blocks on us. An input fd waits for POLLOUT while bytes for the child are queued; once
 * they are written and the host sent EOF, it is closed (the child sees end of file).
 */
static void poll_channels(agent *a, pollset *ps)
{
    for (size_t i = 0; i < a->nchans; i++) {
        achan *ch = a->chans[i];
        bool discard = ch->state == CH_DONE || ch->orphan || a->out_fd < 0;
        for (size_t k = 0; k < ch->nfds; k++) {
            achan_fd *f = &ch->fds[k];
            short ev = 0;
            if (f->fd < 0)
                continue;
            if (f->out) {
                if (discard || (f->credit && framebuf_pending(&a->out) < OUT_HIGH &&
                                (ch->state != CH_DRAINING || f->drain_left)))
                    ev = POLLIN;
            } else if (f->in.len) {
                ev = POLLOUT;
            } else if (f->in_eof) {
                agent_close_fd(f);
                continue;
            }
            if (!ev)
                continue;
            ps->refs[ps->n - ps->base] = (pollref){ ch, f };
            ps->pfd[ps->n++] = (struct pollfd){ .fd = f->fd, .events = ev };
        }
    }
}

/* Fills ps for this turn. */
static void build_pollset(agent *a, pollset *ps)
{
    ps->n = 0;
    XGROW(ps->pfd, ps->apfd, 8 + a->nchans * (WIRE_MAX_FDS + 2));
    XGROW(ps->refs, ps->arefs, 8 + a->nchans * (WIRE_MAX_FDS + 2));
    ps->pfd[ps->n++] = (struct pollfd){ .fd = sig_pipe[0], .events = POLLIN };
    if (a->listen_fd >= 0)
        ps->pfd[ps->n++] = (struct pollfd){ .fd = a->listen_fd, .events = POLLIN };
    if (a->fsm_fd >= 0)
        ps->pfd[ps->n++] = (struct pollfd){ .fd = a->fsm_fd, .events = POLLIN };
    if (a->in_fd >= 0)
        ps->pfd[ps->n++] = (struct pollfd){ .fd = a->in_fd, .events = POLLIN };
    if (agent_host_wants_write(a))
        ps->pfd[ps->n++] = (struct pollfd){ .fd = a->out_fd, .events = POLLOUT };
    if (a->tree && mf_watch_fd(a->tree) >= 0)
        ps->pfd[ps->n++] = (struct pollfd){ .fd = mf_watch_fd(a->tree), .events = POLLIN };
    if (a->o->notice_fd > 0)
        ps->pfd[ps->n++] = (struct pollfd){ .fd = a->o->notice_fd, .events = POLLIN };
    ps->base = ps->n;
    poll_channels(a, ps);
}

/* The longest poll() sleeps while a command runs (poll_timeout says why). */
#define AGENT_REAP_SLEEP_MS 1000

/* How long this turn's poll() may sleep (-1: until an event), or -2 when a --listen agent
 * has been without a host for its idle timeout (it exits). The bounds: the idle timeout,
 * the next state save while dirty, and the earliest drain deadline of an exited command. */
static int poll_timeout(agent *a)
{
    int timeout = -1;
    if (a->o->listen_path && a->in_fd < 0 && a->o->idle_timeout > 0) {
        int64_t left = a->idle_since + (int64_t)a->o->idle_timeout * 1000000000 -
                       mf_now_ns();
        if (left <= 0)
            return -2;
        timeout = (int)(left / 1000000) + 1;
    }
    if (a->dirty && a->o->state_file && (timeout < 0 || timeout > 5000))
        timeout = 5000;
    /* While a command runs, a bounded sleep: gVisor under load has been seen to lose the
     * SIGCHLD of a child that exited (the self-pipe never got its byte), and the command
     * then waited for whatever event came next; in a session that is otherwise quiet,
     * none came (tests/sync/stress.t: the last stdin command of a client, 60 s). The reap
     * runs every turn, so the turn after this sleep finds the exit. (It was masked by the
     * state file's 5 s save while the agent had one.) */
    for (size_t i = 0; i < a->nchans; i++)
        if (a->chans[i]->state == CH_RUNNING && a->chans[i]->pid > 0 &&
            (timeout < 0 || timeout > AGENT_REAP_SLEEP_MS)) {
            timeout = AGENT_REAP_SLEEP_MS;
            break;
        }
    for (size_t i = 0; i < a->nchans; i++) {
        /* an exited command's outputs, read until a deadline (see chan_exited) */
        achan *ch = a->chans[i];
        for (size_t k = 0; ch->state == CH_DRAINING && k < ch->nfds; k++) {
            achan_fd *f = &ch->fds[k];
            if (f->out && f->drain_left && f->fd >= 0) {
                int64_t ms = (f->drain_until - mf_now_ns()) / 1000000 + 1;
                if (ms < 1)
                    ms = 1;
                if (timeout < 0 || timeout > ms)
                    timeout = (int)ms;
            }
        }
    }
    return timeout;
}

/* Acts on what poll() reported: the agent's own fds, then the channels'. */
static void handle_events(agent *a, pollset *ps)
{
    struct pollfd *pfd = ps->pfd;
    for (size_t i = 1; i < ps->base; i++) {
        if (!pfd[i].revents)
            continue;
        if (pfd[i].fd == a->listen_fd)
            accept_host(a);
        else if (pfd[i].fd == a->fsm_fd && a->fsm_fd >= 0)
            agent_fsmonitor_serve(a);
        /* A socket is both in_fd and out_fd, in two entries: tell them apart by what
         * each waited for (the loop's top writes anyway, but say what is meant). */
        else if (pfd[i].fd == a->in_fd && a->in_fd >= 0 && (pfd[i].events & POLLIN))
            read_host(a);
        else if (pfd[i].fd == a->out_fd && a->out_fd >= 0 && (pfd[i].events & POLLOUT))
            write_host(a);
        else if (a->tree && pfd[i].fd == mf_watch_fd(a->tree))
            mf_drain_events(a->tree);
        else if (pfd[i].fd == a->o->notice_fd)
            agent_net_notice(a);
    }
    for (size_t i = ps->base; i < ps->n; i++) {
        pollref *r = &ps->refs[i - ps->base];
        /* Handling an earlier entry may have closed this fd (f->fd is -1 then). */
        if (!pfd[i].revents || r->f->fd != pfd[i].fd)
            continue;
        if (r->f->out)
            agent_read_output(a, r->ch, r->f);
        else
            agent_write_input(a, r->ch, r->f);
    }
}

/*
 * The agent's one loop. Each turn: channels whose drain is complete queue their EXIT,
 * the writer encodes and writes what it can (see agent_pump()), then one poll() over
 * the host stream, the channels' fds and the agent's own; then signals (SIGTERM/SIGINT
 * end the loop, SIGCHLD reaps), the events, and a second reap so that an exit seen now
 * is drained without waiting for another event. Ends when the host goes away (stdio
 * mode), on SIGTERM or SIGINT, or after --idle-timeout without a host (--listen).
 */
static int event_loop(agent *a)
{
    pollset ps = { 0 };

    while (!a->quit) {
        int timeout;
        char sigs[64];
        ssize_t ns;

        agent_progress_channels(a);
        agent_pump(a);
        write_host(a);
        if (a->in_fd < 0 && !a->o->listen_path)
            break;

        build_pollset(a, &ps);
        timeout = poll_timeout(a);
        if (timeout == -2)
            break;
        if (poll(ps.pfd, (nfds_t)ps.n, timeout) < 0) {
            if (errno == EINTR)
                continue;
            perror("sbx-agent: poll");
            break;
        }
        agent_save_state(a, false);
        /* The self-pipe only when it has bytes (each system call costs 28-54 us under
         * gVisor). The reaps stay every turn: made to wait for the pipe's 'c' instead, commands
         * under parallel load under runsc were seen never reaped (tests/sync/stress.t). */
        if (ps.pfd[0].revents)
            while ((ns = read(sig_pipe[0], sigs, sizeof(sigs))) > 0)
                for (ssize_t i = 0; i < ns; i++)
                    if (sigs[i] == 't')
                        a->quit = true;
        agent_reap(a);
        handle_events(a, &ps);
        /* An exited command's drain may be complete without any more events. */
        agent_reap(a);
        agent_release_barred(a);
    }
    free(ps.pfd);
    free(ps.refs);
    agent_save_state(a, true);
    return 0;
}

/* The agent before any host: the pairing from the state file (without its tree, which waits
 * for the CONFIG that says which roots), the signal handlers, and the subreaper bit. */
static void agent_init(agent *a, const agent_opts *o)
{
    struct sigaction sa;
    memset(a, 0, sizeof(*a));
    a->o = o;
    a->in_fd = a->out_fd = a->listen_fd = -1;
    a->fsm_fd = o->fsmonitor_path ? o->fsmonitor_fd : -1;
    fsm_init(&a->fsm, agent_fsm_instance());
    framebuf_in_init(&a->in);
    framebuf_out_init(&a->out);
    a->idle_since = mf_now_ns();
    if (o->state_file) {
        bool ok;
        mf_peek(o->state_file, &a->pair_id, &a->applied_push_seq, &a->pull_seq, &ok);
        if (!ok)
            a->pair_id = a->applied_push_seq = a->pull_seq = 0;
    }
    agent_spawn_init();
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        perror("sbx-agent: pipe");
        exit(1);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    /* Orphans of our commands come to us, and we reap them (we may be pid 1 anyway). */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

/* Frees everything agent_init() and the loop made (the processes keep running). */
static void agent_release(agent *a)
{
    drop_connection(a);
    while (a->nchans)
        agent_free_chan_at(a, 0);
    free(a->chans);
    if (a->tx_active)
        delta_tx_release(&a->tx);
    apply_free(a->rx);
    mf_free(a->tree);
    fsm_release(&a->fsm);
    if (a->fsm_fd >= 0) {
        close(a->fsm_fd);
        unlink(a->o->fsmonitor_path);
    }
    agent_journal_prune(a, UINT64_MAX);
    free(a->journal);
    free(a->finals);
    free(a->barred);
    free(a->sending);
    framebuf_in_release(&a->in);
    framebuf_out_release(&a->out);
}

int agent_serve_stdio(const agent_opts *o)
{
    agent a;
    int in, out;
    agent_init(&a, o);
    /* The protocol owns 0 and 1; commands never inherit them (they get their own fds). */
    in = fcntl(0, F_DUPFD_CLOEXEC, 3);
    out = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (in < 0 || out < 0) {
        perror("sbx-agent: stdio");
        return 1;
    }
    {
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            dup2(nul, 1);
            if (nul > 2)
                close(nul);
        }
    }
    attach(&a, in, out);
    event_loop(&a);
    agent_release(&a);
    return 0;
}

int agent_listen_socket(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd;

    if (strlen(path) >= sizeof(sun.sun_path)) {
        fprintf(stderr, "sbx-agent: socket path too long: %s\n", path);
        return -1;
    }
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, 4) < 0) {
        fprintf(stderr, "sbx-agent: cannot listen on %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    chmod(path, 0600);
    set_nonblock(fd, true);
    return fd;
}

int agent_serve_listen(const agent_opts *o)
{
    agent a;

    agent_init(&a, o);
    a.listen_fd = o->listen_fd;
    event_loop(&a);
    close(o->listen_fd);
    unlink(o->listen_path);
    agent_release(&a);
    return 0;
}

/* Relays stdin to fd and fd to stdout until fd ends (or stdout goes): the bridge of
 * --connect, and of the pod's keeper (agent_pod.c). Stdin's end is passed on as a
 * half-close, so the agent sees the host's EOF. */
int agent_bridge_fd(int fd)
{
    bool in_open = true;
    char buf[65536];

    for (;;) {
        struct pollfd p[2] = { { .fd = in_open ? 0 : -1, .events = POLLIN },
                               { .fd = fd, .events = POLLIN } };
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (p[0].revents) {
            ssize_t n = read(0, buf, sizeof(buf));
            if (n <= 0) {
                in_open = false;
                shutdown(fd, SHUT_WR);
            } else if (write_full(fd, buf, (size_t)n) < 0) {
                return 1;
            }
        }
        if (p[1].revents) {
            ssize_t n = read(fd, buf, sizeof(buf));
            if (n <= 0)
                return 0;
            if (write_full(1, buf, (size_t)n) < 0)
                return 1;
        }
    }
}

int agent_bridge(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    signal(SIGPIPE, SIG_IGN);
    if (strlen(path) >= sizeof(sun.sun_path)) {
        fprintf(stderr, "sbx-agent: socket path too long: %s\n", path);
        return 1;
    }
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        fprintf(stderr, "sbx-agent: cannot connect to %s: %s\n", path, strerror(errno));
        return 1;
    }
    return agent_bridge_fd(fd);
}
