/*
 * The Kubernetes backend's section of the session configuration (kube_settings), read from
 * AGENT_SANDBOX_KUBECONFIG, _KUBE_CONTEXT, _NAMESPACE, _POOL, _TTL and _CLAIM_TIMEOUT by the
 * class's configure hook (for every session, so that a bad value is refused whichever
 * backend runs), and what of it fixes a sandbox's shape (the fingerprint hook).
 *
 * AGENT_SANDBOX_POOL is required only when the kube backend is used: create() says so.
 * The session layer keeps the section without knowing what it holds, and frees it through
 * the settings_free hook.
 */
#include "kube/kclass.h"

#include <stdlib.h>
#include <string.h>

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A DNS-1123 label (a pool, a namespace): lower-case letters, digits and '-', not at
 * either end, at most 63. */
static bool dns_label(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
            return false;
    return true;
}

/* A DNS-1123 subdomain (an object's name: the pool): labels joined by '.', at most 253. */
static bool dns_subdomain(const char *s)
{
    if (!*s || strlen(s) > 253)
        return false;
    for (const char *p = s; *p;) {
        const char *e = strchr(p, '.');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char part[64];
        if (!n || n > 63)
            return false;
        memcpy(part, p, n);
        part[n] = '\0';
        if (!dns_label(part))
            return false;
        p += n + (e ? 1 : 0);
        if (e && !*p)
            return false;
    }
    return true;
}

void kube_settings_clear(kube_settings *k)
{
    free(k->kubeconfig);
    free(k->context);
    free(k->namespace_);
    free(k->pool);
    k->kubeconfig = k->context = k->namespace_ = k->pool = NULL;
}

/* The section a configure left: settings_free is called on it whether configure
 * succeeded or not. */
void kube_settings_free(void *settings)
{
    kube_settings_clear(settings);
    free(settings);
}

const kube_settings *kube_settings_of(const sbx_config *cfg)
{
    static const kube_settings defaults = {
        .ttl = SBX_KUBE_TTL_DEFAULT, .claim_timeout = SBX_KUBE_CLAIM_TIMEOUT_DEFAULT,
    };
    const kube_settings *k = session_backend_settings(cfg, &kube_backend_class);
    return k ? k : &defaults;
}

int kube_configure(const sbx_config *cfg, void **settings, sbx_err *err)
{
    kube_settings *k = xcalloc(1, sizeof(*k));
    const char *v;

    (void)cfg;      /* nothing of the rest of the configuration decides these */
    *settings = k;

    k->ttl = SBX_KUBE_TTL_DEFAULT;
    k->claim_timeout = SBX_KUBE_CLAIM_TIMEOUT_DEFAULT;
    if ((v = env_nonempty("AGENT_SANDBOX_KUBECONFIG"))) {
        if (v[0] != '/')
            return sbx_errf(err, "AGENT_SANDBOX_KUBECONFIG='%s' is not an absolute path", v);
        k->kubeconfig = xstrdup(v);
    }
    if ((v = env_nonempty("AGENT_SANDBOX_KUBE_CONTEXT")))
        k->context = xstrdup(v);
    if ((v = env_nonempty("AGENT_SANDBOX_NAMESPACE"))) {
        if (!dns_label(v))
            return sbx_errf(err, "AGENT_SANDBOX_NAMESPACE='%s' is not a namespace name "
                            "(lower-case letters, digits and '-', at most 63)", v);
        k->namespace_ = xstrdup(v);
    }
    if ((v = env_nonempty("AGENT_SANDBOX_POOL"))) {
        if (!dns_subdomain(v))
            return sbx_errf(err, "AGENT_SANDBOX_POOL='%s' is not a SandboxWarmPool name "
                            "(lower-case letters, digits, '-' and '.')", v);
        k->pool = xstrdup(v);
    }
    if ((v = env_nonempty("AGENT_SANDBOX_TTL"))) {
        if (session_parse_duration(v, &k->ttl, err) < 0)
            return sbx_err_prefix(err, "AGENT_SANDBOX_TTL");
        if (k->ttl < 60)
            return sbx_errf(err, "AGENT_SANDBOX_TTL='%s': the claim's lifetime must be at "
                            "least 60 s (it is renewed while the session lives)", v);
    }
    if ((v = env_nonempty("AGENT_SANDBOX_CLAIM_TIMEOUT"))) {
        if (session_parse_duration(v, &k->claim_timeout, err) < 0)
            return sbx_err_prefix(err, "AGENT_SANDBOX_CLAIM_TIMEOUT");
        if (!k->claim_timeout)
            return sbx_errf(err, "AGENT_SANDBOX_CLAIM_TIMEOUT=0: give the longest wait for a "
                            "pod, e.g. 120s");
    }
    return 0;
}

/* Only for sessions of this backend: which cluster, namespace and pool the pod comes from.
 * (The kubeconfig's path is not part of it: the same cluster may be reached through
 * another file.) */
void kube_fingerprint(const sbx_config *cfg, strbuf *out)
{
    const kube_settings *k = kube_settings_of(cfg);
    if (!cfg->backend || strcmp(cfg->backend, "kube"))
        return;
    strbuf_addf(out, "backend=kube context=%s namespace=%s pool=%s ",
                k->context ? k->context : "-", k->namespace_ ? k->namespace_ : "-",
                k->pool ? k->pool : "-");
}

void kube_tool_opts(const kube_settings *k, strvec *argv)
{
    if (k->kubeconfig) {
        strvec_push(argv, "--kubeconfig");
        strvec_push(argv, k->kubeconfig);
    }
    if (k->context) {
        strvec_push(argv, "--context");
        strvec_push(argv, k->context);
    }
    if (k->namespace_) {
        strvec_push(argv, "--namespace");
        strvec_push(argv, k->namespace_);
    }
    if (k->pool) {
        strvec_push(argv, "--pool");
        strvec_push(argv, k->pool);
    }
    strvec_push(argv, "--ttl");
    strvec_pushf(argv, "%u", k->ttl);
    strvec_push(argv, "--timeout");
    strvec_pushf(argv, "%u", k->claim_timeout);
}
