/*
 * sbx doctor for the Kubernetes backend (the class's doctor hook): the settings, sbx-kube
 * beside the agent, and what `sbx-kube doctor` finds on the cluster (kubeconfig, server,
 * identity, each verb sbxsh needs, the pool and its template's runtime class). sbx-kube
 * prints one finding a line: "LEVEL<TAB>WHAT<TAB>DETAIL".
 */
#include "kube/kclass.h"

#include <stdio.h>
#include <string.h>

static void on_doctor_line(void *ctx, const char *line)
{
    sbx_doctor_finding *finding = (sbx_doctor_finding *)ctx;
    const char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    if (!t1 || line[0] < '0' || line[0] > '3')
        return;
    char *what = t2 ? xstrndup(t1 + 1, (size_t)(t2 - t1 - 1)) : xstrdup(t1 + 1);
    if (t2 && t2[1])
        finding(line[0] - '0', what, "%s", t2 + 1);
    else
        finding(line[0] - '0', what, NULL);
    free(what);
}

void kube_doctor(const sbx_config *cfg, sbx_doctor_finding *finding)
{
    const kube_settings *k = kube_settings_of(cfg);
    bool used = cfg->backend && !strcmp(cfg->backend, "kube");
    strvec argv = { 0 };
    sbx_err err;
    char *tool;
    int r;

    if (!used && !k->pool && !k->kubeconfig) {
        finding(1, "kube backend: not in use", "AGENT_SANDBOX_BACKEND=kube with "
                "AGENT_SANDBOX_POOL (and AGENT_SANDBOX_KUBECONFIG) claims pods from a "
                "cluster instead");
        return;
    }
    if (!used)
        finding(1, "kube backend: configured but not in use",
                "set AGENT_SANDBOX_BACKEND=kube to claim pods from AGENT_SANDBOX_POOL");
    if (!k->pool)
        finding(used ? 2 : 1, "AGENT_SANDBOX_POOL is not set",
                "name the SandboxWarmPool to claim pods from");
    if (!(tool = kube_find_tool(cfg->agent_path, &err))) {
        finding(used ? 2 : 1, "sbx-kube not found", "%s", err.msg);
        return;
    }
    finding(0, "sbx-kube:", "%s", tool);
    strvec_push(&argv, tool);
    strvec_push(&argv, "doctor");
    if (!used)
        strvec_push(&argv, "--advisory");   /* its problems are notes: nothing uses it */
    kube_tool_opts(k, &argv);
    r = kube_run_tool(argv.v, on_doctor_line, (void *)finding, &err);
    if (r < 0)
        finding(2, "cannot run sbx-kube doctor", "%s", err.msg);
    else if (r > 1)
        finding(2, "sbx-kube doctor failed", "status %d; run %s doctor by hand", r, tool);
    strvec_clear(&argv);
    free(tool);
}
