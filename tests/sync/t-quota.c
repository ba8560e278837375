/*
 * The pull quotas count what the host pays (sync/hostwrite.c): every entry a pull makes costs
 * the disk quota at least SYNC_ENTRY_COST, so empty files, directories and symlinks are not
 * free (40,000 of them went through a 1 MiB quota); the entry quota (max_files) bounds how
 * many a session's pulls make. A delta over either is refused as a whole: the host tree as
 * it was, no stage left, nothing counted, the refusal saying which quota. Within them a
 * delta lands and is counted; a deletion is credited.
 */
#include "sync/delta.h"
#include "sync/safefs.h"
#include "tests/lib/tap.h"
#include "tests/sync/st_transfer.h"

/* src gets n empty files and n empty directories (and a symlink in each directory). */
static void make_empties(const char *src, int n)
{
    st_sh("cd '%s' && mkdir -p e && cd e && for i in $(seq %d); do : > f$i; mkdir d$i; "
          "ln -s ../f$i d$i/l; done", src, n);
}

/* One delta of src into a fresh host tree under lim: returns the refusal (NULL: applied)
 * and which quota; the tree's listing before and after in *before, *after. */
static void refused_case(const char *what, apply_limits lim, sync_quota want, const char *say)
{
    char *src_dir = st_tmpdir("qsrc"), *dst_dir = st_tmpdir("qdst");
    mf_tree *src = st_tree_at(src_dir), *dst = st_tree_at(dst_dir);
    apply_rx *rx = apply_new(dst, APPLY_HOST, &lim, st_warn, NULL);
    sync_quota quota = SYNC_QUOTA_NONE;
    const char *why;
    char *before, *after;
    sbx_err err;

    make_empties(src_dir, 2000);
    st_sh("echo mine > '%s/kept'", dst_dir);
    before = st_listing(dst_dir, true);
    is_int(st_transfer(src, rx, 1, NULL, &err), 1, "%s: the delta ends normally", what);
    why = apply_refusal(rx, &quota);
    ok(why && quota == want && strstr(why, say), "%s: refused, saying so: %s", what,
       why ? why : "(applied)");
    after = st_listing(dst_dir, true);
    is_str(after, before, "%s: the host tree is as it was (nothing partial)", what);
    ok(!st_has_stage(dst_dir), "%s: no stage directory is left", what);
    is_int((long long)*lim.disk_used + (lim.files_used ? *lim.files_used : 0), 0,
           "%s: nothing is counted", what);
    free(before);
    free(after);
    apply_free(rx);
    mf_free(src);
    mf_free(dst);
    st_rm_rf(src_dir);
    st_rm_rf(dst_dir);
    free(src_dir);
    free(dst_dir);
}

int main(void)
{
    int64_t used = 0, files = 0;

    /* 6,001 entries of no data: 24 MB of entries at 4 KiB each, over 1 MiB. */
    refused_case("disk", (apply_limits){ .max_disk = 1 << 20, .disk_used = &used },
                 SYNC_QUOTA_DISK, "disk quota of 1.0 MiB");
    refused_case("entries",
                 (apply_limits){ .disk_used = &used, .max_files = 1000, .files_used = &files },
                 SYNC_QUOTA_FILES, "more than 1000 files, directories and symlinks");

    /* Within both: it lands and is counted; deleting credits it back. */
    {
        char *src_dir = st_tmpdir("qsrc"), *dst_dir = st_tmpdir("qdst");
        mf_tree *src = st_tree_at(src_dir), *dst = st_tree_at(dst_dir);
        apply_limits lim = { .max_disk = 1 << 20, .disk_used = &used, .max_files = 100,
                             .files_used = &files };
        apply_rx *rx = apply_new(dst, APPLY_HOST, &lim, st_warn, NULL);
        sbx_err err;

        make_empties(src_dir, 10);   /* e, 10 files, 10 directories, 10 symlinks */
        is_int(st_transfer(src, rx, 1, NULL, &err), 1, "within: the delta ends normally");
        ok(!apply_refusal(rx, NULL), "within: it is applied");
        is_int((long long)files, 31, "within: 31 entries counted");
        is_int((long long)used, 31 * SYNC_ENTRY_COST,
               "within: each at least %d bytes (%lld)", SYNC_ENTRY_COST, (long long)used);
        st_sh("rm -r '%s/e'", src_dir);
        is_int(st_transfer(src, rx, 2, NULL, &err), 1, "delete: the delta ends normally");
        ok(!apply_refusal(rx, NULL), "delete: it is applied");
        is_int((long long)files, 0, "delete: the entries are credited back");
        ok(used <= 0, "delete: ...and their bytes (%lld)", (long long)used);
        apply_free(rx);
        mf_free(src);
        mf_free(dst);
        st_rm_rf(src_dir);
        st_rm_rf(dst_dir);
        free(src_dir);
        free(dst_dir);
    }
    strbuf_release(&st_warnings);
    return done_testing();
}
