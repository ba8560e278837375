/*
 * sbxsh's own commands typed at its prompt: `sbx status`, `ls`, `release`
 * `doctor` and `policy show|check` run on the host, since the sandbox has no `sbx` and they
 * are about the session, which lives here. Only the program installed
 * beside the running sbxsh (route_ctx.sbx), only those subcommands, and
 * only the options sbx accepts for them, spelled exactly (sbx parses them
 * with getopt_long, which takes any unambiguous abbreviation: `--sess=x`
 * is `--session x`), so that what runs is what the line says. `sbx exec`
 * runs nothing: the line executor says how to run its command instead.
 */
#include "router/rules.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const route_sbx_sub_names[] = { "status", "ls", "release", "doctor", "exec", "--help",
                                            "policy" };

/* The options of each subcommand (session/sbx_main.c): the flags, and those
 * that take a value (as the next word or after `=`). */
static const struct {
    const char *flags[4];
    const char *valued[3];
} sbx_opts[] = {
    [SBX_STATUS] = { { "--json", "--help", "-h" }, { "--session" } },
    [SBX_LS] = { { "--json", "--help", "-h" }, { NULL } },
    [SBX_RELEASE] = { { "--force", "--help", "-h" }, { "--session", "--timeout" } },
    [SBX_DOCTOR] = { { "--help", "-h" }, { NULL } },
};

static bool in_nulled(const char *const *list, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n && list[i]; i++)
        if (strlen(list[i]) == len && !strncmp(list[i], s, len))
            return true;
    return false;
}

/* A --timeout value as session_parse_duration reads it: digits, then a unit. */
static bool duration_word(const char *v)
{
    size_t d = strspn(v, "0123456789");
    return d && d <= 9 && strspn(v + d, "smh") == strlen(v + d) && strlen(v + d) <= 1;
}

/* The program beside sbxsh: absolute, a regular executable file, and
 * neither it nor what it resolves to inside the code directories or sync
 * paths (a build of sbxsh inside the repository it works on has an `sbx`
 * the sandbox can replace). */
static int check_prog(const route_ctx *ctx, rcmd *c, strbuf *why)
{
    char real[PATH_MAX];
    struct stat st;

    if (!ctx->sbx || ctx->sbx[0] != '/') {
        strbuf_addstr(why, "sbx: no sbx is installed beside sbxsh");
        return -1;
    }
    if (stat(ctx->sbx, &st) < 0 || !S_ISREG(st.st_mode) || access(ctx->sbx, X_OK) < 0) {
        strbuf_addstr(why, "sbx: no sbx is installed beside sbxsh (");
        route_reason_add(why, ctx->sbx, strlen(ctx->sbx));
        strbuf_addch(why, ')');
        return -1;
    }
    if (!realpath(ctx->sbx, real) || route_in_synced(ctx, ctx->sbx) ||
        route_in_synced(ctx, real)) {
        strbuf_addstr(why, "sbx: the sbx beside sbxsh is inside the code directories, which "
                           "the sandbox can change");
        return -1;
    }
    c->prog = xstrdup(ctx->sbx);
    return 0;
}

int route_check_sbx(const route_ctx *ctx, rcmd *c, strbuf *why)
{
    const char *sub = c->argv.n > 1 ? c->argv.v[1] : "";
    int k;

    if (c->env.n) {
        strbuf_addstr(why, "sbx: an assignment before sbx");
        return -1;
    }
    for (k = 0; k < (int)ARRAY_SIZE(route_sbx_sub_names); k++)
        if (!strcmp(sub, route_sbx_sub_names[k]))
            break;
    if (c->argv.n < 2 || k == (int)ARRAY_SIZE(route_sbx_sub_names)) {
        strbuf_addstr(why, "sbx: only sbx status, ls, release, doctor, exec and policy are "
                           "sbxsh's own commands");
        return -1;
    }
    c->sbx_sub = k;
    if (k == SBX_HELP) {
        if (c->argv.n != 2) {
            strbuf_addstr(why, "sbx --help: with more words");
            return -1;
        }
        return check_prog(ctx, c, why);
    }
    if (k == SBX_EXEC)
        return 0;   /* nothing runs: see route_run_host */
    if (k == SBX_POLICY) {
        /* `sbx policy show`, `sbx policy check` (the policy files sbxsh reads) and their
         * --help; never `check FILE`: the host would read a file the line chose and
         * quote its lines back to the caller */
        const char *w = c->argv.n == 3 ? c->argv.v[2] : "";
        if (strcmp(w, "show") && strcmp(w, "check") && strcmp(w, "--help") && strcmp(w, "-h")) {
            strbuf_addstr(why, "sbx policy: only show, check (without a file) and --help run "
                               "on the host");
            return -1;
        }
        return check_prog(ctx, c, why);
    }
    for (size_t i = 2; i < c->argv.n; i++) {
        const char *a = c->argv.v[i], *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        const char *val = NULL;

        if (!eq && in_nulled(sbx_opts[k].flags, ARRAY_SIZE(sbx_opts[k].flags), a, nl))
            continue;
        if (!in_nulled(sbx_opts[k].valued, ARRAY_SIZE(sbx_opts[k].valued), a, nl)) {
            strbuf_addf(why, "sbx %s: ", sub);
            route_reason_add(why, a, strlen(a));
            strbuf_addstr(why, a[0] == '-' ? " is not one of its options (spelled out)"
                                           : ": it takes no operands");
            return -1;
        }
        if (eq)
            val = eq + 1;
        else if (i + 1 < c->argv.n)
            val = c->argv.v[++i];
        if (!val || !*val || val[0] == '-') {
            strbuf_addf(why, "sbx %s: %.*s without its value", sub, (int)nl, a);
            return -1;
        }
        if (!strncmp(a, "--session", nl)) {
            /* Another session is another agent's work: releasing it (or reading
             * its directories) is not this shell's to do. */
            if (!ctx->session || strcmp(val, ctx->session)) {
                strbuf_addf(why, "sbx %s --session: only this shell's own session runs on "
                                 "the host", sub);
                return -1;
            }
        } else if (!duration_word(val)) {
            strbuf_addf(why, "sbx %s --timeout: not a duration like 30s or 2m", sub);
            return -1;
        }
    }
    return check_prog(ctx, c, why);
}
