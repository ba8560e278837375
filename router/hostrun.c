/*
 * The host runner: executes a HOST pipeline from its checked words. sbxsh
 * makes the pipes, forks and execs each argv itself; no host shell ever
 * sees the text, so what runs is exactly what route_check() accepted.
 */
#include "router/builtins.h"
#include "router/rules.h"
#include "common/fsat.h"
#include "common/json.h"
#include "common/run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* What every host git gets before the user's arguments: bare repositories only when named
 * explicitly (a planted one is never discovered), and no ext:: transport (it runs a
 * command). */
static char *const git_safety[] = {
    "-c", "safe.bareRepository=explicit", "-c", "protocol.ext.allow=never", NULL,
};

/* Whether e[0..n) is one of the NULL-terminated names. */
static bool name_in(const char *const *names, const char *e, size_t n)
{
    for (; names && *names; names++)
        if (strlen(*names) == n && !strncmp(*names, e, n))
            return true;
    return false;
}

/* Variables that tell git where its repository is: the user's own, but they
 * would move host git away from the repository checked for it. */
static bool repo_location_var(const char *e, size_t n)
{
    static const char *const names[] = {
        "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_INDEX_FILE", "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_PREFIX", "GIT_IMPLICIT_WORK_TREE",
        "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE", "GIT_NAMESPACE", NULL,
    };
    return name_in(names, e, n);
}

/* What tells sbx which session it is about: this shell's, always (route_ctx). */
static bool session_var(const char *e, size_t n)
{
    return (n == 21 && !strncmp(e, "AGENT_SANDBOX_SESSION", 21)) ||
           (n == 23 && !strncmp(e, "AGENT_SANDBOX_CODE_DIRS", 23));
}

/* What a policy command keeps of sbxsh's environment: where the user's files are, who the
 * user is, the terminal and the locale, and its rule's `env` names; nothing that chooses a
 * program or loads code (PATH is the cut one every host part gets). */
static bool policy_keeps(const rcmd *c, const char *e, size_t n)
{
    static const char *const base[] = {
        "HOME", "USER", "LOGNAME", "TERM", "COLORTERM", "NO_COLOR", "TZ", "TMPDIR", "LANG",
        "LANGUAGE", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
        "XDG_RUNTIME_DIR", NULL,
    };
    return (n > 3 && !strncmp(e, "LC_", 3)) || name_in(base, e, n) ||
           name_in(c->pol_env, e, n);
}

/* The environment of a host program: sbxsh's own (so credential helpers
 * and the SSH agent work), with PATH cut to entries outside the code
 * directories, PWD set as bash sets it, the allowed assignment prefixes,
 * and for git the switch that makes git itself refuse abbreviated options
 * and the repository pinned (GIT_DIR, GIT_WORK_TREE, GIT_CEILING_DIRECTORIES:
 * git never discovers a repository by walking paths); a policy command's cut to
 * policy_keeps. */
static void build_env(const route_ctx *ctx, const rcmd *c, strvec *env)
{
    strbuf path = STRBUF_INIT;

    for (char **e = environ; e && *e; e++) {
        size_t n = strcspn(*e, "=");
        /* a policy command: only the base variables and its rule's names */
        if (c->kind == RC_POLICY && !policy_keeps(c, *e, n))
            continue;
        bool replaced = (n == 4 && !strncmp(*e, "PATH", 4)) ||
                        (n == 3 && !strncmp(*e, "PWD", 3)) ||
                        (n == 37 && !strncmp(*e, "GIT_TEST_DISALLOW_ABBREVIATED_OPTIONS", 37)) ||
                        (c->kind == RC_GIT && repo_location_var(*e, n)) ||
                        (c->kind == RC_SBX && session_var(*e, n));
        for (size_t i = 0; i < c->env.n && !replaced; i++)
            replaced = !strncmp(c->env.v[i], *e, n + 1);
        if (!replaced)
            strvec_push(env, *e);
    }
    if (ctx->path) {
        route_safe_path(ctx, &path);
        strvec_pushf(env, "PATH=%s", path.buf);
    }
    if (c->kind == RC_SBX) {
        /* sbx finds the session by its name and code directories, not by where it
         * runs: it runs in /, where nothing is the sandbox's */
        strvec_push(env, "PWD=/");
        if (ctx->session)
            strvec_pushf(env, "AGENT_SANDBOX_SESSION=%s", ctx->session);
        if (ctx->n_code_dirs) {
            strbuf dirs = STRBUF_INIT;
            for (size_t i = 0; i < ctx->n_code_dirs; i++)
                strbuf_addf(&dirs, "%s%s", i ? ":" : "", ctx->code_dirs[i]);
            strvec_pushf(env, "AGENT_SANDBOX_CODE_DIRS=%s", dirs.buf);
            strbuf_release(&dirs);
        }
    } else {
        strvec_pushf(env, "PWD=%s", c->kind == RC_GIT && c->git_cwd ? c->git_cwd : ctx->cwd);
    }
    for (size_t i = 0; i < c->env.n; i++)
        strvec_push(env, c->env.v[i]);
    if (c->kind == RC_GIT) {
        strvec_push(env, "GIT_TEST_DISALLOW_ABBREVIATED_OPTIONS=1");
        if (c->git_dir) {
            strvec_pushf(env, "GIT_DIR=%s", c->git_dir);
            strvec_pushf(env, "GIT_WORK_TREE=%s", c->git_top);
        }
        if (c->git_ceiling)
            strvec_pushf(env, "GIT_CEILING_DIRECTORIES=%s", c->git_ceiling);
    }
    strbuf_release(&path);
}

/* git's words: the safety options, then the checked arguments (without -C,
 * which the held directory replaces); clone_name, if set, is the clone's
 * target as seen from the directory the runner made for it. */
static void build_argv(const rcmd *c, bool hooks_off, const char *clone_name, strvec *argv)
{
    strvec_push(argv, c->argv.v[0]);
    if (c->kind != RC_GIT) {
        for (size_t i = 1; i < c->argv.n; i++)
            strvec_push(argv, c->argv.v[i]);
        return;
    }
    strvec_pushv(argv, git_safety);
    if (hooks_off) {
        strvec_push(argv, "-c");
        strvec_push(argv, "core.hooksPath=/dev/null");
    }
    for (size_t i = 0; i < c->git_args.n; i++)
        strvec_push(argv, clone_name && (int)i == c->clone_arg ? clone_name : c->git_args.v[i]);
    if (clone_name && c->clone_arg < 0)
        strvec_push(argv, clone_name);
}

/* ---- messages ---------------------------------------------------------------- */

static void run_error(const route_run_opts *o, int fd, const char *fmt, ...) SBX_PRINTF(3, 4);

/* bash's "NAME: line N: message" */
static void run_error(const route_run_opts *o, int fd, const char *fmt, ...)
{
    strbuf sb = STRBUF_INIT;
    va_list ap;

    strbuf_addf(&sb, "%s: ", o->errname ? o->errname : "sbxsh");
    if (o->line)
        strbuf_addf(&sb, "line %u: ", o->line);
    va_start(ap, fmt);
    strbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    strbuf_addch(&sb, '\n');
    write_full(fd, sb.buf, sb.len);
    strbuf_release(&sb);
}

/* Signals ignored when sbxsh started. bash leaves those ignored for the
 * commands it runs (and cannot trap them); everything else they get with
 * its default action. Recorded before main(), so that whatever sbxsh itself
 * ignores later (SIGPIPE, for its sockets) does not count. */
static sigset_t ignored_at_start;

__attribute__((constructor)) static void note_ignored_signals(void)
{
    sigemptyset(&ignored_at_start);
    for (int s = 1; s < NSIG; s++) {
        struct sigaction sa;
        if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
            sigaddset(&ignored_at_start, s);
    }
}

/* In a child: the signal dispositions and mask bash gives a command. */
static void child_signals(void)
{
    sigset_t none;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, sigismember(&ignored_at_start, s) ? SIG_IGN : SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* ---- git's own configuration ----------------------------------------------------- */

/* Runs a git query in the held directory, with the pinned repository, and
 * collects its standard output (at most max bytes). Returns its exit
 * status, or -1. */
static int git_query(const rcmd *c, char *const *envp, char *const *args, strbuf *out,
                     size_t max)
{
    strvec argv = STRVEC_INIT;
    int st = -1;

    strvec_push(&argv, "git");
    strvec_pushv(&argv, git_safety);
    strvec_pushv(&argv, args);
    /* common/run.h: stdin and stderr /dev/null, in the held directory, no fd of ours, the
     * signals bash would give it */
    sbx_run r = { .argv = argv.v, .file = c->prog, .env = envp, .cwd_fd = c->git_cwd_fd,
                  .keep_ignored = &ignored_at_start, .max = max };
    sbx_err err;

    /* the program pinned at the check, named "git" */
    if (sbx_run_capture(&r, out, &st, &err) == 0)
        st = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    else
        st = -1;
    strvec_clear(&argv);
    return st;
}

/* Whether a path the repository's hooks live at (or a hook there links
 * to) is one the sandbox can change. */
static bool sandbox_writable(const route_ctx *ctx, const char *path, const char *common)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return false;
    return route_in_synced(ctx, real) && !route_path_within(real, common);
}

/* Hooks are programs: a hooks directory (core.hooksPath, e.g. husky's
 * .husky/_) or a hook symlinked into the working tree would run whatever
 * the sandbox wrote there. Sets *hooks_off when that is the case. */
static void check_hooks(const route_ctx *ctx, const rcmd *c, char *const *envp, bool *hooks_off,
                        strbuf *dir)
{
    static char *const args[] = { "rev-parse", "--path-format=absolute", "--git-common-dir",
                                  "--git-path", "hooks", NULL };
    strbuf out = STRBUF_INIT, entry = STRBUF_INIT;
    char common[PATH_MAX];
    char *nl;
    DIR *d;

    if (git_query(c, envp, args, &out, 2 * PATH_MAX) != 0 || !(nl = strchr(out.buf, '\n')))
        goto done;
    *nl = '\0';
    strbuf_addstr(dir, nl + 1);
    strbuf_setlen(dir, strcspn(dir->buf, "\n"));
    if (!realpath(out.buf, common))
        goto done;
    if (sandbox_writable(ctx, dir->buf, common)) {
        *hooks_off = true;
        goto done;
    }
    if (!(d = opendir(dir->buf)))
        goto done;
    for (struct dirent *e; (e = readdir(d)) && !*hooks_off;) {
        struct stat st;
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || (n > 7 && !strcmp(e->d_name + n - 7, ".sample")))
            continue;
        strbuf_reset(&entry);
        strbuf_addf(&entry, "%s/%s", dir->buf, e->d_name);
        if (lstat(entry.buf, &st) == 0 && S_ISLNK(st.st_mode) &&
            sandbox_writable(ctx, entry.buf, common))
            *hooks_off = true;
    }
    closedir(d);
done:
    strbuf_release(&out);
    strbuf_release(&entry);
}

/* The remotes the command may use, as the repository's configuration
 * (with insteadOf) resolves them; and every operand taken for a remote's
 * name must be one (git would take another bare word for a path). */
static int check_remotes(const route_ctx *ctx, const rcmd *c, char *const *envp, strbuf *why)
{
    static char *const args[] = { "remote", "-v", NULL };
    strbuf out = STRBUF_INIT, w = STRBUF_INIT;
    bool found[ROUTE_MAX_WORDS] = { false };
    int ret = 0;

    if (git_query(c, envp, args, &out, 1 << 20) != 0) {
        if (c->git_nicks.n) {
            strbuf_addf(why, "git %s: the repository's remotes cannot be listed",
                        route_git_sub_names[c->git_sub]);
            ret = -1;
        }
        goto out;
    }
    for (char *line = out.buf, *next; *line; line = next) {
        char *tab, *sp;
        next = strchrnul(line, '\n');
        if (*next)
            *next++ = '\0';
        tab = strchr(line, '\t');
        sp = tab ? strrchr(tab, ' ') : NULL;
        if (!tab || !sp)
            continue;
        *tab = *sp = '\0';
        bool used = !c->git_remote || !strcmp(line, c->git_remote);
        for (size_t k = 0; k < c->git_nicks.n && k < ROUTE_MAX_WORDS; k++)
            if (!strcmp(line, c->git_nicks.v[k]))
                used = found[k] = true;
        if (!used)
            continue;
        if (route_check_configured_url(ctx, c, tab + 1, &w) < 0) {
            strbuf_addf(why, "git %s: remote ", route_git_sub_names[c->git_sub]);
            route_reason_add(why, line, strlen(line));
            strbuf_addf(why, ": %s", w.buf);
            ret = -1;
            goto out;
        }
    }
    for (size_t k = 0; k < c->git_nicks.n && k < ROUTE_MAX_WORDS; k++)
        if (!found[k]) {
            strbuf_addf(why, "git %s: ", route_git_sub_names[c->git_sub]);
            route_reason_add(why, c->git_nicks.v[k], strlen(c->git_nicks.v[k]));
            strbuf_addstr(why, " is not a configured remote (git would take it for a path, "
                               "which the sandbox can create)");
            ret = -1;
            break;
        }
out:
    strbuf_release(&out);
    strbuf_release(&w);
    return ret;
}

/* git clone's target: the missing directories above it are made here, one
 * at a time beneath the code directory without following anything, and
 * the clone starts in the last of them with a one-component name, so that
 * nothing the sandbox renames meanwhile can send it elsewhere. Returns the
 * held directory, with *name pointing into c->clone_target, or -1. */
static int prepare_clone(const route_ctx *ctx, const rcmd *c, const char **name)
{
    const char *abs = c->clone_target, *rel, *last = strrchr(abs, '/') + 1;
    int which = route_code_dir_of(ctx, abs), root, cur;
    struct stat st;

    if (which < 0 || (root = route_open_code_dir(ctx, which)) < 0)
        return -1;
    rel = abs + strlen(ctx->code_dirs[which]);
    while (*rel == '/')
        rel++;
    /* mkdir -p beneath the code directory (common/fsat.h): no symlink followed */
    cur = sbx_mkdir_beneath(root, rel, rel < last ? (size_t)(last - rel) : 0, O_PATH, 0777);
    close(root);
    if (cur < 0)
        return -1;
    if (fstatat(cur, last, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
        close(cur);
        return -1;
    }
    *name = last;
    return cur;
}

/* ---- running ----------------------------------------------------------------------- */

typedef struct prepared {
    strvec argv, env;
    int cwd_fd;            /* where it runs: held since the check (git), or since the start */
} prepared;

static bool is_builtin(const rcmd *c)
{
    return c->kind == RC_ECHO || c->kind == RC_PRINTF;
}

/* The audit log's record of one command (route_run_opts.audit): the argv exactly as
 * executed (pr's, the checked words after git's safety options), the program, where it ran,
 * the names (never the values) of its environment, and its status. An in-process builtin or
 * cd has its words. */
static void audit_cmd(const route_run_opts *o, const rcmd *c, const prepared *pr,
                      const route_ctx *ctx, int status)
{
    sbx_json j;
    const strvec *argv = pr && pr->argv.n ? &pr->argv : &c->argv;
    if (!o->audit)
        return;
    if (o->audit->len)
        strbuf_addch(o->audit, ',');
    sbx_json_init(&j, o->audit);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_begin_arr(&j, "argv");
    for (size_t i = 0; i < argv->n; i++)
        sbx_json_str(&j, NULL, argv->v[i]);
    sbx_json_end(&j);
    if (pr && pr->argv.n && c->prog)
        sbx_json_str(&j, "program", c->prog);
    else
        sbx_json_bool(&j, "builtin", true);
    sbx_json_str(&j, "cwd", c->kind == RC_GIT && c->git_cwd ? c->git_cwd : ctx->cwd);
    sbx_json_begin_arr(&j, "env");
    for (size_t i = 0; pr && i < pr->env.n; i++) {
        const char *eq = strchr(pr->env.v[i], '=');
        sbx_json_strn(&j, NULL, pr->env.v[i], eq ? (size_t)(eq - pr->env.v[i]) : strlen(pr->env.v[i]));
    }
    sbx_json_end(&j);
    sbx_json_int(&j, "status", status);
    sbx_json_end(&j);
}

/* The options for one command: its own line number, as bash counts. */
static route_run_opts cmd_opts(const route_run_opts *o, const sh_parse *p,
                               const sh_pipeline *pl, const rcmd *c)
{
    route_run_opts co = *o;

    if (co.line)
        for (uint32_t i = pl->span.start; i < c->line_off && i < p->len; i++)
            co.line += p->src[i] == '\n';
    return co;
}

static int run_builtin(const rcmd *c, const route_run_opts *o, int out_fd, int err_fd)
{
    bi_env env = { .out_fd = out_fd, .err_fd = err_fd, .errname = o->errname,
                   .line = o->line };
    int st = c->kind == RC_ECHO ? route_builtin_echo(c->argv.v + 1, c->argv.n - 1, &env)
                                : route_builtin_printf(c->argv.v + 1, c->argv.n - 1, &env);

    /* route_check made the same call with BI_CHECK: a refusal cannot happen */
    return st == BI_REFUSE ? 1 : st;
}

/* Applies c's redirections to the descriptors fds[0..2] (real ones in a
 * child, a table for a builtin in sbxsh itself). opened[] collects the
 * /dev/null descriptors to close. Returns 0, or -1 after a message. */
static int redirect(const rcmd *c, const route_run_opts *o, int fds[3], int opened[2],
                    bool real)
{
    for (size_t i = 0; i < c->n_redirs; i++) {
        const rredir *r = &c->redirs[i];
        int src;

        if (r->op == RR_DUP) {
            src = fds[r->src];
        } else {
            int *slot = &opened[r->op == RR_NULL_IN ? 0 : 1];
            if (*slot < 0)
                *slot = open("/dev/null",
                             (r->op == RR_NULL_IN ? O_RDONLY : O_WRONLY) | O_NOCTTY | O_CLOEXEC);
            if (*slot < 0) {
                run_error(o, fds[2], "/dev/null: %s", strerror(errno));
                return -1;
            }
            src = *slot;
        }
        if (real) {
            if (dup2(src, r->fd) < 0) {
                run_error(o, 2, "%d: %s", r->src, strerror(errno));
                return -1;
            }
        } else {
            fds[r->fd] = src;
        }
    }
    return 0;
}

SBX_NORETURN static void child_exec(const rcmd *c, const prepared *pr, const route_ctx *ctx,
                                    const route_run_opts *o)
{
    int e;

    (void)ctx;
    execve(c->prog, pr->argv.v, pr->env.v);
    e = errno;
    if (e == ENOENT) {
        run_error(o, 2, "%s: No such file or directory", c->prog);
        _exit(127);
    }
    if (e == ENOEXEC)
        run_error(o, 2, "%s: cannot execute binary file: Exec format error", c->prog);
    else
        run_error(o, 2, "%s: %s", c->prog, strerror(e));
    _exit(126);
}

static int wait_status(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 127;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run_pipeline(const sh_parse *p, const sh_pipeline *pl, const rpipe *rp,
                        const prepared *pr, const route_ctx *ctx, const route_run_opts *o,
                        int *status, sbx_err *err)
{
    pid_t pids[ROUTE_MAX_CMDS];
    int statuses[ROUTE_MAX_CMDS] = { 0 }, prev = -1, ret = 0;
    size_t started = 0;

    for (size_t i = 0; i < rp->n; i++) {
        const rcmd *c = &rp->cmds[i];
        int pfd[2] = { -1, -1 };
        pid_t pid;

        if (i + 1 < rp->n && pipe2(pfd, O_CLOEXEC) < 0) {
            ret = sbx_errno(err, "pipe");
            break;
        }
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
            ret = sbx_errno(err, "fork");
            if (pfd[0] >= 0) {
                close(pfd[0]);
                close(pfd[1]);
            }
            break;
        }
        if (pid == 0) {
            int fds[3] = { 0, 1, 2 }, opened[2] = { -1, -1 };
            route_run_opts co = cmd_opts(o, p, pl, c);
            child_signals();
            if ((prev >= 0 && dup2(prev, 0) < 0) || (pfd[1] >= 0 && dup2(pfd[1], 1) < 0))
                _exit(126);
            if (redirect(c, &co, fds, opened, true) < 0)
                _exit(1);
            /* |& copies stderr to the pipe after the command's own redirections */
            if (c->pipe_stderr && dup2(1, 2) < 0)
                _exit(126);
            /* by the descriptor held since the check, never by name */
            if (!is_builtin(c) && fchdir(pr[i].cwd_fd) < 0) {
                run_error(&co, 2, "%s: %s", c->kind == RC_GIT ? c->git_cwd : ctx->cwd,
                          strerror(errno));
                _exit(1);
            }
            close_range(3, ~0U, 0);
            if (is_builtin(c))
                _exit(run_builtin(c, &co, 1, 2));
            child_exec(c, &pr[i], ctx, &co);
        }
        pids[started++] = pid;
        if (prev >= 0)
            close(prev);
        if (pfd[1] >= 0)
            close(pfd[1]);
        prev = pfd[0];
    }
    if (prev >= 0)
        close(prev);
    for (size_t i = 0; i < started; i++)
        statuses[i] = wait_status(pids[i]);
    for (size_t i = 0; i < started; i++)
        audit_cmd(o, &rp->cmds[i], is_builtin(&rp->cmds[i]) ? NULL : &pr[i], ctx, statuses[i]);
    if (ret < 0)
        return -1;
    *status = statuses[rp->n - 1];
    if (o->pipefail)
        for (size_t i = 0; i < rp->n; i++)
            if (statuses[i])
                *status = statuses[i];
    return 0;
}

/* set -x: what bash's xtrace prints for the pipeline, from the checked words: PS4, then
 * each assignment prefix on a line of its own, then the words, quoted as bash quotes them. */
static void xtrace_word(strbuf *out, const char *w)
{
    if (!*w || strpbrk(w, " \t\n'\"\\$`*?[]|&;()<>!{}") || w[0] == '~' || w[0] == '#')
        strbuf_add_shell_quoted(out, w, strlen(w));
    else
        strbuf_addstr(out, w);
}

static void trace_pipeline(const rpipe *rp, const char *ps4)
{
    strbuf out = STRBUF_INIT;
    for (size_t i = 0; i < rp->n; i++) {
        const rcmd *c = &rp->cmds[i];
        for (size_t k = 0; k < c->env.n; k++) {
            const char *eq = strchr(c->env.v[k], '=');
            strbuf_addstr(&out, ps4);
            strbuf_add(&out, c->env.v[k], eq ? (size_t)(eq - c->env.v[k] + 1) : 0);
            xtrace_word(&out, eq ? eq + 1 : c->env.v[k]);
            strbuf_addch(&out, '\n');
        }
        strbuf_addstr(&out, ps4);
        for (size_t k = 0; k < c->argv.n; k++) {
            if (k)
                strbuf_addch(&out, ' ');
            xtrace_word(&out, c->argv.v[k]);
        }
        strbuf_addch(&out, '\n');
    }
    fflush(stdout);
    /* A trace that cannot be written is not the command's failure, as in bash. */
    if (write_full(2, out.buf, out.len) < 0)
        errno = 0;
    strbuf_release(&out);
}

/* `sbx exec [OPTIONS] [--] CMD...` typed to sbxsh: every command here already runs in
 * the session's sandbox (on a pseudo-terminal when sbxsh has the terminal), so sbx exec
 * would only start a second sandbox or shell; it says so, naming CMD as it would be
 * typed. */
static void sbx_exec_hint(const rcmd *c, const route_run_opts *o, int fd)
{
    strbuf cmd = STRBUF_INIT;
    size_t i = 2;

    while (i < c->argv.n && c->argv.v[i][0] == '-' && strcmp(c->argv.v[i], "--")) {
        bool valued = !strcmp(c->argv.v[i], "--session");
        i += valued ? 2 : 1;
    }
    if (i < c->argv.n && !strcmp(c->argv.v[i], "--"))
        i++;
    for (size_t k = i; k < c->argv.n; k++) {
        if (k > i)
            strbuf_addch(&cmd, ' ');
        xtrace_word(&cmd, c->argv.v[k]);
    }
    run_error(o, fd, "sbx exec: what is typed here runs in the session's sandbox already "
                     "(on a terminal when sbxsh has one)%s%s",
              cmd.len ? ": type the command itself: " : "", cmd.buf);
    strbuf_release(&cmd);
}

int route_run_host(const sh_parse *p, const sh_pipeline *pl, const route_ctx *ctx,
                   const route_run_opts *o, int *status, strbuf *new_cwd, sbx_err *err)
{
    prepared pr[ROUTE_MAX_CMDS];
    strbuf why = STRBUF_INIT, hooks = STRBUF_INIT;
    bool hooks_off = false;
    rpipe rp;
    int ret = ROUTE_RAN;

    if (new_cwd)
        strbuf_reset(new_cwd);
    if (route_check(p, pl, ctx, &rp, &why) != ROUTE_HOST) {
        sbx_errf(err, "%s", why.buf);
        strbuf_release(&why);
        return ROUTE_NOT_HOST;
    }
    if (rp.git_secret) {
        /* Nothing runs; the reason (no secret in it) is what the person reads. */
        run_error(o, 2, "%s", why.buf);
        *status = 2;
        goto out;
    }
    memset(pr, 0, sizeof(pr));
    for (size_t i = 0; i < rp.n; i++)
        pr[i].cwd_fd = -1;
    for (size_t i = 0; i < rp.n; i++) {
        const rcmd *c = &rp.cmds[i];
        const char *clone_name = NULL, *w;
        strvec_init(&pr[i].argv);
        strvec_init(&pr[i].env);
        if (is_builtin(c) || c->kind == RC_CD)
            continue;
        if (c->kind == RC_GIT && c->git_sub == GIT_CLONE) {
            if ((pr[i].cwd_fd = prepare_clone(ctx, c, &clone_name)) < 0) {
                sbx_errf(err, "git clone: the clone directory changed while it was checked");
                ret = ROUTE_NOT_HOST;
                goto out;
            }
        } else if (c->kind == RC_GIT) {
            pr[i].cwd_fd = fcntl(c->git_cwd_fd, F_DUPFD_CLOEXEC, 3);
        } else if (c->kind == RC_SBX) {
            if (c->sbx_sub == SBX_EXEC)
                continue;
            pr[i].cwd_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        } else if (route_code_dir_of(ctx, ctx->cwd) >= 0) {
            pr[i].cwd_fd = route_open_dir(ctx, ctx->cwd, NULL, &w);
        } else {
            /* a filter outside the code directories (fed by a pipe, no file operands):
             * the directory is the host's */
            pr[i].cwd_fd = open(ctx->cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
        }
        if (pr[i].cwd_fd < 0) {
            sbx_errf(err, "the current directory %s changed while it was checked",
                     c->kind == RC_GIT ? c->git_cwd : ctx->cwd);
            ret = ROUTE_NOT_HOST;
            goto out;
        }
        build_env(ctx, c, &pr[i].env);
        if (c->kind == RC_GIT && c->git_sub != GIT_CLONE) {
            strbuf_reset(&why);
            if (check_remotes(ctx, c, pr[i].env.v, &why) < 0) {
                sbx_errf(err, "%s", why.buf);
                ret = ROUTE_NOT_HOST;
                goto out;
            }
            if (c->git_sub != GIT_LS_REMOTE)
                check_hooks(ctx, c, pr[i].env.v, &hooks_off, &hooks);
        }
        build_argv(c, hooks_off, clone_name, &pr[i].argv);
    }
    if (hooks_off)
        run_error(&(route_run_opts){ .errname = o->errname }, 2,
                  "warning: git hooks not run: %s is inside the code directories, which the "
                  "sandbox can change",
                  hooks.buf);
    if (o->xtrace)
        trace_pipeline(&rp, o->xtrace);

    if (rp.n == 1 && rp.cmds[0].kind == RC_CD) {
        if (new_cwd)
            strbuf_addstr(new_cwd, rp.new_cwd);
        *status = 0;
        audit_cmd(o, &rp.cmds[0], NULL, ctx, 0);
    } else if (rp.n == 1 && rp.cmds[0].kind == RC_SBX && rp.cmds[0].sbx_sub == SBX_EXEC) {
        int fds[3] = { 0, 1, 2 }, opened[2] = { -1, -1 };
        route_run_opts co = cmd_opts(o, p, pl, &rp.cmds[0]);
        *status = 2;
        if (redirect(&rp.cmds[0], &co, fds, opened, false) == 0)
            sbx_exec_hint(&rp.cmds[0], &co, fds[2]);
        for (int k = 0; k < 2; k++)
            if (opened[k] >= 0)
                close(opened[k]);
    } else if (rp.n == 1 && is_builtin(&rp.cmds[0])) {
        int fds[3] = { 0, 1, 2 }, opened[2] = { -1, -1 };
        route_run_opts co = cmd_opts(o, p, pl, &rp.cmds[0]);
        *status = redirect(&rp.cmds[0], &co, fds, opened, false) < 0
                      ? 1 : run_builtin(&rp.cmds[0], &co, fds[1], fds[2]);
        audit_cmd(o, &rp.cmds[0], NULL, ctx, *status);
        for (int k = 0; k < 2; k++)
            if (opened[k] >= 0)
                close(opened[k]);
    } else if (run_pipeline(p, pl, &rp, pr, ctx, o, status, err) < 0) {
        ret = -1;
        goto out;
    }
    if (rp.bang)
        *status = !*status;
out:
    for (size_t i = 0; i < rp.n; i++) {
        strvec_clear(&pr[i].argv);
        strvec_clear(&pr[i].env);
        if (pr[i].cwd_fd >= 0)
            close(pr[i].cwd_fd);
    }
    route_rpipe_release(&rp);
    strbuf_release(&why);
    strbuf_release(&hooks);
    return ret;
}
