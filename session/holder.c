/*
 * The session holder (holder.h): session_holder_main() keeps the sandbox claimed, one sync_conn
 * to its sbx-agent and the host manifest, and serves the session's clients on its socket.
 * May call common/ and sync/ (it drives sync/conn.h); a backend only through backend.h.
 * Untrusted: the agent's stream, checked by sync_conn and the sync/ code below it (signal acks
 * bounded by those sent); clients' frames, of our uid (SO_PEERCRED) and each checked by
 * proto_parse() and the proto_get_*() readers in handle_frame(), a malformed one dropping it.
 */
#include "session/holder.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/framebuf.h"
#include "common/fsutil.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "session/backend.h"
#include "session/proto.h"
#include "session/undo.h"
#include "sync/conn.h"
#include "sync/fsmonitor.h"
#include "sync/journal.h"

/* Sync rounds the holder starts for itself (before a release) use ids from
 * here down, clients' ids count up from 1. */
#define INTERNAL_SYNC_ID UINT64_MAX
/* How long after activity the host manifest is saved. */
#define SAVE_DELAY_MS 1000
#define MAX_CLIENTS 256

typedef struct inq {
    int fd;             /* child fd, or -1 for a free slot */
    strbuf buf;         /* bytes the agent's window has not taken yet */
    bool eof;           /* the client ended this input */
} inq;

typedef struct hclient {
    int fd;             /* -1 once disconnected (kept while its command runs) */
    framebuf_in in;     /* frames from the client */
    framebuf_out out;   /* frames to the client */
    bool hello, progress;
    uint32_t chan;      /* the running command, 0 when none */
    unsigned signals_unacked;   /* its signals sent to the agent, not yet answered: the
                                   acks passed on are at most these (a hostile agent's
                                   flood of SIGNALED stays out of our memory) */
    inq inputs[SYNC_MAX_FDS];
    uint64_t sync_id;   /* a sync round it waits for, 0 when none */
    bool release;       /* waits for the release */
    char *label;        /* P_LABEL: the line its next run or sync belongs to, or NULL */
} hclient;

typedef struct holder {
    const sbx_config *cfg;
    char *dir;          /* the session's state directory */
    struct jnl *journal;    /* the undo journal (sync/journal.h) in dir, or NULL */
    char *sock_path;
    dev_t sock_dev;     /* the socket file this holder was started on (sock_known), so */
    ino_t sock_ino;     /* that it removes that one only, never a later holder's */
    bool sock_known;
    char *state_file;   /* the host manifest (sync_host_save) */
    char *user_gitconfig, *sandbox_gitconfig;
    char *fingerprint;  /* session_config_fingerprint(): clients must match it */
    strvec fingerprint_also;    /* ...or one of these (session_config_fingerprints_also) */
    /* What the sync covers besides the code directories: the union of what
     * the clients asked for (AGENT_SANDBOX_SYNC_PATHS, _TASK_FILES,
     * _CREATE_PATHS, _SYNC_EXCLUDE). A client adding to it makes the host state stale:
     * rebuilt before the next command starts, once none runs. */
    strvec sync_paths, task_files, excludes, create_paths;
    bool host_stale;
    int lfd;
    int sigpipe[2];     /* self-pipe for SIGTERM */
    sbx_backend *backend;
    sync_host *host;
    sync_conn *conn;
    int rfd, wfd;
    bool conn_dead;     /* the error callback ran; free after handle_events */
    strvec agent_args, agent_env;
    char *git_fsmonitor;       /* core.fsmonitor in the sandbox, or NULL (agent_setup) */
    hclient *clients[MAX_CLIENTS];
    size_t nclients;
    uint32_t next_chan;
    uint64_t next_sync;
    hclient *claiming;  /* the client whose command waits on a claim (its progress) */
    hclient *starting;  /* the client whose command or sync is being started: the push that
                           goes first warns it (it has no channel yet) */
    uint64_t idle_since_ns;     /* last moment the session was in use */
    unsigned full_told;         /* SYNC_FULL_* spaces said full and not seen emptier since */
    uint64_t save_at_ns;        /* 0: nothing to save */
    bool releasing;             /* an internal sync before release is in flight */
    bool start_failed;          /* no sandbox could be started: the session pins nothing */
    int lock_fd;                /* STATE/SESSION/holder.lock, flocked for our life */
    bool release_ready;         /* ...and it is done: release from the main loop */
    bool quit;
    /* Freezing an idle sandbox (backend freeze op): after freeze_after_s seconds without
     * a client the backend is asked; frozen until thaw_sandbox(), which comes before
     * anything talks to the agent (a client accepted, a release, the holder's exit); not
     * quiescent: asked again freeze_after_s later (freeze_retry_ns). */
    unsigned freeze_after_s;
    bool frozen;
    uint64_t freeze_retry_ns;
    unsigned freezes;           /* how many times (sbx status --json) */
} holder;

/* Seconds without a client before an idle sandbox is frozen (when the backend can and
 * it is quiescent). SBXSH_TEST_FREEZE_AFTER (a test knob, not a setting) shortens it. */
#define FREEZE_AFTER 30

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
    got_term = sig;
}

/* ---- replies ----------------------------------------------------------- */

/* Queues a finished frame for the client; one gone (fd -1) gets nothing, so
 * that callbacks need not check (its command may still be running). */
static void send_frame(hclient *c, strbuf *frame)
{
    if (c->fd >= 0)
        strbuf_add(&c->out.q, frame->buf, frame->len);
    strbuf_reset(frame);
}

/* A frame whose payload is one string (errors, warnings, progress, status). */
static void send_str(hclient *c, int type, const char *msg)
{
    strbuf f = STRBUF_INIT;
    proto_begin(&f, type);
    proto_strz(&f, msg);
    proto_end(&f, 0);
    send_frame(c, &f);
    strbuf_release(&f);
}

/* A frame of up to two numbers (acks, EOFs, HELLO_OK). */
static void send_u32s(hclient *c, int type, int n, uint32_t a, uint32_t b)
{
    strbuf f = STRBUF_INIT;
    proto_begin(&f, type);
    if (n > 0)
        proto_u32(&f, a);
    if (n > 1)
        proto_u32(&f, b);
    proto_end(&f, 0);
    send_frame(c, &f);
    strbuf_release(&f);
}

/* The client whose command runs on chan: the agent's callbacks name commands
 * by channel, and a client runs one command at a time. */
static hclient *client_by_chan(holder *h, uint32_t chan)
{
    for (size_t i = 0; i < h->nclients; i++)
        if (h->clients[i]->chan == chan)
            return h->clients[i];
    return NULL;
}

/* The queue of input the client sent for child fd fd, or NULL. */
static inq *client_input(hclient *c, int fd)
{
    for (size_t i = 0; i < SYNC_MAX_FDS; i++)
        if (c->inputs[i].fd == fd)
            return &c->inputs[i];
    return NULL;
}

static void log_msg(const char *fmt, ...) SBX_PRINTF(1, 2);
/* A line in the holder's log (beside its socket): the holder has no terminal,
 * and this is where `sbx status` users and tests look for what it did. */
static void log_msg(const char *fmt, ...)
{
    char ts[32];
    time_t t = time(NULL);
    va_list ap;
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", gmtime(&t));
    fprintf(stderr, "%s sbx-holder[%d]: ", ts, (int)getpid());
    va_start(ap, fmt);
    sbx_vreport(NULL, "\n", fmt, ap);   /* sanitized: it quotes sandbox file names */
    va_end(ap);
    fflush(stderr);
}

/* ---- the agent connection's callbacks ------------------------------------ */

/* The agent relayed output of a command: forwarded to its client in chunks of
 * at most SBX_PROTO_CHUNK, or dropped (and credited) when the client is gone,
 * since an unread window would block the command forever. The credit for a
 * client that reads comes back from it (P_CREDIT), so a slow reader slows the
 * command. */
static void on_output(void *ctx, uint32_t chan, int fd, const void *buf, size_t len)
{
    holder *h = ctx;
    hclient *c = client_by_chan(h, chan);
    const char *p = buf;

    if (!c || c->fd < 0) {
        /* Nobody reads it any more (the client went away): consume it so
         * that the command is never blocked on its output. */
        sync_conn_credit(h->conn, chan, fd, len);
        return;
    }
    while (len) {
        size_t n = len < SBX_PROTO_CHUNK ? len : SBX_PROTO_CHUNK;
        size_t start = c->out.q.len;
        proto_begin(&c->out.q, P_OUTPUT);
        proto_u32(&c->out.q, (uint32_t)fd);
        strbuf_add(&c->out.q, p, n);
        proto_end(&c->out.q, start);
        p += n;
        len -= n;
    }
}

/* The agent handled a signal the client forwarded: the client learns the way to the
 * sandbox works (and stops counting the time it waits for an answer to it). */
static void on_signaled(void *ctx, uint32_t chan, int signo)
{
    holder *h = ctx;
    hclient *c = client_by_chan(h, chan);
    if (c && c->fd >= 0 && c->signals_unacked) {
        c->signals_unacked--;
        send_u32s(c, P_SIGNAL_ACK, 1, (uint32_t)signo, 0);
    }
}

/* A command's output fd closed in the sandbox: the client closes its copy. */
static void on_eof(void *ctx, uint32_t chan, int fd)
{
    holder *h = ctx;
    hclient *c = client_by_chan(h, chan);
    if (c)
        send_u32s(c, P_OUTPUT_EOF, 1, (uint32_t)fd, 0);
}

/* Moves queued client input into the agent's window for that fd (as much as
 * it takes now; the rest waits for on_writable), acking what went so the
 * client can send more, and passes on the end of input once all is sent. */
static void flush_input(holder *h, hclient *c, inq *q)
{
    if (!h->conn || h->conn_dead)
        return;
    if (q->buf.len) {
        ssize_t n = sync_conn_write(h->conn, c->chan, q->fd, q->buf.buf, q->buf.len);
        if (n > 0) {
            strbuf_remove(&q->buf, 0, (size_t)n);
            send_u32s(c, P_INPUT_ACK, 2, (uint32_t)q->fd, (uint32_t)n);
        }
    }
    if (!q->buf.len && q->eof) {
        sync_conn_eof(h->conn, c->chan, q->fd);
        q->eof = false;
        q->fd = -1;
    }
}

/* The agent's window for an input fd opened again: send what waited. */
static void on_writable(void *ctx, uint32_t chan, int fd)
{
    holder *h = ctx;
    hclient *c = client_by_chan(h, chan);
    inq *q = c ? client_input(c, fd) : NULL;
    if (q)
        flush_input(h, c, q);
}

/* Forgets a client's input queues (its command ended or failed). */
static void reset_inputs(hclient *c)
{
    for (size_t i = 0; i < SYNC_MAX_FDS; i++) {
        strbuf_release(&c->inputs[i].buf);
        c->inputs[i].fd = -1;
        c->inputs[i].eof = false;
    }
}

/* The host manifest is saved a moment after activity, not after every sync
 * round: one save covers a burst of commands. */
static void schedule_save(holder *h)
{
    h->save_at_ns = now_ns() + (uint64_t)SAVE_DELAY_MS * 1000000;
}

/* The text of a refused pull for the client (it exits 125 with it). */
static void send_pull_error(hclient *c, const sbx_config *cfg, const char *why,
                            sync_quota quota)
{
    char msg[1024];
    if (quota == SYNC_QUOTA_DISK)
        snprintf(msg, sizeof(msg), "%s (AGENT_SANDBOX_DISK_MAX=%llu bytes; remove files in the "
                 "sandbox, or start a session with a larger AGENT_SANDBOX_DISK_MAX)", why,
                 cfg->disk_max);
    else if (quota == SYNC_QUOTA_FILES)
        snprintf(msg, sizeof(msg), "%s (AGENT_SANDBOX_FILES_MAX=%llu; remove files in the "
                 "sandbox, or start a session with a larger AGENT_SANDBOX_FILES_MAX)", why,
                 cfg->files_max);
    else
        snprintf(msg, sizeof(msg), "%s", why);
    send_str(c, P_ERROR, msg);
}

/*
 * A command or sync round ended with some of the sandbox's spaces full (the agent's
 * SYNC_FULL_* bits: a number from the sandbox, never its text). A bare ENOSPC names no
 * limit, so the client waiting on that round is told which space and which limit, once per
 * fill: a space is named when it becomes full, and again only after a round saw it with
 * room (files removed) and a later one full again. The bits of a round that the sandbox
 * reports are all it can steer: which of three fixed phrases appear.
 */
static void tell_full(holder *h, hclient *c, unsigned full)
{
    unsigned fresh = full & ~h->full_told;
    const sbx_config *cfg = h->cfg;
    char size[32];
    strbuf where = STRBUF_INIT, msg = STRBUF_INIT;

    h->full_told = full;
    if (!fresh || !c || c->fd < 0 || !h->backend || !h->backend->ops->disk_max_bounds)
        return;
    if (full & SYNC_FULL_CODE) {
        if (cfg->code_dirs.n == 1)
            strbuf_addf(&where, "%s (its copy of the code directory)", cfg->code_dirs.v[0]);
        else
            strbuf_addf(&where, "a code directory's copy");
    }
    if (full & SYNC_FULL_TMP)
        strbuf_addf(&where, "%s/tmp", where.len ? (full & SYNC_FULL_HOME ? ", " : " and ") : "");
    if (full & SYNC_FULL_HOME)
        strbuf_addf(&where, "%sHOME (%s)", where.len ? " and " : "", cfg->home);
    session_format_size(size, sizeof(size), (double)cfg->disk_max);
    strbuf_addf(&msg, "the sandbox has no space left in %s: AGENT_SANDBOX_DISK_MAX=%llu (%s) "
                "bounds each code directory's copy, /tmp and HOME there; remove files in the "
                "sandbox, or start a session with a larger AGENT_SANDBOX_DISK_MAX",
                where.buf, cfg->disk_max, size);
    send_str(c, P_WARNING, msg.buf);
    strbuf_release(&where);
    strbuf_release(&msg);
}

/* Removes the session's socket if it is still the one this holder was started on. A
 * holder whose socket a tmp cleaner removed is asked to go (SIGTERM) by the next holder,
 * whose client has bound a new socket at the same path by then: removing the path
 * regardless would leave that holder serving with no way to reach it (sbx release:
 * "cannot reach the session holder", seen under load in tests/local/release.t). */
static void unlink_own_socket(holder *h)
{
    struct stat st;

    if (h->sock_known && lstat(h->sock_path, &st) == 0 && st.st_dev == h->sock_dev &&
        st.st_ino == h->sock_ino)
        unlink(h->sock_path);
}

/* A command ended, after its changes were pulled: its client gets the status,
 * or, when the pull was refused (quota, policy), the reason as an error, since
 * the command ran but its changes are not on the host (sbxsh exits 125). */
static void on_exit_cb(void *ctx, uint32_t chan, const sync_exit_status *st)
{
    holder *h = ctx;
    hclient *c = client_by_chan(h, chan);
    if (!c)
        return;
    tell_full(h, c, st->full);
    if (st->pull_error) {
        /* The command ran, its changes did not come back: sbxsh's own failure (125). */
        log_msg("pull refused: %s", st->pull_error);
        send_pull_error(c, h->cfg, st->pull_error, st->pull_error_quota);
        c->chan = 0;
        reset_inputs(c);
        h->idle_since_ns = now_ns();
        schedule_save(h);
        return;
    }
    strbuf f = STRBUF_INIT;
    proto_begin(&f, P_EXIT);
    proto_u32(&f, (uint32_t)st->kind);
    proto_u32(&f, (uint32_t)st->code);
    proto_u32(&f, st->core_dumped);
    proto_u32(&f, (uint32_t)st->wait_status);
    proto_strz(&f, st->kind == SYNC_SPAWN_FAILED ? st->message : "");
    proto_end(&f, 0);
    send_frame(c, &f);
    strbuf_release(&f);
    c->chan = 0;
    reset_inputs(c);
    h->idle_since_ns = now_ns();
    schedule_save(h);
}

static void release_now(holder *h);
static void client_write(holder *h, hclient *c);

/* Continues a frozen sandbox: called before anything may talk to its agent. */
static void thaw_sandbox(holder *h)
{
    if (!h->frozen)
        return;
    h->frozen = false;
    h->freeze_retry_ns = 0;
    if (h->backend && h->backend->ops->thaw)
        h->backend->ops->thaw(h->backend);
    log_msg("sandbox thawed");
}

/* A sync round ended: the client waiting for it is told (or given the pull's
 * refusal). The holder's own round before a release only marks the release
 * ready: releasing frees the connection, which must not happen inside its
 * callback. */
static void on_sync_done(void *ctx, uint64_t id)
{
    holder *h = ctx;
    sync_quota quota;
    const char *why = h->conn ? sync_conn_pull_error(h->conn, &quota) : NULL;
    if (why)
        log_msg("pull refused: %s", why);
    if (id == INTERNAL_SYNC_ID) {
        h->release_ready = true;   /* not here: release frees the connection */
        return;
    }
    for (size_t i = 0; i < h->nclients; i++) {
        hclient *c = h->clients[i];
        if (c->sync_id == id) {
            c->sync_id = 0;
            tell_full(h, c, h->conn ? sync_conn_full(h->conn) : 0);
            if (why)
                send_pull_error(c, h->cfg, why, quota);
            else
                send_str(c, P_SYNC_DONE, "");
        }
    }
    schedule_save(h);
}

/* A warning of a push or pull (a file skipped, a conflict kept): shown by the
 * clients that wait on a command or a sync, who made it happen; logged when
 * nobody does. */
static void on_warning(void *ctx, const char *msg)
{
    holder *h = ctx;
    bool told = false;
    /* A warning comes from a push or pull: tell whoever is waiting on one. */
    for (size_t i = 0; i < h->nclients; i++) {
        hclient *c = h->clients[i];
        if (c->fd >= 0 && (c->chan || c->sync_id || c == h->starting)) {
            send_str(c, P_WARNING, msg);
            told = true;
        }
    }
    if (!told)
        log_msg("warning: %s", msg);
}

/* The agent connection failed: every waiting client gets an error that says
 * whether the sandbox died (the next command gets a new one) or only the
 * connection broke (the next command reconnects); the connection is freed by
 * the loop after the events (conn_dead), not inside its own callback. */
static void on_error(void *ctx, const char *msg)
{
    holder *h = ctx;
    char text[1200];
    bool alive = h->backend && h->backend->ops->alive(h->backend);
    /* A killed sandbox closes the stream a moment before its process is
     * gone: give it that moment, so that the message says what happened. */
    for (int i = 0; alive && i < 50; i++) {
        usleep(10000);
        alive = h->backend->ops->alive(h->backend);
    }

    log_msg("agent connection failed: %s", msg);
    /* the backend's own word for why, when it has one (a kube claim expired, its pod
     * deleted): said instead of the connection's */
    sbx_err why;
    snprintf(why.msg, sizeof(why.msg), "%s", msg);
    if (h->backend && h->backend->ops->explain) {
        h->backend->ops->explain(h->backend, false, &why);
        msg = why.msg;
    }
    snprintf(text, sizeof(text),
             alive ? "the connection to the sandbox failed (%s); the host's files are as the "
                     "last sync left them; run the command again"
                   : "the sandbox stopped (%s); the host's files are as the last sync left "
                     "them; the next command starts a new sandbox",
             msg);
    h->conn_dead = true;
    for (size_t i = 0; i < h->nclients; i++) {
        hclient *c = h->clients[i];
        if (c->chan || c->sync_id) {
            send_str(c, P_ERROR, text);
            c->chan = 0;
            c->sync_id = 0;
            reset_inputs(c);
        }
    }
    if (h->releasing)
        h->release_ready = true;
}

static const sync_conn_ops conn_ops = {
    .output = on_output,
    .eof = on_eof,
    .writable = on_writable,
    .exit = on_exit_cb,
    .sync_done = on_sync_done,
    .warning = on_warning,
    .error = on_error,
    .signaled = on_signaled,
};

/* ---- the sandbox ------------------------------------------------------- */

/* Frees the agent connection and its fds; the sandbox and the host state stay,
 * so the next command reconnects (ensure_conn). */
static void drop_conn(holder *h)
{
    if (h->conn) {
        sync_conn_free(h->conn);
        h->conn = NULL;
    }
    if (h->rfd >= 0)
        close(h->rfd);
    if (h->wfd >= 0 && h->wfd != h->rfd)
        close(h->wfd);
    h->rfd = h->wfd = -1;
    h->conn_dead = false;
}

/* A pull journaled (sync/journal.h): its audit record, the files it changed. */
static void on_journal_entry(void *ctx, const jnl_entry *e)
{
    holder *h = ctx;
    session_audit_journal(h->cfg, e);
}

/* The undo journal, opened once (AGENT_SANDBOX_UNDO_MAX=0: none). */
static void open_journal(holder *h)
{
    sbx_err err;
    int fd;
    if (h->journal || !h->cfg->undo_max)
        return;
    fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || jnl_open(fd, h->cfg->undo_max, &h->journal, &err) < 0)
        log_msg("no undo journal: %s", fd < 0 ? strerror(errno) : err.msg);
    if (fd >= 0)
        close(fd);
    if (h->journal) {
        jnl_set_notify(h->journal, on_journal_entry, h);
        jnl_set_save_mode(h->journal, getenv("SBXSH_TEST_JOURNAL_COPY"));
    }
}

/* The line a client's run or sync belongs to, for the journal: its P_LABEL, else the
 * command (bash -c's text). */
static void set_label(holder *h, hclient *c, char *const *argv)
{
    strbuf sb = STRBUF_INIT;
    if (!h->journal)
        return;
    if (c->label)
        strbuf_addstr(&sb, c->label);
    else if (argv && argv[0] && argv[1] && !strcmp(argv[1], "-c") && argv[2])
        strbuf_addstr(&sb, argv[2]);
    else
        for (size_t i = 0; argv && argv[i]; i++)
            strbuf_addf(&sb, "%s%s", i ? " " : "", argv[i]);
    jnl_set_label(h->journal, sb.buf);
    strbuf_release(&sb);
}

/* The host side of the sync for the session: code directories from the config,
 * the sync paths, task files, create paths and excludes as the clients widened
 * them, the pull quota, and the home directory whose startup files go into the
 * sandbox's (at the same path: commands there get HOME at the host's path). */
static int make_host(holder *h, sbx_err *err)
{
    const sbx_config *cfg = h->cfg;
    sync_config sc = {
        .code_dirs = (const char *const *)cfg->code_dirs.v,
        .sync_paths = (const char *const *)h->sync_paths.v,
        .task_files = (const char *const *)h->task_files.v,
        .excludes = (const char *const *)h->excludes.v,
        .state_file = h->state_file,
        .user_gitconfig = h->user_gitconfig,
        .sandbox_gitconfig = h->sandbox_gitconfig,
        .user_home = cfg->home,
        .sandbox_home = cfg->home,
        .create_paths = (const char *const *)h->create_paths.v,
        .disk_max = cfg->disk_max,
        .files_max = cfg->files_max,
        .git_fsmonitor = h->git_fsmonitor,
    };
    if (sync_host_new(&sc, &h->host, err) < 0)
        return -1;
    open_journal(h);
    sync_host_set_journal(h->host, h->journal);
    return 0;
}

/* A backend's word on a slow claim, to the client waiting on it (at its terminal). */
static void on_claim_progress(void *ctx, const char *msg)
{
    holder *h = ctx;
    if (h->claiming && h->claiming->progress) {
        send_str(h->claiming, P_PROGRESS, msg);
        client_write(h, h->claiming);
    }
}

/* The backend instance for the session (by cfg->backend, through the
 * registry); nothing is claimed yet. */
static int make_backend(holder *h, sbx_err *err)
{
    sbx_sandbox_spec spec = {
        .agent_path = h->cfg->agent_path,
        .agent_args = &h->agent_args,
        .agent_env = &h->agent_env,
        .progress = on_claim_progress,
        .progress_ctx = h,
    };
    h->backend = session_backend_new(h->cfg, &spec, err);
    return h->backend ? 0 : -1;
}

/* Whether any client has a command or a sync round in flight: the host state
 * and the connection cannot be replaced under one. */
static bool commands_running(holder *h)
{
    for (size_t i = 0; i < h->nclients; i++)
        if (h->clients[i]->chan || h->clients[i]->sync_id)
            return true;
    return false;
}

/* Adds what list has and into lacks to into; true when it grew. */
static bool add_missing(strvec *into, char **list)
{
    bool grew = false;
    for (char **p = list; p && *p; p++) {
        size_t i = 0;
        while (i < into->n && strcmp(into->v[i], *p))
            i++;
        if (i == into->n) {
            strvec_push(into, *p);
            grew = true;
        }
    }
    return grew;
}

/* Makes sure there is a live connection to a sandbox's agent: reconnects to
 * the claimed sandbox, or claims one (reattaching to a sandbox an earlier
 * holder left, or starting a new one). */
static int ensure_conn(holder *h, hclient *c, sbx_err *err)
{
    bool reattached = false;

    /* Rebuild before the next command. The host state (sync_host: its manifest, the
     * paths it walks, the ignore rules) is fixed when it is made, and one
     * connection to the agent serves every client. A client that brought new sync
     * paths, task files, create paths or excludes (P_HELLO) set host_stale; the state cannot be
     * swapped under a running command (its pull would be checked against rules it
     * did not start with, and the agent's channels belong to the connection), so
     * the swap waits until none runs and happens here, as the next command starts:
     * drop the connection, save and free the old state; the code below makes a new
     * one for the union and reconnects (the sandbox and its files stay). */
    sync_host *old_host = NULL;
    if (h->host_stale && !commands_running(h)) {
        drop_conn(h);
        old_host = h->host;     /* its records of the roots both have go to the new one */
        h->host = NULL;
        h->host_stale = false;
    }
    if (h->conn && !h->conn_dead)
        return 0;   /* (never with old_host: its connection was dropped) */
    drop_conn(h);
    if (!h->backend && make_backend(h, err) < 0) {
        /* nothing can start (a setting missing, a runtime not installed): the session
         * pins nothing, as after a failed claim */
        h->start_failed = true;
        goto fail;
    }
    if (!h->backend->ops->alive(h->backend)) {
        if (c && c->progress && !h->backend->ops->exists(h->backend)) {
            /* The claim blocks this loop: say so now, not after. */
            send_str(c, P_PROGRESS, "starting the sandbox...");
            client_write(h, c);
        }
        uint64_t t0 = now_ns();
        h->claiming = c;
        int cr = h->backend->ops->claim(h->backend, &reattached, err);
        h->claiming = NULL;
        if (cr < 0) {
            /* A session that never had a sandbox must not keep its shape: a call with
             * another runtime (bwrap after runsc failed) would be refused by name. */
            if (!h->backend->ops->exists(h->backend))
                h->start_failed = true;
            goto fail;
        }
        h->start_failed = false;
        log_msg("%s sandbox in %.0f ms", reattached ? "reattached to the" : "started a new",
                (double)(now_ns() - t0) / 1e6);
        if (!reattached) {
            /* A new sandbox has none of the old one's files: forget what was
             * synced (here and in the file a dead holder left), so that the
             * first push sends the whole tree. */
            if (h->host)
                sync_host_free(h->host);
            h->host = NULL;
            sync_host_free(old_host);
            old_host = NULL;
            unlink(h->state_file);
        }
    }
    if (!h->host && make_host(h, err) < 0)
        goto fail;
    if (old_host) {
        sync_host_adopt(h->host, old_host);
        sync_host_free(old_host);
        old_host = NULL;
    }
    if (h->backend->ops->open_stream(h->backend, &h->rfd, &h->wfd, err) < 0)
        return -1;
    unsigned hello_ms = h->backend->ops->hello_timeout_ms ? h->backend->ops->hello_timeout_ms
                                                          : 10000;
    if (sync_conn_open(h->host, h->rfd, h->wfd, &conn_ops, h, hello_ms, &h->conn, err) < 0) {
        drop_conn(h);
        if (h->backend->ops->explain)
            h->backend->ops->explain(h->backend, true, err);
        return -1;
    }
    if (c && c->progress && !sync_conn_agent(h->conn)->resumed)
        send_str(c, P_PROGRESS, "syncing the code directories into the sandbox...");
    return 0;
fail:
    if (old_host) {
        /* nothing new was made: what it knew is kept for the next try, on disk */
        sbx_err serr;
        if (sync_host_save(old_host, &serr) < 0)
            log_msg("cannot save the host manifest: %s", serr.msg);
        sync_host_free(old_host);
    }
    return -1;
}

/* The release itself, once the last pull is done (or impossible): connection
 * and host state dropped, the backend releases the sandbox and its state, the
 * clients that asked are answered and the others' commands fail, the socket
 * goes so no new client reaches a holder that ends (h->quit). */
static void release_now(holder *h)
{
    sbx_err err;
    int ok = 0;

    h->releasing = false;
    h->release_ready = false;
    thaw_sandbox(h);
    if (h->conn)
        drop_conn(h);
    if (h->host) {
        sync_host_free(h->host);
        h->host = NULL;
    }
    unlink(h->state_file);
    if (!h->backend)
        make_backend(h, &err);
    if (h->backend && h->backend->ops->release(h->backend, &err) < 0) {
        ok = -1;
        log_msg("release failed: %s", err.msg);
    } else {
        /* the lock goes with the session (we hold its fd until we exit, moments later) */
        char *lock = xasprintf("%s/holder.lock", h->dir), *jdir = xasprintf("%s/journal", h->dir);
        sbx_err rerr;
        unlink(lock);
        free(lock);
        /* the journal goes with the session: nothing is left to undo against */
        jnl_free(h->journal);
        h->journal = NULL;
        if (h->host)
            sync_host_set_journal(h->host, NULL);
        sbx_rm_rf(jdir, &rerr);
        free(jdir);
        rmdir(h->dir);
        log_msg("released");
    }
    for (size_t i = 0; i < h->nclients; i++) {
        hclient *c = h->clients[i];
        if (c->release) {
            if (ok == 0)
                send_str(c, P_RELEASED, "");
            else
                send_str(c, P_ERROR, err.msg);
            c->release = false;
        } else if (c->chan || c->sync_id) {
            send_str(c, P_ERROR, "the session was released (sbx release or idle timeout) "
                                 "while the command ran");
            c->chan = 0;
            c->sync_id = 0;
        }
    }
    /* No new client may reach a holder that is going away. */
    unlink_own_socket(h);
    char *log = session_log_path(h->cfg);
    unlink(log);
    free(log);
    h->quit = true;
}

/* A release first pulls what the sandbox changed since the last command
 * (background processes), so that nothing is lost. */
static void start_release(holder *h)
{
    sbx_err err;

    if (h->releasing)
        return;
    thaw_sandbox(h);    /* the pull below talks to the agent */
    /* A new holder (the old one died) reattaches first, to pull. */
    if (!h->conn && !h->backend)
        make_backend(h, &err);
    if (!h->conn && h->backend && h->backend->ops->exists(h->backend) &&
        ensure_conn(h, NULL, &err) < 0)
        log_msg("cannot reach the sandbox to pull its last changes: %s", err.msg);
    if (h->conn && !h->conn_dead && sync_conn_sync(h->conn, INTERNAL_SYNC_ID) == 0) {
        h->releasing = true;
        return;
    }
    release_now(h);
}

/* ---- client requests --------------------------------------------------- */

/* Frees a NULL-terminated list from get_list. */
static void free_strs(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

/* A counted list of strings from a frame (argv, env, sync paths), bounded by
 * SBX_PROTO_MAX_LIST: the client is trusted no more than it must be. */
static int get_list(proto_reader *r, char ***out)
{
    uint32_t n;
    char **v;
    if (proto_get_u32(r, &n) < 0 || n > SBX_PROTO_MAX_LIST)
        return -1;
    v = xcalloc(n + 1, sizeof(*v));
    for (uint32_t i = 0; i < n; i++) {
        if (proto_get_cstr(r, &v[i]) < 0) {
            free_strs(v);
            return -1;
        }
    }
    *out = v;
    return 0;
}

/* P_RUN: checks the request (exe, argv, env, cwd, the fd map, a tty), makes
 * sure a sandbox is connected (claiming one on the first command, rebuilding
 * the host state first when it is stale), and starts the command on a new
 * channel; a failure is the client's error, never the holder's end. */
static void handle_run(holder *h, hclient *c, proto_reader *r)
{
    char *exe = NULL, *cwd = NULL, **argv = NULL, **env = NULL;
    sync_fd_spec fds[SYNC_MAX_FDS];
    uint32_t nfds = 0, tty = 0, rows = 0, cols = 0;
    sync_run_req req;
    sbx_err err;
    int rc;

    if (proto_get_cstr(r, &exe) < 0 || get_list(r, &argv) < 0 || get_list(r, &env) < 0 ||
        proto_get_cstr(r, &cwd) < 0 || proto_get_u32(r, &nfds) < 0 || nfds > SYNC_MAX_FDS) {
        send_str(c, P_ERROR, "malformed run request");
        goto out;
    }
    for (uint32_t i = 0; i < nfds; i++) {
        uint32_t fd, dir;
        if (proto_get_u32(r, &fd) < 0 || proto_get_u32(r, &dir) < 0 ||
            fd > SYNC_MAX_CHILD_FD || dir > SBX_PROTO_FD_SHARED) {
            send_str(c, P_ERROR, "malformed run request: fd map");
            goto out;
        }
        fds[i].fd = (int)fd;
        fds[i].dir = dir == SBX_PROTO_FD_SHARED ? SYNC_FD_OUT_SHARED
                   : dir == SBX_PROTO_FD_OUT    ? SYNC_FD_OUT
                                                : SYNC_FD_IN;
    }
    if (proto_get_u32(r, &tty) < 0 || proto_get_u32(r, &rows) < 0 ||
        proto_get_u32(r, &cols) < 0 || !exe[0] || !argv[0] || cwd[0] != '/') {
        send_str(c, P_ERROR, "malformed run request");
        goto out;
    }
    if (c->chan) {
        send_str(c, P_ERROR, "a command is already running on this connection");
        goto out;
    }
    if (h->releasing) {
        send_str(c, P_ERROR, "the session is being released; run the command again");
        goto out;
    }
    h->starting = c;
    if (h->backend && h->backend->ops->take_notice) {
        strbuf note = STRBUF_INIT;
        h->backend->ops->take_notice(h->backend, &note);
        if (note.len)
            send_str(c, P_WARNING, note.buf);
        strbuf_release(&note);
    }
    if (ensure_conn(h, c, &err) < 0) {
        h->starting = NULL;
        send_str(c, P_ERROR, err.msg);
        goto out;
    }
    if (++h->next_chan == 0)
        h->next_chan = 1;
    set_label(h, c, argv);
    memset(&req, 0, sizeof(req));
    req.exe = exe;
    req.argv = (const char *const *)argv;
    req.env = (const char *const *)env;
    req.cwd = cwd;
    req.fds = fds;
    req.nfds = nfds;
    req.tty = tty != 0;
    req.rows = (uint16_t)(rows > 0xffff ? 0 : rows);
    req.cols = (uint16_t)(cols > 0xffff ? 0 : cols);
    rc = sync_conn_run(h->conn, h->next_chan, &req, &err);
    h->starting = NULL;
    if (rc < 0) {
        send_str(c, P_ERROR, err.msg);
        goto out;
    }
    c->chan = h->next_chan;
    c->signals_unacked = 0;
    reset_inputs(c);
    size_t k = 0;
    for (uint32_t i = 0; i < nfds; i++)
        if (fds[i].dir == SYNC_FD_IN)
            c->inputs[k++].fd = fds[i].fd;
    /* With a tty, the terminal's input is fd 0 whatever the map says. */
    if (tty && !client_input(c, 0) && k < SYNC_MAX_FDS)
        c->inputs[k].fd = 0;
out:
    free(exe);
    free(cwd);
    free_strs(argv);
    free_strs(env);
}

/* P_STATUS: the session as JSON (sbx status): the holder, its clients, the
 * sandbox's facts from the backend (peeked from its state when not claimed),
 * the agent and the sync counters. */
static void handle_status(holder *h, hclient *c)
{
    strbuf js = STRBUF_INIT;
    size_t running = 0;
    for (size_t i = 0; i < h->nclients; i++)
        running += h->clients[i]->chan != 0;
    sbx_json j;
    sbx_json_init(&j, &js);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_str(&j, "session", h->cfg->session);
    sbx_json_int(&j, "holder_pid", (int)getpid());
    sbx_json_uint(&j, "clients", h->nclients);
    sbx_json_uint(&j, "running", running);
    sbx_json_uint(&j, "idle_timeout", h->cfg->idle_timeout);
    sbx_json_uint(&j, "freezes", h->freezes);
    sbx_json_begin_arr(&j, "code_dirs");
    for (size_t i = 0; i < h->cfg->code_dirs.n; i++)
        sbx_json_str(&j, NULL, h->cfg->code_dirs.v[i]);
    sbx_json_end(&j);
    /* the backend's own object (or the one peeked from its state) */
    sbx_json_value(&j, "sandbox");
    if (h->backend && h->backend->ops->alive(h->backend))
        h->backend->ops->status(h->backend, &js);
    else if (session_backend_peek(h->dir, &js) < 0)
        strbuf_addstr(&js, "null");
    if (h->conn && !h->conn_dead) {
        sync_conn_stats st;
        const sync_agent_info *ai = sync_conn_agent(h->conn);
        sync_conn_stats_get(h->conn, &st);
        sbx_json_begin_obj(&j, "agent");
        sbx_json_str(&j, "about", ai->about);
        sbx_json_int(&j, "pid", ai->pid);
        sbx_json_end(&j);
        sbx_json_begin_obj(&j, "sync");
        sbx_json_uint(&j, "pushes", st.pushes);
        sbx_json_uint(&j, "pulls", st.pulls);
        sbx_json_uint(&j, "push_bytes", st.push_bytes);
        sbx_json_uint(&j, "pull_bytes", st.pull_bytes);
        sbx_json_uint(&j, "full_scans", st.full_scans);
        sbx_json_end(&j);
    }
    sbx_json_end(&j);
    send_str(c, P_STATUS_REPLY, js.buf);
    strbuf_release(&js);
}

/* Whether this holder serves a client whose fingerprint is fp: its own shape, or one the
 * backends say it also satisfies (a call leaving the runtime to its default). */
static bool serves_fingerprint(const holder *h, const char *fp, size_t fplen)
{
    if (fplen == strlen(h->fingerprint) && !memcmp(fp, h->fingerprint, fplen))
        return true;
    for (size_t i = 0; i < h->fingerprint_also.n; i++)
        if (fplen == strlen(h->fingerprint_also.v[i]) &&
            !memcmp(fp, h->fingerprint_also.v[i], fplen))
            return true;
    return false;
}

/* Returns -1 when the client must be dropped (a malformed frame). */
static int handle_frame(holder *h, hclient *c, int type, proto_reader *r)
{
    uint32_t a = 0, b = 0;
    sbx_err err;
    inq *q;

    if (!c->hello && type != P_HELLO)
        return -1;
    switch (type) {
    case P_HELLO: {
        const char *fp;
        size_t fplen;
        if (proto_get_u32(r, &a) < 0 || proto_get_u32(r, &b) < 0 || a != SBX_PROTO_VERSION ||
            proto_get_str(r, &fp, &fplen) < 0) {
            send_str(c, P_ERROR, "this sbxsh and the session's holder are different "
                                 "versions; run `sbx release` and try again");
            return 0;
        }
        if (fplen && !serves_fingerprint(h, fp, fplen)) {
            char msg[1024];
            snprintf(msg, sizeof(msg), "session '%s' runs with %s, and this call asks for "
                     "%.*s; use another session name, or `sbx release --session %s` first",
                     h->cfg->session, h->fingerprint, (int)(fplen > 400 ? 400 : fplen), fp,
                     h->cfg->session);
            send_str(c, P_ERROR, msg);
            return 0;
        }
        char **lists[4] = { NULL, NULL, NULL, NULL };
        for (int i = 0; i < 4; i++) {
            if (get_list(r, &lists[i]) < 0) {
                for (int j = 0; j < i; j++)
                    free_strs(lists[j]);
                return -1;
            }
        }
        bool grew = add_missing(&h->sync_paths, lists[0]);
        grew |= add_missing(&h->task_files, lists[1]);
        grew |= add_missing(&h->excludes, lists[2]);
        grew |= add_missing(&h->create_paths, lists[3]);
        for (int i = 0; i < 4; i++)
            free_strs(lists[i]);
        if (grew) {
            /* rebuilt by ensure_conn before the next command, once none runs */
            log_msg("sync paths, task files, create paths or excludes added by a client");
            h->host_stale = true;
        }
        c->hello = true;
        c->progress = b & P_HELLO_PROGRESS;
        send_u32s(c, P_HELLO_OK, 2, SBX_PROTO_VERSION, (uint32_t)getpid());
        return 0;
    }
    case P_RUN:
        handle_run(h, c, r);
        return 0;
    case P_INPUT:
        if (proto_get_u32(r, &a) < 0)
            return -1;
        q = c->chan ? client_input(c, (int)a) : NULL;
        if (q && !q->eof) {
            if (q->buf.len + r->left > 2 * SBX_PROTO_INPUT_WINDOW)
                return -1;  /* the client ignored its window */
            strbuf_add(&q->buf, r->p, r->left);
            flush_input(h, c, q);
        }
        return 0;
    case P_INPUT_EOF:
        if (proto_get_u32(r, &a) < 0)
            return -1;
        q = c->chan ? client_input(c, (int)a) : NULL;
        if (q) {
            q->eof = true;
            flush_input(h, c, q);
        }
        return 0;
    case P_SIGNAL:
        /* 0: the client asks whether the way works (a Ctrl-C typed on a raw terminal); the
         * agent answers without signalling */
        if (proto_get_u32(r, &a) < 0 || a >= 65)
            return -1;
        if (c->chan && h->conn && !h->conn_dead &&
            sync_conn_signal(h->conn, c->chan, (int)a) == 0)
            c->signals_unacked++;
        return 0;
    case P_ABORT_PULL:
        /* The client got SIGINT or SIGTERM (already forwarded as P_SIGNAL). If its round's
         * pull is being written, it is dropped now (nothing of it lands, the stage goes) and
         * the client is answered at once as killed by that signal, as bash's caller would
         * see it; the rest of the delta is read and dropped, the command's own EXIT ignored.
         * Only a pull in progress is interrupted: while the command runs, the signal is the
         * command's to handle. (Pulls are one stream: with two commands ending at once, the
         * delta being written may be the other's, which then reports the interruption.) */
        if (proto_get_u32(r, &a) < 0 || a == 0 || a >= 65)
            return -1;
        if ((c->chan || c->sync_id) && h->conn && !h->conn_dead) {
            char why[160];
            snprintf(why, sizeof(why), "the sandbox's changes were not applied: the pull was "
                     "interrupted by signal %u; the host tree is as it was", a);
            if (sync_conn_abort_pull(h->conn, why) == 1) {
                strbuf f = STRBUF_INIT;
                log_msg("pull interrupted by the client (signal %u)", a);
                if (c->chan) {
                    proto_begin(&f, P_EXIT);
                    proto_u32(&f, SYNC_SIGNALED);
                    proto_u32(&f, a);
                    proto_u32(&f, 0);
                    proto_u32(&f, a);   /* the wait status of a process killed by a */
                    proto_strz(&f, "");
                    proto_end(&f, 0);
                    send_frame(c, &f);
                } else {
                    /* A sync round of a persistent shell: the shell goes on (the user's
                     * Ctrl-C was for the pull), told that the changes did not come back. */
                    send_str(c, P_WARNING, why);
                    send_str(c, P_SYNC_DONE, "");
                }
                strbuf_release(&f);
                c->chan = 0;
                c->sync_id = 0;
                reset_inputs(c);
            }
        }
        return 0;
    case P_WINSIZE:
        if (proto_get_u32(r, &a) < 0 || proto_get_u32(r, &b) < 0)
            return -1;
        if (c->chan && h->conn && !h->conn_dead)
            sync_conn_winsize(h->conn, c->chan, (uint16_t)a, (uint16_t)b);
        return 0;
    case P_CLOSE_OUTPUT:
        if (proto_get_u32(r, &a) < 0)
            return -1;
        if (c->chan && h->conn && !h->conn_dead)
            sync_conn_close_output(h->conn, c->chan, (int)a);
        return 0;
    case P_CREDIT:
        if (proto_get_u32(r, &a) < 0 || proto_get_u32(r, &b) < 0)
            return -1;
        if (c->chan && h->conn && !h->conn_dead)
            sync_conn_credit(h->conn, c->chan, (int)a, b);
        return 0;
    case P_LABEL: {
        char *label = NULL;
        if (proto_get_cstr(r, &label) < 0)
            return -1;
        free(c->label);
        c->label = label;
        return 0;
    }
    case P_SYNC:
        if (c->sync_id)
            return -1;
        h->starting = c;
        if (ensure_conn(h, c, &err) < 0) {
            h->starting = NULL;
            send_str(c, P_ERROR, err.msg);
            return 0;
        }
        h->starting = NULL;
        if (c->label)
            set_label(h, c, NULL);
        c->sync_id = ++h->next_sync;
        if (sync_conn_sync(h->conn, c->sync_id) < 0) {
            c->sync_id = 0;
            send_str(c, P_ERROR, "the sandbox connection failed; run the command again");
        }
        return 0;
    case P_STATUS:
        handle_status(h, c);
        return 0;
    case P_RELEASE:
        c->release = true;
        start_release(h);
        return 0;
    default:
        return -1;
    }
}

/* A client went away or misbehaved: its socket closes at once, but a command it
 * started is hung up on (SIGHUP, inputs ended, as a terminal's processes are)
 * and the client is kept until that command exits (reap_clients). */
static void client_drop(holder *h, hclient *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    /* A command whose client vanished (killed sbxsh) is hung up on, as a
     * terminal's processes are; it stays until it exits. */
    if (c->chan && h->conn && !h->conn_dead) {
        sync_conn_signal(h->conn, c->chan, SIGHUP);
        for (size_t i = 0; i < SYNC_MAX_FDS; i++)
            if (c->inputs[i].fd >= 0)
                sync_conn_eof(h->conn, c->chan, c->inputs[i].fd);
    }
    reset_inputs(c);
    framebuf_in_release(&c->in);
    framebuf_out_release(&c->out);
    c->sync_id = 0;
    c->release = false;
    free(c->label);
    c->label = NULL;
}

/* Reads what the client sent and handles each complete frame; a malformed one
 * drops the client (it is ours, but a bug there must not reach the sandbox). */
static void client_read(holder *h, hclient *c)
{
    ssize_t n = framebuf_fill(&c->in, c->fd, 65536);
    if (n < 0 && errno == EAGAIN)
        return;
    if (n <= 0) {
        client_drop(h, c);
        return;
    }
    for (;;) {
        int type;
        proto_reader r;
        long flen = proto_parse(framebuf_data(&c->in), framebuf_len(&c->in), &type, &r);
        if (flen == 0)
            break;
        /* Taken before it is handled (its bytes stay put): handling may drop c. */
        if (flen > 0)
            framebuf_consume(&c->in, (size_t)flen);
        if (flen < 0 || handle_frame(h, c, type, &r) < 0) {
            log_msg("dropping a client that sent a malformed frame");
            client_drop(h, c);
            return;
        }
        if (c->fd < 0)
            return;
    }
    framebuf_in_compact(&c->in);
}

/* Sends queued frames without blocking; the rest waits for POLLOUT. A client
 * that cannot be written to is dropped. */
static void client_write(holder *h, hclient *c)
{
    if (framebuf_send(&c->out, c->fd, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        client_drop(h, c);
}

/* New clients on the listening socket, each checked to be our own uid
 * (SO_PEERCRED) and counted against MAX_CLIENTS. */
static void accept_clients(holder *h)
{
    for (;;) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        /* The socket's directory is private already; the peer check keeps
         * it so even if someone loosened its mode. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
            cred.uid != geteuid() || h->nclients == MAX_CLIENTS) {
            close(fd);
            continue;
        }
        /* whatever it asks may reach the agent: a frozen sandbox goes on first */
        thaw_sandbox(h);
        hclient *c = xcalloc(1, sizeof(*c));
        c->fd = fd;
        framebuf_in_init(&c->in);
        framebuf_out_init(&c->out);
        for (size_t i = 0; i < SYNC_MAX_FDS; i++) {
            c->inputs[i].fd = -1;
            strbuf_init(&c->inputs[i].buf, 0);
        }
        h->clients[h->nclients++] = c;
    }
}

/* Frees clients that are gone and have no command left; the session's idle
 * time starts when the last one goes. */
static void reap_clients(holder *h)
{
    size_t k = 0;
    for (size_t i = 0; i < h->nclients; i++) {
        hclient *c = h->clients[i];
        if (c->fd < 0 && !c->chan) {
            client_drop(h, c);
            free(c);
            continue;
        }
        h->clients[k++] = c;
    }
    if (k != h->nclients)
        h->idle_since_ns = now_ns();
    h->nclients = k;
}

/* Whether something keeps the session from being idle. */
static bool session_busy(holder *h)
{
    if (h->nclients || h->releasing)
        return true;
    return false;
}

/* Whether the sandbox is one to freeze once freeze_due(): nobody uses the session, the
 * backend can freeze, and the agent connection has nothing half-read. */
static bool freeze_wanted(holder *h)
{
    return !session_busy(h) && !h->frozen && !h->start_failed && h->backend &&
           h->backend->ops->freeze && (!h->conn || h->conn_dead || sync_conn_timeout(h->conn) < 0);
}

static uint64_t freeze_due(holder *h)
{
    uint64_t due = h->idle_since_ns + (uint64_t)h->freeze_after_s * 1000000000;
    return due > h->freeze_retry_ns ? due : h->freeze_retry_ns;
}

/* ---- main loop --------------------------------------------------------- */

/* The agent's environment and arguments, the same for every sandbox the
 * holder starts (the backend adds its connection mode). */
static void agent_setup(holder *h)
{
    /* The agent's own environment: commands get theirs in each request. */
    strvec_push(&h->agent_env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    strvec_pushf(&h->agent_env, "HOME=%s", h->cfg->home);
    strvec_push(&h->agent_env, "LANG=C.UTF-8");
    /* The agent keeps its manifest beside its socket, so that a new holder
     * (or a restarted agent) resumes without a full push. */
    strvec_push(&h->agent_args, "--state");
    strvec_push(&h->agent_args, SBX_SANDBOX_AGENT_DIR "/agent.state");
    /* git's fsmonitor (AGENT_SANDBOX_GIT_FSMONITOR, on by default): the agent answers the
     * hook on a socket in the sandbox's /tmp, where the backend puts the hook at a known
     * path (the class's fsmonitor_hook), or has the agent make it there. */
    const sbx_backend_class *bc = session_backend_class_find(h->cfg->backend);
    if (h->cfg->git_fsmonitor && bc && bc->fsmonitor_hook) {
        strvec_push(&h->agent_args, "--fsmonitor");
        strvec_push(&h->agent_args, FSM_DEFAULT_SOCKET);
        if (bc->fsmonitor_hook_by_agent) {
            strvec_push(&h->agent_args, "--fsmonitor-link");
            strvec_push(&h->agent_args, bc->fsmonitor_hook);
        }
        h->git_fsmonitor = xstrdup(bc->fsmonitor_hook);
    }
}

/*
 * One holder per session, whatever happens to the runtime directory. The socket
 * and the start lock live in RUN ($XDG_RUNTIME_DIR or /tmp), where a tmp cleaner
 * may delete them; a new client then finds no socket and starts a second holder
 * for the same sandbox. So each holder also holds, for its whole life, an flock
 * on STATE/SESSION/holder.lock (a directory no cleaner touches), holding its pid and socket.
 * A new holder that finds it held asks the old one to go (SIGTERM: it leaves the
 * sandbox for the next holder, as always) and waits, boundedly, for the lock;
 * without it, it does not serve. sbx release --force finds the holder there too.
 */
#define HOLDER_LOCK_WAIT_MS 10000

/* Takes STATE/SESSION/holder.lock for the holder's life (see above), asking an
 * older holder still holding it to go first. */
static int take_holder_lock(holder *h)
{
    char *path = xasprintf("%s/holder.lock", h->dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool asked = false;

    free(path);
    if (fd < 0) {
        log_msg("cannot open the holder lock: %s", strerror(errno));
        return -1;
    }
    for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 50) {
        if (errno != EWOULDBLOCK || waited >= HOLDER_LOCK_WAIT_MS) {
            log_msg("another holder keeps the session (its lock is held after %d ms); "
                    "sbx release --force frees it", waited);
            close(fd);
            return -1;
        }
        if (!asked) {
            char buf[32] = "";
            ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
            long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
            if (pid > 1 && pid != getpid()) {
                log_msg("holder %ld still runs without its socket: asking it to go", pid);
                kill((pid_t)pid, SIGTERM);
            }
            asked = true;
        }
        usleep(50000);
    }
    /* "PID SOCKET\n": the pid for a newer holder and sbx release --force, the socket for a
     * client whose runtime directory differs from the one that started us (an MCP client
     * that dropped XDG_RUNTIME_DIR), which connects here rather than start a second holder
     * that would push us out (session.c, connect_recorded_holder) */
    char *buf = xasprintf("%ld %s\n", (long)getpid(), h->sock_path);
    ssize_t len = (ssize_t)strlen(buf);
    if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)len, 0) != len)
        log_msg("cannot write the holder lock: %s", strerror(errno));
    free(buf);
    h->lock_fd = fd;    /* held until exit */
    return 0;
}

/* The holder's state before it serves: paths, what the sync covers, the
 * agent's command line. Nothing is claimed or connected yet (ensure_conn does
 * that on the first command). */
static void holder_init(holder *h, const sbx_config *cfg, int listen_fd)
{
    memset(h, 0, sizeof(*h));
    h->cfg = cfg;
    h->lfd = listen_fd;
    h->rfd = h->wfd = h->lock_fd = -1;
    h->dir = session_state_dir(cfg);
    h->sock_path = session_socket_path(cfg);
    {
        /* the client bound it just before it forked us: ours, until a tmp cleaner removes
         * it and a new client binds a new holder's there */
        struct stat st;
        if (lstat(h->sock_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
            h->sock_dev = st.st_dev;
            h->sock_ino = st.st_ino;
            h->sock_known = true;
        }
    }
    h->state_file = xasprintf("%s/host.manifest", h->dir);
    h->user_gitconfig = xasprintf("%s/.gitconfig", cfg->home);
    h->sandbox_gitconfig = xasprintf("%s/.gitconfig", cfg->home);
    h->fingerprint = session_config_fingerprint(cfg);
    strvec_init(&h->fingerprint_also);
    session_config_fingerprints_also(cfg, &h->fingerprint_also);
    strvec_pushv(&h->sync_paths, cfg->sync_paths.v);
    strvec_pushv(&h->task_files, cfg->task_files.v);
    strvec_pushv(&h->excludes, cfg->excludes.v);
    strvec_pushv(&h->create_paths, cfg->create_paths.v);
    h->idle_since_ns = now_ns();
    h->freeze_after_s = FREEZE_AFTER;
    const char *fa = getenv("SBXSH_TEST_FREEZE_AFTER");
    if (fa && *fa && strtoul(fa, NULL, 10) > 0 && strtoul(fa, NULL, 10) < 86400)
        h->freeze_after_s = (unsigned)strtoul(fa, NULL, 10);
    agent_setup(h);
}

/* The holder owns its process: a client going away (SIGPIPE) or the terminal
 * it was started from (SIGINT, SIGHUP) must not end the session; SIGTERM ends
 * the holder but leaves the sandbox for the next one to reattach. */
static void holder_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
}

/* The shorter of timeout (ms, -1 = none) and the time until deadline. */
static int until(int timeout, uint64_t deadline_ns, uint64_t now)
{
    int ms = deadline_ns > now ? (int)((deadline_ns - now) / 1000000) + 1 : 0;
    return timeout < 0 || ms < timeout ? ms : timeout;
}

/* What one turn of the loop waits for: the listening socket at pfd[0], then
 * the agent connection's fds (*nconn of them), then one per client from
 * *first_client on; and how long: the connection's own timers, the manifest
 * save, the idle timeout. Returns the number of pollfds. */
static size_t holder_pollfds(holder *h, struct pollfd *pfd, size_t *nconn, size_t *first_client,
                             int *timeout)
{
    size_t n = 0;
    uint64_t now = now_ns();

    *nconn = 0;
    *timeout = -1;
    pfd[n++] = (struct pollfd){ h->lfd, POLLIN, 0 };
    if (h->conn && !h->conn_dead) {
        *nconn = sync_conn_pollfds(h->conn, pfd + n, SYNC_CONN_MAX_POLLFDS);
        n += *nconn;
        *timeout = sync_conn_timeout(h->conn);
    }
    *first_client = n;
    for (size_t i = 0; i < h->nclients; i++) {
        hclient *c = h->clients[i];
        pfd[n++] = (struct pollfd){ c->fd, (short)(c->fd >= 0 ? POLLIN | (framebuf_pending(&c->out) ? POLLOUT : 0) : 0), 0 };
    }
    if (h->save_at_ns)
        *timeout = until(*timeout, h->save_at_ns, now);
    if (!session_busy(h) && h->cfg->idle_timeout)
        *timeout = until(*timeout, h->idle_since_ns + (uint64_t)h->cfg->idle_timeout * 1000000000,
                         now);
    if (freeze_wanted(h))
        *timeout = until(*timeout, freeze_due(h), now);
    return n;
}

/* Handles what poll() reported, in an order that matters: the agent's stream
 * first (its callbacks queue replies and may finish a release or kill the
 * connection), then new clients, then each client's frames and writes, then
 * the replies the others' events produced; clients gone and idle are reaped. */
static void holder_dispatch(holder *h, struct pollfd *pfd, size_t n, size_t nconn,
                            size_t first_client)
{
    if (h->conn && !h->conn_dead) {
        if (sync_conn_handle_events(h->conn, pfd + 1, nconn) < 0)
            h->conn_dead = true;
    }
    if (h->release_ready)
        release_now(h);
    if (h->conn_dead)
        drop_conn(h);
    if (pfd[0].revents & POLLIN)
        accept_clients(h);
    for (size_t i = 0, k = first_client; i < h->nclients && k < n; i++, k++) {
        hclient *c = h->clients[i];
        if (c->fd >= 0 && pfd[k].fd == c->fd) {
            if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR))
                client_read(h, c);
            if (c->fd >= 0 && (pfd[k].revents & POLLOUT))
                client_write(h, c);
        }
    }
    /* Replies made while handling others' events go out now. */
    for (size_t i = 0; i < h->nclients; i++)
        if (h->clients[i]->fd >= 0 && framebuf_pending(&h->clients[i]->out))
            client_write(h, h->clients[i]);
    reap_clients(h);
}

/* The loop's timers: the delayed manifest save, ending a session whose
 * sandbox could not start (once nothing uses it), and the idle release. */
static void holder_timers(holder *h)
{
    const sbx_config *cfg = h->cfg;
    uint64_t now = now_ns();
    sbx_err err;

    if (h->save_at_ns && now >= h->save_at_ns) {
        h->save_at_ns = 0;
        if (h->host && sync_host_save(h->host, &err) < 0)
            log_msg("cannot save the host manifest: %s", err.msg);
    }
    if (h->start_failed && !session_busy(h) && !h->releasing) {
        log_msg("no sandbox could be started: ending the session");
        h->start_failed = false;
        start_release(h);
    }
    if (!session_busy(h) && cfg->idle_timeout &&
        now >= h->idle_since_ns + (uint64_t)cfg->idle_timeout * 1000000000) {
        log_msg("idle for %u s: releasing", cfg->idle_timeout);
        start_release(h);
    }
    if (!h->quit && freeze_wanted(h) && now >= freeze_due(h)) {
        int r = h->backend->ops->freeze(h->backend, &err);
        if (r > 0) {
            h->frozen = true;
            h->freezes++;
            log_msg("idle for %u s: sandbox frozen", h->freeze_after_s);
        } else {
            if (r < 0)
                log_msg("cannot freeze the sandbox: %s", err.msg);
            /* not quiescent (a background process): asked again later */
            h->freeze_retry_ns = now + (uint64_t)h->freeze_after_s * 1000000000;
        }
    }
}

/* Going: the last replies (a release's) are flushed, the manifest saved, the
 * socket removed unless a release already did (h->quit), everything freed.
 * The sandbox itself stays unless it was released. */
static void holder_finish(holder *h)
{
    sbx_err err;

    for (size_t i = 0; i < h->nclients; i++) {
        hclient *c = h->clients[i];
        if (c->fd >= 0) {
            set_nonblock(c->fd, false);
            client_write(h, c);
        }
        client_drop(h, c);
        free(c);
    }
    if (h->host && sync_host_save(h->host, &err) < 0)
        log_msg("cannot save the host manifest: %s", err.msg);
    thaw_sandbox(h);    /* the sandbox stays for the next holder: running */
    if (!h->quit)
        unlink_own_socket(h);
    drop_conn(h);
    if (h->host)
        sync_host_free(h->host);
    session_backend_free(h->backend);
    jnl_free(h->journal);
    strvec_clear(&h->agent_args);
    free(h->git_fsmonitor);
    strvec_clear(&h->agent_env);
    free(h->dir);
    free(h->sock_path);
    free(h->state_file);
    free(h->user_gitconfig);
    free(h->sandbox_gitconfig);
    free(h->fingerprint);
    strvec_clear(&h->fingerprint_also);
    strvec_clear(&h->sync_paths);
    strvec_clear(&h->task_files);
    strvec_clear(&h->create_paths);
    strvec_clear(&h->excludes);
}

int session_holder_main(const sbx_config *cfg, int listen_fd)
{
    holder hs, *h = &hs;

    holder_init(h, cfg, listen_fd);
    holder_signals();
    set_nonblock(h->lfd, true);
    if (take_holder_lock(h) < 0)
        return 1;
    log_msg("serving session %s", cfg->session);

    while (!h->quit) {
        struct pollfd pfd[MAX_CLIENTS + 8];
        size_t n, nconn, first_client;
        int timeout;

        if (got_term) {
            log_msg("terminated; the sandbox stays for the next holder");
            break;
        }
        n = holder_pollfds(h, pfd, &nconn, &first_client, &timeout);
        if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
            log_msg("poll: %s", strerror(errno));
            break;
        }
        holder_dispatch(h, pfd, n, nconn, first_client);
        holder_timers(h);
    }
    holder_finish(h);
    return 0;
}
