/*
 * The host-command policy for the front end: which files it comes from, loaded once per
 * process for the route context (line_route_ctx), and `sbxsh --policy show|check [FILE]`,
 * which `sbx policy` runs (sbx lives in the session layer, below the router that owns
 * the policy's parser: it execs the sbxsh installed beside it, as one program).
 *
 * The files, in order (earlier rules win): the system's $(sysconfdir)/sbxsh/policy, then
 * the person's: AGENT_SANDBOX_POLICY when set (empty: none; a named file that is missing
 * is a problem), else $XDG_CONFIG_HOME/sbxsh/policy (~/.config/sbxsh/policy). A file that
 * is refused (router/policy.c: inside the code directories, writable by others, ...) adds
 * no rule: every command it would have allowed stays in the sandbox.
 */
#include "cli/policy.h"

#include "common/report.h"
#include "common/util.h"
#include "common/strbuf.h"
#include "common/strvec.h"
#include "router/policy.h"
#include "session/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SBX_SYSCONFDIR
#define SBX_SYSCONFDIR "/usr/local/etc"
#endif

void cli_policy_paths(strvec *paths, bool *user_explicit)
{
    const char *env = getenv("AGENT_SANDBOX_POLICY");
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

    strvec_push(paths, SBX_SYSCONFDIR "/sbxsh/policy");
    *user_explicit = false;
    if (env) {
        if (*env) {
            strvec_push(paths, env);
            *user_explicit = true;
        }
    } else if (xdg && xdg[0] == '/') {
        strvec_pushf(paths, "%s/sbxsh/policy", xdg);
    } else if (home && home[0] == '/') {
        strvec_pushf(paths, "%s/.config/sbxsh/policy", home);
    }
}

/* Loads the default files into pol against ctx; 0, or -1 when any had a problem. */
static int load_defaults(route_policy *pol, const route_ctx *ctx)
{
    strvec paths = STRVEC_INIT;
    bool explicit_user;
    int ret = 0;

    cli_policy_paths(&paths, &explicit_user);
    for (size_t i = 0; i < paths.n; i++)
        if (route_policy_load(pol, paths.v[i], i == 1 && explicit_user, ctx) < 0)
            ret = -1;
    strvec_clear(&paths);
    return ret;
}

/* Once per process: the patterns are compiled once, and the problems are said once. The
 * programs were resolved and the files checked against the first context's code
 * directories; the router checks each rule's program and file again against the context
 * of every command (router/policy.c), so a later session's directories count too. */
const route_policy *cli_policy_for(const route_ctx *ctx)
{
    static route_policy *pol;
    static bool loaded;

    if (!loaded) {
        loaded = true;
        pol = route_policy_new();
        if (load_defaults(pol, ctx) < 0) {
            const char *p = route_policy_problems(pol);
            while (*p) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                sbx_warning("%.*s", (int)n, p);
                p += n + (nl ? 1 : 0);
            }
        }
    }
    return pol;
}

static const char usage[] =
    "usage: sbx policy show\n"
    "       sbx policy check [FILE]\n"
    "\n"
    "show    prints the built-in host rules (git's network commands, in the policy format)\n"
    "        and every rule of the policy files, with where each comes from\n"
    "check   checks the policy files (or FILE alone): syntax, programs not found on the\n"
    "        host PATH, patterns that do not compile, rules an earlier one shadows, options\n"
    "        that run programs; one line per problem with file and line; exit 1 on any\n"
    "\n"
    "files: $(sysconfdir)/sbxsh/policy, then AGENT_SANDBOX_POLICY, else\n"
    "~/.config/sbxsh/policy (sbxsh-policy(5))\n";

int cli_policy_main(int argc, char **argv)
{
    const char *sub = argc > 1 ? argv[1] : NULL;
    strbuf out = STRBUF_INIT;
    route_policy *pol = NULL;
    sbx_config cfg;
    route_ctx ctx;
    sbx_err err;
    char *cwd;
    int status = 0;

    if (sub && (!strcmp(sub, "--help") || !strcmp(sub, "-h"))) {
        fputs(usage, stdout);
        return 0;
    }
    if (!sub || (strcmp(sub, "show") && strcmp(sub, "check")) ||
        (!strcmp(sub, "show") && argc != 2) || argc > 3) {
        fputs(usage, stderr);
        return 2;
    }
    if (session_config_load(&cfg, NULL, &err) < 0) {
        sbx_report("sbx", "%s", err.msg);
        return 125;
    }
    cwd = getcwd(NULL, 0);
    /* line_route_ctx's fields, without the process's own policy (this one is loaded
     * here, and its problems are the output) */
    memset(&ctx, 0, sizeof(ctx));
    ctx.code_dirs = (const char *const *)cfg.code_dirs.v;
    ctx.n_code_dirs = cfg.code_dirs.n;
    ctx.sync_paths = (const char *const *)cfg.sync_paths.v;
    ctx.n_sync_paths = cfg.sync_paths.n;
    ctx.cwd = cwd ? cwd : "/";
    ctx.path = getenv("PATH");
    pol = route_policy_new();
    if (argc == 3)
        route_policy_load(pol, argv[2], true, &ctx);
    else
        load_defaults(pol, &ctx);
    if (!strcmp(sub, "show")) {
        route_policy_show(pol, &out);
        if (*route_policy_problems(pol)) {
            strbuf_addstr(&out, "\n# problems (sbx policy check):\n");
            for (const char *p = route_policy_problems(pol); *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);
                strbuf_addstr(&out, "# ");
                strbuf_add(&out, p, n);
                p += n;
            }
        }
    } else {
        size_t errors = route_policy_check(pol, &out);
        size_t rules = route_policy_rule_count(pol);
        strbuf_addf(&out, "%zu rule%s, %zu error%s\n", rules, rules == 1 ? "" : "s", errors,
                    errors == 1 ? "" : "s");
        status = errors ? 1 : 0;
    }
    if (write_full(1, out.buf, out.len) < 0) {
        sbx_report("sbx", "policy: writing the output failed");
        status = 125;
    }
    route_policy_free(pol);
    strbuf_release(&out);
    free(cwd);
    session_config_free(&cfg);
    return status;
}
