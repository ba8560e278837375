/*
 * kube_exec_open(): the exec over a kube_client's connection. Apart from exec.c because it
 * is the one piece that needs the client (kube_client_connect_only, in client.c): the
 * tests drive exec.c over their own sockets without it.
 */
#include "kube/exec_int.h"

#include <stdlib.h>

#include "common/strvec.h"

int kube_exec_open(kube_client *c, const char *ns, const char *pod, const char *container,
                   const char *const *argv, const kube_exec_opts *o, kube_exec **out,
                   sbx_err *err)
{
    *out = NULL;
    if (!argv || !argv[0])
        return sbx_errf(err, "exec in pod %s/%s: no command given", ns, pod);
    char *path = kube_exec_path(ns, pod, container, argv, o);
    strvec hdrs = STRVEC_INIT;
    void *h = kube_client_connect_only(c, path, &hdrs, err);
    int r = -1;
    if (h)
        r = kube_exec_over_curl(h, path, (const char *const *)hdrs.v, o, out, err);
    if (r < 0)
        sbx_err_prefix(err, "exec in pod %s/%s", ns, pod);
    strvec_clear(&hdrs);
    free(path);
    return r;
}
