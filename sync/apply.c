/*
 * Receiving a delta, what both sides share (see delta.h; apply_int.h names the three files).
 * This file owns the frames of a delta as they arrive: an ENTRY, then its content in CHUNK
 * and HOLE frames, ENTRY_CANCEL, DELTA_END. It checks the stream itself, whoever sent it,
 * so that neither side's apply ever sees a malformed one:
 *   - a frame outside a delta, an ENTRY before the last one's content is complete, content
 *     for no entry or more than the entry announced (a sender that lies about sizes cannot
 *     make either side write past what it accepted);
 *   - the delta's limits (max_entries, max_bytes: a sender cannot make the receiver stage or
 *     write without bound) and DELTA_END's counts against what arrived (a truncated or
 *     spliced delta is a protocol error, never committed);
 *   - on the host, a file over max_file_size of data is dropped with a warning, counted on
 *     the data it stores so that a sparse file passes by what it costs.
 * What an entry means, and every write, is the side's: agent_apply.c (sbx-agent) or
 * hostwrite.c (the host's trusted half), called through the apply_side hooks.
 */
#include "sync/apply_int.h"
#include "sync/safefs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* Whether (root, path) is a code directory's own .git/index, which arrives merged with the
 * receiving side's (gitindex.h). */
bool apply_is_code_index(apply_rx *rx, uint16_t root, const char *path, size_t len)
{
    return root < mf_nroots(rx->t) && mf_root_at(rx->t, root)->kind == WIRE_ROOT_CODE &&
           len == 10 && !memcmp(path, ".git/index", 10);
}

/* The merged index's mtime: the later of the received file's and this side's index's. Any
 * works (gitindex.h: every entry a racy check could miss is smudged or cleared), and the
 * later one leaves git the fewest racily clean entries to compare. */
int64_t apply_index_mtime(int64_t received, const struct stat *local)
{
    int64_t l = local ? sf_stat_mtime(local) : 0;
    return l > received ? l : received;
}

/* A warning through the caller's callback: every refusal is one, and the rest applies. */
void apply_warnf(apply_rx *rx, const char *fmt, ...)
{
    va_list ap;
    char *msg;
    strbuf sb = STRBUF_INIT;
    if (!rx->warn)
        return;
    va_start(ap, fmt);
    strbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    msg = strbuf_detach(&sb, NULL);
    rx->warn(rx->wctx, msg);
    free(msg);
}

/* A path from the sandbox, printable: what warnings show. */
const char *apply_shown(const char *p, size_t len, char *buf, size_t bufsz)
{
    wire_sanitize(buf, bufsz, p, len);
    return buf;
}

mode_t apply_file_mode(const struct stat *cur, bool exec)
{
    static mode_t mask = (mode_t)-1;
    mode_t m;
    if (mask == (mode_t)-1) {
        mask = umask(022);
        umask(mask);
    }
    if (cur && S_ISREG(cur->st_mode))
        m = cur->st_mode & 0666;
    else
        m = 0666 & ~mask;
    if (exec)
        m |= (m & 0444) >> 2;
    return m & 0777;
}

apply_rx *apply_new(mf_tree *t, apply_role role, const apply_limits *lim, mf_warn_fn warn,
                    void *wctx)
{
    apply_rx *rx = xcalloc(1, sizeof(*rx));
    size_t n = mf_nroots(t);
    rx->t = t;
    rx->role = role;
    if (lim)
        rx->lim = *lim;
    if (!rx->lim.max_file_size)
        rx->lim.max_file_size = UINT64_MAX;
    if (!rx->lim.max_bytes)
        rx->lim.max_bytes = UINT64_MAX;
    if (!rx->lim.max_entries)
        rx->lim.max_entries = UINT64_MAX;
    rx->warn = warn;
    rx->wctx = wctx;
    rx->fd = -1;
    rx->dir_fd = -1;
    strbuf_init(&rx->dir_path, 0);
    strbuf_init(&rx->shape_ok, 0);
    rx->stage_fd = xcalloc(n ? n : 1, sizeof(int));
    rx->stage_name = xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        rx->stage_fd[i] = -1;
    apply_file_mode(NULL, false);   /* reads the umask once */
    return rx;
}

void apply_set_inflight(apply_rx *rx, mf_pathmap *inflight)
{
    rx->inflight = inflight;
}

uint64_t apply_seq(const apply_rx *rx)
{
    return rx->seq;
}

bool apply_active(const apply_rx *rx)
{
    return rx->active;
}

void apply_stats(const apply_rx *rx, uint64_t *entries, uint64_t *bytes)
{
    *entries = rx->done_entries;
    *bytes = rx->done_bytes;
}

/* The agent keeps the parent directory of the last entry open (deltas come sorted, so the
 * next entry is usually beside it); this forgets it. */
void apply_close_dir_cache(apply_rx *rx)
{
    if (rx->dir_fd >= 0)
        close(rx->dir_fd);
    rx->dir_fd = -1;
    strbuf_reset(&rx->dir_path);
}

/* Drops the current entry's partial file. */
void apply_drop_entry(apply_rx *rx)
{
    if (rx->fd >= 0) {
        close(rx->fd);
        rx->fd = -1;
        if (!rx->role->host && rx->dir_fd >= 0)
            unlinkat(rx->dir_fd, rx->tmp, 0);
        else if (rx->role->host && rx->stage_fd[rx->e_root] >= 0)
            unlinkat(rx->stage_fd[rx->e_root], rx->tmp, 0);
    }
    free(rx->e_path);
    rx->e_path = NULL;
    rx->in_entry = rx->skip = rx->direct = false;
    rx->left = 0;
}

void apply_abort(apply_rx *rx)
{
    apply_drop_entry(rx);
    if (rx->role->clear)
        rx->role->clear(rx);   /* the host's stage goes */
    apply_close_dir_cache(rx);
    mf_seal(rx->t);
    rx->active = false;
    rx->refused = false;
}

void apply_free(apply_rx *rx)
{
    if (!rx)
        return;
    apply_abort(rx);
    strbuf_release(&rx->dir_path);
    strbuf_release(&rx->shape_ok);
    free(rx->stage_fd);
    free(rx->stage_name);
    free(rx->ops);
    free(rx->renames);
    free(rx);
}

int apply_begin(apply_rx *rx, uint64_t seq, uint64_t acked, sbx_err *err)
{
    if (rx->active)
        return sbx_errf(err, "DELTA_BEGIN inside a delta");
    rx->active = true;
    rx->seq = seq;
    rx->acked = acked;
    rx->entries = rx->bytes = 0;
    rx->next_idx = 0;
    rx->stage_cost = rx->stage_puts = 0;
    rx->refused = false;
    rx->refused_quota = SYNC_QUOTA_NONE;
    rx->refusal[0] = '\0';
    return 0;
}

/* ---- frames ------------------------------------------------------------------------------ */

/* The entry's content is complete when nothing is left: a trailing hole gets its length
 * from ftruncate, then the file is finished (or dropped when skipped). */
static int entry_progress(apply_rx *rx, sbx_err *err)
{
    if (rx->left)
        return 0;
    if (rx->skip) {
        apply_drop_entry(rx);
        return 0;
    }
    if (rx->e_hole && ftruncate(rx->fd, (off_t)rx->e_size) < 0) {
        if (rx->role->host)
            return sbx_errno(err, "cannot stage a file");
        apply_warnf(rx, "cannot write %s/%s in the sandbox: %s",
                    mf_root_at(rx->t, rx->e_root)->base, rx->e_path, strerror(errno));
        apply_drop_entry(rx);
        return 0;
    }
    return rx->role->finish_file(rx, err);
}

/* The agent could not write the entry: say so, drop what it wrote, skip the rest. */
static void agent_write_failed(apply_rx *rx)
{
    apply_warnf(rx, "cannot write %s/%s in the sandbox: %s", mf_root_at(rx->t, rx->e_root)->base,
                rx->e_path, strerror(errno));
    close(rx->fd);
    rx->fd = -1;
    if (rx->dir_fd >= 0)
        unlinkat(rx->dir_fd, rx->tmp, 0);
    rx->skip = true;
}

/* Bytes of the current entry's content (inline or a CHUNK): never more than the entry
 * announced; on the host, a file over max_file_size of data is dropped with a warning and
 * staging counts against the quota. */
static int content(apply_rx *rx, const void *data, size_t len, sbx_err *err)
{
    if (len > rx->left)
        return sbx_errf(err, "%zu content bytes for an entry that has %llu left", len,
                        (unsigned long long)rx->left);
    rx->left -= len;
    if (rx->role->host && !rx->skip && len &&
        (rx->e_data += len) > rx->lim.max_file_size) {
        /* Checked on the data it stores, so that a sparse file passes by what it costs. */
        char p[512];
        apply_warnf(rx, "refused a sandbox change to %s/%s: file over the size limit (%llu bytes "
                    "of data)", mf_root_at(rx->t, rx->e_root)->base,
                    apply_shown(rx->e_path, rx->e_path_len, p, sizeof(p)),
                    (unsigned long long)rx->lim.max_file_size);
        uint64_t left = rx->left;
        apply_drop_entry(rx);
        rx->in_entry = rx->skip = true;
        rx->left = left;
    }
    if (!rx->skip && len) {
        mf_hash_update(&rx->hs, data, len);
        if (write_full(rx->fd, data, len) < 0) {
            if (rx->role->host)
                return sbx_errno(err, "cannot stage a file");
            agent_write_failed(rx);
        } else if (rx->role->wrote) {
            rx->role->wrote(rx);   /* the host's quota */
        }
    }
    return entry_progress(rx, err);
}

/* n zero bytes the sender does not store: hashed as zeros (the content hash is over the
 * logical bytes, so both manifests agree), seeked over, not written. */
static int hole(apply_rx *rx, uint64_t n, sbx_err *err)
{
    static const uint8_t zeros[65536];
    if (n > rx->left)
        return sbx_errf(err, "a %llu-byte hole for an entry that has %llu bytes left",
                        (unsigned long long)n, (unsigned long long)rx->left);
    rx->left -= n;
    if (!rx->skip) {
        for (uint64_t k = n; k;) {
            size_t piece = k < sizeof(zeros) ? (size_t)k : sizeof(zeros);
            mf_hash_update(&rx->hs, zeros, piece);
            k -= piece;
        }
        if (lseek(rx->fd, (off_t)n, SEEK_CUR) < 0) {
            if (rx->role->host)
                return sbx_errno(err, "cannot stage a file");
            agent_write_failed(rx);
        } else {
            rx->e_hole = true;
        }
    }
    return entry_progress(rx, err);
}

int apply_frame(apply_rx *rx, const wire_frame *f, sbx_err *err)
{
    if (!rx->active)
        return sbx_errf(err, "%s outside a delta", wire_type_name(f->type));

    switch (f->type) {
    case WIRE_ENTRY: {
        wire_entry e;
        if (rx->in_entry)
            return sbx_errf(err, "ENTRY before the previous entry's content was complete");
        if (wire_get_entry(f, &e, err) < 0)
            return -1;
        if (++rx->entries > rx->lim.max_entries)
            return sbx_errf(err, "delta has more than %llu entries",
                            (unsigned long long)rx->lim.max_entries);
        if (e.op == WIRE_OP_PUT && e.ftype == MF_REG) {
            rx->bytes += e.size;
            if (rx->bytes > rx->lim.max_bytes || rx->bytes < e.size)
                return sbx_errf(err, "delta brings more than %llu bytes",
                                (unsigned long long)rx->lim.max_bytes);
        }
        if (rx->role->entry(rx, &e, err) < 0)
            return -1;
        if (rx->in_entry)
            return content(rx, e.data, e.data_len, err) < 0 ? -1 : 0;
        return 0;
    }
    case WIRE_CHUNK:
        if (!rx->in_entry)
            return sbx_errf(err, "CHUNK without a file entry in progress");
        if (!f->len)
            return sbx_errf(err, "empty CHUNK");
        return content(rx, f->payload, f->len, err) < 0 ? -1 : 0;
    case WIRE_HOLE: {
        uint64_t n;
        if (!rx->in_entry)
            return sbx_errf(err, "HOLE without a file entry in progress");
        if (wire_get_hole(f, &n, err) < 0)
            return -1;
        return hole(rx, n, err) < 0 ? -1 : 0;
    }
    case WIRE_ENTRY_CANCEL:
        if (!rx->in_entry)
            return sbx_errf(err, "ENTRY_CANCEL without a file entry in progress");
        apply_drop_entry(rx);
        return 0;
    case WIRE_DELTA_END: {
        uint64_t seq, n;
        if (wire_get_u64_pair(f, &seq, &n, err) < 0)
            return -1;
        if (rx->in_entry)
            return sbx_errf(err, "DELTA_END before the last entry's content was complete");
        if (seq != rx->seq || n != rx->entries)
            return sbx_errf(err, "DELTA_END says %llu entries of delta %llu; %llu arrived for "
                            "delta %llu", (unsigned long long)n, (unsigned long long)seq,
                            (unsigned long long)rx->entries, (unsigned long long)rx->seq);
        if (rx->role->end)
            rx->role->end(rx);   /* the host commits */
        apply_close_dir_cache(rx);
        mf_seal(rx->t);
        rx->done_entries = rx->entries;
        rx->done_bytes = rx->bytes;
        rx->active = false;
        return 1;
    }
    }
    return sbx_errf(err, "%s frame inside a delta", wire_type_name(f->type));
}

