/*
 * sbx: manage sbxsh sessions and run commands in their sandboxes.
 *
 *   sbx exec [--session S] [--keep] [--tty] [--] CMD [ARG...]
 *   sbx release [--session S]
 *   sbx status [--session S] [--json]
 *   sbx ls [--json]
 *   sbx doctor
 *   sbx policy show|check [FILE]   (run by the sbxsh beside sbx: cli/policy.c)
 *   sbx log [--session S] [--json] [--host] [-n N]       (session/undo.c)
 *   sbx undo [--session S] [N | --to ID] [--force] [--yes]
 *   sbx NAME ...       a backend's own commands (its class's commands: render-pool)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <stdarg.h>

#include "common/version.h"
#include "common/json.h"
#include "common/run.h"
#include "common/strbuf.h"
#include "common/strvec.h"
#include "session/backend.h"
#include "session/config.h"
#include "common/fsutil.h"
#include "session/session.h"
#include "session/undo.h"

/* sbx --help: the head, each backend's commands, the middle, AGENT_SANDBOX_BACKEND's
 * line with the backends built, each backend's variables, the tail. */
static const char usage_head[] =
    "usage: sbx COMMAND [OPTIONS]\n"
    "\n"
    "Manage sbxsh sessions: each session has a sandbox (gVisor's runsc, or bubblewrap)\n"
    "holding a synced copy of the code directories, kept warm by a session holder.\n"
    "\n"
    "commands:\n"
    "  exec [--session S] [--keep] [--tty] [--] CMD [ARG...]\n"
    "                   run CMD in a sandbox with the code synced both ways; without\n"
    "                   --keep, in a fresh sandbox released afterwards\n"
    "  release [--session S]\n"
    "                   pull the sandbox's last changes, then stop and delete it\n"
    "  status [--session S] [--json]\n"
    "                   show a session: holder, sandbox, agent, sync counters\n"
    "  ls [--json]      list the sessions on this machine\n"
    "  log [--json] [--host]\n"
    "                   the session's commands and the files each changed (docs/undo.md)\n"
    "  undo [N | --to ID] [--force] [--yes]\n"
    "                   put back what the last N sandbox commands changed on the host\n"
    "  doctor           check the runtime, user namespaces, the agent and the\n"
    "                   directories, and say what to fix\n"
    "  policy show | check [FILE]\n"
    "                   the host-command policy: print the rules, or check the files\n"
    "  mcp [--session S] [--cwd DIR]\n"
    "                   serve the Model Context Protocol on stdin and stdout, for an\n"
    "                   agent or an editor (its tool execute_command runs lines as sbxsh)\n";
static const char usage_middle[] =
    "\n"
    "  --help, --version\n"
    "                   this text; sbx's version (sbxsh's, which it comes with)\n"
    "\n"
    "Run `sbx COMMAND --help` for a command's options. The session defaults to the one\n"
    "sbxsh uses here: AGENT_SANDBOX_SESSION, else named after the code directories\n"
    "(AGENT_SANDBOX_CODE_DIRS, else the git top level, else the current directory) and\n"
    "the state directory (so different HOMEs never share a session).\n"
    "\n"
    "environment:\n"
    "  AGENT_SANDBOX_SESSION          session name\n"
    "  AGENT_SANDBOX_CODE_DIRS        code directories, colon-separated\n";
static const char usage_tail[] =
    "  AGENT_SANDBOX_IDLE_TIMEOUT     release after this long unused (default 30m; 0: never)\n"
    "  AGENT_SANDBOX_FORWARD_ENV      host variables the sandbox gets, comma-separated\n"
    "  AGENT_SANDBOX_SYNC_PATHS, AGENT_SANDBOX_TASK_FILES, AGENT_SANDBOX_CREATE_PATHS,\n"
    "  AGENT_SANDBOX_SYNC_EXCLUDE\n"
    "                                 more to sync, colon-separated (see sbxsh(1))\n"
    "  AGENT_SANDBOX_STATE_DIR        sandboxes' files (default ~/.local/state/sbxsh)\n"
    "  AGENT_SANDBOX_UNDO_MAX         the undo journal's bound (default a quarter of\n"
    "                                 AGENT_SANDBOX_DISK_MAX; 0: no journal)\n"
    "  AGENT_SANDBOX_AUDIT_MAX        the audit log's size before it rotates (default 16M;\n"
    "                                 0: none)\n"
    "  AGENT_SANDBOX_AGENT            the sbx-agent binary to use\n"
    "\n"
    "exit status: sbx exec gives the command's (128+n for a signal, 126/127 when it cannot\n"
    "run); 125 is sbx's own failure (no runtime, sandbox died, sync refused).\n";

static void print_usage(FILE *f)
{
    fputs(usage_head, f);
    for (size_t i = 0; session_backend_classes[i]; i++)
        for (const sbx_backend_command *c = session_backend_classes[i]->commands; c && c->name; c++)
            fputs(c->help, f);
    fputs(usage_middle, f);
    fprintf(f, "  %-30s ", "AGENT_SANDBOX_BACKEND");
    for (size_t i = 0; session_backend_classes[i]; i++)
        fprintf(f, "%s%s%s", i ? " | " : "", session_backend_classes[i]->name,
                i ? "" : " (default)");
    fputc('\n', f);
    for (size_t i = 0; session_backend_classes[i]; i++)
        if (session_backend_classes[i]->help_env)
            fputs(session_backend_classes[i]->help_env, f);
    fputs(usage_tail, f);
}

static const char usage_exec[] =
    "usage: sbx exec [--session S] [--keep] [--tty] [--] CMD [ARG...]\n"
    "\n"
    "Runs CMD (looked up in the sandbox's PATH) in the session's sandbox, at the current\n"
    "directory's path, which must lie in a code directory. The code directories are\n"
    "pushed before and pulled back after; stdin, stdout and stderr are relayed.\n"
    "\n"
    "  --session S   the session (default: as sbxsh would name it here)\n"
    "  --keep        run in the session's sandbox, starting it if needed, and keep it;\n"
    "                without --keep the sandbox is a fresh one, released afterwards\n"
    "                (with --session, that session must not exist yet)\n"
    "  --tty         run on a terminal (stdin and stdout must be terminals)\n"
    "  --help        this text\n";

static const char usage_release[] =
    "usage: sbx release [--session S] [--timeout DURATION] [--force]\n"
    "\n"
    "Pulls the sandbox's last changes back (background processes' too), stops the\n"
    "sandbox, deletes its copies and private home, and ends the session's holder.\n"
    "\n"
    "  --timeout DURATION  wait at most this long for the holder (default 60s; 0: no limit)\n"
    "  --force             do not ask the holder: kill it and the sandbox by pid and\n"
    "                      delete the session's state (the last changes are not pulled)\n";

static const char usage_status[] =
    "usage: sbx status [--session S] [--json]\n"
    "\n"
    "Shows the session: its holder, sandbox (runtime, id, created, alive; for kube the\n"
    "claim, sandbox, pod, node, pool and expiry), agent and sync counters. Exit status 1\n"
    "when the session does not exist.\n";

static const char usage_ls[] =
    "usage: sbx ls [--json]\n"
    "\n"
    "Lists the sessions that have a holder or a sandbox on this machine.\n";

static const char usage_doctor[] =
    "usage: sbx doctor\n"
    "\n"
    "Checks what sbxsh needs here: a sandbox runtime that starts, user namespaces, the\n"
    "agent binary, the state and runtime directories, and with AGENT_SANDBOX_BACKEND=kube\n"
    "the cluster: kubeconfig, server, identity, each verb sbxsh needs, the pool and its\n"
    "runtime class. Each problem says what to do. Then, when nothing failed, it starts a\n"
    "sandbox as sbxsh would here (without the code), runs true in it and releases it.\n"
    "Exit status 1 when something must be fixed.\n";

static void die125(const char *msg) SBX_NORETURN;
static void die125(const char *msg)
{
    sbx_report("sbx", "%s", msg);
    exit(SBX_EXIT_INTERNAL);
}

/* Options every subcommand shares; returns the index of the first operand. */
static int parse_opts(int argc, char **argv, const char *usage, const char **session,
                      bool *keep, bool *json, bool *tty)
{
    enum { O_SESSION = 1, O_KEEP, O_JSON, O_TTY, O_HELP };
    static const struct option longs[] = {
        { "session", required_argument, NULL, O_SESSION },
        { "keep", no_argument, NULL, O_KEEP },
        { "json", no_argument, NULL, O_JSON },
        { "tty", no_argument, NULL, O_TTY },
        { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 },
    };
    int c;
    optind = 1;
    /* "+": stop at the first operand, so that CMD's own options stay its. */
    while ((c = getopt_long(argc, argv, "+h", longs, NULL)) != -1) {
        switch (c) {
        case O_SESSION: if (session) { *session = optarg; break; } goto bad;
        case O_KEEP: if (keep) { *keep = true; break; } goto bad;
        case O_JSON: if (json) { *json = true; break; } goto bad;
        case O_TTY: if (tty) { *tty = true; break; } goto bad;
        case O_HELP: case 'h':
            fputs(usage, stdout);
            exit(0);
        default:
        bad:
            fputs(usage, stderr);
            exit(2);
        }
    }
    return optind;
}

static void load_config(sbx_config *cfg, const char *session)
{
    sbx_err err;
    sbx_config_opts o = { .session = session };
    if (session_config_load(cfg, &o, &err) < 0)
        die125(err.msg);
}

static bool path_inside(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(p, dir, n) && (p[n] == '\0' || p[n] == '/');
}

/* ---- exec -------------------------------------------------------------- */

/* Without --keep: makes cfg a session of our own, unless one was named
 * (then it must not exist yet, so that we never release someone else's).
 * Returns -1 (having said why) when the named session exists. */
static int fresh_session(sbx_config *cfg, bool named)
{
    sbx_open_opts no = { .no_start = true, .any_shape = true };
    sbx_session *probe = NULL;
    strbuf js = STRBUF_INIT;
    sbx_err err;
    char *dir;
    int r = 0;

    if (!named) {
        char *name = xasprintf("%.40s-exec-%d", cfg->session, (int)getpid());
        free(cfg->session);
        cfg->session = name;
    }
    dir = session_state_dir(cfg);
    if (session_backend_peek(dir, &js) == 0 || session_open(cfg, &no, &probe, &err) == 0) {
        fprintf(stderr, "sbx: session '%s' exists already; use --keep to run in it, or "
                "`sbx release --session %s` first\n", cfg->session, cfg->session);
        r = -1;
    }
    session_close(probe);
    strbuf_release(&js);
    free(dir);
    return r;
}

/* sbx exec: runs one command in the session's sandbox with our stdio relayed
 * (a pty with --tty); without --keep in a session of its own, released
 * afterwards, so a one-off command leaves nothing behind. */
static int cmd_exec(int argc, char **argv)
{
    const char *session = NULL;
    bool keep = false, tty = false;
    int first = parse_opts(argc, argv, usage_exec, &session, &keep, NULL, &tty);
    sbx_config cfg;
    sbx_session *s = NULL;
    sbx_err err;
    sbx_exit st;
    char here[PATH_MAX], cwd[PATH_MAX];
    strvec env = STRVEC_INIT;
    bool inside = false;
    int rc = SBX_EXIT_INTERNAL;

    if (first >= argc) {
        fputs(usage_exec, stderr);
        return 2;
    }
    load_config(&cfg, session);
    if (!getcwd(here, sizeof(here)) || !realpath(here, cwd)) {
        fprintf(stderr, "sbx: cannot read the current directory: %s\n", strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < cfg.code_dirs.n; i++)
        inside |= path_inside(cwd, cfg.code_dirs.v[i]);
    /* no code directory (in ~, /tmp): the command runs in the sandbox's own tree */
    if (!inside && cfg.code_dirs.n) {
        sbx_report("sbx", "the current directory %s is outside the code directories (%s); "
                   "cd into one, or set AGENT_SANDBOX_CODE_DIRS", cwd, cfg.code_dirs.v[0]);
        goto out;
    }
    if (!(cfg.agent_path = session_find_agent(&err))) {
        fprintf(stderr, "sbx: %s\n", err.msg);
        goto out;
    }
    if (!keep && fresh_session(&cfg, session != NULL) < 0)
        goto out;
    if (session_open(&cfg, NULL, &s, &err) < 0) {
        fprintf(stderr, "sbx: %s\n", err.msg);
        goto out;
    }

    tty = tty && isatty(0) && isatty(1);
    session_sandbox_env(&cfg, tty, &env);
    sbx_fd_map fds[] = {
        { 0, SBX_FD_RELAY_IN, 0 },
        { 1, SBX_FD_RELAY_OUT, 1 },
        { 2, SBX_FD_RELAY_OUT, 2 },
    };
    sbx_command cmd = {
        .exe = argv[first],
        .argv = (const char *const *)argv + first,
        .env = (const char *const *)env.v,
        .cwd = cwd,
        .fds = fds,
        .nfds = 3,
        .tty = tty,
        .forward_signals = true,
        .filter = SBX_FILTER_AUTO,
    };
    if (session_run(s, &cmd, &st, &err) < 0) {
        fprintf(stderr, "sbx: %s\n", err.msg);
    } else if (WIFEXITED(st.wait_status)) {
        rc = WEXITSTATUS(st.wait_status);
        if (st.spawn_failed)
            sbx_report("sbx", "%s: %s", argv[first],
                       rc == 127 ? "command not found" : st.message);
    } else if (WIFSIGNALED(st.wait_status)) {
        rc = 128 + WTERMSIG(st.wait_status);
    }
    if (!keep && session_release(s, 0, &err) < 0) {
        fprintf(stderr, "sbx: cannot release the sandbox: %s\n", err.msg);
        if (rc == 0)
            rc = SBX_EXIT_INTERNAL;
    }
out:
    session_close(s);
    strvec_clear(&env);
    session_config_free(&cfg);
    return rc;
}

/* ---- release, status, ls ------------------------------------------------- */

/* The holder that holds STATE/SESSION/holder.lock (its pid is in it), killed; then the
 * sandbox, by the pid the backend recorded, and the session's files. Nothing is asked of
 * a process that may be stuck, and every wait is bounded. quiet: no word of what was done
 * (sbx doctor's probe, whose own findings say it). */
static int force_release(sbx_config *cfg, const char *dir, bool quiet)
{
    char *lockp = xasprintf("%s/holder.lock", dir), *sock = session_socket_path(cfg);
    char *log = session_log_path(cfg);
    int fd = open(lockp, O_RDWR | O_NOFOLLOW | O_CLOEXEC), rc = 0;
    bool found = false;
    sbx_err err;

    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
        char buf[32] = "";
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
        /* only the holder itself: a pid in a stale file may be anyone's now */
        if (session_pid_is_holder(pid) && kill((pid_t)pid, SIGKILL) == 0) {
            if (!quiet)
                printf("killed the holder (pid %ld)\n", pid);
            found = true;
        }
        for (int i = 0; i < 100 && flock(fd, LOCK_EX | LOCK_NB) < 0; i++)
            usleep(50000);
    }
    if (fd >= 0)
        close(fd);
    if (!cfg->agent_path && !(cfg->agent_path = session_find_agent(&err)))
        cfg->agent_path = xstrdup("/nonexistent/sbx-agent");   /* only released, never run */
    if (session_backend_adopt(dir, cfg) == 0) {
        sbx_sandbox_spec spec = { .agent_path = cfg->agent_path };
        sbx_backend *b = session_backend_new(cfg, &spec, &err);
        if (!b || b->ops->release(b, &err) < 0) {
            if (!quiet)
                fprintf(stderr, "sbx: cannot stop the sandbox: %s\n", err.msg);
            rc = SBX_EXIT_INTERNAL;
        } else {
            if (!quiet)
                printf("stopped the sandbox and deleted its state (its last changes were not "
                   "pulled)\n");
            found = true;
        }
        session_backend_free(b);
    }
    unlink(sock);
    unlink(log);
    unlink(lockp);
    /* The holder's own file, saved a moment after activity (so present or not, as the
     * kill came), and what a sandbox's last processes may still be letting go of as they
     * die: the directory goes once it is empty, waited for a bounded moment. */
    char *manifest = xasprintf("%s/host.manifest", dir), *journal = xasprintf("%s/journal", dir);
    sbx_rm_rf(journal, &err);   /* the undo journal goes with the session (docs/undo.md) */
    free(journal);
    for (int i = 0; i < 20; i++) {
        unlink(manifest);
        if (rmdir(dir) == 0 || errno != ENOTEMPTY)
            break;
        usleep(100000);
    }
    free(manifest);
    if (!found && rc == 0 && !quiet) {
        fprintf(stderr, "sbx: no session '%s' here (sbx ls lists them)\n", cfg->session);
        rc = 1;
    }
    free(lockp);
    free(sock);
    free(log);
    return rc;
}

/* sbx release: asks the holder to pull the last changes and release the
 * sandbox; with no holder, one is started for the sandbox the state records
 * (adopt), so the release still pulls first; --force kills both by pid and
 * removes the state when a holder does not answer within --timeout. */
static int cmd_release(int argc, char **argv)
{
    enum { O_SESSION = 1, O_TIMEOUT, O_FORCE, O_HELP };
    static const struct option longs[] = {
        { "session", required_argument, NULL, O_SESSION },
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "force", no_argument, NULL, O_FORCE },
        { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 },
    };
    const char *session = NULL;
    sbx_open_opts no = { .no_start = true, .any_shape = true };
    sbx_open_opts adopt = { .any_shape = true };
    sbx_config cfg;
    sbx_session *s = NULL;
    sbx_err err;
    unsigned timeout = 60;
    bool force = false;
    char *dir;
    int c, rc = 0;

    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", longs, NULL)) != -1) {
        switch (c) {
        case O_SESSION: session = optarg; break;
        case O_TIMEOUT:
            if (session_parse_duration(optarg, &timeout, &err) < 0) {
                fprintf(stderr, "sbx: --timeout: %s\n", err.msg);
                return SBX_EXIT_INTERNAL;
            }
            break;
        case O_FORCE: force = true; break;
        case O_HELP: case 'h': fputs(usage_release, stdout); return 0;
        default: fputs(usage_release, stderr); return 2;
        }
    }
    if (optind != argc) {
        fputs(usage_release, stderr);
        return 2;
    }
    load_config(&cfg, session);
    dir = session_state_dir(&cfg);
    if (force) {
        rc = force_release(&cfg, dir, false);
        goto out;
    }
    no.hello_timeout_ms = adopt.hello_timeout_ms = timeout ? timeout * 1000 : 0;
    if (session_open(&cfg, &no, &s, &err) < 0) {
        if (session_backend_adopt(dir, &cfg) < 0) {
            fprintf(stderr, "sbx: no session '%s' here (sbx ls lists them)\n", cfg.session);
            rc = 1;
            goto out;
        }
        /* A sandbox without a holder: a new holder, made for that sandbox's
         * shape, reattaches, pulls its last changes and releases it. */
        if (session_open(&cfg, &adopt, &s, &err) < 0) {
            fprintf(stderr, "sbx: %s\n", err.msg);
            rc = SBX_EXIT_INTERNAL;
            goto out;
        }
    }
    if (session_release(s, timeout, &err) < 0) {
        fprintf(stderr, "sbx: %s\n", err.msg);
        rc = SBX_EXIT_INTERNAL;
    }
out:
    session_close(s);
    free(dir);
    session_config_free(&cfg);
    return rc;
}

/* Every string of a status, sanitized in place: pod names, the backend's messages and
 * what else the sandbox or an API server chose reach the person's terminal escaped. */
static void sanitize_json_strings(cJSON *j)
{
    for (; j; j = j->next) {
        if (cJSON_IsString(j) && j->valuestring) {
            strbuf sb = STRBUF_INIT;
            sbx_sanitize(&sb, j->valuestring, strlen(j->valuestring));
            cJSON_SetValuestring(j, sb.buf);
            strbuf_release(&sb);
        }
        sanitize_json_strings(j->child);
    }
}

/* sbx status without --json: the session's JSON as a few lines for people. */
static void print_status_human(const char *json)
{
    cJSON *o = cJSON_Parse(json), *sb, *it;
    if (!o) {
        strbuf shown = STRBUF_INIT;   /* not JSON: shown sanitized */
        sbx_sanitize(&shown, json, strlen(json));
        printf("%s\n", shown.buf);
        strbuf_release(&shown);
        return;
    }
    sanitize_json_strings(o);
    it = cJSON_GetObjectItemCaseSensitive(o, "session");
    printf("session:   %s\n", cJSON_IsString(it) ? it->valuestring : "?");
    it = cJSON_GetObjectItemCaseSensitive(o, "holder_pid");
    if (cJSON_IsNumber(it))
        printf("holder:    running (pid %d)\n", (int)it->valuedouble);
    else
        printf("holder:    not running\n");
    it = cJSON_GetObjectItemCaseSensitive(o, "code_dirs");
    cJSON *d;
    cJSON_ArrayForEach(d, it)
        printf("code dir:  %s\n", cJSON_IsString(d) ? d->valuestring : "?");
    sb = cJSON_GetObjectItemCaseSensitive(o, "sandbox");
    if (cJSON_IsObject(sb)) {
        cJSON *rt = cJSON_GetObjectItemCaseSensitive(sb, "runtime");
        cJSON *id = cJSON_GetObjectItemCaseSensitive(sb, "id");
        cJSON *alive = cJSON_GetObjectItemCaseSensitive(sb, "alive");
        cJSON *created = cJSON_GetObjectItemCaseSensitive(sb, "created");
        cJSON *net = cJSON_GetObjectItemCaseSensitive(sb, "network");
        char when[64] = "?";
        if (cJSON_IsNumber(created)) {
            time_t t = (time_t)created->valuedouble;
            strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
        }
        printf("sandbox:   %s %s, %s, created %s, network %s\n",
               cJSON_IsString(rt) ? rt->valuestring : "?",
               cJSON_IsString(id) ? id->valuestring : "?",
               cJSON_IsTrue(alive) ? "running" : "stopped", when,
               cJSON_IsString(net) ? net->valuestring : "?");
        /* the backend's own facts (egress, limits, a pod), in its own words */
        const cJSON *be = cJSON_GetObjectItemCaseSensitive(sb, "backend");
        const sbx_backend_class *c =
            session_backend_class_find(cJSON_IsString(be) ? be->valuestring : "");
        if (c && c->describe) {
            strbuf lines = STRBUF_INIT;
            c->describe(sb, &lines);
            fputs(lines.buf, stdout);
            strbuf_release(&lines);
        }
    } else {
        printf("sandbox:   none (started by the next command)\n");
    }
    it = cJSON_GetObjectItemCaseSensitive(o, "sync");
    if (cJSON_IsObject(it)) {
        cJSON *pu = cJSON_GetObjectItemCaseSensitive(it, "pushes");
        cJSON *pl = cJSON_GetObjectItemCaseSensitive(it, "pulls");
        printf("sync:      %d pushes, %d pulls since the holder connected\n",
               cJSON_IsNumber(pu) ? (int)pu->valuedouble : 0,
               cJSON_IsNumber(pl) ? (int)pl->valuedouble : 0);
    }
    cJSON_Delete(o);
}

/* sbx status: the holder's view of the session when one runs, else what the
 * backend's state says (peek), as JSON or for people. */
static int cmd_status(int argc, char **argv)
{
    const char *session = NULL;
    bool json = false;
    int first = parse_opts(argc, argv, usage_status, &session, NULL, &json, NULL);
    sbx_open_opts no = { .no_start = true, .any_shape = true };
    sbx_config cfg;
    sbx_session *s;
    sbx_err err;
    strbuf js = STRBUF_INIT;
    int rc = 0;

    if (first != argc) {
        fputs(usage_status, stderr);
        return 2;
    }
    load_config(&cfg, session);
    if (session_open(&cfg, &no, &s, &err) == 0) {
        if (session_status(s, &js, &err) < 0) {
            fprintf(stderr, "sbx: %s\n", err.msg);
            rc = SBX_EXIT_INTERNAL;
        }
        session_close(s);
    } else {
        char *dir = session_state_dir(&cfg);
        strbuf sbjs = STRBUF_INIT;
        if (session_backend_peek(dir, &sbjs) < 0) {
            rc = 1;
        } else {
            sbx_json j;
            sbx_json_init(&j, &js);
            sbx_json_begin_obj(&j, NULL);
            sbx_json_str(&j, "session", cfg.session);
            sbx_json_null(&j, "holder_pid");
            strbuf_add(sbx_json_value(&j, "sandbox"), sbjs.buf, sbjs.len);
            sbx_json_end(&j);
        }
        strbuf_release(&sbjs);
        free(dir);
    }
    if (rc == 1 && json)
        printf("null\n");
    else if (rc == 1)
        fprintf(stderr, "sbx: no session '%s' here (sbx ls lists them)\n", cfg.session);
    else if (rc == 0 && json) {
        strbuf shown = STRBUF_INIT;     /* the sandbox's and the cluster's words in it */
        sbx_json_for_terminal(&shown, js.buf, js.len);
        printf("%s\n", shown.buf);
        strbuf_release(&shown);
    }
    else if (rc == 0)
        print_status_human(js.buf);
    strbuf_release(&js);
    session_config_free(&cfg);
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* sbx ls: every session with a state directory or a holder socket, with what
 * is known of each without starting anything. */
static int cmd_ls(int argc, char **argv)
{
    bool json = false;
    int first = parse_opts(argc, argv, usage_ls, NULL, NULL, &json, NULL);
    sbx_config cfg;
    strvec names = STRVEC_INIT;
    DIR *d;
    struct dirent *e;
    strbuf out = STRBUF_INIT;
    sbx_err err;

    if (first != argc) {
        fputs(usage_ls, stderr);
        return 2;
    }
    load_config(&cfg, NULL);
    /* Sessions are what has a socket or a state directory. */
    if ((d = opendir(cfg.run_dir))) {
        while ((e = readdir(d))) {
            size_t n = strlen(e->d_name);
            if (n > 5 && !strcmp(e->d_name + n - 5, ".sock"))
                strvec_pushn(&names, e->d_name, n - 5);
        }
        closedir(d);
    }
    if ((d = opendir(cfg.state_root))) {
        while ((e = readdir(d)))
            if (e->d_name[0] != '.' && session_name_check(e->d_name, NULL) == 0)
                strvec_push(&names, e->d_name);
        closedir(d);
    }
    qsort(names.v, names.n, sizeof(*names.v), name_cmp);
    sbx_json j;
    sbx_json_init(&j, &out);
    if (json)
        sbx_json_begin_arr(&j, NULL);
    else
        strbuf_addf(&out, "%-40s %-7s %-8s %s\n", "SESSION", "RUNTIME", "SANDBOX", "HOLDER");
    size_t shown = 0;
    for (size_t i = 0; i < names.n; i++) {
        if (i && !strcmp(names.v[i], names.v[i - 1]))
            continue;
        free(cfg.session);
        cfg.session = xstrdup(names.v[i]);
        char *dir = session_state_dir(&cfg);
        strbuf sbjs = STRBUF_INIT;
        sbx_session *s = NULL;
        sbx_open_opts no = { .no_start = true, .any_shape = true };
        bool has_sandbox = session_backend_peek(dir, &sbjs) == 0;
        long holder = 0;
        if (session_open(&cfg, &no, &s, &err) == 0) {
            holder = session_holder_pid(s);
            session_close(s);
        }
        free(dir);
        if (!has_sandbox && !holder) {
            strbuf_release(&sbjs);
            continue;
        }
        cJSON *o = has_sandbox ? cJSON_Parse(sbjs.buf) : NULL;
        cJSON *rt = cJSON_GetObjectItemCaseSensitive(o, "runtime");
        cJSON *alive = cJSON_GetObjectItemCaseSensitive(o, "alive");
        if (json) {
            sbx_json_begin_obj(&j, NULL);
            sbx_json_str(&j, "session", names.v[i]);
            sbx_json_int(&j, "holder_pid", holder);
            strbuf_addstr(sbx_json_value(&j, "sandbox"), has_sandbox ? sbjs.buf : "null");
            sbx_json_end(&j);
        } else {
            char hbuf[32] = "-";
            if (holder)
                snprintf(hbuf, sizeof(hbuf), "pid %ld", holder);
            strbuf rts = STRBUF_INIT;   /* the state's word: shown, never run */
            if (cJSON_IsString(rt))
                sbx_sanitize(&rts, rt->valuestring, strlen(rt->valuestring));
            strbuf_addf(&out, "%-40s %-7s %-8s %s\n", names.v[i],
                        cJSON_IsString(rt) ? rts.buf : "-",
                        !has_sandbox ? "none" : cJSON_IsTrue(alive) ? "running" : "stopped",
                        hbuf);
            strbuf_release(&rts);
        }
        shown++;
        cJSON_Delete(o);
        strbuf_release(&sbjs);
    }
    if (json) {
        sbx_json_end(&j);
        strbuf_addch(&out, '\n');
        strbuf shown_json = STRBUF_INIT;
        sbx_json_for_terminal(&shown_json, out.buf, out.len);
        fputs(shown_json.buf, stdout);
        strbuf_release(&shown_json);
    } else {
        fputs(out.buf, stdout);
    }
    strbuf_release(&out);
    strvec_clear(&names);
    session_config_free(&cfg);
    return 0;
}

/* ---- doctor ------------------------------------------------------------ */

static int problems, warnings;

static void finding(int level, const char *what, const char *detail, ...) SBX_PRINTF(3, 4);
/* level: 0 ok (detail on the same line), 1 note, 2 problem, 3 warning: works,
 * but weaker than it should be (detail: what to do, on the next line). */
static void finding(int level, const char *what, const char *detail, ...)
{
    static const char *const tags[] = { "ok  ", "note", "FAIL", "WARN" };
    printf("%s  %s", tags[level], what);
    if (detail) {
        va_list ap;
        va_start(ap, detail);
        printf(level ? "\n      " : " ");
        vprintf(detail, ap);
        va_end(ap);
    }
    printf("\n");
    if (level == 2)
        problems++;
    if (level == 3)
        warnings++;
}

/* The runtime and state directories must be private and the socket paths
 * short enough for sockaddr_un. */
static void doctor_dirs(sbx_config *cfg)
{
    sbx_err err;
    char *sock = session_socket_path(cfg);

    if (session_private_dir(cfg->run_dir, &err) < 0)
        finding(2, "runtime directory unusable", "%s", err.msg);
    else
        finding(0, "runtime directory (sockets):", "%s, private", cfg->run_dir);
    if (strlen(sock) + 8 >= 108)
        finding(2, "session socket paths are too long", "%s: set XDG_RUNTIME_DIR to a "
                "shorter directory", sock);
    if (session_private_dir(cfg->state_root, &err) < 0)
        finding(2, "state directory unusable", "%s", err.msg);
    else
        finding(0, "state directory (sandboxes' homes, agent sockets):", "%s, private", cfg->state_root);
    free(sock);
}

/* The agent binary every backend mounts or copies into its sandbox. */
static void doctor_agent(void)
{
    sbx_err err;
    char *agent = session_find_agent(&err);
    if (!agent) {
        finding(2, "sbx-agent not found", "%s", err.msg);
        return;
    }
    const char *base = strrchr(agent, '/') + 1;
    finding(0, "sbx-agent:", "%s%s", agent, strcmp(base, "sbx-agent-static") ?
            " (dynamic: the sandbox's /usr libraries must match; `make` builds "
            "sbx-agent-static)" : "");
    free(agent);
}

/* Whether `git config SCOPE --get safe.bareRepository` says explicit. */
static bool git_config_explicit(const char *git, const char *scope)
{
    /* git config SCOPE --get safe.bareRepository, from the git found (common/run.h) */
    char *argv[] = { "git", "config", (char *)scope, "--get", "safe.bareRepository", NULL };
    strbuf out = STRBUF_INIT;
    sbx_run r = { .argv = argv, .file = git, .cwd_fd = -1, .max = 63 };
    sbx_err err;
    int st;
    bool yes;

    if (sbx_run_capture(&r, &out, &st, &err) < 0 || sbx_run_exit_code(st) != 0) {
        strbuf_release(&out);
        return false;
    }
    strbuf_setlen(&out, strcspn(out.buf, "\r\n"));
    yes = !strcasecmp(out.buf, "explicit");
    strbuf_release(&out);
    return yes;
}

/* Host git's own guard against a repository planted in a code directory: with
 * safe.bareRepository=explicit (git 2.38 and later) it never uses a bare repository it
 * discovers. A pull never brings one back (sync/README.md), but the person's git then
 * refuses one however it got there. Only the person's and the system's config count: git
 * ignores the setting in a repository's own. */
static void doctor_git(void)
{
    char *git = sbx_which("git");
    if (!git)
        return;
    if (git_config_explicit(git, "--global") || git_config_explicit(git, "--system"))
        finding(0, "host git uses no bare repository it discovers:",
                "safe.bareRepository=explicit");
    else
        finding(1, "host git would use a bare repository it discovers in a code directory",
                "sbxsh never lets one come back from the sandbox; for git's own guard too "
                "(git 2.38 or later), run: git config --global safe.bareRepository explicit");
    free(git);
}

/* sbx doctor: the configuration, each backend's checks (the class's doctor
 * hook), the agent and the directories; exit 1 when something must be fixed. */
/* The check that matters most: a sandbox of this configuration starts and runs a command.
 * The piecewise checks above can all pass while every command fails 125 (a runsc that
 * `runsc do` runs but that cannot start sbxsh's sandbox, a broken agent upload, a pool whose
 * pods never become ready), and "All good." must not be said then. The probe is a session
 * of its own with no code directory (nothing synced), released at once. */
static void doctor_probe(void)
{
    sbx_config cfg;
    bool have_cfg = false;
    sbx_session *s = NULL;
    sbx_err err;
    sbx_exit st;
    strvec env = STRVEC_INIT;
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    char *name = xasprintf("doctor-%d", (int)getpid());
    bool ran = false;

    if (session_config_load(&cfg, &(sbx_config_opts){ .session = name, .cwd = "/" }, &err) < 0) {
        finding(2, "cannot start a sandbox", "%s", err.msg);
        goto out;
    }
    have_cfg = true;
    if (!(cfg.agent_path = session_find_agent(&err))) {
        finding(2, "cannot start a sandbox", "%s", err.msg);
        goto out;
    }
    strvec_clear(&cfg.code_dirs);
    strvec_clear(&cfg.sync_paths);
    strvec_clear(&cfg.task_files);
    strvec_clear(&cfg.create_paths);
    if (session_open(&cfg, NULL, &s, &err) < 0) {
        finding(2, "cannot start a sandbox", "%s", err.msg);
        goto out;
    }
    session_sandbox_env(&cfg, false, &env);
    sbx_fd_map fds[] = {
        { 0, SBX_FD_RELAY_IN, null },
        { 1, SBX_FD_RELAY_OUT, null },
        { 2, SBX_FD_RELAY_OUT, null },
    };
    sbx_command cmd = {
        .exe = "true",
        .argv = (const char *const[]){ "true", NULL },
        .env = (const char *const *)env.v,
        .cwd = "/",
        .fds = fds,
        .nfds = 3,
        .filter = SBX_FILTER_AUTO,
    };
    if (session_run(s, &cmd, &st, &err) < 0)
        finding(2, "a sandbox of this configuration cannot run a command", "%s (what every "
                "sbxsh command here would fail with)", err.msg);
    else if (!WIFEXITED(st.wait_status) || WEXITSTATUS(st.wait_status) != 0)
        finding(2, "a sandbox starts, but `true` failed in it", "%s",
                st.spawn_failed ? st.message : "exit status not 0");
    else
        ran = true;
    if (session_release(s, 0, &err) == 0) {
        if (ran)
            finding(0, "a sandbox starts here and runs a command", "(%s, released)", name);
    } else {
        /* a probe that failed may leave a holder or a stopped sandbox behind: gone too */
        char *dir = session_state_dir(&cfg);
        session_close(s);
        s = NULL;
        if (force_release(&cfg, dir, true) != 0)
            finding(1, "the probe's sandbox could not be released", "%s (sbx release --force "
                    "--session %s)", err.msg, name);
        free(dir);
    }
out:
    session_close(s);
    strvec_clear(&env);
    if (have_cfg)
        session_config_free(&cfg);
    if (null >= 0)
        close(null);
    free(name);
}

static int cmd_doctor(int argc, char **argv)
{
    int first = parse_opts(argc, argv, usage_doctor, NULL, NULL, NULL, NULL);
    sbx_config cfg;
    sbx_err err;
    if (first != argc) {
        fputs(usage_doctor, stderr);
        return 2;
    }
    if (session_config_load(&cfg, NULL, &err) < 0) {
        finding(2, "configuration", "%s", err.msg);
        printf("\n1 problem to fix.\n");
        return 1;
    }
    if (cfg.code_dirs.n)
        finding(0, "session here:", "%s (code directory %s%s)", cfg.session,
                cfg.code_dirs.v[0], cfg.code_dirs.n > 1 ? ", ..." : "");
    else
        finding(0, "session here:", "%s (no code directory: %s; nothing is synced)",
                cfg.session, session_no_code_dir_reason("."));
    /* what each backend built in needs here */
    for (size_t i = 0; session_backend_classes[i]; i++)
        if (session_backend_classes[i]->doctor)
            session_backend_classes[i]->doctor(&cfg, finding);
    doctor_agent();
    doctor_dirs(&cfg);
    doctor_git();
    if (!problems)
        doctor_probe();
    else
        finding(0, "no sandbox started:", "fix the FAIL lines first");
    printf("\n%s\n", problems ? "Fix the FAIL lines above; `sudo make deps` installs the "
                                "packages." : warnings ? "Usable, but see the WARN lines "
                                "above." : "All good.");
    session_config_free(&cfg);
    return problems ? 1 : 0;
}

/* sbx policy show|check [FILE]: the host-command policy is the router's (sbxsh-policy(5)),
 * a layer this one does not link against by design, so sbx hands the words to the sbxsh
 * installed beside it (the same build), which prints them: `sbxsh --policy ...`. */
static int cmd_policy(int argc, char **argv)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 8);
    strvec args = STRVEC_INIT;

    if (n <= 0 || exe[0] != '/') {
        fprintf(stderr, "sbx: policy: cannot find sbxsh beside sbx\n");
        return 125;
    }
    exe[n] = '\0';
    strcpy(strrchr(exe, '/') + 1, "sbxsh");
    strvec_push(&args, "sbxsh");
    strvec_push(&args, "--policy");
    for (int i = 1; i < argc; i++)
        strvec_push(&args, argv[i]);
    execv(exe, args.v);
    fprintf(stderr, "sbx: policy: %s: %s\n", exe, strerror(errno));
    strvec_clear(&args);
    return 125;
}

/* ---- mcp --------------------------------------------------------------- */

/* sbx mcp: the MCP server is a program of its own, sbx-mcp (mcp/main.c), because it is
 * built on libsbxsh, a layer above this one; found as the agent is, beside this program
 * or in LIBEXECDIR. Its options are its own (sbx mcp --help). */
static int cmd_mcp(int argc, char **argv)
{
    char *prog = session_find_libexec(NULL, "sbx-mcp");
    (void)argc;
    if (!prog)
        die125("sbx-mcp not found beside sbx nor in its libexec directory; run `make` "
               "(or `make install`)");
    argv[0] = "sbx-mcp";
    execv(prog, argv);
    sbx_report("sbx", "cannot run %s: %s", prog, strerror(errno));
    free(prog);
    return SBX_EXIT_INTERNAL;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {
        { "exec", cmd_exec }, { "release", cmd_release }, { "status", cmd_status },
        { "ls", cmd_ls }, { "doctor", cmd_doctor }, { "policy", cmd_policy },
        { "mcp", cmd_mcp },
        { "log", session_sbx_log }, { "undo", session_sbx_undo },
    };

    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        print_usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("sbx (sbxsh) %s\n", SBXSH_VERSION);
        return 0;
    }
    for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].fn(argc - 1, argv + 1);
    /* then the backends' own (sbx render-pool) */
    for (size_t i = 0; session_backend_classes[i]; i++)
        for (const sbx_backend_command *c = session_backend_classes[i]->commands; c && c->name; c++)
            if (!strcmp(argv[1], c->name))
                return c->run(argc - 1, argv + 1);
    fprintf(stderr, "sbx: unknown command '%s'\n\n", argv[1]);
    print_usage(stderr);
    return 2;
}
