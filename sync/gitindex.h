/*
 * `.git/index` as it arrives from the other side (sync/README.md, "The git index"): each
 * side keeps its own stat data.
 *
 * An index entry is content (name, stage, mode, object id, flags) plus the stat data of the
 * work-tree file as git last saw it on that side (ctime, mtime, dev, ino, uid, gid, size).
 * Stat data is meaningless on the other side (other inodes, ctimes, devices), so git there
 * would take every entry for changed and re-read every file. So a received index is merged
 * with the receiving side's own before it takes its place:
 *   - an entry whose name, stage, mode and object id equal an entry of the receiving side's
 *     index keeps that entry's stat data (it already says what this side's file is), but
 *     racily clean there (its mtime not older than that index file's: git's
 *     is_racy_timestamp()) gets size 0, as git's ce_smudge_racily_clean_entry() does, so git
 *     compares its content once;
 *   - any other entry gets no stat data at all (zeros, as `git update-index --cacheinfo`
 *     leaves one): git compares its content once, as it would after a change it made;
 *   - the extensions that describe one side's file system go (FSMN, the fsmonitor's token
 *     and bitmap; UNTR, the untracked cache's directory stat data), EOIE is recomputed
 *     over what stays, the rest (TREE, REUC, sdir, IEOT, unknown ones) stays as it came;
 *   - the trailing checksum is recomputed (SHA-1 or SHA-256, whichever the received file's
 *     checksum is; a null checksum, index.skipHash, stays null).
 * The received bytes are hostile on the host: every length and offset is checked, nothing
 * is trusted beyond what git itself would read. An index this does not understand (another
 * version, a split index's `link`, a bad checksum, anything malformed) is left as it is.
 */
#ifndef SBX_SYNC_GITINDEX_H
#define SBX_SYNC_GITINDEX_H

#include "common/strbuf.h"

#include <stddef.h>
#include <stdint.h>

/* Larger indexes (some 500,000 entries) are left as they are. */
#define GITINDEX_MERGE_MAX (64u * 1024 * 1024)

typedef struct gitindex_stats {
    uint32_t entries;     /* in the result */
    uint32_t kept;        /* with this side's stat data */
    uint32_t smudged;     /* of those, racily clean here: size 0 */
    uint32_t cleared;     /* with no stat data */
    uint32_t dropped;     /* extensions dropped (FSMN, UNTR) */
} gitindex_stats;

/*
 * Merges the received index `in` with this side's `local` (NULL or unparsable: none),
 * whose file's mtime is local_mtime_sec (its entries with an mtime at or after it are racily
 * clean). Returns 1 with the result in out (replacing what out held), or 0 when `in` is not
 * an index this merges (out is then empty and `in` should be used as it is).
 */
int gitindex_merge(const void *in, size_t in_len, const void *local, size_t local_len,
                   int64_t local_mtime_sec, strbuf *out, gitindex_stats *stats);

#endif
