/* The manifest's inotify bookkeeping: which watch serves which nodes, and the dirty names
 * its events add (a scan then visits only those); see manifest.h. */
#include "sync/manifest_int.h"

/* ---- inotify bookkeeping ----------------------------------------------------------------- */

/* The watch table: inotify watch descriptor -> the nodes it serves, open addressing with
 * deleted slots (-1) so that a probe passes over them. */
static size_t wd_hash(int wd, size_t cap)
{
    return ((uint32_t)wd * 2654435761u) & (cap - 1);
}

static wd_slot *wd_slot_for(mf_tree *t, int wd, bool create);

/* Grows the table (dropping deleted slots). */
static void wd_rehash(mf_tree *t, size_t cap)
{
    wd_slot *old = t->wds;
    size_t ocap = t->awds;
    t->wds = xcalloc(cap, sizeof(*t->wds));
    t->awds = cap;
    t->nwds = 0;
    for (size_t i = 0; i < ocap; i++) {
        if (old[i].wd > 0) {
            wd_slot *s = wd_slot_for(t, old[i].wd, true);
            s->nodes = old[i].nodes;
            s->nnodes = old[i].nnodes;
        }
    }
    free(old);
}

/* The slot of wd (made when create), or NULL. */
static wd_slot *wd_slot_for(mf_tree *t, int wd, bool create)
{
    size_t i;
    if (wd <= 0)
        return NULL;
    if (create && (t->nwds + 1) * 2 > t->awds)
        wd_rehash(t, t->awds ? t->awds * 2 : 1024);
    if (!t->awds)
        return NULL;
    for (i = wd_hash(wd, t->awds);; i = (i + 1) & (t->awds - 1)) {
        if (t->wds[i].wd == wd)
            return &t->wds[i];
        if (t->wds[i].wd == 0)
            break;
    }
    if (!create)
        return NULL;
    t->wds[i].wd = wd;
    t->wds[i].nodes = NULL;
    t->wds[i].nnodes = 0;
    t->nwds++;
    return &t->wds[i];
}

/* Notes that n is served by watch wd (once). */
static void wd_ref(mf_tree *t, int wd, mf_node *n)
{
    wd_slot *s = wd_slot_for(t, wd, true);
    for (size_t i = 0; i < s->nnodes; i++)
        if (s->nodes[i] == n)
            return;
    s->nodes = xrealloc(s->nodes, (s->nnodes + 1) * sizeof(*s->nodes));
    s->nodes[s->nnodes++] = n;
    n->wd = wd;
}

/* Empties a slot, marking it deleted. */
static void wd_drop_slot(wd_slot *s)
{
    free(s->nodes);
    s->nodes = NULL;
    s->nnodes = 0;
    s->wd = -1;
}

/* n no longer uses its watch; the last node to go removes it. */
void mf_wd_unref(mf_tree *t, mf_node *n)
{
    wd_slot *s = wd_slot_for(t, n->wd, false);
    if (s) {
        for (size_t i = 0; i < s->nnodes; i++) {
            if (s->nodes[i] == n) {
                s->nodes[i] = s->nodes[--s->nnodes];
                break;
            }
        }
        if (!s->nnodes) {
            inotify_rm_watch(t->ifd, s->wd);
            wd_drop_slot(s);
        }
    }
    n->wd = -1;
}

/* Stops watching for good: every later scan is a full walk. */
void mf_watch_off(mf_tree *t)
{
    if (t->ifd >= 0)
        close(t->ifd);
    t->ifd = -1;
    for (size_t i = 0; i < t->awds; i++) {
        for (size_t k = 0; t->wds[i].wd > 0 && k < t->wds[i].nnodes; k++)
            t->wds[i].nodes[k]->wd = -1;
        free(t->wds[i].nodes);
    }
    free(t->wds);
    t->wds = NULL;
    t->nwds = t->awds = 0;
    for (size_t i = 0; i < t->ndirty; i++) {
        free(t->dirty[i].dir);
        free(t->dirty[i].name);
    }
    t->ndirty = 0;
    t->need_full = true;
    if (t->fsm)
        fsm_lost(t->fsm, false);
}

/* Watches the open directory fd for node n (before it is read, so nothing is missed). */
void mf_watch_dir(mf_tree *t, mf_node *n, int fd)
{
    char proc[64];
    int wd;
    if (t->ifd < 0 || n->wd >= 0)
        return;
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    wd = inotify_add_watch(t->ifd, proc, WATCH_MASK);
    if (wd < 0) {
        /* Out of watches (or no /proc): correctness needs every directory watched. */
        mf_watch_off(t);
        return;
    }
    wd_ref(t, wd, n);
}

void mf_add_dirty(mf_tree *t, uint16_t root, const char *dir, size_t dir_len,
                  const char *name, size_t name_len)
{
    dirty_ent *d;
    if (t->need_full)
        return;
    if (t->ndirty >= MAX_DIRTY) {
        for (size_t i = 0; i < t->ndirty; i++) {
            free(t->dirty[i].dir);
            free(t->dirty[i].name);
        }
        t->ndirty = 0;
        t->need_full = true;
        return;
    }
    XGROW(t->dirty, t->adirty, t->ndirty + 1);
    d = &t->dirty[t->ndirty++];
    d->root = root;
    d->dir = xstrndup(dir, dir_len);
    d->name = xstrndup(name, name_len);
}

/* The relative path of node n (its root's top is ""). */
void mf_node_path(const mf_node *n, strbuf *out)
{
    const mf_node *chain[SYNC_MAX_DEPTH + 2];
    size_t k = 0;
    strbuf_reset(out);
    for (; n && n->parent && k < ARRAY_SIZE(chain); n = n->parent)
        chain[k++] = n;
    while (k--) {
        if (out->len)
            strbuf_addch(out, '/');
        strbuf_add(out, chain[k]->name, chain[k]->name_len);
    }
}

void mf_dirty_node_entry(mf_tree *t, mf_node *n)
{
    strbuf p = STRBUF_INIT;
    if (!n->parent)
        return;
    mf_node_path(n->parent, &p);
    mf_add_dirty(t, n->root, p.buf, p.len, n->name, n->name_len);
    strbuf_release(&p);
}

/* Tells the fsmonitor journal that the directory of node n itself changed (moved, deleted,
 * its watch gone: unwatched, if it is still there, until a scan watches it again, so fresh);
 * the top of a root has no path of its own: all is unknown then. */
static void fsm_note_node(mf_tree *t, const mf_node *n, strbuf *p, bool unwatched)
{
    if (!t->fsm)
        return;
    if (!n->parent) {
        fsm_lost(t->fsm, false);
        return;
    }
    mf_node_path(n, p);
    fsm_note(t->fsm, n->root, p->buf, p->len, true, unwatched);
}

void mf_drain_events(mf_tree *t)
{
    char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
    strbuf p = STRBUF_INIT;

    while (t->ifd >= 0) {
        ssize_t n = read(t->ifd, buf, sizeof(buf));
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
        for (char *q = buf; q < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)q;
            wd_slot *s;
            q += sizeof(*ev) + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) {
                t->need_full = true;
                /* A directory made meanwhile may be unwatched and unknown: nothing is
                 * vouched for until the full walk this forces has watched everything. */
                if (t->fsm)
                    fsm_lost(t->fsm, false);
                continue;
            }
            s = wd_slot_for(t, ev->wd, false);
            if (!s)
                continue;
            if (ev->mask & IN_IGNORED) {
                /* The kernel dropped the watch (the directory is gone): look again. */
                for (size_t k = 0; k < s->nnodes; k++) {
                    s->nodes[k]->wd = -1;
                    mf_dirty_node_entry(t, s->nodes[k]);
                    fsm_note_node(t, s->nodes[k], &p, true);
                }
                wd_drop_slot(s);
                continue;
            }
            for (size_t k = 0; k < s->nnodes; k++) {
                mf_node *d = s->nodes[k];
                if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
                    mf_dirty_node_entry(t, d);
                    fsm_note_node(t, d, &p, false);
                }
                if (ev->len) {
                    mf_node_path(d, &p);
                    mf_add_dirty(t, d->root, p.buf, p.len, ev->name, strlen(ev->name));
                    if (t->fsm) {
                        /* A directory made or moved in is not watched yet (or is, under
                         * its old path): fsm names it in every answer until a scan has
                         * watched it. */
                        bool is_dir = ev->mask & IN_ISDIR;
                        if (p.len)
                            strbuf_addch(&p, '/');
                        strbuf_addstr(&p, ev->name);
                        fsm_note(t->fsm, d->root, p.buf, p.len, is_dir,
                                 is_dir && (ev->mask & (IN_CREATE | IN_MOVED_TO)));
                    }
                }
            }
        }
    }
    strbuf_release(&p);
}

