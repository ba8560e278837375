/*
 * The session client: what sbxsh and sbx call to run things in a session's
 * sandbox. It talks to the session's holder (holder.h) over a Unix socket,
 * starting the holder first when none runs.
 *
 * Simple use (sbx exec, `sbxsh -c` for a sandbox-only line):
 *
 *     sbx_config cfg;                    // session_config_load() (config.h)
 *     sbx_session *s;
 *     if (session_open(&cfg, NULL, &s, &err) < 0) fail_125(err.msg);
 *     sbx_fd_map fds[] = { {0, SBX_FD_RELAY_IN, 0}, {1, SBX_FD_RELAY_OUT, 1},
 *                          {2, SBX_FD_RELAY_OUT, 2} };
 *     sbx_command cmd = { .exe = "bash", .argv = (const char *[]){ "bash", "-c", line, 0 },
 *                         .env = env, .cwd = cwd, .fds = fds, .nfds = 3,
 *                         .forward_signals = true };
 *     sbx_exit st;
 *     if (session_run(s, &cmd, &st, &err) < 0) fail_125(err.msg);
 *     session_close(s);
 *     ws = st.wait_status;   // raw: WIFEXITED/WTERMSIG; bash's $? is the caller's mapping
 *
 * A persistent shell (stdin mode): start bash with fd 0 = SBX_FD_API_IN (the
 * script stream), fd 198 = SBX_FD_RELAY_IN from local fd 0 (the user's
 * stdin), fd 199 = SBX_FD_API_OUT (reports), 1 and 2 relayed; then per
 * command: session_write(s, 0, text), session_read_record(s, 199,
 * '\n', &rec) (relaying 1 and 2 meanwhile), session_sync(s) so the tree
 * comes back; at the end session_close_fd(s, 0) and session_wait().
 *
 * While a command runs (inside any blocking call) the client relays its own
 * fds: stdout and stderr separately and as produced, binary intact, with
 * bounded memory (end-to-end credit: a slow reader here slows the writer in
 * the sandbox); EPIPE on a relayed output tells the sandbox to close that
 * pipe, so its writer gets SIGPIPE as under bash; with forward_signals,
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT go to the command's process group
 * (its changes are still pulled back before the exit status comes).
 *
 * Concurrency: several clients of one session (several sbxsh processes) run
 * their commands at the same time in the same sandbox; sync rounds are
 * serialized by the holder's single agent stream. One sbx_session runs one
 * command at a time.
 *
 * Errors: every function returns -1 with err filled for sbxsh's own
 * failures (holder unreachable, sandbox died, sync refused): the caller
 * exits 125 with "sbxsh: " and the message. A command's own failure is its
 * wait status, never -1.
 */
#ifndef SBX_SESSION_SESSION_H
#define SBX_SESSION_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "common/util.h"
#include "session/config.h"

typedef struct sbx_session sbx_session;

typedef struct sbx_open_opts {
    /* Fail with -1 (and errno-like reason "no holder") instead of starting
     * a holder when none runs: sbx status, sbx release. */
    bool no_start;
    /* Reach the session whatever runtime, network or code directories this
     * call's configuration has (sbx status, release): skips the holder's
     * check that they match the session's. */
    bool any_shape;
    /* How long the holder may take to answer the first message, in ms (0: the default,
     * HELLO_TIMEOUT_MS): `sbx release --timeout` bounds the whole release with it. */
    unsigned hello_timeout_ms;
    /* Called for sync warnings (conflicts, refused paths). NULL: print
     * "sbxsh: warning: MSG" on stderr. */
    void (*warning)(void *ctx, const char *msg);
    void *warning_ctx;
} sbx_open_opts;

/* Connects to cfg's session, starting its holder if needed (cfg->agent_path
 * is filled in if unset). With opts->no_start and no holder: returns -1 and
 * sets *out to NULL with err saying so. */
int session_open(sbx_config *cfg, const sbx_open_opts *opts, sbx_session **out,
                     sbx_err *err);
void session_close(sbx_session *s);
/* The holder's pid (for tests and `sbx status`). */
long session_holder_pid(const sbx_session *s);
/* Whether pid is a live session holder (its name, which start_holder sets, is sbx-holder):
 * a pid read from a file may be anyone's by now, and is acted on only after this. */
bool session_pid_is_holder(long pid);
/* Whether the session failed (the holder gone, the way to the sandbox lost, a Ctrl-C at the
 * interactive prompt unanswered): every later call fails too, so the caller closes it and
 * opens another for its next command. 0: it did not; else the status to report for the
 * command it failed: 130 for a Ctrl-C given up (ignores_term), 125 for sbxsh's failures. */
int session_failed(const sbx_session *s);

typedef enum sbx_fd_mode {
    SBX_FD_RELAY_IN,   /* the child reads it; we feed it from client_fd until EOF */
    /* The child writes it; we write it to client_fd. When client_fd is one output
     * with the client_fd of the RELAY_OUT entry before it (one open file, as
     * `>log 2>&1` or a terminal makes 1 and 2), the two child fds share one pipe
     * in the sandbox, so their bytes keep the order they were written in, as
     * under bash. */
    SBX_FD_RELAY_OUT,
    SBX_FD_API_IN,     /* the child reads it; fed by session_write() */
    SBX_FD_API_OUT,    /* the child writes it; read with session_read_record() */
} sbx_fd_mode;

typedef struct sbx_fd_map {
    int child_fd;
    sbx_fd_mode mode;
    int client_fd;     /* RELAY modes only: the client's own fd */
} sbx_fd_map;

typedef enum sbx_filter_mode {
    SBX_FILTER_AUTO,   /* filter escapes on relayed outputs that are terminals, unless tty */
    SBX_FILTER_OFF,
    SBX_FILTER_ON,
} sbx_filter_mode;

typedef struct sbx_command {
    const char *exe;            /* path, or a name looked up in env's PATH */
    const char *const *argv;    /* argv[0] explicit */
    const char *const *env;     /* the whole environment (see session_sandbox_env) */
    const char *cwd;            /* absolute; inside the code directories as a rule */
    const sbx_fd_map *fds;
    size_t nfds;
    /* Run on a pty: local fd 0 (a terminal) is put in raw mode and relayed
     * as the terminal's input, the terminal's output goes to local fd 1,
     * window-size changes are forwarded. Output to a terminal passes the
     * filter's pty mode (termfilter.h: cursor, screen and colours pass; the
     * clipboard, reports and file: links do not). The terminal is restored
     * exactly when the command ends, and when a signal kills sbxsh meanwhile
     * (SIGINT, SIGTERM, SIGHUP, SIGQUIT are forwarded with forward_signals;
     * other deadly signals restore it first; SIGKILL cannot). */
    bool tty;
    bool forward_signals;       /* SIGINT, SIGTERM, SIGHUP, SIGQUIT while it runs */
    /* With forward_signals, a forwarded SIGHUP or SIGTERM that the sandbox does not answer
     * (the command's end, or its pull interrupted) within 3 s makes sbxsh say so and die of
     * it: a dead way to the sandbox never answers. ignores_term: SIGTERM is only forwarded
     * (an interactive bash ignores it). */
    bool ignores_term;
    sbx_filter_mode filter;
} sbx_command;

/* The raw wait status of a command (what waitpid would give), and what the
 * agent said when it could not start (spawn_error: bash's 126/127 are
 * already in wait_status). */
typedef struct sbx_exit {
    int wait_status;
    bool spawn_failed;
    char message[256];
} sbx_exit;

/* Starts a command; the blocking calls below relay while they wait. */
int session_start(sbx_session *s, const sbx_command *cmd, sbx_err *err);
/* Queues len bytes for an API_IN fd; blocks (relaying) only while the input
 * window is full. */
int session_write(sbx_session *s, int child_fd, const void *buf, size_t len, sbx_err *err);
/* Ends an API_IN fd (the child reads EOF once it has the bytes). */
int session_close_fd(sbx_session *s, int child_fd, sbx_err *err);
/* Waits for a record on an API_OUT fd: appends the bytes up to and
 * including delim to out. Returns 1 for a record, 0 at end of file (out
 * then holds what came before it, maybe nothing), -1 on error. Stops early
 * (returning 0) when the command exits. */
int session_read_record(sbx_session *s, int child_fd, int delim, strbuf *out,
                            sbx_err *err);
/* The same for exactly n bytes: 1 when they came, 0 at end of file or exit (out then
 * holds what came). */
int session_read_bytes(sbx_session *s, int child_fd, size_t n, strbuf *out, sbx_err *err);
/* Names the line the next run or sync belongs to (the undo journal's label; sent with
 * the next request). */
void session_label(sbx_session *s, const char *line);
/* A sync round: host changes in, sandbox changes back. Relays meanwhile. */
int session_sync(sbx_session *s, sbx_err *err);
/* Sends a signal to the running command's process group. */
int session_signal(sbx_session *s, int signo, sbx_err *err);
/* Waits for the command to end (relaying, and draining its outputs). */
int session_wait(sbx_session *s, sbx_exit *st, sbx_err *err);
/* A tty command that lives across several uses of the terminal (the persistent shell
 * between prompts): pause gives the terminal back to the caller (what the command wrote so
 * far is written out, then the terminal as it was before raw mode; fd 0 is not read), resume
 * takes it again (raw, and the window's current size sent, as it may have changed). No-ops
 * for a command without tty, or already in that state. */
int session_tty_pause(sbx_session *s, sbx_err *err);
int session_tty_resume(sbx_session *s, sbx_err *err);
/* Stops relaying the terminal to the tty command until the next resume (what is typed
 * stays in the local terminal) and sends it a NUL after everything relayed so far: the
 * persistent shell reads the keys typed ahead up to that mark (cli/line.c, TYPEAHEAD). */
int session_tty_mark(sbx_session *s, sbx_err *err);
/* The terminal's bytes sent to the tty command since it started or was last resumed (at
 * most the last 64 KiB): what a caller checks keys handed back from the sandbox against. */
const char *session_tty_typed(const sbx_session *s, size_t *len);
/* start + wait. */
int session_run(sbx_session *s, const sbx_command *cmd, sbx_exit *st, sbx_err *err);

/* Releases the session's sandbox (after pulling its last changes); the
 * holder exits. It waits at most timeout_s seconds (0: as long as it takes), then fails
 * with a message that names `sbx release --force`. */
int session_release(sbx_session *s, unsigned timeout_s, sbx_err *err);
/* The holder's status JSON: session, holder pid, clients, sandbox facts
 * (the backend's status), agent, sync counters. */
int session_status(sbx_session *s, strbuf *json, sbx_err *err);

/* The environment a sandbox command gets: PATH (the caller's entries that
 * lie inside the code directories, then a standard one), HOME (the private
 * home, at the host's path), the terminal and locale variables (TERM,
 * COLORTERM, NO_COLOR, FORCE_COLOR, CLICOLOR, LANG, LANGUAGE, LC_*, TZ),
 * and each host variable matching a name or pattern of cfg->forward_env.
 * Nothing else of the host's environment: no token crosses by default.
 * tty is kept for callers; TERM is carried either way. */
void session_sandbox_env(const sbx_config *cfg, bool tty, strvec *out);

#endif
