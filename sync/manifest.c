/* The manifest: scans, deltas, inotify, persistence; see manifest.h. */
#include "sync/manifest.h"
#include "sync/safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A file whose ctime is this close to the time we record it may still change within the same
 * timestamp tick without its stat changing: we keep a content hash for it ("racy"). */
#define RACY_WINDOW_NS (50 * 1000000LL)
/* More pending inotify names than this and a full walk is cheaper. */
#define MAX_DIRTY 65536

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | \
                    IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | \
                    IN_EXCL_UNLINK)

typedef struct dirty_ent {
    uint16_t root;
    char *dir;            /* relative path of the directory ("" for the base) */
    char *name;           /* the entry in it */
} dirty_ent;

typedef struct wd_slot {
    int wd;               /* 0: empty, -1: deleted */
    mf_node **nodes;      /* every node this watch serves: a directory can be reached by two
                           * roots (two task files in one directory), or seen at its old and
                           * new path while a move is being scanned */
    size_t nnodes;
} wd_slot;

struct mf_tree {
    mf_root *roots;
    size_t nroots;
    ign_list *global;
    uint64_t config_id;

    int ifd;              /* inotify, or -1 */
    bool need_full;
    wd_slot *wds;
    size_t nwds, awds;    /* used (incl. deleted) and capacity (a power of two) */
    dirty_ent *dirty;
    size_t ndirty, adirty;
    dirty_ent *pending;   /* files recorded since the last mf_seal() (dir = the path) */
    size_t npending, apending;
};

/* ---- hashing ----------------------------------------------------------------------------- */

#define H_P1 0x9E3779B185EBCA87ULL
#define H_P2 0xC2B2AE3D27D4EB4FULL

static inline uint64_t mix(uint64_t h, uint64_t w)
{
    h ^= w * H_P2;
    h = (h << 31) | (h >> 33);
    return h * H_P1;
}

void mf_hash_init(mf_hasher *hs)
{
    memset(hs, 0, sizeof(*hs));
    hs->h = 0x27D4EB2F165667C5ULL;
}

void mf_hash_update(mf_hasher *hs, const void *data, size_t len)
{
    const uint8_t *p = data;
    hs->len += len;
    while (hs->ntail && len) {
        hs->tail[hs->ntail++] = *p++;
        len--;
        if (hs->ntail == 8) {
            uint64_t w;
            memcpy(&w, hs->tail, 8);
            hs->h = mix(hs->h, w);
            hs->ntail = 0;
        }
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        hs->h = mix(hs->h, w);
        p += 8;
        len -= 8;
    }
    while (len--)
        hs->tail[hs->ntail++] = *p++;
}

uint64_t mf_hash_final(mf_hasher *hs)
{
    uint64_t w = 0, h;
    memcpy(&w, hs->tail, hs->ntail);
    h = mix(hs->h, w ^ ((uint64_t)hs->ntail << 56));
    h = mix(h, hs->len);
    h ^= h >> 29;
    h *= H_P1;
    h ^= h >> 32;
    return h;
}

int mf_hash_fd(int fd, uint64_t *out)
{
    char buf[65536];
    mf_hasher hs;
    off_t off = 0;
    mf_hash_init(&hs);
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof(buf), off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        mf_hash_update(&hs, buf, (size_t)n);
        off += n;
    }
    *out = mf_hash_final(&hs);
    return 0;
}

int64_t mf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t hash_str(uint64_t h, const void *s, size_t len)
{
    mf_hasher hs;
    mf_hash_init(&hs);
    hs.h ^= h;
    mf_hash_update(&hs, s, len);
    return mf_hash_final(&hs);
}

/* ---- nodes ------------------------------------------------------------------------------- */

static mf_node *node_new(const char *name, size_t len, uint8_t type)
{
    mf_node *n = xcalloc(1, sizeof(*n) + len + 1);
    memcpy(n->name, name, len);
    n->name_len = (uint16_t)len;
    n->type = type;
    n->wd = -1;
    return n;
}

static void wd_unref(mf_tree *t, mf_node *n);

static void node_free(mf_tree *t, mf_node *n)
{
    if (!n)
        return;
    for (uint32_t i = 0; i < n->nkids; i++)
        node_free(t, n->kids[i]);
    if (n->wd >= 0 && t->ifd >= 0)
        wd_unref(t, n);
    ign_free(n->ign);
    free(n->kids);
    free(n);
}

/* Binary search among dir's children: the index of name, or where it would go (*found). */
static uint32_t kid_pos(const mf_node *dir, const char *name, size_t len, bool *found)
{
    uint32_t lo = 0, hi = dir->nkids;
    *found = false;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const mf_node *k = dir->kids[mid];
        size_t m = k->name_len < len ? k->name_len : len;
        int c = memcmp(k->name, name, m);
        if (!c)
            c = (k->name_len > len) - (k->name_len < len);
        if (!c) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void kid_insert(mf_node *dir, uint32_t pos, mf_node *n)
{
    if (dir->nkids == dir->akids) {
        size_t a = dir->akids;
        XGROW(dir->kids, a, dir->nkids + 1);
        dir->akids = (uint32_t)a;
    }
    memmove(dir->kids + pos + 1, dir->kids + pos, (dir->nkids - pos) * sizeof(*dir->kids));
    dir->kids[pos] = n;
    dir->nkids++;
    n->parent = dir;
    n->root = dir->root;
}

static void kid_remove(mf_node *dir, uint32_t pos)
{
    memmove(dir->kids + pos, dir->kids + pos + 1, (dir->nkids - pos - 1) * sizeof(*dir->kids));
    dir->nkids--;
}

/* ref_ns: when the stat was taken; INT64_MAX marks it racy whatever its times. */
static void node_set_stat(mf_node *n, const struct stat *st, int64_t ref_ns)
{
    n->size = S_ISDIR(st->st_mode) ? 0 : (uint64_t)st->st_size;
    n->mtime_ns = sf_stat_mtime(st);
    n->ctime_ns = sf_stat_ctime(st);
    n->ino = (uint64_t)st->st_ino;
    n->mode = st->st_mode;
    n->flags &= (uint8_t)~(MF_RACY | MF_HASHED);
    if (ref_ns == INT64_MAX || n->ctime_ns + RACY_WINDOW_NS >= ref_ns)
        n->flags |= MF_RACY;
}

static uint8_t stat_type(const struct stat *st)
{
    if (S_ISREG(st->st_mode))
        return MF_REG;
    if (S_ISDIR(st->st_mode))
        return MF_DIR;
    if (S_ISLNK(st->st_mode))
        return MF_LNK;
    return MF_OTHER;
}

bool mf_changed(const mf_node *n, const struct stat *st, int dirfd, const char *name)
{
    if (!n || !st)
        return n != NULL || st != NULL;
    if (n->type != stat_type(st))
        return true;
    if (n->type == MF_DIR || n->type == MF_OTHER)
        return false;
    if (n->size != (uint64_t)st->st_size || n->mtime_ns != sf_stat_mtime(st) ||
        n->ctime_ns != sf_stat_ctime(st) || n->ino != (uint64_t)st->st_ino ||
        n->mode != st->st_mode)
        return true;
    if (n->type == MF_REG && (n->flags & MF_RACY)) {
        uint64_t h;
        int fd;
        bool differs = true;
        if (!(n->flags & MF_HASHED) || dirfd < 0)
            return true;
        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            return true;
        if (mf_hash_fd(fd, &h) == 0)
            differs = h != n->hash;
        close(fd);
        return differs;
    }
    return false;
}

/* ---- inotify bookkeeping ----------------------------------------------------------------- */

static size_t wd_hash(int wd, size_t cap)
{
    return ((uint32_t)wd * 2654435761u) & (cap - 1);
}

static wd_slot *wd_slot_for(mf_tree *t, int wd, bool create);

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

static void wd_drop_slot(wd_slot *s)
{
    free(s->nodes);
    s->nodes = NULL;
    s->nnodes = 0;
    s->wd = -1;
}

/* n no longer uses its watch; the last node to go removes it. */
static void wd_unref(mf_tree *t, mf_node *n)
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
static void watch_off(mf_tree *t)
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
}

/* Watches the open directory fd for node n (before it is read, so nothing is missed). */
static void watch_dir(mf_tree *t, mf_node *n, int fd)
{
    char proc[64];
    int wd;
    if (t->ifd < 0 || n->wd >= 0)
        return;
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    wd = inotify_add_watch(t->ifd, proc, WATCH_MASK);
    if (wd < 0) {
        /* Out of watches (or no /proc): correctness needs every directory watched. */
        watch_off(t);
        return;
    }
    wd_ref(t, wd, n);
}

static void add_dirty(mf_tree *t, uint16_t root, const char *dir, size_t dir_len,
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
static void node_path(const mf_node *n, strbuf *out)
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

static void dirty_node_entry(mf_tree *t, mf_node *n)
{
    strbuf p = STRBUF_INIT;
    if (!n->parent)
        return;
    node_path(n->parent, &p);
    add_dirty(t, n->root, p.buf, p.len, n->name, n->name_len);
    strbuf_release(&p);
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
                continue;
            }
            s = wd_slot_for(t, ev->wd, false);
            if (!s)
                continue;
            if (ev->mask & IN_IGNORED) {
                /* The kernel dropped the watch (the directory is gone): look again. */
                for (size_t k = 0; k < s->nnodes; k++) {
                    s->nodes[k]->wd = -1;
                    dirty_node_entry(t, s->nodes[k]);
                }
                wd_drop_slot(s);
                continue;
            }
            for (size_t k = 0; k < s->nnodes; k++) {
                mf_node *d = s->nodes[k];
                if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF))
                    dirty_node_entry(t, d);
                if (ev->len) {
                    node_path(d, &p);
                    add_dirty(t, d->root, p.buf, p.len, ev->name, strlen(ev->name));
                }
            }
        }
    }
    strbuf_release(&p);
}

/* ---- the tree ---------------------------------------------------------------------------- */

static void split_pattern(mf_root *r)
{
    const char *s = r->pattern;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n) {
            r->pat = xrealloc(r->pat, (r->npat + 1) * sizeof(*r->pat));
            r->pat[r->npat++] = xstrndup(s, n);
        }
        s += n;
        if (*s == '/')
            s++;
    }
}

mf_tree *mf_new(const wire_root *roots, size_t nroots, const char *const *excludes,
                const size_t *exclude_lens, size_t nexcludes, const char *prefix)
{
    mf_tree *t = xcalloc(1, sizeof(*t));
    uint64_t id = 0x5342584d46ULL;
    t->ifd = -1;
    t->need_full = true;
    t->nroots = nroots;
    t->roots = xcalloc(nroots ? nroots : 1, sizeof(*t->roots));
    for (size_t i = 0; i < nroots; i++) {
        mf_root *r = &t->roots[i];
        r->kind = roots[i].kind;
        r->base = xasprintf("%s%.*s", prefix ? prefix : "", (int)roots[i].base_len,
                            roots[i].base);
        r->pattern = xstrndup(roots[i].pattern ? roots[i].pattern : "", roots[i].pattern_len);
        split_pattern(r);
        r->scanned = true;
        r->fd = -1;
        r->top = node_new("", 0, MF_DIR);
        r->top->root = (uint16_t)i;
        id = hash_str(id, &r->kind, 1);
        id = hash_str(id, roots[i].base, roots[i].base_len);
        id = hash_str(id, r->pattern, strlen(r->pattern));
    }
    t->global = ign_from_patterns(excludes, exclude_lens, nexcludes);
    for (size_t i = 0; i < nexcludes; i++)
        id = hash_str(id, excludes[i], exclude_lens ? exclude_lens[i] : strlen(excludes[i]));
    t->config_id = id;
    return t;
}

void mf_clear(mf_tree *t)
{
    for (size_t i = 0; i < t->nroots; i++) {
        mf_root *r = &t->roots[i];
        mf_node *top = r->top;
        for (uint32_t k = 0; k < top->nkids; k++)
            node_free(t, top->kids[k]);
        top->nkids = 0;
    }
    t->need_full = true;
}

void mf_free(mf_tree *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nroots; i++) {
        mf_root *r = &t->roots[i];
        node_free(t, r->top);
        if (r->fd >= 0)
            close(r->fd);
        for (size_t k = 0; k < r->npat; k++)
            free(r->pat[k]);
        free(r->pat);
        free(r->base);
        free(r->pattern);
    }
    if (t->ifd >= 0)
        close(t->ifd);
    for (size_t i = 0; i < t->ndirty; i++) {
        free(t->dirty[i].dir);
        free(t->dirty[i].name);
    }
    free(t->dirty);
    for (size_t i = 0; i < t->npending; i++)
        free(t->pending[i].dir);
    free(t->pending);
    free(t->wds);
    free(t->roots);
    ign_free(t->global);
    free(t);
}

size_t mf_nroots(const mf_tree *t)
{
    return t->nroots;
}

mf_root *mf_root_at(mf_tree *t, size_t i)
{
    return i < t->nroots ? &t->roots[i] : NULL;
}

static int mkdir_p(const char *path)
{
    char buf[SYNC_MAX_PATH * 2 + 2];
    size_t n = strlen(path);
    if (n >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        buf[i] = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -1;
        buf[i] = i < n ? '/' : '\0';
    }
    return 0;
}

int mf_root_fd(mf_tree *t, size_t i, bool create)
{
    mf_root *r = &t->roots[i];
    if (r->fd >= 0)
        return r->fd;
    r->fd = open(r->base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (r->fd < 0 && errno == ENOENT && create) {
        if (mkdir_p(r->base) < 0)
            return -1;
        r->fd = open(r->base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    return r->fd;
}

int mf_watch(mf_tree *t, bool on)
{
    if (!on) {
        watch_off(t);
        return 0;
    }
    if (t->ifd >= 0)
        return 0;
    t->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    t->need_full = true;
    return t->ifd < 0 ? -1 : 0;
}

int mf_watch_fd(const mf_tree *t)
{
    return t->ifd;
}

void mf_invalidate(mf_tree *t)
{
    t->need_full = true;
}

/* ---- scanning ---------------------------------------------------------------------------- */

typedef struct scan_ctx {
    mf_tree *t;
    uint16_t root;
    mf_root *r;
    mf_delta *d;
    mf_warn_fn warn;
    void *wctx;
    int64_t ref_ns;
    strbuf path;          /* the current directory, relative to the root */
    const ign_list *ign[SYNC_MAX_DEPTH + 2];
    size_t nign;
    size_t depth;         /* components in path */
    char *dents;          /* getdents buffer */
} scan_ctx;

static void emit(scan_ctx *c, uint8_t op, const mf_node *n, const char *name, size_t len)
{
    mf_delta *d = c->d;
    mf_op *o;
    XGROW(d->ops, d->alloc, d->n + 1);
    o = &d->ops[d->n++];
    memset(o, 0, sizeof(*o));
    o->op = op;
    o->type = n->type;
    o->root = c->root;
    o->exec = n->type == MF_REG && (n->mode & S_IXUSR) != 0;
    o->size = op == WIRE_OP_PUT && n->type != MF_DIR ? n->size : 0;
    o->mtime_ns = n->mtime_ns;
    o->ino = n->ino;
    o->path_len = c->path.len + (c->path.len ? 1 : 0) + len;
    o->path = xmalloc(o->path_len + 1);
    if (c->path.len) {
        memcpy(o->path, c->path.buf, c->path.len);
        o->path[c->path.len] = '/';
    }
    memcpy(o->path + o->path_len - len, name, len);
    o->path[o->path_len] = '\0';
    if (op == WIRE_OP_PUT && n->type == MF_REG)
        d->bytes += n->size;
    if (d->progress && d->n % MF_PROGRESS_OPS == 0)
        d->progress(d->progress_ctx);
}

static void path_push(scan_ctx *c, const char *name, size_t len)
{
    if (c->path.len)
        strbuf_addch(&c->path, '/');
    strbuf_add(&c->path, name, len);
    c->depth++;
}

static void path_pop(scan_ctx *c, size_t old_len)
{
    strbuf_setlen(&c->path, old_len);
    c->depth--;
}

/* Deletions of n and everything below it, children first. */
static void emit_delete_tree(scan_ctx *c, const mf_node *n)
{
    if (n->type == MF_OTHER)
        return;
    if (n->type == MF_DIR && n->nkids) {
        size_t old = c->path.len;
        path_push(c, n->name, n->name_len);
        for (uint32_t i = n->nkids; i-- > 0;)
            emit_delete_tree(c, n->kids[i]);
        path_pop(c, old);
    }
    emit(c, WIRE_OP_DELETE, n, n->name, n->name_len);
}

static bool excluded_here(scan_ctx *c, const char *name, size_t len, bool is_dir)
{
    char rel[SYNC_MAX_PATH + SYNC_MAX_NAME + 2];
    size_t n = 0;
    if (c->path.len + len + 1 >= sizeof(rel))
        return true;
    if (c->path.len) {
        memcpy(rel, c->path.buf, c->path.len);
        rel[c->path.len] = '/';
        n = c->path.len + 1;
    }
    memcpy(rel + n, name, len);
    n += len;
    rel[n] = '\0';
    for (size_t i = c->nign; i-- > 0;) {
        int m = ign_match(c->ign[i], rel, n, is_dir);
        if (m >= 0)
            return m == 1;
    }
    return ign_match(c->t->global, rel, n, is_dir) == 1;
}

/* Whether a child at the current depth passes the root's pattern (sync paths, task files). */
static bool pattern_ok(scan_ctx *c, const char *name, bool *must_be_dir)
{
    *must_be_dir = false;
    if (c->r->kind == WIRE_ROOT_CODE || c->depth >= c->r->npat)
        return true;
    if (c->r->kind == WIRE_ROOT_TASK) {
        /* Task files are literal names. */
        if (strcmp(c->r->pat[c->depth], name))
            return false;
    } else if (!wildmatch(c->r->pat[c->depth], name, true)) {
        return false;
    }
    *must_be_dir = c->depth + 1 < c->r->npat;
    return true;
}

static void load_ignore(scan_ctx *c, mf_node *dir, int dirfd)
{
    char *text = NULL;
    size_t len = 0;
    int fd = openat(dirfd, ".sbxignore", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    ign_free(dir->ign);
    dir->ign = NULL;
    if (fd < 0)
        return;
    {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            size_t cap = st.st_size > IGN_MAX_FILE ? IGN_MAX_FILE : (size_t)st.st_size;
            ssize_t n;
            text = xmalloc(cap + 1);
            n = read_full(fd, text, cap);
            len = n > 0 ? (size_t)n : 0;
        }
    }
    close(fd);
    if (text) {
        dir->ign = ign_parse(text, len, c->path.buf, c->path.len);
        if (!ign_count(dir->ign)) {
            ign_free(dir->ign);
            dir->ign = NULL;
        }
    }
    free(text);
}

static int open_subdir(int dirfd, const char *name)
{
    return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
}

static void hash_racy(mf_node *n, int dirfd, const char *name)
{
    int fd;
    if (n->type != MF_REG || !(n->flags & MF_RACY))
        return;
    fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    if (mf_hash_fd(fd, &n->hash) == 0)
        n->flags |= MF_HASHED;
    close(fd);
}

static void scan_dir(scan_ctx *c, mf_node *dir, int dirfd, bool recursive);

/* Compares one directory entry with its node; returns the node to keep (NULL: none). */
static mf_node *scan_child(scan_ctx *c, mf_node *dir, int dirfd, const char *name,
                           mf_node *old, bool recursive)
{
    size_t len = strlen(name);
    struct stat st;
    bool must_be_dir;
    uint8_t type;
    mf_node *n;

    if (!pattern_ok(c, name, &must_be_dir) || sf_is_internal_name(name, len))
        goto drop_silently;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        goto gone;
    type = stat_type(&st);
    if (must_be_dir && type != MF_DIR)
        goto drop_silently;
    if (excluded_here(c, name, len, type == MF_DIR))
        goto drop_silently;
    if (type == MF_OTHER) {
        /* FIFOs, sockets and devices hold no data to sync: they are skipped without a
         * word (bash says nothing about a mkfifo, and a warning on every command that
         * leaves one in the tree was noise on stderr that bash does not print). They are
         * kept as nodes so that a deletion of their directory still removes them. */
        if (old && old->type == MF_OTHER)
            return old;
        node_free(c->t, old);
        n = node_new(name, len, MF_OTHER);
        node_set_stat(n, &st, c->ref_ns);
        return n;
    }
    if (old && old->type != type) {
        emit_delete_tree(c, old);
        node_free(c->t, old);
        old = NULL;
    }
    if (!old) {
        n = node_new(name, len, type);
        n->root = c->root;
        node_set_stat(n, &st, c->ref_ns);
        hash_racy(n, dirfd, name);
        emit(c, WIRE_OP_PUT, n, name, len);
        if (type == MF_DIR)
            recursive = true;
    } else {
        n = old;
        if (type != MF_DIR && mf_changed(n, &st, dirfd, name)) {
            node_set_stat(n, &st, c->ref_ns);
            hash_racy(n, dirfd, name);
            emit(c, WIRE_OP_PUT, n, name, len);
        } else if (type != MF_DIR && (n->flags & MF_RACY) &&
                   n->ctime_ns + RACY_WINDOW_NS < c->ref_ns) {
            n->flags &= (uint8_t)~MF_RACY;
        } else if (type == MF_DIR) {
            n->mode = st.st_mode;
            n->ino = (uint64_t)st.st_ino;
            /* An unwatched directory may hide anything: walk it. */
            if (c->t->ifd >= 0 && n->wd < 0)
                recursive = true;
        }
    }
    if (type == MF_DIR && recursive) {
        int fd = open_subdir(dirfd, name);
        if (fd >= 0) {
            size_t old_len = c->path.len;
            n->parent = dir;
            path_push(c, name, len);
            scan_dir(c, n, fd, true);
            path_pop(c, old_len);
            close(fd);
        }
    }
    return n;

gone:
    if (old)
        emit_delete_tree(c, old);
drop_silently:
    node_free(c->t, old);
    return NULL;
}

typedef struct dent {
    char *name;
} dent;

static int dent_cmp(const void *a, const void *b)
{
    return strcmp(((const dent *)a)->name, ((const dent *)b)->name);
}

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* Reads a directory's names (sorted) into a malloc'd array and one string block. */
static size_t read_names(scan_ctx *c, int fd, dent **out, char **block)
{
    strbuf names = STRBUF_INIT;
    size_t n = 0, alloc = 0;
    dent *v = NULL;

    if (!c->dents)
        c->dents = xmalloc(65536);
    for (;;) {
        long got = syscall(SYS_getdents64, fd, c->dents, 65536);
        if (got <= 0)
            break;
        for (long off = 0; off < got;) {
            struct linux_dirent64 *de = (struct linux_dirent64 *)(c->dents + off);
            off += de->d_reclen;
            if (de->d_name[0] == '.' &&
                (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
                continue;
            strbuf_addstr(&names, de->d_name);
            strbuf_addch(&names, '\0');
            n++;
        }
    }
    *block = strbuf_detach(&names, NULL);
    XGROW(v, alloc, n + 1);
    for (size_t i = 0, o = 0; i < n; i++) {
        v[i].name = *block + o;
        o += strlen(v[i].name) + 1;
    }
    qsort(v, n, sizeof(*v), dent_cmp);
    *out = v;
    return n;
}

static void scan_dir(scan_ctx *c, mf_node *dir, int dirfd, bool recursive)
{
    dent *names;
    char *block;
    size_t n, i = 0, j = 0, nn = 0, an = 0;
    mf_node **kids = NULL;
    bool pushed = false;

    watch_dir(c->t, dir, dirfd);
    n = read_names(c, dirfd, &names, &block);

    {
        bool has_ignore = false;
        for (size_t k = 0; k < n && !has_ignore; k++)
            has_ignore = !strcmp(names[k].name, ".sbxignore");
        if (has_ignore) {
            load_ignore(c, dir, dirfd);
        } else {
            ign_free(dir->ign);
            dir->ign = NULL;
        }
    }
    if (dir->ign && c->nign < ARRAY_SIZE(c->ign)) {
        c->ign[c->nign++] = dir->ign;
        pushed = true;
    }

    XGROW(kids, an, dir->nkids + n + 1);
    while (i < n || j < dir->nkids) {
        mf_node *old = NULL, *keep;
        const char *name;
        int cmp;
        if (i >= n)
            cmp = 1;
        else if (j >= dir->nkids)
            cmp = -1;
        else
            cmp = strcmp(names[i].name, dir->kids[j]->name);
        if (cmp > 0) {
            /* In the manifest, gone from the disk. */
            old = dir->kids[j++];
            if (old->type != MF_OTHER)
                emit_delete_tree(c, old);
            node_free(c->t, old);
            continue;
        }
        name = names[i++].name;
        if (cmp == 0)
            old = dir->kids[j++];
        keep = scan_child(c, dir, dirfd, name, old, recursive);
        if (keep) {
            keep->parent = dir;
            keep->root = c->root;
            kids[nn++] = keep;
        }
    }
    free(dir->kids);
    dir->kids = kids;
    dir->nkids = (uint32_t)nn;
    dir->akids = (uint32_t)an;
    if (pushed)
        c->nign--;
    free(names);
    free(block);
}

/* Sets up c's ignore stack and path for directory node dir (walking from the top). The
 * stack holds the rules of dir's ancestors, and dir's own with self (scan_dir() pushes a
 * directory's own rules itself, after reloading them). */
static void ctx_at(scan_ctx *c, mf_node *dir, bool self)
{
    const mf_node *chain[SYNC_MAX_DEPTH + 2];
    size_t k = 0;
    c->nign = 0;
    for (const mf_node *n = self ? dir : dir->parent; n && k < ARRAY_SIZE(chain); n = n->parent)
        chain[k++] = n;
    while (k--)
        if (chain[k]->ign && c->nign < ARRAY_SIZE(c->ign))
            c->ign[c->nign++] = chain[k]->ign;
    node_path(dir, &c->path);
    c->depth = 0;
    for (size_t i = 0; i < c->path.len; i++)
        c->depth += c->path.buf[i] == '/';
    if (c->path.len)
        c->depth++;
}

static mf_node *lookup_in(mf_node *top, const char *rel, size_t len)
{
    mf_node *n = top;
    size_t i = 0;
    while (n && i < len) {
        size_t j = i;
        bool found;
        uint32_t pos;
        while (j < len && rel[j] != '/')
            j++;
        if (n->type != MF_DIR)
            return NULL;
        pos = kid_pos(n, rel + i, j - i, &found);
        n = found ? n->kids[pos] : NULL;
        i = j + 1;
    }
    return n;
}

mf_node *mf_lookup(mf_tree *t, size_t root, const char *rel, size_t len)
{
    if (root >= t->nroots)
        return NULL;
    return lookup_in(t->roots[root].top, rel, len);
}

static int dirty_cmp(const void *a, const void *b)
{
    const dirty_ent *x = a, *y = b;
    int c = (int)x->root - (int)y->root;
    if (!c)
        c = strcmp(x->dir, y->dir);
    if (!c)
        c = strcmp(x->name, y->name);
    return c;
}

static int scan_root_full(scan_ctx *c, sbx_err *err)
{
    mf_root *r = c->r;
    int fd, rfd = mf_root_fd(c->t, c->root, false);
    if (rfd < 0) {
        if (r->kind == WIRE_ROOT_CODE)
            return sbx_errno(err, "cannot open code directory %s", r->base);
        /* A sync path's base that does not exist has nothing to sync. */
        for (uint32_t k = r->top->nkids; k-- > 0;)
            emit_delete_tree(c, r->top->kids[k]);
        for (uint32_t k = 0; k < r->top->nkids; k++)
            node_free(c->t, r->top->kids[k]);
        r->top->nkids = 0;
        return 0;
    }
    if (r->kind == WIRE_ROOT_CODE) {
        /* The directory we hold open must still be the one at that path: walking a deleted
         * (or replaced) directory would look like "everything was deleted". */
        struct stat a, b;
        if (fstat(rfd, &a) < 0 || stat(r->base, &b) < 0 || a.st_ino != b.st_ino ||
            a.st_dev != b.st_dev) {
            close(r->fd);
            r->fd = -1;
            return sbx_errf(err, "code directory %s is gone or was replaced", r->base);
        }
    }
    fd = openat(rfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return sbx_errno(err, "cannot read %s", r->base);
    ctx_at(c, r->top, false);
    scan_dir(c, r->top, fd, true);
    close(fd);
    return 0;
}

static void scan_dirty(scan_ctx *c, dirty_ent *e)
{
    mf_node *dir = lookup_in(c->t->roots[e->root].top, e->dir, strlen(e->dir));
    int rfd, dfd;
    bool found;
    uint32_t pos;
    mf_node *old, *keep;

    if (!dir || dir->type != MF_DIR)
        return;
    rfd = mf_root_fd(c->t, e->root, false);
    if (rfd < 0)
        return;
    dfd = sf_open_dir(rfd, e->dir, strlen(e->dir), false, NULL);
    if (dfd < 0) {
        /* The directory went away or became a symlink: its parent's events say so. */
        return;
    }
    if (!strcmp(e->name, ".sbxignore")) {
        int rd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rd >= 0) {
            ctx_at(c, dir, false);
            scan_dir(c, dir, rd, true);
            close(rd);
        }
        close(dfd);
        return;
    }
    ctx_at(c, dir, true);
    pos = kid_pos(dir, e->name, strlen(e->name), &found);
    old = found ? dir->kids[pos] : NULL;
    if (found)
        kid_remove(dir, pos);
    keep = scan_child(c, dir, dfd, e->name, old, false);
    if (keep) {
        pos = kid_pos(dir, e->name, strlen(e->name), &found);
        kid_insert(dir, pos, keep);
    }
    close(dfd);
}

int mf_scan(mf_tree *t, mf_delta *delta, bool *full, mf_warn_fn warn, void *ctx, sbx_err *err)
{
    scan_ctx c = { .t = t, .d = delta, .warn = warn, .wctx = ctx, .path = STRBUF_INIT };
    int ret = 0;

    mf_drain_events(t);
    c.ref_ns = mf_now_ns();
    *full = t->need_full || t->ifd < 0;
    if (*full) {
        for (size_t i = 0; i < t->ndirty; i++) {
            free(t->dirty[i].dir);
            free(t->dirty[i].name);
        }
        t->ndirty = 0;
        t->need_full = false;
        for (size_t i = 0; i < t->nroots && !ret; i++) {
            if (!t->roots[i].scanned)
                continue;
            c.root = (uint16_t)i;
            c.r = &t->roots[i];
            ret = scan_root_full(&c, err);
        }
        /* A watch that failed during the walk turned watching off: next time is full. */
    } else {
        size_t nd = t->ndirty;
        dirty_ent *d = t->dirty;
        t->dirty = NULL;
        t->ndirty = t->adirty = 0;
        if (nd)
            qsort(d, nd, sizeof(*d), dirty_cmp);
        for (size_t i = 0; i < nd; i++) {
            if (i && !dirty_cmp(&d[i - 1], &d[i]))
                continue;
            if (!t->roots[d[i].root].scanned)
                continue;
            c.root = d[i].root;
            c.r = &t->roots[d[i].root];
            scan_dirty(&c, &d[i]);
        }
        for (size_t i = 0; i < nd; i++) {
            free(d[i].dir);
            free(d[i].name);
        }
        free(d);
    }
    strbuf_release(&c.path);
    free(c.dents);
    return ret;
}

void mf_delta_release(mf_delta *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->ops[i].path);
    free(d->ops);
    d->ops = NULL;
    d->n = d->alloc = 0;
    d->bytes = 0;
}

/* ---- recording what we applied ----------------------------------------------------------- */

mf_node *mf_record(mf_tree *t, size_t root, const char *rel, size_t len, const struct stat *st,
                   uint64_t hash, bool hashed)
{
    mf_node *n;
    size_t i = 0;
    uint8_t type = stat_type(st);

    if (root >= t->nroots)
        return NULL;
    n = t->roots[root].top;
    while (i < len) {
        size_t j = i;
        bool found, last;
        uint32_t pos;
        mf_node *k;
        while (j < len && rel[j] != '/')
            j++;
        last = j >= len;
        pos = kid_pos(n, rel + i, j - i, &found);
        k = found ? n->kids[pos] : NULL;
        if (k && !last && k->type != MF_DIR) {
            kid_remove(n, pos);
            node_free(t, k);
            k = NULL;
        }
        if (k && last && k->type != type) {
            kid_remove(n, pos);
            node_free(t, k);
            k = NULL;
        }
        if (!k) {
            k = node_new(rel + i, j - i, last ? type : MF_DIR);
            kid_insert(n, pos, k);
            if (k->type == MF_DIR && t->ifd >= 0) {
                /* Not watched yet: make the next scan visit (and watch) it. */
                strbuf p = STRBUF_INIT;
                node_path(n, &p);
                add_dirty(t, (uint16_t)root, p.buf, p.len, k->name, k->name_len);
                strbuf_release(&p);
            }
        }
        n = k;
        i = j + 1;
    }
    if (n == t->roots[root].top)
        return n;
    /* Just written: racy until mf_seal() finds its ctime old enough. */
    node_set_stat(n, st, INT64_MAX);
    if (hashed && type == MF_REG) {
        n->hash = hash;
        n->flags |= MF_HASHED;
    }
    if (type == MF_REG) {
        XGROW(t->pending, t->apending, t->npending + 1);
        t->pending[t->npending].root = (uint16_t)root;
        t->pending[t->npending].dir = xstrndup(rel, len);
        t->pending[t->npending].name = NULL;
        t->npending++;
    }
    return n;
}

void mf_seal(mf_tree *t)
{
    int64_t now = mf_now_ns();
    for (size_t i = 0; i < t->npending; i++) {
        dirty_ent *e = &t->pending[i];
        mf_node *n = lookup_in(t->roots[e->root].top, e->dir, strlen(e->dir));
        if (n && n->type == MF_REG && n->ctime_ns + RACY_WINDOW_NS < now)
            n->flags &= (uint8_t)~MF_RACY;
        free(e->dir);
    }
    t->npending = 0;
}

void mf_invalidate_path(mf_tree *t, size_t root, const char *rel, size_t len, uint8_t type)
{
    mf_node *n = mf_lookup(t, root, rel, len);
    if (!n) {
        struct stat st;
        memset(&st, 0, sizeof(st));
        st.st_mode = type == MF_DIR ? S_IFDIR : type == MF_LNK ? S_IFLNK : S_IFREG;
        n = mf_record(t, root, rel, len, &st, 0, false);
        if (!n)
            return;
    }
    n->size = UINT64_MAX;
    n->flags &= (uint8_t)~MF_HASHED;
    dirty_node_entry(t, n);
}

void mf_forget(mf_tree *t, size_t root, const char *rel, size_t len)
{
    mf_node *n = mf_lookup(t, root, rel, len);
    bool found;
    uint32_t pos;
    if (!n || !n->parent)
        return;
    pos = kid_pos(n->parent, n->name, n->name_len, &found);
    if (found)
        kid_remove(n->parent, pos);
    node_free(t, n);
}

bool mf_excluded(mf_tree *t, size_t root, const char *rel, size_t len, bool is_dir)
{
    mf_node *n;
    const ign_list *stack[SYNC_MAX_DEPTH + 2];
    size_t k = 0, i = 0;

    if (root >= t->nroots)
        return true;
    /* Every ancestor directory is checked too: an excluded directory excludes its contents. */
    n = t->roots[root].top;
    while (true) {
        size_t j = i;
        bool found;
        uint32_t pos;
        if (n && n->ign && k < ARRAY_SIZE(stack))
            stack[k++] = n->ign;
        while (j < len && rel[j] != '/')
            j++;
        {
            bool dir = j < len || is_dir;
            int m = -1;
            for (size_t q = k; q-- > 0 && m < 0;)
                m = ign_match(stack[q], rel, j, dir);
            if (m < 0)
                m = ign_match(t->global, rel, j, dir);
            if (m == 1)
                return true;
        }
        if (j >= len)
            return false;
        if (n && n->type == MF_DIR) {
            pos = kid_pos(n, rel + i, j - i, &found);
            n = found ? n->kids[pos] : NULL;
        } else {
            n = NULL;
        }
        i = j + 1;
    }
}

bool mf_in_pattern(const mf_tree *t, size_t root, const char *rel, size_t len, bool *partial)
{
    const mf_root *r;
    size_t i = 0, depth = 0;
    *partial = false;
    if (root >= t->nroots)
        return false;
    r = &t->roots[root];
    if (r->kind == WIRE_ROOT_CODE)
        return true;
    while (i < len && depth < r->npat) {
        char comp[SYNC_MAX_NAME + 1];
        size_t j = i;
        while (j < len && rel[j] != '/')
            j++;
        if (j - i > SYNC_MAX_NAME)
            return false;
        memcpy(comp, rel + i, j - i);
        comp[j - i] = '\0';
        if (r->kind == WIRE_ROOT_TASK ? strcmp(r->pat[depth], comp) != 0
                                      : !wildmatch(r->pat[depth], comp, true))
            return false;
        depth++;
        i = j + 1;
    }
    *partial = depth < r->npat;
    return true;
}

/* ---- persistence ------------------------------------------------------------------------- */

#define MF_MAGIC "SBXMF\0\0\1"

static void save_node(strbuf *out, const mf_node *n, unsigned depth)
{
    wire_u16(out, (uint16_t)depth);
    wire_u8(out, n->type);
    wire_u8(out, n->flags);
    wire_u32(out, n->mode);
    wire_u64(out, n->size);
    wire_u64(out, (uint64_t)n->mtime_ns);
    wire_u64(out, (uint64_t)n->ctime_ns);
    wire_u64(out, n->ino);
    wire_u64(out, n->hash);
    wire_str(out, n->name, n->name_len);
    for (uint32_t i = 0; i < n->nkids; i++)
        save_node(out, n->kids[i], depth + 1);
}

size_t mf_count(const mf_tree *t)
{
    size_t total = 0;
    for (size_t i = 0; i < t->nroots; i++) {
        const mf_node *stack[SYNC_MAX_DEPTH + 2];
        uint32_t idx[SYNC_MAX_DEPTH + 2];
        size_t sp = 0;
        stack[0] = t->roots[i].top;
        idx[0] = 0;
        while (true) {
            const mf_node *n = stack[sp];
            if (idx[sp] < n->nkids) {
                const mf_node *k = n->kids[idx[sp]++];
                total++;
                if (k->nkids && sp + 1 < ARRAY_SIZE(stack)) {
                    stack[++sp] = k;
                    idx[sp] = 0;
                }
            } else if (sp == 0) {
                break;
            } else {
                sp--;
            }
        }
    }
    return total;
}

uint64_t mf_config_id(const mf_tree *t)
{
    return t->config_id;
}

int mf_save(mf_tree *t, const char *path, uint64_t pair_id, uint64_t seq_a, uint64_t seq_b,
            sbx_err *err)
{
    strbuf out = STRBUF_INIT;
    char *tmp;
    int fd, ret = 0;

    strbuf_add(&out, MF_MAGIC, 8);
    wire_u64(&out, t->config_id);
    wire_u64(&out, pair_id);
    wire_u64(&out, seq_a);
    wire_u64(&out, seq_b);
    wire_u32(&out, (uint32_t)t->nroots);
    for (size_t i = 0; i < t->nroots; i++) {
        const mf_node *top = t->roots[i].top;
        for (uint32_t k = 0; k < top->nkids; k++)
            save_node(&out, top->kids[k], 1);
        wire_u16(&out, 0);
    }
    wire_u64(&out, hash_str(0, out.buf, out.len));

    tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        ret = sbx_errno(err, "cannot write the sync state file %s", tmp);
    } else {
        if (write_full(fd, out.buf, out.len) < 0)
            ret = sbx_errno(err, "cannot write the sync state file %s", tmp);
        if (close(fd) < 0 && !ret)
            ret = sbx_errno(err, "cannot write the sync state file %s", tmp);
        if (!ret && rename(tmp, path) < 0)
            ret = sbx_errno(err, "cannot rename %s to %s", tmp, path);
        if (ret)
            unlink(tmp);
    }
    free(tmp);
    strbuf_release(&out);
    return ret;
}

void mf_peek(const char *path, uint64_t *pair_id, uint64_t *seq_a, uint64_t *seq_b, bool *ok)
{
    char *buf;
    size_t len;
    wire_rd r;
    sbx_err ignored;
    *ok = false;
    if (read_file(path, (size_t)1 << 31, &buf, &len, &ignored) < 0)
        return;
    if (len >= 8 + 8 * 4 + 4 + 8 && !memcmp(buf, MF_MAGIC, 8)) {
        wire_rd_init(&r, buf + len - 8, 8);
        if (wire_get_u64(&r) == hash_str(0, buf, len - 8)) {
            wire_rd_init(&r, buf + 16, len - 24);
            *pair_id = wire_get_u64(&r);
            *seq_a = wire_get_u64(&r);
            *seq_b = wire_get_u64(&r);
            *ok = true;
        }
    }
    free(buf);
}

int mf_load(mf_tree *t, const char *path, uint64_t *pair_id, uint64_t *seq_a,
            uint64_t *seq_b, bool *loaded, sbx_err *err)
{
    char *buf;
    size_t len;
    wire_rd r;
    uint64_t sum, cfg;
    uint32_t nroots;
    sbx_err ignored;

    *loaded = false;
    if (read_file(path, (size_t)1 << 31, &buf, &len, &ignored) < 0)
        return 0;   /* no state yet (or unreadable: start over) */
    if (len < 8 + 8 * 4 + 4 + 8 || memcmp(buf, MF_MAGIC, 8))
        goto ignore;
    wire_rd_init(&r, buf + len - 8, 8);
    sum = wire_get_u64(&r);
    if (sum != hash_str(0, buf, len - 8))
        goto ignore;
    wire_rd_init(&r, buf + 8, len - 16);
    cfg = wire_get_u64(&r);
    *pair_id = wire_get_u64(&r);
    *seq_a = wire_get_u64(&r);
    *seq_b = wire_get_u64(&r);
    nroots = wire_get_u32(&r);
    if (cfg != t->config_id || nroots != t->nroots)
        goto ignore;
    for (size_t i = 0; i < t->nroots; i++) {
        mf_node *stack[SYNC_MAX_DEPTH + 2];
        size_t sp = 0;
        stack[0] = t->roots[i].top;
        for (;;) {
            uint16_t depth = wire_get_u16(&r);
            const char *name;
            size_t nlen;
            mf_node *n, *parent;
            bool found;
            uint32_t pos;
            if (r.bad)
                goto bad;
            if (depth == 0)
                break;
            if (depth > sp + 1 || depth >= ARRAY_SIZE(stack))
                goto bad;
            sp = depth - 1;
            parent = stack[sp];
            {
                uint8_t type = wire_get_u8(&r);
                uint8_t flags = wire_get_u8(&r);
                uint32_t mode = wire_get_u32(&r);
                uint64_t size = wire_get_u64(&r);
                int64_t mt = (int64_t)wire_get_u64(&r), ct = (int64_t)wire_get_u64(&r);
                uint64_t ino = wire_get_u64(&r), hash = wire_get_u64(&r);
                if (!wire_get_str(&r, SYNC_MAX_NAME, &name, &nlen) || !nlen ||
                    parent->type != MF_DIR || (type != MF_REG && type != MF_DIR &&
                                               type != MF_LNK && type != MF_OTHER))
                    goto bad;
                pos = kid_pos(parent, name, nlen, &found);
                if (found || pos != parent->nkids)
                    goto bad;   /* children must come sorted and unique */
                n = node_new(name, nlen, type);
                n->flags = flags & (MF_RACY | MF_HASHED);
                n->mode = mode;
                n->size = size;
                n->mtime_ns = mt;
                n->ctime_ns = ct;
                n->ino = ino;
                n->hash = hash;
                kid_insert(parent, pos, n);
            }
            stack[++sp] = n;
        }
    }
    free(buf);
    *loaded = true;
    t->need_full = true;
    return 0;
bad:
    mf_clear(t);
ignore:
    free(buf);
    (void)err;
    return 0;
}

/* ---- path map ---------------------------------------------------------------------------- */

typedef struct pm_slot {
    char *key;       /* "root\0path" packed: root in 2 bytes then path */
    size_t klen;
    uint64_t v;
} pm_slot;

struct mf_pathmap {
    pm_slot *s;
    size_t n, cap;
};

mf_pathmap *mf_pathmap_new(void)
{
    mf_pathmap *m = xcalloc(1, sizeof(*m));
    m->cap = 64;
    m->s = xcalloc(m->cap, sizeof(*m->s));
    return m;
}

void mf_pathmap_free(mf_pathmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->s[i].key);
    free(m->s);
    free(m);
}

static size_t pm_index(const mf_pathmap *m, const char *key, size_t klen)
{
    return (size_t)hash_str(0, key, klen) & (m->cap - 1);
}

static char *pm_key(unsigned root, const char *path, size_t len, size_t *klen)
{
    char *k = xmalloc(len + 2);
    k[0] = (char)(root & 0xff);
    k[1] = (char)(root >> 8);
    memcpy(k + 2, path, len);
    *klen = len + 2;
    return k;
}

static void pm_insert(mf_pathmap *m, char *key, size_t klen, uint64_t v)
{
    size_t i = pm_index(m, key, klen);
    while (m->s[i].key) {
        if (m->s[i].klen == klen && !memcmp(m->s[i].key, key, klen)) {
            free(key);
            m->s[i].v = v;
            return;
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->s[i].key = key;
    m->s[i].klen = klen;
    m->s[i].v = v;
    m->n++;
}

static void pm_rebuild(mf_pathmap *m, size_t cap, uint64_t prune_upto)
{
    pm_slot *old = m->s;
    size_t ocap = m->cap;
    m->cap = cap;
    m->n = 0;
    m->s = xcalloc(cap, sizeof(*m->s));
    for (size_t i = 0; i < ocap; i++) {
        if (!old[i].key)
            continue;
        if (old[i].v <= prune_upto)
            free(old[i].key);
        else
            pm_insert(m, old[i].key, old[i].klen, old[i].v);
    }
    free(old);
}

void mf_pathmap_set(mf_pathmap *m, unsigned root, const char *path, size_t len, uint64_t v)
{
    size_t klen;
    char *k;
    if ((m->n + 1) * 2 > m->cap)
        pm_rebuild(m, m->cap * 2, 0);
    k = pm_key(root, path, len, &klen);
    pm_insert(m, k, klen, v);
}

uint64_t mf_pathmap_get(const mf_pathmap *m, unsigned root, const char *path, size_t len)
{
    size_t klen, i;
    char *k = pm_key(root, path, len, &klen);
    uint64_t v = 0;
    for (i = pm_index(m, k, klen); m->s[i].key; i = (i + 1) & (m->cap - 1)) {
        if (m->s[i].klen == klen && !memcmp(m->s[i].key, k, klen)) {
            v = m->s[i].v;
            break;
        }
    }
    free(k);
    return v;
}

void mf_pathmap_prune(mf_pathmap *m, uint64_t upto)
{
    size_t keep = 0, cap = 64;
    if (!m->n)
        return;
    for (size_t i = 0; i < m->cap; i++)
        keep += m->s[i].key && m->s[i].v > upto;
    if (keep == m->n)
        return;
    /* Sized for what stays: a first push of 100,000 paths must not leave a huge table to
     * rebuild at every round. */
    while (cap < keep * 2)
        cap *= 2;
    pm_rebuild(m, cap, upto);
}

size_t mf_pathmap_count(const mf_pathmap *m)
{
    return m->n;
}
