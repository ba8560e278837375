/*
 * The Kubernetes backend class's own header (kube/backend*.c, linked into libsbx: no
 * libcurl, no libyaml, no libcrypto here). Everything that talks to the API server is
 * sbx-kube (kube/kube_main.c), a program beside sbx-agent that the class runs:
 *
 *   claim    sbx-kube claim ...   reattach to the session's claim, or make one and wait
 *                                 until its pod is Ready; writes STATE/kube.json
 *   stream   sbx-kube stream ...  a child whose stdin/stdout is the holder's end of a
 *                                 socketpair: the byte stream to sbx-agent in the pod
 *   exists   sbx-kube check ...   whether the recorded claim still has its pod
 *   release  sbx-kube release ... delete the claim
 *   doctor   sbx-kube doctor ...  the cluster's side of sbx doctor
 *
 * The files:
 *   backend_config.c  its settings from AGENT_SANDBOX_*, its part of the fingerprint
 *   backend_state.c   kube.json: reading it, status(), peek() and adopt()
 *   backend_doctor.c  the class's doctor hook
 *   backend_render_pool.c  `sbx render-pool`: a tenant's namespace and pool as YAML
 *   backend.c         the class: create, claim, open_stream, alive, exists, release
 */
#ifndef SBX_KUBE_KCLASS_H
#define SBX_KUBE_KCLASS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/strbuf.h"
#include "common/strvec.h"
#include "common/util.h"
#include "session/backend.h"
#include "session/config.h"

#define SBX_KUBE_TTL_DEFAULT (4 * 3600)
#define SBX_KUBE_CLAIM_TIMEOUT_DEFAULT 120
/* The state file sbx-kube writes in the session's state directory. */
#define SBX_KUBE_STATE "kube.json"
/* sbx-kube stream's exit status when the pod (or its claim) is gone: the sandbox is dead,
 * the next command claims a new one. */
#define SBX_KUBE_EXIT_GONE 3
/* In the session's state directory: why the last `sbx-kube stream` ended, when it ended
 * failing (one line, its error; removed when a stream starts). The holder only sees its
 * socket close, so the backend reads the reason here for the user (kube_explain). */
#define SBX_KUBE_STREAM_ERROR "stream.err"
/* In the same place: what the stream has to tell the user once, as the next command
 * starts (one line: a renewal refused), taken (removed) by the holder (kube_take_notice). */
#define SBX_KUBE_STREAM_NOTICE "stream.notice"

/* The Kubernetes backend's section of the session configuration (AGENT_SANDBOX_KUBECONFIG,
 * _KUBE_CONTEXT, _NAMESPACE, _POOL, _TTL, _CLAIM_TIMEOUT), made by kube_configure
 * (backend_config.c), kept opaque by the session layer (sbx_config.backend_settings),
 * freed by kube_settings_free. NULL strings: not set (kubectl's own defaults: KUBECONFIG,
 * ~/.kube/config, in-cluster; the current context; the context's namespace). */
typedef struct kube_settings {
    char *kubeconfig;       /* AGENT_SANDBOX_KUBECONFIG */
    char *context;          /* AGENT_SANDBOX_KUBE_CONTEXT */
    char *namespace_;       /* AGENT_SANDBOX_NAMESPACE */
    char *pool;             /* AGENT_SANDBOX_POOL: the SandboxWarmPool to claim from */
    unsigned ttl;           /* AGENT_SANDBOX_TTL, seconds: the claim's shutdownTime backstop */
    unsigned claim_timeout; /* AGENT_SANDBOX_CLAIM_TIMEOUT, seconds */
} kube_settings;

/* What kube.json records (sbx-kube writes it; the class only reads). */
typedef struct kube_state {
    char *claim, *claim_uid, *namespace_, *pool, *sandbox, *pod, *pod_uid, *node;
    char *server, *context, *kubeconfig;
    int64_t created, expires;
    strvec code_dirs;
} kube_state;

int kube_state_load(const char *dir, kube_state *s);
void kube_state_free(kube_state *s);
/* The JSON object `sbx status` shows (status() and peek()). */
void kube_state_json(const kube_state *s, bool alive, const char *dir, strbuf *json);

typedef struct kube_backend {
    sbx_backend base;
    char *session;
    char *dir;              /* the session's state directory */
    char *tool;             /* sbx-kube */
    char *agent_path;       /* sbx-agent(-static) on the host, uploaded when the pod has none */
    char *home;
    kube_settings kc;       /* copied from the session's section */
    strvec code_dirs;
    strvec agent_args;
    void (*progress)(void *ctx, const char *msg);
    void *progress_ctx;
    bool claimed;
    bool gone;              /* the stream said the pod is gone */
    pid_t stream_pid;       /* the running `sbx-kube stream`, 0: none */
    char *credential;       /* the exec plugin's credential the last claim said (a secret:
                               in memory only, wiped), given to each stream, or NULL */
    kube_state st;          /* valid while claimed */
} kube_backend;

/* backend_config.c: the class's configure, settings_free and fingerprint hooks */
extern const sbx_backend_class kube_backend_class;
int kube_configure(const sbx_config *cfg, void **settings, sbx_err *err);
void kube_settings_free(void *settings);
/* cfg's kube section; all unset (with the default lifetimes) when cfg has none (not loaded
 * by session_config_load), so a reader never gets NULL. */
const kube_settings *kube_settings_of(const sbx_config *cfg);
/* Frees the strings of a section, not the section itself. */
void kube_settings_clear(kube_settings *k);
void kube_fingerprint(const sbx_config *cfg, strbuf *out);
/* The common options of every sbx-kube call for these settings. */
void kube_tool_opts(const kube_settings *kc, strvec *argv);

/* backend_state.c */
int kube_peek(const char *state_dir, strbuf *json);
int kube_adopt(const char *state_dir, sbx_config *cfg);
void kube_status(sbx_backend *b, strbuf *json);

/* backend_doctor.c */
void kube_doctor(const sbx_config *cfg, sbx_doctor_finding *finding);
/* backend_render_pool.c: `sbx render-pool` (argv[0] is "render-pool"), the class's one
 * command. Exit status: 0 printed, 2 a usage error (nothing printed on stdout). */
int kube_render_pool(int argc, char **argv);

/* backend_state.c: the describe hook (the pod, for people) */
void kube_describe(const cJSON *sandbox, strbuf *out);

/* backend.c: runs sbx-kube with argv (argv[0] the tool), stdout read line by line into
 * on_line (may be NULL), stderr to ours (the holder's log); returns its exit status or -1. */
int kube_run_tool(char *const argv[], void (*on_line)(void *ctx, const char *line), void *ctx,
                  sbx_err *err);
/* sbx-kube beside the agent (as local/ finds sbx-egress), or NULL with a message. */
char *kube_find_tool(const char *agent_path, sbx_err *err);

#endif
