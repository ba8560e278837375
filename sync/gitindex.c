/* Merging a received .git/index with this side's stat data; see gitindex.h. Git's own
 * reader is read-cache.c (create_from_disk, read_index_extension, verify_hdr); the format
 * is gitformat-index(5). */
#include "sync/gitindex.h"
#include "sync/githash.h"

#include <stdbool.h>
#include <string.h>

#define STAT_LEN 40      /* ctime, mtime (sec, nsec), dev, ino, mode, uid, gid, size */
#define MTIME_OFF 8
#define MODE_OFF 24
#define SIZE_OFF 36
#define F_EXTENDED 0x4000
#define NAME_MASK 0xfff
#define NAME_MAX_LEN 4096   /* longer names are never synced (wire.h); such an index is left */
#define GITLINK 0160000

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* One index file, checked whole by idx_open() before anything reads its entries. */
typedef struct idx {
    const unsigned char *p;
    size_t len;          /* the file */
    size_t end;          /* where the trailing checksum starts */
    size_t hashsz;
    uint32_t version, n;
    size_t ext_off;      /* where the extensions start (after the last entry) */
    bool link;           /* a split index: its entries are a delta against another file */
} idx;

/* A reader of an index's entries in order; the current entry's fields below. */
typedef struct cur {
    const idx *x;
    uint32_t i;          /* entries read */
    size_t off;          /* the next entry's offset */
    size_t e_off;        /* the current entry's */
    const unsigned char *name;
    size_t name_len;
    strbuf v4;           /* version 4: the current name, built from the previous one */
    uint32_t mode;
    unsigned stage;
} cur;

static void cur_init(cur *c, const idx *x)
{
    memset(c, 0, sizeof(*c));
    c->x = x;
    c->off = 12;
    strbuf_init(&c->v4, 0);
}

/* Reads the next entry: 1, 0 at the end, -1 when it is malformed (as git would refuse it,
 * or beyond what is merged here). Each length is checked against the end before use. */
static int cur_next(cur *c)
{
    const idx *x = c->x;
    const unsigned char *p = x->p;
    size_t off = c->off, fixed, at, len;
    unsigned flags;
    if (c->i >= x->n)
        return 0;
    fixed = STAT_LEN + x->hashsz + 2;
    if (off > x->end || x->end - off < fixed)
        return -1;
    flags = (unsigned)p[off + fixed - 2] << 8 | p[off + fixed - 1];
    if (flags & F_EXTENDED) {
        if (x->version < 3 || x->end - off < fixed + 2)
            return -1;
        fixed += 2;
    }
    at = off + fixed;
    len = flags & NAME_MASK;
    if (x->version == 4) {
        /* An integer in the OFS_DELTA encoding: bytes to strip from the previous name,
         * then the NUL-terminated rest of this one. */
        uint64_t strip = 0;
        const unsigned char *q, *nul;
        size_t k = at;
        for (;;) {
            unsigned char b;
            if (k >= x->end)
                return -1;
            b = p[k++];
            strip = (strip << 7) | (b & 127);
            if (!(b & 128))
                break;
            if (strip > NAME_MAX_LEN)
                return -1;
            strip++;
        }
        if (strip > c->v4.len)
            return -1;
        q = p + k;
        nul = memchr(q, 0, x->end - k);
        if (!nul)
            return -1;
        strbuf_setlen(&c->v4, c->v4.len - (size_t)strip);
        if ((size_t)(nul - q) > NAME_MAX_LEN || c->v4.len + (size_t)(nul - q) > NAME_MAX_LEN)
            return -1;
        strbuf_add(&c->v4, q, (size_t)(nul - q));
        /* git takes the length from the flags when it fits: both must agree */
        if (len != NAME_MASK && len != c->v4.len)
            return -1;
        c->name = (const unsigned char *)c->v4.buf;
        c->name_len = c->v4.len;
        c->off = (size_t)(nul - p) + 1;
    } else {
        size_t size;
        if (len == NAME_MASK) {
            const unsigned char *nul = memchr(p + at, 0, x->end - at);
            if (!nul)
                return -1;
            len = (size_t)(nul - (p + at));
        }
        if (len > NAME_MAX_LEN)
            return -1;
        /* ondisk_ce_size(): the fixed part, the name and 1-8 NULs, to a multiple of 8 */
        size = (fixed + len + 8) & ~(size_t)7;
        if (x->end - off < size)
            return -1;
        c->name = p + at;
        c->name_len = len;
        c->off = off + size;
    }
    c->e_off = off;
    c->mode = get32(p + off + MODE_OFF);
    c->stage = (flags >> 12) & 3;
    c->i++;
    return 1;
}

/* git's order: the names as unsigned bytes, then the stage. */
static int cur_cmp(const cur *a, const cur *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int r = memcmp(a->name, b->name, n);
    if (r)
        return r;
    if (a->name_len != b->name_len)
        return a->name_len < b->name_len ? -1 : 1;
    return a->stage < b->stage ? -1 : a->stage > b->stage;
}

/* Checks a whole index with hashes of hashsz bytes: the header, every entry, then the
 * extensions, which must end exactly at the trailing checksum. Returns 0 or -1. */
static int idx_open(idx *x, const unsigned char *p, size_t len, size_t hashsz)
{
    cur c;
    int r;
    size_t off;
    memset(x, 0, sizeof(*x));
    if (len < 12 + hashsz || memcmp(p, "DIRC", 4))
        return -1;
    x->p = p;
    x->len = len;
    x->end = len - hashsz;
    x->hashsz = hashsz;
    x->version = get32(p + 4);
    x->n = get32(p + 8);
    if (x->version < 2 || x->version > 4)
        return -1;
    /* every entry takes at least the fixed part and two bytes of name */
    if ((uint64_t)x->n * (STAT_LEN + hashsz + 4) > x->end - 12)
        return -1;
    cur_init(&c, x);
    while ((r = cur_next(&c)) > 0)
        ;
    off = c.off;
    strbuf_release(&c.v4);
    if (r < 0)
        return -1;
    x->ext_off = off;
    while (off < x->end) {
        uint32_t sz;
        if (x->end - off < 8)
            return -1;
        sz = get32(p + off + 4);
        if (sz > x->end - off - 8)
            return -1;
        if (!memcmp(p + off, "link", 4))
            x->link = true;
        off += 8 + sz;
    }
    return 0;
}

static bool all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* Which hash the received index uses, from its trailing checksum: 0 when neither fits.
 * A null checksum (index.skipHash) says nothing: then the layout must fit exactly one. */
static int detect_algo(const unsigned char *p, size_t len)
{
    int fit = 0, n = 0;
    static const int algos[] = { GH_SHA1, GH_SHA256 };
    for (size_t i = 0; i < 2; i++) {
        size_t hs = gh_len(algos[i]);
        unsigned char sum[GH_SHA256_LEN];
        idx x;
        if (len < 12 + hs)
            continue;
        if (!all_zero(p + len - hs, hs)) {
            gh_digest(algos[i], p, len - hs, sum);
            if (!memcmp(sum, p + len - hs, hs))
                return algos[i];
        } else if (idx_open(&x, p, len, hs) == 0) {
            fit = algos[i];
            n++;
        }
    }
    return n == 1 ? fit : 0;
}

int gitindex_merge(const void *in_, size_t in_len, const void *local_, size_t local_len,
                   int64_t local_mtime_sec, strbuf *out, gitindex_stats *stats)
{
    const unsigned char *in = in_, *local = local_;
    gitindex_stats st = { 0 };
    idx xi, xl;
    cur ci, cl;
    bool have_local = false, null_sum, had_eoie = false;
    int algo, r, lr = 0;
    size_t hs, off;
    uint32_t racy_at = (uint32_t)local_mtime_sec;   /* git keeps 32 bits of seconds */
    strbuf kept_hdrs = STRBUF_INIT;

    strbuf_reset(out);
    if (stats)
        *stats = st;
    if (in_len > GITINDEX_MERGE_MAX || !(algo = detect_algo(in, in_len)))
        return 0;
    hs = gh_len(algo);
    if (idx_open(&xi, in, in_len, hs) < 0 || xi.link)
        return 0;
    null_sum = all_zero(in + in_len - hs, hs);
    /* This side's own index is read as git reads it: checked whole, its checksum not (git
     * does not verify it either; git writes an index whole, by rename). */
    have_local = local && local_len <= GITINDEX_MERGE_MAX &&
                 idx_open(&xl, local, local_len, hs) == 0 && !xl.link;

    strbuf_add(out, in, xi.ext_off);
    cur_init(&ci, &xi);
    cur_init(&cl, have_local ? &xl : &xi);
    if (have_local)
        lr = cur_next(&cl);
    /* Both lists are sorted (git dies on an index that is not): one walk matches them. */
    while ((r = cur_next(&ci)) > 0) {
        unsigned char *e = (unsigned char *)out->buf + ci.e_off;
        int c = 1;
        st.entries++;
        while (lr > 0 && (c = cur_cmp(&cl, &ci)) < 0)
            lr = cur_next(&cl);
        if (lr > 0 && c == 0 && cl.mode == ci.mode &&
            !memcmp(local + cl.e_off + STAT_LEN, in + ci.e_off + STAT_LEN, hs)) {
            const unsigned char *ls = local + cl.e_off;
            memcpy(e, ls, MODE_OFF);
            memcpy(e + MODE_OFF + 4, ls + MODE_OFF + 4, STAT_LEN - MODE_OFF - 4);
            st.kept++;
            /* Racily clean on this side (git's is_racy_timestamp(), by seconds, which also
             * covers its USE_NSEC rule): smudged, so that git compares the content once,
             * as its next write would have made it do. */
            if ((ci.mode & 0170000) != GITLINK && racy_at && get32(ls + MTIME_OFF) >= racy_at &&
                get32(e + SIZE_OFF)) {
                put32(e + SIZE_OFF, 0);
                st.smudged++;
            }
        } else {
            memset(e, 0, MODE_OFF);
            memset(e + MODE_OFF + 4, 0, STAT_LEN - MODE_OFF - 4);
            st.cleared++;
        }
    }
    strbuf_release(&ci.v4);
    strbuf_release(&cl.v4);
    if (r < 0) {   /* idx_open() read the same bytes: cannot happen */
        strbuf_reset(out);
        strbuf_release(&kept_hdrs);
        return 0;
    }

    /* The extensions, but one side's file-system state; EOIE recomputed over the rest. */
    for (off = xi.ext_off; off < xi.end;) {
        uint32_t sz = get32(in + off + 4);
        const unsigned char *sig = in + off;
        if (!memcmp(sig, "FSMN", 4) || !memcmp(sig, "UNTR", 4)) {
            st.dropped++;
        } else if (!memcmp(sig, "EOIE", 4)) {
            /* git ignores a malformed one: so is it here */
            had_eoie = had_eoie || sz == 4 + hs;
        } else {
            strbuf_add(out, sig, 8 + (size_t)sz);
            strbuf_add(&kept_hdrs, sig, 8);
        }
        off += 8 + (size_t)sz;
    }
    if (had_eoie) {
        unsigned char eoie[8 + 4 + GH_SHA256_LEN];
        memcpy(eoie, "EOIE", 4);
        put32(eoie + 4, (uint32_t)(4 + hs));
        put32(eoie + 8, (uint32_t)xi.ext_off);
        gh_digest(algo, kept_hdrs.buf, kept_hdrs.len, eoie + 12);
        strbuf_add(out, eoie, 12 + hs);
    }
    strbuf_release(&kept_hdrs);
    {
        unsigned char sum[GH_SHA256_LEN] = { 0 };
        if (!null_sum)
            gh_digest(algo, out->buf, out->len, sum);
        strbuf_add(out, sum, hs);
    }
    if (stats)
        *stats = st;
    return 1;
}
