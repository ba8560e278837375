/*
 * Holes and the disk quota, in one process (sync/delta.c streaming into sync/apply.c and each
 * side's apply): a sparse file travels as HOLE frames and lands sparse, both as the agent
 * applies it and as the host stages it, with the content hash over its logical bytes; zeros stored as data go
 * as holes too; the per-file limit counts data, not holes; a pull over the disk quota is
 * refused as a whole (host tree as it was, no stage left) and a later one within it lands;
 * apply_refuse() (an interrupted pull) removes the stage at once and commits nothing; the
 * decoder refuses malformed holes.
 */
#include "sync/delta.h"
#include "sync/safefs.h"
#include "tests/lib/tap.h"
#include "tests/sync/st_transfer.h"

typedef struct xfer_stats {
    uint64_t wire_bytes;   /* bytes of frames */
    unsigned holes;        /* HOLE frames */
} xfer_stats;

static int transfer(mf_tree *src, apply_rx *rx, uint64_t seq, void (*mid)(apply_rx *),
                    xfer_stats *xs, sbx_err *err)
{
    st_xfer x = { .mid = mid };
    int r = st_transfer(src, rx, seq, &x, err);
    xs->wire_bytes = x.wire_bytes;
    xs->holes = x.holes;
    return r;
}

static struct stat stat_of(const char *dir, const char *name)
{
    struct stat st;
    char *p = xasprintf("%s/%s", dir, name);
    memset(&st, 0, sizeof(st));
    if (stat(p, &st) < 0)
        st.st_size = -1;
    free(p);
    return st;
}

static uint64_t hash_of(const char *dir, const char *name)
{
    char *p = xasprintf("%s/%s", dir, name);
    int fd = open(p, O_RDONLY);
    uint64_t h = 0;
    if (fd >= 0) {
        mf_hash_fd(fd, &h);
        close(fd);
    }
    free(p);
    return h;
}

/* 1 GiB: a hole, 3 data bytes at 256 MiB, a hole, "end" at the end; and 1 MiB of zeros
 * written as data. */
static void make_sparse(const char *dir)
{
    st_sh("cd '%s' && truncate -s 1G sparse && printf abc | dd of=sparse bs=1 seek=268435456 "
          "conv=notrunc status=none && printf end | dd of=sparse bs=1 seek=1073741821 "
          "conv=notrunc status=none && head -c 1048576 /dev/zero > zeros", dir);
}

static void test_role(apply_role role, const char *what)
{
    char *src_dir = st_tmpdir("ssrc"), *dst_dir = st_tmpdir("sdst");
    mf_tree *src = st_tree_at(src_dir), *dst = st_tree_at(dst_dir);
    apply_rx *rx = apply_new(dst, role, NULL, st_warn, NULL);
    xfer_stats xs;
    sbx_err err;
    struct stat a, b;
    mf_node *n;

    make_sparse(src_dir);
    is_int(transfer(src, rx, 1, NULL, &xs, &err), 1, "%s: a delta with a sparse file applies",
           what);
    ok(xs.holes >= 3, "%s: the holes travel as HOLE frames (%u)", what, xs.holes);
    ok(xs.wire_bytes < 64 * 1024, "%s: the stream is small (%llu bytes for a 1 GiB file and "
       "1 MiB of zeros)", what, (unsigned long long)xs.wire_bytes);
    a = stat_of(src_dir, "sparse");
    b = stat_of(dst_dir, "sparse");
    is_int((long long)b.st_size, (long long)a.st_size, "%s: the size is the logical size",
           what);
    ok((uint64_t)b.st_blocks * 512 < 1024 * 1024, "%s: the file lands sparse (%lld bytes "
       "allocated)", what, (long long)b.st_blocks * 512);
    is_int(st_sh("cmp -s '%s/sparse' '%s/sparse'", src_dir, dst_dir), 0,
           "%s: the content is the same, zeros included", what);
    n = mf_lookup(dst, 0, "sparse", 6);
    ok(n && (n->flags & MF_HASHED) && n->hash == hash_of(src_dir, "sparse"),
       "%s: the recorded content hash covers the logical bytes", what);
    b = stat_of(dst_dir, "zeros");
    is_int((long long)b.st_size, 1048576, "%s: zeros stored as data keep their size", what);
    ok((uint64_t)b.st_blocks * 512 < 64 * 1024, "%s: ...and land as a hole (%lld bytes "
       "allocated)", what, (long long)b.st_blocks * 512);
    ok(!st_has_stage(dst_dir), "%s: no stage directory is left", what);
    apply_free(rx);
    mf_free(src);
    mf_free(dst);
    st_rm_rf(src_dir);
    st_rm_rf(dst_dir);
    free(src_dir);
    free(dst_dir);
}

static void test_file_limit_counts_data(void)
{
    char *src_dir = st_tmpdir("lsrc"), *dst_dir = st_tmpdir("ldst");
    mf_tree *src = st_tree_at(src_dir), *dst = st_tree_at(dst_dir);
    apply_limits lim = { .max_file_size = 100000 };
    apply_rx *rx = apply_new(dst, APPLY_HOST, &lim, st_warn, NULL);
    xfer_stats xs;
    sbx_err err;

    make_sparse(src_dir);
    st_sh("cd '%s' && rm zeros && head -c 200000 /dev/urandom > dense", src_dir);
    strbuf_reset(&st_warnings);
    is_int(transfer(src, rx, 1, NULL, &xs, &err), 1, "limit: the delta applies");
    is_int((long long)stat_of(dst_dir, "sparse").st_size, 1073741824LL,
           "limit: a 1 GiB sparse file with 6 data bytes passes a 100 kB file limit");
    is_int((long long)stat_of(dst_dir, "dense").st_size, -1,
           "limit: a file with 200 kB of data does not");
    ok(strstr(st_warnings.buf, "dense: file over the size limit") != NULL,
       "limit: ...with a warning that says so");
    ok(!st_has_stage(dst_dir), "limit: no stage directory is left");
    apply_free(rx);
    mf_free(src);
    mf_free(dst);
    st_rm_rf(src_dir);
    st_rm_rf(dst_dir);
    free(src_dir);
    free(dst_dir);
}

static char *quota_dst;
static bool stage_seen_mid, stage_gone_after_refuse;

static bool refused_twice;

static void interrupt(apply_rx *rx)
{
    stage_seen_mid = st_has_stage(quota_dst);
    apply_refuse(rx, "interrupted by the test");
    stage_gone_after_refuse = !st_has_stage(quota_dst);
    refused_twice = apply_refuse(rx, "again");
}

static void test_quota(void)
{
    char *src_dir = st_tmpdir("qsrc");
    mf_tree *src = st_tree_at(src_dir), *dst;
    int64_t used = 0;
    apply_limits lim = { .max_disk = 3 << 20, .disk_used = &used };
    apply_rx *rx;
    xfer_stats xs;
    sbx_err err;
    sync_quota quota = SYNC_QUOTA_NONE;
    char *before, *after;
    const char *why;

    quota_dst = st_tmpdir("qdst");
    dst = st_tree_at(quota_dst);
    rx = apply_new(dst, APPLY_HOST, &lim, st_warn, NULL);
    st_sh("cd '%s' && head -c 4194304 /dev/urandom > big && echo small > small && "
          "truncate -s 1G sparse", src_dir);
    st_sh("echo mine > '%s/kept'", quota_dst);
    before = st_listing(quota_dst, true);
    is_int(transfer(src, rx, 1, NULL, &xs, &err), 1,
           "quota: a delta over it ends normally (the connection goes on)");
    why = apply_refusal(rx, &quota);
    ok(why && quota && strstr(why, "quota of 3.0 MiB"), "quota: it is refused, saying so: %s",
       why ? why : "(applied)");
    after = st_listing(quota_dst, true);
    is_str(after, before, "quota: the host tree is as it was (nothing of the delta landed)");
    ok(!st_has_stage(quota_dst), "quota: no stage directory is left");
    is_int((long long)used, 0, "quota: nothing is counted");
    free(after);

    /* Within the quota: it lands, and counts what it allocated (the sparse file nothing). */
    st_sh("cd '%s' && rm big && head -c 1048576 /dev/urandom > mid", src_dir);
    is_int(transfer(src, rx, 2, NULL, &xs, &err), 1, "quota: a delta within it applies");
    ok(!apply_refusal(rx, NULL), "quota: ...and is not refused");
    ok(used >= 1048576 && used < 1048576 + 64 * 1024,
       "quota: the session's total is what landed, holes free (%lld)", (long long)used);
    /* A file replaced by a smaller one and one deleted are credited back. */
    st_sh("cd '%s' && rm mid && echo x > small", src_dir);
    is_int(transfer(src, rx, 3, NULL, &xs, &err), 1, "quota: a delta deleting it applies");
    ok(used >= 0 && used < 64 * 1024, "quota: what it freed is credited (%lld)",
       (long long)used);

    /* Interrupted mid-delta (the user's Ctrl-C): the stage goes at once. */
    st_sh("cd '%s' && head -c 2000000 /dev/urandom > again", src_dir);
    free(before);
    before = st_listing(quota_dst, true);
    is_int(transfer(src, rx, 4, interrupt, &xs, &err), 1,
           "refuse: an interrupted delta still reads to its end");
    ok(stage_seen_mid && stage_gone_after_refuse,
       "refuse: the stage existed and apply_refuse() removed it at once");
    why = apply_refusal(rx, &quota);
    ok(why && !quota && !strcmp(why, "interrupted by the test"), "refuse: with its reason");
    ok(!refused_twice, "refuse: a refused delta is not interrupted again (it is only read)");
    after = st_listing(quota_dst, true);
    is_str(after, before, "refuse: nothing of it landed");
    free(after);
    free(before);
    ok(!apply_refuse(rx, "late"), "refuse: no delta in progress, nothing to refuse");

    apply_free(rx);
    mf_free(src);
    mf_free(dst);
    st_rm_rf(src_dir);
    st_rm_rf(quota_dst);
    free(src_dir);
    free(quota_dst);
}

/* ENTRY for a 100-byte file "f" with no inline data. */
static void entry100(strbuf *sb)
{
    wire_entry e = { .op = WIRE_OP_PUT, .ftype = WIRE_REG, .size = 100, .path = "f",
                     .path_len = 1 };
    size_t at = wire_put_entry_begin(sb, &e);
    wire_end(sb, at);
}

static int feed(apply_rx *rx, strbuf *sb, sbx_err *err)
{
    size_t off = 0;
    int r = 0;
    for (;;) {
        wire_frame f;
        int p = wire_parse((const uint8_t *)sb->buf + off, sb->len - off, &f, err);
        if (p <= 0)
            return p < 0 ? -1 : r;
        off += WIRE_HEADER + f.len;
        r = apply_frame(rx, &f, err);
        if (r < 0)
            return -1;
    }
}

static void test_decoder(void)
{
    char *dir = st_tmpdir("hdec");
    mf_tree *t = st_tree_at(dir);
    apply_rx *rx = apply_new(t, APPLY_HOST, NULL, st_warn, NULL);
    strbuf sb = STRBUF_INIT;
    sbx_err err;
    wire_frame f;
    uint64_t n;

    wire_put_hole(&sb, 5);
    ok(wire_parse((const uint8_t *)sb.buf, sb.len, &f, &err) == 1 && f.type == WIRE_HOLE &&
       wire_get_hole(&f, &n, &err) == 0 && n == 5, "decoder: HOLE n round-trips");
    strbuf_reset(&sb);
    wire_put_hole(&sb, 0);
    wire_parse((const uint8_t *)sb.buf, sb.len, &f, &err);
    ok(wire_get_hole(&f, &n, &err) < 0 && strstr(err.msg, "empty hole"),
       "decoder: an empty hole is refused");
    strbuf_reset(&sb);
    wire_frame_raw(&sb, WIRE_HOLE, 0, 0, "1234", 4);
    wire_parse((const uint8_t *)sb.buf, sb.len, &f, &err);
    ok(wire_get_hole(&f, &n, &err) < 0, "decoder: a short HOLE payload is refused");

    apply_begin(rx, 1, 0, &err);
    strbuf_reset(&sb);
    wire_put_hole(&sb, 5);
    ok(feed(rx, &sb, &err) < 0 && strstr(err.msg, "HOLE without a file entry"),
       "apply: a HOLE outside a file entry is a protocol error");
    apply_abort(rx);
    apply_begin(rx, 2, 0, &err);
    strbuf_reset(&sb);
    entry100(&sb);
    wire_put_hole(&sb, 60);
    wire_put_hole(&sb, 41);
    ok(feed(rx, &sb, &err) < 0 && strstr(err.msg, "41-byte hole for an entry that has 40"),
       "apply: a hole past the file's size is a protocol error");
    apply_abort(rx);
    ok(!st_has_stage(dir), "apply: ...and the abort leaves no stage");
    apply_begin(rx, 3, 0, &err);
    strbuf_reset(&sb);
    entry100(&sb);
    wire_put_hole(&sb, 60);
    wire_frame_raw(&sb, WIRE_CHUNK, 0, 0, "x", 1);
    wire_put_hole(&sb, 39);
    {
        size_t at = wire_begin(&sb, WIRE_DELTA_END, 0, 0);
        wire_u64(&sb, 3);
        wire_u64(&sb, 1);
        wire_end(&sb, at);
    }
    is_int(feed(rx, &sb, &err), 1, "apply: holes around a byte make a file");
    is_int((long long)stat_of(dir, "f").st_size, 100, "apply: ...of its size, trailing hole "
           "included");
    is_int(st_sh("{ head -c 60 /dev/zero; printf x; head -c 39 /dev/zero; } | cmp -s - '%s/f'",
                 dir),
           0, "apply: ...with zeros around the byte");
    apply_free(rx);
    mf_free(t);
    strbuf_release(&sb);
    st_rm_rf(dir);
    free(dir);
}

int main(void)
{
    test_role(APPLY_AGENT, "agent");
    test_role(APPLY_HOST, "host");
    test_file_limit_counts_data();
    test_quota();
    test_decoder();
    strbuf_release(&st_warnings);
    return done_testing();
}
