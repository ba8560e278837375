/*
 * The manifest: one side's view of its synced trees as of the last sync, and the scan that
 * turns what changed since into a delta (a list of operations).
 *
 * A manifest is a tree of nodes per root, children sorted by name, each with what a stat
 * walk sees (type, mode, size, mtime and ctime in ns, inode) and, for files whose timestamps
 * are too recent to be trusted ("racy", as in git's index), a content hash. A scan compares
 * the disk with the tree, updates the tree to the disk, and emits PUT/DELETE operations in an
 * order a receiver can apply one by one: a directory before what it contains, the contents
 * of a deleted directory before the directory.
 *
 * Scans are full stat walks (like `git status` without the index), or, when inotify works,
 * visit only the directories and names that had events since the last scan; a queue
 * overflow, or any watch that cannot be added, falls back to a full walk.
 *
 * Roots (wire_root): a code directory (everything below it), a sync path (a base directory
 * and a glob pattern of components; a matching directory brings everything below it), or a
 * task file (a base directory and one name). Excludes apply to every root: global patterns,
 * then each directory's .sbxignore (gitignore semantics, ignore.h).
 */
#ifndef SBX_SYNC_MANIFEST_H
#define SBX_SYNC_MANIFEST_H

#include "common/strbuf.h"
#include "common/util.h"
#include "sync/ignore.h"
#include "sync/wire.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

enum mf_type { MF_REG = WIRE_REG, MF_DIR = WIRE_DIR, MF_LNK = WIRE_LNK, MF_OTHER = 9 };
/* MF_UNREADABLE: the file could not be opened to be sent and the user was told so (once
 * per file: a later change that leaves it unreadable says nothing more). */
enum { MF_RACY = 1, MF_HASHED = 2, MF_UNREADABLE = 4 };

typedef struct mf_node mf_node;
struct mf_node {
    mf_node *parent;
    mf_node **kids;       /* directories: sorted by name */
    uint32_t nkids, akids;
    uint64_t size;
    int64_t mtime_ns, ctime_ns;
    uint64_t ino;
    uint64_t hash;        /* content hash, valid with MF_HASHED */
    uint32_t mode;        /* st_mode */
    uint8_t type;         /* mf_type */
    uint8_t flags;
    int wd;               /* inotify watch of a directory, or -1 */
    ign_list *ign;        /* rules of this directory's .sbxignore */
    uint16_t root;        /* the root index (top nodes only matter) */
    uint16_t name_len;
    char name[];
};

typedef struct mf_root {
    uint8_t kind;         /* WIRE_ROOT_* */
    char *base;           /* absolute directory path on this side */
    char *pattern;        /* as configured ("" for a code directory) */
    char **pat;           /* pattern split into components */
    size_t npat;
    bool scanned;         /* this side scans it (an agent never scans task files) */
    int fd;               /* O_PATH directory fd of base, or -1 */
    mf_node *top;         /* the base directory */
} mf_root;

typedef struct mf_op {
    uint8_t op;           /* WIRE_OP_PUT / WIRE_OP_DELETE */
    uint8_t type;         /* MF_REG / MF_DIR / MF_LNK */
    uint16_t root;
    bool exec;
    uint64_t size;
    int64_t mtime_ns;
    uint64_t ino;         /* what the scan saw, to notice a file replaced before sending */
    char *path;           /* relative to the root, malloc'd */
    size_t path_len;
} mf_op;

typedef struct mf_delta {
    mf_op *ops;
    size_t n, alloc;
    uint64_t bytes;       /* content bytes of the PUTs of files */
    /* Called every MF_PROGRESS_OPS operations while a scan fills the delta, so that a sender
     * can stream what is there (it must not touch the manifest meanwhile). */
    void (*progress)(void *ctx);
    void *progress_ctx;
} mf_delta;

#define MF_PROGRESS_OPS 256

typedef void (*mf_warn_fn)(void *ctx, const char *msg);

typedef struct mf_tree mf_tree;

/* A new, empty manifest over roots (copied). base paths are used as given; prefix, when not
 * NULL, is prepended to every base (the agent's --root-prefix, for tests). */
mf_tree *mf_new(const wire_root *roots, size_t nroots, const char *const *excludes,
                const size_t *exclude_lens, size_t nexcludes, const char *prefix);
void mf_free(mf_tree *t);
/* Drops every node (a first sync from scratch). */
void mf_clear(mf_tree *t);
/* Moves into dst the records of every root src has too (the same kind, base and pattern),
 * leaving src's empty: a CONFIG of the same pairing that adds or drops a root (task files a
 * later call names) keeps what the other roots knew, where starting empty took every file
 * of the sandbox for a change of its own (a conflict with each host push). Watches are
 * dropped; dst's next scan walks in full and watches again. */
void mf_adopt_roots(mf_tree *dst, mf_tree *src);
size_t mf_nroots(const mf_tree *t);
mf_root *mf_root_at(mf_tree *t, size_t i);
/* Opens (once) the root's base directory; with create, makes it (mkdir -p) when missing.
 * Returns the O_PATH fd or -1 (errno set). */
int mf_root_fd(mf_tree *t, size_t i, bool create);

/* Turns inotify on (or off). A scan after turning it on is a full walk that adds the
 * watches. Returns -1 (and leaves it off) when inotify is not available. */
int mf_watch(mf_tree *t, bool on);
/* The inotify fd to poll (-1 when off); mf_drain_events() reads what is pending, so that the
 * kernel queue does not overflow between scans. */
int mf_watch_fd(const mf_tree *t);
void mf_drain_events(mf_tree *t);
/* Tells fsm (git's fsmonitor journal, sync/fsmonitor.h; NULL: none) what the watch sees: every
 * event, every directory a scan excludes, the end of every scan, lost events. */
struct fsm_state;
void mf_set_fsmonitor(mf_tree *t, struct fsm_state *fsm);
/* Forces the next scan to be a full walk. */
void mf_invalidate(mf_tree *t);

/* Scans the roots this side scans and appends what changed to delta, updating the tree.
 * Special files (fifos, sockets, devices) are skipped without a word (kept as MF_OTHER nodes so
 * that deleting their directory still finds them). A path the wire cannot carry (over
 * SYNC_MAX_PATH bytes or SYNC_MAX_DEPTH components, a name over SYNC_MAX_NAME) is left out
 * with one warning through warn, and kept as an MF_OTHER node so it is not said again. A code
 * directory's base that cannot be opened is an error (never "everything was deleted").
 * *full is set when the scan was a whole-tree walk. */
int mf_scan(mf_tree *t, mf_delta *delta, bool *full, mf_warn_fn warn, void *ctx,
            sbx_err *err);

void mf_delta_release(mf_delta *d);

/* ---- direct access, for applying received deltas --------------------------------------- */

mf_node *mf_lookup(mf_tree *t, size_t root, const char *rel, size_t len);
/* Records path as having the stat st (after we wrote it), creating missing directory nodes
 * on the way. hash is the content hash of a file we wrote (hashed true). */
mf_node *mf_record(mf_tree *t, size_t root, const char *rel, size_t len, const struct stat *st,
                   uint64_t hash, bool hashed);
/* After a batch of mf_record(): files recorded with a ctime older than the racy window are
 * trusted by their stat from now on; the others keep being checked by content. */
void mf_seal(mf_tree *t);
/* Makes the next scan treat path as changed (a delta that carried it was lost): an existing
 * node is invalidated; a missing one comes back as a phantom of that type, so that its
 * absence on disk becomes a deletion again. */
void mf_invalidate_path(mf_tree *t, size_t root, const char *rel, size_t len, uint8_t type);
/* Forgets path and everything below it. */
void mf_forget(mf_tree *t, size_t root, const char *rel, size_t len);
/* Whether the disk entry st (NULL: absent) differs from node (NULL: not in the manifest).
 * dirfd/name locate it to hash a racy file's content. */
bool mf_changed(const mf_node *node, const struct stat *st, int dirfd, const char *name);
/* Whether rel is excluded under root i (by the global excludes and the .sbxignore files the
 * manifest knows along the path). */
bool mf_excluded(mf_tree *t, size_t root, const char *rel, size_t len, bool is_dir);
/* Whether rel lies inside root i's pattern (always true for a code directory); *partial is
 * set when rel is an intermediate directory of the pattern (it must be a directory). */
bool mf_in_pattern(const mf_tree *t, size_t root, const char *rel, size_t len, bool *partial);

/* ---- persistence ------------------------------------------------------------------------ */

/* Saves the tree with a caller header (pair id, sequence numbers) to path (temp + rename). */
int mf_save(mf_tree *t, const char *path, uint64_t pair_id, uint64_t seq_a, uint64_t seq_b,
            sbx_err *err);
/* Loads path into t (which must be empty and have the same roots and excludes, else the
 * file is ignored: returns 0 with *loaded false). */
int mf_load(mf_tree *t, const char *path, uint64_t *pair_id, uint64_t *seq_a,
            uint64_t *seq_b, bool *loaded, sbx_err *err);
/* Reads only a state file's header (checksum verified): *ok false when missing or bad. */
void mf_peek(const char *path, uint64_t *pair_id, uint64_t *seq_a, uint64_t *seq_b, bool *ok);
/* Number of entries, and a fingerprint of the roots and excludes (what a state file must
 * match). */
size_t mf_count(const mf_tree *t);
uint64_t mf_config_id(const mf_tree *t);

/* ---- content hashing -------------------------------------------------------------------- */

typedef struct mf_hasher {
    uint64_t h;
    uint64_t len;
    uint8_t tail[8];
    unsigned ntail;
} mf_hasher;
void mf_hash_init(mf_hasher *hs);
void mf_hash_update(mf_hasher *hs, const void *data, size_t len);
uint64_t mf_hash_final(mf_hasher *hs);
/* Hashes a whole open file (from offset 0); -1 on a read error. */
int mf_hash_fd(int fd, uint64_t *out);

/* Wall clock in ns (file timestamps' clock). */
int64_t mf_now_ns(void);

/* ---- a map from (root, path) to a number: the host's pushes not yet acknowledged -------- */
typedef struct mf_pathmap mf_pathmap;
mf_pathmap *mf_pathmap_new(void);
void mf_pathmap_free(mf_pathmap *m);
void mf_pathmap_set(mf_pathmap *m, unsigned root, const char *path, size_t len, uint64_t v);
uint64_t mf_pathmap_get(const mf_pathmap *m, unsigned root, const char *path, size_t len);
/* Removes entries whose value is <= upto. */
void mf_pathmap_prune(mf_pathmap *m, uint64_t upto);
size_t mf_pathmap_count(const mf_pathmap *m);

#endif
