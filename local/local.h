/*
 * The local backend's own header: its types and the functions its files share.
 * Private to local/ (nothing outside includes it but the tests); the rest of the
 * program reaches the backend only through session/backend.h, by the class
 * local_backend_class that local_backend.c defines.
 *
 * The files, in the order a sandbox is made:
 *   settings.c       its settings (AGENT_SANDBOX_LOCAL_*), and its part of the fingerprint
 *   runtime.c        which runtime (runsc or bwrap) AUTO resolves to
 *   mounts.c         the tree the sandbox sees: system dirs, the /etc allowlist, tmpfs copies
 *   limits.c         cgroups (v1, v2) or rlimits; the doctor's probe
 *   spawn.c          starting a runtime's process detached, in its cgroup
 *   bwrap.c          bubblewrap: the argv from the mount plan, and the start
 *   runsc.c          gVisor: the OCI bundle, runsc's argv, and the start
 *   state.c          sandbox.json: saving, loading, and the class's peek/adopt hooks
 *   status.c         the JSON facts of `sbx status`
 *   egress_run.c     the network namespace before bwrap, the egress proxy's life
 *   doctor.c         the class's doctor hook
 *   local_backend.c  the class: claim, open_stream, alive, exists, release
 */
#ifndef SBX_LOCAL_LOCAL_H
#define SBX_LOCAL_LOCAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/strbuf.h"
#include "common/strvec.h"
#include "common/util.h"
#include "session/backend.h"
#include "session/config.h"
#include "local/egress.h"

#include <cjson/cJSON.h>

/* Which runtime runs the sandbox: AGENT_SANDBOX_LOCAL_RUNTIME as asked (AUTO: runsc when
 * installed, else bwrap), and what a backend resolved it to. */
typedef enum local_runtime {
    LOCAL_RUNTIME_AUTO,
    LOCAL_RUNTIME_RUNSC,
    LOCAL_RUNTIME_BWRAP,
} local_runtime;

/* "runsc", "bwrap", "auto". */
const char *local_runtime_name(local_runtime rt);

/* The local backend's section of the session configuration (AGENT_SANDBOX_LOCAL_* and
 * AGENT_SANDBOX_EGRESS): made by local_configure (settings.c), kept opaque by the session
 * layer (sbx_config.backend_settings), freed by local_settings_free. */
typedef struct local_settings {
    local_runtime runtime;  /* as asked; the backend resolves AUTO */
    bool network_host;      /* AGENT_SANDBOX_LOCAL_NETWORK=host */
    bool network_allowlist; /* AGENT_SANDBOX_LOCAL_NETWORK=allowlist: HTTP(S) through the
                               host's egress proxy to the hosts of egress only */
    strvec egress;          /* AGENT_SANDBOX_EGRESS, checked (local/egress.h), lower-case */
} local_settings;

/* cfg's local section; the defaults (auto, no network) when cfg has none (not loaded by
 * session_config_load), so a reader never gets NULL. */
const local_settings *local_settings_of(const sbx_config *cfg);

/* Where things sit inside the sandbox. */
#define SBX_IN_AGENT_BIN "/.sbxsh/sbx-agent"
/* The same sbx-agent again, under the name that makes it git's fsmonitor hook
 * (sync/fsmonitor.h, FSM_HOOK_NAME; AGENT_SANDBOX_GIT_FSMONITOR): the class's
 * fsmonitor_hook. */
#define SBX_IN_FSMONITOR_HOOK "/.sbxsh/sbx-fsmonitor-hook"
#define SBX_IN_COMPAT_SO "/.sbxsh/sbx-runsc-compat.so"
/* the persistent shell's interactive marks (local/bash_interactive.c; cli/line.c loads it) */
#define SBX_IN_BASH_SO SBX_SANDBOX_BASH_SO
#define SBX_AGENT_SOCKET "agent.sock"

/* How long a new sandbox may take to show its agent's socket. */
#define SBX_START_TIMEOUT_MS 30000

/* AGENT_SANDBOX_LOCAL_NETWORK=allowlist: STATE/SESSION/egress (the proxy's socket) here. */
#define SBX_IN_EGRESS_DIR "/.sbxsh/egress"
#define SBX_EGRESS_SOCKET "proxy.sock"
/* The sandbox's /etc/resolv.conf without the host's network: the agent's DNS stub
 * (sync/dnsstub.h); one try, one second (a stub that is not there fails at once anyway:
 * the port is closed). */
#define SBX_RESOLV_CONF "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n"
/* Where the DNS stub's sockets sit in bwrap's sandbox (sbx-agent --dns-fds). */
#define SBX_DNS_FDS "6,7"
/* How long the egress proxy may take to listen. */
#define SBX_EGRESS_START_TIMEOUT_MS 10000

/* Where the cgroup hierarchies are mounted; the period cpu quotas are given in. */
#define SBX_CGROUP_ROOT "/sys/fs/cgroup"
#define SBX_CPU_PERIOD_US 100000

typedef enum mount_kind {
    M_RO,       /* read-only bind of src */
    M_RW,       /* read-write bind of src */
    M_TMPFS,
    M_PROC,
    M_DEV,
    M_SYMLINK,  /* a symlink at dst pointing to src */
} mount_kind;

typedef struct mount_ent {
    mount_kind kind;
    char *src;
    char *dst;
    bool is_file;   /* binds: the source is not a directory */
    unsigned long long size;    /* tmpfs: bytes, 0 = the runtime's default */
    unsigned mode;              /* tmpfs: permissions of its root, 0 = default */
    bool caller_owned;          /* tmpfs: its root is the caller's (HOME, a code copy), not
                                 * root's; runsc needs uid=/gid= for that (bwrap makes it so) */
} mount_ent;

/* The limits a sandbox runs under and how they are enforced (the host
 * stays usable whatever runs inside). */
typedef struct sandbox_limits {
    unsigned pids_max;              /* 0 = none */
    unsigned long long memory_max;  /* bytes, 0 = none */
    unsigned cpus_milli;            /* 0 = all CPUs */
    unsigned long long disk_max;    /* bytes of each code copy and of /tmp, 0 = none */
    char mechanism[16];             /* "cgroup v1", "cgroup v2", "rlimit" */
    strvec cgroups;                 /* the cgroup directories made for this sandbox */
} sandbox_limits;

/* The processes an idle runsc sandbox's freeze stopped (freeze.c), each with its start
 * time, so that thawing signals only those very processes. */
#define LOCAL_FROZEN_MAX 256
typedef struct local_frozen {
    struct { pid_t pid; uint64_t start; } v[LOCAL_FROZEN_MAX];
    size_t n;
} local_frozen;

typedef struct local_backend {
    sbx_backend base;
    local_runtime runtime;
    char *runtime_path;     /* runsc or bwrap */
    char *session;
    char *dir;              /* the session's state directory */
    char *home;
    bool network_host;
    bool network_allowlist; /* HTTP(S) through sbx-egress to the hosts of egress only */
    strvec egress;
    pid_t egress_pid;       /* the proxy, while claimed (0: none) */
    uint64_t egress_start;
    strvec code_dirs;
    char *agent_path;
    char *compat_so;        /* runsc: the statx shim beside the agent, or NULL */
    char *bash_so;          /* the persistent shell's interactive marks beside it, or NULL */
    strvec agent_args;
    strvec agent_env;
    /* The claimed sandbox (valid after claim). */
    char *id;
    pid_t pid;              /* bwrap: the pid namespace's init; runsc: the sandbox process */
    uint64_t starttime;
    int64_t created;
    bool claimed;
    sandbox_limits lim;     /* asked for (from cfg); mechanism and cgroups once claimed */
    bool runsc_cgroups;     /* runsc makes the sandbox's cgroup (else --ignore-cgroups) */
    local_frozen frozen;    /* stopped by local_freeze (n 0: running) */
} local_backend;

/* ---- the mount plan ---------------------------------------------------- */

typedef struct mount_list {
    mount_ent *v;
    size_t n, alloc;
} mount_list;

typedef struct saved_state {
    char runtime[16];
    char id[128];
    pid_t pid;
    uint64_t starttime;
    int64_t created;
    bool network_host;
    bool network_allowlist;
    strvec egress;
    pid_t egress_pid;
    uint64_t egress_start;
    strvec code_dirs;
    sandbox_limits lim;
} saved_state;

/* ---- running things ---------------------------------------------------- */

/* What a spawned child gets besides argv and envp. */
typedef struct spawn_opts {
    int pass_fds[3];            /* become its fds 3, 4 and 5 (-1: none) */
    /* cgroup.procs files the child writes its pid to before exec, so that
     * it and everything it starts run inside the sandbox's cgroup. */
    char *const *join;
    size_t njoin;
    const sandbox_limits *rlimits;  /* the rlimit fallback, or NULL */
    bool dns_netns;             /* bwrap: its network namespace made here (dns_netns) */
} spawn_opts;

/* The class (what the registry lists; local_backend.c). */
extern const sbx_backend_class local_backend_class;
sbx_backend *local_new(const sbx_config *cfg, const sbx_sandbox_spec *spec, sbx_err *err);
bool local_alive(sbx_backend *b);

/* settings.c: the class's configure, settings_free and fingerprint hooks. */
int local_configure(const sbx_config *cfg, void **settings, sbx_err *err);
void local_settings_free(void *settings);
void local_fingerprint(const sbx_config *cfg, strbuf *out);
void local_fingerprint_also(const sbx_config *cfg, strvec *also);
void local_sandbox_env(const sbx_config *cfg, strvec *vars);
/* status.c: the class's describe hook (egress and limits for people). */
void local_describe(const cJSON *sandbox, strbuf *out);

/* runtime.c: which runtime want (AUTO: runsc when installed, else bwrap) resolves
 * to here, and its path (malloc'd, if path); -1 with a message naming the Debian
 * packages when it is not installed. */
int local_runtime_resolve(local_runtime want, local_runtime *out, char **path, sbx_err *err);

/* The release date (YYYYMMDD) in `runsc --version`'s first line, 0 when there is none;
 * whether a runsc of that date defaults to the systrap platform (else it has only ptrace
 * on a machine without KVM). Pure (tests/local/t-bwrap.c). */
#define LOCAL_RUNSC_SYSTRAP_DATE 20230601ul
/* The first gVisor release whose systrap parks its fast-path monitor while the sandbox is
 * idle (google/gvisor#13470, in release-20260622.0): before it, a goroutine wakes every
 * 400 us for the sandbox's life, about 3 % of a CPU per idle sandbox (bench/idle.md). */
#define LOCAL_RUNSC_IDLE_PARK_DATE 20260622ul
unsigned long local_runsc_release_date(const char *version_line);
bool local_runsc_has_systrap(unsigned long release_date);

/* mounts.c */
mount_ent *local_ml_add(mount_list *ml, mount_kind kind, const char *src, const char *dst);
void local_ml_free(mount_list *ml);
/* Whether path p lies strictly below dir (by name). */
bool local_path_under(const char *p, const char *dir);
/* The sandbox's tree for lb, parents before children. */
void local_plan_mounts(local_backend *lb, mount_list *ml);

/* limits.c */
/* runsc's host pids backstop for a sandbox limited to pids_max inside. */
unsigned long long local_runsc_host_pids(unsigned pids_max);
bool local_cg_unified(void);
/* A cgroup directory recorded in sandbox.json is only ever one of ours. */
bool local_cg_dir_ok(const char *dir);
/* Kills what is left in the cgroups and removes them. */
void local_cg_remove(const strvec *dirs);
/* bwrap: makes the sandbox's cgroups and sets the limits; 0 with none when no
 * hierarchy is writable here (rlimits then). */
int local_cg_create(sandbox_limits *lim, const char *id, sbx_err *err);
/* Whether runsc can make its cgroups here. */
bool local_runsc_cgroups_usable(void);
/* The cgroups runsc made for sandbox id. */
void local_cg_find_runsc(sandbox_limits *lim, const char *id);
/* The rlimit fallback, in the child before exec. */
void local_apply_rlimits(const sandbox_limits *lim);
/* Whether a sandbox of runtime rt gets its limits from a cgroup here (0, how:
 * "cgroup v1, e.g. ...", made and removed to find out) or only from rlimits
 * (-1, how: why not). */
int local_limits_probe(local_runtime rt, strbuf *how);

/* spawn.c */
int local_spawn(char *const argv[], char *const envp[], const char *log, const spawn_opts *o,
                bool wait, int *status, sbx_err *err);
/* The agent's command line inside the sandbox: sandbox paths only. */
void local_agent_argv(local_backend *lb, strvec *argv);

/* bwrap.c */
typedef struct local_bwrap_params {
    unsigned uid, gid;          /* the caller's: the sandbox runs as them */
    bool network_host;          /* AGENT_SANDBOX_LOCAL_NETWORK=host: no --unshare-net */
    const strvec *agent_env;    /* NAME=VALUE; anything without '=' is skipped */
} local_bwrap_params;
/* bwrap's options (what goes through --args) for the mount plan ml. Pure. */
void local_bwrap_options(const local_bwrap_params *p, const mount_list *ml, strvec *argv);
/* bwrap's own command line: BWRAP --args 4 -- AGENT ARGS... */
void local_bwrap_command(const char *bwrap, local_backend *lb, strvec *argv);
int local_start_bwrap(local_backend *lb, sbx_err *err);

/* runsc.c */
typedef struct local_runsc_params {
    const char *runsc;          /* the program */
    const char *state_dir;      /* the session's: its runsc/ is runsc's --root */
    bool network_host;
    bool allowlist;             /* the egress proxy: the agent's relay reaches a host socket */
    bool cgroups;               /* runsc makes the sandbox's cgroups (else --ignore-cgroups) */
    bool rootless;              /* not root: --rootless */
} local_runsc_params;
/* runsc's global options, before its command. Pure. */
void local_runsc_argv(const local_runsc_params *p, strvec *argv);
int local_start_runsc(local_backend *lb, sbx_err *err);

/* freeze.c: the backend's freeze and thaw ops (runsc only: 0, nothing done, for
 * bwrap or a sandbox not quiescent), and SIGCONT for the whole tree under a sandbox's
 * recorded pid (a reattach after a holder that died with it frozen). */
int local_freeze(sbx_backend *b, sbx_err *err);
void local_thaw(sbx_backend *b);
void local_thaw_tree(pid_t pid, uint64_t start);

/* state.c */
char *local_state_path(local_backend *lb, const char *name);
int local_save_state(local_backend *lb, sbx_err *err);
/* -1 when dir has no (complete) sandbox.json. */
int local_load_state(const char *dir, saved_state *s);
void local_saved_state_free(saved_state *s);
/* Whether the process pid, started at starttime, still runs. */
bool local_state_alive(pid_t pid, uint64_t starttime);
int local_peek(const char *state_dir, strbuf *json);
int local_adopt(const char *state_dir, sbx_config *cfg);

/* The egress part of a status: the list, and whether its proxy runs. */
typedef struct egress_status {
    bool allowlist;
    const strvec *allow;
    pid_t pid;
    uint64_t start;
} egress_status;

/* egress_run.c */
const char *local_net_name(bool host, bool allowlist);
/* In the process that becomes bwrap: the sandbox's network namespace, its loopback up
 * and the DNS stub's sockets bound on 127.0.0.1:53 at fds 6 and 7. */
int local_dns_netns(void);
bool local_egress_alive(pid_t pid, uint64_t start);
void local_stop_egress(pid_t pid, uint64_t start);
/* Starts sbx-egress for lb's allowlist, watching the sandbox; records its pid. */
int local_start_egress(local_backend *lb, sbx_err *err);
cJSON *local_json_strv(const char *const *v, size_t n);

/* status.c */
void local_status_json(strbuf *json, const char *runtime, const char *id, int64_t created,
                       bool alive, pid_t pid, bool network_host, const egress_status *eg,
                       const char *dir, const sandbox_limits *lim);
void local_status(sbx_backend *b, strbuf *json);

/* doctor.c */
void local_doctor(const sbx_config *cfg, sbx_doctor_finding *finding);

#endif
