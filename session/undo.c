/*
 * `sbx log` and `sbx undo` (docs/undo.md). The undo's writes on the host are the journal's
 * (sync/journal.c: *at() calls beneath held fds); this file chooses what to undo, shows it,
 * asks, and then has the sandbox match (a sync round through the holder, when one runs).
 *
 * `sbx log` reads the audit log (the state root's audit.jsonl and its rotated files, oldest
 * first): sbxsh's "line" records (the line, its parts' routes, the host commands, statuses)
 * and the holder's "pull"/"undo" records (a journal entry's files), which precede the line
 * they belong to. Names in them came from the sandbox: everything printed goes through
 * sbx_sanitize (or, with --json, sbx_json_for_terminal).
 */
#include "session/undo.h"
#include "session/session.h"
#include "common/audit.h"
#include "common/json.h"
#include "common/report.h"
#include "common/strbuf.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char session_usage_log[] =
    "usage: sbx log [--session S] [--json] [--host] [-n N]\n"
    "\n"
    "The session's commands, newest first, from the audit log: the line, when, its exit\n"
    "status, each part's route, and the files the sandbox's changes added, modified or\n"
    "deleted on the host, with the journal ids `sbx undo` takes.\n"
    "\n"
    "  --host        what ran on the host instead: each argv as executed, its directory,\n"
    "                its environment's names and its exit status\n"
    "  --json        one JSON array\n"
    "  -n N          the N newest only\n";

const char session_usage_undo[] =
    "usage: sbx undo [--session S] [N | --to ID] [--force] [--yes]\n"
    "\n"
    "Puts the host's files back as they were before the last N journaled commands (default\n"
    "1), or before command ID and every later one (`sbx log` shows the ids), then makes the\n"
    "sandbox match. An undo is journaled itself: undoing it again redoes. At a terminal it\n"
    "shows what it will change and asks.\n"
    "\n"
    "  --force       undo files the host changed since as well (else it refuses, naming them)\n"
    "  --yes         do not ask\n"
    "\n"
    "exit status: 0 done, 1 refused or declined, 125 sbx's own failure.\n";

/* ---- the audit records of journal entries -------------------------------------------------- */

void session_audit_journal(const sbx_config *cfg, const jnl_entry *e)
{
    strbuf rec = STRBUF_INIT;
    sbx_json j;
    sbx_err err;
    sbx_json_init(&j, &rec);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_int(&j, "time", (long long)e->time);
    sbx_json_str(&j, "type", e->kind);
    sbx_json_str(&j, "session", cfg->session);
    sbx_json_uint(&j, "journal", e->id);
    sbx_json_str(&j, "line", e->label);
    sbx_json_begin_arr(&j, "files");
    for (size_t i = 0; i < e->n; i++) {
        const jnl_change *c = &e->changes[i];
        strbuf path = STRBUF_INIT;
        strbuf_addf(&path, "%s/%s", c->root, c->path);
        sbx_json_begin_obj(&j, NULL);
        sbx_json_str(&j, "path", path.buf);
        sbx_json_str(&j, "change", c->old.type == '-'   ? "added"
                                   : c->cur.type == '-' ? "deleted"
                                                        : "modified");
        if (c->cur.type == 'f')
            sbx_json_uint(&j, "size", c->cur.size);
        else if (c->old.type == 'f')
            sbx_json_uint(&j, "size", c->old.size);
        sbx_json_end(&j);
        strbuf_release(&path);
    }
    sbx_json_end(&j);
    sbx_json_end(&j);
    if (sbx_audit_append(cfg->state_root, cfg->audit_max, rec.buf, rec.len, &err) < 0)
        sbx_report("sbx", "warning: %s", err.msg);
    strbuf_release(&rec);
}

/* ---- shared ---------------------------------------------------------------------------- */

static void load(sbx_config *cfg, const char *session)
{
    sbx_err err;
    sbx_config_opts o = { .session = session };
    if (session_config_load(cfg, &o, &err) < 0) {
        sbx_report("sbx", "%s", err.msg);
        exit(SBX_EXIT_INTERNAL);
    }
}

/* text, sanitized, to f */
static void put_shown(FILE *f, const char *text)
{
    strbuf sb = STRBUF_INIT;
    sbx_sanitize(&sb, text, strlen(text));
    fputs(sb.buf, f);
    strbuf_release(&sb);
}

static void when(char *buf, size_t n, double t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    localtime_r(&tt, &tm);
    strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
}

/* ---- sbx log ------------------------------------------------------------------------------ */

/* The session's audit records, oldest first (rotated files first). */
static cJSON *read_audit(const sbx_config *cfg)
{
    cJSON *all = cJSON_CreateArray();
    for (int k = SBX_AUDIT_KEEP; k >= 0; k--) {
        char *path = k ? xasprintf("%s/" SBX_AUDIT_FILE ".%d", cfg->state_root, k)
                       : xasprintf("%s/" SBX_AUDIT_FILE, cfg->state_root);
        char *buf = NULL;
        size_t len = 0;
        sbx_err err;
        if (read_file(path, (size_t)1 << 30, &buf, &len, &err) == 0) {
            for (char *p = buf, *end = buf + len; p < end;) {
                char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
                cJSON *o = cJSON_ParseWithLength(p, n);
                const cJSON *s = o ? cJSON_GetObjectItemCaseSensitive(o, "session") : NULL;
                if (cJSON_IsString(s) && !strcmp(s->valuestring, cfg->session))
                    cJSON_AddItemToArray(all, o);
                else
                    cJSON_Delete(o);
                p += n + 1;
            }
        }
        free(buf);
        free(path);
    }
    return all;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* A pull or undo record standing alone, as a command. */
static cJSON *alone(const cJSON *r, const char *type)
{
    cJSON *c = cJSON_CreateObject(), *ps = cJSON_CreateArray();
    cJSON_AddNumberToObject(c, "time", jnum(r, "time", 0));
    cJSON_AddStringToObject(c, "type", type);
    cJSON_AddStringToObject(c, "line", jstr(r, "line") ? jstr(r, "line") : "");
    cJSON_AddItemToArray(ps, cJSON_Duplicate(r, true));
    cJSON_AddItemToObject(c, "pulls", ps);
    return c;
}

/* The commands, newest first: each "line" record with the pull records before it (since the
 * session's previous line) as its "pulls"; pulls no line followed (sbx exec, a line still
 * running) and undos stand alone. */
static cJSON *commands(cJSON *recs)
{
    cJSON *out = cJSON_CreateArray(), *pending = cJSON_CreateArray(), *r;
    cJSON_ArrayForEach(r, recs) {
        const char *type = jstr(r, "type");
        if (!type)
            continue;
        if (!strcmp(type, "pull")) {
            cJSON_AddItemToArray(pending, cJSON_Duplicate(r, true));
        } else if (!strcmp(type, "line")) {
            cJSON *c = cJSON_Duplicate(r, true);
            cJSON_AddItemToObject(c, "pulls", pending);
            pending = cJSON_CreateArray();
            cJSON_InsertItemInArray(out, 0, c);
        } else if (!strcmp(type, "undo")) {
            cJSON *p;
            cJSON_ArrayForEach(p, pending)
                cJSON_InsertItemInArray(out, 0, alone(p, "pull"));
            cJSON_Delete(pending);
            pending = cJSON_CreateArray();
            cJSON_InsertItemInArray(out, 0, alone(r, "undo"));
        }
    }
    cJSON_ArrayForEach(r, pending)
        cJSON_InsertItemInArray(out, 0, alone(r, "pull"));
    cJSON_Delete(pending);
    return out;
}

static void print_command(const cJSON *c)
{
    char t[32];
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(c, "parts"), *p, *pulls, *pl, *f;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "status");
    strbuf ids = STRBUF_INIT;
    pulls = cJSON_GetObjectItemCaseSensitive(c, "pulls");
    cJSON_ArrayForEach(pl, pulls)
        strbuf_addf(&ids, "%s%.0f", ids.len ? "," : "", jnum(pl, "journal", 0));
    when(t, sizeof(t), jnum(c, "time", 0));
    printf("%-6s %s  ", ids.len ? ids.buf : "-", t);
    if (cJSON_IsNumber(st))
        printf("exit %-3d ", st->valueint);
    else
        printf("%-8s ", jstr(c, "type") ? jstr(c, "type") : "");
    put_shown(stdout, jstr(c, "line") ? jstr(c, "line") : "");
    putchar('\n');
    cJSON_ArrayForEach(p, parts) {
        printf("       %-8s ", jstr(p, "route") ? jstr(p, "route") : "?");
        put_shown(stdout, jstr(p, "reason") ? jstr(p, "reason") : "");
        putchar('\n');
    }
    cJSON_ArrayForEach(pl, pulls) {
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(pl, "files")) {
            const cJSON *sz = cJSON_GetObjectItemCaseSensitive(f, "size");
            printf("       %-8s ", jstr(f, "change") ? jstr(f, "change") : "?");
            put_shown(stdout, jstr(f, "path") ? jstr(f, "path") : "");
            if (cJSON_IsNumber(sz))
                printf(" (%.0f bytes)", sz->valuedouble);
            putchar('\n');
        }
    }
    strbuf_release(&ids);
}

static void print_host(const cJSON *c)
{
    const cJSON *p, *cmd, *w;
    char t[32];
    when(t, sizeof(t), jnum(c, "time", 0));
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c, "parts")) {
        cJSON_ArrayForEach(cmd, cJSON_GetObjectItemCaseSensitive(p, "commands")) {
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(cmd, "status");
            strbuf line = STRBUF_INIT;
            printf("%s  ", t);
            if (cJSON_IsNumber(st))
                printf("exit %-3d ", st->valueint);
            cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(cmd, "argv"))
                if (cJSON_IsString(w))
                    strbuf_addf(&line, "%s%s", line.len ? " " : "", w->valuestring);
            put_shown(stdout, line.buf);
            printf("  (in ");
            put_shown(stdout, jstr(cmd, "cwd") ? jstr(cmd, "cwd") : "?");
            printf(")\n");
            strbuf_release(&line);
        }
    }
}

int session_sbx_log(int argc, char **argv)
{
    enum { O_SESSION = 1, O_JSON, O_HOST, O_HELP };
    static const struct option longs[] = {
        { "session", required_argument, NULL, O_SESSION }, { "json", no_argument, NULL, O_JSON },
        { "host", no_argument, NULL, O_HOST }, { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 },
    };
    const char *session = NULL;
    bool json = false, host = false;
    long max = -1;
    int c;
    sbx_config cfg;
    cJSON *recs, *cmds, *it;

    optind = 1;
    while ((c = getopt_long(argc, argv, "hn:", longs, NULL)) != -1) {
        switch (c) {
        case O_SESSION: session = optarg; break;
        case O_JSON: json = true; break;
        case O_HOST: host = true; break;
        case 'n': {
            char *end;
            max = strtol(optarg, &end, 10);
            if (*end || max < 0) {
                fputs(session_usage_log, stderr);
                return 2;
            }
            break;
        }
        case O_HELP: case 'h': fputs(session_usage_log, stdout); return 0;
        default: fputs(session_usage_log, stderr); return 2;
        }
    }
    if (optind != argc) {
        fputs(session_usage_log, stderr);
        return 2;
    }
    load(&cfg, session);
    recs = read_audit(&cfg);
    cmds = commands(recs);
    if (host) {
        /* only the lines that ran something on the host */
        cJSON *keep = cJSON_CreateArray();
        cJSON_ArrayForEach(it, cmds) {
            const cJSON *p;
            bool any = false;
            cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(it, "parts"))
                any |= cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "commands")) > 0;
            if (any)
                cJSON_AddItemReferenceToArray(keep, it);
        }
        cJSON *dup = cJSON_Duplicate(keep, true);
        cJSON_Delete(keep);
        cJSON_Delete(cmds);
        cmds = dup;
    }
    while (max >= 0 && cJSON_GetArraySize(cmds) > max)
        cJSON_DeleteItemFromArray(cmds, cJSON_GetArraySize(cmds) - 1);
    if (json) {
        char *text = cJSON_PrintUnformatted(cmds);
        strbuf shown = STRBUF_INIT;
        sbx_json_for_terminal(&shown, text, strlen(text));
        printf("%s\n", shown.buf);
        strbuf_release(&shown);
        free(text);
    } else {
        if (!cJSON_GetArraySize(cmds))
            fprintf(stderr, "sbx log: nothing %s in session '%s' (the audit log: %s/%s%s)\n",
                    host ? "ran on the host" : "logged", cfg.session, cfg.state_root,
                    SBX_AUDIT_FILE, cfg.audit_max ? "" : ", off: AGENT_SANDBOX_AUDIT_MAX=0");
        cJSON_ArrayForEach(it, cmds) {
            if (host)
                print_host(it);
            else
                print_command(it);
        }
    }
    cJSON_Delete(cmds);
    cJSON_Delete(recs);
    session_config_free(&cfg);
    return 0;
}

/* ---- sbx undo ----------------------------------------------------------------------------- */

typedef struct undo_ctx {
    const sbx_config *cfg;
} undo_ctx;

static void undo_warn(void *ctx, const char *msg)
{
    (void)ctx;
    sbx_report("sbx", "%s", msg);
}

static void undo_notify(void *ctx, const jnl_entry *e)
{
    undo_ctx *u = ctx;
    session_audit_journal(u->cfg, e);
}

static const char *what(const jnl_step *s)
{
    if (s->target.type == '-')
        return "remove";
    if (s->now == '-')
        return "restore";
    return s->target.type == 'd' ? "keep" : "put back";
}

static void print_plan(FILE *f, const jnl_plan *p, bool conflicts_only)
{
    for (size_t i = 0; i < p->n; i++) {
        const jnl_step *s = &p->v[i];
        if (conflicts_only && !s->conflict)
            continue;
        if (!conflicts_only && s->target.type == 'd' && s->now == 'd')
            continue;
        fprintf(f, "  %-9s ", conflicts_only ? "changed" : what(s));
        put_shown(f, s->root);
        fputc('/', f);
        put_shown(f, s->path);
        if (s->conflict) {
            fputs(": ", f);
            put_shown(f, s->conflict);
        }
        fputc('\n', f);
    }
}

static bool ask(void)
{
    char buf[16];
    fprintf(stderr, "Undo these changes? [y/N] ");
    fflush(stderr);
    if (!fgets(buf, sizeof(buf), stdin))
        return false;
    return buf[0] == 'y' || buf[0] == 'Y';
}

/* The distinct roots of the entries, opened (a code directory of the session, recorded by
 * its holder: the state directory is ours). */
static size_t open_roots(const jnl_log *l, jnl_root *roots, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        for (size_t k = 0; k < l->v[i].n; k++) {
            const char *r = l->v[i].changes[k].root;
            bool seen = false;
            for (size_t q = 0; q < n; q++)
                seen |= !strcmp(roots[q].base, r);
            if (seen || n == max)
                continue;
            roots[n].base = r;
            roots[n].fd = open(r, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (roots[n].fd >= 0)
                n++;
        }
    return n;
}

int session_sbx_undo(int argc, char **argv)
{
    enum { O_SESSION = 1, O_TO, O_FORCE, O_YES, O_HELP };
    static const struct option longs[] = {
        { "session", required_argument, NULL, O_SESSION }, { "to", required_argument, NULL, O_TO },
        { "force", no_argument, NULL, O_FORCE }, { "yes", no_argument, NULL, O_YES },
        { "help", no_argument, NULL, O_HELP }, { NULL, 0, NULL, 0 },
    };
    const char *session = NULL, *to = NULL;
    bool force = false, yes = false;
    unsigned long long count = 1, to_id = 0;
    int c, rc = 0, sfd;
    sbx_config cfg;
    sbx_err err;
    jnl *j = NULL;
    jnl_log l;
    jnl_plan plan;
    jnl_root roots[64];
    size_t nroots, failed = 0;
    uint64_t from;
    char *dir;
    undo_ctx u;

    optind = 1;
    while ((c = getopt_long(argc, argv, "+hy", longs, NULL)) != -1) {
        switch (c) {
        case O_SESSION: session = optarg; break;
        case O_TO: to = optarg; break;
        case O_FORCE: force = true; break;
        case O_YES: case 'y': yes = true; break;
        case O_HELP: case 'h': fputs(session_usage_undo, stdout); return 0;
        default: fputs(session_usage_undo, stderr); return 2;
        }
    }
    if (argc - optind > 1 || (to && optind < argc)) {
        fputs(session_usage_undo, stderr);
        return 2;
    }
    if (optind < argc || to) {
        const char *v = to ? to : argv[optind];
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end || !*v || errno || n == 0 || v[0] == '-') {
            sbx_report("sbx", "undo: '%s' is not a %s", v, to ? "journal id (sbx log shows them)"
                                                              : "number of commands");
            return 2;
        }
        if (to)
            to_id = n;
        else
            count = n;
    }
    load(&cfg, session);
    u.cfg = &cfg;
    dir = session_state_dir(&cfg);
    sfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0 || jnl_open(sfd, cfg.undo_max ? cfg.undo_max : JNL_DEFAULT_MAX, &j, &err) < 0) {
        sbx_report("sbx", "undo: session '%s' has no undo journal (nothing was pulled yet%s)",
                   cfg.session, cfg.undo_max ? "" : ", or AGENT_SANDBOX_UNDO_MAX=0");
        if (sfd >= 0)
            close(sfd);
        free(dir);
        session_config_free(&cfg);
        return 1;
    }
    close(sfd);
    free(dir);
    jnl_set_notify(j, undo_notify, &u);
    if (jnl_read(j, &l, &err) < 0) {
        sbx_report("sbx", "undo: %s", err.msg);
        rc = SBX_EXIT_INTERNAL;
        goto out_j;
    }
    if (!l.n) {
        sbx_report("sbx", "undo: nothing to undo in session '%s'", cfg.session);
        rc = 1;
        goto out_l;
    }
    if (to) {
        bool found = false;
        for (size_t i = 0; i < l.n; i++)
            found |= l.v[i].id == to_id;
        if (!found) {
            sbx_report("sbx", "undo: no journal entry %llu (sbx log shows them; the oldest left "
                       "is %" PRIu64 ")", to_id, l.v[0].id);
            rc = 1;
            goto out_l;
        }
        from = to_id;
    } else {
        if (count > l.n) {
            sbx_report("sbx", "undo: the journal holds %zu entr%s, not %llu", l.n,
                       l.n == 1 ? "y" : "ies", count);
            rc = 1;
            goto out_l;
        }
        from = l.v[l.n - count].id;
    }
    nroots = open_roots(&l, roots, 64);
    if (jnl_plan_make(j, roots, nroots, from, l.v[l.n - 1].id, &plan, &err) < 0) {
        sbx_report("sbx", "undo: %s", err.msg);
        rc = SBX_EXIT_INTERNAL;
        goto out_roots;
    }
    if (plan.conflicts && !force) {
        fprintf(stderr, "sbx: undo refused: the host changed %s since (sbx undo --force undoes "
                "them too):\n", plan.conflicts == 1 ? "this file" : "these files");
        print_plan(stderr, &plan, true);
        rc = 1;
        goto out_plan;
    }
    if (!yes && isatty(0) && isatty(2)) {
        fprintf(stderr, "sbx undo: journal entr%s ", strchr(plan.ids.buf, ',') ? "ies" : "y");
        put_shown(stderr, plan.ids.buf);
        fputs(":\n", stderr);
        print_plan(stderr, &plan, false);
        if (!ask()) {
            fprintf(stderr, "sbx undo: nothing changed\n");
            rc = 1;
            goto out_plan;
        }
    }
    if (jnl_apply(j, roots, nroots, &plan, force, undo_warn, NULL, &failed, &err) < 0) {
        if (plan.conflicts) {
            fprintf(stderr, "sbx: undo refused: the host changed %s since (sbx undo --force "
                    "undoes them too):\n", plan.conflicts == 1 ? "this file" : "these files");
            print_plan(stderr, &plan, true);
            rc = 1;
        } else {
            sbx_report("sbx", "undo: %s", err.msg);
            rc = SBX_EXIT_INTERNAL;
        }
        goto out_plan;
    }
    {
        size_t changed = 0;
        for (size_t i = 0; i < plan.n; i++)
            changed += !(plan.v[i].target.type == 'd' && plan.v[i].now == 'd');
        fprintf(stderr, "sbx undo: undid journal entr%s %s: %zu path%s restored%s; `sbx undo` "
                "again redoes\n", strchr(plan.ids.buf, ',') ? "ies" : "y", plan.ids.buf,
                changed - (failed < changed ? failed : changed), changed == 1 ? "" : "s",
                failed ? " (some could not be: see above)" : "");
    }
    /* The sandbox matches: a sync round through the holder pushes what the undo wrote (no
     * holder: the next command's push does). */
    {
        sbx_open_opts no = { .no_start = true };
        sbx_session *s = NULL;
        if (session_open(&cfg, &no, &s, &err) == 0) {
            session_label(s, "sbx undo");
            if (session_sync(s, &err) < 0)
                sbx_report("sbx", "undo: the sandbox was not updated (%s); the next command "
                           "updates it", err.msg);
        }
        session_close(s);
    }
    if (failed)
        rc = 1;
out_plan:
    jnl_plan_free(&plan);
out_roots:
    for (size_t i = 0; i < nroots; i++)
        close(roots[i].fd);
out_l:
    jnl_log_free(&l);
out_j:
    jnl_free(j);
    session_config_free(&cfg);
    return rc;
}
