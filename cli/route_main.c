/*
 * --route for sbxsh's main(): the route context from this process's
 * environment and cwd (the code directories as local/config.h resolves
 * them for the sessions), then the plan on stdout.
 */
#include "router/route.h"

#include "common/strvec.h"
#include "session/config.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

int route_print_main(const sh_parse *p, bool json, sbx_err *err)
{
    strvec code_dirs = STRVEC_INIT, sync_paths = STRVEC_INIT;
    strbuf out = STRBUF_INIT;
    char cwd[PATH_MAX];
    route_plan plan;
    route_ctx ctx;
    int ret = -1;

    if (!getcwd(cwd, sizeof(cwd))) {
        sbx_errno(err, "cannot read the current directory");
        goto out;
    }
    if (sbx_resolve_code_dirs(getenv("AGENT_SANDBOX_CODE_DIRS"), cwd, &code_dirs, err) < 0)
        goto out;
    sbx_split_list(&sync_paths, getenv("AGENT_SANDBOX_SYNC_PATHS"), ':');
    ctx = (route_ctx){
        .code_dirs = (const char *const *)code_dirs.v, .n_code_dirs = code_dirs.n,
        .sync_paths = (const char *const *)sync_paths.v, .n_sync_paths = sync_paths.n,
        .cwd = cwd, .path = getenv("PATH"), .home = getenv("HOME"), .cdpath = getenv("CDPATH"),
    };
    route_plan_build(&plan, p, &ctx);
    route_print(&plan, p, &ctx, json, &out);
    route_plan_release(&plan);
    if (write_full(1, out.buf, out.len) < 0) {
        sbx_errno(err, "writing the route");
        goto out;
    }
    ret = 0;
out:
    strvec_clear(&code_dirs);
    strvec_clear(&sync_paths);
    strbuf_release(&out);
    return ret;
}
