/*
 * Streaming a delta as frames (delta.h): the push, the host's changes into the sandbox
 * (the agent streams its pull with the same code). What leaves the host here is what the
 * sandbox gets to read, so the sending side filters: a repository's config goes through
 * the key allowlist (gitconfig_filter_repo), and the .git files that carry remote URLs
 * lose their secrets (cred_filtered). Every file is read by fd, opened beneath its root
 * with no link followed, so a symlink swapped in since the scan sends nothing from
 * outside the tree. The sender is a state machine, tx->state: 0 before DELTA_BEGIN, 1
 * sending (entries one by one, a file's content in CHUNK and HOLE frames between them,
 * as much as the caller's limit allows per call), 2 after DELTA_END.
 */
#include "sync/delta.h"
#include "sync/gitcred.h"
#include "sync/gitpolicy.h"
#include "sync/safefs.h"
#include "common/urlcred.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void delta_tx_init(delta_tx *tx, mf_tree *t, mf_delta *d, uint64_t seq, uint64_t acked,
                   bool filter_git, mf_warn_fn warn, void *wctx)
{
    memset(tx, 0, sizeof(*tx));
    tx->t = t;
    tx->d = *d;
    memset(d, 0, sizeof(*d));
    tx->seq = seq;
    tx->acked = acked;
    tx->filter_git = filter_git;
    tx->fd = -1;
    tx->dir_fd = -1;
    strbuf_init(&tx->mem, 0);
    strbuf_init(&tx->dir_path, 0);
    tx->warn = warn;
    tx->wctx = wctx;
}

void delta_tx_release(delta_tx *tx)
{
    free(tx->lost);
    tx->lost = NULL;
    free(tx->unread);
    tx->unread = NULL;
    if (tx->fd >= 0)
        close(tx->fd);
    if (tx->dir_fd >= 0)
        close(tx->dir_fd);
    strbuf_release(&tx->mem);
    strbuf_release(&tx->dir_path);
    mf_delta_release(&tx->d);
    tx->fd = tx->dir_fd = -1;
}

/* The parent directory of op's path, opened beneath its root without following symlinks. */
static int parent_fd(delta_tx *tx, const mf_op *op, const char **name)
{
    size_t dlen;
    int rfd;
    sf_split(op->path, op->path_len, &dlen, name);
    if (tx->dir_fd >= 0 && tx->dir_root == op->root && tx->dir_path.len == dlen &&
        !memcmp(tx->dir_path.buf, op->path, dlen))
        return tx->dir_fd;
    if (tx->dir_fd >= 0)
        close(tx->dir_fd);
    tx->dir_fd = -1;
    rfd = mf_root_fd(tx->t, op->root, false);
    if (rfd < 0)
        return -1;
    tx->dir_fd = sf_open_dir(rfd, op->path, dlen, false, NULL);
    if (tx->dir_fd < 0)
        return -1;
    tx->dir_root = op->root;
    strbuf_reset(&tx->dir_path);
    strbuf_add(&tx->dir_path, op->path, dlen);
    return tx->dir_fd;
}

/* Makes the next scan see this path as changed (its content did not get through); later
 * when a scan is still filling the delta. */
static void invalidate(delta_tx *tx, const mf_op *op)
{
    mf_node *n;
    if (tx->open) {
        XGROW(tx->lost, tx->alost, tx->nlost + 1);
        tx->lost[tx->nlost++] = (size_t)(op - tx->d.ops);
        return;
    }
    n = mf_lookup(tx->t, op->root, op->path, op->path_len);
    if (n) {
        n->size = UINT64_MAX;
        n->flags &= (uint8_t)~MF_HASHED;
    }
}

/* A file that could not be opened (mode 000, or 0200, as an ordinary user; a sandbox's root
 * has no capabilities to read it either) is not synced. The user hears of it once per file,
 * with what to do: a warning on every command that leaves it in the tree would be noise that
 * bash never prints. Its node remembers the warning (MF_UNREADABLE), so it must be found in
 * the manifest, which cannot be touched while a scan is still filling the delta: until then
 * the op is only noted. */
static void tell_unreadable(delta_tx *tx, size_t op_index, int err)
{
    const mf_op *op = &tx->d.ops[op_index];
    mf_node *n;
    char *msg;

    if (tx->open) {
        XGROW(tx->unread, tx->aunread, tx->nunread + 1);
        tx->unread[tx->nunread].op = op_index;
        tx->unread[tx->nunread++].err = err;
        return;
    }
    n = mf_lookup(tx->t, op->root, op->path, op->path_len);
    if (n && (n->flags & MF_UNREADABLE))
        return;
    if (n)
        n->flags |= MF_UNREADABLE;
    if (!tx->warn)
        return;
    msg = xasprintf("cannot read %s: %s; it is not synced until it is readable (chmod u+r) "
                    "or excluded (.sbxignore, AGENT_SANDBOX_SYNC_EXCLUDE); said once",
                    op->path, strerror(err));
    tx->warn(tx->wctx, msg);
    free(msg);
}

/* Appends up to n content bytes of the current file to out; false at a short file. */
static bool add_content(delta_tx *tx, strbuf *out, size_t n)
{
    if (tx->fd < 0) {
        strbuf_add(out, tx->mem.buf + tx->off, n);
        tx->off += n;
        return true;
    }
    strbuf_grow(out, n);
    while (n) {
        ssize_t r = pread(tx->fd, out->buf + out->len, n, (off_t)tx->off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        strbuf_setlen(out, out->len + (size_t)r);
        tx->off += (uint64_t)r;
        n -= (size_t)r;
    }
    return true;
}

/* Where the current file's content at tx->off goes: returns the length of the hole that
 * starts there (0 when data does), and leaves in tx->data_end where the data run ends, as
 * SEEK_DATA/SEEK_HOLE say. A file system without them (EINVAL: some FUSE and gVisor mounts)
 * shows one data run; chunks of zeros still travel as holes (see is_zero()). -1: the file
 * no longer reaches tx->size (it shrank while it was sent). */
static int64_t hole_at(delta_tx *tx)
{
    off_t d, h;
    if (tx->fd < 0 || tx->no_seek_data) {
        tx->data_end = tx->size;
        return 0;
    }
    if (tx->off < tx->data_end)
        return 0;
    d = lseek(tx->fd, (off_t)tx->off, SEEK_DATA);
    if (d < 0) {
        struct stat st;
        if (errno != ENXIO) {
            tx->no_seek_data = true;
            tx->data_end = tx->size;
            return 0;
        }
        /* No data after off: a hole to the end, if the file still has that size. */
        if (fstat(tx->fd, &st) < 0 || (uint64_t)st.st_size < tx->size)
            return -1;
        tx->data_end = tx->size;
        return (int64_t)(tx->size - tx->off);
    }
    if ((uint64_t)d > tx->off) {
        tx->data_end = tx->off;   /* asked again after the hole */
        return (int64_t)(((uint64_t)d < tx->size ? (uint64_t)d : tx->size) - tx->off);
    }
    h = lseek(tx->fd, d, SEEK_HOLE);
    tx->data_end = h < 0 || (uint64_t)h > tx->size ? tx->size : (uint64_t)h;
    if (tx->data_end <= tx->off)
        tx->data_end = tx->size;
    return 0;
}

static bool is_zero(const char *p, size_t n)
{
    return n && p[0] == 0 && !memcmp(p, p + 1, n - 1);
}

/* The current data run's next piece: at most SYNC_CHUNK bytes, never past its end. */
static size_t data_piece(const delta_tx *tx)
{
    uint64_t left = (tx->data_end > tx->off ? tx->data_end : tx->size) - tx->off;
    return left < SYNC_CHUNK ? (size_t)left : SYNC_CHUNK;
}

/* Done with the current file's content (sent, or cancelled): closes it. */
static void end_file(delta_tx *tx)
{
    if (tx->fd >= 0)
        close(tx->fd);
    tx->fd = -1;
    strbuf_reset(&tx->mem);
    tx->in_file = false;
}

/* A .git file that can name a remote's URL (gitcred.h): when its text has a secret in a URL,
 * the text without them goes in tx->mem instead of the file (fd is closed) and true is
 * returned; the host's file is not touched. A file too big to filter goes empty: a token
 * in the sandbox is the attack this stops, an empty reflog there costs nothing. */
static bool cred_filtered(delta_tx *tx, const mf_op *op, int fd)
{
    strbuf text = STRBUF_INIT;
    int r;

    if (!tx->filter_git || !git_push_strips_credentials(op->path, op->path_len))
        return false;
    r = strbuf_read_fd(&text, fd, GIT_CRED_FILTER_MAX);
    if (r == 0 && !urlcred_has(text.buf, text.len)) {
        strbuf_release(&text);
        return false;   /* sent from the file as usual */
    }
    strbuf_reset(&tx->mem);
    if (r == 0)
        urlcred_strip(text.buf, text.len, &tx->mem);
    strbuf_release(&text);
    close(fd);
    tx->fd = -1;
    tx->size = tx->mem.len;
    return true;
}

/* Starts sending op: appends its ENTRY frame (with inline content). false: skip it (gone
 * since the scan, unreadable, or shorter than it was: the next scan sees it again). */
static bool start_op(delta_tx *tx, const mf_op *op, strbuf *out)
{
    wire_entry e = { .op = op->op, .ftype = op->type, .root = op->root,
                     .flags = op->exec ? WIRE_ENTRY_EXEC : 0, .mtime_ns = op->mtime_ns,
                     .path = op->path, .path_len = op->path_len };
    const char *name;
    size_t at;
    int dfd;

    if (op->op == WIRE_OP_DELETE || op->type == MF_DIR) {
        at = wire_put_entry_begin(out, &e);
        wire_end(out, at);
        return true;
    }
    dfd = parent_fd(tx, op, &name);
    if (dfd < 0)
        return false;   /* gone since the scan: the next scan says so */
    if (op->type == MF_LNK) {
        char target[SYNC_MAX_LINK + 1];
        ssize_t n = readlinkat(dfd, name, target, sizeof(target));
        if (n <= 0 || n > SYNC_MAX_LINK) {
            invalidate(tx, op);
            return false;
        }
        e.size = (uint64_t)n;
        at = wire_put_entry_begin(out, &e);
        strbuf_add(out, target, (size_t)n);
        wire_end(out, at);
        return true;
    }

    {
        /* The scan's stat goes with the content: a file changed since is sent again by the
         * next scan; one that shrank is cancelled below; a non-file opened in its place
         * fails to read (a directory) or reads nothing (a fifo, thanks to O_NONBLOCK). */
        int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        size_t inline_n;
        if (fd < 0) {
            if (errno != ENOENT && errno != ELOOP && errno != ENOTDIR)
                tell_unreadable(tx, (size_t)(op - tx->d.ops), errno);
            return false;
        }
        tx->off = 0;
        tx->fd = fd;
        if (tx->filter_git && mf_root_at(tx->t, op->root)->kind == WIRE_ROOT_CODE &&
            git_is_repo_config(op->path, op->path_len)) {
            char *text = xmalloc(GITCONFIG_MAX + 2);
            ssize_t n = read_full(fd, text, GITCONFIG_MAX + 1);
            strbuf_reset(&tx->mem);
            /* Too big or unreadable counts as unparsable: an empty config. */
            if (n < 0 || n > GITCONFIG_MAX ||
                gitconfig_filter_repo(text, (size_t)n, &tx->mem) < 0)
                strbuf_reset(&tx->mem);
            free(text);
            close(fd);
            tx->fd = -1;
            tx->size = tx->mem.len;
        } else if (!cred_filtered(tx, op, fd)) {
            tx->size = op->size;
        }
        e.size = tx->size;
        /* A file that starts with a hole carries no inline bytes: the hole goes first. */
        tx->data_end = 0;
        inline_n = 0;
        if (tx->size) {
            int64_t hole = hole_at(tx);
            if (hole == 0)
                inline_n = data_piece(tx);
        }
        at = wire_put_entry_begin(out, &e);
        if (!add_content(tx, out, inline_n)) {
            /* Shorter than it said: send it empty-cancelled rather than wrong. */
            strbuf_setlen(out, at);
            end_file(tx);
            invalidate(tx, op);
            return false;
        }
        if (is_zero(out->buf + out->len - inline_n, inline_n)) {
            /* Zeros (a file system that hides its holes): a hole instead, as in CHUNKs. */
            strbuf_setlen(out, out->len - inline_n);
            wire_end(out, at);
            wire_put_hole(out, inline_n);
        } else {
            wire_end(out, at);
        }
        tx->bytes += tx->size;
        if (tx->off < tx->size)
            tx->in_file = true;
        else
            end_file(tx);
        return true;
    }
}

/* Ends the delta early (the host cancelled the pull): a file under way is cancelled, the
 * rest is not sent, and DELTA_END counts only what was, so the receiver's count check
 * still holds. */
void delta_tx_cancel(delta_tx *tx, strbuf *out)
{
    if (tx->state == 2)
        return;
    if (tx->state == 0) {
        delta_tx_fill(tx, out, out->len);   /* DELTA_BEGIN only: nothing else fits */
    }
    if (tx->in_file) {
        wire_frame_raw(out, WIRE_ENTRY_CANCEL, 0, 0, NULL, 0);
        end_file(tx);
    }
    tx->next = tx->d.n;
    tx->open = false;
    tx->nlost = tx->nunread = 0;
    size_t at = wire_begin(out, WIRE_DELTA_END, 0, 0);
    wire_u64(out, tx->seq);
    wire_u64(out, tx->entries);
    wire_end(out, at);
    tx->state = 2;
}

/* Appends frames to out until it holds limit bytes or the delta is done (true): the
 * caller's limit is its output window, so a large delta never sits whole in memory. At
 * the end, the entries whose content did not get through are marked changed for the next
 * scan, and the unreadable ones reported, before DELTA_END. */
bool delta_tx_fill(delta_tx *tx, strbuf *out, size_t limit)
{
    if (tx->state == 0) {
        size_t at = wire_begin(out, WIRE_DELTA_BEGIN, 0, 0);
        wire_u64(out, tx->seq);
        wire_u64(out, tx->acked);
        wire_end(out, at);
        tx->state = 1;
    }
    while (tx->state == 1 && out->len < limit) {
        if (tx->in_file) {
            int64_t hole = hole_at(tx);
            size_t n, at;
            if (hole > 0) {
                if (hole > (int64_t)SYNC_HOLE_PIECE) {
                    hole = SYNC_HOLE_PIECE;
                    tx->data_end = tx->off;   /* the rest of the hole next time */
                }
                wire_put_hole(out, (uint64_t)hole);
                tx->off += (uint64_t)hole;
                if (tx->off >= tx->size)
                    end_file(tx);
                continue;
            }
            n = data_piece(tx);
            at = wire_begin(out, WIRE_CHUNK, 0, 0);
            if (hole < 0 || !add_content(tx, out, n)) {
                const mf_op *op = &tx->d.ops[tx->next - 1];
                strbuf_setlen(out, at);
                wire_frame_raw(out, WIRE_ENTRY_CANCEL, 0, 0, NULL, 0);
                invalidate(tx, op);
                end_file(tx);
                continue;
            }
            if (is_zero(out->buf + at + WIRE_HEADER, n)) {
                /* Zeros stored as data (or a file system that hides its holes): a hole is
                 * as good, and the receiver does not store them. */
                strbuf_setlen(out, at);
                wire_put_hole(out, n);
            } else {
                wire_end(out, at);
            }
            if (tx->off >= tx->size)
                end_file(tx);
            continue;
        }
        if (tx->next < tx->d.n) {
            const mf_op *op = &tx->d.ops[tx->next++];
            if (start_op(tx, op, out))
                tx->entries++;
            continue;
        }
        if (tx->open)
            break;
        for (size_t i = 0; i < tx->nlost; i++)
            invalidate(tx, &tx->d.ops[tx->lost[i]]);
        tx->nlost = 0;
        for (size_t i = 0; i < tx->nunread; i++)
            tell_unreadable(tx, tx->unread[i].op, tx->unread[i].err);
        tx->nunread = 0;
        {
            size_t at = wire_begin(out, WIRE_DELTA_END, 0, 0);
            wire_u64(out, tx->seq);
            wire_u64(out, tx->entries);
            wire_end(out, at);
            tx->state = 2;
        }
    }
    return tx->state == 2;
}
