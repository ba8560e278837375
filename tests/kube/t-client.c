/*
 * The REST client (kube/client.c) against a scripted HTTPS stub (tests/kube/rest-stub.py,
 * certificates made by the openssl CLI in a scratch directory): answers, credentials,
 * Status messages, retries, TLS checks, watches cut and resumed, interrupts.
 */
#include "kube/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/tap.h"

static char *tmp;
static pid_t stub_pid;
static int port, plain_port;

static char *path_in(const char *name)
{
    return xasprintf("%s/%s", tmp, name);
}

static void put(const char *name, const char *content)
{
    char *p = path_in(name), *t = xasprintf("%s.tmp", p);
    int fd = open(t, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    if (fd < 0 || write_full(fd, content, strlen(content)) < 0 || close(fd) < 0 ||
        rename(t, p) < 0) {
        perror(p);
        exit(1);
    }
    free(p);
    free(t);
}

static char *slurp(const char *name)
{
    char *p = path_in(name), *data = NULL;
    size_t len;
    sbx_err e;
    if (read_file(p, 1 << 24, &data, &len, &e) < 0)
        data = xstrdup("");
    free(p);
    return data;
}

/* The stub's source: beside this test's source, found from the build tree or the cwd. */
static char *stub_script(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (access("tests/kube/rest-stub.py", R_OK) == 0)
        return realpath("tests/kube/rest-stub.py", NULL);
    if (n > 0) {
        exe[n] = '\0';
        /* BUILD/tests/kube/t-client.t: three levels up is the top */
        for (int i = 0; i < 4; i++) {
            char *s = strrchr(exe, '/');
            if (s)
                *s = '\0';
        }
        char *p = xasprintf("%s/tests/kube/rest-stub.py", exe);
        if (access(p, R_OK) == 0)
            return p;
        free(p);
    }
    return NULL;
}

static int start_stub(void)
{
    char *script = stub_script();
    int pfd[2];
    if (!script || pipe(pfd) < 0)
        return -1;
    stub_pid = fork();
    if (stub_pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        execl("/usr/bin/python3", "python3", script, tmp, (char *)NULL);
        _exit(127);
    }
    free(script);
    close(pfd[1]);
    /* Its first line is the port, once it listens (certificates made first). */
    char buf[32] = { 0 };
    size_t got = 0;
    uint64_t end = now_ns() + 60ull * 1000000000u;
    while (got < sizeof(buf) - 1 && !strchr(buf, '\n') && now_ns() < end) {
        struct pollfd p = { pfd[0], POLLIN, 0 };
        if (poll(&p, 1, 200) <= 0)
            continue;
        ssize_t n = read(pfd[0], buf + got, sizeof(buf) - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(pfd[0]);
    if (sscanf(buf, "%d %d", &port, &plain_port) != 2)
        return -1;
    return port > 0 && plain_port > 0 ? 0 : -1;
}

static void stop_stub(void)
{
    if (stub_pid > 0) {
        kill(stub_pid, SIGTERM);
        waitpid(stub_pid, NULL, 0);
    }
}

static void load_pem(const char *name, char **out, size_t *len)
{
    char *p = path_in(name);
    sbx_err e;
    if (read_file(p, 1 << 20, out, len, &e) < 0) {
        diag("%s", e.msg);
        exit(1);
    }
    free(p);
}

/* A target for the stub: its CA, a token. */
static void target(kube_target *t, const char *token)
{
    memset(t, 0, sizeof(*t));
    t->source = xstrdup("test-kubeconfig");
    t->context = xstrdup("stub");
    t->server = xasprintf("https://127.0.0.1:%d", port);
    t->namespace_ = xstrdup("ns");
    load_pem("ca.crt", &t->ca_pem, &t->ca_len);
    if (token)
        t->token = xstrdup(token);
}

static kube_client *client_for(kube_target *t)
{
    sbx_err err;
    kube_client *c = kube_client_new(t, &err);
    if (!c) {
        diag("kube_client_new: %s", err.msg);
        exit(1);
    }
    kube_client_set_retry_budget(c, 3000);
    return c;
}

static const char *json_str_at(const cJSON *j, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int connections(kube_client *c)
{
    kube_response r = { 0 };
    sbx_err err;
    int n = -1;
    if (kube_request(c, "GET", "/stats", NULL, NULL, &r, &err) == 0) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r.json, "connections");
        n = cJSON_IsNumber(v) ? v->valueint : -1;
    }
    kube_response_free(&r);
    return n;
}

#define WHOAMI "/api/v1/namespaces/ns/pods/whoami"
#define CLAIMS(ns) "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/" ns "/sandboxclaims"

static void test_basics(void)
{
    kube_target t;
    kube_response r = { 0 };
    sbx_err err = { "" };
    target(&t, "tok-1");
    kube_client *c = client_for(&t);

    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0, "GET: 200 is success");
    is_int(r.status, 200, "GET: the status is there");
    is_str(json_str_at(r.json, "metadata", "name"), "whoami", "GET: the JSON is parsed");
    is_str(json_str_at(r.json, "user", NULL), "token:tok-1", "GET: the bearer token was sent");

    int before = connections(c);
    for (int i = 0; i < 3; i++)
        kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err);
    int after = connections(c);
    ok(before > 0 && after == before,
       "one connection serves a client's requests (%d TLS connections before, %d after)",
       before, after);

    is_int(kube_request(c, "POST", CLAIMS("ns"), "application/json",
                        "{\"metadata\":{\"name\":\"c1\"}}", &r, &err), 0,
           "POST: 201 is success");
    is_int(r.status, 201, "POST: status 201");
    is_str(json_str_at(r.json, "metadata", "resourceVersion"), "7", "POST: the stored object");

    is_int(kube_request(c, "POST", CLAIMS("locked"), "application/json", "{}", &r, &err), -1,
           "403: an error");
    is_int(r.status, 403, "403: the caller sees the status");
    ok(strstr(err.msg, "may not create sandboxclaims.extensions.agents.x-k8s.io in namespace "
                       "locked") != NULL,
       "403: the message names the verb, the resource and the namespace");
    ok(strstr(err.msg, "cannot create resource") && strstr(err.msg, "RBAC"),
       "403: it quotes the Status message and says what to ask for");
    diag("%s", err.msg);

    is_int(kube_request(c, "GET", "/api/v1/namespaces/ns/pods/missing", NULL, NULL, &r, &err),
           -1, "404: an error");
    is_int(r.status, 404, "404: the caller can tell it from other failures");
    is_str(json_str_at(r.json, "reason", NULL), "NotFound", "404: the Status is in resp->json");
    ok(strstr(err.msg, "get pods \"missing\" in namespace ns: not found") != NULL,
       "404: the message says what was not found");

    is_int(kube_request(c, "GET", "/api/v1/namespaces/ns/pods/busy", NULL, NULL, &r, &err), 0,
           "429 with Retry-After, then 200: success");
    ok(cJSON_GetObjectItem(r.json, "attempts") &&
       cJSON_GetObjectItem(r.json, "attempts")->valueint == 2,
       "429: asked twice");

    kube_client_set_retry_budget(c, 1500);
    is_int(kube_request(c, "GET", "/api/v1/namespaces/ns/pods/storm", NULL, NULL, &r, &err),
           -1, "503 storm: an error once the budget is spent");
    is_int(r.status, 503, "503 storm: the last status");
    ok(strstr(err.msg, "gave up after") && strstr(err.msg, "503 ServiceUnavailable: the storm "
                                                           "goes on"),
       "503 storm: the message says it gave up, and the last answer");
    diag("%s", err.msg);
    char *log = slurp("requests.log");
    int storms = 0;
    for (char *p = log; (p = strstr(p, "/pods/storm")); p++)
        storms++;
    ok(storms >= 2, "503 storm: retried (%d attempts)", storms);
    free(log);

    kube_response_free(&r);
    kube_client_free(c);
    kube_target_free(&t);

    char *u = kube_url_escape("metadata.name=a b/c~");
    is_str(u, "metadata.name%3Da%20b%2Fc~", "kube_url_escape");
    free(u);
}

static void test_credentials(void)
{
    kube_target t;
    kube_response r = { 0 };
    sbx_err err = { "" };

    /* tokenFile: re-read after a 401 */
    put("tokens", "tok-1\n");
    put("tokfile", "tok-1\n");
    target(&t, NULL);
    t.token_file = path_in("tokfile");
    kube_client *c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0, "tokenFile: accepted");
    is_str(json_str_at(r.json, "user", NULL), "token:tok-1", "tokenFile: its token sent");
    put("tokens", "tok-2\n");
    put("tokfile", "tok-2\n");
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0,
           "tokenFile rotated: the 401 makes the client read it again");
    is_str(json_str_at(r.json, "user", NULL), "token:tok-2", "tokenFile: the new token sent");
    put("tokens", "tok-3\n");
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), -1,
           "401 with no new token: an error");
    is_int(r.status, 401, "401: the status");
    ok(strstr(err.msg, "did not accept the credentials of test-kubeconfig") != NULL,
       "401: the message says whose credentials were refused");
    diag("%s", err.msg);
    kube_client_free(c);
    kube_target_free(&t);

    /* exec plugin: run again after a 401 */
    put("plugin.sh", "#!/bin/sh\n"
                     "n=$(cat \"$0.count\" 2>/dev/null || echo 0); n=$((n+1)); echo $n >\"$0.count\"\n"
                     "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
                     "\"ExecCredential\",\"status\":{\"token\":\"tok-e'$n'\"}}'\n");
    put("tokens", "tok-e2\n");
    target(&t, NULL);
    t.exec = xcalloc(1, sizeof(*t.exec));
    t.exec->command = path_in("plugin.sh");
    strvec_init(&t.exec->args);
    strvec_init(&t.exec->env);
    t.exec->api_version = xstrdup("client.authentication.k8s.io/v1");
    t.exec->interactive_mode = xstrdup("Never");
    c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0,
           "exec plugin: its first token refused, the plugin run again, the second accepted");
    is_str(json_str_at(r.json, "user", NULL), "token:tok-e2", "exec plugin: the new token");
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0, "exec plugin: again");
    char *count = slurp("plugin.sh.count");
    is_str(count, "2\n", "exec plugin: its credential is cached (run twice for 3 requests)");
    free(count);
    kube_client_free(c);
    kube_target_free(&t);

    /* client certificate */
    target(&t, NULL);
    load_pem("client.crt", &t.cert_pem, &t.cert_len);
    load_pem("client.key", &t.key_pem, &t.key_len);
    c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0,
           "client certificate: accepted");
    is_str(json_str_at(r.json, "user", NULL), "cert:sbx-user",
           "client certificate: the stub saw its CN");
    kube_client_free(c);
    kube_target_free(&t);

    /* the oidc auth-provider's id-token: sent while valid; once within 10 s of its exp
     * (as client-go's expiryDelta), refused here with what to do, nothing sent */
    put("tokens", "tok-oidc\n");
    target(&t, "tok-oidc");
    t.token_expires = (int64_t)time(NULL) + 3600;
    c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0, "oidc id-token: sent");
    is_str(json_str_at(r.json, "user", NULL), "token:tok-oidc", "oidc id-token: as the bearer");
    kube_client_free(c);
    kube_target_free(&t);
    target(&t, "tok-oidc");
    t.token_expires = (int64_t)time(NULL) + 5;
    c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), -1,
           "oidc id-token expiring within 10 s: the request is not made");
    ok(strstr(err.msg, "oidc id-token of test-kubeconfig, context stub has expired") &&
       strstr(err.msg, "kubectl"), "...saying so, and that kubectl refreshes it: %s", err.msg);
    kube_client_free(c);
    kube_target_free(&t);

    /* exec plugin: a client certificate, and an expiry that has passed */
    put("certplugin.sh", "#!/bin/sh\n"
                         "d=$(dirname \"$0\")\n"
                         "echo x >>\"$0.runs\"\n"
                         "pem() { awk '{printf \"%s\\\\n\", $0}' \"$d/$1\"; }\n"
                         "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                         "\"kind\":\"ExecCredential\",\"status\":{\"clientCertificateData\":"
                         "\"%s\",\"clientKeyData\":\"%s\",\"expirationTimestamp\":"
                         "\"2001-02-03T04:05:06Z\"}}' \"$(pem client.crt)\" \"$(pem client.key)\"\n");
    target(&t, NULL);
    t.exec = xcalloc(1, sizeof(*t.exec));
    t.exec->command = path_in("certplugin.sh");
    strvec_init(&t.exec->args);
    strvec_init(&t.exec->env);
    t.exec->api_version = xstrdup("client.authentication.k8s.io/v1beta1");
    c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0,
           "exec plugin certificate: accepted");
    if (r.status != 200)
        diag("%s", err.msg);
    is_str(json_str_at(r.json, "user", NULL), "cert:sbx-user",
           "exec plugin certificate: the stub saw the plugin's certificate");
    kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err);
    count = slurp("certplugin.sh.runs");
    is_str(count, "x\nx\n", "exec plugin: an expired credential is not used again");
    free(count);
    kube_client_free(c);
    kube_target_free(&t);

    /* plain http: no credential goes out */
    put("tokens", "tok-1\n");
    target(&t, "tok-1");
    free(t.server);
    t.server = xasprintf("http://127.0.0.1:%d", plain_port);
    c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), -1,
           "plain http: the token is not sent (the stub says 401)");
    ok(strstr(err.msg, "none are sent over plain http") != NULL, "plain http: ... and why");
    char *plog = slurp("requests.log");
    size_t pl = strlen(plog);
    const char *last = pl > 1 ? plog + pl - 1 : plog;
    while (last > plog && last[-1] != '\n')
        last--;
    is_str(last, "GET " WHOAMI " -\n", "plain http: the stub got no Authorization header");
    free(plog);
    diag("%s", err.msg);
    kube_client_free(c);
    kube_target_free(&t);

    /* proxy-url: through an HTTP CONNECT proxy */
    target(&t, "tok-1");
    t.proxy_url = xasprintf("http://127.0.0.1:%d", plain_port);
    c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0, "proxy-url: answered");
    if (r.status != 200)
        diag("%s", err.msg);
    char *want = xasprintf("CONNECT 127.0.0.1:%d -", port);
    plog = slurp("requests.log");
    ok(strstr(plog, want) != NULL, "proxy-url: the connection went through the proxy");
    free(plog);
    free(want);
    kube_client_free(c);
    kube_target_free(&t);

    /* the exec upgrade's handle: connected, HTTP/1.1, the credential's header */
    put("tokens", "tok-1\n");
    target(&t, "tok-1");
    c = client_for(&t);
    strvec hdrs = STRVEC_INIT;
    CURL *h = kube_client_connect_only(c, WHOAMI, &hdrs, &err);
    ok(h != NULL, "connect_only: a connected handle");
    ok(hdrs.n == 1 && !strcmp(hdrs.v[0], "Authorization: Bearer tok-1"),
       "connect_only: the Authorization header to send");
    if (h) {
        char *req = xasprintf("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\nConnection: "
                              "close\r\n\r\n", WHOAMI, port, hdrs.n ? hdrs.v[0] : "");
        size_t off = 0, sent;
        strbuf in = STRBUF_INIT;
        uint64_t end = now_ns() + 10000000000ull;
        while (off < strlen(req) && now_ns() < end) {
            CURLcode rc = curl_easy_send(h, req + off, strlen(req) - off, &sent);
            if (rc == CURLE_OK)
                off += sent;
            else if (rc != CURLE_AGAIN)
                break;
        }
        while (now_ns() < end && !strstr(in.buf, "}")) {
            char buf[4096];
            size_t n = 0;
            CURLcode rc = curl_easy_recv(h, buf, sizeof(buf), &n);
            if (rc == CURLE_AGAIN) {
                curl_socket_t fd;
                curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &fd);
                struct pollfd p = { (int)fd, POLLIN, 0 };
                poll(&p, 1, 100);
                continue;
            }
            if (rc != CURLE_OK || !n)
                break;
            strbuf_add(&in, buf, n);
        }
        ok(!strncmp(in.buf, "HTTP/1.1 200", 12) && strstr(in.buf, "token:tok-1"),
           "connect_only: a request written by hand over it is answered");
        strbuf_release(&in);
        free(req);
        curl_easy_cleanup(h);
    }
    strvec_clear(&hdrs);
    kube_client_free(c);
    kube_target_free(&t);
    kube_response_free(&r);
}

static void test_tls(void)
{
    kube_target t;
    kube_response r = { 0 };
    sbx_err err = { "" };

    target(&t, "tok-1");
    free(t.ca_pem);
    load_pem("rogue.crt", &t.ca_pem, &t.ca_len);
    kube_client *c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), -1,
           "another CA: the server's certificate is refused");
    is_int(r.status, 0, "another CA: no answer was read");
    ok(strstr(err.msg, "has a certificate that the kubeconfig's certificate authority does "
                       "not vouch for") != NULL,
       "another CA: the message says so");
    diag("%s", err.msg);
    kube_client_free(c);
    kube_target_free(&t);

    target(&t, "tok-1");
    free(t.ca_pem);
    t.ca_pem = NULL;
    t.ca_len = 0;
    t.insecure = true;
    c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0,
           "insecure-skip-tls-verify: no CA needed");
    kube_client_free(c);
    kube_target_free(&t);

    target(&t, "tok-1");
    t.tls_server_name = xstrdup("wrong.test");
    c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), -1,
           "tls-server-name: a name the certificate lacks is refused (though the IP is in it)");
    ok(strstr(err.msg, "does not vouch for") && strstr(err.msg, "tls-server-name"),
       "tls-server-name: the certificate check is what failed");
    diag("%s", err.msg);
    kube_client_free(c);
    free(t.tls_server_name);
    t.tls_server_name = xstrdup("kube.test");
    c = client_for(&t);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), 0,
           "tls-server-name: the name it has is accepted, connecting to the server's address");
    kube_client_free(c);
    kube_target_free(&t);

    /* a port where nobody listens */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof(a);
    bind(s, (struct sockaddr *)&a, sizeof(a));
    getsockname(s, (struct sockaddr *)&a, &al);
    close(s);
    target(&t, "tok-1");
    free(t.server);
    t.server = xasprintf("https://127.0.0.1:%d", ntohs(a.sin_port));
    c = client_for(&t);
    kube_client_set_retry_budget(c, 700);
    is_int(kube_request(c, "GET", WHOAMI, NULL, NULL, &r, &err), -1, "refused: an error");
    is_int(r.status, 0, "refused: no status");
    ok(strstr(err.msg, "cannot reach the API server at https://127.0.0.1:") &&
       strstr(err.msg, "gave up after"),
       "refused: retried, then the message says the server cannot be reached");
    diag("%s", err.msg);
    kube_client_free(c);
    kube_target_free(&t);
    kube_response_free(&r);
}

typedef struct seen {
    strbuf log;
} seen;

static int on_event(void *ctx, const char *type, const cJSON *obj, sbx_err *err)
{
    seen *s = ctx;
    strbuf_addf(&s->log, "%s%s:%s", s->log.len ? " " : "", type,
                json_str_at(obj, "metadata", "resourceVersion"));
    return !strcmp(type, "DELETED") ? 1 : 0;
}

static int calls;
static bool interrupt_after_5(void *ctx)
{
    return ++calls > 5;
}

#define PODS "/api/v1/namespaces/ns/pods"

static void test_watch(void)
{
    kube_target t;
    sbx_err err = { "" };
    seen s = { STRBUF_INIT };
    char *rv = NULL;
    target(&t, "tok-1");
    kube_client *c = client_for(&t);
    uint64_t far = now_ns() + 30000000000ull;

    is_int(kube_watch(c, PODS, "metadata.name=cut", NULL, &rv, far, on_event, &s, &err), 1,
           "watch: ends when fn says stop");
    is_str(s.log.buf, "ADDED:10 MODIFIED:11 MODIFIED:12 BOOKMARK:13 DELETED:14",
           "watch: every event, across the cut, none twice, the half event dropped");
    is_str(rv, "14", "watch: the resource version follows the events");
    char *log = slurp("requests.log");
    ok(strstr(log, "resourceVersion=11") != NULL,
       "watch: resumed from the last resourceVersion seen");
    ok(strstr(log, "allowWatchBookmarks=true") && strstr(log, "timeoutSeconds="),
       "watch: asks for bookmarks and a server-side timeout");
    free(log);

    strbuf_reset(&s.log);
    is_int(kube_watch(c, PODS, "metadata.name=flaky", NULL, &rv, far, on_event, &s, &err), 1,
           "watch: a 503 first is retried");
    is_str(s.log.buf, "ADDED:1 DELETED:2", "watch: ... then the events");
    strbuf_reset(&s.log);
    free(rv);
    rv = NULL;
    is_int(kube_watch(c, PODS, "metadata.name=error-500", NULL, &rv, far, on_event, &s, &err), 1,
           "watch: an ERROR event with code 500 is watched again");
    is_str(s.log.buf, "ADDED:1 DELETED:2", "watch: ... then the events");

    free(rv);
    rv = xstrdup("3");
    is_int(kube_watch(c, PODS, "metadata.name=gone", NULL, &rv, far, on_event, &s, &err),
           KUBE_WATCH_GONE, "watch: 410 is KUBE_WATCH_GONE");
    is_int(kube_watch(c, PODS, "metadata.name=gone-event", NULL, &rv, far, on_event, &s, &err),
           KUBE_WATCH_GONE, "watch: an ERROR event with code 410 is KUBE_WATCH_GONE");
    ok(strstr(err.msg, "too old resource version") != NULL, "watch: 410's message kept");

    is_int(kube_watch(c, PODS, "metadata.name=quiet", NULL, &rv, now_ns() + 1200000000u,
                      on_event, &s, &err),
           KUBE_WATCH_TIMEOUT, "watch: the deadline passing is KUBE_WATCH_TIMEOUT");

    is_int(kube_watch(c, PODS, "metadata.name=garbage", NULL, &rv, far, on_event, &s, &err),
           -1, "watch: bytes that are not events are an error");
    ok(strstr(err.msg, "not JSON events") != NULL, "watch: ... that says so");

    kube_client_set_interrupt(c, interrupt_after_5, NULL);
    calls = 0;
    is_int(kube_watch(c, PODS, "metadata.name=quiet", NULL, &rv, far, on_event, &s, &err), -1,
           "interrupt: ends a silent watch");
    ok(strstr(err.msg, "interrupted") != NULL, "interrupt: the watch says so");
    kube_response r = { 0 };
    calls = 0;
    is_int(kube_request(c, "GET", PODS "/slow", NULL, NULL, &r, &err), -1,
           "interrupt: ends a request waiting for its answer");
    ok(strstr(err.msg, "interrupted") != NULL, "interrupt: the request says so");
    calls = 0;
    kube_client_set_retry_budget(c, 60000);
    is_int(kube_request(c, "GET", PODS "/storm", NULL, NULL, &r, &err), -1,
           "interrupt: ends the wait between retries");
    ok(strstr(err.msg, "interrupted") != NULL, "interrupt: the retry wait says so");

    /* a server that takes the connection and never says a word: the TLS handshake waits */
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof(a);
    if (bind(ls, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(ls, 8) == 0 &&
        getsockname(ls, (struct sockaddr *)&a, &al) == 0) {
        kube_target mute;
        target(&mute, "tok-1");
        free(mute.server);
        mute.server = xasprintf("https://127.0.0.1:%d", ntohs(a.sin_port));
        kube_client *mc = client_for(&mute);
        kube_client_set_interrupt(mc, interrupt_after_5, NULL);
        calls = 0;
        is_int(kube_request(mc, "GET", WHOAMI, NULL, NULL, &r, &err), -1,
               "interrupt: ends a request stuck in the TLS handshake");
        ok(strstr(err.msg, "interrupted") != NULL, "interrupt: ... saying so");
        strvec hv = STRVEC_INIT;
        calls = 0;
        void *h = kube_client_connect_only(mc, WHOAMI, &hv, &err);
        ok(!h && strstr(err.msg, "interrupted"),
           "interrupt: ends the exec connection's TLS handshake: %s", err.msg);
        if (h)
            curl_easy_cleanup(h);
        strvec_clear(&hv);
        kube_client_free(mc);
        kube_target_free(&mute);
    }
    close(ls);
    kube_response_free(&r);

    free(rv);
    strbuf_release(&s.log);
    kube_client_free(c);
    kube_target_free(&t);
}

int main(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    tmp = xasprintf("%s/sbx-kclient-XXXXXX", base);
    if (!mkdtemp(tmp))
        return perror("mkdtemp"), 1;
    if (access("/usr/bin/python3", X_OK) != 0 || system("openssl version >/dev/null 2>&1")) {
        skip("python3 or openssl missing (make deps installs them)");
    } else if (start_stub() < 0) {
        ok(0, "the stub API server started");
    } else {
        put("tokens", "tok-1\n");
        test_basics();
        test_credentials();
        test_tls();
        test_watch();
    }
    stop_stub();
    char *cmd = xasprintf("rm -rf '%s'", tmp);
    if (system(cmd))
        diag("could not remove %s", tmp);
    free(cmd);
    free(tmp);
    return done_testing();
}
