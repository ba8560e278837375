/* The requests a caller makes of a sync_conn: run a command, its input, EOF, signals,
 * window sizes, credits, a sync round, a file put into the sandbox; see conn.h. */
#include "sync/conn_int.h"

/* ---- requests ----------------------------------------------------------------------------- */

/* A RUN: checked here as the agent will check it (wire_get_run), so that a caller's
 * mistake is an error naming it rather than a frame the agent refuses, which ends the
 * whole stream. The refreshes first: the sandbox sees the person's current git config and
 * rc files when the command starts. The RUN is queued behind its push (it->push), so the
 * command sees the host's latest tree. */
int sync_conn_run(sync_conn *c, uint32_t chan, const sync_run_req *req, sbx_err *err)
{
    uint16_t fds[SYNC_MAX_FDS];
    uint8_t outs[SYNC_MAX_FDS];
    conn_chan *ch;
    conn_item *it;
    uint32_t flags = 0;

    if (c->dead)
        return conn_dead_err(c, err);
    conn_refresh_user_gitconfig(c);
    conn_refresh_user_rcfiles(c);
    if (!chan || conn_find_chan(c, chan, NULL))
        return sbx_errf(err, "channel %u is %s", chan, chan ? "in use" : "invalid");
    if (!req->exe || !*req->exe || !req->argv || !req->argv[0] || !req->cwd ||
        req->cwd[0] != '/')
        return sbx_errf(err, "a command needs a program, argv[0] and an absolute cwd");
    if (req->nfds > SYNC_MAX_FDS)
        return sbx_errf(err, "at most %d fds in a command's fd map", SYNC_MAX_FDS);
    for (size_t i = 0; i < req->nfds; i++) {
        if (req->fds[i].fd < 0 || req->fds[i].fd > SYNC_MAX_CHILD_FD)
            return sbx_errf(err, "fd %d out of range (0..%d)", req->fds[i].fd,
                            SYNC_MAX_CHILD_FD);
        bool out_before = false;
        for (size_t j = 0; j < i; j++) {
            if (req->fds[j].fd == req->fds[i].fd)
                return sbx_errf(err, "fd %d twice in a fd map", req->fds[i].fd);
            out_before |= req->fds[j].dir == SYNC_FD_OUT;
        }
        fds[i] = (uint16_t)req->fds[i].fd;
        switch (req->fds[i].dir) {
        case SYNC_FD_IN: outs[i] = WIRE_FD_IN; break;
        case SYNC_FD_OUT: outs[i] = WIRE_FD_OUT; break;
        case SYNC_FD_OUT_SHARED:
            if (!out_before)
                return sbx_errf(err, "fd %d shares the pipe of no output fd",
                                req->fds[i].fd);
            outs[i] = WIRE_FD_OUT_SHARED;
            break;
        default:
            return sbx_errf(err, "fd %d: unknown direction", req->fds[i].fd);
        }
    }
    if (req->tty)
        flags |= WIRE_RUN_TTY;
    if (!req->no_pull)
        flags |= WIRE_RUN_PULL;

    it = xcalloc(1, sizeof(*it));
    strbuf_init(&it->frame, 0);
    wire_put_run(&it->frame, chan, flags, req->rows ? req->rows : 24, req->cols ? req->cols : 80,
                 req->exe, req->cwd, req->argv, req->env, fds, outs, req->nfds);
    if (it->frame.len - WIRE_HEADER > SYNC_MAX_FRAME) {
        conn_free_item(it);
        return sbx_errf(err, "the command line and environment are too large (over "
                        "%u bytes)", SYNC_MAX_FRAME);
    }
    it->kind = ITEM_RUN;
    it->chan = chan;
    it->push = !req->no_push;

    ch = xcalloc(1, sizeof(*ch));
    ch->id = chan;
    ch->auto_credit = req->auto_credit;
    strbuf_init(&ch->pending, 0);
    for (size_t i = 0; i < req->nfds; i++) {
        if (outs[i] == WIRE_FD_OUT_SHARED)
            continue; /* its bytes come as its partner's */
        conn_fd *f = &ch->fds[ch->nfds++];
        f->fd = fds[i];
        f->out = outs[i];
        f->window = f->out ? SYNC_OUTPUT_WINDOW : SYNC_INPUT_WINDOW;
    }
    if (req->tty) {
        /* The terminal: fd 0 in, fd 1 out, whatever the map said about 0-2 (a pty has one
         * output, stderr included). */
        size_t k = 0;
        for (size_t i = 0; i < ch->nfds; i++)
            if (ch->fds[i].fd > 2)
                ch->fds[k++] = ch->fds[i];
        ch->nfds = k;
        ch->fds[ch->nfds++] = (conn_fd){ .fd = 0, .out = false, .window = SYNC_INPUT_WINDOW };
        ch->fds[ch->nfds++] = (conn_fd){ .fd = 1, .out = true, .window = SYNC_OUTPUT_WINDOW };
    }
    XGROW(c->chans, c->achans, c->nchans + 1);
    c->chans[c->nchans++] = ch;
    conn_queue_item(c, it);
    conn_kick(c);
    return 0;
}

/* The channel (in *chp, NULL when none) and its entry for the child's fd, or NULL. */
static conn_fd *lookup_fd(sync_conn *c, uint32_t chan, int fd, conn_chan **chp)
{
    conn_chan *ch = conn_find_chan(c, chan, NULL);
    *chp = ch;
    return fd >= 0 ? conn_find_fd(ch, (unsigned)fd) : NULL;
}

/* Input for a command's fd, at most its window (what the agent said it can take): the
 * rest waits for a CREDIT (want_writable), so that a command that does not read cannot make
 * the agent buffer without bound. Returns what was taken, or -1 for no such open input. */
ssize_t sync_conn_write(sync_conn *c, uint32_t chan, int fd, const void *buf, size_t len)
{
    conn_chan *ch;
    conn_fd *f = lookup_fd(c, chan, fd, &ch);
    size_t n, done = 0;
    if (c->dead || !f || f->out || f->closed)
        return -1;
    n = len < f->window ? len : f->window;
    while (done < n) {
        size_t k = n - done < SYNC_CHUNK ? n - done : SYNC_CHUNK;
        wire_frame_raw(conn_chan_out(c, ch), WIRE_DATA, f->fd, chan, (const char *)buf + done, k);
        done += k;
    }
    f->window -= (uint32_t)n;
    if (n < len)
        f->want_writable = true;
    conn_kick(c);
    return (ssize_t)n;
}

int sync_conn_eof(sync_conn *c, uint32_t chan, int fd)
{
    conn_chan *ch;
    conn_fd *f = lookup_fd(c, chan, fd, &ch);
    if (c->dead || !f || f->out)
        return -1;
    if (!f->closed) {
        f->closed = true;
        wire_frame_raw(conn_chan_out(c, ch), WIRE_EOF, f->fd, chan, NULL, 0);
        conn_kick(c);
    }
    return 0;
}

/* A signal for the command (Ctrl-C, a forwarded SIGTERM), in the channel's order: it goes
 * after the RUN (conn_chan_out), never before the command exists. */
int sync_conn_signal(sync_conn *c, uint32_t chan, int signo)
{
    conn_chan *ch = conn_find_chan(c, chan, NULL);
    size_t at;
    strbuf *out;
    if (c->dead || !ch || signo < 0 || signo >= 65)
        return -1;
    out = conn_chan_out(c, ch);
    at = wire_begin(out, WIRE_SIGNAL, 0, chan);
    wire_u32(out, (uint32_t)signo);
    wire_end(out, at);
    conn_kick(c);
    return 0;
}

/* Refuses the pull in progress as a whole (the person's Ctrl-C during it): what is staged
 * is removed and nothing of it is committed (apply_refuse); 1 when there was one to stop. */
int sync_conn_abort_pull(sync_conn *c, const char *why)
{
    if (c->dead)
        return -1;
    if (!c->rx || !apply_active(c->rx))
        return 0;
    if (!apply_refuse(c->rx, why))
        return 0;
    /* Tell the agent, so that the rest of the delta is not sent only to be dropped here
     * (the EXITs queued behind it would wait for it: a Ctrl-C right after this one would). */
    size_t at = wire_begin(&c->out.q, WIRE_PULL_CANCEL, 0, 0);
    wire_u64(&c->out.q, apply_seq(c->rx));
    wire_end(&c->out.q, at);
    conn_kick(c);
    return 1;
}

const char *sync_conn_pull_error(const sync_conn *c, sync_quota *quota)
{
    if (quota)
        *quota = c->pull_error_quota;
    return c->pull_error[0] ? c->pull_error : NULL;
}

unsigned sync_conn_full(const sync_conn *c)
{
    return c->sync_full;
}

int sync_conn_winsize(sync_conn *c, uint32_t chan, uint16_t rows, uint16_t cols)
{
    conn_chan *ch = conn_find_chan(c, chan, NULL);
    size_t at;
    strbuf *out;
    if (c->dead || !ch)
        return -1;
    out = conn_chan_out(c, ch);
    at = wire_begin(out, WIRE_WINSIZE, 0, chan);
    wire_u16(out, rows);
    wire_u16(out, cols);
    wire_end(out, at);
    conn_kick(c);
    return 0;
}

int sync_conn_close_output(sync_conn *c, uint32_t chan, int fd)
{
    conn_chan *ch;
    conn_fd *f = lookup_fd(c, chan, fd, &ch);
    if (c->dead || !f || !f->out)
        return -1;
    if (!f->closed) {
        f->closed = true;
        wire_frame_raw(conn_chan_out(c, ch), WIRE_CLOSE_OUTPUT, f->fd, chan, NULL, 0);
        conn_kick(c);
    }
    return 0;
}

/* The caller consumed n bytes of a command's output: the window the agent may fill again.
 * Capped so that the window never exceeds SYNC_OUTPUT_WINDOW (a caller counting twice must
 * not let the agent send more than the host buffers); credits are batched
 * (conn_send_credit) so a byte-at-a-time reader does not cost a frame per byte. */
int sync_conn_credit(sync_conn *c, uint32_t chan, int fd, size_t n)
{
    conn_chan *ch;
    conn_fd *f = lookup_fd(c, chan, fd, &ch);
    if (c->dead)
        return -1;
    if (!f || !f->out || f->closed)
        return 0;   /* the channel ended meanwhile: nothing to credit */
    if (n > SYNC_OUTPUT_WINDOW - f->window - f->unacked)
        n = SYNC_OUTPUT_WINDOW - f->window - f->unacked;
    f->unacked += (uint32_t)n;
    conn_send_credit(c, ch, f, f->window < CREDIT_BATCH);
    conn_kick(c);
    return 0;
}

/* A sync round without a command (before a host part): push, then the agent's pull. */
int sync_conn_sync(sync_conn *c, uint64_t id)
{
    conn_item *it;
    size_t at;
    if (c->dead)
        return -1;
    conn_refresh_user_gitconfig(c);
    conn_refresh_user_rcfiles(c);
    it = xcalloc(1, sizeof(*it));
    strbuf_init(&it->frame, 0);
    at = wire_begin(&it->frame, WIRE_SYNC, 0, 0);
    wire_u64(&it->frame, id);
    wire_end(&it->frame, at);
    it->kind = ITEM_SYNC;
    it->push = true;
    conn_queue_item(c, it);
    conn_kick(c);
    return 0;
}

/* A file sbxsh writes into the sandbox (not synced back): bounded in size, its path
 * normalized to an absolute one without "." or ".." first. */
int sync_conn_put_file(sync_conn *c, const char *path, unsigned mode, const void *data,
                       size_t len, sbx_err *err)
{
    conn_item *it;
    strbuf p = STRBUF_INIT;
    if (c->dead)
        return conn_dead_err(c, err);
    if (len > SYNC_PUT_FILE_MAX)
        return sbx_errf(err, "%s is too large to put into the sandbox (%zu bytes, at "
                        "most %u)", path, len, SYNC_PUT_FILE_MAX);
    if (conn_path_normalize(path, "file", &p, err) < 0 || p.len == 1) {
        strbuf_release(&p);
        return -1;
    }
    it = xcalloc(1, sizeof(*it));
    strbuf_init(&it->frame, 0);
    conn_put_file_frame(&it->frame, p.buf, mode, data, len);
    strbuf_release(&p);
    it->kind = ITEM_PUT_FILE;
    conn_queue_item(c, it);
    conn_kick(c);
    return 0;
}

