/*
 * For the router's test programs: runs the HOST parts of a routed line in
 * order, with bash's && || ; rules and a host cd carried to later parts,
 * the way the line executor does for an all-host line. A part that is not
 * HOST stops the line: skip_sandbox says whether to skip it instead
 * (treated as status 0), for checks that only care what the host did.
 */
#ifndef SBX_TESTS_ROUTER_HOSTLINE_H
#define SBX_TESTS_ROUTER_HOSTLINE_H

#include "router/route.h"

#include <stdio.h>
#include <string.h>

/* Returns the line's status; 125 with a message on err_out when a part
 * was refused or sbxsh itself failed. */
static inline int run_host_line(const sh_parse *p, const route_plan *plan, route_ctx ctx,
                                bool pipefail, bool skip_sandbox, FILE *err_out)
{
    strbuf cwd = STRBUF_INIT, newcwd = STRBUF_INIT;
    int status = 0;
    sbx_err err;

    strbuf_addstr(&cwd, ctx.cwd);
    for (size_t k = 0; k < plan->n; k++) {
        const route_part *part = &plan->parts[k];
        route_run_opts ro = { .errname = "sbxsh", .pipefail = pipefail,
                              .line = route_line_of(p, part->span.start) };
        int rc;

        if ((part->join == ROUTE_JOIN_AND && status) || (part->join == ROUTE_JOIN_OR && !status))
            continue;
        if (part->where != ROUTE_HOST && skip_sandbox) {
            status = 0;
            continue;
        }
        ctx.cwd = cwd.buf;
        rc = route_run_host(p, part->pipe, &ctx, &ro, &status, &newcwd, &err);
        if (rc != ROUTE_RAN) {
            fprintf(err_out, "route-run: %s: %s\n", rc == ROUTE_NOT_HOST ? "sandbox" : "error",
                    err.msg);
            status = 125;
            break;
        }
        if (newcwd.len) {
            strbuf_reset(&cwd);
            strbuf_addstr(&cwd, newcwd.buf);
        }
    }
    strbuf_release(&cwd);
    strbuf_release(&newcwd);
    return status;
}

#endif
