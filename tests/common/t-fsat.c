/*
 * common/fsat.c: the walk beneath a directory fd refuses every symlink and every way out,
 * with openat2 and then with the component walk a kernel without it takes; mkdir -p
 * beneath makes nothing through a link; rm -rf removes a link as itself and leaves what it
 * points to.
 */
#include "common/fsat.h"
#include "common/fsutil.h"
#include "tests/lib/tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char top[64];

static char *at(const char *rel)
{
    static char buf[4][512];
    static int i;
    char *b = buf[i++ % 4];
    snprintf(b, sizeof(buf[0]), "%s/%s", top, rel);
    return b;
}

static bool exists(const char *rel)
{
    struct stat st;
    return lstat(at(rel), &st) == 0;
}

static int open_s(int root, const char *rel, int flags)
{
    return sbx_open_beneath(root, rel, strlen(rel), flags);
}

/* Same checks with openat2 (where the kernel has it) and with the walk. */
static void walk_checks(int root, const char *how)
{
    int fd;

    static const struct {
        const char *rel;
        int want;       /* 0: opens; else the errno */
        const char *what;
    } cases[] = {
        { "a/b", 0, "a/b opens" },
        { "a//b/", 0, "empty components are skipped" },
        { "", 0, "\"\" is the directory itself" },
        { "link/b", ELOOP, "a symlink to a directory inside is refused (ELOOP)" },
        { "a/out", ELOOP, "a symlink out of the root as the last component is refused (ELOOP)" },
        { "a/out/x", ELOOP, "a symlink out of the root on the way is refused (ELOOP)" },
        { "a/../../outside", ELOOP, ".. out of the root is refused (ELOOP)" },
        { "a/file", ENOTDIR, "a file is ENOTDIR" },
        { "a/none", ENOENT, "a missing one is ENOENT" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        errno = 0;
        fd = open_s(root, cases[i].rel, O_PATH);
        int e = errno;
        ok(cases[i].want ? fd < 0 && e == cases[i].want : fd >= 0, "%s: %s (%s)", how,
           cases[i].what, fd < 0 ? strerror(e) : "opened");
        if (fd >= 0)
            close(fd);
    }

    fd = open_s(root, "a", O_RDONLY);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    int names = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        names += de->d_name[0] != '.';
    ok(d && names == 3, "%s: O_RDONLY gives an fd readdir reads (%d names)", how, names);
    if (d)
        closedir(d);

    /* mkdir -p beneath: made where nothing is in the way, nothing made through a link */
    fd = sbx_mkdir_beneath(root, "new/x/y", 7, O_PATH, 0755);
    ok(fd >= 0 && exists("root/new/x/y"), "%s: mkdir -p beneath makes new/x/y", how);
    if (fd >= 0)
        close(fd);
    errno = 0;
    fd = sbx_mkdir_beneath(root, "a/out/made", 10, O_PATH, 0755);
    ok(fd < 0 && errno == ELOOP && !exists("outside/made"),
       "%s: mkdir -p beneath makes nothing through a symlink (ELOOP)", how);
    if (fd >= 0)
        close(fd);
    ok(sbx_rm_beneath(root, "new") == 0 && !exists("root/new"), "%s: rm -rf beneath", how);
}

/* A chain of depth directories "d" in name beneath root, each with a file and a sibling
 * directory "s" holding a file (so that a level let go and read again has more to remove
 * after its deep branch, in whatever order readdir gives). Two fds held at a time. */
static int deep_tree(int root, const char *name, int depth)
{
    int fd = openat(root, ".", O_RDONLY | O_DIRECTORY), next;

    for (int i = 0; i < depth && fd >= 0; i++) {
        const char *n = i ? "d" : name;
        if (mkdirat(fd, n, 0755) < 0 || (next = openat(fd, n, O_RDONLY | O_DIRECTORY)) < 0)
            return -1;
        close(fd);
        fd = next;
        close(openat(fd, "f", O_CREAT | O_WRONLY, 0644));
        if (mkdirat(fd, "s", 0755) < 0)
            return -1;
        close(openat(fd, "s/f", O_CREAT | O_WRONLY, 0644));
    }
    close(fd);
    return fd < 0 ? -1 : 0;
}

int main(void)
{
    int root, fd;

    strcpy(top, "/tmp/sbx-t-fsat.XXXXXX");
    if (!mkdtemp(top))
        return printf("Bail out! mkdtemp: %s\n", strerror(errno)), 1;
    if (sbx_mkdir_p(at("root/a/b/c"), 0755, NULL) < 0 || sbx_mkdir_p(at("outside/d"), 0755, NULL) < 0)
        return printf("Bail out! mkdir -p: %s\n", strerror(errno)), 1;
    ok(exists("root/a/b/c"), "sbx_mkdir_p makes every missing component");
    ok(sbx_mkdir_p(at("root/a/b"), 0755, NULL) == 0, "sbx_mkdir_p of an existing one is 0");
    close(open(at("root/a/file"), O_CREAT | O_WRONLY, 0644));
    close(open(at("outside/keep"), O_CREAT | O_WRONLY, 0644));
    if (symlink("a", at("root/link")) < 0 || symlink(at("outside"), at("root/a/out")) < 0)
        return printf("Bail out! symlink: %s\n", strerror(errno)), 1;
    root = open(at("root"), O_PATH | O_DIRECTORY);

    walk_checks(root, "openat2");
    sbx_fsat_walk_only();
    walk_checks(root, "walk");

    /* rm -rf: the symlinks go as themselves, what they point to stays */
    ok(sbx_rm_beneath(root, "a") == 0 && !exists("root/a") && exists("outside/keep") &&
           exists("outside/d"),
       "rm -rf beneath removes a/ and its links, never what a link points to");
    ok(sbx_rm_beneath(root, "a") == 0, "rm -rf of a missing name is 0");
    ok(sbx_rm_beneath(root, "link") == 0 && !exists("root/link"), "a symlink is removed as one");
    fd = open(at("root/f"), O_CREAT | O_WRONLY, 0644);
    close(fd);
    ok(sbx_rm_beneath(root, "f") == 0 && !exists("root/f"), "a file is unlinked");
    /* a directory the sandbox made unreadable (as root, permissions do not stop the walk;
     * run as another user, this is the chmod 0700 through /proc/self/fd) */
    sbx_mkdir_p(at("root/locked/inner"), 0755, NULL);
    close(open(at("root/locked/inner/f"), O_CREAT | O_WRONLY, 0644));
    chmod(at("root/locked/inner"), 0);
    chmod(at("root/locked"), 0);
    ok(sbx_rm_beneath(root, "locked") == 0 && !exists("root/locked"),
       "rm -rf beneath opens up and removes unreadable directories");

    /* a tree deeper than the fd limit (as the sandbox may make one): removed whole */
    struct rlimit was, low;
    ok(deep_tree(root, "deep", 400) == 0, "a tree 400 directories deep");
    getrlimit(RLIMIT_NOFILE, &was);
    low = was;
    low.rlim_cur = 20;
    setrlimit(RLIMIT_NOFILE, &low);
    fd = sbx_rm_beneath(root, "deep");
    setrlimit(RLIMIT_NOFILE, &was);
    ok(fd == 0 && !exists("root/deep"), "rm -rf beneath removes it under a limit of 20 fds (%s)",
       fd ? strerror(errno) : "0");
    close(root);

    sbx_err err;
    ok(sbx_rm_rf(at("outside/"), &err) == 0 && !exists("outside"), "sbx_rm_rf of a path (with a trailing /)");
    ok(sbx_rm_rf(at("outside"), &err) == 0, "sbx_rm_rf of a missing path is 0");
    ok(sbx_rm_rf(top, &err) == 0 && access(top, F_OK) < 0, "sbx_rm_rf of the whole test tree");
    return done_testing();
}
