/*
 * Where the Kubernetes API is and who we are to it, found as kubectl finds it.
 *
 * Order (the first that exists wins, as kubectl's loading rules):
 *   1. AGENT_SANDBOX_KUBECONFIG (one file; an error when it does not exist),
 *   2. KUBECONFIG (colon-separated files, merged as kubectl merges them: for a map
 *      entry -- cluster, user, context -- the first file that defines a name wins;
 *      current-context from the first file that sets it; missing files skipped),
 *   3. ~/.kube/config,
 *   4. the in-cluster service account (KUBERNETES_SERVICE_HOST/_PORT,
 *      /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}).
 *
 * The result is plain data: everything a request needs, TLS material held in memory
 * (decoded from *-data, or read from the files named), never written anywhere.
 *
 *   kube_target t;
 *   if (kube_target_load(&(kube_load_opts){ .explicit_path = getenv(...), ... }, &t, &err) < 0)
 *       ... err.msg names the file and the key at fault ...
 *   kube_target_free(&t);
 */
#ifndef SBX_KUBE_KUBECONFIG_H
#define SBX_KUBE_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "common/strvec.h"
#include "common/util.h"

/* users[].user.exec: a client.authentication.k8s.io/v1 (or v1beta1) credential plugin. */
typedef struct kube_exec_plugin {
    char *command;          /* as given; relative names are looked up in PATH, or
                               resolved against the kubeconfig file's directory when
                               they contain a '/', as kubectl does */
    strvec args;
    strvec env;             /* NAME=VALUE, added to the plugin's environment */
    char *api_version;      /* "client.authentication.k8s.io/v1" (or v1beta1) */
    char *interactive_mode; /* "Never", "IfAvailable", "Always"; NULL when not given
                               (v1beta1); stdin is the plugin's only when it may be
                               interactive and is a terminal */
    bool provide_cluster_info;
    char *install_hint;     /* shown when the command is missing, or NULL */
} kube_exec_plugin;

typedef struct kube_target {
    char *source;           /* the file the current context came from, or "in-cluster" */
    char *context;          /* context name (NULL in-cluster) */
    char *server;           /* "https://host:port", no trailing slash */
    char *namespace_;       /* AGENT_SANDBOX_NAMESPACE, else the context's, else "default" */
    /* TLS: PEM bytes in memory (NULL: none) */
    char *ca_pem; size_t ca_len;
    char *cert_pem; size_t cert_len;
    char *key_pem; size_t key_len;
    bool insecure;          /* insecure-skip-tls-verify */
    char *tls_server_name;  /* or NULL */
    char *proxy_url;        /* or NULL */
    /* Credentials. A readable token_file wins over token, as kubectl's round tripper:
     * token is what is sent when the file cannot be read. */
    char *token;            /* or NULL */
    int64_t token_expires;  /* the oidc auth-provider's id-token: its exp (unix s), else 0 */
    char *token_file;       /* absolute; re-read each minute and when the server says
                               401, or NULL */
    kube_exec_plugin *exec; /* or NULL */
    char *username, *password; /* basic auth, or NULL */
} kube_target;

typedef struct kube_load_opts {
    const char *explicit_path;  /* AGENT_SANDBOX_KUBECONFIG or NULL */
    const char *kubeconfig_env; /* KUBECONFIG or NULL */
    const char *home;           /* for ~/.kube/config; NULL: $HOME */
    const char *context;        /* AGENT_SANDBOX_KUBE_CONTEXT or NULL: current-context */
    const char *namespace_;     /* AGENT_SANDBOX_NAMESPACE or NULL */
    const char *incluster_dir;  /* NULL: /var/run/secrets/kubernetes.io/serviceaccount
                                   (tests point it elsewhere) */
} kube_load_opts;

int kube_target_load(const kube_load_opts *o, kube_target *t, sbx_err *err);
void kube_target_free(kube_target *t);
/* A deep copy of src into dst (what kube_client_new keeps). */
void kube_target_copy(kube_target *dst, const kube_target *src);

/* The credential an exec plugin gave: a token and/or a client certificate, valid until
 * expires (unix seconds; 0: no expiry given, valid for this process's life). */
typedef struct kube_credential {
    char *token;
    char *cert_pem, *key_pem;
    int64_t expires;
} kube_credential;

/* Runs t->exec (stdin /dev/null unless interactiveMode allows a terminal and stdin is one;
 * KUBERNETES_EXEC_INFO set as client-go sets it; stdout read as ExecCredential JSON, at
 * most 1 MiB; killed after 60 s) and fills cred. Errors quote the plugin's stderr tail. */
int kube_exec_credential(const kube_target *t, kube_credential *cred, sbx_err *err);
void kube_credential_free(kube_credential *cred);

#endif
