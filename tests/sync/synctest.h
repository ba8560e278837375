/*
 * Helpers for the sync tests: scratch trees, a listing of a tree that compares two trees
 * byte for byte (paths, types, exec bits, contents, symlink targets, file mtimes), and
 * sbx-agent started as a plain process on a second tree (--root-prefix) over pipes.
 */
#ifndef SBX_TESTS_SYNCTEST_H
#define SBX_TESTS_SYNCTEST_H

#include "common/strbuf.h"
#include "common/util.h"
#include "sync/manifest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The warnings a manifest or an applier reported, one per line: st_warn is the callback,
 * st_warnings what it collected (each test file has its own). */
static strbuf st_warnings __attribute__((unused)) = STRBUF_INIT;

static inline void st_warn(void *ctx, const char *msg)
{
    (void)ctx;
    strbuf_addf(&st_warnings, "%s\n", msg);
}

/* A manifest of one code directory, no excludes. */
static inline mf_tree *st_tree_at(const char *dir)
{
    wire_root r = { WIRE_ROOT_CODE, dir, strlen(dir), "", 0 };
    return mf_new(&r, 1, NULL, NULL, 0, NULL);
}

static inline char *st_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char *t = xasprintf("%s/sbx-%s-XXXXXX", base, tag);
    if (!mkdtemp(t)) {
        perror("mkdtemp");
        exit(1);
    }
    return t;
}

static inline void st_rm_rf(const char *path)
{
    char *cmd = xasprintf("rm -rf '%s'", path);
    int r = system(cmd);
    (void)r;
    free(cmd);
}

static inline int st_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int st_sh(const char *fmt, ...)
{
    va_list ap;
    strbuf sb = STRBUF_INIT;
    int r;
    va_start(ap, fmt);
    strbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    r = system(sb.buf);
    strbuf_release(&sb);
    return WIFEXITED(r) ? WEXITSTATUS(r) : 128;
}

static inline void st_write(const char *path, const char *content)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write_full(fd, content, strlen(content)) < 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    close(fd);
}

/* The file's content (static buffer, "<missing>" when absent). */
static inline const char *st_read(const char *path)
{
    static char buf[65536];
    int fd = open(path, O_RDONLY);
    ssize_t n;
    if (fd < 0)
        return "<missing>";
    n = read_full(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n < 0 ? 0 : n] = '\0';
    return buf;
}

static inline bool st_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static inline void st_list_dir(const char *root, const char *rel, bool mtimes, strbuf *out)
{
    char *dir = xasprintf("%s%s%s", root, *rel ? "/" : "", rel);
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        const char *nm = names[i]->d_name;
        char *r, *p;
        struct stat st;
        if (!strcmp(nm, ".") || !strcmp(nm, "..")) {
            free(names[i]);
            continue;
        }
        r = xasprintf("%s%s%s", rel, *rel ? "/" : "", nm);
        p = xasprintf("%s/%s", root, r);
        if (lstat(p, &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                strbuf_addf(out, "d %s\n", r);
                st_list_dir(root, r, mtimes, out);
            } else if (S_ISLNK(st.st_mode)) {
                char t[PATH_MAX];
                ssize_t k = readlink(p, t, sizeof(t) - 1);
                t[k < 0 ? 0 : k] = '\0';
                strbuf_addf(out, "l %s -> %s\n", r, t);
            } else if (S_ISREG(st.st_mode)) {
                int fd = open(p, O_RDONLY);
                uint64_t h = 0;
                if (fd >= 0) {
                    mf_hash_fd(fd, &h);
                    close(fd);
                }
                strbuf_addf(out, "f %s %s %lld %016llx", r, (st.st_mode & 0100) ? "x" : "-",
                            (long long)st.st_size, (unsigned long long)h);
                if (mtimes)
                    strbuf_addf(out, " %lld.%09ld", (long long)st.st_mtim.tv_sec,
                                st.st_mtim.tv_nsec);
                if (st.st_mode & 07000)
                    strbuf_addf(out, " mode=%o", st.st_mode & 07777);
                strbuf_addch(out, '\n');
            } else {
                strbuf_addf(out, "? %s\n", r);
            }
        }
        free(r);
        free(p);
        free(names[i]);
    }
    if (n >= 0)
        free(names);
    free(dir);
}

/* Waits (polling) until path exists; false after ms milliseconds. A synchronization with
 * a background process, not a timing assertion. */
static inline bool st_wait_file(const char *path, int ms)
{
    for (int waited = 0; waited < ms; waited += 10) {
        if (st_exists(path))
            return true;
        usleep(10000);
    }
    return st_exists(path);
}

/* A listing of the tree under root: equal listings mean equal trees. */
static inline char *st_listing(const char *root, bool mtimes)
{
    strbuf sb = STRBUF_INIT;
    st_list_dir(root, "", mtimes, &sb);
    return strbuf_detach(&sb, NULL);
}

/* Shows the lines that differ between two listings as TAP diagnostics. */
static inline void st_diag_diff(const char *a, const char *b)
{
    char *fa = xasprintf("%s/.sbx-diff-a.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                         (int)getpid());
    char *fb = xasprintf("%s.b", fa);
    st_write(fa, a);
    st_write(fb, b);
    st_sh("diff '%s' '%s' | sed 's/^/# /'", fa, fb);
    unlink(fa);
    unlink(fb);
    free(fa);
    free(fb);
}

typedef struct st_agent {
    pid_t pid;
    int rfd, wfd;      /* read from the agent, write to it */
} st_agent;

/* The sbx-agent binary under test: $SBX_AGENT, else ./sbx-agent (make check sets
 * SBXSH_BIN). */
static inline const char *st_agent_path(void)
{
    static char path[PATH_MAX];
    const char *e = getenv("SBX_AGENT");
    const char *bin = getenv("SBXSH_BIN");
    if (e)
        return e;
    snprintf(path, sizeof(path), "%s/sbx-agent", bin ? bin : ".");
    return path;
}

/* Starts sbx-agent with args (NULL-terminated) on a pair of pipes. */
static inline st_agent st_agent_start(const char *const *args)
{
    int to[2], from[2];
    st_agent a;
    if (pipe(to) < 0 || pipe(from) < 0)
        exit(1);
    a.pid = fork();
    if (a.pid == 0) {
        const char *argv[32];
        size_t n = 0;
        argv[n++] = st_agent_path();
        for (size_t i = 0; args && args[i] && n < 31; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]);
        close(to[1]);
        close(from[0]);
        close(from[1]);
        execv(argv[0], (char **)argv);
        perror(argv[0]);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    a.rfd = from[0];
    a.wfd = to[1];
    set_cloexec(a.rfd, true);
    set_cloexec(a.wfd, true);
    return a;
}

static inline int st_agent_stop(st_agent *a)
{
    int status = 0;
    if (a->wfd >= 0)
        close(a->wfd);
    if (a->rfd >= 0)
        close(a->rfd);
    a->rfd = a->wfd = -1;
    if (a->pid > 0)
        waitpid(a->pid, &status, 0);
    a->pid = 0;
    return status;
}

#endif
