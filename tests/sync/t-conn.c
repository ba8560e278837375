/*
 * Integration tests of sync/conn.h with the real sbx-agent over pipes: the agent runs as a
 * plain process on a second tree (--root-prefix), so no sandbox is needed. Covers the first
 * sync, both directions of changes, commands (output, input, statuses, signals, spawn
 * failures, SIGPIPE, background processes, tty), conflicts both ways, `.git` filtering and
 * allowlists, excludes, sync paths and task files, and reattaching to a listening agent.
 */
#include "sync/conn.h"
#include "tests/lib/tap.h"
#include "tests/sync/synctest.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

typedef struct sess {
    char *tmp, *code, *prefix, *sbx_code;
    sync_host *host;
    sync_conn *conn;
    st_agent agent;
    strbuf warnings;
    strbuf errors;
} sess;

static void on_warning(void *ctx, const char *msg)
{
    sess *s = ctx;
    strbuf_addf(&s->warnings, "%s\n", msg);
}

static void on_error(void *ctx, const char *msg)
{
    sess *s = ctx;
    strbuf_addf(&s->errors, "%s\n", msg);
}

static const sync_conn_ops ops = { .warning = on_warning, .error = on_error };

static void sess_connect(sess *s, const char *const *agent_args)
{
    sbx_err err;
    s->agent = st_agent_start(agent_args);
    if (sync_conn_open(s->host, s->agent.rfd, s->agent.wfd, &ops, s, 10000, &s->conn, &err)) {
        printf("Bail out! cannot open a connection: %s\n", err.msg);
        exit(255);
    }
}

/* A session on a fresh host tree; cfg's code_dirs is filled in. */
static void sess_open(sess *s, const char *tag, sync_config *cfg)
{
    sbx_err err;
    const char *dirs[2];
    memset(s, 0, sizeof(*s));
    strbuf_init(&s->warnings, 0);
    strbuf_init(&s->errors, 0);
    s->tmp = st_tmpdir(tag);
    s->code = xasprintf("%s/host/code", s->tmp);
    s->prefix = xasprintf("%s/sbx", s->tmp);
    s->sbx_code = xasprintf("%s%s", s->prefix, s->code);
    st_sh("mkdir -p '%s' '%s'", s->code, s->prefix);
    dirs[0] = s->code;
    dirs[1] = NULL;
    cfg->code_dirs = dirs;
    if (sync_host_new(cfg, &s->host, &err) < 0) {
        printf("Bail out! sync_host_new: %s\n", err.msg);
        exit(255);
    }
    cfg->code_dirs = NULL;
    {
        const char *args[] = { "--root-prefix", s->prefix, NULL };
        sess_connect(s, args);
    }
}

static void sess_close(sess *s)
{
    sync_conn_free(s->conn);
    s->conn = NULL;
    st_agent_stop(&s->agent);
}

static void sess_free(sess *s)
{
    sess_close(s);
    sync_host_free(s->host);
    st_rm_rf(s->tmp);
    free(s->tmp);
    free(s->code);
    free(s->prefix);
    free(s->sbx_code);
    strbuf_release(&s->warnings);
    strbuf_release(&s->errors);
}

typedef struct result {
    sync_exit_status st;
    char out[65536], err[65536];
    int ret;
} result;

static uint32_t next_chan = 1;

static void slurp(int fd, char *buf, size_t sz)
{
    ssize_t n;
    lseek(fd, 0, SEEK_SET);
    n = read_full(fd, buf, sz - 1);
    buf[n < 0 ? 0 : n] = '\0';
    close(fd);
}

/* Runs bash -c cmd in the code directory with input (NULL: none). */
static void run_opts(sess *s, const char *cmd, const char *input, bool tty, result *r)
{
    const char *argv[] = { "bash", "-c", cmd, NULL };
    const char *env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LC_ALL=C", NULL };
    sync_fd_spec fds[] = { { 0, SYNC_FD_IN }, { 1, SYNC_FD_OUT }, { 2, SYNC_FD_OUT } };
    char *in_path = xasprintf("%s/in.XXXXXX", s->tmp), *o_path = xasprintf("%s/o.XXXXXX", s->tmp),
         *e_path = xasprintf("%s/e.XXXXXX", s->tmp);
    int hfd[3];
    sync_run_req req = { .exe = "bash", .argv = argv, .env = env, .cwd = s->code, .fds = fds,
                         .nfds = 3, .tty = tty };
    sbx_err err;

    hfd[0] = -1;
    if (input) {
        hfd[0] = mkstemp(in_path);
        write_full(hfd[0], input, strlen(input));
        lseek(hfd[0], 0, SEEK_SET);
        unlink(in_path);
    }
    hfd[1] = mkstemp(o_path);
    hfd[2] = mkstemp(e_path);
    unlink(o_path);
    unlink(e_path);
    r->ret = sync_conn_run_wait(s->conn, next_chan++, &req, hfd, &r->st, &err);
    if (r->ret < 0)
        diag("run failed: %s", err.msg);
    slurp(hfd[1], r->out, sizeof(r->out));
    slurp(hfd[2], r->err, sizeof(r->err));
    if (hfd[0] >= 0)
        close(hfd[0]);
    free(in_path);
    free(o_path);
    free(e_path);
}

static void run(sess *s, const char *cmd, result *r)
{
    run_opts(s, cmd, NULL, false, r);
}

static char *host_path(sess *s, const char *rel)
{
    return xasprintf("%s/%s", s->code, rel);
}

static char *sbx_path(sess *s, const char *rel)
{
    return xasprintf("%s/%s", s->sbx_code, rel);
}

static void same_trees(sess *s, const char *what)
{
    char *a = st_listing(s->code, true), *b = st_listing(s->sbx_code, true);
    if (!ok(!strcmp(a, b), "%s: the sandbox tree equals the host tree (contents, modes, "
            "mtimes)", what))
        st_diag_diff(a, b);
    free(a);
    free(b);
}

static void test_first_sync_and_back(void)
{
    sync_config cfg = { 0 };
    sess s;
    result r;
    char *p;
    sync_conn_stats stats;

    sess_open(&s, "first", &cfg);
    st_sh("cd '%s' && mkdir -p src/deep/er empty && printf 'hello\\n' > src/a.txt && "
          "printf '#!/bin/sh\\necho run\\n' > run.sh && chmod +x run.sh && "
          "ln -s src/a.txt link && ln -s /etc/passwd abs-link && "
          "head -c 300000 /dev/urandom > src/deep/er/big.bin && : > zero && "
          "printf 'x\\0y' > src/nul && touch -d '2001-02-03 04:05:06.123456789' src/a.txt",
          s.code);
    run(&s, "echo out; echo err >&2; exit 3", &r);
    is_int(r.ret, 0, "run_wait succeeds");
    is_int(r.st.kind, SYNC_EXITED, "the command exited");
    is_int(r.st.code, 3, "with its status");
    is_int(r.st.wait_status, 3 << 8, "as a raw wait status");
    is_str(r.out, "out\n", "stdout relayed");
    is_str(r.err, "err\n", "stderr relayed apart");
    same_trees(&s, "first sync");
    sync_conn_stats_get(s.conn, &stats);
    ok(stats.push_entries >= 11, "the first push sent the whole tree (%llu entries)",
       (unsigned long long)stats.push_entries);

    run(&s, "echo new > new.txt && rm src/a.txt && mkdir -p made/sub && ln -s new.txt nl && "
            "chmod +x zero && printf more >> src/nul && rm -r src/deep", &r);
    is_int(r.st.code, 0, "changes made in the sandbox");
    same_trees(&s, "pulled back before the exit callback");
    p = host_path(&s, "new.txt");
    is_str(st_read(p), "new\n", "a new sandbox file is on the host");
    free(p);
    p = host_path(&s, "src/deep");
    ok(!st_exists(p), "a removed sandbox directory is removed on the host");
    free(p);

    st_sh("cd '%s' && echo host > h.txt && rm run.sh && mkdir hd", s.code);
    run(&s, "cat h.txt; test -e run.sh || echo gone; test -d hd && echo dir", &r);
    is_str(r.out, "host\ngone\ndir\n", "host changes are pushed before the command");
    same_trees(&s, "after a host change");
    is_str(s.warnings.buf, "", "no warnings");
    is_str(s.errors.buf, "", "no errors");
    sess_free(&s);
}

static void test_commands(void)
{
    sync_config cfg = { 0 };
    sess s;
    result r;

    sess_open(&s, "cmds", &cfg);
    run(&s, "kill -TERM $$", &r);
    is_int(r.st.kind, SYNC_SIGNALED, "a signal death is reported");
    is_int(r.st.code, SIGTERM, "with its signal");
    is_int(r.st.wait_status, SIGTERM, "raw status as waitpid gives it");

    {
        const char *argv[] = { "no-such-program-x", NULL };
        const char *env[] = { "PATH=/usr/bin:/bin", NULL };
        sync_run_req req = { .exe = "no-such-program-x", .argv = argv, .env = env,
                             .cwd = s.code };
        sbx_err err;
        ok(sync_conn_run_wait(s.conn, next_chan++, &req, NULL, &r.st, &err) == 0,
           "a missing program is not a connection error");
        is_int(r.st.kind, SYNC_SPAWN_FAILED, "it is a spawn failure");
        is_int(r.st.code, ENOENT, "with ENOENT");
        is_int(r.st.wait_status, 127 << 8, "which bash reports as 127");
        ok(strstr(r.st.message, "no-such-program-x") != NULL, "the message names it: %s",
           r.st.message);
    }
    {
        const char *argv[] = { "true", NULL };
        sync_run_req req = { .exe = "/bin/true", .argv = argv, .cwd = "/no/such/dir" };
        sbx_err err;
        sync_conn_run_wait(s.conn, next_chan++, &req, NULL, &r.st, &err);
        is_int(r.st.kind, SYNC_SPAWN_FAILED, "a missing cwd is a spawn failure");
        ok(strstr(r.st.message, "/no/such/dir") != NULL, "naming the directory: %s",
           r.st.message);
    }
    {
        char *f = host_path(&s, "noexec");
        st_write(f, "echo hi\n");
        free(f);
        run(&s, "./noexec", &r);
        is_int(r.st.code, 126, "a file without the exec bit gives bash's 126");
    }

    {
        /* 2 on 1's pipe: one stream, in the order written (as `2>&1` under bash) */
        const char *argv[] = { "bash", "-c",
                               "for i in 1 2 3 4 5 6 7 8; do echo o$i; echo e$i >&2; done", NULL };
        sync_fd_spec fds[] = { { 1, SYNC_FD_OUT }, { 2, SYNC_FD_OUT_SHARED } };
        char *o_path = xasprintf("%s/shared.XXXXXX", s.tmp);
        int hfd[2] = { mkstemp(o_path), -1 };
        sync_run_req req = { .exe = "bash", .argv = argv, .cwd = s.code, .fds = fds, .nfds = 2 };
        sbx_err err;
        unlink(o_path);
        ok(sync_conn_run_wait(s.conn, next_chan++, &req, hfd, &r.st, &err) == 0,
           "a map with fd 2 on fd 1's pipe runs");
        slurp(hfd[0], r.out, sizeof(r.out));
        is_str(r.out, "o1\ne1\no2\ne2\no3\ne3\no4\ne4\no5\ne5\no6\ne6\no7\ne7\no8\ne8\n",
               "its output and errors arrive as one stream, in the order written");
        free(o_path);

        sync_fd_spec lonely[] = { { 2, SYNC_FD_OUT_SHARED }, { 1, SYNC_FD_OUT } };
        req.fds = lonely;
        ok(sync_conn_run_wait(s.conn, next_chan++, &req, NULL, &r.st, &err) < 0 &&
               strstr(err.msg, "shares the pipe of no output fd"),
           "a shared fd with no output fd before it is refused: %s", err.msg);

        /* with a tty, fds 0-2 are the terminal: nothing shares its pipe (nor
         * that of another output fd further back) */
        sync_fd_spec on_tty[] = { { 5, SYNC_FD_OUT }, { 1, SYNC_FD_OUT },
                                  { 7, SYNC_FD_OUT_SHARED } };
        req.fds = on_tty;
        req.nfds = 3;
        req.tty = true;
        int rc = sync_conn_run_wait(s.conn, next_chan++, &req, NULL, &r.st, &err);
        ok(rc == 0 && r.st.kind == SYNC_SPAWN_FAILED && r.st.message &&
               strstr(r.st.message, "terminal fd"),
           "with a tty, sharing the terminal's fd is a spawn failure: %s", r.st.message);
    }

    run_opts(&s, "tr a-z A-Z; echo done", "hello\nworld\n", false, &r);
    is_str(r.out, "HELLO\nWORLD\ndone\n", "stdin relayed, then EOF");

    {
        /* 3 MB of input through a 256 KiB window, and 3 MB back. */
        size_t n = 3 * 1024 * 1024;
        char *big = xmalloc(n + 1);
        for (size_t i = 0; i < n; i++)
            big[i] = (char)('a' + i % 26);
        big[n] = '\0';
        run_opts(&s, "wc -c; head -c 3000000 /dev/zero | wc -c >&2", big, false, &r);
        is_str(r.out, "3145728\n", "large input arrives whole");
        is_str(r.err, "3000000\n", "large output arrives whole");
        free(big);
    }

    {
        char *cmd = xasprintf("(exec -a sbx-sync-bg-%d sleep 100) & echo started", (int)getpid());
        run(&s, cmd, &r);
        free(cmd);
        is_str(r.out, "started\n", "a background process does not hold the exit");
        cmd = xasprintf("pgrep -f sbx-sync-bg-%d >/dev/null && echo alive; "
                        "pkill -f sbx-sync-bg-%d; true", (int)getpid(), (int)getpid());
        run(&s, cmd, &r);
        free(cmd);
        is_str(r.out, "alive\n", "the background process outlived its command");
    }
    {
        /* A background writer that keeps the pipe and writes after the exit. */
        char *flag = xasprintf("%s/late-flag", s.tmp), *done = xasprintf("%s/late-done", s.tmp);
        char *cmd = xasprintf("(while [ ! -e '%s' ]; do sleep 0.01; done; echo late; "
                              "touch '%s') & echo early", flag, done);
        run(&s, cmd, &r);
        is_str(r.out, "early\n", "the exit does not wait for a background writer");
        st_write(flag, "");
        ok(st_wait_file(done, 20000), "which then writes after the exit without blocking");
        run(&s, "echo next", &r);
        is_str(r.out, "next\n", "and its output is dropped, not given to the next command");
        free(cmd);
        free(flag);
        free(done);
    }

    run_opts(&s, "tty; stty size", NULL, true, &r);
    ok(!strncmp(r.out, "/dev/pts/", 9), "with tty the command has a terminal: %s", r.out);
    ok(strstr(r.out, "24 80") != NULL, "of the default size");
    sess_free(&s);
}

/* Events-based: SIGINT, SIGPIPE via close_output, concurrent channels. */
typedef struct evstate {
    sess *s;
    int exits;
    sync_exit_status st[8];
    uint32_t chans[8];
    strbuf out[8];
    bool close_on_output;
} evstate;

static void ev_output(void *ctx, uint32_t chan, int fd, const void *buf, size_t len)
{
    evstate *e = ctx;
    if (chan < 8)
        strbuf_add(&e->out[chan], buf, len);
    if (e->close_on_output && fd == 1) {
        sync_conn_close_output(e->s->conn, chan, fd);
        return;
    }
    sync_conn_credit(e->s->conn, chan, fd, len);
}

static void ev_exit(void *ctx, uint32_t chan, const sync_exit_status *st)
{
    evstate *e = ctx;
    e->chans[e->exits] = chan;
    e->st[e->exits++] = *st;
}

static void ev_warning(void *ctx, const char *msg)
{
    evstate *e = ctx;
    strbuf_addf(&e->s->warnings, "%s\n", msg);
}

static const sync_conn_ops ev_ops = { .output = ev_output, .exit = ev_exit,
                                      .warning = ev_warning, .error = on_error };

static void pump_until(sess *s, evstate *e, int exits, int ms)
{
    uint64_t end = now_ns() + (uint64_t)ms * 1000000;
    while (e->exits < exits && now_ns() < end) {
        struct pollfd pfd[SYNC_CONN_MAX_POLLFDS];
        size_t n = sync_conn_pollfds(s->conn, pfd, SYNC_CONN_MAX_POLLFDS);
        poll(pfd, n, 100);
        if (sync_conn_handle_events(s->conn, pfd, n) < 0)
            break;
    }
}

static void start_cmd(sess *s, uint32_t chan, const char *cmd)
{
    const char *argv[] = { "bash", "-c", cmd, NULL };
    const char *env[] = { "PATH=/usr/bin:/bin", NULL };
    sync_fd_spec fds[] = { { 0, SYNC_FD_IN }, { 1, SYNC_FD_OUT }, { 2, SYNC_FD_OUT } };
    sync_run_req req = { .exe = "/bin/bash", .argv = argv, .env = env, .cwd = s->code,
                         .fds = fds, .nfds = 3 };
    sbx_err err;
    if (sync_conn_run(s->conn, chan, &req, &err) < 0)
        diag("run: %s", err.msg);
}

static void test_events(void)
{
    sync_config cfg = { 0 };
    sess s;
    evstate e;
    sync_conn *c;

    sess_open(&s, "events", &cfg);
    c = s.conn;
    sync_conn_free(c);
    st_agent_stop(&s.agent);
    memset(&e, 0, sizeof(e));
    e.s = &s;
    for (int i = 0; i < 8; i++)
        strbuf_init(&e.out[i], 0);
    {
        sbx_err err;
        const char *args[] = { "--root-prefix", s.prefix, NULL };
        s.agent = st_agent_start(args);
        if (sync_conn_open(s.host, s.agent.rfd, s.agent.wfd, &ev_ops, &e, 10000, &s.conn,
                           &err) < 0)
            diag("open: %s", err.msg);
    }

    /* Two commands at once: a slow one does not hold a quick one. */
    start_cmd(&s, 1, "sleep 2; echo slow");
    start_cmd(&s, 2, "echo quick; echo q > q.txt");
    pump_until(&s, &e, 1, 10000);
    is_int(e.exits, 1, "one command finished first");
    is_int(e.chans[0], 2, "the quick one, while the slow one runs");
    is_str(e.out[2].buf, "quick\n", "with its output");
    {
        char *p = host_path(&s, "q.txt");
        is_str(st_read(p), "q\n", "and its change already on the host");
        free(p);
    }
    start_cmd(&s, 3, "trap 'echo got INT; exit 7' INT; echo ready; while :; do sleep 0.05; done");
    while (!strstr(e.out[3].buf, "ready") && e.exits < 2) {
        struct pollfd pfd[SYNC_CONN_MAX_POLLFDS];
        size_t n = sync_conn_pollfds(s.conn, pfd, SYNC_CONN_MAX_POLLFDS);
        poll(pfd, n, 100);
        if (sync_conn_handle_events(s.conn, pfd, n) < 0)
            break;
    }
    sync_conn_signal(s.conn, 3, SIGINT);
    pump_until(&s, &e, 3, 10000);
    is_int(e.exits, 3, "the signalled and the slow command finished");
    for (int i = 0; i < e.exits; i++) {
        if (e.chans[i] == 3) {
            is_int(e.st[i].code, 7, "SIGINT reached the command's trap");
            is_str(e.out[3].buf, "ready\ngot INT\n", "which printed");
        }
        if (e.chans[i] == 1)
            is_str(e.out[1].buf, "slow\n", "the slow command finished normally");
    }

    e.close_on_output = true;
    start_cmd(&s, 4, "yes");
    pump_until(&s, &e, 4, 10000);
    is_int(e.exits, 4, "yes ends when its reader goes away");
    is_int(e.st[3].kind, SYNC_SIGNALED, "killed by a signal");
    is_int(e.st[3].code, SIGPIPE, "SIGPIPE, as with `yes | head -1` in bash");
    for (int i = 0; i < 8; i++)
        strbuf_release(&e.out[i]);
    sess_free(&s);
}

/* A SYNC is an output barrier: everything a command wrote before it reported on another fd
 * arrives before SYNC_DONE (the persistent shell relies on it to print in order). */
typedef struct barrier_state {
    sess *s;
    size_t out_bytes, out_at_done, uncredited;
    bool reported, synced, done;
} barrier_state;

/* stdout gets no credit until the report came: the agent has sent one window of it and
 * the rest waits in the pipe when the SYNC arrives, ahead of the credit that frees it. */
static void bar_output(void *ctx, uint32_t chan, int fd, const void *buf, size_t len)
{
    barrier_state *b = ctx;
    if (fd == 1) {
        b->out_bytes += len;
        if (!b->synced) {
            b->uncredited += len;
            return;
        }
    }
    if (fd == 3 && !b->synced) {
        b->reported = true;
        b->synced = true;
        sync_conn_sync(b->s->conn, 77);
        sync_conn_credit(b->s->conn, chan, 1, b->uncredited);
    }
    sync_conn_credit(b->s->conn, chan, fd, len);
}

static void bar_sync_done(void *ctx, uint64_t id)
{
    barrier_state *b = ctx;
    if (id == 77) {
        b->out_at_done = b->out_bytes;
        b->done = true;
    }
}

static const sync_conn_ops bar_ops = { .output = bar_output, .sync_done = bar_sync_done,
                                       .warning = on_warning, .error = on_error };

static void test_sync_barrier(void)
{
    sync_config cfg = { 0 };
    sess s;
    barrier_state b = { 0 };
    sbx_err err;

    sess_open(&s, "barrier", &cfg);
    sync_conn_free(s.conn);
    st_agent_stop(&s.agent);
    b.s = &s;
    {
        const char *args[] = { "--root-prefix", s.prefix, NULL };
        s.agent = st_agent_start(args);
        if (sync_conn_open(s.host, s.agent.rfd, s.agent.wfd, &bar_ops, &b, 10000, &s.conn,
                           &err) < 0)
            diag("open: %s", err.msg);
    }
    /* more than the window, less than the window and a 64 KiB pipe */
    const char *argv[] = { "bash", "-c", "head -c 300000 /dev/zero; echo R >&3; sleep 1", NULL };
    const char *env[] = { "PATH=/usr/bin:/bin", NULL };
    sync_fd_spec fds[] = { { 1, SYNC_FD_OUT }, { 3, SYNC_FD_OUT } };
    sync_run_req req = { .exe = "/bin/bash", .argv = argv, .env = env, .cwd = s.code,
                         .fds = fds, .nfds = 2 };
    if (sync_conn_run(s.conn, 1, &req, &err) < 0)
        diag("run: %s", err.msg);
    uint64_t end = now_ns() + 20000000000ull;
    while (!b.done && now_ns() < end) {
        struct pollfd pfd[SYNC_CONN_MAX_POLLFDS];
        size_t n = sync_conn_pollfds(s.conn, pfd, SYNC_CONN_MAX_POLLFDS);
        poll(pfd, n, 100);
        if (sync_conn_handle_events(s.conn, pfd, n) < 0)
            break;
    }
    ok(b.reported && b.done, "a SYNC asked for after a report on fd 3 completes");
    is_int(b.out_at_done, 300000, "with all the stdout written before the report ahead of it");
    sess_free(&s);
}

/* A sandbox change made by a background process after its command's pull: the command
 * leaves it waiting; we let it go and wait until it is done. */
static void bg_change(sess *s, const char *change)
{
    result r;
    char *flag = xasprintf("%s/bg-flag", s->tmp), *done = xasprintf("%s/bg-done", s->tmp);
    char *cmd = xasprintf("(while [ ! -e '%s' ]; do sleep 0.01; done; %s; touch '%s') "
                          ">/dev/null 2>&1 &", flag, change, done);
    unlink(flag);
    unlink(done);
    run(s, cmd, &r);
    st_write(flag, "");
    if (!st_wait_file(done, 20000))
        diag("the background change did not happen");
    unlink(flag);
    unlink(done);
    free(cmd);
    free(flag);
    free(done);
}

static void test_conflicts(void)
{
    sync_config cfg = { 0 };
    sess s;
    result r;
    evstate e;
    char *hp, *sp;

    sess_open(&s, "conflict", &cfg);
    hp = host_path(&s, "a.txt");
    sp = sbx_path(&s, "a.txt");
    st_write(hp, "base\n");
    run(&s, "true", &r);
    is_str(st_read(sp), "base\n", "the file is on both sides");

    /* Changed on the host while a command that changes it runs in the sandbox. */
    memset(&e, 0, sizeof(e));
    e.s = &s;
    for (int i = 0; i < 8; i++)
        strbuf_init(&e.out[i], 0);
    {
        sync_conn *c = s.conn;
        sbx_err err;
        const char *args[] = { "--root-prefix", s.prefix, NULL };
        sync_conn_free(c);
        st_agent_stop(&s.agent);
        s.agent = st_agent_start(args);
        sync_conn_open(s.host, s.agent.rfd, s.agent.wfd, &ev_ops, &e, 10000, &s.conn, &err);
    }
    /* The command signals it started (the push is done), then waits for the host's change. */
    start_cmd(&s, 1, "echo ready; read go; echo sandbox > a.txt");
    while (!strstr(e.out[1].buf, "ready") && !e.exits) {
        struct pollfd pfd[SYNC_CONN_MAX_POLLFDS];
        size_t n = sync_conn_pollfds(s.conn, pfd, SYNC_CONN_MAX_POLLFDS);
        poll(pfd, n, 100);
        if (sync_conn_handle_events(s.conn, pfd, n) < 0)
            break;
    }
    st_write(hp, "host\n");
    sync_conn_write(s.conn, 1, 0, "go\n", 3);
    sync_conn_eof(s.conn, 1, 0);
    pump_until(&s, &e, 1, 20000);
    is_str(st_read(hp), "host\n", "both changed: the host's version stays");
    {
        char *cmd = xasprintf("cat '%s'/a.txt.sbx-conflict-sandbox-* 2>/dev/null", s.code);
        FILE *f = popen(cmd, "r");
        char buf[100] = "";
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        pclose(f);
        is_str(buf, "sandbox\n", "the sandbox's version is kept beside it");
        free(cmd);
    }
    ok(strstr(s.warnings.buf, "conflict") && strstr(s.warnings.buf, "a.txt"),
       "a warning names both: %s", s.warnings.buf);
    for (int i = 0; i < 8; i++)
        strbuf_release(&e.out[i]);
    sess_close(&s);
    st_rm_rf(s.prefix);
    {
        const char *args[] = { "--root-prefix", s.prefix, NULL };
        sess_connect(&s, args);
    }
    /* A new sandbox: a new pairing, so the whole tree goes again. */
    strbuf_reset(&s.warnings);
    run(&s, "cat a.txt; ls a.txt.sbx-conflict-sandbox-* | wc -l", &r);
    is_str(r.out, "host\n1\n", "the next command sees the host's version and the conflict copy");

    /* The sandbox changes it in the background after the pull; the host changes it too. */
    bg_change(&s, "echo bg > a.txt");
    st_write(hp, "host2\n");
    run(&s, "cat a.txt; cat a.txt.sbx-conflict-sandbox-*", &r);
    ok(!strncmp(r.out, "host2\n", 6), "a push over a sandbox change: the host's version wins");
    ok(strstr(r.out, "bg\n") != NULL, "the sandbox's version is kept under a conflict name");
    ok(strstr(s.warnings.buf, "conflict") != NULL, "with a warning: %s", s.warnings.buf);
    {
        char *cmd = xasprintf("cat '%s'/a.txt.sbx-conflict-sandbox-* | grep -c bg", s.code);
        is_int(st_sh("%s >/dev/null", cmd), 0, "the conflict copy came back to the host");
        free(cmd);
    }

    /* A deletion never removes a version the other side changed. */
    run(&s, "echo keep > k.txt", &r);
    bg_change(&s, "echo changed > k.txt");
    {
        char *k = host_path(&s, "k.txt");
        unlink(k);
        run(&s, "cat k.txt", &r);
        is_str(r.out, "changed\n", "a host deletion keeps the sandbox's changed version");
        is_str(st_read(k), "changed\n", "which comes back to the host");
        free(k);
    }
    free(hp);
    free(sp);
    sess_free(&s);
}

static void test_git(void)
{
    sync_config cfg = { 0 };
    sess s;
    result r;
    char *p;

    sess_open(&s, "git", &cfg);
    st_sh("cd '%s' && git init -q . && git config user.email a@b.c && git config user.name A && "
          "git config alias.pwn '!touch /tmp/pwned' && git config core.sshCommand 'evil' && "
          "git remote add origin https://user:secret@example.com/r.git && "
          "git remote add up git@github.com:o/r.git && echo hi > f && git add f && "
          "git commit -qm init && mkdir -p sub && git -C sub init -q", s.code);
    run(&s, "git config --list --local | sort", &r);
    ok(strstr(r.out, "user.email=a@b.c") != NULL, "allowed repository settings reach the sandbox");
    ok(strstr(r.out, "remote.up.url=git@github.com:o/r.git") != NULL, "remote URLs too");
    ok(!strstr(r.out, "alias"), "aliases do not");
    ok(!strstr(r.out, "sshcommand"), "core.sshCommand does not");
    ok(!strstr(r.out, "secret"), "a URL with user:password does not");
    run(&s, "git log --oneline | wc -l", &r);
    is_str(r.out, "1\n", "the repository works in the sandbox");

    p = host_path(&s, ".git/config");
    {
        char *before = xstrdup(st_read(p));
        char *hooks = st_listing(s.code, false);
        run(&s, "echo '[core] hooksPath = /tmp' >> .git/config; echo evil > .git/hooks/pre-push; "
                "chmod +x .git/hooks/pre-push; echo bad > .git/info/exclude; "
                "printf '[core]\\n\\tsshCommand = evil\\n' > sub/.git/config; "
                "echo change >> f; git commit -qam second; git tag v1", &r);
        is_int(r.st.code, 0, "a commit in the sandbox");
        is_str(st_read(p), before, "the sandbox's .git/config never reaches the host");
        free(before);
        free(hooks);
    }
    free(p);
    p = host_path(&s, ".git/hooks/pre-push");
    ok(!st_exists(p), "nor a hook");
    free(p);
    p = host_path(&s, "sub/.git/config");
    ok(!strstr(st_read(p), "evil"), "nor a nested repository's config");
    free(p);
    is_int(st_sh("cd '%s' && test \"$(git log --oneline | wc -l)\" = 2 && "
                 "git rev-parse -q --verify v1 >/dev/null", s.code),
           0, "the commit, its objects and refs are on the host");
    is_int(st_sh("cd '%s' && test -z \"$(git status --porcelain --untracked-files=no)\"",
                 s.code),
           0, "and the index: the host's work tree is clean");
    sess_free(&s);
}

static void test_excludes_and_paths(void)
{
    sync_config cfg = { 0 };
    sess s;
    result r;
    char *extra = NULL, *task = NULL;
    const char *excl[] = { "*.log", NULL };
    const char *paths[2], *tasks[2];
    char *base;

    base = st_tmpdir("paths");
    extra = xasprintf("%s/track-*-cwd", base);
    task = xasprintf("%s/task.md", base);
    st_write(task, "do it\n");
    {
        char *f = xasprintf("%s/track-1-cwd", base);
        st_write(f, "/x\n");
        free(f);
    }
    paths[0] = extra;
    paths[1] = NULL;
    tasks[0] = task;
    tasks[1] = NULL;
    cfg.sync_paths = paths;
    cfg.task_files = tasks;
    cfg.excludes = excl;
    sess_open(&s, "excl", &cfg);
    st_sh("cd '%s' && printf 'build/\\n!keep.log\\n' > .sbxignore && mkdir build && "
          "echo o > build/out && echo l > x.log && echo k > keep.log", s.code);
    run(&s, "ls; cat \"$0\"", &r);
    {
        char *cmd = xasprintf("ls -a '%s'; cat '%s%s/task.md' '%s%s/track-1-cwd'", s.sbx_code,
                              s.prefix, base, s.prefix, base);
        FILE *f = popen(cmd, "r");
        char buf[4096] = "";
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        pclose(f);
        ok(!strstr(buf, "build"), "a directory excluded by .sbxignore is not pushed");
        ok(!strstr(buf, "x.log"), "a file excluded globally is not pushed");
        ok(strstr(buf, "keep.log") != NULL, "a '!' rule re-includes");
        ok(strstr(buf, "do it") != NULL, "the task file is pushed");
        ok(strstr(buf, "/x") != NULL, "a file matching a sync path glob is pushed");
        free(cmd);
    }
    {
        char *sbx_base = xasprintf("%s%s", s.prefix, base);
        char *cmd = xasprintf("echo /y > '%s/track-2-cwd'; echo edited > '%s/task.md'; "
                              "echo other > '%s/other'", sbx_base, sbx_base, sbx_base);
        run(&s, cmd, &r);
        free(cmd);
        free(sbx_base);
    }
    run(&s, "echo new > build/new; echo n > n.log; echo m > m.txt", &r);
    {
        char *p = host_path(&s, "build/new");
        ok(!st_exists(p), "an excluded sandbox file is not pulled");
        free(p);
        p = host_path(&s, "n.log");
        ok(!st_exists(p), "nor a globally excluded one");
        free(p);
        p = host_path(&s, "m.txt");
        is_str(st_read(p), "m\n", "others are");
        free(p);
        p = xasprintf("%s/track-2-cwd", base);
        is_str(st_read(p), "/y\n", "a new file matching the sync path glob comes back");
        free(p);
        is_str(st_read(task), "do it\n", "a task file is never pulled back");
        p = xasprintf("%s/other", base);
        ok(!st_exists(p), "a file beside a sync path does not come back");
        free(p);
    }
    st_rm_rf(base);
    free(base);
    free(extra);
    free(task);
    sess_free(&s);
}

static void test_reattach(void)
{
    sync_config cfg = { 0 };
    sess s;
    result r;
    char *sock, *state;
    sync_conn_stats stats;
    pid_t listener;

    sess_open(&s, "reattach", &cfg);
    sess_close(&s);
    sock = xasprintf("%s/agent.sock", s.tmp);
    state = xasprintf("%s/host.state", s.tmp);
    listener = fork();
    if (listener == 0) {
        execl(st_agent_path(), "sbx-agent", "--listen", sock, "--root-prefix", s.prefix,
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 100 && !st_exists(sock); i++)
        usleep(20000);

    /* A holder with a state file connects, syncs, saves and goes away. */
    sync_host_free(s.host);
    {
        const char *dirs[] = { s.code, NULL };
        sbx_err err;
        cfg.code_dirs = dirs;
        cfg.state_file = state;
        sync_host_new(&cfg, &s.host, &err);
        cfg.code_dirs = NULL;
    }
    for (int i = 0; i < 50; i++) {
        char *f = xasprintf("%s/f%02d", s.code, i);
        st_write(f, "x\n");
        free(f);
    }
    {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        sbx_err err;
        snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock);
        connect(fd, (struct sockaddr *)&sun, sizeof(sun));
        sync_conn_open(s.host, fd, fd, &ops, &s, 10000, &s.conn, &err);
        ok(!sync_conn_agent(s.conn)->resumed, "a new holder and a new agent start afresh");
        char *cmd = xasprintf("(exec -a sbx-sync-bg-%d sleep 100) & echo started", (int)getpid());
        run(&s, cmd, &r);
        free(cmd);
        run(&s, "echo one > one.txt", &r);
        sync_conn_stats_get(s.conn, &stats);
        ok(stats.push_entries >= 50, "the first push sent the tree");
        ok(sync_host_save(s.host, &err) == 0, "the host state is saved");
        sync_conn_free(s.conn);
        s.conn = NULL;
        close(fd);
    }
    /* A restarted holder (new sync_host from the state file) reattaches. */
    sync_host_free(s.host);
    {
        const char *dirs[] = { s.code, NULL };
        sbx_err err;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        cfg.code_dirs = dirs;
        sync_host_new(&cfg, &s.host, &err);
        snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock);
        connect(fd, (struct sockaddr *)&sun, sizeof(sun));
        sync_conn_open(s.host, fd, fd, &ops, &s, 10000, &s.conn, &err);
        ok(sync_conn_agent(s.conn)->resumed, "a restarted holder resumes the agent's state");
        char *cmd = xasprintf("cat one.txt; pgrep -f sbx-sync-bg-%d >/dev/null && echo bg-alive; "
                              "pkill -f sbx-sync-bg-%d; true", (int)getpid(), (int)getpid());
        run(&s, cmd, &r);
        free(cmd);
        is_str(r.out, "one\nbg-alive\n", "files and background processes are still there");
        sync_conn_stats_get(s.conn, &stats);
        is_int(stats.push_entries, 0, "and nothing was pushed again");
        same_trees(&s, "after reattaching");
        sync_conn_free(s.conn);
        s.conn = NULL;
        close(fd);
    }
    kill(listener, SIGTERM);
    waitpid(listener, NULL, 0);
    free(sock);
    free(state);
    sess_free(&s);
}

static void test_modes_files_and_orphans(void)
{
    sync_config cfg = { 0 };
    sess s;
    result r;
    char *home = NULL, *gc = NULL, *sandbox_gc, *p;

    {
        char *t = st_tmpdir("home");
        home = t;
        gc = xasprintf("%s/.gitconfig", home);
        st_write(gc, "[user]\n\tname = Ann\n\temail = ann@example.com\n[alias]\n\tx = !evil\n"
                     "[credential]\n\thelper = store\n");
    }
    sandbox_gc = xasprintf("/sandbox-home-%d/.gitconfig", (int)getpid());
    cfg.user_gitconfig = gc;
    cfg.sandbox_gitconfig = sandbox_gc;
    sess_open(&s, "modes", &cfg);

    run(&s, "echo x > suid && chmod 4755 suid && mkdir sticky && chmod 1777 sticky && "
            "echo g > sgid && chmod 2755 sgid", &r);
    {
        char *l = st_listing(s.code, false);
        ok(!strstr(l, "mode="), "setuid, setgid and sticky bits never reach the host");
        ok(strstr(l, "f suid x ") != NULL, "the exec bit does");
        free(l);
    }
    p = xasprintf("%s%s", s.prefix, sandbox_gc);
    ok(strstr(st_read(p), "ann@example.com") != NULL,
       "the user's git identity is written into the sandbox's HOME");
    ok(!strstr(st_read(p), "alias") && !strstr(st_read(p), "helper"),
       "without aliases or credential helpers");
    /* Set later, as people do after the session started: the next command sees it. */
    st_write(gc, "[user]\n\tname = Bea\n\temail = bea@example.com\n");
    run(&s, "true", &r);
    ok(strstr(st_read(p), "bea@example.com") != NULL,
       "a change to the user's git config reaches the sandbox with the next command");
    free(p);
    {
        sbx_err err;
        char *dst = xasprintf("/put-%d/deep/task.txt", (int)getpid());
        ok(sync_conn_put_file(s.conn, dst, 0600, "payload", 7, &err) == 0, "put_file queues");
        run(&s, "true", &r);
        p = xasprintf("%s%s", s.prefix, dst);
        is_str(st_read(p), "payload", "put_file writes the file, making its directories");
        {
            struct stat st;
            stat(p, &st);
            is_int(st.st_mode & 0777, 0600, "with its mode");
        }
        free(p);
        ok(sync_conn_put_file(s.conn, "relative", 0644, "x", 1, &err) < 0,
           "put_file wants an absolute path");
        free(dst);
    }

    /* An orphan (its parent exits first) is reaped by the agent: no zombie stays. */
    run(&s, "(sleep 0.2 & exit 0); echo started", &r);
    is_str(r.out, "started\n", "a command that leaves an orphan");
    {
        bool zombie = true;
        char *cmd = xasprintf("ps -o stat= --ppid %d | grep -q Z", (int)s.agent.pid);
        for (int i = 0; i < 200 && zombie; i++) {
            usleep(20000);
            zombie = st_sh("%s", cmd) == 0 || st_sh("ps -o pid= --ppid %d | grep -q .",
                                                     (int)s.agent.pid) == 0;
        }
        ok(!zombie, "is reaped by the agent (its subreaper) once it exits");
        free(cmd);
    }
    sess_free(&s);
    st_rm_rf(home);
    free(home);
    free(gc);
    free(sandbox_gc);
}

static void test_winsize(void)
{
    sync_config cfg = { 0 };
    sess s;
    evstate e;
    const char *argv[] = { "bash", "-c", "stty size; read x; stty size", NULL };
    const char *env[] = { "PATH=/usr/bin:/bin", NULL };
    sync_run_req req;
    sbx_err err;

    sess_open(&s, "winsize", &cfg);
    sess_close(&s);
    memset(&e, 0, sizeof(e));
    e.s = &s;
    for (int i = 0; i < 8; i++)
        strbuf_init(&e.out[i], 0);
    {
        const char *args[] = { "--root-prefix", s.prefix, NULL };
        s.agent = st_agent_start(args);
        sync_conn_open(s.host, s.agent.rfd, s.agent.wfd, &ev_ops, &e, 10000, &s.conn, &err);
    }
    memset(&req, 0, sizeof(req));
    req.exe = "bash";
    req.argv = argv;
    req.env = env;
    req.cwd = s.code;
    req.tty = true;
    req.rows = 30;
    req.cols = 90;
    sync_conn_run(s.conn, 1, &req, &err);
    while (!strstr(e.out[1].buf, "30 90") && !e.exits) {
        struct pollfd pfd[SYNC_CONN_MAX_POLLFDS];
        size_t n = sync_conn_pollfds(s.conn, pfd, SYNC_CONN_MAX_POLLFDS);
        poll(pfd, n, 100);
        if (sync_conn_handle_events(s.conn, pfd, n) < 0)
            break;
    }
    ok(strstr(e.out[1].buf, "30 90") != NULL, "a tty starts with the requested size");
    sync_conn_winsize(s.conn, 1, 40, 100);
    sync_conn_write(s.conn, 1, 0, "\n", 1);
    pump_until(&s, &e, 1, 20000);
    ok(strstr(e.out[1].buf, "40 100") != NULL, "WINSIZE resizes it: %s", e.out[1].buf);
    for (int i = 0; i < 8; i++)
        strbuf_release(&e.out[i]);
    sess_free(&s);
}

/* The user's startup files reach the sandbox's HOME filtered (sync/rcfile.h), with what
 * they source there, never through a symlink out of HOME or from ~/.ssh; a create-only
 * directory (create_paths) takes new files from the sandbox and refuses every change to
 * the host's. */
static void test_startup_files_and_create_only(void)
{
    sync_config cfg = { 0 };
    sess s;
    result r;
    char *home = st_tmpdir("rchome"), *sbx_home = xstrdup(home);   /* as the holder has it: the same path */
    char *snaps = xasprintf("%s/.claude/shell-snapshots", home), *sbx_snaps, *p, *q;
    const char *creates[2] = { snaps, NULL };
    char *logout = xasprintf("%s/.bash_logout", home);
    const char *syncs[2] = { logout, NULL };

    st_sh("mkdir -p '%s/.ssh' '%s/dot' '%s'", home, home, snaps);
    p = xasprintf("%s/.bashrc", home);
    st_write(p, "alias ll='ls -l'\nexport GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123\n"
                "[ -f ~/.bash_aliases ] && . ~/.bash_aliases\nsource ~/.ssh/agent.env\n"
                "source \"$HOME/dot/more\"\n");
    free(p);
    p = xasprintf("%s/.bash_aliases", home);
    st_write(p, "greet() { echo hi; }\n");
    free(p);
    p = xasprintf("%s/.ssh/agent.env", home);
    st_write(p, "SSH_SECRET=1\n");
    free(p);
    p = xasprintf("%s/dot/real", home);
    st_write(p, "export EDITOR=vi\n");
    free(p);
    p = xasprintf("%s/dot/more", home);
    st_write(p, "export MORE=1\n");
    free(p);
    st_sh("ln -s dot/real '%s/.bash_profile' && ln -s /etc/hostname '%s/.profile'", home, home);
    p = xasprintf("%s/old.sh", snaps);
    st_write(p, "host\n");
    free(p);
    cfg.user_home = home;
    cfg.sandbox_home = sbx_home;
    cfg.create_paths = creates;
    cfg.sync_paths = syncs;   /* a startup file synced as it is: the sync owns it */
    st_write(logout, "export LOGOUT_TOKEN=as-synced\n");
    sess_open(&s, "rcfiles", &cfg);
    sbx_snaps = xasprintf("%s%s", s.prefix, snaps);

    run(&s, "true", &r);
    p = xasprintf("%s%s/.bashrc", s.prefix, sbx_home);
    ok(strstr(st_read(p), "alias ll='ls -l'") != NULL, "the user's ~/.bashrc is in the sandbox's HOME");
    ok(!strstr(st_read(p), "ghp_") && strstr(st_read(p), "export GITHUB_TOKEN= # sbxsh:"),
       "  without the token's value, the line kept");
    q = xasprintf("%s%s/.bash_aliases", s.prefix, sbx_home);
    is_str(st_read(q), "greet() { echo hi; }\n", "a file it sources from HOME comes too");
    free(q);
    q = xasprintf("%s%s/dot/more", s.prefix, sbx_home);
    is_str(st_read(q), "export MORE=1\n", "  by \"$HOME/...\" as by ~/...");
    free(q);
    q = xasprintf("%s%s/.ssh/agent.env", s.prefix, sbx_home);
    ok(!st_exists(q), "never one under ~/.ssh");
    free(q);
    q = xasprintf("%s%s/.bash_profile", s.prefix, sbx_home);
    is_str(st_read(q), "export EDITOR=vi\n", "a symlink inside HOME is followed");
    free(q);
    q = xasprintf("%s%s/.profile", s.prefix, sbx_home);
    ok(!st_exists(q), "a symlink out of HOME is not");
    free(q);
    q = xasprintf("%s%s", s.prefix, logout);
    is_str(st_read(q), "export LOGOUT_TOKEN=as-synced\n",
           "a startup file that is synced (a sync path) is left to the sync, as it is");
    free(q);
    ok(!strstr(s.warnings.buf, "conflict"), "  without a conflict between the two");
    /* Changed on the host: the next command has it. */
    usleep(20000);
    q = xasprintf("%s/.bashrc", home);
    st_write(q, "alias ll='ls -la'\n");
    free(q);
    run(&s, "true", &r);
    is_str(st_read(p), "alias ll='ls -la'\n", "a change to ~/.bashrc reaches the sandbox with the next command");
    q = xasprintf("%s%s/dot/more", s.prefix, sbx_home);
    is_str(st_read(q), "", "a file it no longer sources is emptied there");
    free(q);
    free(p);

    /* Create-only: the host's file is pushed, a new file comes back. */
    p = xasprintf("%s/old.sh", sbx_snaps);
    is_str(st_read(p), "host\n", "a create-only directory is pushed into the sandbox");
    free(p);
    {
        char *cmd = xasprintf("echo new > '%s/snapshot-bash-1-a.sh' && mkdir '%s/sub' && "
                              "echo deep > '%s/sub/f'", sbx_snaps, sbx_snaps, sbx_snaps);
        strbuf_reset(&s.warnings);
        run(&s, cmd, &r);
        free(cmd);
    }
    p = xasprintf("%s/snapshot-bash-1-a.sh", snaps);
    is_str(st_read(p), "new\n", "a file the sandbox adds there comes back to the host");
    free(p);
    p = xasprintf("%s/sub/f", snaps);
    is_str(st_read(p), "deep\n", "  and a new directory with its files");
    free(p);
    is_str(s.warnings.buf, "", "  without a warning");
    {
        char *cmd = xasprintf("echo evil > '%s/old.sh'; rm '%s/snapshot-bash-1-a.sh'; "
                              "ln -s /etc/passwd '%s/link'; echo x > '%s/exe'; "
                              "chmod +x '%s/exe'", sbx_snaps, sbx_snaps, sbx_snaps, sbx_snaps,
                              sbx_snaps);
        strbuf_reset(&s.warnings);
        run(&s, cmd, &r);
        free(cmd);
    }
    p = xasprintf("%s/old.sh", snaps);
    is_str(st_read(p), "host\n", "a change to the host's file there is refused");
    free(p);
    p = xasprintf("%s/snapshot-bash-1-a.sh", snaps);
    is_str(st_read(p), "new\n", "  as is a deletion");
    free(p);
    p = xasprintf("%s/link", snaps);
    ok(!st_exists(p), "  a symlink never comes");
    free(p);
    p = xasprintf("%s/exe", snaps);
    ok(!st_exists(p), "  nor an executable file");
    free(p);
    ok(strstr(s.warnings.buf, "old.sh is") == NULL &&
       strstr(s.warnings.buf, "/old.sh: ") != NULL && strstr(s.warnings.buf, "is create-only"),
       "  each refusal is a warning naming the file");
    run(&s, "true", &r);
    p = xasprintf("%s/old.sh", sbx_snaps);
    is_str(st_read(p), "host\n", "  and the host's version goes back to the sandbox");
    free(p);
    p = xasprintf("%s/snapshot-bash-1-a.sh", sbx_snaps);
    is_str(st_read(p), "new\n", "  the deleted one too");
    free(p);

    st_rm_rf(home);
    free(home);
    free(sbx_home);
    free(snaps);
    free(sbx_snaps);
    free(logout);
    sess_free(&s);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    test_first_sync_and_back();
    test_commands();
    test_events();
    test_sync_barrier();
    test_conflicts();
    test_git();
    test_excludes_and_paths();
    test_reattach();
    test_modes_files_and_orphans();
    test_winsize();
    test_startup_files_and_create_only();
    return done_testing();
}
