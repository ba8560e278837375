/*
 * --route for sbxsh's main(): the plan on stdout, from the same checked
 * configuration and route context as execution (line_route_ctx), so the preview
 * never says something execution refuses.
 */
#include "cli/line.h"

#include "common/strbuf.h"

#include <stdlib.h>
#include <unistd.h>

int line_print_route(const sh_parse *p, bool json, const char *session, sbx_err *err)
{
    sbx_config_opts co = { .session = session };
    strbuf out = STRBUF_INIT;
    sbx_config cfg;
    route_plan plan;
    route_ctx ctx;
    char *cwd;
    int ret = -1;

    if (session_config_load(&cfg, &co, err) < 0)
        return -1;
    /* as the line executor starts: getcwd, else "/" */
    cwd = getcwd(NULL, 0);
    if (!cwd)
        cwd = xstrdup("/");
    line_route_ctx(&cfg, cwd, &ctx);
    ctx.cd_projects = line_may_move_to_projects(&cfg);
    route_plan_build(&plan, p, &ctx);
    route_print(&plan, p, &ctx, json, &out);
    route_plan_release(&plan);
    if (write_full(1, out.buf, out.len) < 0) {
        sbx_errno(err, "writing the route");
        goto out;
    }
    ret = 0;
out:
    free(cwd);
    session_config_free(&cfg);
    strbuf_release(&out);
    return ret;
}
