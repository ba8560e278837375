/*
 * sbx-kube claim, check and release: the session's SandboxClaim.
 *
 * claim, as a state machine:
 *   1. the claim kube.json records, bound, with its pod still the one recorded (same uid),
 *      Running and not being deleted, is reattached to whatever its Ready says at that
 *      moment (Ready flaps under load); else one of the session's claims found by their
 *      key label that is Ready; the shutdownTime is moved forward. A broken one (its pod
 *      gone, replaced or in its grace period: the files and processes are lost) is deleted;
 *   2. else a new claim: warmPoolRef = the pool, shutdownTime = now + TTL, shutdownPolicy
 *      Delete, sbxsh's labels; never spec.env nor volumeClaimTemplates (either forces a cold
 *      start even when warm pods wait: forwarded variables travel in the agent protocol);
 *   3. a watch on it (from the create's resourceVersion, resumed on disconnect, relisted on
 *      410) until Ready=True with status.sandbox.name; a terminal reason or the timeout
 *      deletes the claim and fails, quoting the last condition; after half a second one
 *      "progress" line says what it waits for;
 *   4. the pod: the Sandbox's agents.x-k8s.io/pod-name annotation, else its name; its uid,
 *      node and container go into kube.json.
 */
#include "kube/tool.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_AFTER_NS 500000000ULL
#define KT_DEFAULT_CONTAINER "kubectl.kubernetes.io/default-container"

/* A label value: at most 63 of [A-Za-z0-9._-], alphanumeric at both ends ("x" if none). */
static void label_value(const char *s, char *out, size_t n)
{
    size_t j = 0;
    for (; *s && j + 1 < n && j < 63; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!j && !(ok && c != '.' && c != '_' && c != '-'))
            continue;
        out[j++] = ok ? c : '_';
    }
    while (j && (out[j - 1] == '.' || out[j - 1] == '_' || out[j - 1] == '-'))
        j--;
    if (!j)
        out[j++] = 'x';
    out[j] = '\0';
}

static const char *user_name(void)
{
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_name ? pw->pw_name : "unknown";
}

/* "sbx-<session, lower-cased, 30 at most>-<8 random hex>": a DNS-1123 name. */
static char *new_claim_name(const char *session)
{
    unsigned char rnd[4] = { 0 };
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    strbuf sb = STRBUF_INIT;
    if (fd >= 0) {
        if (read_full(fd, rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd))
            memset(rnd, 0, sizeof(rnd));
        close(fd);
    }
    strbuf_addstr(&sb, "sbx-");
    for (const char *p = session; *p && sb.len < 34; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            c = '-';
        if (c == '-' && sb.buf[sb.len - 1] == '-')
            continue;
        strbuf_addch(&sb, c);
    }
    if (sb.buf[sb.len - 1] != '-')
        strbuf_addch(&sb, '-');
    strbuf_addf(&sb, "%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3]);
    return strbuf_detach(&sb, NULL);
}

static const cJSON *ready_condition(const cJSON *claim)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(claim, "status"), "conditions")) {
        const char *t = kt_jstr(c, "type");
        if (t && !strcmp(t, "Ready"))
            return c;
    }
    return NULL;
}

/* status.sandbox.name (or .Name, as before agent-sandbox PR #440), else the claim's
 * agents.x-k8s.io/sandbox-name annotation. */
static const char *bound_sandbox(const cJSON *claim)
{
    const char *s = kt_jstr(claim, "status.sandbox.name");
    if (!s)
        s = kt_jstr(claim, "status.sandbox.Name");
    return s && *s ? s : NULL;
}

typedef enum { CL_PENDING, CL_READY, CL_TERMINAL } claim_phase;

/* Reasons after which the claim never becomes ready (the Python SDK's terminal set, plus
 * the missing pool and template, which the controller retries but a user must fix). */
static bool terminal_reason(const char *r)
{
    static const char *const set[] = { "WarmPoolNotFound", "TemplateNotFound", "ClaimExpired",
                                       "SandboxExpired", "InvalidMetadata",
                                       "EnvVarsInjectionRejected", "VolumeClaimTemplatesError" };
    for (size_t i = 0; r && i < ARRAY_SIZE(set); i++)
        if (!strcmp(r, set[i]))
            return true;
    return false;
}

typedef struct waiter {
    kt *k;
    const char *name;
    claim_phase phase;
    char reason[128], message[512], status[16];
    char sandbox[256];
    bool deleted;
    uint64_t t0;
    bool told;
} waiter;

static void note_claim(waiter *w, const cJSON *claim)
{
    const cJSON *c = ready_condition(claim);
    const char *sb = bound_sandbox(claim);
    const char *st = c ? kt_jstr(c, "status") : NULL;
    snprintf(w->status, sizeof(w->status), "%s", st ? st : "Unknown");
    snprintf(w->reason, sizeof(w->reason), "%s", c && kt_jstr(c, "reason") ? kt_jstr(c, "reason")
                                                                         : "");
    snprintf(w->message, sizeof(w->message), "%s",
             c && kt_jstr(c, "message") ? kt_jstr(c, "message") : "");
    snprintf(w->sandbox, sizeof(w->sandbox), "%s", sb ? sb : "");
    if (st && !strcmp(st, "True") && sb)
        w->phase = CL_READY;
    else if (st && !strcmp(st, "False") && terminal_reason(w->reason))
        w->phase = CL_TERMINAL;
    else
        w->phase = CL_PENDING;
}

/* The line the user sees while a slow claim waits (once, after half a second). */
static void maybe_progress(waiter *w)
{
    if (w->told || w->phase == CL_READY || now_ns() - w->t0 < PROGRESS_AFTER_NS)
        return;
    w->told = true;
    /* the condition's reason and message are the API server's text: sanitized, which also
     * keeps them on this one line of the backend's protocol */
    strbuf line = STRBUF_INIT;
    strbuf_addf(&line, "waiting for a pod from pool %s (claim %s: %s%s%s)", w->k->o->pool,
                w->name, w->reason[0] ? w->reason : "no condition yet",
                w->message[0] ? ", " : "", w->message);
    strbuf shown = STRBUF_INIT;
    sbx_sanitize(&shown, line.buf, line.len);
    printf("progress %s\n", shown.buf);
    fflush(stdout);
    strbuf_release(&line);
    strbuf_release(&shown);
}

static int on_event(void *ctx, const char *type, const cJSON *obj, sbx_err *err)
{
    waiter *w = ctx;
    const char *name = kt_jstr(obj, "metadata.name");
    if (!name || strcmp(name, w->name))
        return 0;
    if (!strcmp(type, "DELETED")) {
        w->deleted = true;
        return 1;
    }
    if (strcmp(type, "ADDED") && strcmp(type, "MODIFIED"))
        return 0;
    note_claim(w, obj);
    maybe_progress(w);
    return w->phase == CL_PENDING ? 0 : 1;
}

static void delete_claim(kt *k, const char *name)
{
    kube_response r = { 0 };
    sbx_err err;
    char *path = kt_claim_path(k, name);
    if (kube_request(k->c, "DELETE", path, NULL, NULL, &r, &err) < 0 && r.status != 404)
        sbx_report("sbx-kube", "cannot delete claim %s: %s", name, err.msg);
    kube_response_free(&r);
    free(path);
}

static const char *last_condition(const waiter *w, char *buf, size_t n)
{
    if (!w->reason[0])
        snprintf(buf, n, "the claim has no Ready condition yet: is agent-sandbox's controller "
                 "running with --extensions?");
    else
        snprintf(buf, n, "Ready=%s %s%s%s", w->status, w->reason, w->message[0] ? ": " : "",
                 w->message);
    return buf;
}

/* Waits for claim name (created at resource version rv) to be ready or fail. */
static int wait_claim(kt *k, const char *name, const char *rv, waiter *w, sbx_err *err)
{
    uint64_t deadline = w->t0 + (uint64_t)k->o->timeout * 1000000000ULL;
    char *res_version = xstrdup(rv ? rv : "0"), *path = kt_claim_path(k, NULL);
    char sel[300], cond[800];
    int r = 0;

    snprintf(sel, sizeof(sel), "metadata.name=%s", name);
    /* Read it once before watching (list, then watch from what the list saw, as informers
     * do): a warm pool's controller may have bound it already, and then the watch, a
     * connection of its own that ends closed (another TLS handshake), is not needed. */
    {
        kube_response g = { 0 };
        char *one = kt_claim_path(k, name);
        int gr = kube_request(k->c, "GET", one, NULL, NULL, &g, err);
        free(one);
        if (gr == 0) {
            note_claim(w, g.json);
            const char *grv = kt_jstr(g.json, "metadata.resourceVersion");
            if (grv) {
                free(res_version);
                res_version = xstrdup(grv);
            }
        } else if (g.status == 404) {
            w->deleted = true;
        }
        kube_response_free(&g);
        /* any other failure: the watch below meets it again and says so */
    }
    for (; !w->deleted && w->phase == CL_PENDING;) {
        uint64_t until = deadline;
        /* first only to the half second: say what it waits for then, event or not */
        if (!w->told && w->t0 + PROGRESS_AFTER_NS < deadline)
            until = w->t0 + PROGRESS_AFTER_NS + 1000000;
        r = kube_watch(k->c, path, sel, NULL, &res_version, until, on_event, w, err);
        if (r == KUBE_WATCH_TIMEOUT && until != deadline) {
            maybe_progress(w);
            continue;
        }
        if (r == KUBE_WATCH_GONE) {
            /* too old: read it again, and watch from there */
            kube_response g = { 0 };
            char *one = kt_claim_path(k, name);
            int gr = kube_request(k->c, "GET", one, NULL, NULL, &g, err);
            free(one);
            if (gr < 0) {
                w->deleted = g.status == 404;
                kube_response_free(&g);
                if (w->deleted)
                    break;
                r = -1;
                break;
            }
            note_claim(w, g.json);
            free(res_version);
            res_version = xstrdup(kt_jstr(g.json, "metadata.resourceVersion") ?: "0");
            kube_response_free(&g);
            if (w->phase != CL_PENDING)
                break;
            continue;
        }
        break;
    }
    free(path);
    free(res_version);
    if (w->deleted)
        return sbx_errf(err, "the SandboxClaim %s was deleted while sbxsh waited for its pod "
                        "(by someone else, or by its shutdownTime)", name);
    if (r == KUBE_WATCH_TIMEOUT)
        return sbx_errf(err, "no pod became ready for SandboxClaim %s from pool %s within %u s "
                        "(%s); the pool may be empty and a cold start slower than that: raise "
                        "AGENT_SANDBOX_CLAIM_TIMEOUT, or the pool's replicas",
                        name, k->o->pool, k->o->timeout, last_condition(w, cond, sizeof(cond)));
    if (r < 0)
        return sbx_err_prefix(err, "waiting for SandboxClaim %s", name);
    if (w->phase == CL_TERMINAL) {
        if (!strcmp(w->reason, "WarmPoolNotFound"))
            return sbx_errf(err, "the SandboxWarmPool '%s' does not exist in namespace %s "
                            "(claim %s: %s); set AGENT_SANDBOX_POOL to a pool of that "
                            "namespace (or AGENT_SANDBOX_NAMESPACE to the pool's); `sbx "
                            "doctor` checks it", k->o->pool, k->ns, name,
                            last_condition(w, cond, sizeof(cond)));
        if (!strcmp(w->reason, "TemplateNotFound"))
            return sbx_errf(err, "the SandboxTemplate of pool '%s' does not exist in namespace "
                            "%s (claim %s: %s); the cluster's admins must apply it",
                            k->o->pool, k->ns, name, last_condition(w, cond, sizeof(cond)));
        return sbx_errf(err, "SandboxClaim %s cannot become ready (%s)", name,
                        last_condition(w, cond, sizeof(cond)));
    }
    return 0;
}

/* The pod of a Ready claim: fills st (kube.json) with sandbox, pod, uid, node. */
static int resolve_pod(kt *k, const char *sandbox, cJSON *st, sbx_err *err)
{
    kube_response r = { 0 };
    char *path = kt_sandbox_path(k, sandbox);
    const char *pod = NULL;
    int rc = kube_request(k->c, "GET", path, NULL, NULL, &r, err);
    free(path);
    if (rc < 0) {
        kube_response_free(&r);
        return sbx_err_prefix(err, "reading Sandbox %s", sandbox);
    }
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r.json, "metadata"), "annotations");
    const cJSON *pn = cJSON_GetObjectItemCaseSensitive(ann, "agents.x-k8s.io/pod-name");
    pod = cJSON_IsString(pn) && pn->valuestring[0] ? pn->valuestring : sandbox;
    char *podname = xstrdup(pod);
    kube_response_free(&r);

    path = kt_pod_path(k, podname);
    rc = kube_request(k->c, "GET", path, NULL, NULL, &r, err);
    free(path);
    if (rc < 0) {
        kube_response_free(&r);
        sbx_err_prefix(err, "reading the pod %s of Sandbox %s", podname, sandbox);
        free(podname);
        return -1;
    }
    /* A pod with a deletionTimestamp is going: the kubelet keeps it (and exec into it
     * working) for its grace period, 30 s by default, then kills it. Not one to use. */
    if (kt_pod_going(r.json)) {
        sbx_errf(err, "the pod %s of Sandbox %s is %s", podname, sandbox,
                 kt_jstr(r.json, "metadata.deletionTimestamp") ? "being deleted" : "not running");
        kube_response_free(&r);
        free(podname);
        return -1;
    }
    cJSON_DeleteItemFromObject(st, "sandbox");
    cJSON_DeleteItemFromObject(st, "pod");
    cJSON_DeleteItemFromObject(st, "pod_uid");
    cJSON_DeleteItemFromObject(st, "node");
    cJSON_DeleteItemFromObject(st, "container");
    cJSON_DeleteItemFromObject(st, "agent");
    cJSON_AddStringToObject(st, "sandbox", sandbox);
    cJSON_AddStringToObject(st, "pod", podname);
    cJSON_AddStringToObject(st, "pod_uid", kt_jstr(r.json, "metadata.uid") ?: "");
    cJSON_AddStringToObject(st, "node", kt_jstr(r.json, "spec.nodeName") ?: "");
    /* The container to exec into, as kubectl exec picks it without -c
     * (k8s.io/kubectl/pkg/cmd/util/podcmd/podcmd.go, FindOrDefaultContainerByName): the one
     * the pod's kubectl.kubernetes.io/default-container annotation names when the pod has
     * it, else the first. (Only spec.containers: an init container has ended by the time
     * the pod is Running.) */
    const cJSON *ctrs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r.json, "spec"), "containers");
    const char *want = NULL, *pick = NULL;
    {
        const cJSON *pann = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(r.json, "metadata"), "annotations");
        const cJSON *dc = cJSON_GetObjectItemCaseSensitive(pann, KT_DEFAULT_CONTAINER);
        if (cJSON_IsString(dc) && dc->valuestring[0])
            want = dc->valuestring;
    }
    const cJSON *ci;
    cJSON_ArrayForEach(ci, ctrs) {
        const char *cn = kt_jstr(ci, "name");
        if (cn && want && !strcmp(cn, want))
            pick = cn;
    }
    if (!pick)
        pick = kt_jstr(cJSON_GetArrayItem(ctrs, 0), "name");
    if (pick)
        cJSON_AddStringToObject(st, "container", pick);
    free(podname);
    kube_response_free(&r);
    return 0;
}

/* Moves the claim's shutdownTime to now + TTL; records it in st. */
static int renew(kt *k, const char *name, cJSON *st, sbx_err *err)
{
    int64_t until = (int64_t)time(NULL) + k->o->ttl;
    char when[40];
    kube_response r = { 0 };
    char *path = kt_claim_path(k, name);
    kt_rfc3339(until, when, sizeof(when));
    cJSON *patch = cJSON_CreateObject();
    cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "spec"),
                                                    "lifecycle"), "shutdownTime", when);
    char *body = cJSON_PrintUnformatted(patch);
    cJSON_Delete(patch);
    if (!body)
        xdie_oom();
    int rc = kube_request(k->c, "PATCH", path, "application/merge-patch+json", body, &r, err);
    cJSON_free(body);
    kube_response_free(&r);
    free(path);
    if (rc == 0 && st) {
        cJSON_DeleteItemFromObject(st, "expires");
        cJSON_AddNumberToObject(st, "expires", (double)until);
    }
    return rc;
}

/* The base of kube.json for claim name. */
static cJSON *new_state(kt *k, const char *name, const char *uid)
{
    cJSON *st = cJSON_CreateObject(), *dirs = cJSON_CreateArray();
    cJSON_AddStringToObject(st, "claim", name);
    cJSON_AddStringToObject(st, "claim_uid", uid ? uid : "");
    cJSON_AddStringToObject(st, "namespace", k->ns);
    cJSON_AddStringToObject(st, "pool", k->o->pool);
    cJSON_AddStringToObject(st, "server", k->target.server ? k->target.server : "");
    if (k->target.context)
        cJSON_AddStringToObject(st, "context", k->target.context);
    if (k->target.source)
        cJSON_AddStringToObject(st, "kubeconfig", k->target.source);
    cJSON_AddNumberToObject(st, "created", (double)time(NULL));
    for (size_t i = 0; i < k->o->code_dirs.n; i++)
        cJSON_AddItemToArray(dirs, cJSON_CreateString(k->o->code_dirs.v[i]));
    cJSON_AddItemToObject(st, "code_dirs", dirs);
    return st;
}

/* Whether claim (as read) still has the pod recorded (want_uid; NULL: any pod) running:
 * then st is its kube.json.
 *
 * The recorded pod is kept whatever the claim's Ready says at this moment, as long as the
 * claim is bound to a sandbox, is not being deleted, and its pod is the same one (uid),
 * not being deleted and Running: on a real cluster Ready flaps under load (a readiness
 * probe's timeout), and deleting the claim then would kill a live session's processes.
 * A claim nobody recorded (a holder died while waiting) must be Ready to be taken. */
static bool usable(kt *k, const cJSON *claim, const char *want_uid, cJSON **st)
{
    waiter w = { .k = k };
    sbx_err err;
    note_claim(&w, claim);
    if (want_uid ? !w.sandbox[0] || w.phase == CL_TERMINAL : w.phase != CL_READY)
        return false;
    if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(claim, "metadata"),
                                         "deletionTimestamp"))
        return false;
    const char *name = kt_jstr(claim, "metadata.name");
    cJSON *s = new_state(k, name, kt_jstr(claim, "metadata.uid"));
    if (resolve_pod(k, w.sandbox, s, &err) < 0 ||
        (want_uid && strcmp(kt_jstr(s, "pod_uid") ?: "", want_uid))) {
        cJSON_Delete(s);
        return false;
    }
    *st = s;
    return true;
}

/* Step 1: the session's claim, if it can be reattached to; broken ones are deleted. -1
 * when the cluster does not answer (or refuses): nothing else would work either. */
static int find_existing(kt *k, const char *key, cJSON **out, sbx_err *lerr)
{
    cJSON *old = kt_state_load(k->o->state_dir), *st = NULL;
    const char *rec = old ? kt_jstr(old, "claim") : NULL;
    const char *rec_ns = old ? kt_jstr(old, "namespace") : NULL;
    kube_response r = { 0 };
    sbx_err err;

    *out = NULL;
    if (rec && rec_ns && !strcmp(rec_ns, k->ns)) {
        char *path = kt_claim_path(k, rec);
        if (kube_request(k->c, "GET", path, NULL, NULL, &r, &err) < 0 && r.status != 404) {
            *lerr = err;
            kube_response_free(&r);
            free(path);
            cJSON_Delete(old);
            return -1;
        }
        if (r.status / 100 == 2) {
            if (!usable(k, r.json, kt_jstr(old, "pod_uid"), &st)) {
                sbx_report("sbx-kube", "claim %s lost its pod: deleting it", rec);
                delete_claim(k, rec);
            } else {
                cJSON *a = cJSON_GetObjectItemCaseSensitive(old, "agent");
                if (cJSON_IsString(a))
                    cJSON_AddStringToObject(st, "agent", a->valuestring);
                cJSON *c = cJSON_GetObjectItemCaseSensitive(old, "created");
                if (cJSON_IsNumber(c))
                    cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(st, "created"),
                                         c->valuedouble);
            }
        }
        kube_response_free(&r);
        free(path);
    }
    cJSON_Delete(old);
    /* claims of this session a holder made but never recorded (it died while waiting) */
    char *path = kt_claim_path(k, NULL);
    char *q = xasprintf("%s?labelSelector=%s%%3Dsbxsh%%2C%s%%3D%s", path, KT_LABEL_MANAGED,
                        KT_LABEL_KEY, key);
    free(path);
    if (kube_request(k->c, "GET", q, NULL, NULL, &r, &err) == 0) {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r.json, "items")) {
            const char *name = kt_jstr(it, "metadata.name");
            if (!name || (st && !strcmp(name, kt_jstr(st, "claim"))))
                continue;
            if (!st && usable(k, it, NULL, &st))
                continue;
            sbx_report("sbx-kube", "deleting the session's stale claim %s", name);
            delete_claim(k, name);
        }
    } else {
        *lerr = err;
        kube_response_free(&r);
        free(q);
        cJSON_Delete(st);
        return -1;
    }
    kube_response_free(&r);
    free(q);
    *out = st;
    return 0;
}

/* A 409 AlreadyExists on our claim's POST. The client retries a POST after a 5xx (429,
 * 500-504: the server's own trouble), and a 504 Timeout may come after the object was
 * written: kube-apiserver's finisher (k8s.io/apiserver/pkg/endpoints/handlers/finisher)
 * answers when the request's deadline passes while the storage write goes on. The retry
 * then meets our own claim. The name holds 32 random bits, so it is ours when it carries
 * this session's key label and was made by sbxsh: then it is re-read (into r, as the
 * POST's answer would have been) and used. 0: r is our claim; -1: someone else's, or
 * unreadable (r untouched: the 409 stands). */
static int adopt_own_claim(kt *k, const char *name, const char *key, kube_response *r)
{
    const cJSON *reason = r->json ? cJSON_GetObjectItemCaseSensitive(r->json, "reason") : NULL;
    if (!cJSON_IsString(reason) || strcmp(reason->valuestring, "AlreadyExists"))
        return -1;
    kube_response g = { 0 };
    sbx_err gerr;
    char *one = kt_claim_path(k, name);
    int gr = kube_request(k->c, "GET", one, NULL, NULL, &g, &gerr);
    free(one);
    const cJSON *labels = gr == 0 ? cJSON_GetObjectItemCaseSensitive(
                                        cJSON_GetObjectItemCaseSensitive(g.json, "metadata"),
                                        "labels")
                                  : NULL;
    const cJSON *lk = cJSON_GetObjectItemCaseSensitive(labels, KT_LABEL_KEY);
    const cJSON *lm = cJSON_GetObjectItemCaseSensitive(labels, KT_LABEL_MANAGED);
    if (!cJSON_IsString(lk) || strcmp(lk->valuestring, key) || !cJSON_IsString(lm) ||
        strcmp(lm->valuestring, "sbxsh") ||
        kt_jstr(g.json, "metadata.deletionTimestamp")) {
        kube_response_free(&g);
        return -1;
    }
    sbx_report("sbx-kube", "claim %s: the create was answered with an error but done (the "
               "retry met it: 409 AlreadyExists); using it", name);
    kube_response_free(r);
    *r = g;
    return 0;
}

int kt_claim(kt *k, sbx_err *err)
{
    char key[17], when[40], lv[64];
    kube_response r = { 0 };
    cJSON *st;
    waiter w = { .k = k, .t0 = now_ns() };

    if (!k->o->pool)
        return sbx_errf(err, "AGENT_SANDBOX_POOL is not set");
    kt_session_key(k->o, key);
    if (find_existing(k, key, &st, err) < 0)
        return sbx_err_prefix(err, "cannot look for the session's SandboxClaim in namespace %s",
                              k->ns);
    if (st) {
        if (renew(k, kt_jstr(st, "claim"), st, err) < 0 || kt_state_save(k->o->state_dir, st, err) < 0) {
            cJSON_Delete(st);
            return -1;
        }
        cJSON_Delete(st);
        printf("reattached\n");
        return 0;
    }

    char *name = new_claim_name(k->o->session);
    cJSON *c = cJSON_CreateObject(), *md, *labels, *ann, *spec, *life;
    cJSON_AddStringToObject(c, "apiVersion", "extensions.agents.x-k8s.io/v1beta1");
    cJSON_AddStringToObject(c, "kind", "SandboxClaim");
    md = cJSON_AddObjectToObject(c, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    labels = cJSON_AddObjectToObject(md, "labels");
    cJSON_AddStringToObject(labels, KT_LABEL_MANAGED, "sbxsh");
    label_value(k->o->session, lv, sizeof(lv));
    cJSON_AddStringToObject(labels, KT_LABEL_SESSION, lv);
    label_value(user_name(), lv, sizeof(lv));
    cJSON_AddStringToObject(labels, KT_LABEL_USER, lv);
    cJSON_AddStringToObject(labels, KT_LABEL_KEY, key);
    ann = cJSON_AddObjectToObject(md, "annotations");
    cJSON_AddStringToObject(ann, KT_LABEL_SESSION, k->o->session);
    {
        char host[256] = "";
        gethostname(host, sizeof(host) - 1);
        cJSON_AddStringToObject(ann, "sbxsh.dev/host", host);
    }
    spec = cJSON_AddObjectToObject(c, "spec");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(spec, "warmPoolRef"), "name", k->o->pool);
    life = cJSON_AddObjectToObject(spec, "lifecycle");
    int64_t expires = (int64_t)time(NULL) + k->o->ttl;
    kt_rfc3339(expires, when, sizeof(when));
    cJSON_AddStringToObject(life, "shutdownTime", when);
    cJSON_AddStringToObject(life, "shutdownPolicy", "Delete");
    char *body = cJSON_PrintUnformatted(c);
    cJSON_Delete(c);

    char *path = kt_claim_path(k, NULL);
    int rc = kube_request(k->c, "POST", path, "application/json", body, &r, err);
    free(path);
    cJSON_free(body);
    if (rc < 0 && r.status == 409 && adopt_own_claim(k, name, key, &r) == 0)
        rc = 0;
    if (rc < 0) {
        kube_response_free(&r);
        free(name);
        return sbx_err_prefix(err, "cannot create a SandboxClaim in namespace %s", k->ns);
    }
    st = new_state(k, name, kt_jstr(r.json, "metadata.uid"));
    cJSON_AddNumberToObject(st, "expires", (double)expires);
    w.name = name;
    note_claim(&w, r.json);
    char *rv = xstrdup(kt_jstr(r.json, "metadata.resourceVersion") ?: "0");
    kube_response_free(&r);
    /* recorded before the wait: a holder killed meanwhile leaves it findable for release */
    if (kt_state_save(k->o->state_dir, st, err) < 0)
        goto fail;
    if (w.phase != CL_READY && wait_claim(k, name, rv, &w, err) < 0)
        goto fail;
    if (resolve_pod(k, w.sandbox, st, err) < 0 || kt_state_save(k->o->state_dir, st, err) < 0)
        goto fail;
    sbx_report("sbx-kube", "claim %s ready in %.0f ms: pod %s", name,
               (double)(now_ns() - w.t0) / 1e6, kt_jstr(st, "pod"));   /* the server's names */
    free(rv);
    free(name);
    cJSON_Delete(st);
    return 0;
fail:
    if (!w.deleted)
        delete_claim(k, name);
    {
        char *p = xasprintf("%s/kube.json", k->o->state_dir);
        unlink(p);
        free(p);
    }
    free(rv);
    free(name);
    cJSON_Delete(st);
    return -1;
}

int kt_check(kt *k)
{
    cJSON *st = kt_state_load(k->o->state_dir), *now = NULL;
    kube_response r = { 0 };
    sbx_err err;
    int ok = 1;
    /* a quick question: a cluster that does not answer soon has no pod for us either */
    kube_client_set_retry_budget(k->c, 3000);
    if (!st || !kt_jstr(st, "claim"))
        goto out;
    char *path = kt_claim_path(k, kt_jstr(st, "claim"));
    if (kube_request(k->c, "GET", path, NULL, NULL, &r, &err) == 0 &&
        usable(k, r.json, kt_jstr(st, "pod_uid"), &now))
        ok = 0;
    free(path);
out:
    kube_response_free(&r);
    cJSON_Delete(now);
    cJSON_Delete(st);
    return ok;
}

int kt_release(kt *k, sbx_err *err)
{
    cJSON *st = kt_state_load(k->o->state_dir);
    const char *name = st ? kt_jstr(st, "claim") : NULL;
    kube_response r = { 0 };
    char key[17];
    int rc = 0;

    if (name) {
        char *path = kt_claim_path(k, name);
        if (kube_request(k->c, "DELETE", path, NULL, NULL, &r, err) < 0 && r.status != 404) {
            sbx_err_prefix(err, "cannot delete SandboxClaim %s", name);
            rc = -1;
        }
        kube_response_free(&r);
        free(path);
    }
    /* and any other claim of the session (one whose holder died before recording it) */
    kt_session_key(k->o, key);
    char *path = kt_claim_path(k, NULL);
    char *q = xasprintf("%s?labelSelector=%s%%3Dsbxsh%%2C%s%%3D%s", path, KT_LABEL_MANAGED,
                        KT_LABEL_KEY, key);
    free(path);
    sbx_err lerr;
    if (rc == 0 && kube_request(k->c, "GET", q, NULL, NULL, &r, &lerr) == 0) {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r.json, "items")) {
            const char *n = kt_jstr(it, "metadata.name");
            if (n && (!name || strcmp(n, name)))
                delete_claim(k, n);
        }
    }
    kube_response_free(&r);
    free(q);
    cJSON_Delete(st);
    return rc;
}

int kt_renew(kt *k, const char *name, cJSON *st, sbx_err *err)
{
    return renew(k, name, st, err);
}
