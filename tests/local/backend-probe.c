/*
 * Drives the local backend directly, with tests/local/probe-agent in the
 * sandbox instead of sbx-agent (set AGENT_SANDBOX_AGENT to it), so that the
 * sandbox's view of the machine can be tested without the sync engine:
 *
 *   backend-probe claim          claims (creates or reattaches); prints
 *                                "created" or "reattached"
 *   backend-probe run 'CMD'      claims, runs CMD under sh -c in the sandbox,
 *                                relays its output, exits with its status
 *   backend-probe status         prints the backend's status JSON
 *   backend-probe release        releases the sandbox
 *
 * The session comes from the environment as for sbxsh (AGENT_SANDBOX_*).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "session/backend.h"
#include "session/config.h"

int main(int argc, char **argv)
{
    sbx_config cfg;
    sbx_err err;
    sbx_backend *b;
    bool reattached;
    int rc = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: backend-probe claim|run CMD|status|release\n");
        return 2;
    }
    if (session_config_load(&cfg, NULL, &err) < 0 || !(cfg.agent_path = session_find_agent(&err))) {
        fprintf(stderr, "backend-probe: %s\n", err.msg);
        return 125;
    }
    sbx_sandbox_spec spec = { .agent_path = cfg.agent_path };
    if (!(b = session_backend_new(&cfg, &spec, &err))) {
        fprintf(stderr, "backend-probe: %s\n", err.msg);
        return 125;
    }
    if (!strcmp(argv[1], "release")) {
        if (b->ops->release(b, &err) < 0) {
            fprintf(stderr, "backend-probe: %s\n", err.msg);
            rc = 125;
        }
    } else if (b->ops->claim(b, &reattached, &err) < 0) {
        fprintf(stderr, "backend-probe: %s\n", err.msg);
        rc = 125;
    } else if (!strcmp(argv[1], "claim")) {
        printf("%s\n", reattached ? "reattached" : "created");
    } else if (!strcmp(argv[1], "status")) {
        strbuf sb = STRBUF_INIT;
        b->ops->status(b, &sb);
        printf("%s\n", sb.buf);
        strbuf_release(&sb);
    } else if (!strcmp(argv[1], "run") && argc == 3) {
        int rfd, wfd;
        strbuf out = STRBUF_INIT;
        char buf[65536];
        ssize_t n;
        if (b->ops->open_stream(b, &rfd, &wfd, &err) < 0) {
            fprintf(stderr, "backend-probe: %s\n", err.msg);
            rc = 125;
        } else {
            dprintf(wfd, "%s\n", argv[2]);
            while ((n = read(rfd, buf, sizeof(buf))) > 0)
                strbuf_add(&out, buf, (size_t)n);
            /* The agent's last line is "exit N". */
            char *last = out.len ? memrchr(out.buf, '\n', out.len - 1) : NULL;
            last = last ? last + 1 : out.buf;
            if (sscanf(last, "exit %d", &rc) != 1)
                rc = 125;
            fwrite(out.buf, 1, (size_t)(last - out.buf), stdout);
            close(rfd);
        }
        strbuf_release(&out);
    } else {
        fprintf(stderr, "backend-probe: unknown command %s\n", argv[1]);
        rc = 2;
    }
    session_backend_free(b);
    session_config_free(&cfg);
    return rc;
}
