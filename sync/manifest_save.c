/* Persisting a manifest tree: the file format (a magic, the config and pairing ids, then the
 * nodes depth first) and loading it back; see manifest.h. */
#include "sync/manifest_int.h"

/* ---- persistence ------------------------------------------------------------------------- */

#define MF_MAGIC "SBXMF\0\0\1"

/* One node and, depth first, its children: the depth lets mf_load() rebuild the tree from
 * a flat list (and refuse one deeper than SYNC_MAX_DEPTH). */
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

/* The entries of every root (the tops not counted), by an explicit stack: a tree is at
 * most SYNC_MAX_DEPTH deep (mf_load and the scans refuse deeper), so the stack is fixed. */
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

/* Writes the tree to path atomically: a temp file beside it, renamed over it, so a crash
 * leaves the old state or the new one, never half of one (a half file would load as a
 * tree that misses entries, and their files would look deleted on one side). The hash
 * at the end lets mf_load tell a torn file from a whole one (not a forgery: it is no
 * MAC); O_NOFOLLOW keeps the write from going through a symlink planted at the temp name. */
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
    wire_u64(&out, mf_hash_str(0, out.buf, out.len));

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

/* The ids alone, without the tree (the agent's start: whether the host and it still
 * agree on where the pairing is); *ok false for a missing or damaged file. */
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
        if (wire_get_u64(&r) == mf_hash_str(0, buf, len - 8)) {
            wire_rd_init(&r, buf + 16, len - 24);
            *pair_id = wire_get_u64(&r);
            *seq_a = wire_get_u64(&r);
            *seq_b = wire_get_u64(&r);
            *ok = true;
        }
    }
    free(buf);
}

/* Loads a saved tree into t (its roots configured as when it was saved, config_id). A
 * state file is data, not trusted structure: the agent's lives inside the sandbox, where
 * anything may rewrite it, and any file may be torn by a crash. So a wrong magic, hash or
 * configuration is ignored (a full scan rebuilds the state), and so is a well-hashed file
 * whose nodes do not form a tree (a depth that jumps, a child under a non-directory,
 * children unsorted or twice, an unknown type, a name over SYNC_MAX_NAME): nothing of it
 * is kept (mf_clear). Even a good one is only a hint: need_full makes the next scan check
 * every entry against the disk. */
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
    if (sum != mf_hash_str(0, buf, len - 8))
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
                pos = mf_kid_pos(parent, name, nlen, &found);
                if (found || pos != parent->nkids)
                    goto bad;   /* children must come sorted and unique */
                n = mf_node_new(name, nlen, type);
                n->flags = flags & (MF_RACY | MF_HASHED);
                n->mode = mode;
                n->size = size;
                n->mtime_ns = mt;
                n->ctime_ns = ct;
                n->ino = ino;
                n->hash = hash;
                mf_kid_insert(parent, pos, n);
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

