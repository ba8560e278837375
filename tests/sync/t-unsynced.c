/*
 * What is never synced, in one process: a directory the host deletes goes from the sandbox
 * with the entries the host never had (fifos, files the sandbox could not send, excluded
 * paths), but not with what the sandbox changed since its last scan; a file that cannot be
 * read is reported once, with what to do, not at every sync.
 */
#include "sync/delta.h"
#include "tests/lib/tap.h"
#include "tests/sync/st_transfer.h"

#include <linux/capability.h>
#include <sys/syscall.h>

static int transfer(mf_tree *src, apply_rx *rx, uint64_t seq, sbx_err *err)
{
    return st_transfer(src, rx, seq, NULL, err);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *q = strstr(hay, needle); q; q = strstr(q + 1, needle))
        n++;
    return n;
}

/* The agent's own scan of its tree (a pull whose delta is not needed here). */
static void agent_scan(mf_tree *t)
{
    mf_delta d = { 0 };
    bool full;
    sbx_err err;
    mf_scan(t, &d, &full, st_warn, NULL, &err);
    mf_delta_release(&d);
}

static void test_host_deletes_directory(void)
{
    char *host = st_tmpdir("uhost"), *sbx = st_tmpdir("usbx");
    wire_root r = { WIRE_ROOT_CODE, sbx, strlen(sbx), "", 0 };
    const char *excl = "*.log";
    mf_tree *h = st_tree_at(host), *a = mf_new(&r, 1, &excl, NULL, 1, NULL);
    apply_rx *rx = apply_new(a, APPLY_AGENT, NULL, st_warn, NULL);
    sbx_err err;
    char *p;

    st_sh("cd '%s' && mkdir -p d/sub e/sub && echo g > d/g && echo h > d/sub/h && "
          "echo k > e/k", host);
    is_int(transfer(h, rx, 1, &err), 1, "the host's tree reaches the sandbox");
    agent_scan(a);
    /* Made in the sandbox and seen by its scan, but never on the host: a fifo (no data), a
     * file the host never got (here: one the sandbox could not send), an excluded log. */
    st_sh("cd '%s' && mkfifo d/f d/sub/f2 && echo u > d/u && echo l > d/x.log && "
          "mkdir d/sub/deeper && mkfifo d/sub/deeper/f3 && mkfifo e/f && echo u > e/u", sbx);
    agent_scan(a);
    /* ... and, after that scan, written in the sandbox: news the host has not heard. */
    st_sh("cd '%s' && echo new > e/sub/new", sbx);

    st_sh("rm -rf '%s/d' '%s/e'", host, host);
    strbuf_reset(&st_warnings);
    is_int(transfer(h, rx, 2, &err), 1, "the host's deletions apply");
    p = xasprintf("%s/d", sbx);
    ok(!st_exists(p), "a directory the host deleted is gone from the sandbox, with its fifos, "
       "a file the host never had, an excluded file and a subdirectory of fifos");
    free(p);
    p = xasprintf("%s/e/sub/new", sbx);
    is_str(st_read(p), "new\n", "a file the sandbox wrote after its last scan is kept");
    free(p);
    p = st_listing(sbx, false);
    ok(!strncmp(p, "d e\nd e/sub\nf e/sub/new ", 24) && count(p, "\n") == 3,
       "and only it, with the directories that lead to it (the fifo and the old file go)");
    free(p);
    is_str(st_warnings.buf, "", "no warning");

    apply_free(rx);
    mf_free(h);
    mf_free(a);
    st_rm_rf(host);
    st_rm_rf(sbx);
    free(host);
    free(sbx);
}

/* Root reads everything: without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH it reads as its
 * files' owner, as a sandbox's root does. */
static bool drop_capabilities(void)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) < 0)
        return false;
    data[0].effective = data[1].effective = 0;
    return syscall(SYS_capset, &hdr, data) == 0;
}

static void test_unreadable_said_once(void)
{
    char *src = st_tmpdir("rsrc"), *dst = st_tmpdir("rdst");
    mf_tree *s = st_tree_at(src), *d = st_tree_at(dst);
    apply_rx *rx = apply_new(d, APPLY_AGENT, NULL, st_warn, NULL);
    sbx_err err;
    char *p = xasprintf("%s/secret", src);
    int fd;

    st_sh("cd '%s' && echo s > secret && chmod 0200 secret && echo a > a", src);
    fd = open(p, O_RDONLY);
    if (fd >= 0 && (close(fd), !drop_capabilities() || (fd = open(p, O_RDONLY)) >= 0)) {
        if (fd >= 0)
            close(fd);
        for (int i = 0; i < 6; i++)
            skip("a mode 0200 file stays readable here (capabilities cannot be dropped)");
        goto out;
    }
    strbuf_reset(&st_warnings);
    is_int(transfer(s, rx, 1, &err), 1, "a tree with an unreadable file syncs");
    is_str(st_warnings.buf, "cannot read secret: Permission denied; it is not synced until it is "
           "readable (chmod u+r) or excluded (.sbxignore, AGENT_SANDBOX_SYNC_EXCLUDE); said once\n",
           "the unreadable file is reported, with what to do");
    /* Written to and chmod-ed again (its stat changes): still unreadable, nothing new. */
    for (int i = 2; i <= 4; i++) {
        st_sh("cd '%s' && echo more >> secret && chmod 0200 secret && echo %d > a", src, i);
        transfer(s, rx, (uint64_t)i, &err);
    }
    is_int((long long)count(st_warnings.buf, "cannot read"), 1,
           "three later syncs of the changed file say nothing more");
    free(p);
    p = xasprintf("%s/a", dst);
    is_str(st_read(p), "4\n", "the rest of the tree syncs meanwhile");
    st_sh("cd '%s' && echo t > other && chmod 000 other", src);
    transfer(s, rx, 5, &err);
    is_int((long long)count(st_warnings.buf, "cannot read other"), 1,
           "another unreadable file has its own warning");
    transfer(s, rx, 6, &err);
    is_int((long long)count(st_warnings.buf, "cannot read"), 2, "once");
out:
    free(p);
    apply_free(rx);
    mf_free(s);
    mf_free(d);
    st_rm_rf(src);
    st_rm_rf(dst);
    free(src);
    free(dst);
}

int main(void)
{
    test_host_deletes_directory();
    test_unreadable_said_once();   /* last: it may drop the process's capabilities */
    strbuf_release(&st_warnings);
    return done_testing();
}
