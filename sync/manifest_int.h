/*
 * The manifest's insides, shared by its files (private to sync/manifest*.c):
 *   manifest.c          the tree: hashing, nodes, roots, recording what was applied;
 *   manifest_watch.c    inotify: watches, and the dirty names an event adds;
 *   manifest_scan.c     scanning: a stat walk (whole, or over the dirty names) that emits the
 *                       delta;
 *   manifest_save.c     persistence: the tree as a file, and loading it back;
 *   manifest_pathmap.c  the (root, path) -> u64 map of paths in flight.
 * Functions here that are not in manifest.h are the tree's internals: callers outside these
 * files use manifest.h only.
 */
#ifndef SBX_SYNC_MANIFEST_INT_H
#define SBX_SYNC_MANIFEST_INT_H

#include "sync/fsmonitor.h"
#include "sync/manifest.h"
#include "sync/safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A file whose ctime is this close to the time we record it may still change within the same
 * timestamp tick without its stat changing: we keep a content hash for it ("racy"). */
#define RACY_WINDOW_NS (50 * 1000000LL)
/* More pending inotify names than this and a full walk is cheaper. */
#define MAX_DIRTY 65536

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | \
                    IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | \
                    IN_EXCL_UNLINK)

typedef struct dirty_ent {
    uint16_t root;
    char *dir;            /* relative path of the directory ("" for the base) */
    char *name;           /* the entry in it */
} dirty_ent;

typedef struct wd_slot {
    int wd;               /* 0: empty, -1: deleted */
    mf_node **nodes;      /* every node this watch serves: a directory can be reached by two
                           * roots (two task files in one directory), or seen at its old and
                           * new path while a move is being scanned */
    size_t nnodes;
} wd_slot;

struct mf_tree {
    mf_root *roots;
    size_t nroots;
    ign_list *global;
    uint64_t config_id;

    int ifd;              /* inotify, or -1 */
    bool need_full;
    wd_slot *wds;
    size_t nwds, awds;    /* used (incl. deleted) and capacity (a power of two) */
    dirty_ent *dirty;
    size_t ndirty, adirty;
    dirty_ent *pending;   /* files recorded since the last mf_seal() (dir = the path) */
    size_t npending, apending;
    fsm_state *fsm;       /* told every event, excluded directory and scan (or NULL) */
};

/* The functions the files share, by the file that defines them; each one's lead comment is at
 * its definition. */

/* ---- manifest.c ---------------------------------------------------------------------------- */
uint64_t mf_hash_str(uint64_t h, const void *s, size_t len);
void mf_kid_insert(mf_node *dir, uint32_t pos, mf_node *n);
uint32_t mf_kid_pos(const mf_node *dir, const char *name, size_t len, bool *found);
void mf_kid_remove(mf_node *dir, uint32_t pos);
void mf_node_free(mf_tree *t, mf_node *n);
mf_node *mf_node_new(const char *name, size_t len, uint8_t type);
void mf_node_set_stat(mf_node *n, const struct stat *st, int64_t ref_ns);
uint8_t mf_stat_type(const struct stat *st);

/* ---- manifest_scan.c ----------------------------------------------------------------------- */
mf_node *mf_lookup_in(mf_node *top, const char *rel, size_t len);

/* ---- manifest_watch.c ---------------------------------------------------------------------- */
void mf_add_dirty(mf_tree *t, uint16_t root, const char *dir, size_t dir_len,
                  const char *name, size_t name_len);
void mf_dirty_node_entry(mf_tree *t, mf_node *n);
void mf_node_path(const mf_node *n, strbuf *out);
void mf_watch_dir(mf_tree *t, mf_node *n, int fd);
void mf_watch_off(mf_tree *t);
void mf_wd_unref(mf_tree *t, mf_node *n);

#endif
