/*
 * The insides of apply_rx, shared by the three files that receive a delta (private to them):
 *   apply.c        what both sides share: the frames (ENTRY, CHUNK, HOLE, ENTRY_CANCEL,
 *                  DELTA_END) checked against what the entry announced and the delta's
 *                  limits, the partial file, warnings;
 *   agent_apply.c  the agent's side (sbx-agent only): the host's delta applied as it comes;
 *   hostwrite.c    the host's side (libsbx only): every write a pull can cause on the host,
 *                  checked, staged and committed.
 * Callers use delta.h only.
 */
#ifndef SBX_SYNC_APPLY_INT_H
#define SBX_SYNC_APPLY_INT_H

#include "sync/delta.h"
#include "sync/manifest.h"
#include "sync/wire.h"
#include "common/strbuf.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct staged staged;          /* hostwrite.c: an op staged for the commit */
typedef struct dir_rename dir_rename;  /* hostwrite.c: a directory put aside */

/* One side's hooks, called by apply.c's frame handling (NULL: nothing to do there). */
struct apply_side {
    bool host;   /* the host's side: refusals are warnings, write errors fail the stream */
    /* ENTRY, after the delta's limits were checked: starts the entry (a file's content
     * follows when it sets rx->in_entry) */
    int (*entry)(apply_rx *rx, const wire_entry *e, sbx_err *err);
    /* a file's content is complete (rx->fd holds it) */
    int (*finish_file)(apply_rx *rx, sbx_err *err);
    /* content was written to the current file (the host's quota check) */
    void (*wrote)(apply_rx *rx);
    /* DELTA_END, its counts checked (the host's commit) */
    void (*end)(apply_rx *rx);
    /* the delta is dropped (apply_abort): what was staged goes */
    void (*clear)(apply_rx *rx);
};

struct apply_rx {
    mf_tree *t;
    apply_role role;
    apply_limits lim;
    mf_warn_fn warn;
    void *wctx;
    mf_pathmap *inflight;
    mode_t umask;

    bool active;
    uint64_t seq, acked;
    uint64_t entries, bytes;
    uint64_t done_entries, done_bytes;

    /* the entry whose content is arriving */
    bool in_entry, skip, direct;
    uint8_t e_op, e_type;
    uint16_t e_root;
    bool e_exec;
    int64_t e_mtime;
    char *e_path;
    size_t e_path_len;
    uint64_t left;
    uint64_t e_data;       /* REG: data bytes received (holes excluded), for max_file_size */
    uint64_t e_size;       /* REG: its size (a trailing hole is made by ftruncate) */
    bool e_hole;           /* a HOLE came: seeked over, so the end needs ftruncate */
    int fd;
    mf_hasher hs;
    char tmp[96];
    uint32_t e_idx;

    /* agent: parent directory cache */
    int dir_fd;
    uint16_t dir_root;
    strbuf dir_path;

    /* host: staging and the ops to commit */
    int *stage_fd;
    char **stage_name;
    staged *ops;
    size_t nops, aops;
    uint32_t next_idx;
    dir_rename *renames;
    size_t nrenames, arenames;

    /* host: the disk quota (see apply_limits) and a refused delta: once refused, its
     * remaining frames are checked as usual but nothing is staged, and DELTA_END commits
     * nothing. */
    uint64_t stage_cost;   /* what this delta's finished puts cost the disk quota */
    uint64_t stage_puts;   /* its puts so far, for the entry quota */
    bool refused;
    sync_quota refused_quota;
    char refusal[512];

    /* host: a directory (root, path) whose chain from the root was found free of
     * repository shapes during this commit (see repo_shape_refusal()) */
    /* host: the session's undo journal (journal.h), or NULL; it saves what each commit
     * replaces or deletes */
    struct jnl *journal;

    bool shape_ok_valid;
    uint16_t shape_ok_root;
    strbuf shape_ok;
};

/* apply.c: shared by both sides */
bool apply_is_code_index(apply_rx *rx, uint16_t root, const char *path, size_t len);
int64_t apply_index_mtime(int64_t received, const struct stat *local);
void apply_warnf(apply_rx *rx, const char *fmt, ...) SBX_PRINTF(2, 3);
const char *apply_shown(const char *p, size_t len, char *buf, size_t bufsz);
void apply_close_dir_cache(apply_rx *rx);
void apply_drop_entry(apply_rx *rx);

#endif
