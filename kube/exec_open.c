/*
 * kube_exec_open(): the exec over a kube_client's connection. Apart from exec.c because it
 * is the one piece that needs the client (kube_client_connect_only, in client.c): the
 * tests drive exec.c over their own sockets without it.
 */
#include "kube/exec_int.h"

#include <stdlib.h>

#include <string.h>

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
    for (int attempt = 0;; attempt++) {
        void *h = kube_client_connect_only(c, path, &hdrs, err);
        if (!h)
            break;
        int status = 0;
        r = kube_exec_over_curl(h, path, (const char *const *)hdrs.v, o, out, &status, err);
        wipe(&hdrs);
        /* A 401: the token may have expired; once, with what the plugin or the token file
         * gives now (as kube_request does). The 401's message stays when there is none. */
        sbx_err e2;
        if (r == 0 || status != 401 || attempt > 0 || kube_client_reauth(c, &e2) < 0)
            break;
    }
    if (r < 0)
        sbx_err_prefix(err, "exec in pod %s/%s", ns, pod);
    wipe(&hdrs);
    free(path);
    return r;
}
