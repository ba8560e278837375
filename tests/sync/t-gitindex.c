/*
 * sync/gitindex.c against real git: a received index merged with this side's keeps this
 * side's stat data, so git here re-reads only what the other side changed, says what git on
 * the other side says, and still sees a racily clean file's change; SHA-1 and SHA-256
 * (sync/githash.c); versions 2, 3 and 4; the untracked cache dropped; EOIE recomputed; a
 * null checksum kept; and whatever is malformed left alone.
 */
#include "sync/gitindex.h"
#include "sync/githash.h"
#include "common/util.h"
#include "tests/lib/tap.h"
#include "tests/sync/synctest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *dir;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    va_list ap;
    char *cmd, *full;
    int r;
    va_start(ap, fmt);
    if (vasprintf(&cmd, fmt, ap) < 0)
        abort();
    va_end(ap);
    full = xasprintf("cd '%s' && %s", dir, cmd);
    r = system(full);
    free(cmd);
    free(full);
    return r;
}

/* A command's stdout, without its last newline. */
static char *cap(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *cap(const char *fmt, ...)
{
    va_list ap;
    char *cmd, *full;
    strbuf sb = STRBUF_INIT;
    FILE *f;
    va_start(ap, fmt);
    if (vasprintf(&cmd, fmt, ap) < 0)
        abort();
    va_end(ap);
    full = xasprintf("cd '%s' && %s", dir, cmd);
    f = popen(full, "r");
    if (f) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
            strbuf_add(&sb, buf, n);
        pclose(f);
    }
    free(cmd);
    free(full);
    if (sb.len && sb.buf[sb.len - 1] == '\n')
        strbuf_setlen(&sb, sb.len - 1);
    return strbuf_detach(&sb, NULL);
}

static void slurp(const char *rel, strbuf *out)
{
    char *p = xasprintf("%s/%s", dir, rel);
    FILE *f = fopen(p, "rb");
    char buf[65536];
    size_t n;
    strbuf_reset(out);
    while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
        strbuf_add(out, buf, n);
    if (f)
        fclose(f);
    free(p);
}

static void spit(const char *rel, const void *data, size_t len)
{
    char *p = xasprintf("%s/%s", dir, rel);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, len, f) != len)
        abort();
    fclose(f);
    free(p);
}

/* What the sync does when `from`'s index arrives in repository `to`: merged with to's own
 * index (its mtime for racy entries), installed, with the later of the two mtimes. */
static int arrive(const char *from, const char *to, gitindex_stats *st)
{
    strbuf in = STRBUF_INIT, local = STRBUF_INIT, out = STRBUF_INIT;
    char *ip = xasprintf("%s/.git/index", from), *lp = xasprintf("%s/.git/index", to);
    char *lpath = xasprintf("%s/%s", dir, lp);
    struct stat ls;
    int r, have = stat(lpath, &ls) == 0;
    slurp(ip, &in);
    slurp(lp, &local);
    r = gitindex_merge(in.buf, in.len, have ? local.buf : NULL, local.len,
                       have ? (int64_t)ls.st_mtime : 0, &out, st);
    if (r)
        spit(lp, out.buf, out.len);
    strbuf_release(&in);
    strbuf_release(&local);
    strbuf_release(&out);
    free(ip);
    free(lp);
    free(lpath);
    return r;
}

static void hex(const unsigned char *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

static void test_hashes(void)
{
    unsigned char d[32];
    char h[65];
    char *big = xmalloc(1000000);
    gh_ctx c;
    gh_digest(GH_SHA1, "abc", 3, d);
    hex(d, 20, h);
    is_str(h, "a9993e364706816aba3e25717850c26c9cd0d89d", "SHA-1 of abc");
    gh_digest(GH_SHA256, "abc", 3, d);
    hex(d, 32, h);
    is_str(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "SHA-256 of abc");
    gh_digest(GH_SHA256, "", 0, d);
    hex(d, 32, h);
    is_str(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "SHA-256 of nothing");
    memset(big, 'a', 1000000);
    gh_init(&c, GH_SHA1);
    for (size_t i = 0; i < 1000000; i += 999)   /* in pieces that straddle blocks */
        gh_update(&c, big + i, i + 999 > 1000000 ? 1000000 - i : 999);
    gh_final(&c, d);
    hex(d, 20, h);
    is_str(h, "34aa973cd4c4daa4f61eeb2bdbad27316534016f", "SHA-1 of a million a's, fed in pieces");
    gh_digest(GH_SHA256, big, 1000000, d);
    hex(d, 32, h);
    is_str(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
           "SHA-256 of a million a's");
    free(big);
}

#define GIT "git -c user.name=t -c user.email=t@t -c init.defaultBranch=main"

/* Repository a with files in directories, committed, their mtimes old (nothing racy); b a
 * copy made as the sync makes one (new inodes), whose own git refreshed its index. */
static void make_pair(const char *a, const char *b, const char *init_opts)
{
    sh("rm -rf %s %s && " GIT " init -q %s %s && cd %s && mkdir -p d1 d2 d3 && "
       "for i in $(seq 1 12); do echo \"one $i\" > d1/f$i; echo \"two $i\" > d2/g$i; "
       "echo \"three $i\" > d3/h$i; done && touch -d 2020-01-01 d1/* d2/* d3/* && "
       GIT " add -A && " GIT " commit -qm c1",
       a, b, init_opts, a, a);
    sh("cp -a %s %s && " GIT " -C %s update-index -q --refresh", a, b, b);
}

/* How many of repo's work-tree files `git status` opened: the files it re-read (rename
 * detection off: it reads a stat-clean file in place of its blob, d3/new here). */
static int status_reads(const char *repo)
{
    char *n = cap("cd %s && strace -f -e trace=openat -o ../strace.log " GIT " -c "
                  "status.renames=false status "
                  "--porcelain >/dev/null 2>&1; grep -v ENOENT ../strace.log | "
                  "grep -cE '\"d[123]/[^\"]'", repo);
    int r = atoi(n);
    free(n);
    return r;
}

/* is_str on a command's output. */
static void is_cap(const char *cmd, const char *want, const char *name)
{
    char *got = cap("%s", cmd);
    is_str(got, want, "%s", name);
    free(got);
}

static void test_merge_sha(const char *kind, const char *init_opts)
{
    gitindex_stats st;
    char *pa, *pb, *ino, *dbg;
    bool have_strace = sh("command -v strace >/dev/null") == 0;
    const char *a = "a", *b = "b";

    make_pair(a, b, init_opts);
    /* The other side: a file edited and added, one removed from the index, one new. */
    sh("cd a && echo 'one 1 edited' > d1/f1 && echo new > d3/new && touch -d 2020-01-02 d1/f1 "
       "d3/new && " GIT " add d1/f1 d3/new && " GIT " rm -q --cached d2/g2");
    /* The sync brings the files across as they are (mtime kept, new inode). */
    sh("cp -p a/d1/f1 b/d1/f1 && cp -p a/d3/new b/d3/new && cp -a a/.git/objects/. b/.git/objects/");
    is_int(arrive(a, b, &st), 1, "%s: the index merges", kind);
    is_int(st.entries, 36, "%s: every entry of the received index is there", kind);
    is_int(st.kept, 34, "%s: the 34 unchanged entries keep this side's stat data", kind);
    is_int(st.cleared, 2, "%s: the edited and the new file's entries have none", kind);
    is_int(st.smudged, 0, "%s: nothing is racily clean", kind);
    pa = cap(GIT " -C a status --porcelain");
    pb = cap(GIT " -C b status --porcelain");
    is_str(pb, pa, "%s: git status here says what it says on the other side", kind);
    free(pa);
    free(pb);
    ino = cap("stat -c %%i b/d2/g5");
    dbg = cap(GIT " -C b ls-files --debug d2/g5 | sed -n 's/.*ino: \\([0-9]*\\).*/\\1/p'");
    is_str(dbg, ino, "%s: an unchanged entry has this side's inode", kind);
    free(ino);
    free(dbg);
    is_int(sh(GIT " -C b fsck --no-dangling --no-progress >fsck.log 2>&1 || cat fsck.log >&2"), 0,
           "%s: git fsck verifies the merged index's checksum", kind);
    /* That status refreshed the two new entries and wrote the index: a second arrival of
     * the same content re-reads nothing. */
    is_int(arrive(a, b, &st), 1, "%s: the same index arrives again", kind);
    is_int(st.kept, 36, "%s: now every entry keeps this side's stat data", kind);
    if (have_strace) {
        is_int(status_reads(b), 0, "%s: git status here re-reads no file", kind);
    } else {
        skip("strace is not installed: the files git status re-reads are not counted");
    }
}

static void test_racy(void)
{
    gitindex_stats st;
    char *out;
    make_pair("a", "b", "");
    /* b's own entry for d1/f3 is racily clean: recorded in the second its index was
     * written. ctime is not trusted here, so only the racy rule can see the change below. */
    sh("git -C b config core.trustctime false && touch -d @1700000000 b/d1/f3 && "
       GIT " -C b update-index -q --really-refresh && touch -d @1700000000 b/.git/index");
    /* Same size, same mtime, same inode: a change git can only see by content. */
    sh("printf 'ONE 3\\n' > b/d1/f3 && touch -d @1700000000 b/d1/f3");
    /* The other side's index, written later, arrives. */
    sh("touch a/.git/index");
    is_int(arrive("a", "b", &st), 1, "racy: the index merges");
    is_int(st.smudged, 1, "racy: the racily clean entry is smudged");
    out = cap(GIT " -C b status --porcelain");
    is_str(out, " M d1/f3", "racy: git status sees the same-size, same-mtime change");
    free(out);
}

static void test_versions(void)
{
    gitindex_stats st;
    char *pa, *pb;
    make_pair("a", "b", "");
    sh(GIT " -C a update-index --index-version 4 && " GIT " -C a update-index --skip-worktree "
       "d1/f4 && echo z > a/d2/z && touch -d 2020-01-01 a/d2/z && cp -p a/d2/z b/d2/z && "
       GIT " -C a add d2/z");
    is_cap("od -An -tu1 -j7 -N1 a/.git/index | tr -d ' '", "4",
           "v4: the other side's index is version 4");
    is_int(arrive("a", "b", &st), 1, "v4 with skip-worktree: the index merges");
    is_int(st.kept, 36, "v4: the unchanged entries keep this side's stat data");
    is_int(st.cleared, 1, "v4: the added one has none");
    pa = cap(GIT " -C a ls-files -v | sort");
    pb = cap(GIT " -C b ls-files -v | sort");
    is_str(pb, pa, "v4: the entries and their skip-worktree bit are the other side's");
    free(pa);
    free(pb);
    is_cap(GIT " -C b status --porcelain", "A  d2/z", "v4: git status here is right");
    /* And back: a version 2 index merged into this side's version 4. */
    sh(GIT " -C a update-index --index-version 2 --no-skip-worktree d1/f4");
    is_int(arrive("a", "b", &st), 1, "v2 into v4: the index merges");
    is_int(st.kept, 37, "v2 into v4: every entry keeps this side's stat data");
}

static void test_extensions(void)
{
    gitindex_stats st;
    strbuf m = STRBUF_INIT;
    make_pair("a", "b", "");
    sh(GIT " -C a update-index --untracked-cache && echo u > a/untracked && " GIT
       " -C a status >/dev/null && " GIT " -c index.recordEndOfIndexEntries=true -C a "
       "update-index --force-write-index && cp -p a/untracked b/");
    is_int(sh("grep -q UNTR a/.git/index && grep -q EOIE a/.git/index"), 0,
           "extensions: the other side's index has UNTR and EOIE");
    is_int(arrive("a", "b", &st), 1, "extensions: the index merges");
    is_int(st.dropped, 1, "extensions: the untracked cache is dropped");
    slurp("b/.git/index", &m);
    ok(!memmem(m.buf, m.len, "UNTR", 4), "extensions: no UNTR here");
    {
        /* EOIE: last, the offset of the first extension, SHA-1 over the others' headers */
        const unsigned char *p = (const unsigned char *)m.buf, *e = p + m.len - 20 - 32;
        unsigned char want[20];
        size_t off = (size_t)e[8] << 24 | (size_t)e[9] << 16 | (size_t)e[10] << 8 | e[11];
        strbuf hdrs = STRBUF_INIT;
        ok(!memcmp(e, "EOIE", 4), "extensions: EOIE is still the last extension");
        for (size_t o = off; o + 8 <= (size_t)(e - p);) {
            size_t sz = (size_t)p[o + 4] << 24 | (size_t)p[o + 5] << 16 | (size_t)p[o + 6] << 8 |
                        p[o + 7];
            strbuf_add(&hdrs, p + o, 8);
            o += 8 + sz;
        }
        gh_digest(GH_SHA1, hdrs.buf, hdrs.len, want);
        ok(!memcmp(e + 12, want, 20), "extensions: EOIE's hash covers the extensions kept");
        strbuf_release(&hdrs);
    }
    is_cap(GIT " -C b status --porcelain", "?? untracked",
           "extensions: git status here finds the untracked file itself");
    strbuf_release(&m);
}

static void test_null_and_hostile(void)
{
    strbuf in = STRBUF_INIT, out = STRBUF_INIT, bad = STRBUF_INIT;
    gitindex_stats st;
    size_t n;
    int crashes = 0, merged = 0;
    make_pair("a", "b", "");
    slurp("a/.git/index", &in);
    n = in.len;
    /* index.skipHash: a null checksum stays null */
    memset(in.buf + n - 20, 0, 20);
    is_int(gitindex_merge(in.buf, n, NULL, 0, 0, &out, &st), 1, "null checksum: merges");
    ok(out.len == n && !memcmp(out.buf + n - 20, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 20),
       "null checksum: the result's is null too");
    is_int(st.cleared, 36, "no index on this side: every entry has no stat data");
    slurp("a/.git/index", &in);
    /* every truncation, a flipped checksum, a bad version, a split index */
    for (size_t k = 0; k < n; k++)
        merged += gitindex_merge(in.buf, k, in.buf, in.len, 0, &out, NULL);
    is_int(merged, 0, "every truncation of a valid index is left alone");
    strbuf_add(&bad, in.buf, n);
    bad.buf[n - 1] ^= 1;
    is_int(gitindex_merge(bad.buf, n, NULL, 0, 0, &out, NULL), 0, "a bad checksum: left alone");
    for (size_t k = 12; k < n - 20; k += 7) {   /* one flipped byte, re-summed */
        unsigned char sum[20];
        strbuf_reset(&bad);
        strbuf_add(&bad, in.buf, n);
        bad.buf[k] ^= 0x5a;
        gh_digest(GH_SHA1, bad.buf, n - 20, sum);
        memcpy(bad.buf + n - 20, sum, 20);
        if (gitindex_merge(bad.buf, n, in.buf, n, 0, &out, NULL) && out.len > 2 * n)
            crashes++;
    }
    is_int(crashes, 0, "flipped bytes, re-summed: never a result bigger than the input allows");
    strbuf_reset(&bad);
    strbuf_add(&bad, in.buf, n);
    bad.buf[7] = 9;
    is_int(gitindex_merge(bad.buf, n, NULL, 0, 0, &out, NULL), 0, "version 9: left alone");
    sh(GIT " -C a update-index --split-index");
    slurp("a/.git/index", &bad);
    is_int(gitindex_merge(bad.buf, bad.len, in.buf, n, 0, &out, NULL), 0,
           "a split index (link): left alone");
    is_int(gitindex_merge(in.buf, n, bad.buf, bad.len, 0, &out, &st), 1,
           "this side's index split: merged as if there were none");
    is_int(st.cleared, 36, "... every entry without stat data");
    strbuf_release(&in);
    strbuf_release(&out);
    strbuf_release(&bad);
}

static void test_idempotent(void)
{
    strbuf in = STRBUF_INIT, out = STRBUF_INIT;
    gitindex_stats st;
    make_pair("a", "b", "");
    slurp("b/.git/index", &in);
    is_int(gitindex_merge(in.buf, in.len, in.buf, in.len, 0, &out, &st), 1, "own index: merges");
    ok(out.len == in.len && !memcmp(out.buf, in.buf, in.len),
       "an index merged with itself is byte for byte the same");
    strbuf_release(&in);
    strbuf_release(&out);
}

int main(void)
{
    dir = st_tmpdir("gitindex");
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("HOME", dir, 1);
    test_hashes();
    if (sh("command -v git >/dev/null") != 0) {
        skip("git is not installed");
    } else {
        test_merge_sha("sha1", "");
        test_merge_sha("sha256", "--object-format=sha256");
        test_racy();
        test_versions();
        test_extensions();
        test_null_and_hostile();
        test_idempotent();
    }
    if (!getenv("T_KEEP"))   /* T_KEEP=1: the repositories stay, for a look after a failure */
        st_rm_rf(dir);
    else
        diag("kept %s", dir);
    free(dir);
    return done_testing();
}
