/*
 * The host's end of the sbx-agent protocol: an event-driven connection that runs commands in
 * the sandbox, relays their file descriptors, and keeps the code directories in sync.
 *
 * Two objects:
 *   sync_host  the host side of a session's sync state: the configuration and the host
 *              manifest (the host tree as of the last sync, kept warm between commands, with
 *              inotify where it works). It outlives connections: a holder that loses its agent
 *              stream opens a new sync_conn on the same sync_host. sync_host_save() persists it
 *              to config->state_file, so that a restarted holder resumes without a full push.
 *   sync_conn  one byte stream (a read fd and a write fd, or one socket for both) to one
 *              sbx-agent. Commands are multiplexed on it by channel id and may run
 *              concurrently; sync rounds are serialized by the stream's order.
 *
 * Guarantees:
 *   - sync_conn_run() pushes the host's changes before the command starts (same write);
 *     the exit callback comes only after the sandbox's changes made up to the command's exit
 *     have been applied on the host. So push -> run -> exit -> pull is one round trip.
 *   - Everything from the agent is untrusted: every frame is bounded and validated; paths are
 *     checked and written beneath the roots without following symlinks; `.git` is written only
 *     through its allowlist. A refused entry gives a warning and is skipped; a malformed,
 *     truncated or oversized message aborts the pull, leaves the host tree as it was before
 *     that delta, and kills the connection (error callback).
 *   - Output is flow-controlled per (channel, fd): the agent sends at most
 *     SYNC_OUTPUT_WINDOW unconsumed bytes per output fd; call sync_conn_credit() as you
 *     consume (or set auto_credit in the request). Input written with sync_conn_write() is
 *     bounded the same way by the agent's window. Memory stays constant whatever the sizes.
 *   - Callbacks run only from inside sync_conn_handle_events() (or the blocking helpers).
 *     They may call any sync_conn_* function except sync_conn_free().
 *
 * How the holder uses this (error handling trimmed):
 *
 *     sync_config cfg = { .code_dirs = dirs, .state_file = state, ... };
 *     sync_host *host;
 *     if (sync_host_new(&cfg, &host, &err) < 0) die(err.msg);
 *
 *     int rfd, wfd;                       // from the backend: a stream to sbx-agent
 *     sync_conn_ops ops = { .output = on_output, .eof = on_eof, .writable = on_writable,
 *                           .exit = on_exit, .sync_done = on_sync_done,
 *                           .warning = on_warning, .error = on_error };
 *     sync_conn *conn;
 *     if (sync_conn_open(host, rfd, wfd, &ops, holder, 10000, &conn, &err) < 0)
 *         die(err.msg);                   // agent missing, wrong version, timeout
 *
 *     // A client asks to run a command: pick a free channel id and start it.
 *     sync_fd_spec fds[] = { {0, SYNC_FD_IN}, {1, SYNC_FD_OUT}, {2, SYNC_FD_OUT} };
 *     sync_run_req req = { .exe = "/bin/bash", .argv = (const char *[]){"bash", "-c", line, 0},
 *                          .env = env, .cwd = cwd, .fds = fds, .nfds = 3 };
 *     if (sync_conn_run(conn, chan, &req, &err) < 0) reply_125(client, err.msg);
 *
 *     for (;;) {                           // the holder's poll loop
 *         struct pollfd pfd[64];
 *         size_t n = sync_conn_pollfds(conn, pfd, SYNC_CONN_MAX_POLLFDS);
 *         n += add_client_fds(pfd + n);
 *         poll(pfd, n, sync_conn_timeout(conn));
 *         if (sync_conn_handle_events(conn, pfd, SYNC_CONN_MAX_POLLFDS) < 0)
 *             reattach_or_fail_all();      // on_error already said why
 *         serve_clients(pfd + ...);
 *     }
 *
 *     on_output(ctx, chan, fd, buf, len): write buf to the client; once the client has
 *         taken the bytes, sync_conn_credit(conn, chan, fd, len).  If the client's reader
 *         went away (EPIPE), sync_conn_close_output(conn, chan, fd): the sandbox writer
 *         then gets SIGPIPE, as under bash.
 *     client stdin bytes: n = sync_conn_write(conn, chan, 0, buf, len); keep the rest until
 *         on_writable(ctx, chan, 0); at the client's EOF, sync_conn_eof(conn, chan, 0).
 *     client got SIGINT: sync_conn_signal(conn, chan, SIGINT).
 *     on_exit(ctx, chan, st): the sandbox's changes are already on the host; report
 *         st->wait_status to the client. The channel id is free again.
 *     persistent shell between commands: sync_conn_sync(conn, id) -> on_sync_done(ctx, id).
 *     when idle and at exit: sync_host_save(host, &err).
 *
 * Tests, benchmarks and `sbx exec` can use the blocking helpers instead of a poll loop:
 * sync_conn_run_wait() and sync_conn_sync_wait().
 */
#ifndef SBX_SYNC_CONN_H
#define SBX_SYNC_CONN_H

#include "common/util.h"
#include "sync/config.h"

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sync_host sync_host;
typedef struct sync_conn sync_conn;

/* ---- the host side of a session's sync state ------------------------------------------- */

/* Checks the configuration (absolute paths, existing code directories), loads the manifest
 * from cfg->state_file when it exists and matches the configuration, and removes staging
 * directories that a crashed holder left behind. */
int sync_host_new(const sync_config *cfg, sync_host **out, sbx_err *err);
void sync_host_free(sync_host *host);
/* The session's undo journal (sync/journal.h; the caller keeps it): each pull's commit saves
 * into it what it replaces or deletes. NULL: none. */
struct jnl;
void sync_host_set_journal(sync_host *host, struct jnl *j);
/* Carries into host, just made for more roots (a client named more sync paths or task
 * files), what old knew: the records of the roots both have, the pairing and its sequence
 * numbers, what its pulls have cost the quotas. The agent, told the same pairing, keeps its
 * records of those roots too, so nothing already synced looks changed on either side. Call
 * before the first connection of host; old is then freed by the caller. */
void sync_host_adopt(sync_host *host, sync_host *old);
/* Writes the manifest to cfg->state_file (temp + rename). A no-op without a state file or
 * when nothing changed since the last save. Cheap to call; meant for idle time and exit. */
int sync_host_save(sync_host *host, sbx_err *err);

/* ---- connections ------------------------------------------------------------------------ */

#define SYNC_OUTPUT_WINDOW (256u * 1024)  /* unconsumed output bytes per (channel, fd) */
#define SYNC_MAX_CHILD_FD 1023            /* highest fd number a fd map may name */
#define SYNC_MAX_FDS 16                   /* entries in one fd map */
#define SYNC_CONN_MAX_POLLFDS 3           /* sync_conn_pollfds() never fills more */

typedef enum sync_fd_dir {
    SYNC_FD_IN,   /* the child reads it; the host feeds it with sync_conn_write() */
    SYNC_FD_OUT,  /* the child writes it; bytes arrive through the output callback */
    /* The child writes it on the pipe of the nearest SYNC_FD_OUT before it in the map: its
     * bytes arrive as that fd's, in the order written. For 2 beside 1 when the host's
     * stdout and stderr are one file (`>log 2>&1`, a terminal), as bash would share it. */
    SYNC_FD_OUT_SHARED,
} sync_fd_dir;

typedef struct sync_fd_spec {
    int fd;           /* the fd number in the child, 0..SYNC_MAX_CHILD_FD */
    sync_fd_dir dir;
} sync_fd_spec;

/* One command. The child runs in a new session (so a process group of its own), at cwd, with
 * exactly env as its environment, and only the fds of the map open (0, 1 and 2, when not in
 * the map, are /dev/null). exe is a path, or a name looked up in env's PATH. */
typedef struct sync_run_req {
    const char *exe;
    const char *const *argv;   /* NULL-terminated; argv[0] as the child should see it */
    const char *const *env;    /* NULL-terminated "NAME=value" list: the whole environment */
    const char *cwd;           /* absolute */
    const sync_fd_spec *fds;
    size_t nfds;
    /* With tty, fds 0, 1 and 2 are a pty the agent allocates (the child is a session leader
     * with it as controlling terminal), whatever the map says about them; the terminal's
     * output arrives as fd 1. rows/cols set its size (0 = 24x80). */
    bool tty;
    uint16_t rows, cols;
    bool no_push;      /* do not push host changes first */
    bool no_pull;      /* do not pull sandbox changes before the exit callback */
    bool auto_credit;  /* output is consumed when the output callback returns */
} sync_run_req;

typedef enum sync_exit_kind {
    SYNC_EXITED,        /* code = exit status */
    SYNC_SIGNALED,      /* code = signal number; core_dumped */
    SYNC_SPAWN_FAILED,  /* code = errno in the sandbox; message says which step failed */
} sync_exit_kind;

typedef struct sync_exit_status {
    sync_exit_kind kind;
    int code;
    bool core_dumped;
    /* The raw wait status (W_EXITCODE / signal | 0x80 for a core); for SYNC_SPAWN_FAILED
     * what bash would give: exit 127 for ENOENT, 126 otherwise. */
    int wait_status;
    /* SYNC_SPAWN_FAILED only, e.g. "chdir /x: No such file or directory"; valid until the
     * next call on the connection. */
    const char *message;
    /* NULL, or why the sandbox's changes of this round were not applied (the pull was over
     * a quota, pull_error_quota says which; or interrupted with sync_conn_abort_pull()):
     * the host tree is as it was before that pull. Valid during the callback. */
    const char *pull_error;
    sync_quota pull_error_quota;
    /* Which of the sandbox's spaces the agent found full when the command ended (a number
     * from the sandbox, only these bits): a code directory's copy, /tmp, HOME. */
    unsigned full;
} sync_exit_status;

enum { SYNC_FULL_CODE = 1, SYNC_FULL_TMP = 2, SYNC_FULL_HOME = 4 };

/* Callbacks; any may be NULL. ctx is sync_conn_open()'s ctx. Byte buffers and strings are
 * valid only during the call. */
typedef struct sync_conn_ops {
    /* Bytes the child wrote to its fd (or the terminal, as fd 1, with tty). */
    void (*output)(void *ctx, uint32_t chan, int fd, const void *buf, size_t len);
    /* The child's output fd reached end of file (at most once per fd, before exit). */
    void (*eof)(void *ctx, uint32_t chan, int fd);
    /* sync_conn_write() on (chan, fd) accepts bytes again. */
    void (*writable)(void *ctx, uint32_t chan, int fd);
    /* The command's main process ended, or could not start. Always the channel's last
     * callback; the sandbox's changes are already applied on the host (unless no_pull). */
    void (*exit)(void *ctx, uint32_t chan, const sync_exit_status *st);
    /* A sync_conn_sync() round finished: both sides' changes are applied. */
    void (*sync_done)(void *ctx, uint64_t id);
    /* Optional: the agent handled a sync_conn_signal() on chan (delivered, or the
     * command had ended): the way to the sandbox works. */
    void (*signaled)(void *ctx, uint32_t chan, int signo);
    /* Something the user should know, with no failure: a conflict (both names given), a
     * refused or skipped path, a special file not synced. One line, no newline. */
    void (*warning)(void *ctx, const char *msg);
    /* The connection is dead (agent gone, protocol violation, aborted pull). Commands in
     * flight get no exit callback; every later call on the conn fails. Called once. */
    void (*error)(void *ctx, const char *msg);
} sync_conn_ops;

/* What the agent said about itself in its hello. */
typedef struct sync_agent_info {
    unsigned protocol;    /* SYNC_PROTOCOL_VERSION of the agent */
    long pid;             /* the agent's pid in the sandbox */
    bool resumed;         /* the agent still had this host manifest's sync state */
    char about[256];      /* "sbx-agent VERSION; Linux RELEASE; uid N", sanitized */
} sync_agent_info;

/* Counters since sync_conn_open(), for `sbx status` and benchmarks. */
typedef struct sync_conn_stats {
    uint64_t pushes, pulls;                /* delta rounds each way */
    uint64_t push_entries, pull_entries;   /* paths sent / applied */
    uint64_t push_bytes, pull_bytes;       /* file content bytes */
    uint64_t last_push_ns, last_pull_ns;   /* host time spent scanning / applying */
    uint64_t full_scans;                   /* pushes that needed a whole-tree stat walk */
} sync_conn_stats;

/* Starts the protocol on the stream (rfd == wfd is fine for a socket) and waits up to
 * timeout_ms for the agent's hello, failing with a message that says what to do (agent not
 * started, wrong protocol version, timeout). Sets both fds non-blocking; does not take
 * ownership: close them after sync_conn_free(). The first push happens with the first run or
 * sync; when it is the session's first, it sends the whole tree. */
int sync_conn_open(sync_host *host, int rfd, int wfd, const sync_conn_ops *ops, void *ctx,
                   int timeout_ms, sync_conn **out, sbx_err *err);
/* Frees the connection. Commands still running in the sandbox keep running there. */
void sync_conn_free(sync_conn *conn);
const sync_agent_info *sync_conn_agent(const sync_conn *conn);
void sync_conn_stats_get(const sync_conn *conn, sync_conn_stats *out);

/* Poll integration: fills up to max entries (at most SYNC_CONN_MAX_POLLFDS) with the fds and
 * events the connection waits for and returns how many. */
size_t sync_conn_pollfds(sync_conn *conn, struct pollfd *pfds, size_t max);
/* Does the work the events allow: reads and dispatches frames (running callbacks), writes
 * queued frames and streams pushes. Pass the whole pollfd array after poll(); entries that
 * are not the connection's are ignored. Returns 0, or -1 once the connection is dead. */
int sync_conn_handle_events(sync_conn *conn, const struct pollfd *pfds, size_t n);
/* Milliseconds until the connection needs sync_conn_handle_events() even without events
 * (-1: no deadline). Use it as (or to shorten) the poll timeout. */
int sync_conn_timeout(const sync_conn *conn);

/* Starts a command on channel chan (non-zero, not in use). Fails only for a bad request or a
 * dead connection; a command that cannot start gets an exit callback with
 * SYNC_SPAWN_FAILED. */
int sync_conn_run(sync_conn *conn, uint32_t chan, const sync_run_req *req, sbx_err *err);
/* Queues bytes for the child's input fd; returns how many were accepted (less than len when
 * the agent's window is full: the writable callback says when to go on), or -1 on a dead
 * connection or an unknown (chan, fd). */
ssize_t sync_conn_write(sync_conn *conn, uint32_t chan, int fd, const void *buf, size_t len);
/* End of input on the child's fd, after the bytes already accepted. */
int sync_conn_eof(sync_conn *conn, uint32_t chan, int fd);
/* Sends signo to the command's process group (0: none, only the agent's answer, which says
 * the way works). Once the command started, it goes out ahead of any push still to be read
 * from disk. */
int sync_conn_signal(sync_conn *conn, uint32_t chan, int signo);
/* Interrupts the pull being applied, if one is (the user's Ctrl-C while the host writes a
 * large delta): what is staged is removed at once, the rest of the delta is read and
 * dropped, nothing of it is committed, and the round's exit (or sync_done) callback gets
 * why in pull_error. Returns 1 when a pull was interrupted, 0 when none was in progress (the
 * sandbox may still send one) or the one in progress was refused already, -1 on a dead
 * connection. The connection stays usable. */
int sync_conn_abort_pull(sync_conn *conn, const char *why);
/* During the sync_done callback: why that round's pull was refused, or NULL. */
const char *sync_conn_pull_error(const sync_conn *conn, sync_quota *quota);
/* During the sync_done callback: which of the sandbox's spaces the agent found full as that
 * round ended (SYNC_FULL_* bits; the exit callback has them in sync_exit_status.full). */
unsigned sync_conn_full(const sync_conn *conn);
int sync_conn_winsize(sync_conn *conn, uint32_t chan, uint16_t rows, uint16_t cols);
/* The consumer of (chan, fd) went away: the agent closes its read end, so that the child's
 * next write gets SIGPIPE; no more output callbacks for that fd. */
int sync_conn_close_output(sync_conn *conn, uint32_t chan, int fd);
/* n bytes of output of (chan, fd) were consumed: the agent may send n more. */
int sync_conn_credit(sync_conn *conn, uint32_t chan, int fd, size_t n);
/* A sync round without a command: host changes go in, sandbox changes come back, then the
 * sync_done callback with id. */
int sync_conn_sync(sync_conn *conn, uint64_t id);
/* Writes a file in the sandbox at an absolute path (creating parent directories), with mode
 * (permission bits only), e.g. a filtered git config. At most SYNC_PUT_FILE_MAX bytes. */
#define SYNC_PUT_FILE_MAX (512u * 1024)
int sync_conn_put_file(sync_conn *conn, const char *path, unsigned mode, const void *data,
                       size_t len, sbx_err *err);

/* ---- blocking helpers (tests, benchmarks, `sbx exec`) ----------------------------------- */

/* Runs one command to completion on a connection nothing else uses, relaying the child's fds
 * to host fds: host_fds[i] is read for an SYNC_FD_IN entry req->fds[i] (until end of file)
 * and written for an SYNC_FD_OUT entry; -1 means no input / discard the output. Warnings go
 * to the ops' warning callback. On return *st holds the exit; 0, or -1 with err when the
 * connection died. A host output fd that fails with EPIPE becomes close_output. */
int sync_conn_run_wait(sync_conn *conn, uint32_t chan, const sync_run_req *req,
                       const int *host_fds, sync_exit_status *st, sbx_err *err);
/* One sync round, blocking. */
int sync_conn_sync_wait(sync_conn *conn, sbx_err *err);

#endif
