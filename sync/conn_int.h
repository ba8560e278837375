/*
 * The insides of sync_host and sync_conn, shared by their files (private to sync/conn*.c):
 *   conn_host.c     sync_host: the code directories as roots, the host manifest, its state file;
 *   conn.c          sync_conn: the agent stream (queue, push, frames from the agent, failure),
 *                   the handshake, poll integration;
 *   conn_request.c  the requests a caller makes of a connection (run, input, signals, sync);
 *   conn_wait.c     the blocking helpers (sync_conn_run_wait, sync_conn_sync_wait).
 * Callers outside these files use conn.h only.
 */
#ifndef SBX_SYNC_CONN_INT_H
#define SBX_SYNC_CONN_INT_H

#include "sync/conn.h"
#include "sync/delta.h"
#include "sync/gitpolicy.h"
#include "sync/manifest.h"
#include "sync/safefs.h"
#include "sync/wire.h"
#include "common/framebuf.h"
#include "common/strvec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(SYNC_MAX_FDS == WIRE_MAX_FDS, "fd map sizes agree");

#define OUT_LOW (64u * 1024)      /* refill the output below this */
#define OUT_HIGH (256u * 1024)    /* ... up to this: small steps keep the agent busy */
#define CREDIT_BATCH (SYNC_OUTPUT_WINDOW / 4)
/* File content (data written, holes hashed) applied per sync_conn_handle_events() call: a
 * large pull goes in bounded pieces, so the holder's other clients are served between them
 * (and a Ctrl-C reaches it). Frames left over wait in the input buffer: sync_conn_timeout()
 * is then 0. */
#define APPLY_BUDGET (64u << 20)

/* ---- sync_host --------------------------------------------------------------------------- */

struct sync_host {
    mf_tree *tree;
    wire_root *roots;
    size_t nroots;
    strvec strings;            /* owns the roots' bases and patterns */
    strvec excludes;
    size_t *exclude_lens;
    char *state_file;
    char *user_gitconfig, *sandbox_gitconfig;
    char *git_fsmonitor;      /* sync_config.git_fsmonitor */
    struct stat gitconfig_seen;   /* the user's git config as last put into the sandbox */
    bool gitconfig_put;
    /* The user's startup files (sync/rcfile.h): where, what was put into the sandbox by this
     * connection (home-relative paths), and each file read as last seen, to notice a change. */
    char *user_home, *sandbox_home;
    strvec rc_put;
    strvec rc_seen;               /* home-relative paths, rc_seen_st[i] their stat */
    struct stat *rc_seen_st;
    bool rc_done;
    apply_limits limits;
    /* What this session's pulls added to the host tree, in allocated bytes (the quota's
     * running total, see apply_limits): kept across connections, from sync_host_new(). */
    int64_t disk_used;
    /* What they added in entries (files, directories, symlinks), for the entry quota. */
    int64_t files_used;
    bool no_watch;
    uint64_t pair_id, push_seq, pull_seq;
    bool dirty;
    sync_conn *conn;
    struct jnl *journal;       /* the session's undo journal (not owned), or NULL */
};

typedef struct conn_fd {
    uint16_t fd;
    bool out;
    bool closed;          /* out: close_output sent; in: eof sent */
    bool eof_seen;
    bool want_writable;
    uint32_t window;      /* out: what the agent may still send; in: what we may send */
    uint32_t unacked;     /* out: consumed, not yet credited back */
} conn_fd;

typedef struct conn_chan {
    uint32_t id;
    bool run_sent;
    bool auto_credit;
    size_t nfds;
    conn_fd fds[SYNC_MAX_FDS];
    strbuf pending;       /* frames queued before its RUN went out */
} conn_chan;

enum item_kind { ITEM_RUN, ITEM_SYNC, ITEM_PUT_FILE };

typedef struct conn_item {
    enum item_kind kind;
    bool push;
    uint32_t chan;
    strbuf frame;         /* the RUN / SYNC / PUT_FILE frame sent after the push */
    struct conn_item *next;
} conn_item;

struct sync_conn {
    sync_host *h;
    int rfd, wfd;
    const sync_conn_ops *ops;
    void *ctx;
    bool dead;
    bool in_dispatch;
    sync_agent_info info;
    framebuf_in in;          /* frames from the agent */
    framebuf_out out;        /* frames to the agent */
    conn_item *head, *tail;
    delta_tx tx;
    bool tx_active;
    apply_rx *rx;
    uint64_t rx_seq;
    int64_t rx_start;
    mf_pathmap *inflight;
    conn_chan **chans;
    size_t nchans, achans;
    sync_conn_stats stats;
    char exit_msg[SYNC_MAX_TEXT + 1];
    uint64_t sync_waiting;   /* the id sync_conn_sync_wait() waits for */
    bool sync_done_seen;
    /* Why the last delta was refused (over the quota, interrupted), for the EXIT or
     * SYNC_DONE that follows it: the agent sends a pull right before the EXIT (or
     * SYNC_DONE) of the round that asked for it. Empty: it was applied. */
    char pull_error[600];
    sync_quota pull_error_quota;   /* which quota refused it, if one did */
    unsigned sync_full;            /* the SYNC_DONE being reported: its WIRE_FULL_* bits */
    bool in_pending;         /* complete frames wait in c->in (the apply budget ran out) */
};

/* The functions the files share, by the file that defines them; each one's lead comment is at
 * its definition. */

/* ---- conn.c -------------------------------------------------------------------------------- */
strbuf *conn_chan_out(sync_conn *c, conn_chan *ch);
int conn_dead_err(sync_conn *c, sbx_err *err);
conn_chan *conn_find_chan(sync_conn *c, uint32_t id, size_t *idx);
conn_fd *conn_find_fd(conn_chan *ch, unsigned fd);
void conn_free_item(conn_item *it);
void conn_kick(sync_conn *c);
void conn_put_file_frame(strbuf *out, const char *path, unsigned mode, const void *data,
                         size_t len);
void conn_queue_item(sync_conn *c, conn_item *it);
/* Whether an absolute path is synced already (inside a code directory, or matching a sync
 * path, task file or create path): a file put into the sandbox there would fight the sync. */
bool conn_path_synced(const sync_host *h, const char *path);
void conn_refresh_user_gitconfig(sync_conn *c);
void conn_refresh_user_rcfiles(sync_conn *c);
void conn_send_credit(sync_conn *c, conn_chan *ch, conn_fd *f, bool force);

/* ---- conn_host.c --------------------------------------------------------------------------- */
int conn_path_normalize(const char *in, const char *what, strbuf *out, sbx_err *err);

#endif
