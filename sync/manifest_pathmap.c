/* mf_pathmap: (root, path) -> u64, an open-addressing hash of the paths in flight; see
 * manifest.h. */
#include "sync/manifest_int.h"

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

/* The slot a key's probe starts at (cap is a power of two). */
static size_t pm_index(const mf_pathmap *m, const char *key, size_t klen)
{
    return (size_t)mf_hash_str(0, key, klen) & (m->cap - 1);
}

/* The packed key of (root, path), malloc'd. */
static char *pm_key(unsigned root, const char *path, size_t len, size_t *klen)
{
    char *k = xmalloc(len + 2);
    k[0] = (char)(root & 0xff);
    k[1] = (char)(root >> 8);
    memcpy(k + 2, path, len);
    *klen = len + 2;
    return k;
}

/* Sets key's value (linear probing), taking ownership of key; the caller keeps the load
 * under a half, so a free slot exists. */
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

/* Rehashes into cap slots, dropping entries whose value is at most prune_upto (open
 * addressing cannot delete in place without tombstones: pruning rebuilds). */
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
