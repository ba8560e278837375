/*
 * The host against a hostile agent (tests/sync/hostile-agent.c): every crafted delta is
 * refused with a message, and the host's trees (code directory, sync path base, task file,
 * and a directory outside them that the attacks aim at) stay byte for byte as they were.
 */
#include "sync/conn.h"
#include "tests/lib/tap.h"
#include "tests/sync/synctest.h"

typedef struct scenario {
    const char *name;
    bool fatal;            /* the connection must die (malformed, truncated, oversized) */
    const char *says;      /* a warning or error must contain this */
    int rounds;            /* commands run; the trees are compared after the last */
} scenario;

static const scenario scenarios[] = {
    { "dotdot", false, "'..' component", 1 },
    { "dotdot-inner", false, "'..' component", 1 },
    { "absolute", false, "absolute path", 1 },
    { "nul", false, "NUL", 1 },
    { "hook", false, "only objects, refs", 1 },
    { "gitconfig", false, "only objects, refs", 1 },
    { "nested-gitconfig", false, "below the top level", 1 },
    { "gitfile", false, "below the top level", 1 },
    { "git-case", false, "case variant of .git", 1 },
    { "alternates", false, "alternates", 1 },
    { "setuid", false, "never setuid", 1 },
    { "symlink-parent", false, "Too many levels of symbolic links", 1 },
    { "dir-then-symlink", false, "Too many levels of symbolic links", 2 },
    { "delete-outside", false, "'..' component", 1 },
    { "delete-gitconfig", false, "only objects, refs", 1 },
    { "stage-name", false, "reserved", 1 },
    { "deep", false, "deeper than", 1 },
    { "long-name", false, "over the 255-byte limit", 1 },
    { "outside-pattern", false, "pattern", 1 },
    { "task-file", false, "pushed only", 1 },
    { "unknown-root", false, "unknown root", 1 },
    { "absurd-size", true, "more than", 1 },
    { "too-many", true, "more than 100 entries", 1 },
    { "truncated", true, "middle of a delta", 1 },
    { "truncated-frame", true, "middle of a delta", 1 },
    { "exit-mid-delta", true, "EXIT in the middle of a delta", 1 },
    { "huge-frame", true, "exceeds", 1 },
    { "garbage", true, "unknown frame type", 1 },
    { "wrong-count", true, "DELTA_END says 5 entries", 1 },
    { "output-flood", true, "beyond its", 1 },
    { "warn-escapes", false, "text", 1 },
    { "replay-seq", true, "after delta", 1 },
};

typedef struct ctx {
    strbuf msgs;
} ctx;

static void on_msg(void *c, const char *msg)
{
    strbuf_addf(&((ctx *)c)->msgs, "%s\n", msg);
}

static const sync_conn_ops ops = { .warning = on_msg, .error = on_msg };

static char *helper_path(void)
{
    const char *b = getenv("SBXSH_BUILD");
    return xasprintf("%s/tests/sync/hostile-agent", b ? b : "build");
}

/* Every tree the attacks could touch, with modes and mtimes. */
static char *snapshot(const char *tmp)
{
    char *code = xasprintf("%s/code", tmp), *base = xasprintf("%s/base", tmp),
         *out = xasprintf("%s/outside", tmp);
    char *a = st_listing(code, true), *b = st_listing(base, true), *c = st_listing(out, true);
    char *all = xasprintf("[code]\n%s[base]\n%s[outside]\n%s", a, b, c);
    free(a);
    free(b);
    free(c);
    free(code);
    free(base);
    free(out);
    return all;
}

static void one(const scenario *sc)
{
    char *tmp = st_tmpdir("hostile");
    char *code = xasprintf("%s/code", tmp), *outside = xasprintf("%s/outside", tmp);
    char *paths = xasprintf("%s/base/cwd-*", tmp), *task = xasprintf("%s/base/task.md", tmp);
    const char *dirs[] = { code, NULL }, *sp[] = { paths, NULL }, *tf[] = { task, NULL };
    sync_config cfg = { .code_dirs = dirs, .sync_paths = sp, .task_files = tf,
                        .max_pull_entries = 100 };
    char *helper = helper_path();
    const char *args[] = { sc->name, NULL };
    ctx c = { STRBUF_INIT };
    sync_host *h;
    sync_conn *conn;
    st_agent a;
    sbx_err err;
    char *before = NULL, *after;
    int ret = 0;

    st_sh("cd '%s' && mkdir -p code/d outside base && echo victim > outside/victim && "
          "echo t > base/task.md && echo /w > base/cwd-1 && cd code && git init -q . && "
          "echo a > a.txt && echo f > d/f && ln -s '%s' link && mkdir -p sub/.git && "
          "printf '[core]\\n\\tbare = false\\n' > sub/.git/config", tmp, outside);
    setenv("HOSTILE_OUTSIDE", outside, 1);
    setenv("SBX_AGENT", helper, 1);
    if (sync_host_new(&cfg, &h, &err) < 0) {
        diag("%s", err.msg);
        return;
    }
    a = st_agent_start(args);
    if (sync_conn_open(h, a.rfd, a.wfd, &ops, &c, 5000, &conn, &err) < 0) {
        ok(0, "%s: connects (%s)", sc->name, err.msg);
        return;
    }
    for (int round = 1; round <= sc->rounds && ret == 0; round++) {
        const char *argv[] = { "true", NULL };
        sync_fd_spec fds[] = { { 0, SYNC_FD_IN }, { 1, SYNC_FD_OUT }, { 2, SYNC_FD_OUT } };
        int hfds[] = { -1, -1, -1 };
        sync_run_req req = { .exe = "true", .argv = argv, .cwd = code, .fds = fds, .nfds = 3 };
        sync_exit_status st;
        if (round == sc->rounds) {
            before = snapshot(tmp);
            strbuf_reset(&c.msgs);
        }
        ret = sync_conn_run_wait(conn, (uint32_t)round, &req, hfds, &st, &err);
    }
    after = snapshot(tmp);
    if (sc->fatal)
        ok(ret < 0, "%s: the connection is refused", sc->name);
    else
        ok(ret == 0, "%s: the connection goes on%s%s", sc->name, ret ? ": " : "",
           ret ? err.msg : "");
    ok(strstr(c.msgs.buf, sc->says) || (ret < 0 && strstr(err.msg, sc->says)),
       "%s: refused with a message (%s)", sc->name, ret < 0 ? err.msg : c.msgs.buf);
    if (!ok(!strcmp(after, before), "%s: the host trees are byte for byte unchanged", sc->name))
        st_diag_diff(before, after);
    ok(!strchr(c.msgs.buf, '\033'), "%s: messages carry no escape sequences", sc->name);
    sync_conn_free(conn);
    st_agent_stop(&a);
    sync_host_free(h);
    st_rm_rf(tmp);
    free(before);
    free(after);
    free(tmp);
    free(code);
    free(outside);
    free(paths);
    free(task);
    free(helper);
    strbuf_release(&c.msgs);
}

int main(void)
{
    char *helper = helper_path();
    signal(SIGPIPE, SIG_IGN);
    if (access(helper, X_OK) < 0) {
        printf("1..0 # SKIP %s not built (make check builds it)\n", helper);
        return 0;
    }
    free(helper);
    for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++)
        one(&scenarios[i]);
    return done_testing();
}
