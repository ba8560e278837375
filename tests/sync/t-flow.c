/*
 * Flow control and wake-ups of sync/conn*.c and sbx-agent, with the real agent as a plain
 * process (--root-prefix) on a socketpair or pipes. Every round has a bound: a lost wake-up
 * fails the test instead of hanging it.
 *
 * One socketpair's buffers are made as big as the kernel allows (SO_SNDBUFFORCE as root,
 * else SO_SNDBUF up to wmem_max), so that one write() takes the agent's whole output buffer
 * (1 MiB) at once. That is what a fast reader on the other core does some of the time; with
 * the big buffer it happens every time, so a loop that sleeps once its buffer is empty while
 * a delta is still being sent stalls deterministically (issue 9: a pulled 8 MB file stopped
 * at a few MiB for good, a 1-2 MB file took 5 s, the agent's poll timeout when dirty).
 * Another has the smallest buffers the kernel gives, so that every write is partial and its
 * rest waits for POLLOUT; pipes are the third transport. Output is consumed three ways (see
 * on_output), so credits are granted inside the dispatch, by auto_credit, and from outside
 * any callback while the agent may or may not be waiting for them.
 */
#include "sync/conn.h"
#include "tests/lib/tap.h"
#include "tests/sync/synctest.h"

#include <poll.h>
#include <sys/socket.h>

#define BOUND_MS 30000   /* per round: a second of work, ten on a loaded machine */
#define MAX_CHANS 8

typedef struct fchan {
    uint32_t id;
    bool used, done;
    sync_exit_status st;
    uint64_t out_bytes[3];
    uint64_t out_hash[3];   /* FNV-1a of each output fd's bytes */
    uint64_t owed[3];       /* consumed, to be credited from outside the callbacks */
    const char *in;         /* stdin content, NULL for none */
    size_t in_len, in_off;
    bool in_eof;
} fchan;

typedef struct flow {
    char *tmp, *code, *prefix, *sbx_code;
    sync_host *host;
    sync_conn *conn;
    pid_t agent;
    int rfd, wfd;
    enum transport { BIG_SOCKET, SMALL_SOCKET, PIPES } how;
    int sndbuf;             /* the agent's send buffer as the kernel reports it */
    fchan ch[MAX_CHANS];
    uint32_t next_chan;
    strbuf errors, warnings;
} flow;

static uint64_t fnv(uint64_t h, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

#define FNV_INIT 14695981039346656037ULL

static fchan *chan_of(flow *f, uint32_t id)
{
    for (size_t i = 0; i < MAX_CHANS; i++)
        if (f->ch[i].used && f->ch[i].id == id)
            return &f->ch[i];
    return NULL;
}

static void on_output(void *ctx, uint32_t chan, int fd, const void *buf, size_t len)
{
    flow *f = ctx;
    fchan *c = chan_of(f, chan);
    if (!c || fd < 0 || fd > 2)
        return;
    c->out_bytes[fd] += len;
    c->out_hash[fd] = fnv(c->out_hash[fd], buf, len);
    /* Three ways of consuming: channels 1, 4, 7... credit here, inside the connection's
     * dispatch; 2, 5, 8... run with auto_credit; 3, 6, 9... credit later from the poll
     * loop, outside any callback, as the holder does when its client says it wrote the
     * bytes (a grant that arrives while the agent is not waiting for one). */
    if (chan % 3 == 1)
        sync_conn_credit(f->conn, chan, fd, len);
    else if (chan % 3 == 0)
        c->owed[fd] += len;
}

static void feed(flow *f, fchan *c)
{
    while (c->in && c->in_off < c->in_len) {
        ssize_t n = sync_conn_write(f->conn, c->id, 0, c->in + c->in_off, c->in_len - c->in_off);
        if (n <= 0)
            break;
        c->in_off += (size_t)n;
    }
    if (!c->in_eof && (!c->in || c->in_off == c->in_len)) {
        c->in_eof = true;
        sync_conn_eof(f->conn, c->id, 0);
    }
}

static void on_writable(void *ctx, uint32_t chan, int fd)
{
    flow *f = ctx;
    fchan *c = chan_of(f, chan);
    if (c && fd == 0)
        feed(f, c);
}

static void on_exit_cb(void *ctx, uint32_t chan, const sync_exit_status *st)
{
    flow *f = ctx;
    fchan *c = chan_of(f, chan);
    if (!c)
        return;
    c->st = *st;
    c->st.message = NULL;
    c->done = true;
}

static void on_warning(void *ctx, const char *msg)
{
    flow *f = ctx;
    strbuf_addf(&f->warnings, "%s\n", msg);
}

static void on_error(void *ctx, const char *msg)
{
    flow *f = ctx;
    strbuf_addf(&f->errors, "%s\n", msg);
}

static const sync_conn_ops ops = { .output = on_output, .writable = on_writable,
                                   .exit = on_exit_cb, .warning = on_warning,
                                   .error = on_error };

/* Sets the send buffer as near want as the kernel allows (root may force one past
 * wmem_max; the kernel's minimum is a few KiB) and returns what it gave. */
static int set_sndbuf(int fd, int want)
{
    int got = 0;
    socklen_t len = sizeof(got);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof(want)) < 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
    getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len);
    return got;
}

static void start_agent(flow *f)
{
    int to[2], from[2];
    if (f->how != PIPES) {
        /* big: one write() takes the agent's whole buffer; small: every write() is
         * partial and the rest waits for POLLOUT */
        int want = f->how == BIG_SOCKET ? 16 << 20 : 1;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
            exit(1);
        f->sndbuf = set_sndbuf(sv[1], want);
        set_sndbuf(sv[0], want);
        to[0] = from[1] = sv[1];
        to[1] = from[0] = sv[0];
    } else if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0) {
        exit(1);
    }
    f->agent = fork();
    if (f->agent == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        execl(st_agent_path(), "sbx-agent", "--root-prefix", f->prefix, (char *)NULL);
        perror(st_agent_path());
        _exit(127);
    }
    close(to[0]);
    if (f->how == PIPES)
        close(from[1]);
    f->rfd = from[0];
    f->wfd = to[1];
}

static void flow_open(flow *f, const char *tag, enum transport how)
{
    sbx_err err;
    const char *dirs[2];
    sync_config cfg = { 0 };
    memset(f, 0, sizeof(*f));
    strbuf_init(&f->errors, 0);
    strbuf_init(&f->warnings, 0);
    f->how = how;
    f->next_chan = 1;
    f->tmp = st_tmpdir(tag);
    f->code = xasprintf("%s/host/code", f->tmp);
    f->prefix = xasprintf("%s/sbx", f->tmp);
    f->sbx_code = xasprintf("%s%s", f->prefix, f->code);
    st_sh("mkdir -p '%s' '%s'", f->code, f->prefix);
    dirs[0] = f->code;
    dirs[1] = NULL;
    cfg.code_dirs = dirs;
    if (sync_host_new(&cfg, &f->host, &err) < 0) {
        printf("Bail out! sync_host_new: %s\n", err.msg);
        exit(255);
    }
    start_agent(f);
    if (sync_conn_open(f->host, f->rfd, f->wfd, &ops, f, 10000, &f->conn, &err) < 0) {
        printf("Bail out! cannot open a connection: %s\n", err.msg);
        exit(255);
    }
}

static void flow_free(flow *f)
{
    int status;
    sync_conn_free(f->conn);
    close(f->rfd);
    if (f->wfd != f->rfd)
        close(f->wfd);
    kill(f->agent, SIGTERM);
    waitpid(f->agent, &status, 0);
    sync_host_free(f->host);
    st_rm_rf(f->tmp);
    free(f->tmp);
    free(f->code);
    free(f->prefix);
    free(f->sbx_code);
    strbuf_release(&f->errors);
    strbuf_release(&f->warnings);
}

/* Starts bash -c cmd in the code directory on a new channel; input may be NULL. */
static fchan *start(flow *f, const char *cmd, const char *input, size_t input_len)
{
    static const char *env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LC_ALL=C",
                                 NULL };
    const char *argv[] = { "bash", "-c", cmd, NULL };
    sync_fd_spec fds[] = { { 0, SYNC_FD_IN }, { 1, SYNC_FD_OUT }, { 2, SYNC_FD_OUT } };
    fchan *c = NULL;
    sbx_err err;
    for (size_t i = 0; i < MAX_CHANS && !c; i++)
        if (!f->ch[i].used)
            c = &f->ch[i];
    memset(c, 0, sizeof(*c));
    c->used = true;
    c->id = f->next_chan++;
    for (int k = 0; k < 3; k++)
        c->out_hash[k] = FNV_INIT;
    c->in = input;
    c->in_len = input_len;
    sync_run_req req = { .exe = "bash", .argv = argv, .env = env, .cwd = f->code, .fds = fds,
                         .nfds = 3, .auto_credit = c->id % 3 == 2 };
    if (sync_conn_run(f->conn, c->id, &req, &err) < 0) {
        diag("run failed: %s", err.msg);
        c->done = true;
        c->st.code = -1;
        return c;
    }
    feed(f, c);
    return c;
}

static bool all_done(flow *f)
{
    for (size_t i = 0; i < MAX_CHANS; i++)
        if (f->ch[i].used && !f->ch[i].done)
            return false;
    return true;
}

/* Runs the connection until every started channel exited, or the bound passed (false). */
static bool drive(flow *f, int bound_ms)
{
    uint64_t deadline = now_ns() + (uint64_t)bound_ms * 1000000;
    while (!all_done(f) && f->conn && !f->errors.len) {
        struct pollfd pfd[SYNC_CONN_MAX_POLLFDS];
        size_t n = sync_conn_pollfds(f->conn, pfd, SYNC_CONN_MAX_POLLFDS);
        int64_t left = (int64_t)(deadline - now_ns());
        if ((int64_t)deadline - (int64_t)now_ns() <= 0)
            return false;
        if (poll(pfd, (nfds_t)n, (int)(left / 1000000) + 1) < 0 && errno != EINTR)
            return false;
        if (sync_conn_handle_events(f->conn, pfd, n) < 0)
            break;
        for (size_t i = 0; i < MAX_CHANS; i++)
            for (int fd = 0; fd < 3; fd++)
                if (f->ch[i].used && f->ch[i].owed[fd]) {
                    sync_conn_credit(f->conn, f->ch[i].id, fd, f->ch[i].owed[fd]);
                    f->ch[i].owed[fd] = 0;
                }
    }
    return all_done(f) && !f->errors.len;
}

static void release_chans(flow *f)
{
    for (size_t i = 0; i < MAX_CHANS; i++)
        f->ch[i].used = false;
}

static bool same_file(const char *a, const char *b)
{
    return st_sh("cmp -s '%s' '%s'", a, b) == 0;
}

/* Sandbox files written by commands come back to the host, whole, within the bound. */
static bool pulls(flow *f, const char *how)
{
    static const size_t sizes[] = { 8000000, 1500000, 1048576 + 1, 2000000, 0, 300000,
                                    8000000 };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char *cmd = xasprintf("head -c %zu /dev/urandom > pulled%zu", sizes[i], i);
        char *h = xasprintf("%s/pulled%zu", f->code, i), *s = xasprintf("%s/pulled%zu",
                                                                           f->sbx_code, i);
        struct stat st;
        fchan *c = start(f, cmd, NULL, 0);
        bool in_time = drive(f, BOUND_MS);
        ok(in_time, "%s: a command writing a %zu-byte file finishes within the bound", how,
           sizes[i]);
        if (!in_time) {
            diag("stalled; the file on the host: %lld bytes; staged so far:",
                 stat(h, &st) == 0 ? (long long)st.st_size : -1LL);
            st_sh("cd '%s' && find . -path './.sbx-stage-*' -type f -printf '#   %%p %%s\n'",
                  f->code);
        }
        ok(c->done && c->st.kind == SYNC_EXITED && c->st.code == 0 && same_file(h, s),
           "%s: ... and the host has the sandbox's %zu bytes", how, sizes[i]);
        release_chans(f);
        free(cmd);
        free(h);
        free(s);
        if (!in_time)
            return false;   /* the connection is stuck: the rest would only wait again */
    }
    return true;
}

/* A big host file reaches the sandbox whole before the command that reads it. */
static void pushes(flow *f, const char *how)
{
    char *h = xasprintf("%s/pushed", f->code), *s = xasprintf("%s/pushed", f->sbx_code);
    st_sh("head -c 20000000 /dev/urandom > '%s'", h);
    fchan *c = start(f, "wc -c < pushed", NULL, 0);
    bool in_time = drive(f, BOUND_MS);
    ok(in_time, "%s: a 20 MB push and the command after it finish within the bound", how);
    ok(c->done && c->out_bytes[1] == 9 && same_file(h, s),
       "%s: ... and the sandbox has the host's 20000000 bytes", how);
    release_chans(f);
    free(h);
    free(s);
}

/* Input and output through their 256 KiB windows, four commands at once. */
static void parallel(flow *f, const char *how)
{
    size_t in_len = 6 * 1024 * 1024 + 17;
    char *input = xmalloc(in_len);
    uint64_t want_hash = FNV_INIT;
    fchan *c[4];
    bool in_time, outputs = true, files = true;
    for (size_t i = 0; i < in_len; i++)
        input[i] = (char)(i * 2654435761u >> 13);
    want_hash = fnv(want_hash, input, in_len);
    /* cat echoes its input: the same bytes must come back through both windows */
    c[0] = start(f, "cat; head -c 3000000 /dev/zero >&2", input, in_len);
    c[1] = start(f, "head -c 5000000 /dev/urandom > par1; head -c 4000000 /dev/zero", NULL, 0);
    c[2] = start(f, "head -c 3000000 /dev/urandom > par2; rm -f pulled0", NULL, 0);
    c[3] = start(f, "head -c 7000000 /dev/zero; head -c 2000000 /dev/zero >&2", input, in_len);
    in_time = drive(f, BOUND_MS);
    ok(in_time, "%s: four concurrent commands with big input, output and files finish within "
       "the bound", how);
    outputs = c[0]->out_bytes[1] == in_len && c[0]->out_hash[1] == want_hash &&
              c[0]->out_bytes[2] == 3000000 && c[1]->out_bytes[1] == 4000000 &&
              c[3]->out_bytes[1] == 7000000 && c[3]->out_bytes[2] == 2000000;
    if (!ok(outputs, "%s: every output byte arrived, input echoed intact", how))
        diag("cat gave %llu of %zu bytes, stderr %llu; outputs %llu %llu %llu",
             (unsigned long long)c[0]->out_bytes[1], in_len,
             (unsigned long long)c[0]->out_bytes[2], (unsigned long long)c[1]->out_bytes[1],
             (unsigned long long)c[3]->out_bytes[1], (unsigned long long)c[3]->out_bytes[2]);
    for (int k = 1; k <= 2; k++) {
        char *h = xasprintf("%s/par%d", f->code, k), *s = xasprintf("%s/par%d", f->sbx_code, k);
        files &= same_file(h, s);
        free(h);
        free(s);
    }
    {
        char *h = xasprintf("%s/pulled0", f->code);
        files &= !st_exists(h);
        free(h);
    }
    ok(files, "%s: their files and a deletion are on the host", how);
    release_chans(f);
    free(input);
}

static void suite(enum transport t)
{
    static const char *const names[] = { "big socket", "small socket", "pipes" };
    static const char *const tags[] = { "flow-big", "flow-small", "flow-pipe" };
    const char *how = names[t];
    flow f;
    flow_open(&f, tags[t], t);
    if (t != PIPES)
        diag("%s: the agent's send buffer is %d bytes", how, f.sndbuf);
    if (pulls(&f, how) && !f.errors.len) {
        pushes(&f, how);
        parallel(&f, how);
    }
    is_str(f.errors.buf, "", "%s: no connection errors", how);
    flow_free(&f);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    suite(BIG_SOCKET);
    suite(SMALL_SOCKET);
    suite(PIPES);
    return done_testing();
}
