/*
 * libsbxsh: sbxsh for programs that are not shells (issue 24).
 *
 * A handle is one sbxsh session as a program sees it: code directories, a cwd, a session
 * name, a backend and the environment the sandbox is given. On it, sbxsh_run() runs a
 * command line exactly as `sbxsh -c LINE` run from that cwd would: parsed, each part routed
 * to the host or the sandbox, the tree synced, and the same exit status. Its output is
 * streamed to a callback as it comes, or collected with a cap (the head and the tail kept,
 * the truncation reported), or both.
 *
 *     sbxsh_error err;
 *     sbxsh_options *o = sbxsh_options_new();
 *     sbxsh *h;
 *     sbxsh_result *r;
 *     sbxsh_options_set_cwd(o, "/home/me/repo", &err);
 *     if (sbxsh_open(o, &h, &err) < 0) { fprintf(stderr, "%s\n", err.message); ... }
 *     sbxsh_options_free(o);
 *     if (sbxsh_run(h, "make test", NULL, &r, &err) == 0) {
 *         size_t n;
 *         const char *out = sbxsh_result_data(r, SBXSH_STDOUT, &n);
 *         printf("%d: %.*s", sbxsh_result_exit_code(r), (int)n, out);
 *         sbxsh_result_free(r);
 *     }
 *     sbxsh_close(h);
 *
 * Conventions:
 *   - A function that can fail returns 0 (or a count) on success and -1 on failure, with
 *     *err filled (err may be NULL). The library never exits, never prints, and installs
 *     no signal handler in the caller's process.
 *   - A command's own failure is not an error: it is the result's exit code (sbxsh's own
 *     failures are exit code 125 with `sbxsh: ` on the result's stderr, as for `sbxsh -c`).
 *   - Thread safety: calls on one handle are serialized (a second sbxsh_run() on the same
 *     handle waits for the first); sbxsh_cancel() may be called from any thread at any
 *     time. Different handles are independent: two threads may run on two handles at once.
 *   - Strings are NUL-terminated UTF-8 or bytes as given; output is bytes as the command
 *     wrote them (NUL-terminated for convenience, with its length given apart).
 *   - ABI: the soname is libsbxsh.so.SBXSH_SOVERSION and every symbol is versioned
 *     (SBXSH_1.0, ...); options and results are opaque, so the library can grow by new
 *     functions without changing what an existing one means.
 *
 * The manual is libsbxsh(3); docs/library.md has the C and Python guide.
 */
#ifndef SBXSH_H
#define SBXSH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The release this header belongs to (sbxsh's own version), and the ABI's. */
#define SBXSH_VERSION_MAJOR 0
#define SBXSH_VERSION_MINOR 1
#define SBXSH_VERSION_PATCH 0
#define SBXSH_VERSION_STRING "0.1.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH: for #if SBXSH_VERSION_NUMBER >= 100 */
#define SBXSH_VERSION_NUMBER                                                                    \
    (SBXSH_VERSION_MAJOR * 10000 + SBXSH_VERSION_MINOR * 100 + SBXSH_VERSION_PATCH)
#define SBXSH_SOVERSION 1

/* The version of the library loaded at run time ("0.1.0"). */
const char *sbxsh_version(void);

/* ---- errors ---------------------------------------------------------------------------- */

typedef enum sbxsh_code {
    SBXSH_OK = 0,
    SBXSH_E_INVALID = 1,   /* a bad argument: NULL, a relative path, an empty name, ... */
    SBXSH_E_CONFIG = 2,    /* sbxsh refused the configuration (code directories, session
                              name, backend, an AGENT_SANDBOX_* value): the message says why */
    SBXSH_E_RELEASED = 3,  /* the handle's session was released (sbxsh_release): open a
                              new handle to start it again */
    SBXSH_E_SYSTEM = 4,    /* the host refused a resource (memory, pipe, process): errno's
                              words are in the message */
    SBXSH_E_SBXSH = 5,     /* sbxsh or sbx failed (a session's holder unreachable, sbxsh
                              not found): its message is in the message */
} sbxsh_code;

typedef struct sbxsh_error {
    int code;              /* an sbxsh_code; SBXSH_OK when nothing failed */
    char message[1024];    /* one line, no control bytes, NUL-terminated */
} sbxsh_error;

/* "SBXSH_E_CONFIG" for SBXSH_E_CONFIG, ...; "unknown" otherwise. */
const char *sbxsh_code_name(int code);

/* Frees a string the library returned (sbxsh_status's JSON). */
void sbxsh_free(void *p);

/* ---- opening a session ----------------------------------------------------------------- */

/* What a handle is opened with. Unset, each is what sbxsh itself would take from its
 * environment and its cwd (AGENT_SANDBOX_CODE_DIRS, the git work tree around the cwd, the
 * derived session name, AGENT_SANDBOX_BACKEND, ...). The options are copied by
 * sbxsh_open(): free them when it returns. */
typedef struct sbxsh_options sbxsh_options;

sbxsh_options *sbxsh_options_new(void);   /* NULL only when out of memory */
void sbxsh_options_free(sbxsh_options *o);
/* A code directory (absolute); call again for more. None: sbxsh finds them. */
int sbxsh_options_add_code_dir(sbxsh_options *o, const char *dir, sbxsh_error *err);
/* Where lines run (absolute). Default: the caller's cwd when sbxsh_open() is called. */
int sbxsh_options_set_cwd(sbxsh_options *o, const char *cwd, sbxsh_error *err);
/* The session's name ([A-Za-z0-9][A-Za-z0-9._-]*, at most 64 bytes); `--session NAME`. */
int sbxsh_options_set_session(sbxsh_options *o, const char *name, sbxsh_error *err);
/* The backend ("local", "kube"): AGENT_SANDBOX_BACKEND. */
int sbxsh_options_set_backend(sbxsh_options *o, const char *name, sbxsh_error *err);
/* A host variable name or pattern (`AWS_*`) the sandbox's commands are given, added to
 * AGENT_SANDBOX_FORWARD_ENV; call again for more. */
int sbxsh_options_forward_env(sbxsh_options *o, const char *pattern, sbxsh_error *err);
/* Sets (value non-NULL) or removes (NULL) a variable in the environment sbxsh runs with,
 * over the caller's own: AGENT_SANDBOX_* settings, and host parts' environment. A sandbox
 * command sees it only when it is forwarded (sbxsh_options_forward_env). */
int sbxsh_options_setenv(sbxsh_options *o, const char *name, const char *value,
                         sbxsh_error *err);
/* The sbxsh program lines are run with (absolute). Default: the one installed with the
 * library (its BINDIR). */
int sbxsh_options_set_program(sbxsh_options *o, const char *path, sbxsh_error *err);

/* The handle: one session as this program uses it. */
typedef struct sbxsh sbxsh;

/* Checks the options as sbxsh would (a configuration sbxsh refuses fails here, with
 * sbxsh's message, as SBXSH_E_CONFIG) and makes a handle. Starts nothing in a sandbox: the
 * session's sandbox comes with the first line that needs it. */
int sbxsh_open(const sbxsh_options *o, sbxsh **out, sbxsh_error *err);

/* The session's name (derived from the code directories when none was set); valid until
 * sbxsh_close. */
const char *sbxsh_session(const sbxsh *h);

/* Ends the handle: waits for a run in progress on it to end (cancel it first to make that
 * quick), then frees it. The session stays (other clients may use it; its idle timeout
 * releases it): sbxsh_release() ends it. h may be NULL. No other call on h may start or be
 * in progress in another thread once close has begun (sbxsh_cancel included). */
void sbxsh_close(sbxsh *h);

/* ---- running a line -------------------------------------------------------------------- */

/* The streams of a run's output: SBXSH_OUTPUT is both, in the order they were read. */
enum {
    SBXSH_OUTPUT = 0,
    SBXSH_STDOUT = 1,
    SBXSH_STDERR = 2,
};

/* How much of each stream a result keeps by default: 1 MiB (the first and the last half). */
#define SBXSH_DEFAULT_CAPTURE ((size_t)1 << 20)

/* Called with each piece of output as it comes (stream SBXSH_STDOUT or SBXSH_STDERR), in
 * the thread that called sbxsh_run(), never two at once. Returning non-zero cancels the run
 * (as sbxsh_cancel). */
typedef int (*sbxsh_output_fn)(void *ctx, int stream, const void *data, size_t len);

typedef struct sbxsh_run_options sbxsh_run_options;

sbxsh_run_options *sbxsh_run_options_new(void);   /* NULL only when out of memory */
void sbxsh_run_options_free(sbxsh_run_options *r);
/* The command's stdin: these bytes (copied), then end of file. Default: empty (/dev/null). */
int sbxsh_run_options_set_stdin_buffer(sbxsh_run_options *r, const void *data, size_t len,
                                       sbxsh_error *err);
/* The command's stdin: the caller's fd (read, not closed); -1: back to the default. */
int sbxsh_run_options_set_stdin_fd(sbxsh_run_options *r, int fd, sbxsh_error *err);
/* Ends the run after ms milliseconds (0: no limit): as sbxsh_cancel, with the result's
 * timed_out set. */
int sbxsh_run_options_set_timeout_ms(sbxsh_run_options *r, uint64_t ms, sbxsh_error *err);
/* Bytes a result keeps of each stream (SBXSH_OUTPUT, SBXSH_STDOUT and SBXSH_STDERR each):
 * when a stream is longer, its first cap/2 and its last cap/2 bytes (cut at UTF-8
 * character boundaries) and its total. 0: keep nothing (callbacks only). */
int sbxsh_run_options_set_capture(sbxsh_run_options *r, size_t cap, sbxsh_error *err);
/* Streams the output to fn as it comes (besides what the result keeps). */
int sbxsh_run_options_set_output(sbxsh_run_options *r, sbxsh_output_fn fn, void *ctx,
                                 sbxsh_error *err);
/* Cancels the run (as sbxsh_cancel) once fd is readable or hung up: the caller's (an eventfd,
 * a pipe's read end), watched and never read or closed; -1: none. Unlike sbxsh_cancel, it
 * cannot miss a run that has not started yet: an fd made readable before sbxsh_run() is
 * called cancels that run at once. */
int sbxsh_run_options_set_cancel_fd(sbxsh_run_options *r, int fd, sbxsh_error *err);

typedef struct sbxsh_result sbxsh_result;

/* Runs line as `sbxsh -c LINE` would from the handle's cwd, and waits for it: *out gets the
 * result (free it with sbxsh_result_free), whatever the command's status. r may be NULL
 * (the defaults). Fails (-1, *out NULL) only when the line could not be run: a released
 * handle (SBXSH_E_RELEASED), a bad argument, or the host refusing a process or a pipe. */
int sbxsh_run(sbxsh *h, const char *line, const sbxsh_run_options *r, sbxsh_result **out,
              sbxsh_error *err);

/* Cancels the run in progress on h, if any (from any thread, a signal handler excepted):
 * its commands get SIGTERM as from `kill`, the sandbox's changes are still pulled back,
 * and after a grace of a few seconds whatever is left is killed. sbxsh_run() then
 * returns its result, with cancelled set. Returns 1 when a run was cancelled, 0 when none
 * was in progress. */
int sbxsh_cancel(sbxsh *h);

/* bash's $? for the line: 0-255, 128+N when its last command was killed by signal N. */
int sbxsh_result_exit_code(const sbxsh_result *res);
/* Non-zero when sbxsh itself ended by signal N (as `sbxsh -c` would: its parent sees the
 * command's signal), else 0. */
int sbxsh_result_signal(const sbxsh_result *res);
int sbxsh_result_timed_out(const sbxsh_result *res);   /* ended by the timeout */
int sbxsh_result_cancelled(const sbxsh_result *res);   /* ended by sbxsh_cancel or a callback */
/* What was kept of a stream: its first bytes, then (when it was truncated) its last
 * bytes from *head_len on. NUL-terminated; *len (may be NULL) gets the length. */
const char *sbxsh_result_data(const sbxsh_result *res, int stream, size_t *len);
/* Where the kept tail begins in sbxsh_result_data (the whole length when not truncated). */
size_t sbxsh_result_head_len(const sbxsh_result *res, int stream);
/* How many bytes the command wrote on the stream in all. */
uint64_t sbxsh_result_total(const sbxsh_result *res, int stream);
/* Non-zero when bytes were left out between the head and the tail. */
int sbxsh_result_truncated(const sbxsh_result *res, int stream);
/* How long the run took, in nanoseconds (monotonic clock). */
uint64_t sbxsh_result_duration_ns(const sbxsh_result *res);
void sbxsh_result_free(sbxsh_result *res);

/* ---- the session ----------------------------------------------------------------------- */

/* The session's status as `sbx status --json` prints it (the holder, the sandbox, the
 * sync counters), into *json (free with sbxsh_free), with "active": true first; when no
 * holder runs the session, {"session": NAME, "active": false}. */
int sbxsh_status(sbxsh *h, char **json, sbxsh_error *err);

/* Releases the session (as `sbx release`: the sandbox's last changes pulled back, the
 * sandbox ended). The handle then fails every call but sbxsh_close with
 * SBXSH_E_RELEASED. */
int sbxsh_release(sbxsh *h, sbxsh_error *err);

#ifdef __cplusplus
}
#endif

#endif
