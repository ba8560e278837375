/*
 * sbx-kube doctor: the cluster's side of `sbx doctor`, one finding a line on stdout,
 * "LEVEL<TAB>WHAT<TAB>DETAIL" (0 ok, 1 note, 2 problem, 3 warning), as the class's doctor
 * hook prints them. Each failure says what to fix. --advisory (the kube backend is
 * configured but not in use) turns problems into notes.
 */
#include "kube/tool.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool advisory;

static void find(int level, const char *what, const char *fmt, ...) SBX_PRINTF(3, 4);
static void find(int level, const char *what, const char *fmt, ...)
{
    char detail[1200] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        for (char *p = detail; *p; p++)
            if (*p == '\n' || *p == '\t')
                *p = ' ';
        sbx_sanitize_inplace(detail, sizeof(detail));   /* the server's text in it */
    }
    if (advisory && level == 2)
        level = 1;
    printf("%d\t%s\t%s\n", level, what, detail);
    fflush(stdout);
}

/* The verbs sbxsh uses, as SelfSubjectAccessReview asks them. */
static const struct verb {
    const char *group, *resource, *subresource, *verbs;
} verbs[] = {
    { "extensions.agents.x-k8s.io", "sandboxclaims", "", "create get list watch patch delete" },
    { "agents.x-k8s.io", "sandboxes", "", "get list watch" },
    { "", "pods", "", "get" },
    { "", "pods", "exec", "create get" },
};

static void check_access(kt *k)
{
    strbuf denied = STRBUF_INIT;
    unsigned asked = 0;
    for (size_t i = 0; i < ARRAY_SIZE(verbs); i++) {
        strvec vs = { 0 };
        for (const char *p = verbs[i].verbs; *p;) {
            const char *e = strchr(p, ' ');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            strvec_pushn(&vs, p, n);
            p += n + (e ? 1 : 0);
        }
        for (size_t j = 0; j < vs.n; j++) {
            kube_response r = { 0 };
            sbx_err err;
            /* cJSON: the namespace is the kubeconfig's or the environment's, escaped */
            cJSON *rev = cJSON_CreateObject(), *attrs;
            cJSON_AddStringToObject(rev, "apiVersion", "authorization.k8s.io/v1");
            cJSON_AddStringToObject(rev, "kind", "SelfSubjectAccessReview");
            attrs = cJSON_AddObjectToObject(cJSON_AddObjectToObject(rev, "spec"),
                                            "resourceAttributes");
            cJSON_AddStringToObject(attrs, "namespace", k->ns);
            cJSON_AddStringToObject(attrs, "verb", vs.v[j]);
            cJSON_AddStringToObject(attrs, "group", verbs[i].group);
            cJSON_AddStringToObject(attrs, "resource", verbs[i].resource);
            cJSON_AddStringToObject(attrs, "subresource", verbs[i].subresource);
            char *body = cJSON_PrintUnformatted(rev);
            cJSON_Delete(rev);
            if (!body)
                xdie_oom();
            asked++;
            int rc = kube_request(k->c, "POST", "/apis/authorization.k8s.io/v1/"
                                  "selfsubjectaccessreviews", "application/json", body, &r, &err);
            cJSON_free(body);
            if (rc < 0) {
                find(2, "cannot ask the API server what sbxsh may do", "%s", err.msg);
                kube_response_free(&r);
                strvec_clear(&vs);
                strbuf_release(&denied);
                return;
            }
            cJSON *allowed = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(r.json, "status"), "allowed");
            if (!cJSON_IsTrue(allowed))
                strbuf_addf(&denied, "%s%s %s%s%s%s%s", denied.len ? ", " : "", vs.v[j],
                            verbs[i].resource, verbs[i].subresource[0] ? "/" : "",
                            verbs[i].subresource, verbs[i].group[0] ? "." : "", verbs[i].group);
            kube_response_free(&r);
        }
        strvec_clear(&vs);
    }
    if (denied.len)
        find(2, "RBAC: sbxsh's user may not do everything it needs",
             "denied in namespace %s: %s; grant them with the tenant's Role and RoleBinding "
             "(sbx render-pool prints them; docs/kube.md: what the cluster needs)", k->ns,
             denied.buf);
    else
        find(0, "RBAC:", "all %u verbs sbxsh needs are allowed in namespace %s", asked, k->ns);
    strbuf_release(&denied);
}

static void check_pool(kt *k)
{
    kube_response r = { 0 };
    sbx_err err;
    char *ens = kube_url_escape(k->ns), *ep = kube_url_escape(k->o->pool);
    char *path = xasprintf(KT_CLAIMS_API "/namespaces/%s/sandboxwarmpools/%s", ens, ep);
    free(ep);
    if (kube_request(k->c, "GET", path, NULL, NULL, &r, &err) < 0) {
        if (r.status == 404)
            find(2, "the warm pool does not exist", "no SandboxWarmPool '%s' in namespace %s: "
                 "set AGENT_SANDBOX_POOL (and AGENT_SANDBOX_NAMESPACE) to an existing pool, or "
                 "ask for one (agent-sandbox's controller must run with --extensions)",
                 k->o->pool, k->ns);
        else
            find(2, "cannot read the warm pool", "%s", err.msg);
        goto out;
    }
    {
        cJSON *status = cJSON_GetObjectItemCaseSensitive(r.json, "status");
        cJSON *ready = cJSON_GetObjectItemCaseSensitive(status, "readyReplicas");
        cJSON *want = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(r.json, "spec"), "replicas");
        int nready = cJSON_IsNumber(ready) ? (int)ready->valuedouble : 0;
        int nwant = cJSON_IsNumber(want) ? (int)want->valuedouble : 1;
        if (nready > 0)
            find(0, "warm pool:", "%s in namespace %s, %d of %d replicas ready", k->o->pool,
                 k->ns, nready, nwant);
        else
            find(3, "the warm pool has no ready replica", "%s in namespace %s (%d wanted): "
                 "claims will cold-start, which takes seconds; raise its replicas", k->o->pool,
                 k->ns, nwant);
        char *tmpl = kt_jstr(r.json, "spec.sandboxTemplateRef.name") ?
                     xstrdup(kt_jstr(r.json, "spec.sandboxTemplateRef.name")) : NULL;
        kube_response_free(&r);
        if (!tmpl)
            goto out;
        char *et = kube_url_escape(tmpl);
        char *tp = xasprintf(KT_CLAIMS_API "/namespaces/%s/sandboxtemplates/%s", ens, et);
        free(et);
        if (kube_request(k->c, "GET", tp, NULL, NULL, &r, &err) < 0) {
            find(2, "cannot read the pool's SandboxTemplate", "%s: %s", tmpl, err.msg);
        } else {
            const char *rc = kt_jstr(r.json, "spec.podTemplate.spec.runtimeClassName");
            if (rc)
                find(0, "runtime class of the pool's pods:", "%s (template %s)", rc, tmpl);
            else
                find(3, "the pool's pods have no runtimeClassName", "template %s runs them "
                     "under the node's default runtime, not gVisor or Kata: set "
                     "spec.podTemplate.spec.runtimeClassName (e.g. gvisor)", tmpl);
        }
        free(tp);
        free(tmpl);
    }
out:
    kube_response_free(&r);
    free(path);
    free(ens);
}

int kt_doctor(kt_opts *o)
{
    kt k;
    sbx_err err;
    kube_response r = { 0 };

    advisory = o->advisory;
    if (kt_connect(&k, o, &err) < 0) {
        find(2, "kubeconfig", "%s", err.msg);
        return 1;
    }
    find(0, "kubeconfig:", "%s, context %s, namespace %s", k.target.source ? k.target.source : "?",
         k.target.context ? k.target.context : "-", k.ns);
    kube_client_set_retry_budget(k.c, 3000);
    if (kube_request(k.c, "GET", "/version", NULL, NULL, &r, &err) < 0) {
        if (r.status == 401)
            find(2, "the API server refuses sbxsh's credentials", "%s", err.msg);
        else if (r.status)
            find(2, "the API server answers with an error", "%s", err.msg);
        else
            find(2, "the API server does not answer", "%s", err.msg);
        kube_response_free(&r);
        kt_close(&k);
        return 1;
    }
    find(0, "API server:", "%s, Kubernetes %s", k.target.server,
         kt_jstr(r.json, "gitVersion") ? kt_jstr(r.json, "gitVersion") : "?");
    kube_response_free(&r);
    if (kube_request(k.c, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                     "application/json", "{\"apiVersion\":\"authentication.k8s.io/v1\","
                     "\"kind\":\"SelfSubjectReview\"}", &r, &err) < 0) {
        find(r.status == 401 ? 2 : 1, r.status == 401 ? "the API server refuses sbxsh's "
             "credentials" : "identity unknown (SelfSubjectReview)", "%s", err.msg);
        if (r.status == 401) {
            kube_response_free(&r);
            kt_close(&k);
            return 1;
        }
    } else {
        find(0, "identity:", "%s", kt_jstr(r.json, "status.userInfo.username") ?: "?");
    }
    kube_response_free(&r);
    check_access(&k);
    if (o->pool)
        check_pool(&k);
    kt_close(&k);
    return 0;
}
