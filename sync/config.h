/*
 * sync_config: what a session syncs, as the front end resolved it from the command line and
 * the AGENT_SANDBOX_* environment. The sync engine never reads the environment itself.
 *
 * Every path is absolute and means the same path on both sides (the sandbox sees the code
 * directories at their host paths). String lists are NULL-terminated arrays, like argv; a NULL
 * list is an empty one. sync_host_new() copies everything it keeps, so the caller's strings
 * need not outlive that call.
 *
 *   code_dirs    AGENT_SANDBOX_CODE_DIRS (or the git top level): synced both ways, `.git`
 *                included through the allowlists of sync/PROTOCOL.md.
 *   sync_paths   AGENT_SANDBOX_SYNC_PATHS: files or directories outside the code directories,
 *                synced both ways; glob characters (* ? [) are allowed in any component
 *                ("/tmp/claude-*-cwd"). A matching directory syncs with everything below it.
 *   task_files   AGENT_SANDBOX_TASK_FILES: files pushed into the sandbox, never pulled back.
 *   excludes     AGENT_SANDBOX_SYNC_EXCLUDE: gitignore-syntax patterns, applied under every
 *                root on both sides, in addition to each directory's .sbxignore file.
 *   state_file   where sync_host_save() persists the host manifest so that a restarted
 *                holder resumes without a full re-push; NULL keeps it in memory only.
 *   user_gitconfig / sandbox_gitconfig
 *                when both are set, the host's git config file user_gitconfig (normally
 *                ~/.gitconfig) is filtered to the identity-and-everyday-settings allowlist and
 *                written to sandbox_gitconfig (the sandbox's private ~/.gitconfig) when a
 *                connection opens. A missing or unparsable file gives an empty config there.
 *   user_home / sandbox_home
 *                when both are set, the user's startup files in user_home (sync/rcfile.h:
 *                ~/.bashrc, ~/.bash_profile, ~/.profile, ... and the home-directory files they
 *                source) are filtered of secrets and put at the same relative paths under
 *                sandbox_home (the sandbox's private HOME) when a connection opens, and again
 *                before a command when one changed on the host.
 *   create_paths AGENT_SANDBOX_CREATE_PATHS: directories pushed into the sandbox as task files
 *                are, where the sandbox may also add new files that come back to the host:
 *                create-only (regular files, at most SYNC_CREATE_MAX_FILE bytes each, never
 *                executable); a change to a file the host has, a deletion, a symlink, is
 *                refused with a warning and the host's file is pushed back (Claude Code's
 *                ~/.claude/shell-snapshots, which a host bash may source later).
 */
#ifndef SBX_SYNC_CONFIG_H
#define SBX_SYNC_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sync_config {
    const char *const *code_dirs;
    const char *const *sync_paths;
    const char *const *task_files;
    const char *const *excludes;
    const char *state_file;
    const char *user_gitconfig;
    const char *sandbox_gitconfig;
    const char *user_home;
    const char *sandbox_home;
    const char *const *create_paths;

    /* Limits on what one pull (sandbox -> host delta) may bring; 0 means the default.
     * A file over max_file_size is refused with a warning; a delta over max_pull_bytes or
     * max_pull_entries is aborted as a whole (the host tree stays as it was). */
    uint64_t max_file_size;     /* default SYNC_DEFAULT_MAX_FILE_SIZE */
    uint64_t max_pull_bytes;    /* default SYNC_DEFAULT_MAX_PULL_BYTES */
    uint64_t max_pull_entries;  /* default SYNC_DEFAULT_MAX_PULL_ENTRIES */
    /* The session's disk quota for pulls (AGENT_SANDBOX_DISK_MAX), 0 for none: what pulls
     * have added to the host tree since sync_host_new(), in allocated bytes (a pull that
     * replaces or deletes files is credited what they held; holes cost nothing), may not
     * exceed it. A pull that would go over is refused as a whole before anything is
     * committed (the host tree stays as it was; the round's exit says why). */
    uint64_t disk_max;
    /* The session's entry quota for pulls (AGENT_SANDBOX_FILES_MAX), 0 for none: how many
     * files, directories and symlinks pulls have added to the host tree since
     * sync_host_new() (what they deleted is credited). A pull over it is refused as a whole,
     * like one over disk_max. */
    uint64_t files_max;
    /* core.fsmonitor for git in the sandbox (the hook command, `sbx-agent --fsmonitor-hook
     * SOCKET`), or NULL: written with core.untrackedCache=true into sandbox_gitconfig only,
     * never a host file */
    const char *git_fsmonitor;

    /* Never use inotify on the host: every push is a full stat walk (tests, benchmarks). */
    bool no_watch;
} sync_config;

#define SYNC_DEFAULT_MAX_FILE_SIZE (4ULL << 30)
#define SYNC_DEFAULT_MAX_PULL_BYTES (16ULL << 30)
#define SYNC_DEFAULT_MAX_PULL_ENTRIES 2000000ULL
/* A file the sandbox adds to a create-only directory (create_paths). */
#define SYNC_CREATE_MAX_FILE (4ULL << 20)

/* What any entry a pull makes on the host costs the disk quota at least: an inode and its
 * directory entry, a block for a directory or a small file. Without it, empty files and
 * directories (and symlinks) were free: 40,000 of them went through a 1 MiB quota. */
#define SYNC_ENTRY_COST 4096

/* Which of the session's pull quotas refused a pull (sync_exit_status, apply_refusal()). */
typedef enum sync_quota {
    SYNC_QUOTA_NONE = 0,
    SYNC_QUOTA_DISK,       /* disk_max */
    SYNC_QUOTA_FILES,      /* files_max */
} sync_quota;

#endif
