/* The blocking helpers over a sync_conn (sync_conn_run_wait, sync_conn_sync_wait): a poll
 * loop that feeds a command's input and collects its output; see conn.h. */
#include "sync/conn_int.h"

/* ---- blocking helpers --------------------------------------------------------------------- */

/* One blocking call: its callbacks (waiter_ops) stand in for the caller's while it runs,
 * relay the command's output to the host fds and pass warnings and errors on. */
typedef struct waiter {
    sync_conn *c;
    const sync_conn_ops *user_ops;
    void *user_ctx;
    uint32_t chan;
    const sync_run_req *req;
    const int *host_fds;
    bool in_open[SYNC_MAX_FDS];
    strbuf pend[SYNC_MAX_FDS];   /* input read from the host fd, not yet accepted */
    bool done;
    sync_exit_status *st;
    char error[SYNC_MAX_TEXT + 256];
} waiter;

/* The host fd that the request maps to the child's fd, or -1. */
static int host_fd_for(waiter *w, int fd)
{
    for (size_t i = 0; i < w->req->nfds; i++)
        if (w->req->fds[i].fd == fd)
            return w->host_fds ? w->host_fds[i] : -1;
    return -1;
}

/* Output: written whole to its host fd, then credited (a blocking helper's memory is the
 * window); a reader that went away (EPIPE) closes that output, as a pipe would. */
static void w_output(void *ctx, uint32_t chan, int fd, const void *buf, size_t len)
{
    waiter *w = ctx;
    int hfd = host_fd_for(w, fd);
    if (chan != w->chan)
        return;
    if (hfd >= 0 && write_full(hfd, buf, len) < 0 && errno == EPIPE) {
        sync_conn_close_output(w->c, chan, fd);
        return;
    }
    sync_conn_credit(w->c, chan, fd, len);
}

/* The command's EXIT: the wait is over. */
static void w_exit(void *ctx, uint32_t chan, const sync_exit_status *st)
{
    waiter *w = ctx;
    if (chan != w->chan)
        return;
    *w->st = *st;   /* its message lives in the connection until the next call */
    w->done = true;
}

/* Warnings go to the caller's callback. */
static void w_warning(void *ctx, const char *msg)
{
    waiter *w = ctx;
    if (w->user_ops && w->user_ops->warning)
        w->user_ops->warning(w->user_ctx, msg);
}

/* The connection failed: kept for the call's sbx_err, and passed on. */
static void w_error(void *ctx, const char *msg)
{
    waiter *w = ctx;
    snprintf(w->error, sizeof(w->error), "%s", msg);
    if (w->user_ops && w->user_ops->error)
        w->user_ops->error(w->user_ctx, msg);
}

static const sync_conn_ops waiter_ops = {
    .output = w_output, .exit = w_exit, .warning = w_warning, .error = w_error,
};

/* Feeds input the host fds gave us to the channel, as far as its window allows. */
static void w_feed(waiter *w)
{
    for (size_t i = 0; w->req && i < w->req->nfds; i++) {
        strbuf *p = &w->pend[i];
        ssize_t took;
        if (!p->len)
            continue;
        took = sync_conn_write(w->c, w->chan, w->req->fds[i].fd, p->buf, p->len);
        if (took > 0)
            strbuf_remove(p, 0, (size_t)took);
        if (took < 0)
            strbuf_reset(p);
        if (!p->len && !w->in_open[i])
            sync_conn_eof(w->c, w->chan, w->req->fds[i].fd);
    }
}

/* Runs the poll loop until done() says so, reading the waiter's host input fds. */
static int wait_loop(waiter *w, bool (*done)(waiter *), sbx_err *err)
{
    sync_conn *c = w->c;
    while (!done(w) && !c->dead) {
        struct pollfd pfd[SYNC_CONN_MAX_POLLFDS + SYNC_MAX_FDS];
        size_t map[SYNC_MAX_FDS];
        size_t n = sync_conn_pollfds(c, pfd, SYNC_CONN_MAX_POLLFDS), base = n;
        for (size_t i = 0; w->req && i < w->req->nfds; i++) {
            if (!w->in_open[i] || w->pend[i].len)
                continue;
            pfd[n].fd = w->host_fds[i];
            pfd[n].events = POLLIN;
            pfd[n].revents = 0;
            map[n - base] = i;
            n++;
        }
        if (poll(pfd, (nfds_t)n, sync_conn_timeout(c)) < 0) {
            if (errno == EINTR)
                continue;
            return sbx_errno(err, "poll");
        }
        for (size_t k = base; k < n; k++) {
            size_t i = map[k - base];
            ssize_t got;
            if (!pfd[k].revents)
                continue;
            strbuf_grow(&w->pend[i], 65536);
            got = read(pfd[k].fd, w->pend[i].buf, 65536);
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (got <= 0)
                w->in_open[i] = false;
            else
                strbuf_setlen(&w->pend[i], (size_t)got);
            if (got <= 0 && !w->pend[i].len)
                sync_conn_eof(c, w->chan, w->req->fds[i].fd);
        }
        sync_conn_handle_events(c, pfd, base);
        w_feed(w);
    }
    if (c->dead)
        return sbx_errf(err, "%s", w->error[0] ? w->error : "sbxsh: sbx-agent connection lost");
    return 0;
}

/* wait_loop()'s end conditions: the command's EXIT, or the SYNC_DONE waited for. */
static bool run_done(waiter *w)
{
    return w->done;
}

int sync_conn_run_wait(sync_conn *c, uint32_t chan, const sync_run_req *req,
                       const int *host_fds, sync_exit_status *st, sbx_err *err)
{
    waiter w = { .c = c, .user_ops = c->ops, .user_ctx = c->ctx, .chan = chan, .req = req,
                 .host_fds = host_fds, .st = st };
    sync_run_req r = *req;
    int ret;

    memset(st, 0, sizeof(*st));
    for (size_t i = 0; i < req->nfds; i++) {
        strbuf_init(&w.pend[i], 0);
        w.in_open[i] = req->fds[i].dir == SYNC_FD_IN && host_fds && host_fds[i] >= 0 &&
                       (!req->tty || req->fds[i].fd == 0 || req->fds[i].fd > 2);
    }
    c->ops = &waiter_ops;
    c->ctx = &w;
    r.auto_credit = false;
    ret = sync_conn_run(c, chan, &r, err);
    if (ret == 0) {
        /* Inputs with no host fd are at their end from the start. */
        for (size_t i = 0; i < req->nfds; i++)
            if (req->fds[i].dir == SYNC_FD_IN && !w.in_open[i] &&
                (!req->tty || req->fds[i].fd == 0 || req->fds[i].fd > 2))
                sync_conn_eof(c, chan, req->fds[i].fd);
        ret = wait_loop(&w, run_done, err);
    }
    for (size_t i = 0; i < req->nfds; i++)
        strbuf_release(&w.pend[i]);
    c->ops = w.user_ops;
    c->ctx = w.user_ctx;
    return ret;
}

static bool sync_is_done(waiter *w)
{
    return w->c->sync_done_seen;
}

int sync_conn_sync_wait(sync_conn *c, sbx_err *err)
{
    static uint64_t next_id = 1ULL << 62;
    waiter w = { .c = c, .user_ops = c->ops, .user_ctx = c->ctx };
    int ret;
    c->ops = &waiter_ops;
    c->ctx = &w;
    c->sync_waiting = ++next_id;
    c->sync_done_seen = false;
    ret = sync_conn_sync(c, c->sync_waiting);
    if (ret < 0)
        ret = conn_dead_err(c, err);
    else
        ret = wait_loop(&w, sync_is_done, err);
    c->sync_waiting = 0;
    c->ops = w.user_ops;
    c->ctx = w.user_ctx;
    return ret;
}
