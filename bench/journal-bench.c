/*
 * The undo journal's cost on a pull (docs/undo.md): a command that changes 1,000 files of
 * 4 KiB, and one that appends to a 100 MB file, each run and pulled back, with the journal
 * off, saving by hard link, by reflink (FICLONE; where the file system has none it falls back
 * to a copy, and the table says which) and by copy. The sandbox side is sbx-agent run as a
 * plain process on a second tree (--root-prefix), connected by pipes, as bench/sync-bench.c
 * does: what differs between the columns is the host's commit alone. The median of REPS
 * rounds per cell, the modes taking turns so that the machine's load drifts alike over all.
 *
 *   build/bench/journal-bench [--reps N] [--dir DIR] [--agent PATH]
 *
 * DIR's file system decides whether reflinks exist (XFS with reflink=1, btrfs): `make
 * bench-journal JOURNAL_BENCH_DIR=/mnt/xfs`.
 */
#include "bench/bench.h"
#include "sync/conn.h"
#include "sync/journal.h"
#include "common/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *agent_path = "./sbx-agent";

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void quiet(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "journal-bench: %s\n", msg);
}

static const sync_conn_ops ops = { .warning = quiet, .error = quiet };

typedef struct session {
    sync_host *host;
    sync_conn *conn;
    jnl *journal;
    pid_t agent;
    int rfd, wfd;
} session;

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "journal-bench: %s: %s\n", what, msg);
    exit(1);
}

static void sh(const char *cmd)
{
    if (system(cmd) != 0)
        die("command failed", cmd);
}

/* A session on src with the sandbox's copy under prefix; mode NULL: no journal. */
static void open_session(session *s, const char *src, const char *prefix, const char *state,
                         const char *mode)
{
    const char *dirs[] = { src, NULL };
    sync_config cfg = { .code_dirs = dirs };
    sbx_err err;

    memset(s, 0, sizeof(*s));
    if (sync_host_new(&cfg, &s->host, &err) < 0)
        die("sync_host_new", err.msg);
    if (mode) {
        int fd = open(state, O_RDONLY | O_DIRECTORY);
        if (fd < 0 || jnl_open(fd, 64ULL << 30, &s->journal, &err) < 0)
            die("jnl_open", fd < 0 ? strerror(errno) : err.msg);
        close(fd);
        jnl_set_save_mode(s->journal, mode);
        sync_host_set_journal(s->host, s->journal);
    }
    s->agent = bench_agent_start(agent_path, prefix, true, &s->rfd, &s->wfd);
    if (s->agent < 0)
        die("starting sbx-agent", strerror(errno));
    if (sync_conn_open(s->host, s->rfd, s->wfd, &ops, NULL, 30000, &s->conn, &err) < 0)
        die("sync_conn_open", err.msg);
}

static void close_session(session *s)
{
    sync_conn_free(s->conn);
    close(s->rfd);
    close(s->wfd);
    waitpid(s->agent, NULL, 0);
    sync_host_free(s->host);
    jnl_free(s->journal);
}

/* Runs script in the sandbox's tree (sh -c) and waits for its pull; the elapsed ms. */
static double run(session *s, const char *script)
{
    const char *argv[] = { "sh", "-c", script, NULL };
    sync_run_req req = { .exe = "/bin/sh", .argv = argv, .cwd = "/" };
    sync_exit_status st;
    sbx_err err;
    uint64_t t0 = now_ns();
    if (sync_conn_run_wait(s->conn, 1, &req, NULL, &st, &err) < 0)
        die("run", err.msg);
    if (st.wait_status != 0)
        die("the command failed", script);
    return (double)(now_ns() - t0) / 1e6;
}

/* Whether dir's file system clones: FICLONE of a small file. */
static bool can_clone(const char *dir)
{
    char *a = xasprintf("%s/clone-a", dir), *b = xasprintf("%s/clone-b", dir);
    int fa = open(a, O_RDWR | O_CREAT | O_TRUNC, 0600), fb = open(b, O_RDWR | O_CREAT | O_TRUNC, 0600);
    bool ok = fa >= 0 && fb >= 0 && write(fa, "x", 1) == 1 && ioctl(fb, FICLONE, fa) == 0;
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    unlink(a);
    unlink(b);
    free(a);
    free(b);
    return ok;
}

#define NMODES 4
static const char *const modes[NMODES] = { NULL, "link", "clone", "copy" };

/* One case: setup (a shell command in src) made once per mode, then reps rounds of script
 * (%s: the sandbox's copy of src) in each mode in turn. */
static void bench_case(const char *base, const char *name, const char *setup, const char *script,
                       int reps)
{
    double t[NMODES][64];
    session s[NMODES];
    char *src[NMODES], *prefix[NMODES], *state[NMODES];
    printf("| %-30s |", name);
    fflush(stdout);
    for (int m = 0; m < NMODES; m++) {
        strbuf cmd = STRBUF_INIT;
        src[m] = xasprintf("%s/src-%d", base, m);
        prefix[m] = xasprintf("%s/sbx-%d", base, m);
        state[m] = xasprintf("%s/state-%d", base, m);
        strbuf_addf(&cmd, "rm -rf '%s' '%s' '%s' && mkdir -p '%s' '%s' '%s' && cd '%s' && %s",
                    src[m], prefix[m], state[m], src[m], prefix[m], state[m], src[m], setup);
        sh(cmd.buf);
        strbuf_release(&cmd);
        open_session(&s[m], src[m], prefix[m], state[m], modes[m]);
        run(&s[m], "true");   /* the first push */
    }
    for (int i = 0; i < reps; i++)
        for (int m = 0; m < NMODES; m++) {
            strbuf sc = STRBUF_INIT;
            strbuf_addf(&sc, script, prefix[m], src[m], i);
            t[m][i] = run(&s[m], sc.buf);
            strbuf_release(&sc);
        }
    for (int m = 0; m < NMODES; m++) {
        double v[64];
        strbuf cmd = STRBUF_INIT;
        memcpy(v, t[m], sizeof(double) * (size_t)reps);
        qsort(v, (size_t)reps, sizeof(double), cmp_double);
        printf(" %8.1f |", v[reps / 2]);
        close_session(&s[m]);
        strbuf_addf(&cmd, "rm -rf '%s' '%s' '%s'", src[m], prefix[m], state[m]);
        sh(cmd.buf);
        strbuf_release(&cmd);
        free(src[m]);
        free(prefix[m]);
        free(state[m]);
    }
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *dir = "/tmp";
    int reps = 7;
    char *base;
    struct statfs sf;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--agent") && i + 1 < argc)
            agent_path = argv[++i];
        else {
            fprintf(stderr, "usage: journal-bench [--reps N] [--dir DIR] [--agent PATH]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 64)
        reps = 7;
    base = xasprintf("%s/sbx-journal-bench.%d", dir, (int)getpid());
    if (mkdir(base, 0700) < 0)
        die(base, strerror(errno));
    statfs(base, &sf);
    printf("The undo journal's cost on a pull: ms per command and its pull, median of %d; the\n"
           "sandbox is sbx-agent on a second tree over pipes. %s (f_type 0x%lx), reflink: %s.\n\n",
           reps, dir, (unsigned long)sf.f_type,
           can_clone(base) ? "yes" : "no (clone falls back to a copy)");
    printf("| %-30s | %8s | %8s | %8s | %8s |\n", "case", "none", "link", "clone", "copy");
    printf("|---|---:|---:|---:|---:|\n");
    /* %1$s: the sandbox's prefix, %2$s: the host's src (the sandbox has it under the prefix) */
    bench_case(base, "1,000 files of 4 KiB changed",
               "for i in $(seq 1000); do head -c 4096 /dev/urandom >f$i; done",
               "cd '%s%s' && for f in f*; do echo %d >>$f; done", reps);
    bench_case(base, "one 100 MB file appended to", "head -c 100000000 /dev/urandom >big",
               "cd '%s%s' && echo %d >>big", reps);
    rmdir(base);
    free(base);
    return 0;
}
