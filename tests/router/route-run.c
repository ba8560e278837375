/*
 * route-run: the router and the host runner on their own, for tests.
 *
 *   route-run [--route|--json] [-o pipefail] [-C DIR] [--sbx PATH --session NAME]
 *             [--policy FILE] LINE
 *
 * Routes LINE against the code directories (AGENT_SANDBOX_CODE_DIRS or the
 * cwd's git top level), then either prints the plan (--route, --json) or
 * runs it: host parts through route_run_host() with bash's && || ; rules,
 * host cd carried to later parts. A part that is not HOST is not run: it
 * prints "route-run: sandbox: REASON" and the line stops with status 125.
 * --policy FILE loads a host-command policy (router/policy.h) as sbxsh loads
 * AGENT_SANDBOX_POLICY: a file refused, or with errors, exits 125 with its problems.
 */
#include "session/config.h"
#include "router/policy.h"
#include "router/route.h"
#include "shell/parse.h"
#include "tests/router/hostline.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    bool print = false, json = false, pipefail = false;
    strvec code_dirs = STRVEC_INIT, sync_paths = STRVEC_INIT;
    strbuf cwd = STRBUF_INIT, out = STRBUF_INIT;
    char buf[PATH_MAX];
    const char *line, *sbx = NULL, *session = NULL, *policy_file = NULL;
    route_policy *policy = NULL;
    route_plan plan;
    route_ctx ctx;
    sh_parse p;
    sbx_err err;
    int i, status = 0;

    for (i = 1; i < argc - 1; i++) {
        if (!strcmp(argv[i], "--route"))
            print = true;
        else if (!strcmp(argv[i], "--json"))
            print = json = true;
        else if (!strcmp(argv[i], "-o") && i + 1 < argc - 1 && !strcmp(argv[i + 1], "pipefail"))
            pipefail = true, i++;
        else if (!strcmp(argv[i], "-C") && i + 1 < argc - 1 && chdir(argv[++i]) < 0)
            return perror(argv[i]), 2;
        else if (!strcmp(argv[i], "--sbx") && i + 1 < argc - 1)
            sbx = argv[++i];
        else if (!strcmp(argv[i], "--session") && i + 1 < argc - 1)
            session = argv[++i];
        else if (!strcmp(argv[i], "--policy") && i + 1 < argc - 1)
            policy_file = argv[++i];
    }
    if (i != argc - 1) {
        fprintf(stderr, "usage: route-run [--route|--json] [-o pipefail] [-C DIR] "
                        "[--sbx PATH --session NAME] [--policy FILE] LINE\n");
        return 2;
    }
    line = argv[i];
    if (!getcwd(buf, sizeof(buf)))
        return perror("getcwd"), 2;
    strbuf_addstr(&cwd, buf);
    if (session_resolve_code_dirs(getenv("AGENT_SANDBOX_CODE_DIRS"), buf, &code_dirs, &err) < 0) {
        fprintf(stderr, "route-run: %s\n", err.msg);
        return 125;
    }
    session_split_list(&sync_paths, getenv("AGENT_SANDBOX_SYNC_PATHS"), ':');
    ctx = (route_ctx){
        .code_dirs = (const char *const *)code_dirs.v, .n_code_dirs = code_dirs.n,
        .sync_paths = (const char *const *)sync_paths.v, .n_sync_paths = sync_paths.n,
        .cwd = cwd.buf, .path = getenv("PATH"), .home = getenv("HOME"),
        .cdpath = getenv("CDPATH"), .sbx = sbx, .session = session,
    };
    if (policy_file) {
        policy = route_policy_new();
        if (route_policy_load(policy, policy_file, true, &ctx) < 0) {
            fprintf(stderr, "route-run: %s", route_policy_problems(policy));
            return 125;
        }
        ctx.policy = policy;
    }
    if (sh_parse_all(&p, line, strlen(line), NULL, true) != SH_OK) {
        sh_parse_format_error(&p, "route-run: ", &out);
        fputs(out.buf, stderr);
        return 2;
    }
    route_plan_build(&plan, &p, &ctx);
    if (print) {
        route_print(&plan, &p, &ctx, json, &out);
        fwrite(out.buf, 1, out.len, stdout);
        return 0;
    }
    status = run_host_line(&p, &plan, ctx, pipefail, false, stderr);
    route_plan_release(&plan);
    sh_parse_free(&p);
    strvec_clear(&code_dirs);
    strvec_clear(&sync_paths);
    strbuf_release(&cwd);
    strbuf_release(&out);
    route_policy_free(policy);
    return status;
}
