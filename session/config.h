/*
 * Session configuration: everything a session needs to know, resolved once
 * from the environment (AGENT_SANDBOX_*), the command line and the cwd.
 *
 * Both the router (which needs the code directories to decide what may run
 * on the host) and the session client (which needs all of it) call
 * session_config_load(), so the two can never disagree about the code
 * directories or the session name.
 *
 *   sbx_config cfg;
 *   sbx_err err;
 *   if (session_config_load(&cfg, &(sbx_config_opts){ .session = opt_session }, &err) < 0)
 *       die(err.msg);          // exit 125
 *   ... cfg.code_dirs.v[i] are real, absolute paths ...
 *   session_config_free(&cfg);
 */
#ifndef SBX_SESSION_CONFIG_H
#define SBX_SESSION_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strvec.h"
#include "common/util.h"

/* Appends the non-empty elements of a sep-separated list. */
void session_split_list(strvec *sv, const char *list, char sep);
bool session_strvec_equal(const strvec *a, const strvec *b);
/* Whether path a is b or lies below it (every path lies below "/"); by name only. */
bool session_path_within(const char *a, const char *b);

#define SBX_SESSION_NAME_MAX 64
#define SBX_IDLE_TIMEOUT_DEFAULT (30 * 60)

typedef struct sbx_config {
    char *session;          /* validated: [A-Za-z0-9][A-Za-z0-9._-]* , <= 64 bytes */
    bool session_derived;   /* true when named after the code directories */
    strvec code_dirs;     /* real absolute paths, no duplicates, none inside another */
    strvec sync_paths;    /* AGENT_SANDBOX_SYNC_PATHS (absolute; globs kept as given) */
    strvec task_files;    /* AGENT_SANDBOX_TASK_FILES (absolute; pushed only) */
    strvec create_paths;  /* AGENT_SANDBOX_CREATE_PATHS (absolute; pushed, and new files
                           * the sandbox adds come back: create-only) */
    strvec excludes;      /* AGENT_SANDBOX_SYNC_EXCLUDE (gitignore patterns) */
    strvec forward_env;   /* AGENT_SANDBOX_FORWARD_ENV: names or patterns, comma-separated */
    unsigned idle_timeout;  /* seconds; 0 = never */
    /* Resource limits (the host stays usable whatever runs inside): pids, memory and CPUs
     * bound the local backend's sandbox (a kube pod has its pool template's); disk and
     * files bound what a session's pulls bring to the host, on every backend.
     * 0 means "no limit" only where the variable says so explicitly ("0"). */
    unsigned pids_max;      /* AGENT_SANDBOX_PIDS_MAX: processes + threads, default 4096 */
    unsigned long long memory_max; /* AGENT_SANDBOX_MEMORY_MAX: bytes, default half of RAM;
                               "0": no limit */
    unsigned cpus_milli;    /* AGENT_SANDBOX_CPUS: thousandths of a CPU ("1.5" = 1500);
                               default 0: all CPUs */
    unsigned long long disk_max; /* AGENT_SANDBOX_DISK_MAX: bytes the session may write on
                               the host (pulls) and in its code copy; default 10 GiB;
                               "0": no limit */
    unsigned long long files_max; /* AGENT_SANDBOX_FILES_MAX: files, directories and symlinks
                               the session's pulls may make on the host; default 1,000,000;
                               "0": no limit */
    unsigned long long undo_max; /* AGENT_SANDBOX_UNDO_MAX: bytes the undo journal may keep
                               (docs/undo.md); default a quarter of disk_max (2 GiB without
                               one); "0": no journal */
    unsigned long long audit_max; /* AGENT_SANDBOX_AUDIT_MAX: the audit log's size before it
                               rotates (three old files kept); default 16 MiB; "0": none */
    bool git_fsmonitor;     /* AGENT_SANDBOX_GIT_FSMONITOR (default 1; 0 turns it off): git in
                               the sandbox asks sbx-agent what changed (core.fsmonitor,
                               core.untrackedCache), where the backend places the hook */
    char *backend;          /* AGENT_SANDBOX_BACKEND: a name in session_backend_classes[]
                               (session/backend.h); default "local" */
    /* Each backend's own settings, one section per entry of session_backend_classes[], in its
     * order: made by that class's configure hook, freed by its settings_free hook, and
     * reached by the backend through session_backend_settings(). Opaque here, so that the
     * session layer names no backend's settings and a new backend adds its own without
     * touching this file. */
    void **backend_settings;
    char *run_dir;          /* sockets and locks: $XDG_RUNTIME_DIR/sbxsh or /tmp/sbxsh-UID */
    char *state_root;       /* AGENT_SANDBOX_STATE_DIR, else $XDG_STATE_HOME/sbxsh,
                               else ~/.local/state/sbxsh; one directory per session */
    char *home;             /* the host's $HOME: the sandbox's private HOME sits there */
    char *agent_path;       /* sbx-agent to mount in the sandbox (see session_find_agent) */
} sbx_config;

typedef struct sbx_config_opts {
    const char *session;    /* --session, or NULL */
    const char *cwd;        /* NULL: getcwd() */
} sbx_config_opts;

/* Fills cfg from opts and the environment. Checks values (names, paths,
 * numbers) but creates nothing on disk. */
int session_config_load(sbx_config *cfg, const sbx_config_opts *opts, sbx_err *err);
void session_config_free(sbx_config *cfg);

/* The code directories: AGENT_SANDBOX_CODE_DIRS (colon-separated) if set
 * (env_value), else the git top level above cwd (a directory holding a
 * `.git` directory or gitfile), else cwd. Each is made real (realpath) and
 * must be a directory; "/" is refused. Appends to out.
 *
 * Found by discovery, a directory that is not a project (the root, the home
 * directory or one above it, /tmp and other system directories, one holding
 * the state directory) is never synced whole: out stays empty, and the
 * session runs without code directories (commands run in the sandbox's own
 * directories: its private HOME at ~, its private /tmp). */
int session_resolve_code_dirs(const char *env_value, const char *cwd, strvec *out, sbx_err *err);
/* Why cwd has no code directory, in a few words ("the home directory"). */
const char *session_no_code_dir_reason(const char *cwd);

/* The name derived from code directories: basename of the first (or "scratch" without
 * one), '-', and 8 hex digits of a hash over all of them and the state directory
 * (state_root, NULL for none), e.g. "myproj-3fa9c2d1". */
char *session_name_derive(const strvec *code_dirs, const char *state_root);
/* 0 when name is a valid session name, else -1 with a message. */
int session_name_check(const char *name, sbx_err *err);

/* What fixes a sandbox's shape: each backend's part of it (its fingerprint hook: locally
 * the runtime as asked and the network), and the code directories. A holder serves only
 * clients whose fingerprint equals its own or one of session_config_fingerprints_also()
 * (a session named explicitly could otherwise be reused with another runtime or other
 * directories without a word). Malloc'd. */
char *session_config_fingerprint(const sbx_config *cfg);
/* The other fingerprints a holder of cfg's shape serves (the backends' fingerprint_also
 * hooks), pushed to out. */
void session_config_fingerprints_also(const sbx_config *cfg, strvec *out);

/* Parses a size: "1048576", "512K", "256M", "10G", "1T" (powers of 1024; an optional
 * trailing "B" or "iB"), or "N%" of total RAM when pct_of is non-zero. */
int session_parse_size(const char *s, unsigned long long pct_of, unsigned long long *out,
                   sbx_err *err);
/* Formats a byte count for people: "512 MiB", "1.5 GiB", "10 bytes". */
void session_format_size(char *buf, size_t n, double bytes);
/* Parses a CPU count: "2", "0.5", "1.25" into thousandths. */
int session_parse_cpus(const char *s, unsigned *out, sbx_err *err);

#define SBX_PIDS_MAX_DEFAULT 4096
#define SBX_DISK_MAX_DEFAULT (10ULL << 30)
#define SBX_FILES_MAX_DEFAULT 1000000ULL

/* Parses an idle timeout: "1800", "90s", "30m", "2h", "0" (never). */
int session_parse_duration(const char *s, unsigned *out, sbx_err *err);

/* Finds the sbx-agent binary: $AGENT_SANDBOX_AGENT, else sbx-agent-static
 * or sbx-agent beside the running program, else in LIBEXECDIR. */
char *session_find_agent(sbx_err *err);
/* Finds a file that installs beside sbx-agent (e.g. sbx-runsc-compat.so):
 * beside agent_path, beside the running program, or in LIBEXECDIR; NULL
 * when none has it. */
char *session_find_libexec(const char *agent_path, const char *name);

/* Creates (if needed) and checks a private directory: owned by us, mode
 * 0700, not a symlink. Parents are created with mode 0700 too. */
int session_private_dir(const char *path, sbx_err *err);

/* The path of the session's directory under cfg->state_root, its socket,
 * lock and log under cfg->run_dir. Malloc'd. */
char *session_state_dir(const sbx_config *cfg);
char *session_socket_path(const sbx_config *cfg);
char *session_lock_path(const sbx_config *cfg);
/* The holder's log, beside its socket; removed by a release. */
char *session_log_path(const sbx_config *cfg);

#endif
