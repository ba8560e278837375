/*
 * sync/journal.c without a sandbox: a commit's saves (a file replaced, a file deleted, a
 * directory and a symlink removed) written as one entry; content-addressed objects shared by
 * equal contents, in each save mode (link, clone, copy: the link shares the inode, the others
 * do not); the undo's plan, its refusal of a path the host changed, the undo itself (bytes,
 * modes, symlinks), its redo; the bound dropping the oldest entry and saying so.
 */
#include "sync/journal.h"
#include "sync/manifest.h"
#include "tests/lib/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char warned[2048];

static void on_warn(void *ctx, const char *msg)
{
    (void)ctx;
    snprintf(warned, sizeof(warned), "%s", msg);
}

static void put(int dfd, const char *name, const char *text, mode_t mode)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        printf("Bail out! cannot write %s\n", name);
    fchmod(fd, mode);
    close(fd);
}

static char *get(int dfd, const char *name)
{
    static char buf[256];
    int fd = openat(dfd, name, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return fd < 0 ? NULL : buf;
}

/* What a pull does to `name`: the old state saved, the new written (NULL: deleted). */
static void pull_one(jnl *j, int dfd, const char *root, const char *name, const char *text)
{
    struct stat st;
    bool have = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    jnl_state old, now = { .type = '-' };
    jnl_take(j, dfd, name, have ? &st : NULL, &old);
    if (text) {
        char tmp[64];
        snprintf(tmp, sizeof(tmp), ".new-%s", name);
        put(dfd, tmp, text, 0644);
        renameat(dfd, tmp, dfd, name);
        fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
        now.type = 'f';
        now.mode = st.st_mode & 07777;
        now.size = (uint64_t)st.st_size;
        int fd = openat(dfd, name, O_RDONLY);
        mf_hash_fd(fd, &now.hash);
        close(fd);
    } else {
        unlinkat(dfd, name, have && S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
    }
    jnl_record(j, root, name, strlen(name), &old, &now);
}

int main(void)
{
    char dir[] = "/tmp/sbx-t-journal.XXXXXX", code[128], state[128];
    int cfd, sfd;
    jnl *j;
    jnl_log l;
    jnl_plan plan;
    sbx_err err;
    size_t failed;
    struct stat a, b;
    char target[64];

    if (!mkdtemp(dir)) {
        printf("Bail out! cannot make a temporary directory\n");
        return 1;
    }
    snprintf(code, sizeof(code), "%s/code", dir);
    snprintf(state, sizeof(state), "%s/state", dir);
    mkdir(code, 0755);
    mkdir(state, 0700);
    cfd = open(code, O_RDONLY | O_DIRECTORY);
    sfd = open(state, O_RDONLY | O_DIRECTORY);
    if (cfd < 0 || sfd < 0 || jnl_open(sfd, 1 << 20, &j, &err) < 0) {
        printf("Bail out! cannot open the journal\n");
        return 1;
    }
    jnl_root root = { code, cfd };

    put(cfd, "a", "alpha\n", 0640);
    put(cfd, "b", "alpha\n", 0755);
    mkdirat(cfd, "d", 0700);
    symlinkat("a", cfd, "s");

    /* 1: a replaced, b deleted, s and d deleted */
    jnl_set_label(j, "cmd one");
    ok(jnl_begin(j, on_warn, NULL), "the lock is taken");
    fstatat(cfd, "a", &a, 0);
    pull_one(j, cfd, code, "a", "changed\n");
    pull_one(j, cfd, code, "b", NULL);
    pull_one(j, cfd, code, "s", NULL);
    pull_one(j, cfd, code, "d", NULL);
    jnl_end(j);
    ok(jnl_read(j, &l, &err) == 0 && l.n == 1 && l.v[0].n == 4, "one entry of four changes");
    is_str(l.v[0].label, "cmd one", "labelled with the command");
    ok(!strcmp(l.v[0].changes[0].old.obj, l.v[0].changes[1].old.obj) && l.v[0].changes[0].old.obj[0],
       "equal contents share one object");
    {
        int ofd = openat(sfd, "journal/objects", O_RDONLY | O_DIRECTORY);
        ok(fstatat(ofd, l.v[0].changes[0].old.obj, &b, 0) == 0 && b.st_ino == a.st_ino,
           "the replaced file was saved by a hard link (its inode)");
        close(ofd);
    }
    is_int(l.v[0].changes[2].old.type, 'l', "the symlink's old state is a link");
    is_str(l.v[0].changes[2].old.target, "a", "with its target");
    is_int((int)l.v[0].changes[3].old.mode, 0700, "the directory's mode");
    jnl_log_free(&l);

    /* a host edit since: refused, named */
    put(cfd, "a", "host\n", 0644);
    ok(jnl_plan_make(j, &root, 1, 1, 1, &plan, &err) == 0 && plan.conflicts == 1,
       "the plan finds the host's edit of a");
    jnl_plan_free(&plan);
    jnl_plan_make(j, &root, 1, 1, 1, &plan, &err);
    ok(jnl_apply(j, &root, 1, &plan, false, on_warn, NULL, &failed, &err) < 0, "the undo is refused");
    is_str(get(cfd, "a"), "host\n", "and the host's edit is left");
    jnl_plan_free(&plan);

    /* forced: everything back as before command 1 */
    jnl_plan_make(j, &root, 1, 1, 1, &plan, &err);
    ok(jnl_apply(j, &root, 1, &plan, true, on_warn, NULL, &failed, &err) == 0 && failed == 0,
       "sbx undo --force applies");
    jnl_plan_free(&plan);
    is_str(get(cfd, "a"), "alpha\n", "a has its bytes back");
    fstatat(cfd, "a", &a, 0);
    fstatat(cfd, "b", &b, 0);
    is_int(a.st_mode & 07777, 0640, "and its mode");
    is_int(b.st_mode & 07777, 0755, "b is back with its mode");
    ok(readlinkat(cfd, "s", target, sizeof(target)) == 1 && target[0] == 'a', "s is a symlink to a again");
    ok(fstatat(cfd, "d", &a, 0) == 0 && S_ISDIR(a.st_mode) && (a.st_mode & 07777) == 0700,
       "d is a directory again, mode 0700");

    /* the undo was journaled: undoing it redoes command 1 (with a's host edit) */
    ok(jnl_read(j, &l, &err) == 0 && l.n == 2 && !strcmp(l.v[1].kind, "undo"), "the undo is entry 2");
    jnl_log_free(&l);
    jnl_plan_make(j, &root, 1, 2, 2, &plan, &err);
    ok(plan.conflicts == 0 && jnl_apply(j, &root, 1, &plan, false, on_warn, NULL, &failed, &err) == 0,
       "undo of the undo applies");
    jnl_plan_free(&plan);
    is_str(get(cfd, "a"), "host\n", "a is as it was before the undo");
    ok(faccessat(cfd, "b", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT, "b is deleted again");

    /* the save modes: a copy is another inode */
    jnl_set_save_mode(j, "copy");
    put(cfd, "c", "copy me\n", 0644);
    fstatat(cfd, "c", &a, 0);
    jnl_begin(j, on_warn, NULL);
    pull_one(j, cfd, code, "c", "new\n");
    jnl_end(j);
    jnl_read(j, &l, &err);
    {
        int ofd = openat(sfd, "journal/objects", O_RDONLY | O_DIRECTORY);
        ok(fstatat(ofd, l.v[l.n - 1].changes[0].old.obj, &b, 0) == 0 && b.st_ino != a.st_ino &&
               b.st_size == a.st_size, "SBXSH_TEST_JOURNAL_COPY=copy: a copy, not a link");
        close(ofd);
    }
    jnl_log_free(&l);
    jnl_free(j);

    /* the bound: 3 files of 8 KiB and 4 KiB per change over 30 KiB drops the oldest, said */
    jnl_open(sfd, 30 << 10, &j, &err);
    for (int i = 0; i < 3; i++) {
        char name[8], big[8193];
        snprintf(name, sizeof(name), "big%d", i);
        memset(big, 'a' + i, 8192);
        big[8192] = '\0';
        put(cfd, name, big, 0644);
        warned[0] = '\0';
        jnl_begin(j, on_warn, NULL);
        pull_one(j, cfd, code, name, "x");
        jnl_end(j);
    }
    ok(strstr(warned, "dropped its oldest entry") && strstr(warned, "AGENT_SANDBOX_UNDO_MAX"),
       "past the bound the oldest entry goes, and the warning says so");
    jnl_read(j, &l, &err);
    ok(l.n >= 1 && l.v[0].id > 2, "the oldest entries are gone from the log");
    jnl_log_free(&l);
    jnl_free(j);

    close(cfd);
    close(sfd);
    {
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
            diag("cannot remove %s", dir);
    }
    return done_testing();
}
