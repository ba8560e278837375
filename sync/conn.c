/* The host's end of the agent protocol; see conn.h and PROTOCOL.md. */
#include "sync/conn.h"
#include "sync/delta.h"
#include "sync/gitpolicy.h"
#include "sync/manifest.h"
#include "sync/safefs.h"
#include "sync/wire.h"
#include "common/framebuf.h"
#include "common/strvec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(SYNC_MAX_FDS == WIRE_MAX_FDS, "fd map sizes agree");

#define OUT_LOW (64u * 1024)      /* refill the output below this */
#define OUT_HIGH (256u * 1024)    /* ... up to this: small steps keep the agent busy */
#define CREDIT_BATCH (SYNC_OUTPUT_WINDOW / 4)
/* File content (data written, holes hashed) applied per sync_conn_handle_events() call: a
 * large pull goes in bounded pieces, so the holder's other clients are served between them
 * (and a Ctrl-C reaches it). Frames left over wait in the input buffer: sync_conn_timeout()
 * is then 0. */
#define APPLY_BUDGET (64u << 20)

/* ---- sync_host --------------------------------------------------------------------------- */

struct sync_host {
    mf_tree *tree;
    wire_root *roots;
    size_t nroots;
    strvec strings;            /* owns the roots' bases and patterns */
    strvec excludes;
    size_t *exclude_lens;
    char *state_file;
    char *user_gitconfig, *sandbox_gitconfig;
    struct stat gitconfig_seen;   /* the user's git config as last put into the sandbox */
    bool gitconfig_put;
    apply_limits limits;
    /* What this session's pulls added to the host tree, in allocated bytes (the quota's
     * running total, see apply_limits): kept across connections, from sync_host_new(). */
    int64_t disk_used;
    bool no_watch;
    uint64_t pair_id, push_seq, pull_seq;
    bool dirty;
    sync_conn *conn;
};

/* An absolute path, normalized: no empty, "." or ".." component, no trailing '/'. */
static int normalize(const char *in, const char *what, strbuf *out, sbx_err *err)
{
    const char *p = in;
    strbuf_reset(out);
    if (!in || in[0] != '/')
        return sbx_errf(err, "%s '%s' is not an absolute path", what, in ? in : "");
    while (*p) {
        const char *e;
        size_t n;
        while (*p == '/')
            p++;
        e = strchr(p, '/');
        n = e ? (size_t)(e - p) : strlen(p);
        if (!n)
            break;
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return sbx_errf(err, "%s '%s' has a '.' or '..' component: give it resolved", what,
                            in);
        strbuf_addch(out, '/');
        strbuf_add(out, p, n);
        p += n;
    }
    if (!out->len)
        strbuf_addch(out, '/');
    if (out->len > SYNC_MAX_PATH)
        return sbx_errf(err, "%s '%s' is too long", what, in);
    return 0;
}

static bool inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1)
        return true;   /* "/" holds everything */
    return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

static void add_root(sync_host *h, uint8_t kind, const char *base, size_t base_len,
                     const char *pattern, size_t pattern_len)
{
    wire_root *r;
    h->roots = xrealloc(h->roots, (h->nroots + 1) * sizeof(*h->roots));
    r = &h->roots[h->nroots++];
    strvec_pushn(&h->strings, base, base_len);
    r->base = h->strings.v[h->strings.n - 1];
    r->base_len = base_len;
    strvec_pushn(&h->strings, pattern, pattern_len);
    r->pattern = h->strings.v[h->strings.n - 1];
    r->pattern_len = pattern_len;
    r->kind = kind;
}

/* Removes staging directories that a holder which died mid-sync left at a root. */
static void remove_stale_stages(const char *base)
{
    DIR *d = opendir(base);
    struct dirent *de;
    if (!d)
        return;
    while ((de = readdir(d))) {
        long pid;
        if (strncmp(de->d_name, SF_STAGE_PREFIX, sizeof(SF_STAGE_PREFIX) - 1))
            continue;
        pid = strtol(de->d_name + sizeof(SF_STAGE_PREFIX) - 1, NULL, 10);
        if (pid > 0 && (pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        sf_remove_tree(dirfd(d), de->d_name);
    }
    closedir(d);
}

int sync_host_new(const sync_config *cfg, sync_host **out, sbx_err *err)
{
    sync_host *h = xcalloc(1, sizeof(*h));
    strbuf p = STRBUF_INIT;
    strvec codes = STRVEC_INIT;
    bool loaded = false;

    strvec_init(&h->strings);
    strvec_init(&h->excludes);
    for (size_t i = 0; cfg->code_dirs && cfg->code_dirs[i]; i++) {
        struct stat st;
        bool dup = false;
        if (normalize(cfg->code_dirs[i], "code directory", &p, err) < 0)
            goto fail;
        if (stat(p.buf, &st) < 0 || !S_ISDIR(st.st_mode)) {
            sbx_errf(err, "code directory %s does not exist or is not a directory", p.buf);
            goto fail;
        }
        for (size_t k = 0; k < codes.n; k++)
            if (inside(p.buf, codes.v[k]) || inside(codes.v[k], p.buf))
                dup = true;
        if (dup) {
            sbx_errf(err, "code directories %s and another one overlap: give only the outer "
                     "one", p.buf);
            goto fail;
        }
        strvec_push(&codes, p.buf);
        add_root(h, WIRE_ROOT_CODE, p.buf, p.len, "", 0);
    }
    /* No code directory is a session of its own kind (a login shell in ~): only the sync
     * paths and task files, if any, move. */
    for (size_t i = 0; cfg->sync_paths && cfg->sync_paths[i]; i++) {
        size_t cut = 0, last = 0;
        bool covered = false;
        if (normalize(cfg->sync_paths[i], "sync path", &p, err) < 0)
            goto fail;
        for (size_t k = 0; k < codes.n; k++)
            covered |= inside(p.buf, codes.v[k]);
        if (covered || p.len == 1)
            continue;   /* already synced as part of a code directory */
        /* The base is everything before the first component with a glob character. */
        for (size_t j = 1; j <= p.len; j++) {
            if (j < p.len && p.buf[j] != '/')
                continue;
            if (has_glob(p.buf + last + 1, j - last - 1))
                break;
            cut = last;
            last = j;
        }
        if (last == p.len)
            cut = (size_t)(strrchr(p.buf, '/') - p.buf);
        else
            cut = last;
        add_root(h, WIRE_ROOT_PATH, p.buf, cut ? cut : 1, p.buf + cut + 1, p.len - cut - 1);
    }
    for (size_t i = 0; cfg->task_files && cfg->task_files[i]; i++) {
        size_t cut;
        if (normalize(cfg->task_files[i], "task file", &p, err) < 0)
            goto fail;
        if (p.len == 1)
            continue;
        cut = (size_t)(strrchr(p.buf, '/') - p.buf);
        add_root(h, WIRE_ROOT_TASK, p.buf, cut ? cut : 1, p.buf + cut + 1, p.len - cut - 1);
    }
    if (h->nroots > SYNC_MAX_ROOTS) {
        sbx_errf(err, "too many sync roots (%zu, at most %d)", h->nroots, SYNC_MAX_ROOTS);
        goto fail;
    }
    for (size_t i = 0; cfg->excludes && cfg->excludes[i]; i++)
        strvec_push(&h->excludes, cfg->excludes[i]);
    if (h->excludes.n > SYNC_MAX_EXCLUDES) {
        sbx_errf(err, "too many exclude patterns (%zu, at most %d)", h->excludes.n,
                 SYNC_MAX_EXCLUDES);
        goto fail;
    }
    h->exclude_lens = xcalloc(h->excludes.n + 1, sizeof(size_t));
    for (size_t i = 0; i < h->excludes.n; i++)
        h->exclude_lens[i] = strlen(h->excludes.v[i]);

    h->tree = mf_new(h->roots, h->nroots, (const char *const *)h->excludes.v, h->exclude_lens,
                     h->excludes.n, NULL);
    h->limits.max_file_size = cfg->max_file_size ? cfg->max_file_size
                                                 : SYNC_DEFAULT_MAX_FILE_SIZE;
    h->limits.max_bytes = cfg->max_pull_bytes ? cfg->max_pull_bytes
                                              : SYNC_DEFAULT_MAX_PULL_BYTES;
    h->limits.max_entries = cfg->max_pull_entries ? cfg->max_pull_entries
                                                  : SYNC_DEFAULT_MAX_PULL_ENTRIES;
    h->limits.max_disk = cfg->disk_max;
    h->limits.disk_used = &h->disk_used;
    h->no_watch = cfg->no_watch;
    if (cfg->state_file) {
        h->state_file = xstrdup(cfg->state_file);
        if (mf_load(h->tree, h->state_file, &h->pair_id, &h->push_seq, &h->pull_seq, &loaded,
                    err) < 0)
            goto fail;
        if (!loaded)
            h->pair_id = h->push_seq = h->pull_seq = 0;
    }
    if (cfg->user_gitconfig && cfg->sandbox_gitconfig) {
        h->user_gitconfig = xstrdup(cfg->user_gitconfig);
        h->sandbox_gitconfig = xstrdup(cfg->sandbox_gitconfig);
    }
    for (size_t i = 0; i < h->nroots; i++)
        remove_stale_stages(h->roots[i].base);
    if (!h->no_watch)
        mf_watch(h->tree, true);
    strbuf_release(&p);
    strvec_clear(&codes);
    *out = h;
    return 0;
fail:
    strbuf_release(&p);
    strvec_clear(&codes);
    sync_host_free(h);
    *out = NULL;
    return -1;
}

void sync_host_free(sync_host *h)
{
    if (!h)
        return;
    mf_free(h->tree);
    free(h->roots);
    strvec_clear(&h->strings);
    strvec_clear(&h->excludes);
    free(h->exclude_lens);
    free(h->state_file);
    free(h->user_gitconfig);
    free(h->sandbox_gitconfig);
    free(h);
}

int sync_host_save(sync_host *h, sbx_err *err)
{
    if (!h->state_file || !h->dirty)
        return 0;
    if (mf_save(h->tree, h->state_file, h->pair_id, h->push_seq, h->pull_seq, err) < 0)
        return -1;
    h->dirty = false;
    return 0;
}

/* ---- sync_conn --------------------------------------------------------------------------- */

typedef struct conn_fd {
    uint16_t fd;
    bool out;
    bool closed;          /* out: close_output sent; in: eof sent */
    bool eof_seen;
    bool want_writable;
    uint32_t window;      /* out: what the agent may still send; in: what we may send */
    uint32_t unacked;     /* out: consumed, not yet credited back */
} conn_fd;

typedef struct conn_chan {
    uint32_t id;
    bool run_sent;
    bool auto_credit;
    size_t nfds;
    conn_fd fds[SYNC_MAX_FDS];
    strbuf pending;       /* frames queued before its RUN went out */
} conn_chan;

enum item_kind { ITEM_RUN, ITEM_SYNC, ITEM_PUT_FILE };

typedef struct conn_item {
    enum item_kind kind;
    bool push;
    uint32_t chan;
    strbuf frame;         /* the RUN / SYNC / PUT_FILE frame sent after the push */
    struct conn_item *next;
} conn_item;

struct sync_conn {
    sync_host *h;
    int rfd, wfd;
    const sync_conn_ops *ops;
    void *ctx;
    bool dead;
    bool in_dispatch;
    sync_agent_info info;
    framebuf_in in;          /* frames from the agent */
    framebuf_out out;        /* frames to the agent */
    conn_item *head, *tail;
    delta_tx tx;
    bool tx_active;
    apply_rx *rx;
    uint64_t rx_seq;
    int64_t rx_start;
    mf_pathmap *inflight;
    conn_chan **chans;
    size_t nchans, achans;
    sync_conn_stats stats;
    char exit_msg[SYNC_MAX_TEXT + 1];
    uint64_t sync_waiting;   /* the id sync_conn_sync_wait() waits for */
    bool sync_done_seen;
    /* Why the last delta was refused (over the quota, interrupted), for the EXIT or
     * SYNC_DONE that follows it: the agent sends a pull right before the EXIT (or
     * SYNC_DONE) of the round that asked for it. Empty: it was applied. */
    char pull_error[600];
    bool pull_error_quota;
    bool in_pending;         /* complete frames wait in c->in (the apply budget ran out) */
};

static void die(sync_conn *c, const char *fmt, ...) SBX_PRINTF(2, 3);
static void die(sync_conn *c, const char *fmt, ...)
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

static void warn_cb(void *ctx, const char *msg)
{
    sync_conn *c = ctx;
    if (c->ops && c->ops->warning)
        c->ops->warning(c->ctx, msg);
}

static conn_chan *find_chan(sync_conn *c, uint32_t id, size_t *idx)
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

static conn_fd *find_fd(conn_chan *ch, unsigned fd)
{
    for (size_t i = 0; ch && i < ch->nfds; i++)
        if (ch->fds[i].fd == fd)
            return &ch->fds[i];
    return NULL;
}

static void free_chan(sync_conn *c, size_t idx)
{
    conn_chan *ch = c->chans[idx];
    strbuf_release(&ch->pending);
    free(ch);
    c->chans[idx] = c->chans[--c->nchans];
}

/* A frame for an existing channel: straight out once its RUN went, else after the RUN. */
static strbuf *chan_out(sync_conn *c, conn_chan *ch)
{
    return ch->run_sent ? &c->out.q : &ch->pending;
}

static void queue_item(sync_conn *c, conn_item *it)
{
    it->next = NULL;
    if (c->tail)
        c->tail->next = it;
    else
        c->head = it;
    c->tail = it;
}

static void free_item(conn_item *it)
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
        die(c, "sbxsh: cannot scan the host tree: %s", err.msg);
    if (c->dead) {
        /* What die() left for after the scan. */
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
            conn_chan *ch = find_chan(c, it->chan, NULL);
            if (ch) {
                ch->run_sent = true;
                strbuf_add(&c->out.q, ch->pending.buf, ch->pending.len);
                strbuf_release(&ch->pending);
            }
        }
        free_item(it);
    }
}

static void read_input(sync_conn *c);

static void flush_out(sync_conn *c)
{
    if (!c->dead && framebuf_write(&c->out, c->wfd) < 0) {
        int e = errno;
        /* What the agent said before it went away explains it better. */
        if (!c->in_dispatch)
            read_input(c);
        die(c, "sbxsh: lost the connection to sbx-agent (write: %s)", strerror(e));
    }
}

/* Outside callbacks, push what is queued as far as the pipe takes it now. */
static void kick(sync_conn *c)
{
    if (c->in_dispatch || c->dead)
        return;
    pump(c);
    flush_out(c);
}

static int dead_err(sync_conn *c, sbx_err *err)
{
    return sbx_errf(err, "sbxsh: the connection to sbx-agent is closed");
    (void)c;
}

/* ---- frames from the agent ----------------------------------------------------------------- */

static void send_credit(sync_conn *c, conn_chan *ch, conn_fd *f, bool force)
{
    if (!f->unacked || (!force && f->unacked < CREDIT_BATCH))
        return;
    {
        size_t at = wire_begin(chan_out(c, ch), WIRE_CREDIT, f->fd, ch->id);
        wire_u32(chan_out(c, ch), f->unacked);
        wire_end(chan_out(c, ch), at);
    }
    f->window += f->unacked;
    f->unacked = 0;
}

static void on_data(sync_conn *c, const wire_frame *f)
{
    conn_chan *ch = find_chan(c, f->chan, NULL);
    conn_fd *cf = find_fd(ch, f->fd);
    if (!cf || !cf->out)
        return die(c, "sbx-agent sent output for an unknown channel %u fd %u", f->chan, f->fd);
    if (f->len > cf->window)
        return die(c, "sbx-agent sent %u bytes of output on channel %u fd %u beyond its "
                   "%u-byte window", f->len, f->chan, f->fd, cf->window);
    cf->window -= f->len;
    if (cf->closed || cf->eof_seen)
        return;
    if (c->ops && c->ops->output && f->len)
        c->ops->output(c->ctx, ch->id, cf->fd, f->payload, f->len);
    /* The callback may have closed the fd or freed nothing (it cannot free the conn). */
    ch = find_chan(c, f->chan, NULL);
    cf = find_fd(ch, f->fd);
    if (ch && cf && ch->auto_credit) {
        cf->unacked += f->len;
        send_credit(c, ch, cf, false);
    }
}

static void on_exit_frame(sync_conn *c, const wire_frame *f)
{
    size_t idx;
    conn_chan *ch = find_chan(c, f->chan, &idx);
    wire_exit x;
    sbx_err err;
    sync_exit_status st;

    if (!ch || !ch->run_sent)
        return die(c, "sbx-agent sent EXIT for an unknown channel %u", f->chan);
    if (c->rx && apply_active(c->rx))
        return die(c, "sbx-agent sent EXIT in the middle of a delta");
    if (wire_get_exit(f, &x, &err) < 0)
        return die(c, "sbx-agent sent a malformed message: %s", err.msg);
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
    if (c->pull_error[0]) {
        st.pull_error = c->pull_error;
        st.pull_error_quota = c->pull_error_quota;
    }
    free_chan(c, idx);
    if (c->ops && c->ops->exit)
        c->ops->exit(c->ctx, f->chan, &st);
    c->pull_error[0] = '\0';
}

static void on_delta_frame(sync_conn *c, const wire_frame *f)
{
    sbx_err err;
    int r;
    if (f->type == WIRE_DELTA_BEGIN) {
        uint64_t seq, acked;
        if (wire_get_u64_pair(f, &seq, &acked, &err) < 0)
            return die(c, "sbx-agent sent a malformed message: %s", err.msg);
        if (seq <= c->h->pull_seq)
            return die(c, "sbx-agent sent delta %llu after delta %llu", (unsigned long long)seq,
                       (unsigned long long)c->h->pull_seq);
        if (acked > c->h->push_seq)
            return die(c, "sbx-agent acknowledged push %llu, which was never sent",
                       (unsigned long long)acked);
        mf_pathmap_prune(c->inflight, acked);
        c->rx_seq = seq;
        c->rx_start = (int64_t)now_ns();
        if (apply_begin(c->rx, seq, acked, &err) < 0)
            return die(c, "sbx-agent sent a malformed message: %s", err.msg);
        return;
    }
    r = apply_frame(c->rx, f, &err);
    if (r < 0) {
        apply_abort(c->rx);
        return die(c, "sbx-agent sent a bad delta (%s); the host tree was left as it was "
                   "before that delta", err.msg);
    }
    if (r == 1) {
        uint64_t entries, bytes;
        bool quota;
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

static void dispatch(sync_conn *c, const wire_frame *f)
{
    sbx_err err;
    bool in_delta = c->rx && apply_active(c->rx);

    switch (f->type) {
    case WIRE_DATA:
        on_data(c, f);
        return;
    case WIRE_EOF: {
        conn_chan *ch = find_chan(c, f->chan, NULL);
        conn_fd *cf = find_fd(ch, f->fd);
        if (!cf || !cf->out)
            return die(c, "sbx-agent sent EOF for an unknown channel %u fd %u", f->chan, f->fd);
        if (f->len)
            return die(c, "sbx-agent sent a malformed EOF frame");
        if (!cf->eof_seen && !cf->closed) {
            cf->eof_seen = true;
            if (c->ops && c->ops->eof)
                c->ops->eof(c->ctx, f->chan, f->fd);
        }
        cf->eof_seen = true;
        return;
    }
    case WIRE_CREDIT: {
        conn_chan *ch = find_chan(c, f->chan, NULL);
        conn_fd *cf = find_fd(ch, f->fd);
        uint32_t n;
        if (!cf || cf->out)
            return die(c, "sbx-agent sent CREDIT for an unknown channel %u fd %u", f->chan,
                       f->fd);
        if (wire_get_u32_one(f, &n, &err) < 0)
            return die(c, "sbx-agent sent a malformed message: %s", err.msg);
        if ((uint64_t)cf->window + n > SYNC_INPUT_WINDOW)
            return die(c, "sbx-agent granted more input credit than its window");
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
            return die(c, "sbx-agent started a delta inside a delta");
        on_delta_frame(c, f);
        return;
    case WIRE_ENTRY:
    case WIRE_CHUNK:
    case WIRE_HOLE:
    case WIRE_ENTRY_CANCEL:
    case WIRE_DELTA_END:
        if (!in_delta)
            return die(c, "sbx-agent sent %s outside a delta", wire_type_name(f->type));
        on_delta_frame(c, f);
        return;
    case WIRE_EXIT:
        on_exit_frame(c, f);
        return;
    case WIRE_SYNC_DONE: {
        uint64_t id;
        if (in_delta)
            return die(c, "sbx-agent sent SYNC_DONE in the middle of a delta");
        if (wire_get_u64_one(f, &id, &err) < 0)
            return die(c, "sbx-agent sent a malformed message: %s", err.msg);
        if (c->sync_waiting && id == c->sync_waiting)
            c->sync_done_seen = true;
        if (c->ops && c->ops->sync_done)
            c->ops->sync_done(c->ctx, id);
        c->pull_error[0] = '\0';
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
    die(c, "sbx-agent sent an unexpected %s frame", wire_type_name(f->type));
}

/* Parses and dispatches every complete frame in the input buffer. */
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
            die(c, "sbx-agent sent a malformed message: %s", err.msg);
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

static void read_input(sync_conn *c)
{
    for (int rounds = 0; rounds < 16 && !c->dead && !c->in_pending; rounds++) {
        ssize_t n = framebuf_fill(&c->in, c->rfd, 256 * 1024);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                die(c, "sbxsh: lost the connection to sbx-agent (read: %s)", strerror(errno));
            return;
        }
        if (n == 0) {
            if (c->rx && apply_active(c->rx))
                die(c, "sbx-agent closed the connection in the middle of a delta; the host "
                    "tree was left as it was before that delta");
            else
                die(c, "sbx-agent closed the connection (the sandbox may have stopped)");
            return;
        }
        process_input(c);
    }
}

/* ---- opening -------------------------------------------------------------------------------- */

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
            return sbx_errf(err, "sbxsh: the sandbox did not answer with the sbx-agent protocol "
                            "(it said: \"%s\"); is sbx-agent installed there?", shown);
        }
        if (r == 1) {
            if (wire_get_hello(&f, hello, err) < 0)
                return sbx_err_prefix(err, "sbxsh: bad hello from sbx-agent");
            if (hello->version != SYNC_PROTOCOL_VERSION)
                return sbx_errf(err, "sbxsh: sbx-agent speaks protocol version %u, this sbxsh "
                                "speaks %u: install the sbx-agent built with this sbxsh",
                                hello->version, SYNC_PROTOCOL_VERSION);
            framebuf_consume(&c->in, WIRE_HEADER + f.len);
            return 0;
        }
        left = (int64_t)deadline - (int64_t)now_ns();
        if (left <= 0)
            return sbx_errf(err, "sbxsh: sbx-agent did not answer within %d ms", timeout_ms);
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
            return sbx_errno(err, "sbxsh: poll");
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = framebuf_fill(&c->in, c->rfd, 65536);
            if (n == 0) {
                char shown[200];
                wire_sanitize(shown, sizeof(shown), c->in.buf.buf,
                              c->in.buf.len > 160 ? 160 : c->in.buf.len);
                return sbx_errf(err, "sbxsh: sbx-agent exited before answering%s%s%s",
                                c->in.buf.len ? " (it said: \"" : "", shown,
                                c->in.buf.len ? "\")" : "");
            }
            if (n < 0 && errno != EAGAIN)
                return sbx_errno(err, "sbxsh: reading from sbx-agent");
        }
        if (c->dead)
            return sbx_errf(err, "sbxsh: cannot write to sbx-agent");
    }
}

static void put_file_frame(strbuf *out, const char *path, unsigned mode, const void *data,
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
static void refresh_user_gitconfig(sync_conn *c)
{
    sync_host *h = c->h;
    struct stat st;
    char *text = NULL;
    size_t len = 0;
    strbuf filtered = STRBUF_INIT;
    sbx_err ignored;

    if (!h->user_gitconfig)
        return;
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
    /* A missing or unparsable file gives an empty config there too. */
    if (sync_conn_put_file(c, h->sandbox_gitconfig, 0644, filtered.buf, filtered.len,
                           &ignored) < 0 && c->ops && c->ops->warning)
        c->ops->warning(c->ctx, ignored.msg);
    strbuf_release(&filtered);
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
        sbx_errf(err, "sbxsh: the sync configuration is too large for one message");
        c->ops = NULL;
        sync_conn_free(c);
        return -1;
    }
    c->inflight = mf_pathmap_new();
    c->rx = apply_new(h->tree, APPLY_HOST, &h->limits, warn_cb, c);
    apply_set_inflight(c->rx, c->inflight);
    h->gitconfig_put = false;
    h->conn = c;
    refresh_user_gitconfig(c);
    /* Whatever followed the hello (nothing, normally) is handled by the first event. */
    flush_out(c);
    if (c->dead) {
        sbx_errf(err, "sbxsh: cannot write to sbx-agent");
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
        free_item(it);
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

/* ---- requests ----------------------------------------------------------------------------- */

int sync_conn_run(sync_conn *c, uint32_t chan, const sync_run_req *req, sbx_err *err)
{
    uint16_t fds[SYNC_MAX_FDS];
    uint8_t outs[SYNC_MAX_FDS];
    conn_chan *ch;
    conn_item *it;
    uint32_t flags = 0;

    if (c->dead)
        return dead_err(c, err);
    refresh_user_gitconfig(c);
    if (!chan || find_chan(c, chan, NULL))
        return sbx_errf(err, "sbxsh: channel %u is %s", chan, chan ? "in use" : "invalid");
    if (!req->exe || !*req->exe || !req->argv || !req->argv[0] || !req->cwd ||
        req->cwd[0] != '/')
        return sbx_errf(err, "sbxsh: a command needs a program, argv[0] and an absolute cwd");
    if (req->nfds > SYNC_MAX_FDS)
        return sbx_errf(err, "sbxsh: at most %d fds in a command's fd map", SYNC_MAX_FDS);
    for (size_t i = 0; i < req->nfds; i++) {
        if (req->fds[i].fd < 0 || req->fds[i].fd > SYNC_MAX_CHILD_FD)
            return sbx_errf(err, "sbxsh: fd %d out of range (0..%d)", req->fds[i].fd,
                            SYNC_MAX_CHILD_FD);
        bool out_before = false;
        for (size_t j = 0; j < i; j++) {
            if (req->fds[j].fd == req->fds[i].fd)
                return sbx_errf(err, "sbxsh: fd %d twice in a fd map", req->fds[i].fd);
            out_before |= req->fds[j].dir == SYNC_FD_OUT;
        }
        fds[i] = (uint16_t)req->fds[i].fd;
        switch (req->fds[i].dir) {
        case SYNC_FD_IN: outs[i] = WIRE_FD_IN; break;
        case SYNC_FD_OUT: outs[i] = WIRE_FD_OUT; break;
        case SYNC_FD_OUT_SHARED:
            if (!out_before)
                return sbx_errf(err, "sbxsh: fd %d shares the pipe of no output fd",
                                req->fds[i].fd);
            outs[i] = WIRE_FD_OUT_SHARED;
            break;
        default:
            return sbx_errf(err, "sbxsh: fd %d: unknown direction", req->fds[i].fd);
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
        free_item(it);
        return sbx_errf(err, "sbxsh: the command line and environment are too large (over "
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
        /* The terminal: fd 0 in, fd 1 out, whatever the map said about 0-2. */
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
    queue_item(c, it);
    kick(c);
    return 0;
}

static conn_fd *lookup_fd(sync_conn *c, uint32_t chan, int fd, conn_chan **chp)
{
    conn_chan *ch = find_chan(c, chan, NULL);
    *chp = ch;
    return fd >= 0 ? find_fd(ch, (unsigned)fd) : NULL;
}

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
        wire_frame_raw(chan_out(c, ch), WIRE_DATA, f->fd, chan, (const char *)buf + done, k);
        done += k;
    }
    f->window -= (uint32_t)n;
    if (n < len)
        f->want_writable = true;
    kick(c);
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
        wire_frame_raw(chan_out(c, ch), WIRE_EOF, f->fd, chan, NULL, 0);
        kick(c);
    }
    return 0;
}

int sync_conn_signal(sync_conn *c, uint32_t chan, int signo)
{
    conn_chan *ch = find_chan(c, chan, NULL);
    size_t at;
    strbuf *out;
    if (c->dead || !ch || signo <= 0 || signo >= 65)
        return -1;
    out = chan_out(c, ch);
    at = wire_begin(out, WIRE_SIGNAL, 0, chan);
    wire_u32(out, (uint32_t)signo);
    wire_end(out, at);
    kick(c);
    return 0;
}

int sync_conn_abort_pull(sync_conn *c, const char *why)
{
    if (c->dead)
        return -1;
    if (!c->rx || !apply_active(c->rx))
        return 0;
    return apply_refuse(c->rx, why) ? 1 : 0;
}

const char *sync_conn_pull_error(const sync_conn *c, bool *quota)
{
    if (quota)
        *quota = c->pull_error_quota;
    return c->pull_error[0] ? c->pull_error : NULL;
}

int sync_conn_winsize(sync_conn *c, uint32_t chan, uint16_t rows, uint16_t cols)
{
    conn_chan *ch = find_chan(c, chan, NULL);
    size_t at;
    strbuf *out;
    if (c->dead || !ch)
        return -1;
    out = chan_out(c, ch);
    at = wire_begin(out, WIRE_WINSIZE, 0, chan);
    wire_u16(out, rows);
    wire_u16(out, cols);
    wire_end(out, at);
    kick(c);
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
        wire_frame_raw(chan_out(c, ch), WIRE_CLOSE_OUTPUT, f->fd, chan, NULL, 0);
        kick(c);
    }
    return 0;
}

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
    send_credit(c, ch, f, f->window < CREDIT_BATCH);
    kick(c);
    return 0;
}

int sync_conn_sync(sync_conn *c, uint64_t id)
{
    conn_item *it;
    size_t at;
    if (c->dead)
        return -1;
    refresh_user_gitconfig(c);
    it = xcalloc(1, sizeof(*it));
    strbuf_init(&it->frame, 0);
    at = wire_begin(&it->frame, WIRE_SYNC, 0, 0);
    wire_u64(&it->frame, id);
    wire_end(&it->frame, at);
    it->kind = ITEM_SYNC;
    it->push = true;
    queue_item(c, it);
    kick(c);
    return 0;
}

int sync_conn_put_file(sync_conn *c, const char *path, unsigned mode, const void *data,
                       size_t len, sbx_err *err)
{
    conn_item *it;
    strbuf p = STRBUF_INIT;
    if (c->dead)
        return dead_err(c, err);
    if (len > SYNC_PUT_FILE_MAX)
        return sbx_errf(err, "sbxsh: %s is too large to put into the sandbox (%zu bytes, at "
                        "most %u)", path, len, SYNC_PUT_FILE_MAX);
    if (normalize(path, "file", &p, err) < 0 || p.len == 1) {
        strbuf_release(&p);
        return -1;
    }
    it = xcalloc(1, sizeof(*it));
    strbuf_init(&it->frame, 0);
    put_file_frame(&it->frame, p.buf, mode, data, len);
    strbuf_release(&p);
    it->kind = ITEM_PUT_FILE;
    queue_item(c, it);
    kick(c);
    return 0;
}

/* ---- blocking helpers --------------------------------------------------------------------- */

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

static int host_fd_for(waiter *w, int fd)
{
    for (size_t i = 0; i < w->req->nfds; i++)
        if (w->req->fds[i].fd == fd)
            return w->host_fds ? w->host_fds[i] : -1;
    return -1;
}

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

static void w_exit(void *ctx, uint32_t chan, const sync_exit_status *st)
{
    waiter *w = ctx;
    if (chan != w->chan)
        return;
    *w->st = *st;   /* its message lives in the connection until the next call */
    w->done = true;
}

static void w_warning(void *ctx, const char *msg)
{
    waiter *w = ctx;
    if (w->user_ops && w->user_ops->warning)
        w->user_ops->warning(w->user_ctx, msg);
}

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
            return sbx_errno(err, "sbxsh: poll");
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
        ret = dead_err(c, err);
    else
        ret = wait_loop(&w, sync_is_done, err);
    c->sync_waiting = 0;
    c->ops = w.user_ops;
    c->ctx = w.user_ctx;
    return ret;
}
