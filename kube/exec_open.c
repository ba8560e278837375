/*
 * kube_exec_open(): the exec over a kube_client's connection. Apart from exec.c because it
 * is the one piece that needs the client (kube_client_connect_only, in client.c): the
 * tests drive exec.c over their own sockets without it.
 */
#include "kube/exec_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/strvec.h"

/* The headers hold the credential: wiped before they are freed. */
static void wipe(strvec *hdrs)
{
    for (size_t i = 0; i < hdrs->n; i++)
        explicit_bzero(hdrs->v[i], strlen(hdrs->v[i]));
    strvec_clear(hdrs);
}

int kube_exec_open(kube_client *c, const char *ns, const char *pod, const char *container,
                   const char *const *argv, const kube_exec_opts *o, kube_exec **out,
                   sbx_err *err)
{
    *out = NULL;
    if (!argv || !argv[0])
        return sbx_errf(err, "exec in pod %s/%s: no command given", ns, pod);
    char *path = kube_exec_path(ns, pod, container, argv, o);
    strvec hdrs = STRVEC_INIT;
    int r = -1;
    bool reauthed = false;
    uint64_t give_up = now_ns() + (uint64_t)(o ? o->retry_ms : 0) * 1000000;
    unsigned backoff_ms = 250;
    for (;;) {
        int status = 0;
        /* the upgrade is written by exec.c, not curl: the User-Agent goes in by hand */
        wipe(&hdrs);
        strvec_pushf(&hdrs, "User-Agent: %s", kube_user_agent());
        void *h = kube_client_connect_only(c, path, &hdrs, err);
        if (h) {
            r = kube_exec_over_curl(h, path, (const char *const *)hdrs.v, o, out, &status, err);
            wipe(&hdrs);
            if (r == 0)
                break;
        }
        /* A 401: the token may have expired; once, with what the plugin or the token file
         * gives now (as kube_request does). The 401's message stays when there is none. */
        sbx_err e2;
        if (h && status == 401 && !reauthed) {
            reauthed = true;
            if (kube_client_reauth(c, &e2) == 0)
                continue;
            break;
        }
        /* No answer, or one that says "later" (429, 500, 502, 503, 504): retried within
         * o->retry_ms with a doubling pause, as kube_request retries; other answers (403,
         * 404, 400...) are final. */
        bool transient = status == 0 || status == 429 || status == 500 || status == 502 ||
                         status == 503 || status == 504;
        if (!transient || now_ns() + (uint64_t)backoff_ms * 1000000 >= give_up)
            break;
        for (unsigned slept = 0; slept < backoff_ms; slept += 50) {
            if (o && o->interrupted && o->interrupted(o->interrupt_ctx))
                goto out;
            usleep(50000);
        }
        if (backoff_ms < 4000)
            backoff_ms *= 2;
    }
out:
    if (r < 0)
        sbx_err_prefix(err, "exec in pod %s/%s", ns, pod);
    wipe(&hdrs);
    free(path);
    return r;
}
