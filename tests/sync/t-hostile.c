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
    const char *named;     /* paths each warning must name, separated by '|' (or NULL) */
    /* Scenarios where good entries come with the bad ones (the trees then change): paths
     * under the code directory that must have arrived and that must not have, '|'-separated,
     * and a directory that must not be a repository to host git (its git dir is the code
     * directory's .git, and `git status` there runs no fsmonitor). */
    const char *arrives, *absent, *not_repo;
} scenario;

/* The warning of a repository shape refused in the code directory at DIR. */
#define SHAPE(dir) "/" dir " a git repository"
#define P250 "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp" \
             "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp" \
             "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp" \
             "pppppppppppppppppppppppp"


/* The rows that refuse everything leave the last three fields out (NULL). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const scenario scenarios[] = {
    { "dotdot", false, "'..' component", 1, NULL },
    { "dotdot-inner", false, "'..' component", 1, NULL },
    { "absolute", false, "absolute path", 1, NULL },
    { "nul", false, "NUL", 1, NULL },
    { "hook", false, "only objects, refs", 1, NULL },
    { "gitconfig", false, "only objects, refs", 1, NULL },
    { "nested-gitconfig", false, "below the top level", 1, NULL },
    { "gitfile", false, "below the top level", 1, NULL },
    { "git-case", false, "case variant of .git", 1, NULL },
    { "alternates", false, "alternates", 1, NULL },
    { "refs-fake", false, "nothing named HEAD, config", 1,
      "refs/fake/HEAD|refs/fake/config|refs/fake/commondir|refs/fake/gitdir|refs/fake/Config|"
      "refs/fake/hooks|refs/fake/hooks/pre-push|refs/fake/objects|refs/fake/info|"
      "refs/fake/.hidden" },
    { "objects-fake", false, "only loose objects", 1,
      "objects/fake/HEAD|objects/fake|logs/config|logs/refs/x/hooks/pre-push" },
    { "ref-not-ref", false, "a ref file holds", 1, NULL },
    { "ref-outside", false, "a ref file holds", 1, NULL },
    { "object-not-object", false, "not a loose object", 1, NULL },
    { "object-bad-name", false, "only loose objects", 1, NULL },
    { "pack-not-pack", false, "not a pack", 1, NULL },
    { "logs-exec", false, "no executable file", 1, NULL },
    { "logs-not-reflog", false, "a reflog holds", 1, NULL },
    { "refs-symlink", false, "symlinks inside .git", 1, "refs/heads/l|refs/fake" },
    { "history-wipe", false, "never deletes git history", 1, NULL },
    { "setuid", false, "never setuid", 1, NULL },
    { "symlink-parent", false, "Too many levels of symbolic links", 1, NULL },
    { "dir-then-symlink", false, "Too many levels of symbolic links", 2, NULL },
    { "delete-outside", false, "'..' component", 1, NULL },
    { "delete-gitconfig", false, "only objects, refs", 1, NULL },
    { "stage-name", false, "reserved", 1, NULL },
    { "deep", false, "deeper than", 1, NULL },
    { "long-name", false, "over the 255-byte limit", 1, NULL },
    { "outside-pattern", false, "pattern", 1, NULL },
    { "task-file", false, "pushed only", 1, NULL },
    { "unknown-root", false, "unknown root", 1, NULL },
    { "absurd-size", true, "more than", 1, NULL },
    { "too-many", true, "more than 100 entries", 1, NULL },
    { "truncated", true, "middle of a delta", 1, NULL },
    { "truncated-frame", true, "middle of a delta", 1, NULL },
    { "exit-mid-delta", true, "EXIT in the middle of a delta", 1, NULL },
    { "huge-frame", true, "exceeds", 1, NULL },
    { "garbage", true, "unknown frame type", 1, NULL },
    { "wrong-count", true, "DELTA_END says 5 entries", 1, NULL },
    { "output-flood", true, "beyond its", 1, NULL },
    { "warn-escapes", false, "text", 1, NULL },
    { "replay-seq", true, "after delta", 1, NULL },
    /* No repository shape comes back, and what came with it arrives. */
    { "shape-one-round", false, SHAPE("x"), 1, "/x/refs: it would make", "good|x/HEAD",
      "x/refs", "x" },
    { "shape-rounds", false, SHAPE("x"), 3, "/x/refs: it would make|/x/refs/heads: it would",
      "good|x/HEAD|x/config|x/objects", "x/refs", "x" },
    { "shape-deep", false, SHAPE("d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/d15/d16/"
                                 "d17/d18/d19/y"), 1, NULL,
      "good|d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/d15/d16/d17/d18/d19/y/HEAD",
      "d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/d15/d16/d17/d18/d19/y/refs",
      "d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/d15/d16/d17/d18/d19/y" },
    { "shape-commondir", false, SHAPE("y"), 1, "/y/commondir: it would make", "good|y/HEAD",
      "y/commondir", "y" },
    { "shape-host-part", false, SHAPE("pre"), 1, "/pre/refs: it would make", "good|pre/HEAD",
      "pre/refs", "pre" },
    { "shape-host-repo", false, SHAPE("fixture.git"), 1,
      "/fixture.git/config: it would make|/fixture.git/hooks/post-index-change: it would make",
      "good", "fixture.git/hooks/post-index-change", NULL },
    { "git-logs", false, "", 1, NULL, "good|.git/logs/HEAD|.git/logs/refs/heads/main", NULL,
      NULL },
    { "dotgit-depth", false, "below the top level", 1,
      "/deep/er/.git: a .git below|/deep/er/sub/.git: a .git below", "good|deep/er/f",
      "deep/er/.git|deep/er/sub/.git", "deep/er" },
    /* Over-long paths are refused one by one; the round's good files arrive, and the next. */
    { "long-path", false, "over the 4096-byte limit", 2, "over the 255-byte limit",
      "good1|good2|good3", P250, NULL },
};
#pragma GCC diagnostic pop

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

/* Each '|'-separated path of list exists (or does not) under code. */
static void check_paths(const scenario *sc, const char *code, const char *list, bool exist)
{
    char *copy = xstrdup(list), *save = NULL;
    for (char *n = strtok_r(copy, "|", &save); n; n = strtok_r(NULL, "|", &save)) {
        char *p = xasprintf("%s/%s", code, n);
        ok(st_exists(p) == exist, "%s: %.60s %s on the host", sc->name, n,
           exist ? "arrived" : "is not");
        free(p);
    }
    free(copy);
}

/* What a person's git sees in the directory: the code directory's repository, and its
 * `git status` runs no fsmonitor from the sandbox's config. */
static void check_not_repo(const scenario *sc, const char *tmp, const char *code)
{
    char real[PATH_MAX];
    char *want = xasprintf("%s/.git", realpath(code, real) ? real : code);
    char *mark = xasprintf("%s/outside/fsmonitor-ran", tmp);
    st_sh("cd '%s/%s' && git rev-parse --absolute-git-dir > '%s/gitdir' 2>&1; "
          "git status >/dev/null 2>&1", code, sc->not_repo, tmp);
    {
        char *f = xasprintf("%s/gitdir", tmp);
        const char *got = st_read(f);
        size_t n = strcspn(got, "\n");
        ok(strlen(want) == n && !strncmp(got, want, n), "%s: host git in %s finds %s (%s)",
           sc->name, sc->not_repo, want, got);
        free(f);
    }
    ok(!st_exists(mark), "%s: host git status in %s ran no fsmonitor", sc->name, sc->not_repo);
    free(want);
    free(mark);
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
          "printf '[core]\\n\\tbare = false\\n' > sub/.git/config && mkdir pre && "
          "echo 'ref: refs/heads/main' > pre/HEAD && git init -q --bare fixture.git", tmp,
          outside);
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
            if (!sc->arrives)   /* else every round's warnings count */
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
    if (!*sc->says)   /* nothing to refuse */
        ok(ret == 0 && !c.msgs.len, "%s: no warning (%s)", sc->name, c.msgs.buf);
    else
        ok(strstr(c.msgs.buf, sc->says) || (ret < 0 && strstr(err.msg, sc->says)),
           "%s: refused with a message (%s)", sc->name, ret < 0 ? err.msg : c.msgs.buf);
    if (sc->named && sc->arrives) {
        /* Each given text is in a warning. */
        char *list = xstrdup(sc->named), *save = NULL;
        for (char *n = strtok_r(list, "|", &save); n; n = strtok_r(NULL, "|", &save))
            ok(strstr(c.msgs.buf, n) != NULL, "%s: a warning says '%s'", sc->name, n);
        free(list);
    } else if (sc->named) {
        /* Each refused entry gets its own warning naming it. */
        char *list = xstrdup(sc->named), *save = NULL;
        for (char *n = strtok_r(list, "|", &save); n; n = strtok_r(NULL, "|", &save)) {
            char *line = xasprintf("/.git/%s: ", n);
            ok(strstr(c.msgs.buf, line) != NULL, "%s: a warning names .git/%s", sc->name, n);
            free(line);
        }
        free(list);
    }
    if (sc->arrives) {
        check_paths(sc, code, sc->arrives, true);
        if (sc->absent)
            check_paths(sc, code, sc->absent, false);
        if (sc->not_repo)
            check_not_repo(sc, tmp, code);
        if (!strcmp(sc->name, "shape-host-repo")) {
            char *cfgpath = xasprintf("%s/fixture.git/config", code);
            ok(!strstr(st_read(cfgpath), "fsmonitor"), "%s: the host repository's config is "
               "its own", sc->name);
            free(cfgpath);
        }
    } else if (!ok(!strcmp(after, before), "%s: the host trees are byte for byte unchanged",
                   sc->name)) {
        st_diag_diff(before, after);
    }
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
