/* The manifest tree: content hashes, nodes, roots, and recording what was applied; see
 * manifest.h (the API) and manifest_int.h (how the files share the tree). */
#include "sync/manifest_int.h"
#include "common/fsat.h"

/* ---- hashing ----------------------------------------------------------------------------- */

#define H_P1 0x9E3779B185EBCA87ULL
#define H_P2 0xC2B2AE3D27D4EB4FULL

/* One round of the content hash (a 64-bit multiply-rotate mix, as in xxHash): fast, not
 * cryptographic. It tells "changed" from "unchanged" for files whose stat cannot; both ends
 * compute it and nothing security-relevant rests on it. */
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

/* The content hash of an open file, read by pread to its end (EINTR retried): by fd, so
 * that it is the hash of the file the caller opened and checked, whatever is renamed over
 * its name meanwhile. */
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

/* The wall clock, in the file system's terms (ctimes are wall-clock times): what the
 * racy check compares a ctime with. */
int64_t mf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t mf_hash_str(uint64_t h, const void *s, size_t len)
{
    mf_hasher hs;
    mf_hash_init(&hs);
    hs.h ^= h;
    mf_hash_update(&hs, s, len);
    return mf_hash_final(&hs);
}

/* ---- nodes ------------------------------------------------------------------------------- */

/* A node with its name stored inline (one allocation per entry: a tree of 100,000 files
 * is that many nodes), not watched yet (wd -1). */
mf_node *mf_node_new(const char *name, size_t len, uint8_t type)
{
    mf_node *n = xcalloc(1, sizeof(*n) + len + 1);
    memcpy(n->name, name, len);
    n->name_len = (uint16_t)len;
    n->type = type;
    n->wd = -1;
    return n;
}


/* Frees n and its subtree, dropping their inotify watches (a watch left on a forgotten
 * directory would keep reporting into a node that is gone). */
void mf_node_free(mf_tree *t, mf_node *n)
{
    if (!n)
        return;
    for (uint32_t i = 0; i < n->nkids; i++)
        mf_node_free(t, n->kids[i]);
    if (n->wd >= 0 && t->ifd >= 0)
        mf_wd_unref(t, n);
    ign_free(n->ign);
    free(n->kids);
    free(n);
}

/* Binary search among dir's children: the index of name, or where it would go (*found). */
uint32_t mf_kid_pos(const mf_node *dir, const char *name, size_t len, bool *found)
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

void mf_kid_insert(mf_node *dir, uint32_t pos, mf_node *n)
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

void mf_kid_remove(mf_node *dir, uint32_t pos)
{
    memmove(dir->kids + pos, dir->kids + pos + 1, (dir->nkids - pos - 1) * sizeof(*dir->kids));
    dir->nkids--;
}

/* ref_ns: when the stat was taken; INT64_MAX marks it racy whatever its times. */
void mf_node_set_stat(mf_node *n, const struct stat *st, int64_t ref_ns)
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

/* The four kinds the sync knows; a fifo, socket or device is MF_OTHER, which is never
 * synced (its "content" is not a file's). */
uint8_t mf_stat_type(const struct stat *st)
{
    if (S_ISREG(st->st_mode))
        return MF_REG;
    if (S_ISDIR(st->st_mode))
        return MF_DIR;
    if (S_ISLNK(st->st_mode))
        return MF_LNK;
    return MF_OTHER;
}

/* Whether the file behind st differs from what n recorded, as git decides for its index:
 * any change of type, size, mtime, ctime, inode or mode is a change; equal stats are
 * believed, except for a racy entry (written within the file system's timestamp
 * granularity of its stat, so a second write could leave every field equal), whose
 * content is hashed again (by an O_NOFOLLOW open beneath dirfd) when a hash was recorded,
 * and which counts as changed otherwise. A wrong "unchanged" would lose a write; a wrong
 * "changed" only costs a transfer, so every doubt is "changed". */
bool mf_changed(const mf_node *n, const struct stat *st, int dirfd, const char *name)
{
    if (!n || !st)
        return n != NULL || st != NULL;
    if (n->type != mf_stat_type(st))
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

/* ---- the tree ---------------------------------------------------------------------------- */

/* A sync path's glob as its components (r->pat), matched one directory level at a time. */
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
        r->top = mf_node_new("", 0, MF_DIR);
        r->top->root = (uint16_t)i;
        id = mf_hash_str(id, &r->kind, 1);
        id = mf_hash_str(id, roots[i].base, roots[i].base_len);
        id = mf_hash_str(id, r->pattern, strlen(r->pattern));
    }
    t->global = ign_from_patterns(excludes, exclude_lens, nexcludes);
    for (size_t i = 0; i < nexcludes; i++)
        id = mf_hash_str(id, excludes[i], exclude_lens ? exclude_lens[i] : strlen(excludes[i]));
    t->config_id = id;
    return t;
}

void mf_clear(mf_tree *t)
{
    for (size_t i = 0; i < t->nroots; i++) {
        mf_root *r = &t->roots[i];
        mf_node *top = r->top;
        for (uint32_t k = 0; k < top->nkids; k++)
            mf_node_free(t, top->kids[k]);
        top->nkids = 0;
    }
    t->need_full = true;
}

void mf_adopt_roots(mf_tree *dst, mf_tree *src)
{
    mf_watch_off(src);
    for (size_t i = 0; i < dst->nroots; i++) {
        mf_root *d = &dst->roots[i];
        for (size_t j = 0; j < src->nroots; j++) {
            mf_root *s = &src->roots[j];
            if (s->kind != d->kind || strcmp(s->base, d->base) || strcmp(s->pattern, d->pattern))
                continue;
            mf_node *top = d->top;
            d->top = s->top;
            s->top = top;
            d->top->root = (uint16_t)i;
            s->top->root = (uint16_t)j;
            break;
        }
    }
    dst->need_full = true;
}

void mf_free(mf_tree *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nroots; i++) {
        mf_root *r = &t->roots[i];
        mf_node_free(t, r->top);
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

/* Root i's directory fd, opened once and held (every walk beneath it is *at() from it,
 * fsat.h). The root's own path is configuration (a code directory), never a path the
 * other side sent, which is why a plain open and mkdir -p are right for it. */
int mf_root_fd(mf_tree *t, size_t i, bool create)
{
    mf_root *r = &t->roots[i];
    if (r->fd >= 0)
        return r->fd;
    r->fd = open(r->base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (r->fd < 0 && errno == ENOENT && create) {
        /* mkdir -p (common/fsat.h): the agent makes the code directories at CONFIG; an
         * applier makes a root it writes into */
        if (sbx_mkdir_p(r->base, 0755, NULL) < 0)
            return -1;
        r->fd = open(r->base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    return r->fd;
}

/* Turns inotify watching on or off. On starts with a full scan (need_full): only a scan
 * puts the watches in place, and what happened before them is unknown. */
int mf_watch(mf_tree *t, bool on)
{
    if (!on) {
        mf_watch_off(t);
        return 0;
    }
    if (t->ifd >= 0)
        return 0;
    t->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    t->need_full = true;
    return t->ifd < 0 ? -1 : 0;
}

void mf_set_fsmonitor(mf_tree *t, fsm_state *fsm)
{
    t->fsm = fsm;
    if (fsm)
        fsm_lost(fsm, false);   /* nothing is known until a scan has watched everything */
}

int mf_watch_fd(const mf_tree *t)
{
    return t->ifd;
}

void mf_invalidate(mf_tree *t)
{
    t->need_full = true;
}

/* ---- recording what we applied ----------------------------------------------------------- */

/* Records that an applier wrote rel (st as it stat'ed the result, hash its content when
 * known), making the directories on the way, and replacing a node of another type: the
 * next scan then sees our own write as unchanged rather than sending it back to the side
 * it came from. Racy until mf_seal (mf_changed says why). A new directory is queued for
 * the next scan to watch (its changes are otherwise unseen). */
mf_node *mf_record(mf_tree *t, size_t root, const char *rel, size_t len, const struct stat *st,
                   uint64_t hash, bool hashed)
{
    mf_node *n;
    size_t i = 0;
    uint8_t type = mf_stat_type(st);

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
        pos = mf_kid_pos(n, rel + i, j - i, &found);
        k = found ? n->kids[pos] : NULL;
        if (k && !last && k->type != MF_DIR) {
            mf_kid_remove(n, pos);
            mf_node_free(t, k);
            k = NULL;
        }
        if (k && last && k->type != type) {
            mf_kid_remove(n, pos);
            mf_node_free(t, k);
            k = NULL;
        }
        if (!k) {
            k = mf_node_new(rel + i, j - i, last ? type : MF_DIR);
            mf_kid_insert(n, pos, k);
            if (k->type == MF_DIR && t->ifd >= 0) {
                /* Not watched yet: make the next scan visit (and watch) it. */
                strbuf p = STRBUF_INIT;
                mf_node_path(n, &p);
                mf_add_dirty(t, (uint16_t)root, p.buf, p.len, k->name, k->name_len);
                strbuf_release(&p);
            }
        }
        n = k;
        i = j + 1;
    }
    if (n == t->roots[root].top)
        return n;
    /* Just written: racy until mf_seal() finds its ctime old enough. */
    mf_node_set_stat(n, st, INT64_MAX);
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

/* After a round: the entries it wrote stop being racy once their ctime is older than the
 * timestamp granularity (a later write would now show in the stat). */
void mf_seal(mf_tree *t)
{
    int64_t now = mf_now_ns();
    for (size_t i = 0; i < t->npending; i++) {
        dirty_ent *e = &t->pending[i];
        mf_node *n = mf_lookup_in(t->roots[e->root].top, e->dir, strlen(e->dir));
        if (n && n->type == MF_REG && n->ctime_ns + RACY_WINDOW_NS < now)
            n->flags &= (uint8_t)~MF_RACY;
        free(e->dir);
    }
    t->npending = 0;
}

/* Makes rel look changed to the next scan whatever its stat (size UINT64_MAX, no hash): a
 * delta that carried it was lost, so the other side may not have it; sending it again is
 * cheap, losing it is not. */
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
    mf_dirty_node_entry(t, n);
}

/* Drops rel and its subtree from the manifest (it was removed by an applier). */
void mf_forget(mf_tree *t, size_t root, const char *rel, size_t len)
{
    mf_node *n = mf_lookup(t, root, rel, len);
    bool found;
    uint32_t pos;
    if (!n || !n->parent)
        return;
    pos = mf_kid_pos(n->parent, n->name, n->name_len, &found);
    if (found)
        mf_kid_remove(n->parent, pos);
    mf_node_free(t, n);
}

/* Whether rel is left out of the sync by an ignore file (its own directory's or any
 * ancestor's, the deepest deciding, as git's .gitignore) or the global excludes. */
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
            pos = mf_kid_pos(n, rel + i, j - i, &found);
            n = found ? n->kids[pos] : NULL;
        } else {
            n = NULL;
        }
        i = j + 1;
    }
}

/* Whether rel is within root's sync pattern (a code root: everything; a sync path's glob,
 * or a task file's or create path's exact components, one level at a time); *partial when
 * rel is a directory on the way to what the pattern names, not yet inside it. A component
 * over SYNC_MAX_NAME is outside (it could not be a name the pattern holds). */
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
        if (r->kind == WIRE_ROOT_TASK || r->kind == WIRE_ROOT_CREATE
                ? strcmp(r->pat[depth], comp) != 0
                                      : !wildmatch(r->pat[depth], comp, true))
            return false;
        depth++;
        i = j + 1;
    }
    *partial = depth < r->npat;
    return true;
}

