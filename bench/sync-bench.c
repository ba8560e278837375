/*
 * Sync benchmarks: the first sync of generated trees, and a one-file change, against
 * `tar c | tar x`, `rsync -a` and `git status` on the same trees, in the same run, as ratios.
 *
 * The sandbox side is sbx-agent run as a plain process on a second tree (--root-prefix),
 * connected by pipes, so the boundary crossed is the same as the tar pipe's: two processes
 * and a pipe, on one file system. (A real sandbox adds its own file system costs on its
 * side; bench/local* measures those.)
 *
 *   build/bench/sync-bench [--sizes 1000,10000,100000] [--reps N] [--dir DIR] [--agent PATH]
 */
#include "bench/bench.h"
#include "sync/conn.h"
#include "common/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *agent_path = "./sbx-agent";
static int reps = 5;

static double now_ms(void)
{
    return (double)now_ns() / 1e6;
}

/* CPU time (user + system, ms) of this process and its waited-for children. */
static double cpu_ms(void)
{
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    return (self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
            kids.ru_stime.tv_sec) * 1e3 +
           (self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec +
            kids.ru_stime.tv_usec) / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    va_list ap;
    strbuf sb = STRBUF_INIT;
    int r;
    va_start(ap, fmt);
    strbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    r = system(sb.buf);
    strbuf_release(&sb);
    return r;
}

/* Runs argv with stdout and stderr to /dev/null; returns the elapsed ms. */
static double run_quiet(const char *const *argv, const char *cwd)
{
    double t0 = now_ms();
    pid_t pid = fork();
    int st;
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        if (cwd && chdir(cwd) < 0)
            _exit(127);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    waitpid(pid, &st, 0);
    return now_ms() - t0;
}

/* nfiles files of size bytes, 100 to a directory, two levels deep. */
static void generate(const char *dir, int nfiles, size_t size)
{
    char *buf = xmalloc(size);
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < nfiles; i++) {
        char path[4096];
        int fd;
        if (i % 100 == 0) {
            snprintf(path, sizeof(path), "%s/d%03d/e%02d", dir, i / 10000, (i / 100) % 100);
            sh("mkdir -p '%s'", path);
        }
        for (size_t k = 0; k < size; k += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(buf + k, &x, size - k < 8 ? size - k : 8);
        }
        snprintf(path, sizeof(path), "%s/d%03d/e%02d/f%05d.txt", dir, i / 10000,
                 (i / 100) % 100, i);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write_full(fd, buf, size) < 0) {
            perror(path);
            exit(1);
        }
        close(fd);
    }
    free(buf);
}

typedef struct session {
    sync_host *host;
    sync_conn *conn;
    pid_t agent;
    int rfd, wfd;
} session;

static void quiet(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "sync-bench: %s\n", msg);
}

static const sync_conn_ops ops = { .warning = quiet, .error = quiet };

static int open_session(session *s, const char *src, const char *prefix, bool watch)
{
    const char *dirs[] = { src, NULL };
    sync_config cfg = { .code_dirs = dirs, .no_watch = !watch };
    sbx_err err;

    if (sync_host_new(&cfg, &s->host, &err) < 0) {
        fprintf(stderr, "sync-bench: %s\n", err.msg);
        return -1;
    }
    s->agent = bench_agent_start(agent_path, prefix, watch, &s->rfd, &s->wfd);
    if (s->agent < 0)
        return -1;
    if (sync_conn_open(s->host, s->rfd, s->wfd, &ops, NULL, 30000, &s->conn, &err) < 0) {
        fprintf(stderr, "sync-bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static void close_session(session *s)
{
    sync_conn_free(s->conn);
    close(s->rfd);
    close(s->wfd);
    waitpid(s->agent, NULL, 0);
    sync_host_free(s->host);
}

static double sync_round(session *s)
{
    sbx_err err;
    double t0 = now_ms();
    if (sync_conn_sync_wait(s->conn, &err) < 0) {
        fprintf(stderr, "sync-bench: %s\n", err.msg);
        exit(1);
    }
    return now_ms() - t0;
}

/* The first push alone: `true` run without the pull, so the time is the tree going in. */
static void push_only(session *s)
{
    const char *argv[] = { "true", NULL };
    sync_run_req req = { .exe = "/bin/true", .argv = argv, .cwd = "/", .no_pull = true };
    sync_exit_status st;
    sbx_err err;
    if (sync_conn_run_wait(s->conn, 1, &req, NULL, &st, &err) < 0) {
        fprintf(stderr, "sync-bench: %s\n", err.msg);
        exit(1);
    }
}

static void change_one(const char *src, int i)
{
    char path[4096];
    char line[64];
    int fd;
    snprintf(path, sizeof(path), "%s/d000/e00/f%05d.txt", src, i % 100);
    fd = open(path, O_WRONLY | O_APPEND);
    snprintf(line, sizeof(line), "change %d\n", i);
    if (fd < 0 || write_full(fd, line, strlen(line)) < 0)
        exit(1);
    close(fd);
}

static void bench_size(const char *base, int nfiles, size_t size)
{
    char *src = xasprintf("%s/src-%d", base, nfiles);
    char *dst = xasprintf("%s/dst-%d", base, nfiles);
    char *prefix = xasprintf("%s/sbx-%d", base, nfiles);
    double tar[16], rsync[16], first[16], round[16], watch1[64], walk1[64], git[64];
    double tar_cpu[16], first_cpu[16];
    int r1 = reps < 16 ? reps : 15;
    double mb = (double)nfiles * (double)size / 1e6;
    session s;
    const char *git_status[] = { "git", "status", "--porcelain", NULL };

    sh("rm -rf '%s' '%s' '%s' && mkdir -p '%s'", src, dst, prefix, src);
    generate(src, nfiles, size);
    sh("cd '%s' && git init -q . && git config gc.auto 0 && git add -A && "
       "git -c user.name=b -c user.email=b@b commit -qm init", src);
    sh("sync");

    for (int i = 0; i < r1; i++) {
        sh("rm -rf '%s' && mkdir -p '%s'", dst, dst);
        {
            double t0 = now_ms(), c0 = cpu_ms();
            sh("tar -C '%s' -cf - . | tar -C '%s' -xf -", src, dst);
            tar[i] = now_ms() - t0;
            tar_cpu[i] = cpu_ms() - c0;
        }
        sh("rm -rf '%s' && mkdir -p '%s'", dst, dst);
        {
            double t0 = now_ms();
            sh("rsync -a '%s/' '%s/'", src, dst);
            rsync[i] = now_ms() - t0;
        }
        sh("rm -rf '%s' && mkdir -p '%s'", prefix, prefix);
        {
            double t0 = now_ms(), c0 = cpu_ms();
            if (open_session(&s, src, prefix, true) < 0)
                exit(1);
            push_only(&s);
            first[i] = now_ms() - t0;
            close_session(&s);
            /* The agent's CPU is counted once it has been waited for. */
            first_cpu[i] = cpu_ms() - c0;
        }
        sh("rm -rf '%s' && mkdir -p '%s'", prefix, prefix);
        {
            double t0 = now_ms();
            if (open_session(&s, src, prefix, true) < 0)
                exit(1);
            sync_round(&s);
            round[i] = now_ms() - t0;
            close_session(&s);
        }
    }

    /* One-file change, watching: warm session (both manifests and their watches). */
    sh("rm -rf '%s' && mkdir -p '%s'", prefix, prefix);
    if (open_session(&s, src, prefix, true) < 0)
        exit(1);
    sync_round(&s);
    sync_round(&s);
    for (int i = 0; i < reps * 4 && i < 64; i++) {
        change_one(src, i);
        watch1[i] = sync_round(&s);
    }
    close_session(&s);
    /* The same with full stat walks on both sides. */
    sh("rm -rf '%s' && mkdir -p '%s'", prefix, prefix);
    if (open_session(&s, src, prefix, false) < 0)
        exit(1);
    sync_round(&s);
    sync_round(&s);
    for (int i = 0; i < reps && i < 64; i++) {
        change_one(src, i + 1000);
        walk1[i] = sync_round(&s);
    }
    close_session(&s);
    run_quiet(git_status, src);
    for (int i = 0; i < reps && i < 64; i++) {
        change_one(src, i + 2000);
        git[i] = run_quiet(git_status, src);
    }

    {
        double mt = median(tar, r1), mr = median(rsync, r1), mf = median(first, r1),
               mo = median(round, r1), ct = median(tar_cpu, r1), cf = median(first_cpu, r1);
        double mw = median(watch1, reps * 4 < 64 ? reps * 4 : 64), mk = median(walk1, reps),
               mg = median(git, reps);
        printf("| %7d | %4.0f | %8.1f | %8.1f | %8.1f | %4.2f | %4.2f | %7.1f | %7.1f | %4.2f "
               "| %8.1f | %4.2f | %6.2f | %6.2f | %6.2f | %5.3f | %4.2f |\n", nfiles, mb, mt, mr,
               mf, mf / mt, mf / mr, ct, cf, cf / ct, mo, mo / mt, mw, mk, mg, mw / mg, mk / mg);
        fflush(stdout);
    }
    sh("rm -rf '%s' '%s' '%s'", src, dst, prefix);
    free(src);
    free(dst);
    free(prefix);
}

int main(int argc, char **argv)
{
    const char *sizes = "1000,10000,100000";
    const char *dir = NULL;
    char *base;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            sizes = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--agent") && i + 1 < argc)
            agent_path = argv[++i];
        else {
            fprintf(stderr, "usage: sync-bench [--sizes N,N,...] [--reps N] [--dir DIR] "
                    "[--agent PATH]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    signal(SIGPIPE, SIG_IGN);
    base = xasprintf("%s/sbx-sync-bench-XXXXXX", dir ? dir : (getenv("TMPDIR") ? getenv("TMPDIR")
                                                                                : "/var/tmp"));
    if (!mkdtemp(base)) {
        perror(base);
        return 1;
    }
    printf("sync-bench: medians in ms of %d runs (%d for the inotify column), all in %s\n"
           "first push: the whole tree into an empty sandbox; round trip: push, then the\n"
           "sandbox's scan and pull; 1-file: one file appended on the host, then a sync round\n"
           "(push + pull) with inotify on both sides, or with full stat walks on both sides;\n"
           "CPU: user + system time of all the processes involved (host, agent; tar, tar)\n\n",
           reps < 16 ? reps : 15, reps * 4 < 64 ? reps * 4 : 64, base);
    printf("| files | MB | tar c\\|x | rsync -a | sbx first push | /tar | /rsync | tar CPU "
           "| sbx CPU | /tar | sbx round trip | /tar | 1-file inotify | 1-file walk | "
           "git status | inotify/git | walk/git |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
           "---:|\n");
    fflush(stdout);
    for (const char *p = sizes; *p;) {
        int n = atoi(p);
        /* 10 KiB files up to 10,000 (10,000 files = 100 MB, the target's tree); 2 KiB above,
         * to keep the 100,000-file tree at 200 MB. */
        if (n > 0)
            bench_size(base, n, n <= 10000 ? 10240 : 2048);
        p = strchr(p, ',');
        if (!p)
            break;
        p++;
    }
    sh("rm -rf '%s'", base);
    free(base);
    return 0;
}
