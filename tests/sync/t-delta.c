/*
 * Unit tests of sync/delta.c and the apply (sync/apply.c, agent_apply.c, hostwrite.c) in one
 * process: a scanned delta streamed by delta_tx into apply_rx, as the agent applies it
 * (direct) and as the host does (checked, staged, committed at DELTA_END), including chunked files, a file that shrinks while it is
 * sent, git config filtering, URL secrets kept out of pushed reflogs and restored on a pull,
 * aborts, limits and conflicts.
 */
#include "sync/delta.h"
#include "sync/safefs.h"
#include "tests/lib/tap.h"
#include "tests/sync/st_transfer.h"

static int transfer(mf_tree *src, apply_rx *rx, bool filter_git, uint64_t seq,
                    void (*between)(void), sbx_err *err)
{
    st_xfer x = { .filter_git = filter_git, .between = between };
    return st_transfer(src, rx, seq, &x, err);
}

static char *src_dir, *dst_dir;

static void shrink_big(void)
{
    char *p = xasprintf("%s/big", src_dir);
    truncate(p, 10);
    free(p);
}

static void test_agent_apply(void)
{
    mf_tree *src, *dst;
    apply_rx *rx;
    sbx_err err;
    char *a, *b;

    src_dir = st_tmpdir("dsrc");
    dst_dir = st_tmpdir("ddst");
    src = st_tree_at(src_dir);
    dst = st_tree_at(dst_dir);
    rx = apply_new(dst, APPLY_AGENT, NULL, st_warn, NULL);
    st_sh("cd '%s' && mkdir -p d/e empty && head -c 1000000 /dev/urandom > d/e/big1 && "
          "echo small > s && ln -s d/e l && : > z && printf x > x && chmod 755 x && "
          "mkdir .git && printf '[core]\\n\\tbare = false\\n[alias]\\n\\tx = !evil\\n' > "
          ".git/config", src_dir);
    is_int(transfer(src, rx, true, 1, NULL, &err), 1, "a delta streams and applies");
    a = st_listing(src_dir, true);
    b = st_listing(dst_dir, true);
    {
        /* Everything but the filtered git config is identical. */
        char *ca = xasprintf("%s/.git/config", dst_dir);
        ok(strstr(st_read(ca), "bare") && !strstr(st_read(ca), "alias"),
           "the git config arrives filtered: %s", st_read(ca));
        free(ca);
        st_sh("cp '%s/.git/config' '%s/.git/config' && touch -r '%s/.git/config' "
              "'%s/.git/config'", src_dir, dst_dir, src_dir, dst_dir);
        free(b);
        b = st_listing(dst_dir, true);
    }
    is_str(b, a, "the tree arrives whole: 1 MB in chunks, a symlink, modes and mtimes");
    free(a);
    free(b);

    /* Random data: zeros would go as holes, all in the first fill, before it shrinks. */
    st_sh("cd '%s' && head -c 2000000 /dev/urandom > big && rm -r d && echo more >> s",
          src_dir);
    is_int(transfer(src, rx, false, 2, shrink_big, &err), 1,
           "a file that shrinks while it is sent does not break the delta");
    {
        char *p = xasprintf("%s/big", dst_dir);
        ok(!st_exists(p), "the truncated file was cancelled, not written half");
        free(p);
    }
    is_int(transfer(src, rx, false, 3, NULL, &err), 1, "the next delta");
    a = st_listing(src_dir, true);
    b = st_listing(dst_dir, false);
    free(a);
    a = st_listing(src_dir, false);
    is_str(b, a, "sends it again, whole");
    free(a);
    free(b);
    apply_free(rx);
    mf_free(src);
    mf_free(dst);
    st_rm_rf(src_dir);
    st_rm_rf(dst_dir);
    free(src_dir);
    free(dst_dir);
}

/* Frames by hand, as a hostile agent would send them. */
static void put_entry(strbuf *out, uint8_t op, uint8_t type, const char *path,
                      const char *content, uint64_t size)
{
    wire_entry e = { .op = op, .ftype = type, .path = path, .path_len = strlen(path),
                     .size = size, .mtime_ns = 1000000000LL * 1600000000 };
    size_t at = wire_put_entry_begin(out, &e);
    if (content)
        strbuf_add(out, content, strlen(content));
    wire_end(out, at);
}

/* Frames in out from *off on, into rx; returns apply's last result (1: the delta is done). */
static int apply_all(apply_rx *rx, strbuf *out, size_t *off, sbx_err *err)
{
    int r = 0;
    for (;;) {
        wire_frame f;
        int p = wire_parse((const uint8_t *)out->buf + *off, out->len - *off, &f, err);
        if (p <= 0)
            return p < 0 ? -1 : r;
        *off += WIRE_HEADER + f.len;
        if (f.type == WIRE_DELTA_BEGIN) {
            uint64_t s, a;
            wire_get_u64_pair(&f, &s, &a, err);
            r = apply_begin(rx, s, a, err);
        } else {
            r = apply_frame(rx, &f, err);
        }
        if (r < 0)
            return r;
    }
}

/* All of frames into rx, from the start. */
static int feed(apply_rx *rx, strbuf *frames, sbx_err *err)
{
    size_t off = 0;
    return apply_all(rx, frames, &off, err);
}

static void begin(strbuf *sb, uint64_t seq)
{
    size_t at = wire_begin(sb, WIRE_DELTA_BEGIN, 0, 0);
    wire_u64(sb, seq);
    wire_u64(sb, 0);
    wire_end(sb, at);
}

static void end(strbuf *sb, uint64_t seq, uint64_t n)
{
    size_t at = wire_begin(sb, WIRE_DELTA_END, 0, 0);
    wire_u64(sb, seq);
    wire_u64(sb, n);
    wire_end(sb, at);
}

static void test_host_apply(void)
{
    char *dir = st_tmpdir("dhost");
    mf_tree *t = st_tree_at(dir);
    apply_limits lim = { .max_file_size = 1000, .max_bytes = 5000, .max_entries = 100 };
    apply_rx *rx = apply_new(t, APPLY_HOST, &lim, st_warn, NULL);
    strbuf sb = STRBUF_INIT;
    sbx_err err;
    char *before, *after, *p;
    bool full;
    mf_delta d = { 0 };

    st_sh("cd '%s' && echo base > kept && echo base > both && mkdir sub", dir);
    mf_scan(t, &d, &full, st_warn, NULL, &err);
    mf_delta_release(&d);

    /* A good delta: applied at DELTA_END only. */
    begin(&sb, 1);
    put_entry(&sb, WIRE_OP_PUT, WIRE_DIR, "n", NULL, 0);
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "n/f", "new\n", 4);
    put_entry(&sb, WIRE_OP_PUT, WIRE_LNK, "n/l", "../kept", 7);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_DIR, "sub", NULL, 0);
    before = st_listing(dir, true);
    is_int(feed(rx, &sb, &err), 0, "entries are accepted");
    after = st_listing(dir, true);
    {
        /* Staged files wait in a hidden directory of ours under the root. */
        strbuf kept = STRBUF_INIT;
        for (char *line = after, *nl; *line; line = nl + 1) {
            nl = strchr(line, '\n');
            if (!strstr(line, SF_STAGE_PREFIX) || strstr(line, SF_STAGE_PREFIX) > nl)
                strbuf_add(&kept, line, (size_t)(nl - line + 1));
        }
        is_str(kept.buf, before, "nothing is written in place before DELTA_END");
        strbuf_release(&kept);
    }
    free(after);
    free(before);
    strbuf_reset(&sb);
    end(&sb, 1, 4);
    is_int(feed(rx, &sb, &err), 1, "DELTA_END commits");
    p = xasprintf("%s/n/f", dir);
    is_str(st_read(p), "new\n", "a new file");
    free(p);
    p = xasprintf("%s/sub", dir);
    ok(!st_exists(p), "a deleted directory");
    free(p);
    after = st_listing(dir, false);
    ok(!strstr(after, ".sbx-stage") && !strstr(after, ".sbx-tmp"), "no staging left behind");
    free(after);

    /* A truncated delta, then abort: the tree is exactly as before. */
    strbuf_reset(&sb);
    begin(&sb, 2);
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "kept", "changed\n", 8);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, "both", NULL, 0);
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "partial", "abc", 10);
    before = st_listing(dir, true);
    is_int(feed(rx, &sb, &err), 0, "a delta in progress");
    apply_abort(rx);
    after = st_listing(dir, true);
    is_str(after, before, "an aborted delta leaves the host tree byte for byte unchanged");
    free(after);
    free(before);

    /* Protocol violations. */
    strbuf_reset(&sb);
    begin(&sb, 3);
    wire_frame_raw(&sb, WIRE_CHUNK, 0, 0, "x", 1);
    is_int(feed(rx, &sb, &err), -1, "a CHUNK without an entry is an error");
    apply_abort(rx);
    strbuf_reset(&sb);
    begin(&sb, 3);
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "f", "ab", 4);
    wire_frame_raw(&sb, WIRE_CHUNK, 0, 0, "abc", 3);
    is_int(feed(rx, &sb, &err), -1, "more content than announced is an error");
    apply_abort(rx);
    strbuf_reset(&sb);
    begin(&sb, 3);
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "f", "ab", 2);
    end(&sb, 3, 5);
    is_int(feed(rx, &sb, &err), -1, "a DELTA_END with the wrong count is an error");
    apply_abort(rx);

    /* Limits. */
    strbuf_reset(&sb);
    begin(&sb, 4);
    {
        /* The limit counts data (holes are free), so it is seen as the data arrives. */
        char data[1002];
        memset(data, 'h', 1001);
        data[1001] = '\0';
        put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "huge", data, 1001);
    }
    is_int(feed(rx, &sb, &err), 0, "a file over the size limit is refused, not fatal");
    ok(strstr(st_warnings.buf, "over the size limit") != NULL, "with a warning");
    apply_abort(rx);
    strbuf_reset(&sb);
    begin(&sb, 4);
    {
        char big[1000];
        memset(big, 'x', 999);
        big[999] = '\0';
        for (int i = 0; i < 6; i++)
            put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "many", big, 999);
    }
    is_int(feed(rx, &sb, &err), -1, "a delta over the byte limit is aborted");
    ok(strstr(err.msg, "5000") != NULL, "saying so: %s", err.msg);
    apply_abort(rx);
    strbuf_reset(&sb);
    begin(&sb, 4);
    for (int i = 0; i < 101; i++)
        put_entry(&sb, WIRE_OP_PUT, WIRE_DIR, "d", NULL, 0);
    is_int(feed(rx, &sb, &err), -1, "a delta over the entry limit is aborted");
    apply_abort(rx);

    /* Conflict: changed on the host since the base, and by the sandbox. */
    p = xasprintf("%s/both", dir);
    st_write(p, "host\n");
    strbuf_reset(&st_warnings);
    strbuf_reset(&sb);
    begin(&sb, 5);
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "both", "sandbox\n", 8);
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "kept", "base\n", 5);
    end(&sb, 5, 2);
    is_int(feed(rx, &sb, &err), 1, "a conflicting delta commits");
    is_str(st_read(p), "host\n", "the host's version stays");
    is_int(st_sh("grep -qx sandbox '%s'/both.sbx-conflict-sandbox-*", dir), 0,
           "the sandbox's is beside it");
    ok(strstr(st_warnings.buf, "conflict") != NULL, "with a warning");
    is_int(st_sh("ls '%s'/kept.sbx-conflict-* >/dev/null 2>&1", dir), 2,
           "the same content on both sides is no conflict");
    free(p);
    {
        /* Host and sandbox made the same change: no conflict. */
        char *q = xasprintf("%s/kept", dir);
        st_write(q, "same\n");
        strbuf_reset(&st_warnings);
        strbuf_reset(&sb);
        begin(&sb, 6);
        put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "kept", "same\n", 5);
        end(&sb, 6, 1);
        is_int(feed(rx, &sb, &err), 1, "both sides changed a file the same way");
        is_str(st_warnings.buf, "", "that is no conflict");
        is_int(st_sh("ls '%s'/kept.sbx-conflict-* >/dev/null 2>&1", dir), 2,
               "and leaves no conflict copy");
        free(q);
    }
    strbuf_reset(&sb);
    begin(&sb, 7);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, "both", NULL, 0);
    end(&sb, 7, 1);
    strbuf_reset(&st_warnings);
    is_int(feed(rx, &sb, &err), 1, "a deletion of a file the host changed");
    p = xasprintf("%s/both", dir);
    is_str(st_read(p), "host\n", "keeps the host's version");
    free(p);
    ok(strstr(st_warnings.buf, "kept") != NULL, "and says so: %s", st_warnings.buf);

    strbuf_release(&sb);
    apply_free(rx);
    mf_free(t);
    st_rm_rf(dir);
    free(dir);
}

/* A sandbox change that crossed a host push still in flight (the agent made its delta before
 * applying the push): the host's version wins even though the host did not change the path
 * again since it pushed it. */
static void test_crossing(void)
{
    char *dir = st_tmpdir("dcross");
    mf_tree *t = st_tree_at(dir);
    apply_rx *rx = apply_new(t, APPLY_HOST, NULL, st_warn, NULL);
    mf_pathmap *inflight = mf_pathmap_new();
    strbuf sb = STRBUF_INIT;
    sbx_err err;
    mf_delta d = { 0 };
    bool full;
    char *p = xasprintf("%s/x", dir), *q = xasprintf("%s/y", dir);

    st_write(p, "pushed by the host\n");
    st_write(q, "host\n");
    mf_scan(t, &d, &full, st_warn, NULL, &err);
    mf_delta_release(&d);
    apply_set_inflight(rx, inflight);
    mf_pathmap_set(inflight, 0, "x", 1, 7);   /* push 7 carried x and y */
    mf_pathmap_set(inflight, 0, "y", 1, 7);
    strbuf_reset(&st_warnings);
    {
        size_t at = wire_begin(&sb, WIRE_DELTA_BEGIN, 0, 0);
        wire_u64(&sb, 1);
        wire_u64(&sb, 6);                      /* the agent had applied push 6 only */
        wire_end(&sb, at);
    }
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "x", "sandbox\n", 8);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, "y", NULL, 0);
    end(&sb, 1, 2);
    is_int(feed(rx, &sb, &err), 1, "a delta that crossed push 7");
    is_str(st_read(p), "pushed by the host\n", "the host's pushed version stays");
    is_int(st_sh("grep -qx sandbox '%s'/x.sbx-conflict-sandbox-*", dir), 0,
           "the sandbox's crossing change is kept beside it");
    is_str(st_read(q), "host\n", "a crossing deletion does not remove the host's push");
    ok(strstr(st_warnings.buf, "conflict") && strstr(st_warnings.buf, "kept"),
       "both are reported: %s", st_warnings.buf);

    /* Once the agent has applied push 7, the same change is an ordinary one. */
    strbuf_reset(&sb);
    {
        size_t at = wire_begin(&sb, WIRE_DELTA_BEGIN, 0, 0);
        wire_u64(&sb, 2);
        wire_u64(&sb, 7);
        wire_end(&sb, at);
    }
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, "x", "later\n", 6);
    end(&sb, 2, 1);
    mf_pathmap_prune(inflight, 7);
    is_int(feed(rx, &sb, &err), 1, "a later delta, after the push was acknowledged");
    is_str(st_read(p), "later\n", "applies normally");
    strbuf_release(&sb);
    mf_pathmap_free(inflight);
    apply_free(rx);
    mf_free(t);
    st_rm_rf(dir);
    free(dir);
    free(p);
    free(q);
}

/* A sandbox delta against a real repository on the host: history is never destroyed. */
/* What a shell command prints in dir (stdout and stderr, the last newline dropped); a static
 * buffer. */
static const char *git_out(const char *dir, const char *cmd)
{
    static char buf[8192];
    char *full = xasprintf("cd '%s' && { %s; } 2>&1", dir, cmd);
    FILE *f = popen(full, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        pclose(f);
    free(full);
    if (n && buf[n - 1] == '\n')
        n--;
    buf[n] = '\0';
    return buf;
}

static void test_git_history(void)
{
    char *dir = st_tmpdir("dgit");
    mf_tree *t = st_tree_at(dir);
    apply_rx *rx = apply_new(t, APPLY_HOST, NULL, st_warn, NULL);
    strbuf sb = STRBUF_INIT;
    sbx_err err;
    mf_delta d = { 0 };
    bool full, found;
    char *z, *x, *main4, *obj, *note, *p, *log, *packed;

    if (st_sh("cd '%s' && git init -q . && git symbolic-ref HEAD refs/heads/main && "
              "for i in 1 2 3; do echo $i > f$i && git add f$i && "
              "git -c user.name=A -c user.email=a@b commit -qm c$i; done && "
              "git branch x HEAD~1 && git tag v1 HEAD~2 && git pack-refs --all && "
              "git branch z HEAD~2 && echo 4 > f4 && git add f4 && "
              "git -c user.name=A -c user.email=a@b commit -qm c4", dir)) {
        skip("git cannot make a repository here");
        return;
    }
    z = xstrdup(git_out(dir, "git rev-parse z"));
    x = xstrdup(git_out(dir, "git rev-parse x"));
    main4 = xstrdup(git_out(dir, "git rev-parse main"));
    obj = xstrdup(git_out(dir, "git rev-parse HEAD:f4 | sed 's,^\\(..\\),.git/objects/\\1/,'"));
    mf_scan(t, &d, &full, st_warn, NULL, &err);
    mf_delta_release(&d);
    note = xasprintf("%s/.git/sbxsh-deleted-refs", dir);

    /* git branch -D z (a loose ref) in the sandbox: the ref goes, its reflog stays, and its
     * old value is noted. */
    strbuf_reset(&st_warnings);
    begin(&sb, 1);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, ".git/refs/heads/z", NULL, 0);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, ".git/logs/refs/heads/z", NULL, 0);
    end(&sb, 1, 2);
    is_int(feed(rx, &sb, &err), 1, "git branch -D z: the delta commits");
    p = xasprintf("%s/.git/refs/heads/z", dir);
    ok(!st_exists(p), "the ref is deleted");
    free(p);
    p = xasprintf("%s/.git/logs/refs/heads/z", dir);
    ok(st_exists(p), "its reflog is kept");
    free(p);
    log = xasprintf("%s refs/heads/z ", z);
    ok(!strncmp(st_read(note), log, strlen(log)), "its old value is in .git/sbxsh-deleted-refs: %s",
       st_read(note));
    free(log);
    ok(strstr(st_warnings.buf, "deleted ref refs/heads/z") && strstr(st_warnings.buf, z),
       "and the warning says so: %s", st_warnings.buf);

    /* git branch -D x (only in packed-refs): packed-refs is rewritten without it. */
    st_sh("cd '%s' && grep -v ' refs/heads/x$' .git/packed-refs > ../x-packed", dir);
    packed = xasprintf("%s/../x-packed", dir);
    strbuf_reset(&st_warnings);
    strbuf_reset(&sb);
    begin(&sb, 2);
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, ".git/packed-refs", st_read(packed), strlen(st_read(packed)));
    end(&sb, 2, 1);
    is_int(feed(rx, &sb, &err), 1, "git branch -D x (a packed ref): the delta commits");
    is_str(git_out(dir, "git rev-parse -q --verify x || echo gone"), "gone", "x is deleted");
    log = xasprintf("%s refs/heads/x ", x);
    ok(strstr(st_read(note), log) != NULL, "its old value is noted too: %s", st_read(note));
    free(log);
    unlink(packed);
    free(packed);

    /* HEAD's branch deleted (rm -rf .git/refs/heads): kept, and the host's .git goes back. */
    strbuf_reset(&st_warnings);
    strbuf_reset(&sb);
    begin(&sb, 3);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, ".git/refs/heads/main", NULL, 0);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_DIR, ".git/refs/heads", NULL, 0);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, obj, NULL, 0);
    end(&sb, 3, 3);
    is_int(feed(rx, &sb, &err), 1, "deleting HEAD's branch: the delta commits");
    is_str(git_out(dir, "git rev-parse main"), main4, "HEAD's branch is kept, with its value");
    p = xasprintf("%s/%s", dir, obj);
    ok(st_exists(p), "a loose object is never deleted");
    free(p);
    ok(strstr(st_warnings.buf, "never deletes git history") != NULL, "the user is told: %s",
       st_warnings.buf);
    mf_scan(t, &d, &full, st_warn, NULL, &err);
    found = false;
    for (size_t i = 0; i < d.n; i++)
        found |= d.ops[i].op == WIRE_OP_PUT && !strcmp(d.ops[i].path, ".git/refs/heads/main");
    ok(found && full, "the next push sends the host's .git back to the sandbox (%zu ops)", d.n);
    mf_delta_release(&d);

    /* git pack-refs in the sandbox: loose refs move into packed-refs; nothing is noted. */
    st_sh("cd '%s' && cp -r .git ../g2 && git --git-dir=../g2 pack-refs --all && "
          "cp ../g2/packed-refs ../p2 && rm -rf ../g2", dir);
    packed = xasprintf("%s/../p2", dir);
    strbuf_reset(&st_warnings);
    strbuf_reset(&sb);
    begin(&sb, 4);
    put_entry(&sb, WIRE_OP_PUT, WIRE_REG, ".git/packed-refs", st_read(packed), strlen(st_read(packed)));
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, ".git/refs/heads/main", NULL, 0);
    end(&sb, 4, 2);
    is_int(feed(rx, &sb, &err), 1, "git pack-refs: the delta commits");
    p = xasprintf("%s/.git/refs/heads/main", dir);
    ok(!st_exists(p), "the loose ref of HEAD's branch moved into packed-refs");
    free(p);
    is_str(git_out(dir, "git rev-parse main"), main4, "with its value");
    ok(!strstr(st_read(note), "refs/heads/main"), "and nothing is noted: %s", st_read(note));
    unlink(packed);
    free(packed);

    /* rm -rf .git: every deletion is kept; git log and fsck are as before. */
    strbuf_reset(&st_warnings);
    strbuf_reset(&sb);
    begin(&sb, 5);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, obj, NULL, 0);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, ".git/packed-refs", NULL, 0);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, ".git/index", NULL, 0);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_REG, ".git/HEAD", NULL, 0);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_DIR, ".git/objects", NULL, 0);
    put_entry(&sb, WIRE_OP_DELETE, WIRE_DIR, ".git", NULL, 0);
    end(&sb, 5, 6);
    is_int(feed(rx, &sb, &err), 1, "rm -rf .git: the delta commits");
    is_str(git_out(dir, "git log --format=%s main | tr '\\n' ,"), "c4,c3,c2,c1,",
           "git log shows every commit");
    is_str(git_out(dir, "git fsck --no-dangling 2>&1 && echo clean"), "clean", "git fsck is clean");
    p = xasprintf("%s/.git/index", dir);
    ok(st_exists(p), "the index is kept too");
    free(p);

    free(note);
    free(z);
    free(x);
    free(main4);
    free(obj);
    strbuf_release(&sb);
    apply_free(rx);
    mf_free(t);
    st_rm_rf(dir);
    free(dir);
}

/* A delta the receiver dropped is ended by its sender at once (PULL_CANCEL): mid-file, the
 * entry is cancelled and DELTA_END follows, and the receiver takes that as a whole delta. */
static void test_cancel(void)
{
    char *sd = st_tmpdir("csrc"), *dd = st_tmpdir("cdst");
    mf_tree *src = st_tree_at(sd), *dst = st_tree_at(dd);
    apply_rx *rx = apply_new(dst, APPLY_AGENT, NULL, st_warn, NULL);
    mf_delta d = { 0 };
    delta_tx tx;
    strbuf out = STRBUF_INIT;
    bool full;
    size_t off = 0;
    sbx_err err;
    char *p;

    st_sh("cd '%s' && echo first > a && head -c 4000000 /dev/urandom > b && echo last > c", sd);
    mf_scan(src, &d, &full, st_warn, NULL, &err);
    delta_tx_init(&tx, src, &d, 1, 0, false, st_warn, NULL);
    ok(!delta_tx_fill(&tx, &out, 1000000), "a 4 MB delta is under way after 1 MB");
    is_int(apply_all(rx, &out, &off, &err), 0, "its first megabyte applies");
    delta_tx_cancel(&tx, &out);
    ok(delta_tx_fill(&tx, &out, out.len + 1000000), "a cancelled delta is complete");
    is_int(apply_all(rx, &out, &off, &err), 1, "the receiver takes the cancelled delta as done");
    ok(off == out.len, "with nothing after DELTA_END (%zu of %zu bytes)", off, out.len);
    ok(out.len < 1200000, "the rest of the 4 MB file was not sent (%zu bytes in all)", out.len);
    p = xasprintf("%s/b", dd);
    ok(!st_exists(p), "the file under way is dropped, not written half");
    free(p);
    delta_tx_cancel(&tx, &out);
    ok(off == out.len, "a second cancel adds nothing");
    delta_tx_release(&tx);
    strbuf_release(&out);
    apply_free(rx);
    mf_free(src);
    mf_free(dst);
    st_rm_rf(sd);
    st_rm_rf(dd);
    free(sd);
    free(dd);
}

/* URL secrets in .git (sync/gitcred.h): pushed without them, the host's files untouched;
 * the sandbox's reflog pulled back gets the host's lines restored and keeps its own, with no
 * conflict and nothing to push again. */
#define CRED_O1 "1111111111111111111111111111111111111111"
#define CRED_O2 "2222222222222222222222222222222222222222"
static void test_cred_roundtrip(void)
{
    static const char l1[] = CRED_O1 " " CRED_O2 " A <a@b> 1700000000 +0000\t"
                             "pull https://u:s3cr3t@h.invalid/r: Fast-forward\n";
    static const char l2[] = CRED_O2 " " CRED_O1 " A <a@b> 1700000100 +0000\tcommit: sandbox\n";
    char *hd = st_tmpdir("chost"), *sd = st_tmpdir("csbx");
    mf_tree *host = st_tree_at(hd), *sbx = st_tree_at(sd);
    apply_rx *to_sbx = apply_new(sbx, APPLY_AGENT, NULL, st_warn, NULL);
    apply_rx *to_host = apply_new(host, APPLY_HOST, NULL, st_warn, NULL);
    char *hlog = xasprintf("%s/.git/logs/HEAD", hd), *slog = xasprintf("%s/.git/logs/HEAD", sd);
    char *sfetch = xasprintf("%s/.git/FETCH_HEAD", sd), *snotes = xasprintf("%s/notes", sd);
    char *want = xasprintf("%s%s", l1, l2);
    mf_delta d = { 0 };
    bool full;
    sbx_err err;

    st_sh("mkdir -p '%s/.git/logs'", hd);
    st_write(hlog, l1);
    {
        char *p = xasprintf("%s/.git/FETCH_HEAD", hd);
        st_write(p, CRED_O1 "\t\tbranch 'main' of https://u:s3cr3t@h.invalid/r\n");
        free(p);
        p = xasprintf("%s/notes", hd);
        st_write(p, "https://u:s3cr3t@h.invalid/r\n");
        free(p);
    }
    is_int(transfer(host, to_sbx, true, 1, NULL, &err), 1, "secrets: the push applies");
    ok(!strstr(st_read(slog), "s3cr3t") && strstr(st_read(slog), "pull https://h.invalid/r: "),
       "the sandbox's reflog has the URL without its secret: %s", st_read(slog));
    ok(!strstr(st_read(sfetch), "s3cr3t") && strstr(st_read(sfetch), "of https://h.invalid/r"),
       "so has its FETCH_HEAD: %s", st_read(sfetch));
    ok(strstr(st_read(snotes), "s3cr3t") != NULL, "a file outside .git goes as it is");
    is_str(st_read(hlog), l1, "the host's reflog is not changed by the push");

    /* A commit in the sandbox appends to its reflog; the pull brings it to the host. */
    {
        char *both = xasprintf("%s%s", st_read(slog), l2);
        st_write(slog, both);
        free(both);
    }
    strbuf_reset(&st_warnings);
    is_int(transfer(sbx, to_host, false, 1, NULL, &err), 1, "secrets: the pull applies");
    is_str(st_read(hlog), want, "the host's reflog: its own line whole, then the sandbox's");
    ok(!strstr(st_warnings.buf, "conflict"), "no conflict: %s", st_warnings.buf);
    mf_scan(host, &d, &full, st_warn, NULL, &err);
    is_int((int)d.n, 0, "the host has nothing to push back");
    mf_delta_release(&d);

    free(hlog);
    free(slog);
    free(sfetch);
    free(snotes);
    free(want);
    apply_free(to_sbx);
    apply_free(to_host);
    mf_free(host);
    mf_free(sbx);
    st_rm_rf(hd);
    st_rm_rf(sd);
    free(hd);
    free(sd);
}

int main(void)
{
    test_agent_apply();
    test_host_apply();
    test_crossing();
    test_git_history();
    test_cancel();
    test_cred_roundtrip();
    strbuf_release(&st_warnings);
    return done_testing();
}
