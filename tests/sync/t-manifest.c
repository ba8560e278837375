/*
 * Unit tests of sync/manifest*.c: scans and their deltas (order, types, excludes, special
 * files, patterns), incremental scans with inotify checked against full walks, racy files,
 * persistence, and the path map.
 */
#include "sync/manifest.h"
#include "tests/lib/tap.h"
#include "tests/sync/synctest.h"

/* The delta as text: "+f path", "-d path", ... in order. */
static char *scan_text(mf_tree *t, bool *full)
{
    mf_delta d = { 0 };
    strbuf sb = STRBUF_INIT;
    sbx_err err;
    bool f;
    if (mf_scan(t, &d, full ? full : &f, st_warn, NULL, &err) < 0)
        strbuf_addf(&sb, "error: %s\n", err.msg);
    for (size_t i = 0; i < d.n; i++)
        strbuf_addf(&sb, "%c%c%s %s\n", d.ops[i].op == WIRE_OP_PUT ? '+' : '-',
                    "?fdl"[d.ops[i].type], d.ops[i].exec ? "x" : "", d.ops[i].path);
    mf_delta_release(&d);
    return strbuf_detach(&sb, NULL);
}

/* The same ops, sorted (an incremental scan may visit directories in another order). */
static char *sorted(const char *text)
{
    char *tmp = xasprintf("%s/.sbx-sort.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                          (int)getpid());
    char *cmd = xasprintf("sort '%s'", tmp);
    char buf[65536];
    size_t n;
    FILE *f;
    st_write(tmp, text);
    f = popen(cmd, "r");
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    pclose(f);
    unlink(tmp);
    free(tmp);
    free(cmd);
    return xstrdup(buf);
}

static mf_tree *code_tree(const char *dir, const char *const *excludes)
{
    wire_root r = { WIRE_ROOT_CODE, dir, strlen(dir), "", 0 };
    size_t n = 0;
    while (excludes && excludes[n])
        n++;
    return mf_new(&r, 1, excludes, NULL, n, NULL);
}

static void test_scan(void)
{
    char *dir = st_tmpdir("mf");
    mf_tree *t = code_tree(dir, NULL);
    char *s;

    st_sh("cd '%s' && mkdir -p a/b e && echo 1 > a/b/f && echo 2 > top && ln -s top l && "
          "printf '#!/bin/sh\\n' > x && chmod +x x && mkfifo fifo", dir);
    s = scan_text(t, NULL);
    is_str(s, "+d a\n+d a/b\n+f a/b/f\n+d e\n+l l\n+f top\n+fx x\n",
           "a first scan puts everything, parents first, in name order");
    is_str(st_warnings.buf, "", "a fifo is skipped without a word, as it holds no data");
    free(s);
    strbuf_reset(&st_warnings);
    s = scan_text(t, NULL);
    is_str(s, "", "a second scan finds nothing");
    is_str(st_warnings.buf, "", "and a second scan says nothing either");
    free(s);
    is_int(mf_count(t), 8, "the manifest has every entry (the fifo too, unsynced)");

    st_sh("cd '%s' && rm -r a && echo 22 > top && rmdir e && echo e > e && chmod -x x", dir);
    s = scan_text(t, NULL);
    is_str(s, "-f a/b/f\n-d a/b\n-d a\n-d e\n+f e\n+f top\n+f x\n",
           "deletions go children first; a type change is a deletion then a put");
    free(s);

    st_sh("cd '%s' && printf 'skip/\\n*.tmp\\n' > .sbxignore && mkdir skip && echo > skip/y && "
          "echo > t.tmp && echo > keep", dir);
    s = scan_text(t, NULL);
    is_str(s, "+f .sbxignore\n+f keep\n", "excluded paths are not in the delta");
    free(s);
    st_sh("cd '%s' && echo > .sbxignore", dir);
    s = scan_text(t, NULL);
    is_str(s, "+f .sbxignore\n+d skip\n+f skip/y\n+f t.tmp\n",
           "an emptied .sbxignore brings them in");
    free(s);
    st_sh("cd '%s' && echo 't.tmp' > .sbxignore", dir);
    s = scan_text(t, NULL);
    is_str(s, "+f .sbxignore\n", "a path excluded again is dropped without a deletion");
    free(s);
    ok(mf_excluded(t, 0, "t.tmp", 5, false), "mf_excluded knows the rule");
    ok(!mf_excluded(t, 0, "keep", 4, false), "and what it does not exclude");

    st_sh("rm -rf '%s'", dir);
    {
        mf_delta d = { 0 };
        sbx_err err;
        bool full;
        is_int(mf_scan(t, &d, &full, st_warn, NULL, &err), -1,
               "a code directory that vanished is an error, not a mass deletion");
        ok(strstr(err.msg, dir) != NULL, "naming it: %s", err.msg);
        is_int(d.n, 0, "with nothing in the delta");
        mf_delta_release(&d);
    }
    mf_free(t);
    free(dir);
}

static void test_patterns(void)
{
    char *dir = st_tmpdir("mfp");
    wire_root r[] = { { WIRE_ROOT_PATH, dir, strlen(dir), "claude-*-cwd", 12 },
                      { WIRE_ROOT_PATH, dir, strlen(dir), "cfg/*.json", 10 },
                      { WIRE_ROOT_TASK, dir, strlen(dir), "task[1].md", 10 } };
    mf_tree *t = mf_new(r, 3, NULL, NULL, 0, NULL);
    char *s;
    bool partial;

    st_sh("cd '%s' && echo a > claude-1-cwd && echo b > claude-x && mkdir -p cfg && "
          "echo {} > cfg/a.json && echo > cfg/b.txt && echo t > 'task[1].md' && echo > task1.md",
          dir);
    s = scan_text(t, NULL);
    is_str(s, "+f claude-1-cwd\n+d cfg\n+f cfg/a.json\n+f task[1].md\n",
           "sync paths and task files: only what matches (task names literally)");
    free(s);
    ok(mf_in_pattern(t, 0, "claude-9-cwd", 12, &partial) && !partial, "a match");
    ok(!mf_in_pattern(t, 0, "other", 5, &partial), "not a match");
    ok(mf_in_pattern(t, 1, "cfg", 3, &partial) && partial, "an intermediate directory");
    ok(mf_in_pattern(t, 1, "cfg/x.json/deeper", 17, &partial) && !partial,
       "below a match everything belongs");
    mf_free(t);
    st_rm_rf(dir);
    free(dir);
}

/* Two roots on one directory (two task files side by side) share one inotify watch. */
static void test_shared_watch(void)
{
    char *dir = st_tmpdir("mfsw");
    wire_root r[] = { { WIRE_ROOT_TASK, dir, strlen(dir), "a.md", 4 },
                      { WIRE_ROOT_TASK, dir, strlen(dir), "b.md", 4 } };
    mf_tree *t = mf_new(r, 2, NULL, NULL, 0, NULL);
    char *a = xasprintf("%s/a.md", dir), *b = xasprintf("%s/b.md", dir), *s;
    bool full;

    st_write(a, "a");
    st_write(b, "b");
    if (mf_watch(t, true) < 0) {
        skip("inotify is not available here");
    } else {
        free(scan_text(t, &full));
        st_write(a, "a2");
        s = scan_text(t, &full);
        ok(!full, "an incremental scan");
        is_str(s, "+f a.md\n", "sees a change to the first root's file");
        free(s);
        st_write(b, "b2");
        s = scan_text(t, &full);
        is_str(s, "+f b.md\n", "and to the second's, through the same watch");
        free(s);
    }
    mf_free(t);
    st_rm_rf(dir);
    free(dir);
    free(a);
    free(b);
}

/* Runs the same changes past a watching manifest and a walking one: same deltas. */
static void test_watch(void)
{
    char *dir = st_tmpdir("mfw");
    mf_tree *w = code_tree(dir, NULL), *f = code_tree(dir, NULL);
    const char *steps[] = {
        "mkdir -p a/b/c && echo 1 > a/b/c/f && echo 2 > a/g && echo 3 > top",
        "echo changed > a/g",
        "mv a/b a/moved && echo new > a/moved/c/n",
        "rm -r a/moved/c && mkdir -p d/e/f/g && echo deep > d/e/f/g/h",
        "rm top && mkdir top && echo in > top/file",
        "echo 'd/' > .sbxignore",
        "rm .sbxignore && ln -s x sym",
        "rm -r d && echo d > d && chmod +x d",
        "for i in 1 2 3 4 5 6 7 8 9; do mkdir -p m$i/n; echo $i > m$i/n/f; done",
        "rm -r m1 m2 && mv m3 m3b && touch m4/n/f",
    };
    bool full;
    char *a, *b;

    if (mf_watch(w, true) < 0) {
        skip("inotify is not available here");
        mf_free(w);
        mf_free(f);
        st_rm_rf(dir);
        free(dir);
        return;
    }
    a = scan_text(w, &full);
    ok(full, "the first scan with inotify is a full walk (it adds the watches)");
    free(a);
    free(scan_text(f, NULL));
    for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
        char *sa, *sb;
        st_sh("cd '%s' && %s", dir, steps[i]);
        a = scan_text(w, &full);
        b = scan_text(f, NULL);
        sa = sorted(a);
        sb = sorted(b);
        ok(!full, "step %zu is an incremental scan", i + 1);
        is_str(sa, sb, "step %zu (%s): inotify finds what a full walk finds", i + 1, steps[i]);
        free(a);
        free(b);
        free(sa);
        free(sb);
    }
    a = scan_text(w, &full);
    is_str(a, "", "nothing left over");
    free(a);
    mf_invalidate(w);
    a = scan_text(w, &full);
    ok(full, "mf_invalidate makes the next scan a full walk");
    is_str(a, "", "which agrees");
    free(a);
    mf_free(w);
    mf_free(f);
    st_rm_rf(dir);
    free(dir);
}

static void test_racy_and_record(void)
{
    char *dir = st_tmpdir("mfr");
    char *p = xasprintf("%s/f", dir);
    mf_tree *t = code_tree(dir, NULL);
    struct stat st;
    mf_node *n;
    int dfd;
    uint64_t h;

    st_write(p, "aaaa");
    free(scan_text(t, NULL));
    n = mf_lookup(t, 0, "f", 1);
    ok(n && (n->flags & MF_RACY) && (n->flags & MF_HASHED),
       "a file written just before the scan is racy and hashed");
    lstat(p, &st);
    dfd = open(dir, O_RDONLY | O_DIRECTORY);
    ok(!mf_changed(n, &st, dfd, "f"), "unchanged while its content is the same");
    /* Same size, same stat as recorded, different content: only the hash can tell. */
    st_write(p, "bbbb");
    ok(mf_changed(n, &st, dfd, "f"), "a same-stat rewrite of a racy file is seen by content");
    close(dfd);

    lstat(p, &st);
    {
        int fd = open(p, O_RDONLY);
        mf_hash_fd(fd, &h);
        close(fd);
    }
    n = mf_record(t, 0, "new/dir/g", 9, &st, h, true);
    ok(n && (n->flags & MF_RACY), "a recorded file is racy until sealed");
    ok(mf_lookup(t, 0, "new/dir", 7) && mf_lookup(t, 0, "new/dir", 7)->type == MF_DIR,
       "recording makes the directories on its way");
    usleep(60000);
    mf_seal(t);
    ok(!(n->flags & MF_RACY), "sealed after the racy window, it is trusted by its stat");
    mf_forget(t, 0, "new", 3);
    ok(!mf_lookup(t, 0, "new/dir/g", 9), "forget removes a subtree");
    mf_invalidate_path(t, 0, "gone", 4, MF_REG);
    {
        char *s = scan_text(t, NULL);
        is_str(s, "+f f\n-f gone\n", "an invalidated path is sent again (a phantom: deleted)");
        free(s);
    }
    mf_free(t);
    st_rm_rf(dir);
    free(dir);
    free(p);
}

static void test_persistence(void)
{
    char *dir = st_tmpdir("mfs");
    char *state = xasprintf("%s.state", dir);
    mf_tree *t = code_tree(dir, NULL), *u;
    const char *ex[] = { "*.o", NULL };
    uint64_t a, b, c;
    bool loaded, okp;
    sbx_err err;
    char *s;

    st_sh("cd '%s' && mkdir -p x/y && echo 1 > x/y/z && ln -s z x/l && echo 2 > w", dir);
    free(scan_text(t, NULL));
    is_int(mf_save(t, state, 11, 22, 33, &err), 0, "the manifest saves");
    mf_peek(state, &a, &b, &c, &okp);
    ok(okp && a == 11 && b == 22 && c == 33, "its header reads back alone");
    u = code_tree(dir, NULL);
    is_int(mf_load(u, state, &a, &b, &c, &loaded, &err), 0, "and loads");
    ok(loaded && a == 11 && b == 22 && c == 33, "with its header");
    is_int(mf_count(u), mf_count(t), "and every entry");
    s = scan_text(u, NULL);
    is_str(s, "", "a loaded manifest matches the disk");
    free(s);
    mf_free(u);

    u = code_tree(dir, ex);
    mf_load(u, state, &a, &b, &c, &loaded, &err);
    ok(!loaded, "a state file of another configuration is ignored");
    mf_free(u);

    st_sh("printf X | dd of='%s' bs=1 seek=60 conv=notrunc 2>/dev/null", state);
    u = code_tree(dir, NULL);
    mf_load(u, state, &a, &b, &c, &loaded, &err);
    ok(!loaded, "a corrupted state file is ignored");
    is_int(mf_count(u), 0, "and leaves the manifest empty");
    mf_free(u);
    mf_free(t);
    unlink(state);
    st_rm_rf(dir);
    free(dir);
    free(state);
}

static void test_pathmap(void)
{
    mf_pathmap *m = mf_pathmap_new();
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "p/%d", i);
        mf_pathmap_set(m, (unsigned)(i % 3), key, strlen(key), (uint64_t)(i % 10 + 1));
    }
    is_int(mf_pathmap_count(m), 1000, "1000 paths");
    is_int(mf_pathmap_get(m, 1, "p/7", 3), 8, "a value by root and path");
    is_int(mf_pathmap_get(m, 2, "p/7", 3), 0, "another root is another key");
    mf_pathmap_prune(m, 5);
    is_int(mf_pathmap_count(m), 500, "pruning drops the values up to 5");
    is_int(mf_pathmap_get(m, 1, "p/7", 3), 8, "and keeps the others");
    mf_pathmap_free(m);
}

/* A path the wire cannot carry is not in the delta, with a warning; the rest is. */
static void test_wire_limits(void)
{
    char *dir = st_tmpdir("mf");
    mf_tree *t = code_tree(dir, NULL);
    mf_delta d = { 0 };
    sbx_err err;
    bool full, longest_ok = true, deepest_ok = true, good = false;
    size_t longest = 0, deepest = 0;

    strbuf_reset(&st_warnings);
    /* 22 names of 250 bytes (5.5 KB, as `mkdir -p` makes it), 300 levels of "d". */
    st_sh("cd '%s' && echo ok > good && bash -c 'n=$(printf %%250s \"\" | tr \" \" p) && "
          "(for i in $(seq 22); do mkdir $n && cd $n || exit 1; done; echo x > f) && "
          "(for i in $(seq 300); do mkdir d && cd d || exit 1; done; echo x > f)'", dir);
    ok(mf_scan(t, &d, &full, st_warn, NULL, &err) == 0, "the scan succeeds");
    for (size_t i = 0; i < d.n; i++) {
        size_t depth = 1;
        for (size_t k = 0; k < d.ops[i].path_len; k++)
            depth += d.ops[i].path[k] == '/';
        good = good || !strcmp(d.ops[i].path, "good");
        longest = d.ops[i].path_len > longest ? d.ops[i].path_len : longest;
        deepest = depth > deepest ? depth : deepest;
    }
    longest_ok = longest <= SYNC_MAX_PATH;
    deepest_ok = deepest <= SYNC_MAX_DEPTH;
    ok(longest_ok, "no path in the delta is over %d bytes (longest %zu)", SYNC_MAX_PATH, longest);
    ok(deepest_ok, "none is deeper than %d components (deepest %zu)", SYNC_MAX_DEPTH, deepest);
    is_int(deepest, SYNC_MAX_DEPTH, "what is within the limits is in it");
    ok(good, "and the good file too");
    ok(strstr(st_warnings.buf, "not synced: ") &&
       strstr(st_warnings.buf, "a path over the 4096-byte limit"),
       "a warning says the long path is not synced: %s", st_warnings.buf);
    ok(strstr(st_warnings.buf, "a path deeper than 256 components") != NULL,
       "and the deep one");
    ok(strlen(st_warnings.buf) < 1024, "the warnings are short (a shortened path each)");
    mf_delta_release(&d);
    strbuf_reset(&st_warnings);
    mf_invalidate(t);   /* a full walk, as every scan is where inotify is missing */
    ok(mf_scan(t, &d, &full, st_warn, NULL, &err) == 0 && full, "a full walk again");
    is_int(d.n, 0, "finds nothing new");
    is_str(st_warnings.buf, "", "and does not say it again");
    mf_delta_release(&d);
    st_sh("cd '%s' && rm -rf pppp*", dir);
    mf_invalidate(t);
    ok(mf_scan(t, &d, &full, st_warn, NULL, &err) == 0, "removed");
    mf_delta_release(&d);
    st_sh("cd '%s' && bash -c 'p=$(for i in $(seq 22); do "
          "printf \"%%250s/\" \"\"; done | tr \" \" p); mkdir -p \"$p\"'", dir);
    mf_invalidate(t);
    ok(mf_scan(t, &d, &full, st_warn, NULL, &err) == 0, "made anew");
    ok(strstr(st_warnings.buf, "over the 4096-byte limit") != NULL, "it is said again");
    mf_delta_release(&d);
    mf_free(t);
    st_rm_rf(dir);
    free(dir);
}

int main(void)
{
    test_scan();
    test_wire_limits();
    test_patterns();
    test_watch();
    test_shared_watch();
    test_racy_and_record();
    test_persistence();
    test_pathmap();
    strbuf_release(&st_warnings);
    return done_testing();
}
