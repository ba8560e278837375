/*
 * The backend interface: where a session's sandbox comes from.
 *
 * The session holder (holder.c) is the only caller. A backend gives it a
 * sandbox running sbx-agent and a byte stream to that agent; everything
 * else (sync, commands, signals) travels on the stream, so a backend knows
 * nothing of the protocol. The local backend (local_backend.c) runs gVisor's
 * runsc or bubblewrap on this machine; a Kubernetes backend would claim a pod
 * in claim() and return the two ends of an exec WebSocket relay from
 * open_stream().
 *
 * Lifecycle, as the holder drives it:
 *
 *   sbx_backend *b = sbx_backend_new(cfg, &spec, &err);
 *   b->ops->claim(b, &reattached, &err);      // create, or find the running one
 *   b->ops->open_stream(b, &rfd, &wfd, &err); // talk to sbx-agent
 *   ... the stream breaks: b->ops->alive(b)? reopen : claim again ...
 *   b->ops->release(b, &err);                 // sbx release, idle timeout
 *   sbx_backend_free(b);
 *
 * A claim outlives the process that made it: a new holder (after the old one
 * died) calls claim() again and gets reattached = true with the same
 * sandbox, its background processes and its files.
 */
#ifndef SBX_SESSION_BACKEND_H
#define SBX_SESSION_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "common/util.h"
#include "session/config.h"

/* A private, writable directory inside every sandbox that survives a
 * reattach: the agent keeps its state file (and, locally, its socket) there. */
#define SBX_SANDBOX_AGENT_DIR "/run/sbxsh"

typedef struct sbx_sandbox_spec {
    const char *agent_path;     /* sbx-agent on the host; mounted read-only */
    /* Arguments for the agent after its connection mode (which the backend
     * adds: --listen SOCKET locally, stdio elsewhere): roots, state file... */
    const strvec *agent_args;
    /* Environment of the agent process itself (commands get theirs per RUN). */
    const strvec *agent_env;
} sbx_sandbox_spec;

typedef struct sbx_backend sbx_backend;

typedef struct sbx_backend_ops {
    const char *name;   /* "local", "kube" */
    /* Creates the session's sandbox, or reattaches to the one still running
     * from an earlier holder (*reattached = true). After a sandbox died,
     * creates a new one with empty copies of the code directories. */
    int (*claim)(sbx_backend *b, bool *reattached, sbx_err *err);
    /* Opens a byte stream to the sandbox's sbx-agent. The caller owns the
     * fds (rfd may equal wfd) and closes them; opening again replaces no
     * state on the agent side except the connection. */
    int (*open_stream)(sbx_backend *b, int *rfd, int *wfd, sbx_err *err);
    /* Cheap liveness check of the claimed sandbox. */
    bool (*alive)(sbx_backend *b);
    /* Whether the session has a running sandbox that claim() would
     * reattach to (without claiming anything). */
    bool (*exists)(sbx_backend *b);
    /* Stops the sandbox and deletes what it had (copies, home, state). */
    int (*release)(sbx_backend *b, sbx_err *err);
    /* Appends a JSON object of facts: runtime, id, created (unix seconds),
     * alive, and backend-specific fields; locally "limits": pids_max,
     * memory_max, cpus_milli, disk_max, mechanism ("cgroup v1", "cgroup v2",
     * "rlimit") and the cgroup directories. */
    void (*status)(sbx_backend *b, strbuf *json);
    void (*free)(sbx_backend *b);
} sbx_backend_ops;

struct sbx_backend {
    const sbx_backend_ops *ops;
};

/* The backend cfg->backend names ("local"), configured for cfg's session.
 * Fails with a message saying what to install when the runtime is missing. */
sbx_backend *sbx_backend_new(const sbx_config *cfg, const sbx_sandbox_spec *spec, sbx_err *err);
void sbx_backend_free(sbx_backend *b);

/* The local backend, for a given runtime (AUTO resolves to runsc when it is
 * installed, else bwrap). */
sbx_backend *sbx_local_backend_new(const sbx_config *cfg, const sbx_sandbox_spec *spec,
                                   sbx_err *err);
/* Which runtime AUTO resolves to here, or -1 with a message naming the
 * Debian packages when neither is installed. */
int sbx_local_runtime_resolve(sbx_runtime want, sbx_runtime *out, char **path, sbx_err *err);

/* Whether a sandbox of runtime rt would get its limits from a cgroup here
 * (0, how: "cgroup v1, e.g. /sys/fs/cgroup/pids/.../sbxsh/...", made and
 * removed to find out) or only from rlimits (-1, how: why not). */
int sbx_local_limits_probe(sbx_runtime rt, strbuf *how);

/* Reads the facts a holder left in a session's state directory (without
 * claiming anything), as the JSON object status() gives; used by `sbx ls`
 * and `sbx status` when no holder runs. Returns -1 when there is none. */
int sbx_local_backend_peek(const char *state_dir, strbuf *json);
/* Sets cfg's runtime, network and code directories to those of the sandbox
 * whose state is in state_dir, so that a holder started with cfg reattaches
 * to it (sbx release from anywhere). Returns -1 when there is none. */
int sbx_local_backend_adopt(const char *state_dir, sbx_config *cfg);

#endif
