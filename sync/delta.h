/*
 * Sending and receiving deltas.
 *
 * delta_tx streams a scanned delta as frames (DELTA_BEGIN, ENTRY + CHUNKs per path,
 * DELTA_END) a piece at a time, so that a sender never holds more than one chunk of file
 * content: call delta_tx_fill() whenever the output buffer has room.
 *
 * apply_rx receives one: on the agent it applies each entry as it arrives (the host is
 * trusted; a path the sandbox changed too is renamed aside first); on the host, where nothing
 * from the agent is trusted, every entry is checked (path, policy, excludes, limits), staged
 * under the root, and the whole delta is committed only when DELTA_END arrives, so that a
 * malformed or truncated delta leaves the host tree exactly as it was. Conflicts keep the
 * host's version and put the sandbox's beside it under a name that says so.
 */
#ifndef SBX_SYNC_DELTA_H
#define SBX_SYNC_DELTA_H

#include "sync/config.h"
#include "sync/manifest.h"

typedef struct delta_tx {
    mf_tree *t;
    mf_delta d;
    bool open;            /* a scan is still adding ops to d: stream what is there */
    size_t *lost;         /* ops whose content did not get through, invalidated once the */
    size_t nlost, alost;  /* scan is over (the manifest cannot be touched during it) */
    struct delta_unread { size_t op; int err; } *unread;  /* ops whose file could not be */
    size_t nunread, aunread;                          /* opened: told once the scan is over */
    size_t next;          /* the next op to send */
    uint64_t seq, acked;
    int state;            /* 0 begin, 1 entries, 2 done */
    bool filter_git;      /* host: send repository git configs filtered */
    bool in_file;         /* an entry's content is being sent */
    int fd;               /* its file, or -1 when the content is in mem */
    strbuf mem;
    uint64_t off, size;
    uint64_t data_end;    /* the current data run ends here (SEEK_HOLE), <= size */
    bool no_seek_data;    /* its file system has no SEEK_DATA: zero chunks still go as holes */
    int dir_fd;           /* parent directory cache */
    uint16_t dir_root;
    strbuf dir_path;
    uint64_t entries, bytes;
    mf_warn_fn warn;
    void *wctx;
} delta_tx;

/* Takes the ops of d (d is left empty). A scan may go on adding ops to tx->d with tx->open
 * set (streaming from its progress hook); clear it when the scan is over. */
void delta_tx_init(delta_tx *tx, mf_tree *t, mf_delta *d, uint64_t seq, uint64_t acked,
                   bool filter_git, mf_warn_fn warn, void *wctx);
/* Appends frames to out until out->len reaches limit, or until the ops run out (while open),
 * or the delta is complete; returns true once DELTA_END has been appended. */
bool delta_tx_fill(delta_tx *tx, strbuf *out, size_t limit);
/* Ends the delta now (the receiver refused it and drops the rest): an entry whose content
 * is under way is cancelled (ENTRY_CANCEL) and DELTA_END follows, counting the entries
 * sent. Ops not sent yet stay as the scan recorded them: synced, as for a refused delta. */
void delta_tx_cancel(delta_tx *tx, strbuf *out);
void delta_tx_release(delta_tx *tx);

/* Who applies: the agent (sync/agent_apply.c, linked into sbx-agent only) writes the host's
 * delta into the sandbox as it comes; the host (sync/hostwrite.c, in libsbx only) checks,
 * stages and commits the sandbox's. Each side is a table of hooks that sync/apply.c's frame
 * handling calls, so a binary links only the side it names. */
typedef const struct apply_side *apply_role;
extern const struct apply_side apply_agent_side, apply_host_side;
#define APPLY_AGENT (&apply_agent_side)
#define APPLY_HOST (&apply_host_side)

typedef struct apply_limits {
    uint64_t max_file_size;
    uint64_t max_bytes;
    uint64_t max_entries;
    /* Host: the disk quota of the pulls (0: none) and the running total it is checked
     * against, owned by the caller and updated by each commit: the allocated bytes of the
     * entries pulls installed minus those of the host entries they replaced or deleted (so
     * a pull that rewrites a file costs only what it grows by; holes cost nothing), each
     * entry (file, directory, symlink) at least SYNC_ENTRY_COST. A delta whose staged
     * entries would bring *disk_used over max_disk is refused as a whole. */
    uint64_t max_disk;
    int64_t *disk_used;
    /* Host: the entry quota (0: none) and its running total, the same way: entries pulls
     * made minus those they deleted. A delta whose entries (every put counts, as for the
     * disk: a delta is checked by what it brings) would bring *files_used over max_files is
     * refused as a whole. */
    uint64_t max_files;
    int64_t *files_used;
} apply_limits;

typedef struct apply_rx apply_rx;

apply_rx *apply_new(mf_tree *t, apply_role role, const apply_limits *lim, mf_warn_fn warn,
                    void *wctx);
void apply_free(apply_rx *rx);
/* Host: pushes not yet acknowledged (path -> push seq), to notice a sandbox change that
 * crossed a host change in flight. */
void apply_set_inflight(apply_rx *rx, mf_pathmap *inflight);
/* Host: the undo journal (sync/journal.h) the commits save into, or NULL. */
struct jnl;
void apply_set_journal(apply_rx *rx, struct jnl *j);
/* Starts a delta (after DELTA_BEGIN). */
int apply_begin(apply_rx *rx, uint64_t seq, uint64_t acked, sbx_err *err);
/* Feeds ENTRY, CHUNK, ENTRY_CANCEL or DELTA_END. Returns 1 when DELTA_END completed the
 * delta, 0 to go on, -1 on a protocol or limit violation (then call apply_abort()). */
int apply_frame(apply_rx *rx, const wire_frame *f, sbx_err *err);
bool apply_active(const apply_rx *rx);
/* The sequence number of the delta being received (or the last one). */
uint64_t apply_seq(const apply_rx *rx);
/* Drops a delta in progress: staged files removed, nothing committed (host); the entry being
 * written removed (agent). */
void apply_abort(apply_rx *rx);
/* Refuses the delta in progress as a whole (host): what is staged is removed now, its
 * remaining frames are read and dropped, and DELTA_END commits nothing. Returns false when
 * no delta is in progress, or the one in progress is refused already (over the quota, or
 * interrupted before). For an interrupted pull (the user's Ctrl-C). */
bool apply_refuse(apply_rx *rx, const char *why);
/* After apply_frame() returned 1: NULL when the delta was committed, else why it was refused
 * (over a quota, *quota says which; or apply_refuse()'s reason, *quota SYNC_QUOTA_NONE).
 * Valid until the next delta. */
const char *apply_refusal(const apply_rx *rx, sync_quota *quota);
/* Counters of the last completed delta. */
void apply_stats(const apply_rx *rx, uint64_t *entries, uint64_t *bytes);

/* The mode a received file gets: exec from the sender, the rest from the file it replaces
 * (cur, NULL when new) or the umask. Never setuid, setgid or sticky. */
mode_t apply_file_mode(const struct stat *cur, bool exec);

#endif
