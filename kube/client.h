/*
 * A Kubernetes REST client: requests, JSON answers, retries, watches.
 *
 * One client holds one libcurl easy handle, so that a holder's requests reuse one
 * connection (and its TLS session). Credentials come from the kube_target: a bearer
 * token (token_file re-read and the exec plugin re-run on a 401, once), a client
 * certificate from memory, basic auth. As kubectl, no credential is sent to an http://
 * server (only https). The token file is also re-read each minute (it rotates);
 * the exec plugin's credential is kept until its expirationTimestamp.
 *
 * Errors: a non-2xx answer is -1 with a message built from the Status object that
 * says what to fix ("sbxsh's user system:serviceaccount:ns:x may not create
 * sandboxclaims.extensions.agents.x-k8s.io in namespace ns: ask for the RBAC in ..."),
 * and resp->status set so that callers can tell 404 or 409 from the rest. 429, 500,
 * 502, 503, 504 and connection failures are retried with exponential backoff (honouring
 * Retry-After) until the client's retry budget runs out; 4xx otherwise never are.
 *
 *   kube_client *c = kube_client_new(&target, &err);
 *   kube_response r = { 0 };
 *   if (kube_request(c, "GET", "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/"
 *                    "sandboxclaims/x", NULL, NULL, &r, &err) < 0) ...
 *   ... r.json ...
 *   kube_response_free(&r);
 */
#ifndef SBX_KUBE_CLIENT_H
#define SBX_KUBE_CLIENT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "common/strvec.h"
#include "common/util.h"
#include "kube/kubeconfig.h"

typedef struct kube_client kube_client;

/* Copies what it needs of t (the client does not keep t). */
kube_client *kube_client_new(const kube_target *t, sbx_err *err);
void kube_client_free(kube_client *c);

/* The total time retries of one request may take (default 30 s). */
void kube_client_set_retry_budget(kube_client *c, unsigned ms);
/* Total timeout of one attempt of a non-watch request (default 30 s). */
void kube_client_set_timeout(kube_client *c, unsigned ms);

/* Whether the user interrupted (SIGINT seen): every wait inside the client polls this, so
 * that Ctrl-C ends a request or a watch within a few hundred milliseconds with an error
 * saying so. NULL (the default): nothing interrupts. */
void kube_client_set_interrupt(kube_client *c, bool (*interrupted)(void *ctx), void *ctx);

typedef struct kube_response {
    long status;            /* HTTP status, 0 when no answer came */
    strbuf body;
    cJSON *json;            /* the body parsed, or NULL */
} kube_response;

void kube_response_free(kube_response *r);

/* method: GET POST PUT PATCH DELETE; path: absolute, with its query ("/api/v1/..."?...);
 * content_type: for a body ("application/json", "application/merge-patch+json"), or NULL.
 * Returns 0 for a 2xx answer, else -1 with err filled (resp->status tells which). */
int kube_request(kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, kube_response *resp,
                 sbx_err *err);

/* Percent-encodes s for a query value or a path segment. Malloc'd. */
char *kube_url_escape(const char *s);

/* ---- watch ------------------------------------------------------------------------------
 *
 * kube_watch() runs GET path?watch=1&resourceVersion=RV&allowWatchBookmarks=true
 * [&fieldSelector=..][&labelSelector=..]&timeoutSeconds=N and calls fn for each event
 * (type "ADDED", "MODIFIED", "DELETED", "BOOKMARK"; "ERROR" events are turned into a
 * return value, below). *resource_version is updated from every event, and a watch that
 * the server or the network ends is resumed from it, until fn says stop or the deadline
 * passes.
 *
 * fn returns 0 to go on, 1 to stop (kube_watch returns 1), -1 to fail (kube_watch
 * returns -1 with fn's err).
 *
 * Returns KUBE_WATCH_GONE when the resource version is too old (410, or an ERROR event
 * with code 410): the caller lists again (a GET gives a fresh resourceVersion) and
 * watches from there. Returns KUBE_WATCH_TIMEOUT when deadline_ns (now_ns() clock)
 * passes first. */
typedef int kube_watch_fn(void *ctx, const char *type, const cJSON *object, sbx_err *err);

#define KUBE_WATCH_GONE (-2)
#define KUBE_WATCH_TIMEOUT (-3)

int kube_watch(kube_client *c, const char *path, const char *field_selector,
               const char *label_selector, char **resource_version, uint64_t deadline_ns,
               kube_watch_fn *fn, void *ctx, sbx_err *err);

/* The curl handle, connected and authenticated, for a CONNECT_ONLY upgrade (exec.c):
 * a NEW easy handle (HTTP/1.1 forced) on the same server with the same TLS settings,
 * and the headers of the credentials to send (e.g. "Authorization: Bearer ..."),
 * appended to hdrs. The caller curl_easy_cleanup()s it. */
void *kube_client_connect_only(kube_client *c, const char *path, strvec *hdrs,
                               sbx_err *err);

/* After the server said 401 to a request made outside kube_request (the exec upgrade):
 * gets a new credential (the exec plugin run again, the token file re-read). 0 when there
 * is a new one to try (call kube_client_connect_only again), -1 with err otherwise. */
int kube_client_reauth(kube_client *c, sbx_err *err);

/* The exec plugin's credential, passed from the claim's sbx-kube to the stream's through
 * the holder (a pipe, never a file or an argument), so that the plugin runs once for a
 * session's first command, as client-go runs it once per process: export writes one line
 * ("EXPIRES TOKEN CERT KEY", base64 or '-') when the client holds one (-1: none, or the
 * target has no plugin); import takes it (-1: malformed, or no plugin), and it is used
 * until its expirationTimestamp, then the plugin runs again, as after a 401. */
int kube_client_export_credential(kube_client *c, strbuf *out);
int kube_client_import_credential(kube_client *c, const char *text);

/* The User-Agent of every request, the exec's upgrade too: "sbxsh/VERSION (linux/ARCH)". */
const char *kube_user_agent(void);

#endif
