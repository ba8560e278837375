/* Scanning a manifest tree: a stat walk, whole or over the dirty names, that updates the tree
 * and emits what changed as a delta; see manifest.h. */
#include "sync/manifest_int.h"

/* ---- scanning ---------------------------------------------------------------------------- */

/* One scan's state: the root being walked, the delta being filled, and where the walk is
 * (the directory's path and the .sbxignore rules of it and its ancestors, innermost last). */
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

/* Appends an operation for name in the current directory, as n now is, to the delta;
 * every MF_PROGRESS_OPS operations the progress callback may start sending them. */
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

/* Enters (path_push) and leaves (path_pop, back to the old length) a subdirectory. */
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

/* Whether name in the current directory is ignored: the nearest .sbxignore with a rule
 * for it decides (innermost first, as git's nested .gitignore files), then the global
 * excludes. A path too long to hold is ignored (it could not be synced anyway). */
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
    if (c->r->kind == WIRE_ROOT_TASK || c->r->kind == WIRE_ROOT_CREATE) {
        /* Task files and create-only directories are literal names. */
        if (strcmp(c->r->pat[c->depth], name))
            return false;
    } else if (!wildmatch(c->r->pat[c->depth], name, true)) {
        return false;
    }
    *must_be_dir = c->depth + 1 < c->r->npat;
    return true;
}

/* (Re)reads dir's .sbxignore (a regular file, not followed if a symlink, at most
 * IGN_MAX_FILE bytes) into dir->ign; none, or one without rules, leaves dir->ign NULL. */
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

/* A subdirectory to walk: never through a symlink, never blocking on a FIFO's open. */
static int open_subdir(int dirfd, const char *name)
{
    return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
}

/* A file recorded within RACY_WINDOW_NS of its ctime gets a content hash, so that a rewrite
 * within the same timestamp tick is still seen (mf_changed() compares it). */
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

/*
 * Whether name in the current directory is beyond what the wire carries: a path over
 * SYNC_MAX_PATH bytes, deeper than SYNC_MAX_DEPTH components, or a component over
 * SYNC_MAX_NAME (a file system other than Linux's may hold one). Such a path is not sent,
 * and nothing below it is walked: the other side would refuse it, and sent it once
 * failed the whole round (and, resent, every later one). The scan says so through its
 * warning callback (the command's stderr in the sandbox), naming the path shortened, once
 * (unless said: the path is known already).
 */
static bool over_wire_limits(scan_ctx *c, const char *name, size_t len, bool said)
{
    size_t plen = c->path.len + (c->path.len ? 1 : 0) + len;
    char head[64], tail[48], what[64], msg[320];

    if (len > SYNC_MAX_NAME)
        snprintf(what, sizeof(what), "a name over the %d-byte limit", SYNC_MAX_NAME);
    else if (plen > SYNC_MAX_PATH)
        snprintf(what, sizeof(what), "a path over the %d-byte limit", SYNC_MAX_PATH);
    else if (c->depth + 1 > SYNC_MAX_DEPTH)
        snprintf(what, sizeof(what), "a path deeper than %d components", SYNC_MAX_DEPTH);
    else
        return false;
    if (!c->warn || said)
        return true;
    /* The path's start and its last name, printable: it can be kilobytes long. */
    wire_sanitize(head, sizeof(head), c->path.buf, c->path.len < 60 ? c->path.len : 60);
    wire_sanitize(tail, sizeof(tail), name, len < 40 ? len : 40);
    snprintf(msg, sizeof(msg), "not synced: %s/%s%s%s%s (%zu bytes): %s; it stays where it "
             "was made", c->r->base, head, c->path.len > 60 ? ".../" : c->path.len ? "/" : "",
             tail, len > 40 ? "..." : "", plen, what);
    c->warn(c->wctx, msg);
    return true;
}

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
    if (over_wire_limits(c, name, len, old && old->type == MF_OTHER)) {
        /* Kept as a node that never syncs, as a fifo is, so that the next scan (a full
         * walk on every command where inotify is missing) does not say it again. */
        if (old && old->type == MF_OTHER)
            return old;
        mf_node_free(c->t, old);
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            return NULL;
        n = mf_node_new(name, len, MF_OTHER);
        mf_node_set_stat(n, &st, c->ref_ns);
        return n;
    }
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        goto gone;
    type = mf_stat_type(&st);
    if (must_be_dir && type != MF_DIR)
        goto drop_silently;
    if (excluded_here(c, name, len, type == MF_DIR)) {
        /* Never watched: git's fsmonitor must name it in every answer. */
        if (type == MF_DIR && c->t->fsm) {
            size_t old_len = c->path.len;
            path_push(c, name, len);
            fsm_note_blind(c->t->fsm, c->root, c->path.buf, c->path.len);
            path_pop(c, old_len);
        }
        goto drop_silently;
    }
    if (type == MF_OTHER) {
        /* FIFOs, sockets and devices hold no data to sync: they are skipped without a
         * word (bash says nothing about a mkfifo, and a warning on every command that
         * leaves one in the tree was noise on stderr that bash does not print). They are
         * kept as nodes so that a deletion of their directory still removes them. */
        if (old && old->type == MF_OTHER)
            return old;
        mf_node_free(c->t, old);
        n = mf_node_new(name, len, MF_OTHER);
        mf_node_set_stat(n, &st, c->ref_ns);
        return n;
    }
    if (old && old->type != type) {
        emit_delete_tree(c, old);
        mf_node_free(c->t, old);
        old = NULL;
    }
    if (!old) {
        n = mf_node_new(name, len, type);
        n->root = c->root;
        mf_node_set_stat(n, &st, c->ref_ns);
        hash_racy(n, dirfd, name);
        emit(c, WIRE_OP_PUT, n, name, len);
        if (type == MF_DIR)
            recursive = true;
    } else {
        n = old;
        if (type != MF_DIR && mf_changed(n, &st, dirfd, name)) {
            mf_node_set_stat(n, &st, c->ref_ns);
            hash_racy(n, dirfd, name);
            emit(c, WIRE_OP_PUT, n, name, len);
        } else if (type != MF_DIR && (n->flags & MF_RACY) &&
                   n->ctime_ns + RACY_WINDOW_NS < c->ref_ns) {
            n->flags &= (uint8_t)~MF_RACY;
        } else if (type == MF_DIR) {
            /* Another directory at this name (rm -r then mkdir, git checkout or stash): the
             * node's watch is still the old one's until its IN_IGNORED, which comes late while
             * anything holds the old directory open. Drop it and walk the new one, or what
             * happens in it is never seen. */
            if (n->wd >= 0 && n->ino != (uint64_t)st.st_ino && c->t->ifd >= 0)
                mf_wd_unref(c->t, n);
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
    mf_node_free(c->t, old);
    return NULL;
}

typedef struct dent {
    char *name;
} dent;

/* Names sort bytewise, as the nodes' children do, so a directory and its node merge in one
 * pass (scan_dir()). */
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

/*
 * Scans one directory against its node: its names and the node's children, both sorted,
 * are merged; a name only on disk or changed is emitted by scan_child(), a child only in
 * the manifest is deleted (with everything under it). The directory's .sbxignore is reread
 * first, since it decides what follows. recursive: subdirectories are scanned too (a full
 * walk); else only this level (inotify names the changes below), except that a new or
 * unwatched subdirectory is walked whole.
 */
static void scan_dir(scan_ctx *c, mf_node *dir, int dirfd, bool recursive)
{
    dent *names;
    char *block;
    size_t n, i = 0, j = 0, nn = 0, an = 0;
    mf_node **kids = NULL;
    bool pushed = false;

    mf_watch_dir(c->t, dir, dirfd);
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
            mf_node_free(c->t, old);
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
    mf_node_path(dir, &c->path);
    c->depth = 0;
    for (size_t i = 0; i < c->path.len; i++)
        c->depth += c->path.buf[i] == '/';
    if (c->path.len)
        c->depth++;
}

mf_node *mf_lookup_in(mf_node *top, const char *rel, size_t len)
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
        pos = mf_kid_pos(n, rel + i, j - i, &found);
        n = found ? n->kids[pos] : NULL;
        i = j + 1;
    }
    return n;
}

mf_node *mf_lookup(mf_tree *t, size_t root, const char *rel, size_t len)
{
    if (root >= t->nroots)
        return NULL;
    return mf_lookup_in(t->roots[root].top, rel, len);
}

/* Dirty names in tree order (root, directory, name), so that duplicates are adjacent and a
 * directory's events are handled together. */
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

/* A full walk of one root. A code directory that is missing, or no longer the directory we
 * hold open, is an error (a walk would report everything deleted); a sync path's base that
 * is missing has nothing to sync, and what we had under it is deleted. */
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
            mf_node_free(c->t, r->top->kids[k]);
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

/* One dirty name from inotify: its entry is compared afresh (a changed .sbxignore rescans
 * the whole directory, since its rules changed). A directory that went away is left to
 * its parent's events. */
static void scan_dirty(scan_ctx *c, dirty_ent *e)
{
    mf_node *dir = mf_lookup_in(c->t->roots[e->root].top, e->dir, strlen(e->dir));
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
    pos = mf_kid_pos(dir, e->name, strlen(e->name), &found);
    old = found ? dir->kids[pos] : NULL;
    if (found)
        mf_kid_remove(dir, pos);
    keep = scan_child(c, dir, dfd, e->name, old, false);
    if (keep) {
        pos = mf_kid_pos(dir, e->name, strlen(e->name), &found);
        mf_kid_insert(dir, pos, keep);
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
    if (t->fsm) {
        char **bases = xmalloc((t->nroots + 1) * sizeof(*bases));
        for (size_t i = 0; i < t->nroots; i++)
            bases[i] = t->roots[i].base;
        fsm_scanned(t->fsm, t->ifd >= 0 && ret == 0, bases, t->nroots);
        free(bases);
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

