/*
 * The backend interface: where a session's sandbox comes from.
 *
 * The session holder (holder.c) is the only caller of a backend's instance (the
 * ops below); `sbx` uses the class hooks further down. A backend gives the holder a
 * sandbox running sbx-agent and a byte stream to that agent; everything
 * else (sync, commands, signals) travels on the stream, so a backend knows
 * nothing of the protocol. The local backend (local/) runs gVisor's
 * runsc or bubblewrap on this machine; a Kubernetes backend would claim a pod
 * in claim() and return the two ends of an exec WebSocket relay from
 * open_stream().
 *
 * Lifecycle, as the holder drives it:
 *
 *   sbx_backend *b = session_backend_new(cfg, &spec, &err);
 *   b->ops->claim(b, &reattached, &err);      // create, or find the running one
 *   b->ops->open_stream(b, &rfd, &wfd, &err); // talk to sbx-agent
 *   ... the stream breaks: b->ops->alive(b)? reopen : claim again ...
 *   b->ops->release(b, &err);                 // sbx release, idle timeout
 *   session_backend_free(b);
 *
 * A claim outlives the process that made it: a new holder (after the old one
 * died) calls claim() again and gets reattached = true with the same
 * sandbox, its background processes and its files.
 */
#ifndef SBX_SESSION_BACKEND_H
#define SBX_SESSION_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/strbuf.h"
#include "common/util.h"
#include "session/config.h"

/* A private, writable directory inside every sandbox that survives a
 * reattach: the agent keeps its state file there (the local backend, whose agent
 * never restarts within a sandbox, passes none) and, locally, its socket. */
#define SBX_SANDBOX_AGENT_DIR "/run/sbxsh"

/* Where a sandbox may hold sbx-bash-interactive.so (local/bash_interactive.c), which the
 * persistent shell of sbxsh's prompt loads (cli/line.c): the local backend binds it at the
 * first, the runtime image (cluster/image/) installs it at the second. A sandbox with
 * neither runs that shell as before (its messages those of a non-interactive bash). */
#define SBX_SANDBOX_BASH_SO "/.sbxsh/sbx-bash-interactive.so"
#define SBX_SANDBOX_BASH_SO_IMAGE "/usr/local/lib/sbxsh/sbx-bash-interactive.so"

typedef struct sbx_sandbox_spec {
    const char *agent_path;     /* sbx-agent on the host; mounted read-only */
    /* Arguments for the agent after its connection mode (which the backend
     * adds: --listen SOCKET locally, stdio elsewhere): roots, state file... */
    const strvec *agent_args;
    /* Environment of the agent process itself (commands get theirs per RUN). */
    const strvec *agent_env;
    /* During claim(): tells the user waiting how a slow claim goes (one line, e.g. the
     * cluster's reason it is not ready yet), at a terminal. NULL: nobody to tell. */
    void (*progress)(void *ctx, const char *msg);
    void *progress_ctx;
} sbx_sandbox_spec;

typedef struct sbx_backend sbx_backend;

typedef struct sbx_backend_ops {
    const char *name;   /* "local", "kube" */
    /* How long the holder waits for the agent's first answer on a new stream (0: 10 s):
     * a backend whose stream sets itself up first (finds or uploads the agent, retrying a
     * busy API server) needs longer. */
    unsigned hello_timeout_ms;
    /* Creates the session's sandbox, or reattaches to the one still running
     * from an earlier holder (*reattached = true). After a sandbox died,
     * creates a new one with empty copies of the code directories. */
    int (*claim)(sbx_backend *b, bool *reattached, sbx_err *err);
    /* Opens a byte stream to the sandbox's sbx-agent. The caller owns the
     * fds (rfd may equal wfd) and closes them; opening again replaces no
     * state on the agent side except the connection. */
    int (*open_stream)(sbx_backend *b, int *rfd, int *wfd, sbx_err *err);
    /* Optional: after the stream from open_stream() failed (at_setup: at once, the agent
     * never answered; else later, mid-session), replaces err with the backend's own reason
     * when it has one (a refused exec, an upload that failed, an API server that stopped
     * answering), so that the user reads why, not "connection reset". */
    void (*explain)(sbx_backend *b, bool at_setup, sbx_err *err);
    /* Optional: what the backend has to tell the user once, as a command starts (a claim's
     * renewal refused: the session will end at its expiry), appended to out as one line;
     * each notice is taken once. */
    void (*take_notice)(sbx_backend *b, strbuf *out);
    /* Cheap liveness check of the claimed sandbox. */
    bool (*alive)(sbx_backend *b);
    /* Whether the session has a running sandbox that claim() would
     * reattach to (without claiming anything). */
    bool (*exists)(sbx_backend *b);
    /* Optional: called when nobody has used the session for a while (the holder's
     * FREEZE_AFTER): stops the sandbox's host processes when it is quiescent (holds no
     * process but the agent's own) and stopping them saves something (locally: runsc,
     * whose idle Sentry costs CPU). 1: frozen; 0: left running (ask again later); -1:
     * err. Nothing may talk to the agent until thaw(). */
    int (*freeze)(sbx_backend *b, sbx_err *err);
    /* Optional, with freeze: continues what freeze stopped (nothing when it stopped
     * nothing). */
    void (*thaw)(sbx_backend *b);
    /* Stops the sandbox and deletes what it had (copies, home, state). */
    int (*release)(sbx_backend *b, sbx_err *err);
    /* Appends a JSON object of facts: backend (its class's name), runtime, id, created
     * (unix seconds), alive, and backend-specific fields; locally "limits": pids_max,
     * memory_max, cpus_milli, disk_max, mechanism ("cgroup v1", "cgroup v2",
     * "rlimit") and the cgroup directories. */
    void (*status)(sbx_backend *b, strbuf *json);
    void (*free)(sbx_backend *b);
    /* AGENT_SANDBOX_DISK_MAX bounds each code directory's copy, /tmp and HOME in the
     * sandbox (each a space of its own): when a command leaves one full, the holder names
     * that limit (a bare ENOSPC names none). */
    bool disk_max_bounds;
} sbx_backend_ops;

struct sbx_backend {
    const sbx_backend_ops *ops;
};

/* ---- backend classes and the registry ----------------------------------------------
 *
 * A backend is a class: a name, a factory, and the hooks the session layer needs
 * without claiming anything (`sbx ls`, `sbx status` and `sbx release` read a session's
 * state with no holder running; `sbx doctor` asks each backend what it needs here).
 * This header (with session/config.h, whose sbx_config the factory is given) is the one
 * part of the session layer a backend may include; nothing in session/ names a backend.
 *
 * The list of classes is made by the build: each backend's Makefile fragment adds its
 * name to BACKENDS (`BACKENDS += local`), and the Makefile generates
 * session_backend_classes[] from it, each entry being the backend's
 * `const sbx_backend_class NAME_backend_class`. So a new backend is a new folder and
 * a line in its own fragment: no edit of another backend nor of session/. */

/* sbx doctor's report line: level 0 ok (detail on the same line), 1 note, 2 problem,
 * 3 warning: works, but weaker than it should be (detail: what to do). */
typedef void sbx_doctor_finding(int level, const char *what, const char *detail, ...)
    SBX_PRINTF(3, 4);

/* An `sbx` command of a backend's own (`sbx NAME ...`): help is its lines in `sbx --help`'s
 * command list ("  NAME ARGS\n                   what it does\n"); run gets argv[0] = NAME
 * and returns the exit status. */
typedef struct sbx_backend_command {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv);
} sbx_backend_command;

typedef struct sbx_backend_class {
    const char *name;           /* AGENT_SANDBOX_BACKEND's value: its folder's name */
    /* Reads this backend's settings from the environment (its own AGENT_SANDBOX_*
     * variables), checks them, and sets *settings to a section of its own making, which
     * cfg keeps opaque (sbx_config.backend_settings) and gives back through
     * session_backend_settings(); called by session_config_load() for every backend built
     * in, so a bad value is refused whichever backend is used. On failure, what it set is
     * freed by settings_free. */
    int (*configure)(const sbx_config *cfg, void **settings, sbx_err *err);
    /* Frees a section configure made (never called with NULL). */
    void (*settings_free)(void *settings);
    /* Appends NAME=VALUE variables every command in this backend's sandboxes gets (they
     * replace forwarded ones of the same name), or nothing. */
    void (*sandbox_env)(const sbx_config *cfg, strvec *vars);
    /* Appends what of its section fixes a sandbox's shape ("runtime=runsc network=none ")
     * to the session's fingerprint (session_config_fingerprint). */
    void (*fingerprint)(const sbx_config *cfg, strbuf *out);
    /* Optional: the other forms of that section which a holder of cfg's shape also serves,
     * one string each pushed to also. A call that leaves a choice to its default asks for
     * the default ("runtime=auto"), which a session's explicit choice satisfies; a session
     * that took the default serves a call that names what the default chose. */
    void (*fingerprint_also)(const sbx_config *cfg, strvec *also);
    /* Configured for cfg's session (its own section: session_backend_settings()).
     * Fails with a message saying what to install when what it needs is missing. */
    sbx_backend *(*create)(const sbx_config *cfg, const sbx_sandbox_spec *spec,
                           sbx_err *err);
    /* Reads the facts a holder left in a session's state directory (without claiming
     * anything), as the JSON object status() gives. Returns -1 when this backend has
     * no sandbox recorded there. */
    int (*peek)(const char *state_dir, strbuf *json);
    /* Sets cfg's code directories and this backend's section (changed in place) to those
     * of the sandbox recorded in state_dir, so that a holder started with cfg reattaches
     * to it (sbx release from anywhere). Returns -1 when this backend has none recorded there. */
    int (*adopt)(const char *state_dir, sbx_config *cfg);
    /* sbx doctor: checks what this backend needs on this machine (runtimes, kernel
     * features, files beside the agent, limits), one finding() per fact. */
    void (*doctor)(const sbx_config *cfg, sbx_doctor_finding *finding);
    /* Optional, for `sbx status` without --json: appends lines for people
     * ("limits:    ...\n") of the facts of its own in a sandbox's status object (what
     * status() or peek() made, its strings already made safe for the terminal). Called
     * for the class the object's "backend" member names; a fact it lacks is left out. */
    void (*describe)(const cJSON *sandbox, strbuf *out);
    /* Optional: `sbx --help`'s lines for this backend's variables ("  AGENT_SANDBOX_X   what
     * it sets\n"), listed after AGENT_SANDBOX_BACKEND's. */
    const char *help_env;
    /* Optional: `sbx` commands of its own, ended by one with a NULL name. */
    const sbx_backend_command *commands;
    /* Where git in this backend's sandboxes finds sbx-agent under the name that makes it
     * git's fsmonitor hook (sync/fsmonitor.h; AGENT_SANDBOX_GIT_FSMONITOR), or NULL when the
     * backend does not put it at a known path (the fsmonitor is then off there). */
    const char *fsmonitor_hook;
    /* Whether sbx-agent makes fsmonitor_hook itself, a symlink to its own program
     * (`--fsmonitor-link`), where the backend cannot place a file (a pod's agent, uploaded
     * or in the image, at a path known only in the pod). */
    bool fsmonitor_hook_by_agent;
} sbx_backend_class;

/* Every backend built in, NULL-terminated (generated by the Makefile from BACKENDS). */
extern const sbx_backend_class *const session_backend_classes[];

/* The section of cfg's settings that class c's configure hook made (NULL: none, or cfg
 * was not loaded by session_config_load()). A backend reaches its own settings only so. */
void *session_backend_settings(const sbx_config *cfg, const sbx_backend_class *c);

/* The class named name, or NULL when none of that name is built. */
const sbx_backend_class *session_backend_class_find(const char *name);

/* The backend cfg->backend names, configured for cfg's session. Fails with a
 * message when no such backend is built, or when its runtime is missing. */
sbx_backend *session_backend_new(const sbx_config *cfg, const sbx_sandbox_spec *spec, sbx_err *err);
void session_backend_free(sbx_backend *b);

/* peek() and adopt() of whichever built backend has a sandbox recorded in
 * state_dir (adopt also sets cfg->backend to it). -1 when none has. */
int session_backend_peek(const char *state_dir, strbuf *json);
int session_backend_adopt(const char *state_dir, sbx_config *cfg);

#endif
