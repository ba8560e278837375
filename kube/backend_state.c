/*
 * kube.json: what sbx-kube recorded of the session's claim (claim, sandbox, pod and its
 * uid, node, pool, namespace, the cluster, the expiry it last set, the code directories),
 * and the class's status, peek and adopt hooks, which read it without the network.
 */
#include "kube/kclass.h"
#include "common/json.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static char *jstr(const cJSON *o, const char *name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(it) && it->valuestring[0] ? xstrdup(it->valuestring) : NULL;
}

static int64_t jnum(const cJSON *o, const char *name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(it) ? (int64_t)it->valuedouble : 0;
}

int kube_state_load(const char *dir, kube_state *s)
{
    char *path = xasprintf("%s/%s", dir, SBX_KUBE_STATE), *text = NULL;
    size_t len;
    cJSON *o, *d;

    memset(s, 0, sizeof(*s));
    if (read_file(path, 1 << 20, &text, &len, NULL) < 0) {
        free(path);
        return -1;
    }
    free(path);
    o = cJSON_ParseWithLength(text, len);
    free(text);
    if (!o)
        return -1;
    s->claim = jstr(o, "claim");
    s->claim_uid = jstr(o, "claim_uid");
    s->namespace_ = jstr(o, "namespace");
    s->pool = jstr(o, "pool");
    s->sandbox = jstr(o, "sandbox");
    s->pod = jstr(o, "pod");
    s->pod_uid = jstr(o, "pod_uid");
    s->node = jstr(o, "node");
    s->server = jstr(o, "server");
    s->context = jstr(o, "context");
    s->kubeconfig = jstr(o, "kubeconfig");
    s->created = jnum(o, "created");
    s->expires = jnum(o, "expires");
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(o, "code_dirs"))
        if (cJSON_IsString(d))
            strvec_push(&s->code_dirs, d->valuestring);
    cJSON_Delete(o);
    if (!s->claim || !s->namespace_) {
        kube_state_free(s);
        return -1;
    }
    return 0;
}

void kube_state_free(kube_state *s)
{
    free(s->claim);
    free(s->claim_uid);
    free(s->namespace_);
    free(s->pool);
    free(s->sandbox);
    free(s->pod);
    free(s->pod_uid);
    free(s->node);
    free(s->server);
    free(s->context);
    free(s->kubeconfig);
    strvec_clear(&s->code_dirs);
    memset(s, 0, sizeof(*s));
}

/* runtime and id are what `sbx ls` and `sbx status` print for every backend: "kube" and
 * the claim; the rest is this backend's own. */
void kube_state_json(const kube_state *s, bool alive, const char *dir, strbuf *json)
{
    sbx_json j;

    sbx_json_init(&j, json);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_str(&j, "backend", "kube");
    sbx_json_str(&j, "runtime", "kube");
    sbx_json_str(&j, "id", s->claim);
    sbx_json_int(&j, "created", (long long)s->created);
    sbx_json_bool(&j, "alive", alive);
    sbx_json_str(&j, "network", "pod");
    sbx_json_str(&j, "claim", s->claim);
    sbx_json_str(&j, "sandbox", s->sandbox);
    sbx_json_str(&j, "pod", s->pod);
    sbx_json_str(&j, "node", s->node);
    sbx_json_str(&j, "pool", s->pool);
    sbx_json_str(&j, "namespace", s->namespace_);
    sbx_json_str(&j, "server", s->server);
    sbx_json_str(&j, "context", s->context);
    sbx_json_int(&j, "expires", (long long)s->expires);
    sbx_json_str(&j, "state_dir", dir);
    sbx_json_end(&j);
}

void kube_status(sbx_backend *b, strbuf *json)
{
    kube_backend *kb = (kube_backend *)b;
    kube_state fresh;
    /* the stream moves the expiry forward: read what it wrote last */
    if (kube_state_load(kb->dir, &fresh) == 0) {
        kube_state_json(&fresh, b->ops->alive(b), kb->dir, json);
        kube_state_free(&fresh);
        return;
    }
    kube_state_json(&kb->st, b->ops->alive(b), kb->dir, json);
}

/* Without a holder nobody knows whether the pod still runs: "alive" says the claim is
 * recorded and not past its expiry (sbx status with a holder asks the holder). */
int kube_peek(const char *state_dir, strbuf *json)
{
    kube_state s;
    if (kube_state_load(state_dir, &s) < 0)
        return -1;
    kube_state_json(&s, !s.expires || s.expires > (int64_t)time(NULL), state_dir, json);
    kube_state_free(&s);
    return 0;
}

int kube_adopt(const char *state_dir, sbx_config *cfg)
{
    kube_state s;
    kube_settings *k = session_backend_settings(cfg, &kube_backend_class);
    if (!k || kube_state_load(state_dir, &s) < 0)
        return -1;
    free(k->namespace_);
    k->namespace_ = xstrdup(s.namespace_);
    if (s.pool) {
        free(k->pool);
        k->pool = xstrdup(s.pool);
    }
    if (s.context) {
        free(k->context);
        k->context = xstrdup(s.context);
    }
    if (s.kubeconfig && s.kubeconfig[0] == '/') {
        free(k->kubeconfig);
        k->kubeconfig = xstrdup(s.kubeconfig);
    }
    strvec_clear(&cfg->code_dirs);
    cfg->code_dirs = s.code_dirs;
    memset(&s.code_dirs, 0, sizeof(s.code_dirs));
    kube_state_free(&s);
    return 0;
}

/* The describe hook (`sbx status` for people): a sandbox that is a pod, where it runs and
 * until when. */
void kube_describe(const cJSON *sb, strbuf *out)
{
    const cJSON *pod = cJSON_GetObjectItemCaseSensitive(sb, "pod");
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(sb, "expires");
    const char *const keys[] = { "node", "claim", "sandbox", "pool", "namespace" };
    const char *v[ARRAY_SIZE(keys)];
    if (!cJSON_IsString(pod))
        return;
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(sb, keys[i]);
        v[i] = cJSON_IsString(it) && it->valuestring[0] ? it->valuestring : "?";
    }
    strbuf_addf(out, "pod:       %s on node %s (claim %s, sandbox %s, pool %s, namespace %s)\n",
                pod->valuestring, v[0], v[1], v[2], v[3], v[4]);
    if (cJSON_IsNumber(exp) && exp->valuedouble > 0) {
        char when[64];
        time_t t = (time_t)exp->valuedouble;
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
        strbuf_addf(out, "expires:   %s unless renewed (the claim's shutdownTime; moved "
                    "forward while the session lives)\n", when);
    }
}

