/*
 * sbx-kube's insides (kube/kube_main.c and kube/tool_*.c, linked with libkube): the
 * options every subcommand shares, the API paths, and kube.json, which only sbx-kube
 * writes (the class reads it: kclass.h).
 */
#ifndef SBX_KUBE_TOOL_H
#define SBX_KUBE_TOOL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "common/strvec.h"
#include "common/util.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

#define KT_CLAIMS_API "/apis/extensions.agents.x-k8s.io/v1beta1"
#define KT_SANDBOX_API "/apis/agents.x-k8s.io/v1beta1"
/* The labels sbxsh puts on its claims (the key finds a session's claim again). */
#define KT_LABEL_MANAGED "app.kubernetes.io/managed-by"
#define KT_LABEL_SESSION "sbxsh.dev/session"
#define KT_LABEL_USER "sbxsh.dev/user"
#define KT_LABEL_KEY "sbxsh.dev/key"
/* Where the agent lives in the pod (its socket, state and the uploaded binary). */
#define KT_POD_DIR "/run/sbxsh"
#define KT_POD_SOCKET KT_POD_DIR "/agent.sock"
#define KT_POD_AGENT KT_POD_DIR "/sbx-agent"

typedef struct kt_opts {
    const char *state_dir, *session;
    const char *kubeconfig, *context, *namespace_, *pool;
    unsigned ttl, timeout;
    strvec code_dirs;
    const char *agent, *home;   /* stream: the host's sbx-agent, the host's HOME */
    char **agent_args;          /* stream: after "--" */
    bool advisory;              /* doctor: problems are notes */
    int credential_fd;          /* the exec plugin's credential to start with (the claim's,
                                   through the holder), or -1 */
} kt_opts;

typedef struct kt {
    kt_opts *o;
    kube_target target;
    kube_client *c;
    const char *ns;             /* target.namespace_ */
} kt;

/* Loads the kubeconfig and makes the client. */
int kt_connect(kt *k, kt_opts *o, sbx_err *err);
void kt_close(kt *k);

/* "/apis/.../namespaces/NS/sandboxclaims[/NAME]" (malloc'd). */
char *kt_claim_path(kt *k, const char *name);
char *kt_sandbox_path(kt *k, const char *name);
char *kt_pod_path(kt *k, const char *name);

/* RFC 3339, UTC. */
void kt_rfc3339(int64_t t, char *buf, size_t n);
/* The session's key label: a hash of the host, user, state directory and session. */
void kt_session_key(const kt_opts *o, char out[17]);

/* kube.json (kclass.h's kube_state): the object as sbx-kube keeps it. */
cJSON *kt_state_load(const char *dir);
int kt_state_save(const char *dir, const cJSON *st, sbx_err *err);
const char *kt_jstr(const cJSON *o, const char *path);   /* "a.b.c", NULL when absent */
/* Whether a pod (as read) is going or gone though still readable: a deletionTimestamp (its
 * grace period), or a phase other than Running. */
bool kt_pod_going(const cJSON *pod);

/* The subcommands (main prints "error MSG" on stdout for the class on failure). */
int kt_claim(kt *k, sbx_err *err);          /* 0; prints "reattached" when it did */
int kt_check(kt *k);                        /* 0: the recorded pod is there */
int kt_release(kt *k, sbx_err *err);
/* Moves claim name's shutdownTime to now + TTL (and st's "expires", when st). */
int kt_renew(kt *k, const char *name, cJSON *st, sbx_err *err);
int kt_stream(kt *k, sbx_err *err);         /* exit status */
int kt_doctor(kt_opts *o);                  /* exit status */

#endif
