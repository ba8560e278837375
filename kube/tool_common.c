/* sbx-kube's shared pieces: the client, the API paths, kube.json, times, the session key. */
#include "kube/tool.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"

/*
 * The cluster a session's calls go to is the one its claim was made on, as kube.json
 * records it (the server, and the context when the kubeconfig had one): after
 * `kubectl config use-context other`, `sbx release` released nothing there and said 0,
 * and the claim and pod stayed on the first cluster until their shutdownTime. So with a
 * recorded claim, the recorded context is used unless the caller names one, and the
 * server it leads to must be the recorded one: else every call is refused, saying how to
 * reach the session again.
 */
int kt_connect(kt *k, kt_opts *o, sbx_err *err)
{
    cJSON *rec = o->state_dir ? kt_state_load(o->state_dir) : NULL;
    const char *rec_claim = rec ? kt_jstr(rec, "claim") : NULL;
    const char *rec_ctx = rec_claim ? kt_jstr(rec, "context") : NULL;
    const char *rec_server = rec_claim ? kt_jstr(rec, "server") : NULL;
    const char *rec_ns = rec_claim ? kt_jstr(rec, "namespace") : NULL;
    kube_load_opts lo = {
        .explicit_path = o->kubeconfig,
        .kubeconfig_env = getenv("KUBECONFIG"),
        .context = o->context ? o->context : rec_ctx,
        .namespace_ = o->namespace_ ? o->namespace_ : rec_ns,
    };
    memset(k, 0, sizeof(*k));
    k->o = o;
    if (kube_target_load(&lo, &k->target, err) < 0) {
        if (!o->context && rec_ctx)
            sbx_err_prefix(err, "the session's claim %s was made through the kubeconfig's "
                           "context %s", rec_claim, rec_ctx);
        cJSON_Delete(rec);
        return -1;
    }
    if (rec_server && *rec_server &&
        strcmp(rec_server, k->target.server ? k->target.server : "") != 0) {
        sbx_errf(err, "the session's claim %s is on the API server %s%s%s%s, but the "
                 "kubeconfig now leads to %s: point it (or AGENT_SANDBOX_KUBECONFIG, "
                 "AGENT_SANDBOX_KUBE_CONTEXT) back there to use or release the session",
                 rec_claim, rec_server, rec_ctx ? " (context " : "", rec_ctx ? rec_ctx : "",
                 rec_ctx ? ")" : "", k->target.server ? k->target.server : "no server");
        kube_target_free(&k->target);
        cJSON_Delete(rec);
        return -1;
    }
    cJSON_Delete(rec);
    k->ns = k->target.namespace_ ? k->target.namespace_ : "default";
    if (!(k->c = kube_client_new(&k->target, err))) {
        kube_target_free(&k->target);
        return -1;
    }
    /* a claim waits at most its timeout: so do the retries of one request */
    kube_client_set_retry_budget(k->c, o->timeout && o->timeout < 30 ? o->timeout * 1000 : 30000);
    return 0;
}

void kt_close(kt *k)
{
    if (k->c)
        kube_client_free(k->c);
    kube_target_free(&k->target);
    memset(k, 0, sizeof(*k));
}

static char *path_of(const char *api, const char *ns, const char *plural, const char *name)
{
    char *ens = kube_url_escape(ns), *p;
    if (name) {
        char *en = kube_url_escape(name);
        p = xasprintf("%s/namespaces/%s/%s/%s", api, ens, plural, en);
        free(en);
    } else {
        p = xasprintf("%s/namespaces/%s/%s", api, ens, plural);
    }
    free(ens);
    return p;
}

char *kt_claim_path(kt *k, const char *name)
{
    return path_of(KT_CLAIMS_API, k->ns, "sandboxclaims", name);
}

char *kt_sandbox_path(kt *k, const char *name)
{
    return path_of(KT_SANDBOX_API, k->ns, "sandboxes", name);
}

char *kt_pod_path(kt *k, const char *name)
{
    return path_of("/api/v1", k->ns, "pods", name);
}

void kt_rfc3339(int64_t t, char *buf, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* FNV-1a 64: a name, not a secret. */
void kt_session_key(const kt_opts *o, char out[17])
{
    char host[256] = "";
    uint64_t h = 0xcbf29ce484222325ULL;
    gethostname(host, sizeof(host) - 1);
    char *s = xasprintf("%u\n%s\n%s\n%s", (unsigned)getuid(), host, o->state_dir, o->session);
    for (const char *p = s; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 0x100000001b3ULL;
    }
    free(s);
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

cJSON *kt_state_load(const char *dir)
{
    char *path = xasprintf("%s/kube.json", dir), *text = NULL;
    size_t len;
    cJSON *o = NULL;
    if (read_file(path, 1 << 20, &text, &len, NULL) == 0)
        o = cJSON_ParseWithLength(text, len);
    free(text);
    free(path);
    if (o && !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        o = NULL;
    }
    return o;
}

/* Temp and rename, without an fsync: the file is a cache of what the cluster holds (a lost
 * one is found again by the session's labels), and on the claim's path an fsync costs more
 * than the rest of sbxsh's share of a claim. */
int kt_state_save(const char *dir, const cJSON *st, sbx_err *err)
{
    char *text = cJSON_PrintUnformatted(st), *path = xasprintf("%s/kube.json", dir);
    char *tmp = xasprintf("%s/.kube.json.%ld", dir, (long)getpid());
    int fd, r = 0;
    if (!text)
        xdie_oom();
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write_full(fd, text, strlen(text)) < 0 || close(fd) < 0 ||
        rename(tmp, path) < 0) {
        r = sbx_errno(err, "cannot write %s", path);
        unlink(tmp);
    }
    free(tmp);
    free(path);
    cJSON_free(text);
    return r;
}

const char *kt_jstr(const cJSON *o, const char *path)
{
    char part[256];
    while (o && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof(part))
            return NULL;
        memcpy(part, path, n);
        part[n] = '\0';
        o = cJSON_GetObjectItemCaseSensitive(o, part);
        path += n + (dot ? 1 : 0);
    }
    return cJSON_IsString(o) ? o->valuestring : NULL;
}

bool kt_pod_going(const cJSON *pod)
{
    const char *phase = kt_jstr(pod, "status.phase");
    return kt_jstr(pod, "metadata.deletionTimestamp") != NULL ||
           (phase && strcmp(phase, "Running") != 0);
}
