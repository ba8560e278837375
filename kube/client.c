/*
 * The Kubernetes REST client over libcurl: one easy handle driven by a private multi
 * handle (the multi's connection cache keeps the connection and its TLS session between
 * requests, and the multi loop lets every wait poll the interrupt hook every 100 ms),
 * credentials from the target, retries within a budget, Status objects turned into
 * messages that say what to fix, and watches.
 */
#include "kube/client.h"
#include "kube/kpriv.h"
#include "kube/kwatch.h"
#include "common/version.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KC_MAX_BODY (64u << 20)     /* an answer larger than this is an error */
#define KC_TOKEN_REREAD_NS (60ull * 1000000000ull) /* tokenFile re-read, as client-go */
#define KC_BACKOFF_FIRST_MS 200
#define KC_BACKOFF_MAX_MS 4000
#define KC_WATCH_MAX_TIMEOUT_S 300  /* a watch is re-made at least this often */
#define KC_WATCH_IDLE_SLACK_S 30    /* no byte for timeoutSeconds + this: the watch is
                                       dead (a proxy dropped it without a FIN) */

struct kube_client {
    CURLM *m;
    CURL *h;
    kube_target t;          /* our own copy */
    char *base;             /* the URL up to the path: server, or built on tls-server-name */
    char *connect_to;       /* "name:port:host:port" when tls-server-name is set */
    struct curl_slist *connect_to_list;
    bool tls;               /* credentials go only over https, as kubectl's */
    unsigned budget_ms, timeout_ms;
    bool (*interrupted)(void *ctx);
    void *ictx;
    /* credentials */
    char *file_token;       /* the last token_file read */
    uint64_t file_read_ns;
    kube_credential cred;   /* the exec plugin's, while valid */
    bool have_cred;
    unsigned seed;          /* jitter */
    char errbuf[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- small pieces ---------------------------------------------------------------------- */

/* Percent-encodes all but RFC 3986's unreserved characters, for a name or a selector put
 * into a path or a query: a '/', '?' or '&' in it must not change which resource is asked
 * for or add a parameter. */
char *kube_url_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    strbuf sb = STRBUF_INIT;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            strbuf_addch(&sb, *p);
        } else {
            strbuf_addch(&sb, '%');
            strbuf_addch(&sb, hex[*p >> 4]);
            strbuf_addch(&sb, hex[*p & 15]);
        }
    }
    return strbuf_detach(&sb, NULL);
}

void kube_response_free(kube_response *r)
{
    if (!r->body.buf)
        strbuf_init(&r->body, 0);  /* a response zeroed by `= { 0 }` */
    strbuf_release(&r->body);
    cJSON_Delete(r->json);
    r->json = NULL;
    r->status = 0;
}

static bool is_interrupted(kube_client *c)
{
    return c->interrupted && c->interrupted(c->ictx);
}

/* Sleeps ms (or until deadline_ns, when earlier and not 0), polling the interrupt hook.
 * Returns -1 when interrupted. */
static int nap(kube_client *c, unsigned ms, uint64_t deadline_ns)
{
    uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
    if (deadline_ns && deadline_ns < end)
        end = deadline_ns;
    for (;;) {
        if (is_interrupted(c))
            return -1;
        uint64_t now = now_ns();
        if (now >= end)
            return 0;
        uint64_t left = end - now;
        struct timespec ts = { 0, (long)(left < 50000000u ? left : 50000000u) };
        nanosleep(&ts, NULL);
    }
}

static const char *http_reason(long code)
{
    switch (code) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
    }
}

static bool status_retryable(long code)
{
    return code == 429 || code == 500 || code == 502 || code == 503 || code == 504;
}

/* What a request does, in RBAC's words: "create sandboxclaims.extensions.agents.x-k8s.io
 * in namespace ns", "get pods \"p\" in namespace ns". Non-resource paths: "GET /version". */
static void describe(const char *method, const char *path, strbuf *out)
{
    char *p = xstrdup(path), *q = strchr(p, '?');
    bool watch = false;
    const char *seg[8];
    int n = 0;
    if (q) {
        *q++ = '\0';
        watch = strstr(q, "watch=1") || strstr(q, "watch=true");
    }
    for (char *s = p, *save = NULL, *tok; n < 8 && (tok = strtok_r(s, "/", &save)); s = NULL)
        seg[n++] = tok;
    const char *group = NULL;
    int i;
    if (n >= 3 && !strcmp(seg[0], "api")) {
        group = "";
        i = 2;
    } else if (n >= 4 && !strcmp(seg[0], "apis")) {
        group = seg[1];
        i = 3;
    }
    if (!group) {
        strbuf_addf(out, "%s %s", method, path);
        free(p);
        return;
    }
    const char *ns = NULL, *res, *name = NULL, *sub = NULL;
    if (n - i >= 3 && !strcmp(seg[i], "namespaces")) {
        ns = seg[i + 1];
        i += 2;
    }
    res = seg[i];
    if (i + 1 < n)
        name = seg[i + 1];
    if (i + 2 < n)
        sub = seg[i + 2];
    const char *verb = !strcmp(method, "GET")      ? (name ? "get" : watch ? "watch" : "list")
                       : !strcmp(method, "POST")   ? "create"
                       : !strcmp(method, "PUT")    ? "update"
                       : !strcmp(method, "PATCH")  ? "patch"
                       : !strcmp(method, "DELETE") ? (name ? "delete" : "deletecollection")
                                                   : method;
    strbuf_addf(out, "%s %s%s%s%s%s", verb, res, sub ? "/" : "", sub ? sub : "",
                *group ? "." : "", group);
    if (name)
        strbuf_addf(out, " \"%s\"", name);
    if (ns)
        strbuf_addf(out, " in namespace %s", ns);
    free(p);
}

static const char *status_field(const cJSON *json, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, key);
    return cJSON_IsString(v) && *v->valuestring ? v->valuestring : NULL;
}

static int kube_request_raw(kube_client *c, const char *path, kube_response *resp,
                            sbx_err *err);

/* Whether discovery says the API of a resource path (/api/v1/..., /apis/G/V/...) is
 * missing from the cluster: then why (": ...") says how; else it stays empty (the API is
 * there, or discovery did not answer: nothing is claimed). */
static void api_missing(kube_client *c, const char *path, char *why, size_t n)
{
    char *p = xstrdup(path), *q = strchr(p, '?');
    const char *seg[8];
    int ns = 0;
    if (q)
        *q = '\0';
    for (char *s = p, *save = NULL, *tok; ns < 8 && (tok = strtok_r(s, "/", &save)); s = NULL)
        seg[ns++] = tok;
    const char *group = NULL, *version = NULL, *res = NULL;
    int i = 0;
    if (ns >= 3 && !strcmp(seg[0], "api")) {
        group = "";
        version = seg[1];
        i = 2;
    } else if (ns >= 4 && !strcmp(seg[0], "apis")) {
        group = seg[1];
        version = seg[2];
        i = 3;
    }
    if (group && ns - i >= 3 && !strcmp(seg[i], "namespaces"))
        i += 2;
    if (!group || i >= ns) {
        free(p);
        return;
    }
    res = seg[i];
    kube_response r = { 0 };
    sbx_err e;
    char *gpath = *group ? xasprintf("/apis/%s", group) : NULL;
    if (gpath) {
        /* the group: an APIGroup with its versions, or 404 when no CRD or aggregated API
         * serves it */
        int gr = kube_request_raw(c, gpath, &r, &e);
        if (gr < 0) {
            if (r.status == 404)
                snprintf(why, n, ": the cluster serves no API group %s (discovery): is its CRD "
                         "installed?", group);
            goto out;
        }
        bool has = false;
        strbuf vs = STRBUF_INIT;
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(r.json, "versions")) {
            const cJSON *ver = cJSON_GetObjectItemCaseSensitive(v, "version");
            if (!cJSON_IsString(ver))
                continue;
            if (!strcmp(ver->valuestring, version))
                has = true;
            strbuf_addf(&vs, "%s%s", vs.len ? ", " : "", ver->valuestring);
        }
        if (!has)
            snprintf(why, n, ": the cluster serves %s only as %.100s, not %s (discovery): its "
                     "CRDs are of another version", group, vs.len ? vs.buf : "nothing", version);
        strbuf_release(&vs);
        kube_response_free(&r);
        if (!has)
            goto out;
    }
    {
        char *vpath = *group ? xasprintf("/apis/%s/%s", group, version)
                             : xasprintf("/api/%s", version);
        int vr = kube_request_raw(c, vpath, &r, &e);
        free(vpath);
        if (vr < 0) {
            if (r.status == 404)
                snprintf(why, n, ": the cluster does not serve %s%s%s (discovery)", group,
                         *group ? "/" : "", version);
            goto out;
        }
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r.json, "resources")) {
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
            if (cJSON_IsString(nm) && !strcmp(nm->valuestring, res))
                goto out;   /* there: the 404 is about something else */
        }
        snprintf(why, n, ": the cluster's %s%s%s has no resource %s (discovery): is its CRD "
                 "installed?", group, *group ? "/" : "", version, res);
    }
out:
    kube_response_free(&r);
    free(gpath);
    free(p);
}

/* The error for a non-2xx answer, from the Status object when there is one. */
static int status_error(kube_client *c, const char *method, const char *path,
                        const kube_response *r, sbx_err *err)
{
    strbuf d = STRBUF_INIT;
    const char *msg = NULL, *reason = NULL;
    char detail[600], line[200];
    describe(method, path, &d);
    if (r->json && (status_field(r->json, "kind") && !strcmp(status_field(r->json, "kind"),
                                                             "Status"))) {
        msg = status_field(r->json, "message");
        reason = status_field(r->json, "reason");
    }
    if (!msg && r->body.len && !r->json) {
        /* Not JSON (a proxy's page?): its first line, without control bytes. */
        size_t n = strcspn(r->body.buf, "\r\n");
        snprintf(line, sizeof(line), "%.*s", (int)(n < 160 ? n : 160), r->body.buf);
        for (char *p = line; *p; p++)
            if ((unsigned char)*p < 0x20)
                *p = '?';
        msg = line;
    }
    snprintf(detail, sizeof(detail), "%ld %s%s%s", r->status,
             reason ? reason : http_reason(r->status), msg ? ": " : "", msg ? msg : "");
    int rc;
    switch (r->status) {
    case 401:
        if (!c->tls) {
            rc = sbx_errf(err, "the API server at %s wants credentials, and none are sent over "
                          "plain http (as kubectl sends none): make the server https in %s "
                          "(%s)", c->t.server, c->t.source, detail);
            break;
        }
        rc = sbx_errf(err, "the API server at %s did not accept the credentials of %s%s%s "
                      "(%s): they are wrong or have expired", c->t.server, c->t.source,
                      c->t.context ? ", context " : "", c->t.context ? c->t.context : "",
                      detail);
        break;
    case 403:
        rc = sbx_errf(err, "may not %s (%s): ask the cluster's admin for RBAC that allows it",
                      d.buf, detail);
        break;
    case 404: {
        /* The namespace missing (the NamespaceLifecycle admission's 404 names it in its
         * details) is not the API missing. */
        const cJSON *det = r->json ? cJSON_GetObjectItemCaseSensitive(r->json, "details") : NULL;
        const cJSON *dk = cJSON_GetObjectItemCaseSensitive(det, "kind");
        const cJSON *dn = cJSON_GetObjectItemCaseSensitive(det, "name");
        if (cJSON_IsString(dk) && !strcmp(dk->valuestring, "namespaces") && cJSON_IsString(dn)) {
            rc = sbx_errf(err, "%s: the namespace %s does not exist on %s (%s): set "
                          "AGENT_SANDBOX_NAMESPACE, or the kubeconfig context's namespace, to "
                          "the one the pool is in", d.buf, dn->valuestring, c->t.server, detail);
            break;
        }
        /* A collection not found may be an API not installed (a CRD missing), or not: a
         * proxy's or webhook's 404, a version the cluster does not serve. Discovery says
         * which, as kubectl's "the server doesn't have a resource type" comes from it. */
        char why[300] = "";
        if (!strstr(d.buf, " \""))
            api_missing(c, path, why, sizeof(why));
        rc = sbx_errf(err, "%s: not found (%s)%s", d.buf, detail, why);
        break;
    }
    default:
        rc = sbx_errf(err, "%s: %s", d.buf, detail);
    }
    strbuf_release(&d);
    return rc;
}

/* The error for a transfer that got no answer. */
static int transport_error(kube_client *c, CURLcode res, const char *method, const char *path,
                           sbx_err *err)
{
    const char *why = c->errbuf[0] ? c->errbuf : curl_easy_strerror(res);
    strbuf d = STRBUF_INIT;
    int rc;
    describe(method, path, &d);
    switch (res) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        rc = sbx_errf(err, "cannot reach the API server at %s (from %s): %s", c->t.server,
                      c->t.source, why);
        break;
    case CURLE_PEER_FAILED_VERIFICATION:
        rc = sbx_errf(err, "the API server at %s has a certificate that %s does not vouch for "
                      "(%s): check certificate-authority%s in %s", c->t.server,
                      c->t.ca_pem ? "the kubeconfig's certificate authority"
                                  : "none of the system's certificate authorities",
                      why, c->t.tls_server_name ? " and tls-server-name" : "", c->t.source);
        break;
    case CURLE_SSL_CERTPROBLEM:
        rc = sbx_errf(err, "the client certificate or key of %s cannot be used: %s",
                      c->t.source, why);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        rc = sbx_errf(err, "%s: no answer from the API server at %s in time: %s", d.buf,
                      c->t.server, why);
        break;
    default:
        rc = sbx_errf(err, "%s: the API server at %s: %s", d.buf, c->t.server, why);
    }
    strbuf_release(&d);
    return rc;
}

/* Failures before the request can have reached the server are retried for every method;
 * failures after (the answer lost) only when repeating it is harmless, i.e. not for
 * POST, which could create twice. */
static bool transport_retryable(CURLcode res, const char *method)
{
    if (res == CURLE_COULDNT_CONNECT)
        return true;
    if (!strcmp(method, "POST"))
        return false;
    return res == CURLE_OPERATION_TIMEDOUT || res == CURLE_RECV_ERROR ||
           res == CURLE_SEND_ERROR || res == CURLE_GOT_NOTHING || res == CURLE_PARTIAL_FILE;
}

/* ---- the handle ------------------------------------------------------------------------ */

/* The architecture as Go names it (runtime.GOARCH), for the User-Agent. */
#if defined(__x86_64__)
#define KC_ARCH "amd64"
#elif defined(__aarch64__)
#define KC_ARCH "arm64"
#elif defined(__i386__)
#define KC_ARCH "386"
#elif defined(__arm__)
#define KC_ARCH "arm"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define KC_ARCH "ppc64le"
#elif defined(__s390x__)
#define KC_ARCH "s390x"
#elif defined(__riscv) && __riscv_xlen == 64
#define KC_ARCH "riscv64"
#else
#define KC_ARCH "unknown"
#endif

/* "sbxsh/0.1.0 (linux/amd64)": client-go's DefaultKubernetesUserAgent form
 * (k8s.io/client-go/rest/config.go: "kubectl/v1.32.0 (linux/amd64) kubernetes/COMMIT"),
 * so that audit logs and API priority and fairness rules can tell sbxsh and its version. */
const char *kube_user_agent(void)
{
    return "sbxsh/" SBXSH_VERSION " (linux/" KC_ARCH ")";
}

static void set_blob(CURL *h, CURLoption opt, const char *data, size_t len)
{
    struct curl_blob b = { (void *)data, len, CURL_BLOB_COPY };
    curl_easy_setopt(h, opt, data ? &b : NULL);
}

/* The TLS, proxy and connection settings, the same for the REST handle and for each
 * CONNECT_ONLY handle of an exec. Only http and https whatever a URL says (and redirects
 * are not followed at all); no signals (libcurl's alarm for DNS timeouts would hit our
 * own handlers); verification off only when the kubeconfig says insecure-skip-tls-verify. */
static void apply_settings(kube_client *c, CURL *h)
{
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_USERAGENT, kube_user_agent());
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    if (c->t.ca_pem) {
        /* Only the kubeconfig's CA, as client-go's RootCAs: not the system's too. */
        curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
        curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
        set_blob(h, CURLOPT_CAINFO_BLOB, c->t.ca_pem, c->t.ca_len);
    }
    if (c->t.insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    const char *cert = c->have_cred && c->cred.cert_pem ? c->cred.cert_pem : c->t.cert_pem;
    const char *key = c->have_cred && c->cred.cert_pem ? c->cred.key_pem : c->t.key_pem;
    if (cert && c->tls) {
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
        set_blob(h, CURLOPT_SSLCERT_BLOB, cert, strlen(cert));
        set_blob(h, CURLOPT_SSLKEY_BLOB, key, strlen(key));
    }
    if (c->t.proxy_url)
        curl_easy_setopt(h, CURLOPT_PROXY, c->t.proxy_url);
    /* curl does not copy the list: it lives as long as the client. */
    if (c->connect_to_list)
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to_list);
}

/* The URL base: the server's, or with the host replaced by tls-server-name and
 * CONNECT_TO sending the connection to the real host. Then curl's SNI and its certificate
 * check use that name, which is what tls-server-name means (client-go's ServerName). */
static int plan_url(kube_client *c, sbx_err *err)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *url = NULL;
    int r = -1;
    if (!u)
        xdie_oom();
    if (curl_url_set(u, CURLUPART_URL, c->t.server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        sbx_errf(err, "%s: the server URL \"%s\" is not valid", c->t.source, c->t.server);
        goto out;
    }
    c->tls = !strcmp(scheme, "https");
    if (c->t.tls_server_name && c->tls) {
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
        c->connect_to = xasprintf("%s:%s:%s:%s", c->t.tls_server_name, port, host, port);
        c->connect_to_list = curl_slist_append(NULL, c->connect_to);
        if (curl_url_set(u, CURLUPART_HOST, c->t.tls_server_name, 0) != CURLUE_OK) {
            sbx_errf(err, "%s: tls-server-name \"%s\" is not a host name", c->t.source,
                     c->t.tls_server_name);
            goto out;
        }
    }
    curl_url_set(u, CURLUPART_QUERY, NULL, 0);
    curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
    if (curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK) {
        sbx_errf(err, "%s: the server URL \"%s\" is not valid", c->t.source, c->t.server);
        goto out;
    }
    c->base = xstrdup(url);
    for (size_t n = strlen(c->base); n && c->base[n - 1] == '/'; n--)
        c->base[n - 1] = '\0';
    r = 0;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(url);
    curl_url_cleanup(u);
    return r;
}

kube_client *kube_client_new(const kube_target *t, sbx_err *err)
{
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK) {
        sbx_errf(err, "libcurl: %s", curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    kube_client *c = xcalloc(1, sizeof(*c));
    kube_target_copy(&c->t, t);
    c->budget_ms = 30000;
    c->timeout_ms = 30000;
    c->seed = (unsigned)getpid() ^ (unsigned)now_ns();
    if (!c->t.server || !c->t.source) {
        sbx_errf(err, "kube client: the target has no server");
        kube_client_free(c);
        return NULL;
    }
    if (plan_url(c, err) < 0) {
        kube_client_free(c);
        return NULL;
    }
    c->m = curl_multi_init();
    c->h = curl_easy_init();
    if (!c->m || !c->h)
        xdie_oom();
    apply_settings(c, c->h);
    return c;
}

void kube_client_free(kube_client *c)
{
    if (!c)
        return;
    if (c->h)
        curl_easy_cleanup(c->h);
    if (c->m)
        curl_multi_cleanup(c->m);
    curl_slist_free_all(c->connect_to_list);
    kube_target_free(&c->t);
    free(c->base);
    free(c->connect_to);
    if (c->file_token)
        explicit_bzero(c->file_token, strlen(c->file_token));
    free(c->file_token);
    kube_credential_free(&c->cred);
    free(c);
}

void kube_client_set_retry_budget(kube_client *c, unsigned ms)
{
    c->budget_ms = ms;
}

void kube_client_set_timeout(kube_client *c, unsigned ms)
{
    c->timeout_ms = ms ? ms : 30000;
}

void kube_client_set_interrupt(kube_client *c, bool (*interrupted)(void *ctx), void *ctx)
{
    c->interrupted = interrupted;
    c->ictx = ctx;
}

/* ---- credentials ----------------------------------------------------------------------- */

static void read_token_file(kube_client *c)
{
    char *data;
    size_t len;
    sbx_err e2;
    c->file_read_ns = now_ns();
    if (read_file(c->t.token_file, 1u << 20, &data, &len, &e2) < 0)
        return;  /* keep what we had; t.token is the fallback, as client-go's */
    while (len && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' '))
        data[--len] = '\0';
    size_t lead = strspn(data, " \t\r\n");
    if (len > lead) {
        if (c->file_token)
            explicit_bzero(c->file_token, strlen(c->file_token));
        free(c->file_token);
        c->file_token = xstrdup(data + lead);
    }
    explicit_bzero(data, len);
    free(data);
}

/* Gets a credential from the exec plugin when there is none or it has expired. */
static int ensure_exec_cred(kube_client *c, bool force, sbx_err *err)
{
    if (c->have_cred && !force &&
        (!c->cred.expires || (int64_t)time(NULL) + 10 < c->cred.expires))
        return 0;
    bool had_cert = c->have_cred && c->cred.cert_pem;
    kube_credential_free(&c->cred);
    c->have_cred = false;
    if (kube_exec_credential_poll(&c->t, c->interrupted, c->ictx, 0, &c->cred, err) < 0)
        return -1;
    c->have_cred = true;
    if (c->cred.cert_pem || had_cert)
        apply_settings(c, c->h);  /* the plugin's certificate replaces the kubeconfig's */
    return 0;
}

/* The Authorization header for this attempt (malloc'd), or NULL for none. Over plain
 * http no credential is sent, as kubectl does not. */
static int auth_header(kube_client *c, char **out, sbx_err *err)
{
    const char *bearer = NULL;
    *out = NULL;
    if (!c->tls)
        return 0;
    if (c->t.exec) {
        if (ensure_exec_cred(c, false, err) < 0)
            return -1;
        bearer = c->cred.token;
    }
    if (!bearer && c->t.token_file) {
        if (!c->file_read_ns || now_ns() - c->file_read_ns >= KC_TOKEN_REREAD_NS)
            read_token_file(c);
        bearer = c->file_token;
    }
    if (!bearer && c->t.token && c->t.token_expires &&
        (int64_t)time(NULL) + 10 >= c->t.token_expires)
        /* the oidc id-token ran out while this process lived (kubeconfig.c says why it is
         * not refreshed here) */
        return sbx_errf(err, "the oidc id-token of %s%s%s has expired; sbxsh does not refresh "
                        "oidc tokens: run any kubectl command with this context (it refreshes "
                        "the token into the kubeconfig), or use an exec plugin (kubelogin)",
                        c->t.source, c->t.context ? ", context " : "",
                        c->t.context ? c->t.context : "");
    if (!bearer)
        bearer = c->t.token;
    if (bearer) {
        *out = xasprintf("Authorization: Bearer %s", bearer);
    } else if (c->t.username || c->t.password) {
        strbuf up = STRBUF_INIT, b = STRBUF_INIT;
        strbuf_addf(&up, "%s:%s", c->t.username ? c->t.username : "",
                    c->t.password ? c->t.password : "");
        sbx_base64_encode(up.buf, up.len, &b);
        explicit_bzero(up.buf, up.len);
        strbuf_release(&up);
        *out = xasprintf("Authorization: Basic %s", b.buf);
        strbuf_release(&b);
    }
    return 0;
}

/* After a 401: whether there is a new credential to try (the plugin run again, the token
 * file changed). */
static int reauth(kube_client *c, bool *changed, sbx_err *err)
{
    *changed = false;
    if (!c->tls)
        return 0;
    if (c->t.exec) {
        if (ensure_exec_cred(c, true, err) < 0)
            return -1;
        *changed = true;
        return 0;
    }
    if (c->t.token_file) {
        char *old = c->file_token ? xstrdup(c->file_token) : NULL;
        read_token_file(c);
        *changed = c->file_token && (!old || strcmp(old, c->file_token));
        free(old);
    }
    return 0;
}

/* ---- transfers ------------------------------------------------------------------------- */

/* Runs the easy handle to its end through the multi handle, polling the interrupt hook
 * and deadline_ns (0: none) every 100 ms. */
static CURLcode run_transfer(kube_client *c, uint64_t deadline_ns, bool *interrupted,
                             bool *timed_out)
{
    CURLcode res = CURLE_OK;
    bool done = false;
    *interrupted = false;
    if (timed_out)
        *timed_out = false;
    c->errbuf[0] = '\0';
    if (curl_multi_add_handle(c->m, c->h) != CURLM_OK)
        return CURLE_FAILED_INIT;
    while (!done) {
        int running = 0, q;
        if (curl_multi_perform(c->m, &running) != CURLM_OK) {
            res = CURLE_FAILED_INIT;
            break;
        }
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(c->m, &q)))
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == c->h) {
                res = msg->data.result;
                done = true;
            }
        if (done)
            break;
        if (is_interrupted(c)) {
            *interrupted = true;
            res = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        if (deadline_ns && now_ns() >= deadline_ns) {
            if (timed_out)
                *timed_out = true;
            res = CURLE_OPERATION_TIMEDOUT;
            break;
        }
        curl_multi_poll(c->m, NULL, 0, 100, NULL);
    }
    curl_multi_remove_handle(c->m, c->h);
    return res;
}

typedef struct body_sink {
    strbuf *sb;
    bool too_big;
} body_sink;

/* An answer's body, up to KC_MAX_BODY: past it the transfer is aborted (too_big), so a
 * server cannot make us hold an unbounded body. */
static size_t body_write(char *data, size_t size, size_t n, void *ctx)
{
    body_sink *s = ctx;
    size_t len = size * n;
    if (s->sb->len + len > KC_MAX_BODY) {
        s->too_big = true;
        return 0;
    }
    strbuf_add(s->sb, data, len);
    return len;
}

static void set_method(CURL *h, const char *method, const char *body)
{
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(h, CURLOPT_NOBODY, 0L);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    if (strcmp(method, "GET") && (strcmp(method, "POST") || !body))
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
}

/* The headers of one attempt. */
static int build_headers(kube_client *c, const char *content_type, bool watch,
                         struct curl_slist **out, sbx_err *err)
{
    struct curl_slist *l = NULL;
    char *auth;
    if (auth_header(c, &auth, err) < 0)
        return -1;
    l = curl_slist_append(l, "Accept: application/json");
    if (content_type) {
        char *ct = xasprintf("Content-Type: %s", content_type);
        l = curl_slist_append(l, ct);
        free(ct);
    }
    l = curl_slist_append(l, "Expect:");
    if (watch)
        l = curl_slist_append(l, "Accept-Encoding: identity");
    if (auth) {
        l = curl_slist_append(l, auth);
        explicit_bzero(auth, strlen(auth));
        free(auth);
    }
    *out = l;
    return 0;
}

static void free_headers(CURL *h, struct curl_slist *l)
{
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    /* The Authorization line is a secret: wiped before it goes back to malloc. */
    for (struct curl_slist *p = l; p; p = p->next)
        explicit_bzero(p->data, strlen(p->data));
    curl_slist_free_all(l);
}

/* Retry bookkeeping of one request (or of a watch since its last good stream). */
typedef struct retry_state {
    uint64_t start;
    unsigned attempts;
    unsigned backoff_ms;
} retry_state;

static void retry_start(retry_state *rs)
{
    rs->start = now_ns();
    rs->attempts = 0;
    rs->backoff_ms = KC_BACKOFF_FIRST_MS;
}

/* Waits before the next attempt: Retry-After when the server gave one (retry_after_s >=
 * 0), else the backoff (doubling, with jitter so that many clients do not come back in
 * step). 0: go again; -1: the budget would run out (nothing waited); -2: interrupted. */
static int retry_wait(kube_client *c, retry_state *rs, long retry_after_s, uint64_t cap_ns)
{
    unsigned ms;
    if (retry_after_s >= 0) {
        ms = retry_after_s > 3600 ? 3600000u : (unsigned)retry_after_s * 1000u;
    } else {
        ms = rs->backoff_ms / 2 + (unsigned)(rand_r(&c->seed) % (rs->backoff_ms / 2 + 1));
        rs->backoff_ms = rs->backoff_ms * 2 > KC_BACKOFF_MAX_MS ? KC_BACKOFF_MAX_MS
                                                                : rs->backoff_ms * 2;
    }
    uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
    if (end > rs->start + (uint64_t)c->budget_ms * 1000000u)
        return -1;
    if (nap(c, ms, cap_ns) < 0)
        return -2;
    return 0;
}

/* The server's Retry-After (the header, or the Status's retryAfterSeconds), bounded: an
 * hour at most, so a server cannot park us for a day; -1 when it gave none. */
static long retry_after(kube_client *c, const kube_response *r)
{
    curl_off_t ra = -1;
    if (curl_easy_getinfo(c->h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
        return (long)ra;
    const cJSON *d = r->json ? cJSON_GetObjectItemCaseSensitive(r->json, "details") : NULL;
    const cJSON *s = d ? cJSON_GetObjectItemCaseSensitive(d, "retryAfterSeconds") : NULL;
    if (cJSON_IsNumber(s) && s->valuedouble > 0 && s->valuedouble < 3600)
        return (long)s->valuedouble;
    return -1;
}

/* The last attempt's error, and that no more will be made. */
static int gave_up(kube_client *c, retry_state *rs, sbx_err *err)
{
    if (!err)
        return -1;
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof(err->msg) - n, " (gave up after %u attempt%s in %.1f s: "
             "the next would end past the retry budget of %.1f s)", rs->attempts,
             rs->attempts == 1 ? "" : "s", (double)(now_ns() - rs->start) / 1e9,
             c->budget_ms / 1000.0);
    return -1;
}

/* One REST request with client-go's retry policy: 429, 500, 502-504 and transport failures
 * are tried again within the retry budget (backoff, or the server's Retry-After), a 401
 * once with a new credential; a POST only after a failure to connect, where it cannot
 * have reached the server (transport_retryable), so a create is never made twice. A
 * non-2xx answer becomes an error from its Status object. */
int kube_request(kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, kube_response *resp,
                 sbx_err *err)
{
    retry_state rs;
    bool reauthed = false;
    char *url = xasprintf("%s%s", c->base, path);
    int r = -1;
    kube_response_free(resp);
    retry_start(&rs);
    for (;;) {
        struct curl_slist *hdrs;
        body_sink sink = { &resp->body, false };
        bool intr;
        rs.attempts++;
        strbuf_reset(&resp->body);
        cJSON_Delete(resp->json);
        resp->json = NULL;
        resp->status = 0;
        if (build_headers(c, body ? content_type : NULL, false, &hdrs, err) < 0)
            break;
        curl_easy_setopt(c->h, CURLOPT_URL, url);
        set_method(c->h, method, body);
        curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, body_write);
        curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &sink);
        curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
        CURLcode res = run_transfer(c, 0, &intr, NULL);
        free_headers(c->h, hdrs);
        if (intr) {
            strbuf d = STRBUF_INIT;
            describe(method, path, &d);
            sbx_errf(err, "%s: interrupted", d.buf);
            strbuf_release(&d);
            break;
        }
        if (sink.too_big) {
            strbuf d = STRBUF_INIT;
            describe(method, path, &d);
            sbx_errf(err, "%s: the answer is larger than %u MiB", d.buf, KC_MAX_BODY >> 20);
            strbuf_release(&d);
            break;
        }
        long ra = -1;
        if (res == CURLE_OK) {
            curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &resp->status);
            if (resp->body.len)
                resp->json = cJSON_ParseWithLength(resp->body.buf, resp->body.len);
            if (resp->status >= 200 && resp->status < 300) {
                r = 0;
                break;
            }
            if (resp->status == 401 && !reauthed) {
                bool changed;
                reauthed = true;
                if (reauth(c, &changed, err) < 0)
                    break;
                if (changed)
                    continue;
            }
            status_error(c, method, path, resp, err);
            if (!status_retryable(resp->status))
                break;
            ra = retry_after(c, resp);
        } else {
            transport_error(c, res, method, path, err);
            if (!transport_retryable(res, method))
                break;
        }
        int w = retry_wait(c, &rs, ra, 0);
        if (w == -1) {
            gave_up(c, &rs, err);
            break;
        }
        if (w == -2) {
            sbx_err_prefix(err, "interrupted while waiting to retry");
            break;
        }
    }
    free(url);
    return r;
}

/* A GET of discovery from inside status_error: a short budget (it only adds to a
 * message), and its own 404 never asks discovery again (not a resource path). */
static int kube_request_raw(kube_client *c, const char *path, kube_response *resp,
                            sbx_err *err)
{
    unsigned budget = c->budget_ms;
    c->budget_ms = budget < 3000 ? budget : 3000;
    int r = kube_request(c, "GET", path, NULL, NULL, resp, err);
    c->budget_ms = budget;
    return r;
}

/* ---- watch ----------------------------------------------------------------------------- */

typedef struct watch_state {
    kube_client *c;
    const char *path;
    kube_watch_fn *fn;
    void *ctx;
    char **rv;
    kwatch_framer fr;
    int outcome;        /* 0: going on; 1 stop; -1 fail; KUBE_WATCH_GONE; 2: server error,
                           resume */
    sbx_err *err;
    long status;        /* of this attempt, once known */
    strbuf errbody;     /* a non-200 answer's body */
    unsigned events;    /* of this attempt */
    uint64_t last_byte_ns;
} watch_state;

static int watch_object(void *ctx, const char *json, size_t len, sbx_err *err)
{
    watch_state *w = ctx;
    kwatch_event ev;
    int r;
    if (kwatch_parse_event(json, len, &ev, err) < 0) {
        w->outcome = -1;
        return -1;
    }
    w->events++;
    if (!strcmp(ev.type, "ERROR")) {
        strbuf d = STRBUF_INIT;
        describe("GET", w->path, &d);
        if (ev.code == 410) {
            w->outcome = KUBE_WATCH_GONE;
        } else if (ev.code == 429 || ev.code >= 500) {
            w->outcome = 2;  /* the server's trouble: watch again after a pause */
        } else {
            w->outcome = -1;
        }
        sbx_errf(err, "watch %s: the server ended it: %d %s%s%s", d.buf, ev.code,
                 ev.reason ? ev.reason : http_reason(ev.code), ev.message ? ": " : "",
                 ev.message ? ev.message : "");
        strbuf_release(&d);
        kwatch_event_free(&ev);
        return 1;
    }
    if (ev.rv) {
        free(*w->rv);
        *w->rv = xstrdup(ev.rv);
    }
    r = w->fn(w->ctx, ev.type, ev.object, err);
    kwatch_event_free(&ev);
    if (r) {
        w->outcome = r > 0 ? 1 : -1;
        return 1;
    }
    return 0;
}

/* The watch's bytes as they come: a non-200 answer's body is kept (64 KiB at most) for the
 * error, a 200's goes through the event framer (kwatch_feed bounds each event); any
 * failure aborts the transfer (returning less than len). */
static size_t watch_write(char *data, size_t size, size_t n, void *ctx)
{
    watch_state *w = ctx;
    size_t len = size * n;
    w->last_byte_ns = now_ns();
    if (!w->status)
        curl_easy_getinfo(w->c->h, CURLINFO_RESPONSE_CODE, &w->status);
    if (w->status != 200) {
        if (w->errbody.len < 65536)
            strbuf_add(&w->errbody, data, len);
        return len;
    }
    int r = kwatch_feed(&w->fr, data, len, watch_object, w, w->err);
    if (r < 0 && !w->outcome) {
        strbuf d = STRBUF_INIT;
        describe("GET", w->path, &d);
        sbx_err_prefix(w->err, "watch %s", d.buf);
        strbuf_release(&d);
        w->outcome = -1;
    }
    return r ? 0 : len;
}

static void add_param(strbuf *url, const char *key, const char *value)
{
    char *e = kube_url_escape(value);
    strbuf_addf(url, "%c%s=%s", strchr(url->buf, '?') ? '&' : '?', key, e);
    free(e);
}

int kube_watch(kube_client *c, const char *path, const char *field_selector,
               const char *label_selector, char **resource_version, uint64_t deadline_ns,
               kube_watch_fn *fn, void *ctx, sbx_err *err)
{
    watch_state w;
    retry_state rs;
    bool reauthed = false;
    int r;
    memset(&w, 0, sizeof(w));
    w.c = c;
    w.path = path;
    w.fn = fn;
    w.ctx = ctx;
    w.rv = resource_version;
    w.err = err;
    strbuf_init(&w.errbody, 0);
    retry_start(&rs);
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline_ns) {
            r = KUBE_WATCH_TIMEOUT;
            sbx_errf(err, "watch %s: the deadline passed", path);
            break;
        }
        /* The server ends the watch near our deadline (or every few minutes, to be
         * re-made from the last resourceVersion). */
        uint64_t left_s = (deadline_ns - now + 999999999u) / 1000000000u;
        unsigned tmo = left_s > KC_WATCH_MAX_TIMEOUT_S ? KC_WATCH_MAX_TIMEOUT_S
                                                        : (unsigned)left_s;
        strbuf url = STRBUF_INIT;
        char num[16];
        strbuf_addf(&url, "%s%s", c->base, path);
        add_param(&url, "watch", "1");
        add_param(&url, "allowWatchBookmarks", "true");
        if (*resource_version && **resource_version)
            add_param(&url, "resourceVersion", *resource_version);
        if (field_selector && *field_selector)
            add_param(&url, "fieldSelector", field_selector);
        if (label_selector && *label_selector)
            add_param(&url, "labelSelector", label_selector);
        snprintf(num, sizeof(num), "%u", tmo);
        add_param(&url, "timeoutSeconds", num);

        struct curl_slist *hdrs;
        if (build_headers(c, NULL, true, &hdrs, err) < 0) {
            strbuf_release(&url);
            r = -1;
            break;
        }
        rs.attempts++;
        kwatch_framer_init(&w.fr);
        w.outcome = 0;
        w.status = 0;
        w.events = 0;
        strbuf_reset(&w.errbody);
        w.last_byte_ns = now_ns();
        uint64_t attempt_start = w.last_byte_ns;
        curl_easy_setopt(c->h, CURLOPT_URL, url.buf);
        set_method(c->h, "GET", NULL);
        curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, watch_write);
        curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &w);
        curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, 0L);
        /* A stream silent for longer than the server's own timeout plus slack is dead. */
        uint64_t idle_end = now_ns() + (uint64_t)(tmo + KC_WATCH_IDLE_SLACK_S) * 1000000000u;
        bool intr, timed_out;
        CURLcode res = run_transfer(c, idle_end < deadline_ns ? idle_end : deadline_ns, &intr,
                                    &timed_out);
        free_headers(c->h, hdrs);
        strbuf_release(&url);
        kwatch_framer_release(&w.fr);
        if (!w.status)
            curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &w.status);
        if (intr) {
            sbx_errf(err, "watch %s: interrupted", path);
            r = -1;
            break;
        }
        if (w.outcome == 1 || w.outcome == -1 || w.outcome == KUBE_WATCH_GONE) {
            r = w.outcome;
            break;
        }
        if (timed_out && now_ns() >= deadline_ns) {
            r = KUBE_WATCH_TIMEOUT;
            sbx_errf(err, "watch %s: the deadline passed", path);
            break;
        }
        long ra = -1;
        bool healthy = false;
        if (w.status && w.status != 200 && (res == CURLE_OK || w.errbody.len)) {
            kube_response resp = { w.status, w.errbody, NULL };
            resp.json = w.errbody.len ? cJSON_ParseWithLength(w.errbody.buf, w.errbody.len)
                                      : NULL;
            if (w.status == 401 && !reauthed) {
                bool changed;
                reauthed = true;
                cJSON_Delete(resp.json);
                if (reauth(c, &changed, err) < 0) {
                    r = -1;
                    break;
                }
                if (changed)
                    continue;
                resp.json = w.errbody.len
                                ? cJSON_ParseWithLength(w.errbody.buf, w.errbody.len)
                                : NULL;
            }
            strbuf wpath = STRBUF_INIT;
            strbuf_addf(&wpath, "%s%swatch=1", path, strchr(path, '?') ? "&" : "?");
            status_error(c, "GET", wpath.buf, &resp, err);
            strbuf_release(&wpath);
            ra = retry_after(c, &resp);
            cJSON_Delete(resp.json);
            if (w.status == 410) {
                r = KUBE_WATCH_GONE;
                break;
            }
            if (!status_retryable(w.status)) {
                r = -1;
                break;
            }
        } else if (w.outcome == 2) {
            /* an ERROR event of the server's own trouble: err says which */
        } else {
            /* The stream ended: the server's timeoutSeconds, a restart, a cut. A stream
             * that delivered events or lasted a while was healthy: resume from the last
             * resourceVersion at once, with a fresh budget. One that ended at once with
             * nothing is a failure like any other, so that it cannot spin. */
            healthy = w.status == 200 &&
                      (w.events || now_ns() - attempt_start > 1000000000u);
            if (res != CURLE_OK)
                transport_error(c, res, "GET", path, err);
            else
                sbx_errf(err, "watch %s: the server ended the stream at once", path);
            if (res != CURLE_OK && !healthy && res != CURLE_COULDNT_CONNECT &&
                !transport_retryable(res, "GET") && !timed_out) {
                r = -1;
                break;
            }
        }
        if (healthy) {
            retry_start(&rs);
            reauthed = false;
            continue;
        }
        int wr = retry_wait(c, &rs, ra, deadline_ns);
        if (wr == -1) {
            gave_up(c, &rs, err);
            r = -1;
            break;
        }
        if (wr == -2) {
            sbx_errf(err, "watch %s: interrupted", path);
            r = -1;
            break;
        }
    }
    strbuf_release(&w.errbody);
    return r;
}

/* ---- the exec upgrade's connection ----------------------------------------------------- */

static int connect_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut,
                            curl_off_t un)
{
    kube_client *c = ctx;
    return is_interrupted(c) ? 1 : 0;
}

void *kube_client_connect_only(kube_client *c, const char *path, strvec *hdrs, sbx_err *err)
{
    char *auth;
    if (auth_header(c, &auth, err) < 0)
        return NULL;
    CURL *h = curl_easy_init();
    if (!h)
        xdie_oom();
    char *url = xasprintf("%s%s", c->base, path);
    apply_settings(c, h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
    /* h2 makes curl_easy_send crash in 7.88, and a WebSocket upgrade is HTTP/1.1 (RFC 6455;
     * RFC 8441's h2 WebSockets are not what kube-apiserver serves exec on). The REST handle
     * keeps libcurl's default, h2 when the server offers it by ALPN, as kube-apiserver
     * does (tests/kube/h2.t). */
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, connect_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(c->timeout_ms < 10000 ? c->timeout_ms : 10000));
    CURLcode res = curl_easy_perform(h);
    free(url);
    if (res != CURLE_OK) {
        if (res == CURLE_ABORTED_BY_CALLBACK)
            sbx_errf(err, "connecting to the API server at %s: interrupted", c->t.server);
        else
            transport_error(c, res, "POST", path, err);
        curl_easy_cleanup(h);
        if (auth)
            explicit_bzero(auth, strlen(auth));
        free(auth);
        return NULL;
    }
    /* From here the caller owns h, which may outlive nothing of ours: the client's error
     * buffer, CONNECT_TO list and progress hook are let go (all are read only while
     * connecting). */
    curl_easy_setopt(h, CURLOPT_CONNECT_TO, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, NULL);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 1L);
    if (auth) {
        strvec_push(hdrs, auth);
        explicit_bzero(auth, strlen(auth));
        free(auth);
    }
    return h;
}

/* ---- the exec plugin's credential, handed from one sbx-kube to the next ----------------- */

static void add_b64_field(strbuf *out, const char *s)
{
    strbuf_addch(out, ' ');
    if (!s || !*s) {
        strbuf_addch(out, '-');
        return;
    }
    sbx_base64_encode(s, strlen(s), out);
}

/* The plugin's credential as one line ("EXPIRES TOKEN CERT KEY", each base64 or '-'), for
 * the next sbx-kube of the session, so that a plugin that asks for a browser login is not
 * run again for every command. It travels on a pipe (kube/backend.c), never in a file or
 * an argument. */
int kube_client_export_credential(kube_client *c, strbuf *out)
{
    if (!c->t.exec || !c->have_cred)
        return -1;
    strbuf_addf(out, "%lld", (long long)c->cred.expires);
    add_b64_field(out, c->cred.token);
    add_b64_field(out, c->cred.cert_pem);
    add_b64_field(out, c->cred.key_pem);
    return 0;
}

/* One base64 field of an exported credential: NULL for '-'; -1 when malformed. */
static int take_b64_field(char **p, char **out)
{
    char *s = *p, *end;
    *out = NULL;
    while (*s == ' ')
        s++;
    end = s + strcspn(s, " \n");
    if (end == s)
        return -1;
    *p = end;
    if (end - s == 1 && *s == '-')
        return 0;
    strbuf b = STRBUF_INIT;
    if (sbx_base64_decode(s, (size_t)(end - s), &b) < 0 || memchr(b.buf, '\0', b.len)) {
        explicit_bzero(b.buf, b.alloc);
        strbuf_release(&b);
        return -1;
    }
    *out = strbuf_detach(&b, NULL);
    return 0;
}

/* The line kube_client_export_credential made: every field checked (base64, no NUL, a
 * token or a whole certificate and key), the copy zeroed before it is freed. */
int kube_client_import_credential(kube_client *c, const char *text)
{
    if (!c->t.exec)
        return -1;
    char *copy = xstrdup(text), *p = copy, *end;
    kube_credential cr = { 0 };
    long long exp = strtoll(p, &end, 10);
    int r = -1;
    if (end != p && exp >= 0) {
        p = end;
        if (take_b64_field(&p, &cr.token) == 0 && take_b64_field(&p, &cr.cert_pem) == 0 &&
            take_b64_field(&p, &cr.key_pem) == 0 && (cr.token || cr.cert_pem) &&
            !cr.cert_pem == !cr.key_pem)
            r = 0;
    }
    explicit_bzero(copy, strlen(copy));
    free(copy);
    if (r < 0) {
        kube_credential_free(&cr);
        return -1;
    }
    cr.expires = (int64_t)exp;
    bool had_cert = c->have_cred && c->cred.cert_pem;
    kube_credential_free(&c->cred);
    c->cred = cr;
    c->have_cred = true;
    if (cr.cert_pem || had_cert)
        apply_settings(c, c->h);
    return 0;
}

int kube_client_reauth(kube_client *c, sbx_err *err)
{
    bool changed;
    if (reauth(c, &changed, err) < 0)
        return -1;
    return changed ? 0 : sbx_errf(err, "no other credential to try in %s", c->t.source);
}
