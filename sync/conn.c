/* The host's end of the agent protocol: one sync_conn's stream, its push and pull rounds,
 * the frames from the agent, the handshake and poll integration; see conn.h (the API),
 * conn_int.h (how the files share it) and PROTOCOL.md. */
#include "sync/conn_int.h"
#include "sync/rcfile.h"

/* ---- sync_conn --------------------------------------------------------------------------- */

/*
 * The failure path. Anything that ends the stream (a read or write error, EOF, a malformed
 * or unexpected frame, a window overrun: the agent is not trusted) calls mark_failed(),
 * once; later calls are ignored, so the first cause is the one reported. It
 *   - sets c->dead: from then on nothing is read, written or dispatched; every request
 *     fails (-1; with an sbx_err, "the connection to sbx-agent is closed": conn_dead_err()),
 *     and sync_conn_handle_events() returns -1;
 *   - aborts a pull being applied (its stage is removed: the host tree stays as it was
 *     before that delta) and drops the push being sent; a push whose scan is still running
 *     (mark_failed() called from its progress callback) is cleaned up by start_push() once
 *     the scan returns, since the manifest and the delta are in use until then;
 *   - reports the message through ops->error.
 * It exits nothing and frees nothing: the caller sees the -1, frees the sync_conn and may
 * open a new one on the same sync_host, whose manifest resumes the pairing (deltas lost in
 * flight are sent again, see PROTOCOL.md).
 */
static void mark_failed(sync_conn *c, const char *fmt, ...) SBX_PRINTF(2, 3);
static void mark_failed(sync_conn *c, const char *fmt, ...)
{
    va_list ap;
    strbuf msg = STRBUF_INIT;
    if (c->dead)
        return;
    c->dead = true;
    va_start(ap, fmt);
    strbuf_vaddf(&msg, fmt, ap);
    va_end(ap);
    /* During a push's scan the manifest and the delta are in use: start_push() cleans up
     * when the scan returns. */
    if (!(c->tx_active && c->tx.open)) {
        if (c->rx && apply_active(c->rx))
            apply_abort(c->rx);
        if (c->tx_active) {
            delta_tx_release(&c->tx);
            c->tx_active = false;
        }
    }
    if (c->ops && c->ops->error)
        c->ops->error(c->ctx, msg.buf);
    strbuf_release(&msg);
}

/* The manifest's and the appliers' warnings, to the caller's warning callback. */
static void warn_cb(void *ctx, const char *msg)
{
    sync_conn *c = ctx;
    if (c->ops && c->ops->warning)
        c->ops->warning(c->ctx, msg);
}

/* The channel with this id, and its index in c->chans when idx is given; NULL when none. */
conn_chan *conn_find_chan(sync_conn *c, uint32_t id, size_t *idx)
{
    for (size_t i = 0; i < c->nchans; i++) {
        if (c->chans[i]->id == id) {
            if (idx)
                *idx = i;
            return c->chans[i];
        }
    }
    return NULL;
}

/* ch's entry for the child's fd (ch may be NULL), or NULL. */
conn_fd *conn_find_fd(conn_chan *ch, unsigned fd)
{
    for (size_t i = 0; ch && i < ch->nfds; i++)
        if (ch->fds[i].fd == fd)
            return &ch->fds[i];
    return NULL;
}

/* Forgets a channel (its EXIT came); the last one takes its place. */
static void free_chan(sync_conn *c, size_t idx)
{
    conn_chan *ch = c->chans[idx];
    strbuf_release(&ch->pending);
    free(ch);
    c->chans[idx] = c->chans[--c->nchans];
}

/* A frame for an existing channel: straight out once its RUN went, else after the RUN. */
strbuf *conn_chan_out(sync_conn *c, conn_chan *ch)
{
    return ch->run_sent ? &c->out.q : &ch->pending;
}

/*
 * The queue: RUN, SYNC and PUT_FILE requests become items that go out in order, each after
 * the push it asked for (it->push: scan the host tree and send its delta first, so the
 * sandbox sees the host's changes before the command starts). A channel's other frames
 * (input, signals) wait in ch->pending until its RUN is out (conn_chan_out()).
 */
void conn_queue_item(sync_conn *c, conn_item *it)
{
    it->next = NULL;
    if (c->tail)
        c->tail->next = it;
    else
        c->head = it;
    c->tail = it;
}

/* Frees an item (sent, or never to be). */
void conn_free_item(conn_item *it)
{
    strbuf_release(&it->frame);
    free(it);
}

static void flush_out(sync_conn *c);

/* While the scan runs: send what it found so far, so the agent writes as we walk. */
static void push_progress(void *ctx)
{
    sync_conn *c = ctx;
    if (c->dead)
        return;
    if (framebuf_pending(&c->out) < OUT_HIGH)
        delta_tx_fill(&c->tx, &c->out.q, c->out.off + OUT_HIGH);
    flush_out(c);
}

/* Starts the push at the head of the queue: scans the host tree into a delta, streaming it
 * as the scan goes. */
static int start_push(sync_conn *c)
{
    mf_delta d = { 0 };
    bool full, dispatching = c->in_dispatch;
    sbx_err err;
    int64_t t0 = (int64_t)now_ns();
    sync_host *h = c->h;
    uint64_t seq = ++h->push_seq;
    int ret;

    delta_tx_init(&c->tx, h->tree, &d, seq, h->pull_seq, true, warn_cb, c);
    c->tx_active = true;
    c->tx.open = true;
    c->tx.d.progress = push_progress;
    c->tx.d.progress_ctx = c;
    /* Nothing from the agent is read (or applied to the manifest) during the scan. */
    c->in_dispatch = true;
    ret = mf_scan(h->tree, &c->tx.d, &full, warn_cb, c, &err);
    c->in_dispatch = dispatching;
    c->tx.open = false;
    c->tx.d.progress = NULL;
    if (ret < 0)
        mark_failed(c, "cannot scan the host tree: %s", err.msg);
    if (c->dead) {
        /* What mark_failed() left for after the scan. */
        if (c->rx && apply_active(c->rx))
            apply_abort(c->rx);
        delta_tx_release(&c->tx);
        c->tx_active = false;
        return -1;
    }
    for (size_t i = 0; i < c->tx.d.n; i++)
        mf_pathmap_set(c->inflight, c->tx.d.ops[i].root, c->tx.d.ops[i].path,
                       c->tx.d.ops[i].path_len, seq);
    c->stats.pushes++;
    c->stats.push_entries += c->tx.d.n;
    c->stats.push_bytes += c->tx.d.bytes;
    c->stats.full_scans += full;
    if (c->tx.d.n)
        h->dirty = true;
    c->stats.last_push_ns = (uint64_t)((int64_t)now_ns() - t0);
    return 0;
}

/* Fills the output buffer: pushes in progress, then the queued items. */
static void pump(sync_conn *c)
{
    while (!c->dead && framebuf_pending(&c->out) < OUT_LOW) {
        conn_item *it = c->head;
        if (c->tx_active) {
            int64_t t0 = (int64_t)now_ns();
            bool done = delta_tx_fill(&c->tx, &c->out.q, c->out.off + OUT_HIGH);
            c->stats.last_push_ns += (uint64_t)((int64_t)now_ns() - t0);
            if (!done)
                continue;
            delta_tx_release(&c->tx);
            c->tx_active = false;
        } else if (it && it->push) {
            it->push = false;
            if (start_push(c) < 0)
                return;
            continue;
        }
        if (!it)
            break;
        c->head = it->next;
        if (!c->head)
            c->tail = NULL;
        strbuf_add(&c->out.q, it->frame.buf, it->frame.len);
        if (it->kind == ITEM_RUN) {
            conn_chan *ch = conn_find_chan(c, it->chan, NULL);
            if (ch) {
                ch->run_sent = true;
                strbuf_add(&c->out.q, ch->pending.buf, ch->pending.len);
                strbuf_release(&ch->pending);
            }
        }
        conn_free_item(it);
    }
}

static void read_input(sync_conn *c);

/* Writes buffered frames until the stream would block; any other error fails the
 * connection. */
static void flush_out(sync_conn *c)
{
    if (!c->dead && framebuf_write(&c->out, c->wfd) < 0) {
        int e = errno;
        /* What the agent said before it went away explains it better. */
        if (!c->in_dispatch)
            read_input(c);
        mark_failed(c, "lost the connection to sbx-agent (write: %s)", strerror(e));
    }
}

/* Outside callbacks, push what is queued as far as the pipe takes it now. */
void conn_kick(sync_conn *c)
{
    if (c->in_dispatch || c->dead)
        return;
    pump(c);
    flush_out(c);
}

/* The error of a request made after the connection failed (see mark_failed()). */
int conn_dead_err(sync_conn *c, sbx_err *err)
{
    return sbx_errf(err, "the connection to sbx-agent is closed");
    (void)c;
}

/* ---- frames from the agent ----------------------------------------------------------------- */

/* Returns output credit for what the caller consumed on f: in batches of CREDIT_BATCH, or
 * all of it when forced, so that the agent's window reopens without a frame per read. */
void conn_send_credit(sync_conn *c, conn_chan *ch, conn_fd *f, bool force)
{
    if (!f->unacked || (!force && f->unacked < CREDIT_BATCH))
        return;
    {
        size_t at = wire_begin(conn_chan_out(c, ch), WIRE_CREDIT, f->fd, ch->id);
        wire_u32(conn_chan_out(c, ch), f->unacked);
        wire_end(conn_chan_out(c, ch), at);
    }
    f->window += f->unacked;
    f->unacked = 0;
}

/* DATA: a command's output, within the window we gave the agent (more is a protocol error:
 * our memory is bounded by the windows). Passed to the output callback unless the caller
 * closed that output; credited back at once in auto_credit mode, else by the caller. */
static void on_data(sync_conn *c, const wire_frame *f)
{
    conn_chan *ch = conn_find_chan(c, f->chan, NULL);
    conn_fd *cf = conn_find_fd(ch, f->fd);
    if (!cf || !cf->out)
        return mark_failed(c, "sbx-agent sent output for an unknown channel %u fd %u", f->chan,
                           f->fd);
    if (f->len > cf->window)
        return mark_failed(c, "sbx-agent sent %u bytes of output on channel %u fd %u beyond its "
                           "%u-byte window", f->len, f->chan, f->fd, cf->window);
    cf->window -= f->len;
    if (cf->closed || cf->eof_seen)
        return;
    if (c->ops && c->ops->output && f->len)
        c->ops->output(c->ctx, ch->id, cf->fd, f->payload, f->len);
    /* The callback may have closed the fd or freed nothing (it cannot free the conn). */
    ch = conn_find_chan(c, f->chan, NULL);
    cf = conn_find_fd(ch, f->fd);
    if (ch && cf && ch->auto_credit) {
        cf->unacked += f->len;
        conn_send_credit(c, ch, cf, false);
    }
}

/* EXIT: a command ended. It comes after its round's pull, which is applied by now (an EXIT
 * inside a delta is a protocol error); the status carries that pull's refusal, if any. The
 * channel is forgotten before the exit callback, which may start a new one on the id. */
_Static_assert((int)SYNC_FULL_CODE == (int)WIRE_FULL_CODE && (int)SYNC_FULL_TMP == (int)WIRE_FULL_TMP &&
               (int)SYNC_FULL_HOME == (int)WIRE_FULL_HOME, "the full bits pass through as they are");

static void on_exit_frame(sync_conn *c, const wire_frame *f)
{
    size_t idx;
    conn_chan *ch = conn_find_chan(c, f->chan, &idx);
    wire_exit x;
    sbx_err err;
    sync_exit_status st;

    if (!ch || !ch->run_sent)
        return mark_failed(c, "sbx-agent sent EXIT for an unknown channel %u", f->chan);
    if (c->rx && apply_active(c->rx))
        return mark_failed(c, "sbx-agent sent EXIT in the middle of a delta");
    if (wire_get_exit(f, &x, &err) < 0)
        return mark_failed(c, "sbx-agent sent a malformed message: %s", err.msg);
    memset(&st, 0, sizeof(st));
    st.kind = (sync_exit_kind)x.kind;
    st.code = x.code;
    st.core_dumped = x.core;
    switch (st.kind) {
    case SYNC_EXITED: st.wait_status = (x.code & 0xff) << 8; break;
    case SYNC_SIGNALED: st.wait_status = (x.code & 0x7f) | (x.core ? 0x80 : 0); break;
    case SYNC_SPAWN_FAILED: st.wait_status = (x.code == ENOENT ? 127 : 126) << 8; break;
    }
    wire_sanitize(c->exit_msg, sizeof(c->exit_msg), x.message, x.message_len);
    st.message = c->exit_msg;
    st.full = x.full;
    if (c->pull_error[0]) {
        st.pull_error = c->pull_error;
        st.pull_error_quota = c->pull_error_quota;
    }
    free_chan(c, idx);
    if (c->ops && c->ops->exit)
        c->ops->exit(c->ctx, f->chan, &st);
    c->pull_error[0] = '\0';
}

/* A frame of a pull: DELTA_BEGIN (its sequence number must grow; it acknowledges our pushes,
 * whose paths stop being in flight), then entries through the checked, staged host applier,
 * which commits at DELTA_END. A bad delta fails the connection with nothing committed. */
static void on_delta_frame(sync_conn *c, const wire_frame *f)
{
    sbx_err err;
    int r;
    if (f->type == WIRE_DELTA_BEGIN) {
        uint64_t seq, acked;
        if (wire_get_u64_pair(f, &seq, &acked, &err) < 0)
            return mark_failed(c, "sbx-agent sent a malformed message: %s", err.msg);
        if (seq <= c->h->pull_seq)
            return mark_failed(c, "sbx-agent sent delta %llu after delta %llu",
                               (unsigned long long)seq, (unsigned long long)c->h->pull_seq);
        if (acked > c->h->push_seq)
            return mark_failed(c, "sbx-agent acknowledged push %llu, which was never sent",
                               (unsigned long long)acked);
        mf_pathmap_prune(c->inflight, acked);
        c->rx_seq = seq;
        c->rx_start = (int64_t)now_ns();
        apply_set_journal(c->rx, c->h->journal);
        if (apply_begin(c->rx, seq, acked, &err) < 0)
            return mark_failed(c, "sbx-agent sent a malformed message: %s", err.msg);
        return;
    }
    r = apply_frame(c->rx, f, &err);
    if (r < 0) {
        apply_abort(c->rx);
        return mark_failed(c, "sbx-agent sent a bad delta (%s); the host tree was left as it was "
                           "before that delta", err.msg);
    }
    if (r == 1) {
        uint64_t entries, bytes;
        sync_quota quota;
        const char *why = apply_refusal(c->rx, &quota);
        /* A refused delta is consumed all the same (its sequence number is acknowledged):
         * the agent does not send it again, so one over the quota does not come back with
         * every later command; its paths travel again when they change in the sandbox. */
        c->h->pull_seq = c->rx_seq;
        if (why) {
            snprintf(c->pull_error, sizeof(c->pull_error), "%s", why);
            c->pull_error_quota = quota;
            return;
        }
        apply_stats(c->rx, &entries, &bytes);
        /* A save that misses only a sequence number loses nothing (see PROTOCOL.md). */
        if (entries)
            c->h->dirty = true;
        c->stats.pulls++;
        c->stats.pull_entries += entries;
        c->stats.pull_bytes += bytes;
        c->stats.last_pull_ns = (uint64_t)((int64_t)now_ns() - c->rx_start);
    }
}

/* One frame from the agent, checked against the state it may come in (a delta's frames
 * only inside one, SYNC_DONE and EXIT only outside); anything else fails the connection. */
static void dispatch(sync_conn *c, const wire_frame *f)
{
    sbx_err err;
    bool in_delta = c->rx && apply_active(c->rx);

    switch (f->type) {
    case WIRE_DATA:
        on_data(c, f);
        return;
    case WIRE_EOF: {
        conn_chan *ch = conn_find_chan(c, f->chan, NULL);
        conn_fd *cf = conn_find_fd(ch, f->fd);
        if (!cf || !cf->out)
            return mark_failed(c, "sbx-agent sent EOF for an unknown channel %u fd %u", f->chan,
                               f->fd);
        if (f->len)
            return mark_failed(c, "sbx-agent sent a malformed EOF frame");
        if (!cf->eof_seen && !cf->closed) {
            cf->eof_seen = true;
            if (c->ops && c->ops->eof)
                c->ops->eof(c->ctx, f->chan, f->fd);
        }
        cf->eof_seen = true;
        return;
    }
    case WIRE_CREDIT: {
        conn_chan *ch = conn_find_chan(c, f->chan, NULL);
        conn_fd *cf = conn_find_fd(ch, f->fd);
        uint32_t n;
        if (!cf || cf->out)
            return mark_failed(c, "sbx-agent sent CREDIT for an unknown channel %u fd %u", f->chan,
                               f->fd);
        if (wire_get_u32_one(f, &n, &err) < 0)
            return mark_failed(c, "sbx-agent sent a malformed message: %s", err.msg);
        if ((uint64_t)cf->window + n > SYNC_INPUT_WINDOW)
            return mark_failed(c, "sbx-agent granted more input credit than its window");
        cf->window += n;
        if (cf->want_writable && cf->window && !cf->closed) {
            cf->want_writable = false;
            if (c->ops && c->ops->writable)
                c->ops->writable(c->ctx, f->chan, f->fd);
        }
        return;
    }
    case WIRE_DELTA_BEGIN:
        if (in_delta)
            return mark_failed(c, "sbx-agent started a delta inside a delta");
        on_delta_frame(c, f);
        return;
    case WIRE_ENTRY:
    case WIRE_CHUNK:
    case WIRE_HOLE:
    case WIRE_ENTRY_CANCEL:
    case WIRE_DELTA_END:
        if (!in_delta)
            return mark_failed(c, "sbx-agent sent %s outside a delta", wire_type_name(f->type));
        on_delta_frame(c, f);
        return;
    case WIRE_EXIT:
        on_exit_frame(c, f);
        return;
    case WIRE_SYNC_DONE: {
        uint64_t id;
        uint8_t full;
        if (in_delta)
            return mark_failed(c, "sbx-agent sent SYNC_DONE in the middle of a delta");
        if (wire_get_sync_done(f, &id, &full, &err) < 0)
            return mark_failed(c, "sbx-agent sent a malformed message: %s", err.msg);
        if (c->sync_waiting && id == c->sync_waiting)
            c->sync_done_seen = true;
        c->sync_full = full;
        if (c->ops && c->ops->sync_done)
            c->ops->sync_done(c->ctx, id);
        c->pull_error[0] = '\0';
        c->sync_full = 0;
        return;
    }
    case WIRE_SIGNALED: {
        /* The agent handled our SIGNAL. A channel already ended is not an error: the
         * command may have exited between the signal and its answer. */
        uint32_t sig;
        if (wire_get_u32_one(f, &sig, &err) < 0)
            return mark_failed(c, "sbx-agent sent a malformed message: %s", err.msg);
        if (conn_find_chan(c, f->chan, NULL) && c->ops && c->ops->signaled)
            c->ops->signaled(c->ctx, f->chan, (int)sig);
        return;
    }
    case WIRE_WARN: {
        char msg[SYNC_MAX_TEXT + 32];
        char text[SYNC_MAX_TEXT + 1];
        wire_sanitize(text, sizeof(text), f->payload, f->len);
        snprintf(msg, sizeof(msg), "sandbox: %s", text);
        if (c->ops && c->ops->warning)
            c->ops->warning(c->ctx, msg);
        return;
    }
    }
    mark_failed(c, "sbx-agent sent an unexpected %s frame", wire_type_name(f->type));
}

/* Parses and dispatches every complete frame in the input buffer, up to APPLY_BUDGET of
 * pull content per call: the rest waits (in_pending, and sync_conn_timeout() is 0). */
static void process_input(sync_conn *c)
{
    uint64_t work = 0;
    c->in_dispatch = true;
    c->in_pending = false;
    while (!c->dead) {
        wire_frame f;
        sbx_err err;
        int r = wire_parse((const uint8_t *)framebuf_data(&c->in), framebuf_len(&c->in), &f,
                           &err);
        if (r < 0) {
            mark_failed(c, "sbx-agent sent a malformed message: %s", err.msg);
            break;
        }
        if (r == 0)
            break;
        if (work >= APPLY_BUDGET) {
            c->in_pending = true;
            break;
        }
        framebuf_consume(&c->in, WIRE_HEADER + f.len);
        if (f.type == WIRE_CHUNK || f.type == WIRE_ENTRY) {
            work += f.len;
        } else if (f.type == WIRE_HOLE) {
            uint64_t n;
            if (wire_get_hole(&f, &n, &err) == 0)
                work += n / 4;   /* hashing zeros costs less than writing data */
        }
        dispatch(c, &f);
    }
    c->in_dispatch = false;
    framebuf_in_compact(&c->in);
}

/* Reads what the agent sent and processes it; at most 16 reads a call, and none while the
 * apply budget left frames waiting. EOF fails the connection, naming a half-sent delta. */
static void read_input(sync_conn *c)
{
    for (int rounds = 0; rounds < 16 && !c->dead && !c->in_pending; rounds++) {
        ssize_t n = framebuf_fill(&c->in, c->rfd, 256 * 1024);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                mark_failed(c, "lost the connection to sbx-agent (read: %s)",
                            strerror(errno));
            return;
        }
        if (n == 0) {
            if (c->rx && apply_active(c->rx))
                mark_failed(c, "sbx-agent closed the connection in the middle of a delta; the host "
                            "tree was left as it was before that delta");
            else
                mark_failed(c, "sbx-agent closed the connection (the sandbox may have stopped)");
            return;
        }
        process_input(c);
    }
}

/* ---- opening -------------------------------------------------------------------------------- */

/*
 * The handshake: writes our HELLO and waits, at most timeout_ms, for the agent's. Whatever
 * comes instead is quoted in the error (sanitized, at most 160 bytes): a sandbox without
 * sbx-agent answers with a shell's error, and that says what is wrong. A different protocol
 * version is refused. Bytes after the HELLO stay in the buffer for process_input().
 */
static int wait_hello(sync_conn *c, int timeout_ms, wire_hello *hello, sbx_err *err)
{
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000;
    for (;;) {
        wire_frame f;
        int r;
        struct pollfd pfd[2];
        int np = 1;
        int64_t left;

        flush_out(c);
        r = wire_parse((const uint8_t *)c->in.buf.buf, c->in.buf.len, &f, err);
        if (r < 0 || (r == 1 && f.type != WIRE_HELLO)) {
            char shown[200];
            wire_sanitize(shown, sizeof(shown), c->in.buf.buf,
                          c->in.buf.len > 160 ? 160 : c->in.buf.len);
            return sbx_errf(err, "the sandbox did not answer with the sbx-agent protocol "
                            "(it said: \"%s\"); is sbx-agent installed there?", shown);
        }
        if (r == 1) {
            if (wire_get_hello(&f, hello, err) < 0)
                return sbx_err_prefix(err, "bad hello from sbx-agent");
            if (hello->version != SYNC_PROTOCOL_VERSION)
                return sbx_errf(err, "sbx-agent speaks protocol version %u, this sbxsh "
                                "speaks %u: install the sbx-agent built with this sbxsh",
                                hello->version, SYNC_PROTOCOL_VERSION);
            framebuf_consume(&c->in, WIRE_HEADER + f.len);
            return 0;
        }
        left = (int64_t)deadline - (int64_t)now_ns();
        if (left <= 0)
            return sbx_errf(err, "sbx-agent did not answer within %d ms", timeout_ms);
        pfd[0].fd = c->rfd;
        pfd[0].events = POLLIN;
        if (framebuf_pending(&c->out)) {
            if (c->wfd == c->rfd) {
                pfd[0].events |= POLLOUT;
            } else {
                pfd[1].fd = c->wfd;
                pfd[1].events = POLLOUT;
                np = 2;
            }
        }
        if (poll(pfd, (nfds_t)np, (int)(left / 1000000) + 1) < 0 && errno != EINTR)
            return sbx_errno(err, "poll");
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = framebuf_fill(&c->in, c->rfd, 65536);
            if (n == 0) {
                char shown[200];
                wire_sanitize(shown, sizeof(shown), c->in.buf.buf,
                              c->in.buf.len > 160 ? 160 : c->in.buf.len);
                return sbx_errf(err, "sbx-agent exited before answering%s%s%s",
                                c->in.buf.len ? " (it said: \"" : "", shown,
                                c->in.buf.len ? "\")" : "");
            }
            if (n < 0 && errno != EAGAIN)
                return sbx_errno(err, "reading from sbx-agent");
        }
        if (c->dead)
            return sbx_errf(err, "cannot write to sbx-agent");
    }
}

void conn_put_file_frame(strbuf *out, const char *path, unsigned mode, const void *data,
                         size_t len)
{
    size_t at = wire_begin(out, WIRE_PUT_FILE, 0, 0);
    wire_u32(out, mode & 0777);
    wire_cstr(out, path);
    strbuf_add(out, data, len);
    wire_end(out, at);
}

/* Puts the filtered user git config into the sandbox when it is new to this connection or
 * changed on the host since (someone set their identity after the session started). */
void conn_refresh_user_gitconfig(sync_conn *c)
{
    sync_host *h = c->h;
    struct stat st;
    char *text = NULL;
    size_t len = 0;
    strbuf filtered = STRBUF_INIT;
    sbx_err ignored;

    if (!h->user_gitconfig || conn_path_synced(h, h->sandbox_gitconfig))
        return;   /* none, or synced as it is (a home directory named as a code directory) */
    if (stat(h->user_gitconfig, &st) < 0)
        memset(&st, 0, sizeof(st));
    if (h->gitconfig_put && st.st_dev == h->gitconfig_seen.st_dev &&
        st.st_ino == h->gitconfig_seen.st_ino && st.st_size == h->gitconfig_seen.st_size &&
        st.st_mtim.tv_sec == h->gitconfig_seen.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == h->gitconfig_seen.st_mtim.tv_nsec)
        return;
    h->gitconfig_seen = st;
    h->gitconfig_put = true;
    if (st.st_ino && read_file(h->user_gitconfig, GITCONFIG_MAX, &text, &len, &ignored) == 0)
        gitconfig_filter_user(text, len, &filtered);
    free(text);
    /* git in the sandbox asks sbx-agent what changed. Only this file, the sandbox's global
     * config, says so: it is never synced (conn_path_synced above), the host's own config
     * and the repository's .git/config (which never comes back, gitpolicy.c) never do, so
     * the host's git never runs the hook. Last, so that it wins over the user's lines.
     * preloadIndex off: git's preload starts a thread per 500 index entries (20 at 10,000)
     * to lstat() in parallel, and with the hook's list nearly every entry is already valid,
     * so the threads do nothing but cost their creation (under gVisor, about a sixth of a
     * `git status`; bench/fsmonitor.sh). When the hook says everything, git lstat()s on one
     * thread: slower then, once. */
    if (h->git_fsmonitor)
        strbuf_addf(&filtered, "\n[core]\n\tfsmonitor = \"%s\"\n\tuntrackedCache = true\n"
                    "\tpreloadIndex = false\n", h->git_fsmonitor);
    /* A missing or unparsable file gives an empty config there too. */
    if (sync_conn_put_file(c, h->sandbox_gitconfig, 0644, filtered.buf, filtered.len,
                           &ignored) < 0 && c->ops && c->ops->warning)
        c->ops->warning(c->ctx, ignored.msg);
    strbuf_release(&filtered);
}

/* Whether the startup files read last time are all as they were (stat, following links as
 * the read did; a file that was missing and still is counts as unchanged). */
static bool rcfiles_unchanged(sync_host *h)
{
    for (size_t i = 0; i < h->rc_seen.n; i++) {
        struct stat st;
        char *p = xasprintf("%s/%s", h->user_home, h->rc_seen.v[i]);
        const struct stat *o = &h->rc_seen_st[i];
        if (stat(p, &st) < 0)
            memset(&st, 0, sizeof(st));
        free(p);
        if (st.st_dev != o->st_dev || st.st_ino != o->st_ino || st.st_size != o->st_size ||
            st.st_mtim.tv_sec != o->st_mtim.tv_sec || st.st_mtim.tv_nsec != o->st_mtim.tv_nsec ||
            st.st_ctim.tv_sec != o->st_ctim.tv_sec || st.st_ctim.tv_nsec != o->st_ctim.tv_nsec)
            return false;
    }
    return true;
}

/* Opens home-relative rel for reading when it is a regular file of at most RC_MAX_SIZE
 * bytes whose resolved path lies in the home directory (home_real), outside its credential
 * places: checked on the open fd, so what is read is what was checked (a symlink inside
 * the home directory, as dotfile managers make, is followed; one out of it is not). */
static int rc_open(int homefd, const char *home_real, const char *rel, struct stat *st)
{
    char link[64], real[PATH_MAX + 1];
    size_t hl = strlen(home_real);
    ssize_t n;
    int fd = openat(homefd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, real, sizeof(real) - 1);
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_size > (off_t)RC_MAX_SIZE ||
        n <= 0 || (size_t)n <= hl + 1 || memcmp(real, home_real, hl) || real[hl] != '/' ||
        !rc_path_allowed(real + hl + 1, (size_t)n - hl - 1)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Puts the user's startup files, filtered (sync/rcfile.h), into the sandbox's HOME when they
 * are new to this connection or one changed on the host since. Which files: RC_FILES, then
 * breadth first what they source in the home directory, RC_MAX_DEPTH levels down, at most
 * RC_MAX_FILES in all. A file put before and gone from the host now is put empty. */
void conn_refresh_user_rcfiles(sync_conn *c)
{
    sync_host *h = c->h;
    strvec todo = STRVEC_INIT, put = STRVEC_INIT;
    int *depth = NULL;
    size_t ndepth = 0;
    char home_real[PATH_MAX];
    int homefd;
    sbx_err ignored;

    if (!h->user_home || (h->rc_done && rcfiles_unchanged(h)))
        return;
    h->rc_done = true;
    strvec_clear(&h->rc_seen);
    free(h->rc_seen_st);
    h->rc_seen_st = NULL;
    homefd = open(h->user_home, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (homefd < 0 || !realpath(h->user_home, home_real)) {
        if (homefd >= 0)
            close(homefd);
        return;
    }
    for (size_t i = 0; RC_FILES[i]; i++) {
        strvec_push(&todo, RC_FILES[i]);
        XGROW(depth, ndepth, todo.n);
        depth[todo.n - 1] = 0;
    }
    for (size_t i = 0; i < todo.n && put.n < RC_MAX_FILES; i++) {
        const char *rel = todo.v[i];
        struct stat st;
        char *text = NULL, *dst;
        ssize_t got;
        strbuf filtered = STRBUF_INIT;
        int fd;

        h->rc_seen_st = xrealloc(h->rc_seen_st, (h->rc_seen.n + 1) * sizeof(struct stat));
        {
            char *p = xasprintf("%s/%s", h->user_home, rel);
            if (stat(p, &h->rc_seen_st[h->rc_seen.n]) < 0)
                memset(&h->rc_seen_st[h->rc_seen.n], 0, sizeof(struct stat));
            free(p);
        }
        strvec_push(&h->rc_seen, rel);
        dst = xasprintf("%s/%s", h->sandbox_home, rel);
        if (conn_path_synced(h, dst)) {
            /* synced as it is (a home directory named as a code directory, a sync path):
             * the sync owns it, a put would fight it */
            free(dst);
            continue;
        }
        free(dst);
        fd = rc_open(homefd, home_real, rel, &st);
        if (fd < 0)
            continue;
        text = xmalloc((size_t)st.st_size + 1);
        got = read_full(fd, text, (size_t)st.st_size);
        close(fd);
        if (got < 0) {
            free(text);
            continue;
        }
        if (depth[i] < RC_MAX_DEPTH) {
            strvec more = STRVEC_INIT;
            rc_sourced(text, (size_t)got, &more);
            for (size_t k = 0; k < more.n; k++) {
                bool dup = false;
                for (size_t j = 0; j < todo.n && !dup; j++)
                    dup = !strcmp(todo.v[j], more.v[k]);
                if (dup || todo.n >= 4 * RC_MAX_FILES)
                    continue;
                strvec_push(&todo, more.v[k]);
                XGROW(depth, ndepth, todo.n);
                depth[todo.n - 1] = depth[i] + 1;
            }
            strvec_clear(&more);
        }
        rc_filter(text, (size_t)got, &filtered);
        free(text);
        dst = xasprintf("%s/%s", h->sandbox_home, rel);
        if (sync_conn_put_file(c, dst, 0644, filtered.buf, filtered.len, &ignored) < 0 &&
            c->ops && c->ops->warning)
            c->ops->warning(c->ctx, ignored.msg);
        free(dst);
        strbuf_release(&filtered);
        strvec_push(&put, rel);
    }
    close(homefd);
    /* Put before, gone from the host now (or no longer read): empty in the sandbox too. */
    for (size_t i = 0; i < h->rc_put.n; i++) {
        bool still = false;
        for (size_t k = 0; k < put.n && !still; k++)
            still = !strcmp(put.v[k], h->rc_put.v[i]);
        if (!still) {
            char *dst = xasprintf("%s/%s", h->sandbox_home, h->rc_put.v[i]);
            sync_conn_put_file(c, dst, 0644, "", 0, &ignored);
            free(dst);
        }
    }
    strvec_clear(&h->rc_put);
    h->rc_put = put;
    strvec_clear(&todo);
    free(depth);
}

int sync_conn_open(sync_host *h, int rfd, int wfd, const sync_conn_ops *ops, void *ctx,
                   int timeout_ms, sync_conn **out, sbx_err *err)
{
    sync_conn *c = xcalloc(1, sizeof(*c));
    wire_hello mine = { .version = SYNC_PROTOCOL_VERSION, .pid = (uint32_t)getpid() };
    wire_hello theirs;
    wire_config cfg;
    bool resume;

    *out = NULL;
    c->h = h;
    c->rfd = rfd;
    c->wfd = wfd;
    c->ops = ops;
    c->ctx = ctx;
    framebuf_in_init(&c->in);
    framebuf_out_init(&c->out);
    set_nonblock(rfd, true);
    set_nonblock(wfd, true);
    /* Bigger pipe buffers: fewer wakeups when a whole tree goes through (not a socket). */
    fcntl(rfd, F_SETPIPE_SZ, 1 << 20);
    fcntl(wfd, F_SETPIPE_SZ, 1 << 20);
    wire_put_hello(&c->out.q, &mine);
    if (wait_hello(c, timeout_ms, &theirs, err) < 0) {
        c->ops = NULL;
        sync_conn_free(c);
        return -1;
    }
    c->info.protocol = theirs.version;
    c->info.pid = theirs.pid;
    wire_sanitize(c->info.about, sizeof(c->info.about), theirs.about, theirs.about_len);

    resume = h->pair_id && theirs.pair_id == h->pair_id && theirs.applied_push_seq >= h->push_seq;
    if (!resume) {
        if (getrandom(&h->pair_id, sizeof(h->pair_id), 0) != sizeof(h->pair_id))
            h->pair_id = now_ns() ^ ((uint64_t)getpid() << 32);
        h->pair_id |= 1;
        mf_clear(h->tree);
        h->push_seq = h->pull_seq = 0;
        h->dirty = true;
    } else if (theirs.applied_push_seq > h->push_seq) {
        /* Pushes the saved state does not know of: they get resent (the same content). */
        h->push_seq = theirs.applied_push_seq;
    }
    c->info.resumed = resume;
    memset(&cfg, 0, sizeof(cfg));
    cfg.pair_id = h->pair_id;
    cfg.reset = !resume;
    cfg.push_seq = h->push_seq;
    cfg.pull_seq = h->pull_seq;
    cfg.nroots = (uint32_t)h->nroots;
    cfg.roots = h->roots;
    cfg.nexcludes = (uint32_t)h->excludes.n;
    cfg.excludes = (const char **)h->excludes.v;
    cfg.exclude_lens = h->exclude_lens;
    wire_put_config(&c->out.q, &cfg);
    if (framebuf_pending(&c->out) > SYNC_MAX_FRAME) {
        sbx_errf(err, "the sync configuration is too large for one message");
        c->ops = NULL;
        sync_conn_free(c);
        return -1;
    }
    c->inflight = mf_pathmap_new();
    c->rx = apply_new(h->tree, APPLY_HOST, &h->limits, warn_cb, c);
    apply_set_inflight(c->rx, c->inflight);
    h->gitconfig_put = false;
    h->rc_done = false;
    strvec_clear(&h->rc_put);   /* a new sandbox, or a new agent: none put yet */
    h->conn = c;
    conn_refresh_user_gitconfig(c);
    conn_refresh_user_rcfiles(c);
    /* Whatever followed the hello (nothing, normally) is handled by the first event. */
    flush_out(c);
    if (c->dead) {
        sbx_errf(err, "cannot write to sbx-agent");
        c->ops = NULL;
        sync_conn_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void sync_conn_free(sync_conn *c)
{
    if (!c)
        return;
    if (c->h && c->h->conn == c)
        c->h->conn = NULL;
    if (c->rx && apply_active(c->rx))
        apply_abort(c->rx);
    apply_free(c->rx);
    if (c->tx_active)
        delta_tx_release(&c->tx);
    while (c->head) {
        conn_item *it = c->head;
        c->head = it->next;
        conn_free_item(it);
    }
    while (c->nchans)
        free_chan(c, 0);
    free(c->chans);
    mf_pathmap_free(c->inflight);
    framebuf_in_release(&c->in);
    framebuf_out_release(&c->out);
    free(c);
}

const sync_agent_info *sync_conn_agent(const sync_conn *c)
{
    return &c->info;
}

void sync_conn_stats_get(const sync_conn *c, sync_conn_stats *out)
{
    *out = c->stats;
}

/* Work for the writer: bytes buffered, a push being encoded, or queued items. */
static bool wants_write(const sync_conn *c)
{
    return framebuf_pending(&c->out) || c->tx_active || c->head;
}

size_t sync_conn_pollfds(sync_conn *c, struct pollfd *pfds, size_t max)
{
    size_t n = 0;
    int wfd = mf_watch_fd(c->h->tree);
    if (c->dead || !max)
        return 0;
    pfds[n].fd = c->rfd;
    pfds[n].events = POLLIN;
    pfds[n].revents = 0;
    if (wants_write(c)) {
        if (c->wfd == c->rfd) {
            pfds[n].events |= POLLOUT;
        } else if (n + 1 < max) {
            n++;
            pfds[n].fd = c->wfd;
            pfds[n].events = POLLOUT;
            pfds[n].revents = 0;
        }
    }
    n++;
    if (wfd >= 0 && n < max) {
        pfds[n].fd = wfd;
        pfds[n].events = POLLIN;
        pfds[n].revents = 0;
        n++;
    }
    return n;
}

int sync_conn_handle_events(sync_conn *c, const struct pollfd *pfds, size_t n)
{
    bool readable = false, writable = false, watch = false;
    int wfd = mf_watch_fd(c->h->tree);
    if (c->dead)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!pfds[i].revents)
            continue;
        if (pfds[i].fd == c->rfd && (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)))
            readable = true;
        if (pfds[i].fd == c->wfd && (pfds[i].revents & (POLLOUT | POLLERR | POLLHUP)))
            writable = true;
        if (wfd >= 0 && pfds[i].fd == wfd)
            watch = true;
    }
    if (watch)
        mf_drain_events(c->h->tree);
    if (c->in_pending)
        process_input(c);
    if (readable && !c->in_pending)
        read_input(c);
    if (!c->dead && (writable || wants_write(c))) {
        pump(c);
        flush_out(c);
    }
    return c->dead ? -1 : 0;
}

int sync_conn_timeout(const sync_conn *c)
{
    return c->in_pending && !c->dead ? 0 : -1;
}

