/* Receiving a delta: direct on the agent, checked and transactional on the host; see
 * delta.h. */
#include "sync/delta.h"
#include "sync/gitcred.h"
#include "sync/gitindex.h"
#include "sync/gitpolicy.h"
#include "sync/safefs.h"
#include "common/fsat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct staged {
    uint8_t op, type;
    uint16_t root;
    bool exec;
    int64_t mtime_ns;
    char *path;
    size_t path_len;
    uint32_t idx;          /* name in the root's staging directory (REG, LNK) */
    uint64_t hash;
    uint64_t alloc;        /* PUT: what the entry costs the disk quota (entry_cost()) */
} staged;

typedef struct dir_rename {
    uint16_t root;
    char *from, *to;       /* a sandbox directory put aside under a conflict name */
} dir_rename;

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
    bool shape_ok_valid;
    uint16_t shape_ok_root;
    strbuf shape_ok;
};

/* Whether (root, path) is a code directory's own .git/index, which arrives merged with the
 * receiving side's (gitindex.h). */
static bool is_code_index(apply_rx *rx, uint16_t root, const char *path, size_t len)
{
    return root < mf_nroots(rx->t) && mf_root_at(rx->t, root)->kind == WIRE_ROOT_CODE &&
           len == 10 && !memcmp(path, ".git/index", 10);
}

/* The merged index's mtime: the later of the received file's and this side's index's. Any
 * works (gitindex.h: every entry a racy check could miss is smudged or cleared), and the
 * later one leaves git the fewest racily clean entries to compare. */
static int64_t index_mtime(int64_t received, const struct stat *local)
{
    int64_t l = local ? sf_stat_mtime(local) : 0;
    return l > received ? l : received;
}

/* A warning through the caller's callback: every refusal is one, and the rest applies. */
static void warnf(apply_rx *rx, const char *fmt, ...) SBX_PRINTF(2, 3);
static void warnf(apply_rx *rx, const char *fmt, ...)
{
    va_list ap;
    char *msg;
    strbuf sb = STRBUF_INIT;
    if (!rx->warn)
        return;
    va_start(ap, fmt);
    strbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    msg = strbuf_detach(&sb, NULL);
    rx->warn(rx->wctx, msg);
    free(msg);
}

/* A path from the sandbox, printable: what warnings show. */
static const char *shown(const char *p, size_t len, char *buf, size_t bufsz)
{
    wire_sanitize(buf, bufsz, p, len);
    return buf;
}

mode_t apply_file_mode(const struct stat *cur, bool exec)
{
    static mode_t mask = (mode_t)-1;
    mode_t m;
    if (mask == (mode_t)-1) {
        mask = umask(022);
        umask(mask);
    }
    if (cur && S_ISREG(cur->st_mode))
        m = cur->st_mode & 0666;
    else
        m = 0666 & ~mask;
    if (exec)
        m |= (m & 0444) >> 2;
    return m & 0777;
}

apply_rx *apply_new(mf_tree *t, apply_role role, const apply_limits *lim, mf_warn_fn warn,
                    void *wctx)
{
    apply_rx *rx = xcalloc(1, sizeof(*rx));
    size_t n = mf_nroots(t);
    rx->t = t;
    rx->role = role;
    if (lim)
        rx->lim = *lim;
    if (!rx->lim.max_file_size)
        rx->lim.max_file_size = UINT64_MAX;
    if (!rx->lim.max_bytes)
        rx->lim.max_bytes = UINT64_MAX;
    if (!rx->lim.max_entries)
        rx->lim.max_entries = UINT64_MAX;
    rx->warn = warn;
    rx->wctx = wctx;
    rx->fd = -1;
    rx->dir_fd = -1;
    strbuf_init(&rx->dir_path, 0);
    strbuf_init(&rx->shape_ok, 0);
    rx->stage_fd = xcalloc(n ? n : 1, sizeof(int));
    rx->stage_name = xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        rx->stage_fd[i] = -1;
    apply_file_mode(NULL, false);   /* reads the umask once */
    return rx;
}

void apply_set_inflight(apply_rx *rx, mf_pathmap *inflight)
{
    rx->inflight = inflight;
}

uint64_t apply_seq(const apply_rx *rx)
{
    return rx->seq;
}

bool apply_active(const apply_rx *rx)
{
    return rx->active;
}

void apply_stats(const apply_rx *rx, uint64_t *entries, uint64_t *bytes)
{
    *entries = rx->done_entries;
    *bytes = rx->done_bytes;
}

/* The agent keeps the parent directory of the last entry open (deltas come sorted, so the
 * next entry is usually beside it); this forgets it. */
static void close_dir_cache(apply_rx *rx)
{
    if (rx->dir_fd >= 0)
        close(rx->dir_fd);
    rx->dir_fd = -1;
    strbuf_reset(&rx->dir_path);
}

/* Drops the current entry's partial file. */
static void drop_entry(apply_rx *rx)
{
    if (rx->fd >= 0) {
        close(rx->fd);
        rx->fd = -1;
        if (rx->role == APPLY_AGENT && rx->dir_fd >= 0)
            unlinkat(rx->dir_fd, rx->tmp, 0);
        else if (rx->role == APPLY_HOST && rx->stage_fd[rx->e_root] >= 0)
            unlinkat(rx->stage_fd[rx->e_root], rx->tmp, 0);
    }
    free(rx->e_path);
    rx->e_path = NULL;
    rx->in_entry = rx->skip = rx->direct = false;
    rx->left = 0;
}

/* Removes every root's staging directory with what is still in it (all of it after an
 * abort or a refusal, what a commit left otherwise) and forgets the staged ops. */
static void clear_staging(apply_rx *rx)
{
    size_t n = mf_nroots(rx->t);
    for (size_t i = 0; i < n; i++) {
        if (rx->stage_fd[i] < 0)
            continue;
        close(rx->stage_fd[i]);
        rx->stage_fd[i] = -1;
        {
            int rfd = mf_root_fd(rx->t, i, false);
            if (rfd >= 0)
                sbx_rm_beneath(rfd, rx->stage_name[i]);
        }
        free(rx->stage_name[i]);
        rx->stage_name[i] = NULL;
    }
    for (size_t i = 0; i < rx->nops; i++)
        free(rx->ops[i].path);
    rx->nops = 0;
    for (size_t i = 0; i < rx->nrenames; i++) {
        free(rx->renames[i].from);
        free(rx->renames[i].to);
    }
    rx->nrenames = 0;
}

void apply_abort(apply_rx *rx)
{
    drop_entry(rx);
    clear_staging(rx);
    close_dir_cache(rx);
    mf_seal(rx->t);
    rx->active = false;
    rx->refused = false;
}

/* ---- host: refusing a delta as a whole (quota, interruption) ------------------------------ */

/* Refuses the delta as a whole (the first reason wins): the stage goes at once, the rest
 * of the delta is read and checked but nothing is staged, and DELTA_END commits nothing. */
static void refuse(apply_rx *rx, sync_quota quota, const char *fmt, ...) SBX_PRINTF(3, 4);
static void refuse(apply_rx *rx, sync_quota quota, const char *fmt, ...)
{
    bool in = rx->in_entry;
    uint64_t left = rx->left;
    va_list ap;
    if (rx->refused)
        return;
    va_start(ap, fmt);
    vsnprintf(rx->refusal, sizeof(rx->refusal), fmt, ap);
    va_end(ap);
    rx->refused = true;
    rx->refused_quota = quota;
    /* Nothing staged survives: the stage directories go now, not at DELTA_END. */
    drop_entry(rx);
    clear_staging(rx);
    if (in) {
        /* The rest of this entry's content is still to come: read and dropped. */
        rx->in_entry = rx->skip = true;
        rx->left = left;
    }
}

bool apply_refuse(apply_rx *rx, const char *why)
{
    /* A delta refused already is only being read to its end: nothing is written, and it
     * belongs to a round whose client was answered; the caller's own pull is yet to come. */
    if (!rx->active || rx->role != APPLY_HOST || rx->refused)
        return false;
    refuse(rx, SYNC_QUOTA_NONE, "%s", why);
    return true;
}

const char *apply_refusal(const apply_rx *rx, sync_quota *quota)
{
    if (quota)
        *quota = rx->refused_quota;
    return rx->refused ? rx->refusal : NULL;
}

/* A size for a message: bytes under 1 MiB, else MiB with one decimal. */
static void human_size(char *buf, size_t n, int64_t v)
{
    if (v >= 0 && v < 1024 * 1024)
        snprintf(buf, n, "%lld bytes", (long long)v);
    else
        snprintf(buf, n, "%.1f MiB", (double)v / (1024.0 * 1024.0));
}

/* Whether staging entries that cost `more` bytes on top of what the session's pulls already
 * use goes over the disk quota; if so, the delta is refused. */
static bool over_quota(apply_rx *rx, uint64_t more)
{
    int64_t used = rx->lim.disk_used ? *rx->lim.disk_used : 0;
    char a[32], b[32];
    if (!rx->lim.max_disk || (double)used + (double)more <= (double)rx->lim.max_disk)
        return false;
    human_size(a, sizeof(a), used > 0 ? used : 0);
    human_size(b, sizeof(b), (int64_t)rx->lim.max_disk);
    refuse(rx, SYNC_QUOTA_DISK, "the sandbox's changes were not applied: with them, what this "
           "session's pulls wrote on the host would exceed its disk quota of %s (they use %s "
           "now; every file, directory and symlink counts at least %d bytes); the host tree is "
           "as it was, and the sandbox keeps its files", b, a, SYNC_ENTRY_COST);
    return true;
}

/* Whether `more` new entries on top of what the session's pulls already made go over the
 * entry quota; if so, the delta is refused. The attack it stops: a pull of a million empty
 * files or directories, which cost the host inodes whatever their size. */
static bool over_files(apply_rx *rx, uint64_t more)
{
    int64_t used = rx->lim.files_used ? *rx->lim.files_used : 0;
    if (!rx->lim.max_files || (double)used + (double)more <= (double)rx->lim.max_files)
        return false;
    refuse(rx, SYNC_QUOTA_FILES, "the sandbox's changes were not applied: with them, this "
           "session's pulls would have made more than %llu files, directories and symlinks on "
           "the host, its entry quota (they made %lld so far, this pull brings at least %llu); "
           "the host tree is as it was, and the sandbox keeps its files",
           (unsigned long long)rx->lim.max_files, (long long)(used > 0 ? used : 0),
           (unsigned long long)more);
    return true;
}

/* A commit installed or removed entries: the session's totals follow (bytes allocated,
 * entries made). */
static void account(apply_rx *rx, int64_t bytes, int64_t entries)
{
    if (rx->lim.disk_used)
        *rx->lim.disk_used += bytes;
    if (rx->lim.files_used)
        *rx->lim.files_used += entries;
}

/* What an entry of st's size costs the disk quota: its allocated bytes (holes are free),
 * and at least SYNC_ENTRY_COST whatever its type (an empty file, a directory, a symlink
 * cost the host an inode and a directory entry). */
static int64_t entry_cost(int64_t allocated_bytes)
{
    return allocated_bytes > SYNC_ENTRY_COST ? allocated_bytes : SYNC_ENTRY_COST;
}

/* What a host entry costs the quota (what deleting or replacing it frees). */
static int64_t allocated(const struct stat *st)
{
    return entry_cost((int64_t)st->st_blocks * 512);
}

void apply_free(apply_rx *rx)
{
    if (!rx)
        return;
    apply_abort(rx);
    strbuf_release(&rx->dir_path);
    strbuf_release(&rx->shape_ok);
    free(rx->stage_fd);
    free(rx->stage_name);
    free(rx->ops);
    free(rx->renames);
    free(rx);
}

int apply_begin(apply_rx *rx, uint64_t seq, uint64_t acked, sbx_err *err)
{
    if (rx->active)
        return sbx_errf(err, "DELTA_BEGIN inside a delta");
    rx->active = true;
    rx->seq = seq;
    rx->acked = acked;
    rx->entries = rx->bytes = 0;
    rx->next_idx = 0;
    rx->stage_cost = rx->stage_puts = 0;
    rx->refused = false;
    rx->refused_quota = SYNC_QUOTA_NONE;
    rx->refusal[0] = '\0';
    return 0;
}

/* ---- agent: apply as it comes -------------------------------------------------------------- */

/* The directory an entry goes in, opened beneath its root without following a symlink and
 * made as needed (the agent trusts the host's delta but not its own tree's symlinks), with
 * *name its last component; cached for the next entry. Returns the fd (owned by the cache)
 * or -1 with err. */
static int agent_parent(apply_rx *rx, uint16_t root, const char *path, size_t len,
                        const char **name, sbx_err *err)
{
    size_t dlen;
    int rfd;
    sf_split(path, len, &dlen, name);
    if (rx->dir_fd >= 0 && rx->dir_root == root && rx->dir_path.len == dlen &&
        !memcmp(rx->dir_path.buf, path, dlen))
        return rx->dir_fd;
    close_dir_cache(rx);
    rfd = mf_root_fd(rx->t, root, true);
    if (rfd < 0)
        return sbx_errno(err, "cannot open %s", mf_root_at(rx->t, root)->base);
    rx->dir_fd = sf_open_dir(rfd, path, dlen, true, err);
    if (rx->dir_fd < 0)
        return -1;
    rx->dir_root = root;
    strbuf_add(&rx->dir_path, path, dlen);
    return rx->dir_fd;
}

/* The manifest records what was just written (its stat, and its hash when known), so the
 * next scan does not send it back. */
static void record_at(apply_rx *rx, int dfd, const char *name, uint64_t hash, bool hashed)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        mf_record(rx->t, rx->e_root, rx->e_path, rx->e_path_len, &st, hash, hashed);
}

/* sf_conflict_place's place(): the entry ctx names, renamed to cname, never over another. */
static int place_by_rename(int dfd, const char *cname, void *ctx)
{
    return sf_rename_noreplace(dfd, (const char *)ctx, dfd, cname);
}

/* ... a directory made at cname (mkdirat fails with EEXIST on a taken name). */
static int place_dir(int dfd, const char *cname, void *ctx)
{
    (void)ctx;
    return mkdirat(dfd, cname, 0755);
}

/* The sandbox's own version of the path is in the way and differs: rename it aside. */
static void agent_put_aside(apply_rx *rx, int dfd, const char *name)
{
    char cname[NAME_MAX + 1];
    if (sf_conflict_place(dfd, name, cname, sizeof(cname), place_by_rename, (void *)name) == 0) {
        if (rx->dir_fd == dfd && rx->e_type == MF_DIR)
            close_dir_cache(rx);
        warnf(rx, "conflict: %s/%s changed both in the sandbox and on the host; kept the host's "
              "version, the sandbox's is now %s", mf_root_at(rx->t, rx->e_root)->base,
              rx->e_path, cname);
    }
}

/* Whether the sandbox changed path since the last sync, and its version differs from the
 * incoming one (so it must be kept aside). */
static bool agent_must_keep(apply_rx *rx, int dfd, const char *name, const struct stat *cur,
                            const char *incoming_target, int incoming_fd)
{
    mf_node *node = mf_lookup(rx->t, rx->e_root, rx->e_path, rx->e_path_len);
    if (S_ISDIR(cur->st_mode))
        return rx->e_type != MF_DIR;
    if (!mf_changed(node, cur, dfd, name))
        return false;
    if (rx->e_type == MF_REG && S_ISREG(cur->st_mode) && incoming_fd >= 0) {
        int cfd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        int same = cfd >= 0 ? sf_same_content(cfd, incoming_fd) : 0;
        if (cfd >= 0)
            close(cfd);
        return same != 1;
    }
    if (rx->e_type == MF_LNK && S_ISLNK(cur->st_mode) && incoming_target) {
        char t[SYNC_MAX_LINK + 1];
        ssize_t n = readlinkat(dfd, name, t, sizeof(t) - 1);
        return !(n >= 0 && (size_t)n == strlen(incoming_target) &&
                 !memcmp(t, incoming_target, (size_t)n));
    }
    return true;
}

/* Whether the sandbox's entry st at rel is what the agent last sent the host, or tried to:
 * a file it could not read keeps its recorded stat (it may stay "racy" for good, never
 * hashed, which mf_changed() takes for a change). */
static bool agent_unchanged(apply_rx *rx, uint16_t root, const char *rel, size_t len,
                            const struct stat *st, int dfd, const char *name)
{
    mf_node *n = mf_lookup(rx->t, root, rel, len);
    if (!n)
        return false;
    if ((n->flags & MF_UNREADABLE) && S_ISREG(st->st_mode) && n->type == MF_REG)
        return n->size == (uint64_t)st->st_size && n->mtime_ns == sf_stat_mtime(st) &&
               n->ctime_ns == sf_stat_ctime(st) && n->ino == (uint64_t)st->st_ino &&
               n->mode == st->st_mode;
    return !mf_changed(n, st, dfd, name);
}

/*
 * The host deleted directory rel (dfd), and the deletions of what it knew in it have been
 * applied, but the directory is not empty: it holds what the host never had. The host's
 * `rm -rf` means all of it: special files (fifos, sockets: no data, never synced), files
 * the agent could not read, excluded paths, and whatever the agent sent and the host has
 * since dropped. What the sandbox changed since its last scan (a file written or made
 * meanwhile) stays, with the directories that lead to it, and syncs back as a change.
 * Returns true when the directory is empty afterwards.
 */
static bool agent_clear_unsynced(apply_rx *rx, uint16_t root, int dfd, strbuf *rel, int depth)
{
    DIR *d;
    struct dirent *de;
    bool empty = true;
    int fd = dup(dfd);

    if (fd < 0 || depth > SYNC_MAX_DEPTH || !(d = fdopendir(fd))) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    while ((de = readdir(d))) {
        size_t old = rel->len;
        struct stat st;
        bool gone = false;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        strbuf_addch(rel, '/');
        strbuf_addstr(rel, de->d_name);
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            gone = errno == ENOENT;
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            bool known = mf_lookup(rx->t, root, rel->buf, rel->len) ||
                         mf_excluded(rx->t, root, rel->buf, rel->len, true);
            if (sub >= 0) {
                /* A directory made since the last scan stays (even empty): it is news. */
                if (agent_clear_unsynced(rx, root, sub, rel, depth + 1) && known)
                    gone = unlinkat(dfd, de->d_name, AT_REMOVEDIR) == 0;
                close(sub);
            }
        } else if ((!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) ||
                   mf_excluded(rx->t, root, rel->buf, rel->len, false) ||
                   agent_unchanged(rx, root, rel->buf, rel->len, &st, dfd, de->d_name)) {
            gone = unlinkat(dfd, de->d_name, 0) == 0;
        }
        empty = empty && gone;
        strbuf_setlen(rel, old);
    }
    closedir(d);
    return empty;
}

/* The host's .git/index, complete in the temporary file fd, merged with the sandbox's own
 * at dfd/name (cur: its stat, or NULL when there is none) so that it keeps the sandbox's stat
 * data (gitindex.h); *hash becomes the merged file's. The host is trusted, but the sandbox's
 * own index is whatever the sandbox made of it: both go through the same checked parser.
 * Anything it does not understand is left as the host sent it. */
static int agent_merge_index(apply_rx *rx, int dfd, const char *name, const struct stat *cur,
                             uint64_t *hash)
{
    strbuf got = STRBUF_INIT, mine = STRBUF_INIT, merged = STRBUF_INIT;
    int ret = 0;
    int lfd = cur && S_ISREG(cur->st_mode)
                  ? openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
    if (lfd >= 0 && strbuf_read_fd(&mine, lfd, GITINDEX_MERGE_MAX) < 0)
        strbuf_reset(&mine);
    if (lseek(rx->fd, 0, SEEK_SET) == 0 && strbuf_read_fd(&got, rx->fd, GITINDEX_MERGE_MAX) == 0 &&
        gitindex_merge(got.buf, got.len, lfd >= 0 && mine.len ? mine.buf : NULL, mine.len,
                       cur ? (int64_t)cur->st_mtime : 0, &merged, NULL)) {
        if (ftruncate(rx->fd, 0) == 0 && lseek(rx->fd, 0, SEEK_SET) == 0 &&
            write_full(rx->fd, merged.buf, merged.len) == 0) {
            mf_hasher hs;
            mf_hash_init(&hs);
            mf_hash_update(&hs, merged.buf, merged.len);
            *hash = mf_hash_final(&hs);
            rx->e_mtime = index_mtime(rx->e_mtime, lfd >= 0 ? cur : NULL);
        } else {
            warnf(rx, "cannot write %s/%s in the sandbox: %s", mf_root_at(rx->t, rx->e_root)->base,
                  rx->e_path, strerror(errno));
            ret = -1;
        }
    }
    if (lfd >= 0)
        close(lfd);
    strbuf_release(&got);
    strbuf_release(&mine);
    strbuf_release(&merged);
    return ret;
}

/* The sandbox side's end of one file from the host: the content is complete, so
 * it takes its place. A file written in place (direct) needs only its mtime; one
 * written to a temporary name replaces what is there by rename, unless what is there
 * changed in the sandbox since the last round (agent_must_keep): then that is put
 * aside first, so that nothing the sandbox wrote is lost. The manifest records what
 * was applied, so the next scan does not send it back. */
static int agent_finish_file(apply_rx *rx, sbx_err *err)
{
    const char *name;
    struct stat cur;
    bool have_cur;
    int dfd;
    uint64_t hash = mf_hash_final(&rx->hs);

    if (rx->direct) {
        /* Created in place with its mode: only the mtime is left, and the record. */
        struct stat st;
        sf_set_mtime(rx->fd, rx->e_mtime);
        if (fstat(rx->fd, &st) == 0)
            mf_record(rx->t, rx->e_root, rx->e_path, rx->e_path_len, &st, hash, true);
        close(rx->fd);
        rx->fd = -1;
        free(rx->e_path);
        rx->e_path = NULL;
        rx->in_entry = rx->direct = false;
        return 0;
    }
    dfd = agent_parent(rx, rx->e_root, rx->e_path, rx->e_path_len, &name, err);
    if (dfd < 0)
        return -1;
    have_cur = fstatat(dfd, name, &cur, AT_SYMLINK_NOFOLLOW) == 0;
    if (is_code_index(rx, rx->e_root, rx->e_path, rx->e_path_len) &&
        agent_merge_index(rx, dfd, name, have_cur ? &cur : NULL, &hash) < 0) {
        /* Half written: the sandbox keeps its index. */
        unlinkat(dfd, rx->tmp, 0);
        close(rx->fd);
        rx->fd = -1;
        free(rx->e_path);
        rx->e_path = NULL;
        rx->in_entry = rx->direct = false;
        return 0;
    }
    sf_set_mtime(rx->fd, rx->e_mtime);
    fchmod(rx->fd, apply_file_mode(have_cur ? &cur : NULL, rx->e_exec));
    if (have_cur && agent_must_keep(rx, dfd, name, &cur, NULL, rx->fd))
        agent_put_aside(rx, dfd, name);
    else if (have_cur && S_ISDIR(cur.st_mode))
        agent_put_aside(rx, dfd, name);
    if (renameat(dfd, rx->tmp, dfd, name) < 0) {
        warnf(rx, "cannot write %s/%s in the sandbox: %s", mf_root_at(rx->t, rx->e_root)->base,
              rx->e_path, strerror(errno));
        unlinkat(dfd, rx->tmp, 0);
    }
    close(rx->fd);
    rx->fd = -1;
    record_at(rx, dfd, name, hash, true);
    free(rx->e_path);
    rx->e_path = NULL;
    rx->in_entry = rx->direct = false;
    return 0;
}

/* The sandbox side's start of one entry from the host: a file (to a temporary name
 * beside its place, or in place when nothing is there), a directory, a symlink or a
 * deletion (only of what did not change in the sandbox since; a directory goes with
 * what was never synced in it). The host is trusted here, but the tree is the sandbox's own: every path is
 * walked by fds from the root (agent_parent), and the sandbox's newer changes are kept
 * or put aside, never overwritten. */
static int agent_entry(apply_rx *rx, const wire_entry *e, sbx_err *err)
{
    const char *name;
    struct stat cur;
    bool have_cur;
    int dfd;

    if (e->root >= mf_nroots(rx->t))
        return sbx_errf(err, "ENTRY for unknown root %u", e->root);
    if (sf_check_relpath(e->path, e->path_len, err) < 0)
        return -1;
    rx->e_op = e->op;
    rx->e_type = e->ftype;
    rx->e_root = e->root;
    rx->e_exec = (e->flags & WIRE_ENTRY_EXEC) != 0;
    rx->e_mtime = e->mtime_ns;
    rx->e_size = e->size;
    rx->e_hole = false;
    rx->e_path = xstrndup(e->path, e->path_len);
    rx->e_path_len = e->path_len;
    dfd = agent_parent(rx, e->root, rx->e_path, rx->e_path_len, &name, err);
    if (dfd < 0) {
        /* A sandbox path component in the way (a file or a symlink where the host has a
         * directory): say so, do not fail the connection. */
        warnf(rx, "cannot write %s/%s in the sandbox: %s", mf_root_at(rx->t, e->root)->base,
              rx->e_path, err->msg);
        free(rx->e_path);
        rx->e_path = NULL;
        if (e->op == WIRE_OP_PUT && e->ftype == MF_REG && e->size) {
            rx->in_entry = rx->skip = true;
            rx->left = e->size;
        }
        return 0;
    }
    /* A name the manifest knows nothing of (a first sync, a new file or directory) is
     * created at once, O_EXCL (mkdirat's EEXIST) being the check that nothing is there;
     * only when something is does it take the stat and the careful paths below. Inside
     * gVisor each system call costs tens of microseconds, and a first sync is little else
     * than these calls: this saves one of the six per file. */
    if (e->op == WIRE_OP_PUT && (e->ftype == MF_REG || e->ftype == MF_DIR) &&
        !mf_lookup(rx->t, e->root, e->path, e->path_len) &&
        !is_code_index(rx, e->root, e->path, e->path_len)) {
        if (e->ftype == MF_DIR && mkdirat(dfd, name, 0755) == 0) {
            record_at(rx, dfd, name, 0, false);
            free(rx->e_path);
            rx->e_path = NULL;
            return 0;
        }
        if (e->ftype == MF_REG) {
            rx->fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                            apply_file_mode(NULL, rx->e_exec));
            if (rx->fd >= 0) {
                mf_hash_init(&rx->hs);
                snprintf(rx->tmp, sizeof(rx->tmp), "%s", name);
                rx->direct = true;
                rx->in_entry = true;
                rx->left = e->size;
                return 0;
            }
        }
    }
    have_cur = fstatat(dfd, name, &cur, AT_SYMLINK_NOFOLLOW) == 0;

    if (e->op == WIRE_OP_DELETE) {
        mf_node *node = mf_lookup(rx->t, e->root, e->path, e->path_len);
        if (have_cur && !mf_changed(node, &cur, dfd, name)) {
            bool done = unlinkat(dfd, name, S_ISDIR(cur.st_mode) ? AT_REMOVEDIR : 0) == 0;
            if (!done && S_ISDIR(cur.st_mode) && (errno == ENOTEMPTY || errno == EEXIST)) {
                int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                strbuf rel = STRBUF_INIT;
                strbuf_add(&rel, e->path, e->path_len);
                if (sub >= 0 && agent_clear_unsynced(rx, e->root, sub, &rel, 0))
                    done = unlinkat(dfd, name, AT_REMOVEDIR) == 0;
                if (sub >= 0)
                    close(sub);
                strbuf_release(&rel);
            }
            if (done) {
                if (S_ISDIR(cur.st_mode))
                    close_dir_cache(rx);
                mf_forget(rx->t, e->root, e->path, e->path_len);
            }
        } else if (!have_cur) {
            mf_forget(rx->t, e->root, e->path, e->path_len);
        }
        /* Changed in the sandbox since the last sync: kept; it syncs back as a change. */
        free(rx->e_path);
        rx->e_path = NULL;
        return 0;
    }
    if (e->ftype == MF_DIR) {
        if (have_cur && !S_ISDIR(cur.st_mode)) {
            if (agent_must_keep(rx, dfd, name, &cur, NULL, -1))
                agent_put_aside(rx, dfd, name);
            else
                unlinkat(dfd, name, 0);
        }
        if (mkdirat(dfd, name, 0755) < 0 && errno != EEXIST)
            warnf(rx, "cannot create %s/%s in the sandbox: %s",
                  mf_root_at(rx->t, e->root)->base, rx->e_path, strerror(errno));
        record_at(rx, dfd, name, 0, false);
        free(rx->e_path);
        rx->e_path = NULL;
        return 0;
    }
    if (e->ftype == MF_LNK) {
        char target[SYNC_MAX_LINK + 1];
        memcpy(target, e->data, e->data_len);
        target[e->data_len] = '\0';
        sf_tempname(rx->tmp, sizeof(rx->tmp));
        if (symlinkat(target, dfd, rx->tmp) < 0) {
            warnf(rx, "cannot create symlink %s/%s in the sandbox: %s",
                  mf_root_at(rx->t, e->root)->base, rx->e_path, strerror(errno));
        } else {
            if (have_cur && agent_must_keep(rx, dfd, name, &cur, target, -1))
                agent_put_aside(rx, dfd, name);
            if (renameat(dfd, rx->tmp, dfd, name) < 0) {
                warnf(rx, "cannot write %s/%s in the sandbox: %s",
                      mf_root_at(rx->t, e->root)->base, rx->e_path, strerror(errno));
                unlinkat(dfd, rx->tmp, 0);
            }
            record_at(rx, dfd, name, 0, false);
        }
        free(rx->e_path);
        rx->e_path = NULL;
        return 0;
    }

    /* A regular file the manifest knows, or one whose in-place creation above failed
     * (something was there, or could not be made): written beside it and renamed over it
     * when complete (agent_finish_file). */
    mf_hash_init(&rx->hs);
    rx->fd = sf_mktemp(dfd, rx->tmp, sizeof(rx->tmp), 0600);
    if (rx->fd < 0) {
        warnf(rx, "cannot write %s/%s in the sandbox: %s", mf_root_at(rx->t, e->root)->base,
              rx->e_path, strerror(errno));
        rx->skip = true;
    }
    rx->in_entry = true;
    rx->left = e->size;
    return 0;
}

/* ---- host: check, stage, then commit ------------------------------------------------------ */

/* Why the host refuses an entry from the sandbox (NULL: it may be staged). Every rule
 * that needs only the entry: a known root that is pulled (not a task file), only the exec
 * bit, a relative path without "." or "..", no name of sbxsh's own temporaries, the .git
 * allowlists for a code directory, a sync path's pattern, and the excludes. Contents are
 * checked later, on the staged file. */
static const char *host_refusal(apply_rx *rx, const wire_entry *e, sbx_err *err)
{
    const mf_root *r;
    bool partial;
    const char *why;

    if (e->root >= mf_nroots(rx->t))
        return "unknown root";
    r = mf_root_at(rx->t, e->root);
    if (r->kind == WIRE_ROOT_TASK)
        return "task files are pushed only";
    if (r->kind == WIRE_ROOT_CREATE) {
        /* Create-only (sync/config.h): new regular files and directories; whether the host
         * has the path already is decided at the commit (create_only_commit). */
        if (e->op == WIRE_OP_PUT && e->ftype == MF_LNK)
            return "a create-only directory takes no symlink";
        if (e->flags & WIRE_ENTRY_EXEC)
            return "a create-only directory takes no executable file";
        if (e->op == WIRE_OP_PUT && e->ftype == MF_REG && e->size > SYNC_CREATE_MAX_FILE)
            return "over 4 MiB, the most a create-only directory takes in one file";
    }
    if (e->flags & ~(uint32_t)WIRE_ENTRY_EXEC)
        return "a mode the protocol does not carry (only the exec bit syncs: never setuid, "
               "setgid or sticky)";
    if (sf_check_relpath(e->path, e->path_len, err) < 0)
        return err->msg;
    for (size_t i = 0; i < e->path_len;) {
        size_t j = i;
        while (j < e->path_len && e->path[j] != '/')
            j++;
        if (sf_is_internal_name(e->path + i, j - i))
            return "a name reserved for sbxsh's temporary files";
        i = j + 1;
    }
    if (r->kind == WIRE_ROOT_CODE) {
        why = git_pull_refusal(e->path, e->path_len, e->ftype);
        if (!why && (e->flags & WIRE_ENTRY_EXEC))
            why = git_pull_exec_refusal(e->path, e->path_len);
        if (why)
            return why;
    } else {
        why = git_pull_refusal_syncpath(e->path, e->path_len);
        if (why)
            return why;
        if (!mf_in_pattern(rx->t, e->root, e->path, e->path_len, &partial))
            return "outside the sync path's pattern";
        if (partial && e->ftype != MF_DIR)
            return "outside the sync path's pattern";
    }
    if (mf_excluded(rx->t, e->root, e->path, e->path_len, e->ftype == MF_DIR))
        return "excluded from sync";
    /* max_file_size counts the data a file stores, not its holes: see content(). */
    return NULL;
}

/* The root's staging directory for this delta, made on first use: a fresh hidden directory
 * (SF_STAGE_PREFIX, mode 0700) at the root, so that committing is a rename on the same file
 * system; a holder killed mid-delta leaves it for sync_host_new() to remove. */
static int stage_dir(apply_rx *rx, uint16_t root, sbx_err *err)
{
    int rfd;
    if (rx->stage_fd[root] >= 0)
        return rx->stage_fd[root];
    rfd = mf_root_fd(rx->t, root, false);
    if (rfd < 0)
        return sbx_errno(err, "cannot open %s", mf_root_at(rx->t, root)->base);
    for (int tries = 0; tries < 100; tries++) {
        char name[96];
        snprintf(name, sizeof(name), SF_STAGE_PREFIX "%ld-%u", (long)getpid(),
                 (unsigned)(mf_now_ns() & 0xffffff) + (unsigned)tries);
        if (mkdirat(rfd, name, 0700) < 0) {
            if (errno == EEXIST)
                continue;
            return sbx_errno(err, "cannot create a staging directory in %s",
                             mf_root_at(rx->t, root)->base);
        }
        rx->stage_fd[root] = openat(rfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rx->stage_fd[root] < 0) {
            unlinkat(rfd, name, AT_REMOVEDIR);
            return sbx_errno(err, "cannot open the staging directory");
        }
        rx->stage_name[root] = xstrdup(name);
        return rx->stage_fd[root];
    }
    return sbx_errf(err, "cannot create a staging directory in %s",
                    mf_root_at(rx->t, root)->base);
}

/* The current entry becomes a staged op (its path moves to it), committed at DELTA_END. */
static staged *add_staged(apply_rx *rx)
{
    staged *s;
    XGROW(rx->ops, rx->aops, rx->nops + 1);
    s = &rx->ops[rx->nops++];
    memset(s, 0, sizeof(*s));
    s->op = rx->e_op;
    s->type = rx->e_type;
    s->root = rx->e_root;
    s->exec = rx->e_exec;
    s->mtime_ns = rx->e_mtime;
    s->path = rx->e_path;
    s->path_len = rx->e_path_len;
    s->idx = rx->e_idx;
    rx->e_path = NULL;
    return s;
}

/* An ENTRY on the host: checked (a refusal is a warning; its content is read and dropped),
 * then staged: a deletion or directory as an op, a symlink made in the stage, a file opened
 * there for the content to come. Nothing touches the host tree before the commit. */
static int host_entry(apply_rx *rx, const wire_entry *e, sbx_err *err)
{
    sbx_err why_err;
    const char *why = host_refusal(rx, e, &why_err);
    bool has_content = e->op == WIRE_OP_PUT && e->ftype == MF_REG;

    rx->e_op = e->op;
    rx->e_type = e->ftype;
    rx->e_root = e->root;
    rx->e_exec = (e->flags & WIRE_ENTRY_EXEC) != 0;
    rx->e_mtime = e->mtime_ns;
    rx->e_size = e->size;
    rx->e_data = 0;
    rx->e_hole = false;
    if (rx->refused) {
        /* The delta is refused as a whole: checked, not staged. */
        if (has_content && e->size) {
            rx->in_entry = rx->skip = true;
            rx->left = e->size;
        }
        return 0;
    }
    if (why) {
        char p[512];
        const mf_root *r = e->root < mf_nroots(rx->t) ? mf_root_at(rx->t, e->root) : NULL;
        warnf(rx, "refused a sandbox change to %s/%s: %s", r ? r->base : "?",
              shown(e->path, e->path_len, p, sizeof(p)), why);
        if (has_content && e->size) {
            rx->in_entry = rx->skip = true;
            rx->left = e->size;
        }
        return 0;
    }
    if (e->op == WIRE_OP_PUT) {
        /* Checked as the entries come, so that the stage itself never holds more entries
         * (or, below, bytes) than the quotas leave: a delta of a million empty files is
         * refused at the entry that crosses the line, not after staging them all. */
        uint64_t cost = has_content ? 0 : SYNC_ENTRY_COST;   /* a file's: at its end */
        if (over_files(rx, ++rx->stage_puts) || over_quota(rx, rx->stage_cost + cost)) {
            if (has_content && e->size) {
                rx->in_entry = rx->skip = true;
                rx->left = e->size;
            }
            return 0;
        }
    }
    rx->e_path = xstrndup(e->path, e->path_len);
    rx->e_path_len = e->path_len;
    rx->e_idx = rx->next_idx++;

    if (e->op == WIRE_OP_DELETE || e->ftype == MF_DIR) {
        staged *s = add_staged(rx);
        if (e->op == WIRE_OP_PUT) {
            s->alloc = SYNC_ENTRY_COST;
            rx->stage_cost += s->alloc;
        }
        return 0;
    }
    if (stage_dir(rx, e->root, err) < 0)
        return -1;
    snprintf(rx->tmp, sizeof(rx->tmp), "%u", rx->e_idx);
    if (e->ftype == MF_LNK) {
        char target[SYNC_MAX_LINK + 1];
        memcpy(target, e->data, e->data_len);
        target[e->data_len] = '\0';
        if (symlinkat(target, rx->stage_fd[e->root], rx->tmp) < 0)
            return sbx_errno(err, "cannot stage a symlink");
        add_staged(rx)->alloc = SYNC_ENTRY_COST;
        rx->stage_cost += SYNC_ENTRY_COST;
        return 0;
    }
    rx->fd = openat(rx->stage_fd[e->root], rx->tmp,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (rx->fd < 0)
        return sbx_errno(err, "cannot stage a file");
    mf_hash_init(&rx->hs);
    rx->in_entry = true;
    rx->left = e->size;
    return 0;
}

/* A staged file is complete: its mtime set, its hash and cost kept for the commit (and the
 * quota). */
static int host_finish_file(apply_rx *rx, sbx_err *err)
{
    staged *s;
    struct stat st;
    uint64_t alloc = 0;
    sf_set_mtime(rx->fd, rx->e_mtime);
    if (fstat(rx->fd, &st) == 0)
        alloc = (uint64_t)allocated(&st);
    else
        alloc = SYNC_ENTRY_COST;
    if (close(rx->fd) < 0) {
        rx->fd = -1;
        return sbx_errno(err, "cannot stage a file");
    }
    rx->fd = -1;
    s = add_staged(rx);
    s->hash = mf_hash_final(&rx->hs);
    s->alloc = alloc;
    rx->stage_cost += alloc;
    rx->in_entry = false;
    over_quota(rx, rx->stage_cost);
    return 0;
}

/* Where op's path is written: under a directory put aside by an earlier conflict, if any. */
static bool map_path(apply_rx *rx, const staged *s, strbuf *out)
{
    strbuf_reset(out);
    for (size_t i = rx->nrenames; i-- > 0;) {
        const dir_rename *r = &rx->renames[i];
        size_t n = strlen(r->from);
        if (r->root == s->root && s->path_len > n && s->path[n] == '/' &&
            !memcmp(s->path, r->from, n)) {
            strbuf_addstr(out, r->to);
            strbuf_add(out, s->path + n, s->path_len - n);
            return true;
        }
    }
    strbuf_add(out, s->path, s->path_len);
    return false;
}

/* Whether the host's file at dfd/name already is what was staged (the same content, or
 * the same link target): a change on both sides to the same result is no conflict. */
static bool same_version(apply_rx *rx, const staged *s, int dfd, const char *name,
                         const struct stat *cur)
{
    char sname[32];
    snprintf(sname, sizeof(sname), "%u", s->idx);
    if (s->type == MF_REG && S_ISREG(cur->st_mode)) {
        int a = openat(rx->stage_fd[s->root], sname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        int b = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        int same = (a >= 0 && b >= 0) ? sf_same_content(a, b) : 0;
        if (a >= 0)
            close(a);
        if (b >= 0)
            close(b);
        return same == 1;
    }
    if (s->type == MF_LNK && S_ISLNK(cur->st_mode)) {
        char x[SYNC_MAX_LINK + 1], y[SYNC_MAX_LINK + 1];
        ssize_t nx = readlinkat(rx->stage_fd[s->root], sname, x, sizeof(x));
        ssize_t ny = readlinkat(dfd, name, y, sizeof(y));
        return nx >= 0 && nx == ny && !memcmp(x, y, (size_t)nx);
    }
    return false;
}

static int install_at(apply_rx *rx, const staged *s, int dfd, const char *name,
                      const struct stat *cur, bool noreplace);

/* Moves the staged file or symlink to dfd/name. */
static int install(apply_rx *rx, const staged *s, int dfd, const char *name,
                   const struct stat *cur)
{
    return install_at(rx, s, dfd, name, cur, false);
}

/* What install_conflict gives sf_conflict_place. */
typedef struct conflict_install {
    apply_rx *rx;
    const staged *s;
} conflict_install;

/* sf_conflict_place's place(): the staged file installed at cname, never over another. */
static int place_staged(int dfd, const char *cname, void *ctx)
{
    conflict_install *ci = ctx;
    return install_at(ci->rx, ci->s, dfd, cname, NULL, true);
}

/* ... and with noreplace, failing with EEXIST rather than replacing a taken name. */
static int install_at(apply_rx *rx, const staged *s, int dfd, const char *name,
                      const struct stat *cur, bool noreplace)
{
    char sname[32];
    int sfd = rx->stage_fd[s->root];
    snprintf(sname, sizeof(sname), "%u", s->idx);
    if (s->type == MF_REG)
        fchmodat(sfd, sname, apply_file_mode(cur, s->exec), 0);
    if ((noreplace ? sf_rename_noreplace(sfd, sname, dfd, name)
                   : renameat(sfd, sname, dfd, name)) == 0)
        return 0;
    if (errno == EXDEV && s->type == MF_REG) {
        /* A mount point inside the root: copy to a temporary beside the target. */
        char tmp[96];
        int from = openat(sfd, sname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        int to = from >= 0 ? sf_mktemp(dfd, tmp, sizeof(tmp), 0600) : -1;
        int ok = to >= 0 && sf_copy_fd(from, to) == 0;
        if (to >= 0) {
            sf_set_mtime(to, s->mtime_ns);
            fchmod(to, apply_file_mode(cur, s->exec));
            close(to);
        }
        if (from >= 0)
            close(from);
        if (ok && (noreplace ? sf_rename_noreplace(dfd, tmp, dfd, name)
                             : renameat(dfd, tmp, dfd, name)) == 0)
            return 0;
        int e = errno;
        if (to >= 0)
            unlinkat(dfd, tmp, 0);
        errno = e;
    }
    return -1;
}

/* The manifest records what a commit installed, so the next push does not send it back. */
static void host_record(apply_rx *rx, const staged *s, int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        mf_record(rx->t, s->root, s->path, s->path_len, &st, s->hash, s->type == MF_REG);
}

/* ---- host: git history is never destroyed by a pull -------------------------------------- */

/*
 * Deletions under a code directory's top-level .git, decided per delta and root (a git_plan,
 * made when the first op under that .git is committed, from the whole delta):
 *   - objects (anything under objects/) and reflogs (anything under logs/) are never deleted:
 *     objects are immutable and git's own gc on the host removes what is unreachable; the
 *     host keeps the file and its manifest record, so it is not pushed back (a sandbox
 *     `git gc` that prunes loose objects stays pruned in the sandbox);
 *   - a delta that deletes .git, .git/HEAD, .git/objects or .git/refs removed the repository
 *     (git never does): every deletion under .git in it is kept, and afterwards the host's
 *     .git is forgotten by the manifest, so the next push sends the sandbox the whole
 *     repository back ("restore");
 *   - a ref deletion (git branch -d) applies, and the ref's old value is appended to
 *     .git/sbxsh-deleted-refs ("<old value> <ref> <UTC time>"); but the branch HEAD names
 *     after the delta is never deleted (git refuses to delete the checked-out branch), unless
 *     packed-refs now holds it with the same value (git pack-refs): it is kept, and restored;
 *   - packed-refs: each ref a rewrite (or a deletion) drops is noted the same way; a deletion
 *     that would lose HEAD's branch (no loose ref file for it) is kept, and restored.
 */
#define GIT_NOTE "sbxsh-deleted-refs"

typedef struct git_plan {
    bool ready;
    bool wipe;           /* the delta removes the repository itself */
    bool restore;        /* send the host's .git back to the sandbox after the commit */
    char *why;           /* the path that made restore true */
    char *protect;       /* the branch HEAD names after the delta ("refs/heads/main"), or NULL */
    strbuf packed;       /* the host's packed-refs as committed so far */
} git_plan;

static bool path_is(const staged *s, const char *lit)
{
    return s->path_len == strlen(lit) && !memcmp(s->path, lit, s->path_len);
}

static bool path_under(const staged *s, const char *prefix)
{
    size_t n = strlen(prefix);
    return s->path_len > n && !memcmp(s->path, prefix, n);
}

/* The host's file at rel (beneath the root, no symlink followed) into out, and its stat
 * into *st when st is given. */
static int read_host_file_st(apply_rx *rx, uint16_t root, const char *rel, size_t len,
                             size_t max, strbuf *out, struct stat *st)
{
    const char *name;
    size_t dlen;
    sbx_err err;
    int rfd = mf_root_fd(rx->t, root, false), dfd, fd, r;
    if (rfd < 0)
        return -1;
    sf_split(rel, len, &dlen, &name);
    dfd = sf_open_dir(rfd, rel, dlen, false, &err);
    if (dfd < 0)
        return -1;
    fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(dfd);
    if (fd < 0)
        return -1;
    r = st && (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) ? -1 : strbuf_read_fd(out, fd, max);
    close(fd);
    if (r < 0)
        strbuf_reset(out);
    return r;
}

static int read_host_file(apply_rx *rx, uint16_t root, const char *rel, size_t len, size_t max,
                          strbuf *out)
{
    return read_host_file_st(rx, root, rel, len, max, out, NULL);
}

/* The staged file of s, for reading. */
static int open_staged(apply_rx *rx, const staged *s)
{
    char sname[32];
    snprintf(sname, sizeof(sname), "%u", s->idx);
    return openat(rx->stage_fd[s->root], sname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}

/* A staged file's content, when it passes the content rules of its path (what will be
 * committed), else nothing. */
static bool read_staged_ok(apply_rx *rx, const staged *s, size_t max, strbuf *out)
{
    int fd = open_staged(rx, s);
    bool good = fd >= 0 && !git_pull_content_refusal(s->path, s->path_len, fd) &&
                strbuf_read_fd(out, fd, max) == 0;
    if (fd >= 0)
        close(fd);
    if (!good)
        strbuf_reset(out);
    return good;
}

/* Decides a root's git_plan from the whole delta: whether it removes the repository (a
 * deletion of .git, HEAD, objects or refs), which branch HEAD names after it (the staged
 * HEAD when it passes the content rules, else the host's), and the host's packed-refs. */
static void git_plan_make(apply_rx *rx, uint16_t root, git_plan *g)
{
    const staged *head = NULL;
    strbuf sb = STRBUF_INIT;
    const char *v;
    size_t vl;
    bool sym;

    g->ready = true;
    for (size_t i = 0; i < rx->nops; i++) {
        const staged *s = &rx->ops[i];
        if (s->root != root)
            continue;
        if (s->op == WIRE_OP_DELETE && (path_is(s, ".git") || path_is(s, ".git/HEAD") ||
                                        path_is(s, ".git/objects") || path_is(s, ".git/refs"))) {
            g->wipe = true;
            if (!g->why)
                g->why = xstrndup(s->path, s->path_len);
        }
        if (s->op == WIRE_OP_PUT && s->type == MF_REG && path_is(s, ".git/HEAD"))
            head = s;
    }
    if (!head || !read_staged_ok(rx, head, GIT_REF_MAX, &sb))
        read_host_file(rx, root, ".git/HEAD", 9, GIT_REF_MAX, &sb);
    if (git_ref_parse(sb.buf, sb.len, &v, &vl, &sym) && sym)
        g->protect = xstrndup(v, vl);
    strbuf_release(&sb);
    /* Kept up to date as packed-refs is committed: a loose ref's deletion is judged against
     * what the host really has at that moment (git writes packed-refs first, and the
     * agent's scan sends "packed-refs" before "refs/"). */
    read_host_file(rx, root, ".git/packed-refs", 16, GIT_PACKED_REFS_MAX, &g->packed);
}

static void git_plan_release(git_plan *g)
{
    free(g->why);
    free(g->protect);
    strbuf_release(&g->packed);
}

/* The repository is to be pushed back to the sandbox after this delta; s says why. */
static void git_restore_because(git_plan *g, const staged *s)
{
    g->restore = true;
    if (!g->why)
        g->why = xstrndup(s->path, s->path_len);
}

/* Appends "<old value> <ref> <UTC time>" to the root's .git/sbxsh-deleted-refs and says so. */
static void git_note(apply_rx *rx, uint16_t root, const char *val, size_t val_len, bool sym,
                     const char *ref, size_t ref_len)
{
    const mf_root *r = mf_root_at(rx->t, root);
    char rshown[512], vshown[512], when[32];
    time_t now = time(NULL);
    struct tm tm;
    strbuf line = STRBUF_INIT;
    sbx_err err;
    int rfd = mf_root_fd(rx->t, root, false);
    int gfd = rfd >= 0 ? sf_open_dir(rfd, ".git", 4, false, &err) : -1;
    int fd = gfd >= 0 ? openat(gfd, GIT_NOTE, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
                                                  O_NONBLOCK | O_CLOEXEC, 0644)
                      : -1;

    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    /* Ref names came from the sandbox: one printable line each. */
    shown(ref, ref_len, rshown, sizeof(rshown));
    shown(val, val_len, vshown, sizeof(vshown));
    strbuf_addf(&line, "%s%s %s %s\n", sym ? "ref:" : "", vshown, rshown, when);
    if (fd < 0 || write_full(fd, line.buf, line.len) < 0)
        warnf(rx, "cannot record the deleted ref %s (it was %s) in %s/.git/" GIT_NOTE ": %s",
              rshown, vshown, r->base, strerror(errno));
    else
        warnf(rx, "deleted ref %s in %s/.git: it was %s%s (recorded in .git/" GIT_NOTE ")",
              rshown, r->base, sym ? "ref:" : "", vshown);
    if (fd >= 0)
        close(fd);
    if (gfd >= 0)
        close(gfd);
    strbuf_release(&line);
}

/* Every ref of old that is not in new (old and new packed-refs texts; git keeps them sorted,
 * and an unsorted one only makes more notes, never fewer). */
static void git_note_dropped(apply_rx *rx, uint16_t root, const strbuf *old, const strbuf *new_)
{
    const char *po = old->buf, *pn = new_->buf, *oid, *name, *noid = NULL, *nname = NULL;
    size_t ol, nl, noid_len = 0, nname_len = 0;
    bool have_new = git_packed_next(&pn, new_->buf + new_->len, &noid, &noid_len, &nname,
                                    &nname_len);
    while (git_packed_next(&po, old->buf + old->len, &oid, &ol, &name, &nl)) {
        int c = 1;
        while (have_new) {
            size_t m = nl < nname_len ? nl : nname_len;
            c = memcmp(nname, name, m);
            if (!c)
                c = nname_len < nl ? -1 : nname_len > nl ? 1 : 0;
            if (c >= 0)
                break;
            have_new = git_packed_next(&pn, new_->buf + new_->len, &noid, &noid_len, &nname,
                                       &nname_len);
        }
        if (!have_new || c != 0)
            git_note(rx, root, oid, ol, false, name, nl);
    }
}

enum { GIT_DEL_KEEP = -1, GIT_DEL_PLAIN = 0, GIT_DEL_REF = 1, GIT_DEL_PACKED = 2 };

/* Decides a deletion under .git (see above); for GIT_DEL_REF and GIT_DEL_PACKED, old gets
 * the host's file, to note once the deletion is done. */
static int git_deletion(apply_rx *rx, const staged *s, git_plan *g, int dfd, const char *name,
                        const struct stat *cur, strbuf *old)
{
    const char *v, *oid;
    size_t vl, ol;
    bool sym;
    int fd;

    if (!cur)
        return GIT_DEL_PLAIN;   /* nothing here to keep */
    if (g->wipe) {
        git_restore_because(g, s);
        return GIT_DEL_KEEP;
    }
    if (path_under(s, ".git/objects/") || path_under(s, ".git/logs/"))
        return GIT_DEL_KEEP;
    if (!S_ISREG(cur->st_mode))
        return GIT_DEL_PLAIN;
    fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (path_under(s, ".git/refs/")) {
        const char *ref = s->path + 5;
        size_t ref_len = s->path_len - 5;
        bool head_branch = g->protect && strlen(g->protect) == ref_len &&
                           !memcmp(g->protect, ref, ref_len);
        bool parsed = fd >= 0 && strbuf_read_fd(old, fd, GIT_REF_MAX) == 0 &&
                      git_ref_parse(old->buf, old->len, &v, &vl, &sym);
        bool packed_same = parsed && !sym &&
                           git_packed_find(g->packed.buf, g->packed.len, ref, ref_len, &oid, &ol) &&
                           ol == vl && !memcmp(oid, v, vl);
        if (fd >= 0)
            close(fd);
        if (packed_same)
            return GIT_DEL_PLAIN;   /* moved into packed-refs (git pack-refs): no value lost */
        if (head_branch) {
            git_restore_because(g, s);
            return GIT_DEL_KEEP;
        }
        return parsed ? GIT_DEL_REF : GIT_DEL_PLAIN;
    }
    if (path_is(s, ".git/packed-refs")) {
        bool read_ok = fd >= 0 && strbuf_read_fd(old, fd, GIT_PACKED_REFS_MAX) == 0;
        if (fd >= 0)
            close(fd);
        if (read_ok && g->protect &&
            git_packed_find(old->buf, old->len, g->protect, strlen(g->protect), &oid, &ol)) {
            /* HEAD's branch is only packed: deleting packed-refs would lose it. */
            strbuf loose = STRBUF_INIT;
            char *rel = xasprintf(".git/%s", g->protect);
            bool has_loose = read_host_file(rx, s->root, rel, strlen(rel), GIT_REF_MAX,
                                            &loose) == 0;
            free(rel);
            strbuf_release(&loose);
            if (!has_loose) {
                git_restore_because(g, s);
                return GIT_DEL_KEEP;
            }
        }
        return read_ok ? GIT_DEL_PACKED : GIT_DEL_PLAIN;
    }
    if (fd >= 0)
        close(fd);
    return GIT_DEL_PLAIN;
}

/* After a deletion was applied: note the values it removed. */
static void git_deleted(apply_rx *rx, const staged *s, git_plan *g, int kind, const strbuf *old)
{
    const char *v;
    size_t vl;
    bool sym;
    if (path_is(s, ".git/packed-refs"))
        strbuf_reset(&g->packed);
    if (kind == GIT_DEL_REF && git_ref_parse(old->buf, old->len, &v, &vl, &sym))
        git_note(rx, s->root, v, vl, sym, s->path + 5, s->path_len - 5);
    else if (kind == GIT_DEL_PACKED) {
        strbuf none = STRBUF_INIT;
        git_note_dropped(rx, s->root, old, &none);
        strbuf_release(&none);
    }
}

/* The git plan for op s, or NULL when s is not under a code directory's .git. */
static git_plan *git_plan_for(apply_rx *rx, const staged *s, git_plan *plans, bool mapped)
{
    git_plan *g;
    if (mapped || mf_root_at(rx->t, s->root)->kind != WIRE_ROOT_CODE ||
        !git_path_in_git(s->path, s->path_len))
        return NULL;
    g = &plans[s->root];
    if (!g->ready)
        git_plan_make(rx, s->root, g);
    return g;
}

/* A pulled .git file whose push was filtered of URL secrets (gitcred.h): the lines the
 * sandbox got filtered become the host's own lines again in the staged file, so that the
 * commit keeps the host's reflog entries whole and adds the sandbox's. NULL when the staged
 * file is ready to commit, else why the pull of this path is refused (the host keeps its
 * file). */
static const char *restore_credentials(apply_rx *rx, staged *s)
{
    strbuf host = STRBUF_INIT, pulled = STRBUF_INIT, merged = STRBUF_INIT;
    const char *why = NULL;
    char sname[32];
    struct stat st;
    int fd = -1;

    if (read_host_file(rx, s->root, s->path, s->path_len, GIT_CRED_FILTER_MAX, &host) < 0) {
        /* No file on the host: no line of it to restore. A bigger one than the push
         * filters was pushed empty: what comes back lacks its lines. */
        if (errno == EFBIG)
            why = "the host's file is too big to restore its URLs' credentials into";
        goto out;
    }
    fd = open_staged(rx, s);
    if (fd < 0 || strbuf_read_fd(&pulled, fd, GIT_CRED_FILTER_MAX) < 0) {
        why = "the staged file cannot be read";
        goto out;
    }
    close(fd);
    fd = -1;
    if (!gitcred_restore(host.buf, host.len, pulled.buf, pulled.len, &merged))
        goto out;
    /* Rewritten in place: the stage is the host's own directory, never the sandbox's. */
    snprintf(sname, sizeof(sname), "%u", s->idx);
    fd = openat(rx->stage_fd[s->root], sname, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || write_full(fd, merged.buf, merged.len) < 0) {
        why = "the staged file cannot be rewritten";
        goto out;
    }
    {
        mf_hasher hs;
        mf_hash_init(&hs);
        mf_hash_update(&hs, merged.buf, merged.len);
        s->hash = mf_hash_final(&hs);   /* what the manifest records the host has */
    }
    sf_set_mtime(fd, s->mtime_ns);
    if (fstat(fd, &st) == 0)
        s->alloc = (uint64_t)allocated(&st);
out:
    if (fd >= 0)
        close(fd);
    strbuf_release(&host);
    strbuf_release(&pulled);
    strbuf_release(&merged);
    return why;
}

/* A pulled .git/index keeps the host's stat data (gitindex.h): the staged file becomes the
 * sandbox's index merged with the host's current one. The staged bytes are the sandbox's,
 * hostile: gitindex_merge() checks every length before use and leaves alone what it does not
 * understand (then the file is committed as it came, as before). */
static int host_merge_index(apply_rx *rx, staged *s)
{
    strbuf host = STRBUF_INIT, pulled = STRBUF_INIT, merged = STRBUF_INIT;
    int ret = 0;
    struct stat hst, st;
    bool have_host;
    char sname[32];
    int fd = open_staged(rx, s);

    if (fd < 0 || strbuf_read_fd(&pulled, fd, GITINDEX_MERGE_MAX) < 0)
        goto out;
    close(fd);
    fd = -1;
    have_host = read_host_file_st(rx, s->root, s->path, s->path_len, GITINDEX_MERGE_MAX, &host,
                                  &hst) == 0;
    if (!gitindex_merge(pulled.buf, pulled.len, have_host ? host.buf : NULL, host.len,
                        have_host ? (int64_t)hst.st_mtime : 0, &merged, NULL))
        goto out;
    /* Rewritten in place: the stage is the host's own directory, never the sandbox's. */
    snprintf(sname, sizeof(sname), "%u", s->idx);
    fd = openat(rx->stage_fd[s->root], sname, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || write_full(fd, merged.buf, merged.len) < 0) {
        /* Half written: the sandbox's bytes are gone from the stage, so nothing is
         * committed (the host keeps its index). */
        ret = -1;
        goto out;
    }
    {
        mf_hasher hs;
        mf_hash_init(&hs);
        mf_hash_update(&hs, merged.buf, merged.len);
        s->hash = mf_hash_final(&hs);   /* what the manifest records the host has */
    }
    s->mtime_ns = index_mtime(s->mtime_ns, have_host ? &hst : NULL);
    sf_set_mtime(fd, s->mtime_ns);
    if (fstat(fd, &st) == 0)
        s->alloc = (uint64_t)allocated(&st);
out:
    if (fd >= 0)
        close(fd);
    strbuf_release(&host);
    strbuf_release(&pulled);
    strbuf_release(&merged);
    return ret;
}

/* ---- host: no repository comes back ------------------------------------------------------ */

/*
 * Whether putting s at path (as mapped) would leave a directory of the host tree that git
 * would discover as a repository (gitpolicy.h: HEAD beside refs or commondir); then *shape
 * gets that directory. Decided on the host tree as it is at this commit, not on the delta:
 * a shape can be assembled across rounds (HEAD now, refs/ next time), or with what the host
 * already has, and an entry inside an existing shape (its config) is refused too. Each
 * directory from the root down to the entry's parent is opened beneath the root by fd,
 * without following a symlink, and checked with the entry's next component counted as
 * present; a missing one ends the walk (a directory this entry makes holds one name). The
 * top-level .git of a code directory is the repository itself: it and its insides are the
 * allowlist's (gitpolicy.c). The attack it stops: `mkdir x/objects x/refs; echo ref: ... >
 * x/HEAD; echo "[core] fsmonitor = CMD" > x/config` in the sandbox, then the person's
 * `git status` in x on the host runs CMD.
 */
static bool repo_shape_refusal(apply_rx *rx, const staged *s, const strbuf *path, strbuf *shape)
{
    const char *name;
    size_t dlen, i = 0;
    bool code = mf_root_at(rx->t, s->root)->kind == WIRE_ROOT_CODE, found = false;
    bool shape_named = false;
    int rfd = mf_root_fd(rx->t, s->root, false), cur;

    sf_split(path->buf, path->len, &dlen, &name);
    for (size_t k = 0; k < path->len;) {
        size_t j = k;
        while (j < path->len && path->buf[j] != '/')
            j++;
        shape_named = shape_named || git_repo_shape_name(path->buf + k, j - k);
        k = j + 1;
    }
    /* Deltas come sorted: the entries of one directory follow each other, and its chain,
     * found clean, stays clean until an entry with one of the shape's names lands. */
    if (!shape_named && rx->shape_ok_valid && rx->shape_ok_root == s->root &&
        rx->shape_ok.len == dlen && !memcmp(rx->shape_ok.buf, path->buf, dlen))
        return false;
    rx->shape_ok_valid = false;
    if (rfd < 0)
        return false;   /* commit_one() says the root is missing */
    cur = fcntl(rfd, F_DUPFD_CLOEXEC, 3);
    if (cur < 0) {
        strbuf_addstr(shape, "(cannot check)");
        return true;    /* unchecked: refused */
    }
    for (;;) {
        char comp[SYNC_MAX_NAME + 1];
        size_t j = i;
        int next;
        while (j < path->len && path->buf[j] != '/')
            j++;
        /* cur is path[0, i - 1); the next component is path[i, j). The top-level .git and
         * what is in it are the allowlist's: .git is the repository, and its logs/ holds a
         * HEAD beside refs/ by nature, while the allowlist's names (no objects, commondir
         * or HEAD below refs/ and logs/ but their own) keep any repository from being
         * assembled inside. */
        if (code && i >= 5 && !memcmp(path->buf, ".git/", 5))
            break;
        if (git_dir_is_repo_shape(cur, path->buf + i, j - i)) {
            strbuf_add(shape, path->buf, i ? i - 1 : 0);
            found = true;
            break;
        }
        if (j >= path->len || j - i > SYNC_MAX_NAME)
            break;
        memcpy(comp, path->buf + i, j - i);
        comp[j - i] = '\0';
        next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0)
            break;   /* missing, or not a directory (the commit then refuses the entry) */
        close(cur);
        cur = next;
        i = j + 1;
    }
    close(cur);
    if (!found && !shape_named) {
        rx->shape_ok_valid = true;
        rx->shape_ok_root = s->root;
        strbuf_reset(&rx->shape_ok);
        strbuf_add(&rx->shape_ok, path->buf, dlen);
    }
    return found;
}

/*
 * Commits one staged op into the host tree, in the order the delta had them. The checks
 * that hold at the moment of use are made here: the content rules on the staged file,
 * the parent opened beneath the root without symlinks, and the host's current version
 * against the manifest. A deletion never removes what the host changed (or what a push in
 * flight changed), nor git history (git_deletion()); a put over a host change keeps the
 * host's version and installs the sandbox's beside it as a conflict copy.
 */
/*
 * A staged op under a create-only root (WIRE_ROOT_CREATE): a file the host has is never
 * replaced, nor deleted, nor one it has made while the delta came (the rename that installs
 * a new file fails rather than replace: RENAME_NOREPLACE). A refused change is one warning;
 * the host's file is forgotten by the manifest, so the next push gives the sandbox the
 * host's version back. A new file or directory is installed as any pull's.
 */
static void create_only_commit(apply_rx *rx, const staged *s, int dfd, const char *name,
                               const struct stat *cur)
{
    const mf_root *r = mf_root_at(rx->t, s->root);
    char p[512];
    shown(s->path, s->path_len, p, sizeof(p));
    if (s->op == WIRE_OP_DELETE || (cur && (s->type == MF_DIR) != S_ISDIR(cur->st_mode)) ||
        (cur && s->type == MF_REG && !same_version(rx, s, dfd, name, cur))) {
        if (!cur) {
            mf_forget(rx->t, s->root, s->path, s->path_len);
            return;
        }
        warnf(rx, "refused a sandbox change to %s/%s: %s/%s is create-only (the sandbox may "
              "add files there, never change or delete one the host has); the host's is kept "
              "and goes back to the sandbox", r->base, p, r->base, r->pattern);
        mf_forget(rx->t, s->root, s->path, s->path_len);
        mf_invalidate(rx->t);
        return;
    }
    if (cur) {
        host_record(rx, s, dfd, name);   /* the same directory, or the same content */
        return;
    }
    if (s->type == MF_DIR) {
        if (mkdirat(dfd, name, 0755) < 0) {
            warnf(rx, "cannot create %s/%s: %s", r->base, p, strerror(errno));
            return;
        }
    } else if (install_at(rx, s, dfd, name, NULL, true) < 0) {
        if (errno == EEXIST)
            warnf(rx, "refused a sandbox change to %s/%s: %s/%s is create-only, and the host "
                  "made that file meanwhile; the host's is kept", r->base, p, r->base,
                  r->pattern);
        else
            warnf(rx, "cannot write %s/%s: %s", r->base, p, strerror(errno));
        return;
    }
    account(rx, (int64_t)s->alloc, 1);   /* quota */
    host_record(rx, s, dfd, name);
}

static void commit_one(apply_rx *rx, const staged *s, strbuf *path, git_plan *plans)
{
    const mf_root *r = mf_root_at(rx->t, s->root);
    const char *name;
    size_t dlen;
    struct stat cur;
    bool have_cur, mapped, host_changed, crossing;
    mf_node *node;
    git_plan *g;
    sbx_err err;
    int rfd, dfd;

    mapped = map_path(rx, s, path);
    g = git_plan_for(rx, s, plans, mapped);
    if (g && s->op == WIRE_OP_PUT && s->type == MF_REG) {
        /* The shape of what git keeps at this path, checked on the staged file itself,
         * before anything (a parent directory) is made. */
        int sfd = open_staged(rx, s);
        const char *why = sfd >= 0 ? git_pull_content_refusal(s->path, s->path_len, sfd)
                                   : "the staged file is gone";
        if (sfd >= 0)
            close(sfd);
        if (why) {
            char p[512];
            warnf(rx, "refused a sandbox change to %s/%s: %s", r->base,
                  shown(s->path, s->path_len, p, sizeof(p)), why);
            return;
        }
    }
    if (s->op == WIRE_OP_PUT) {
        /* Before anything (a parent directory) is made: see repo_shape_refusal(). */
        strbuf shape = STRBUF_INIT;
        if (repo_shape_refusal(rx, s, path, &shape)) {
            char p[512], d[512];
            warnf(rx, "refused a sandbox change to %s/%s: it would make %s%s%s a git "
                  "repository (HEAD beside refs/ or commondir), whose config and hooks git "
                  "on the host would run; the sandbox keeps its copy", r->base,
                  shown(path->buf, path->len, p, sizeof(p)), r->base, shape.len ? "/" : "",
                  shown(shape.buf, shape.len, d, sizeof(d)));
            strbuf_release(&shape);
            return;
        }
        strbuf_release(&shape);
    }
    if (s->op == WIRE_OP_PUT && s->type == MF_REG &&
        git_push_strips_credentials(s->path, s->path_len)) {
        /* The ops are the rx's own (commit_one only reads them otherwise). */
        const char *why = restore_credentials(rx, &rx->ops[s - rx->ops]);
        if (why) {
            char p[512];
            warnf(rx, "refused a sandbox change to %s/%s: %s", r->base,
                  shown(s->path, s->path_len, p, sizeof(p)), why);
            return;
        }
    }
    if (g && s->op == WIRE_OP_PUT && s->type == MF_REG &&
        is_code_index(rx, s->root, s->path, s->path_len)) {
        if (host_merge_index(rx, &rx->ops[s - rx->ops]) < 0) {
            warnf(rx, "refused a sandbox change to %s/%s: the staged file cannot be rewritten",
                  r->base, s->path);
            return;
        }
    }
    sf_split(path->buf, path->len, &dlen, &name);
    rfd = mf_root_fd(rx->t, s->root, false);
    if (rfd < 0) {
        warnf(rx, "refused a sandbox change to %s/%s: %s is missing on the host", r->base,
              s->path, r->base);
        return;
    }
    dfd = sf_open_dir(rfd, path->buf, dlen, s->op == WIRE_OP_PUT, &err);
    if (dfd < 0) {
        if (s->op == WIRE_OP_DELETE && errno == ENOENT) {
            mf_forget(rx->t, s->root, s->path, s->path_len);
            return;
        }
        warnf(rx, "refused a sandbox change to %s/%s: %s", r->base, s->path, err.msg);
        return;
    }
    have_cur = fstatat(dfd, name, &cur, AT_SYMLINK_NOFOLLOW) == 0;
    node = mapped ? NULL : mf_lookup(rx->t, s->root, s->path, s->path_len);
    host_changed = mapped || mf_changed(node, have_cur ? &cur : NULL, dfd, name);
    crossing = !mapped && rx->inflight &&
               mf_pathmap_get(rx->inflight, s->root, s->path, s->path_len) > rx->acked;
    if (r->kind == WIRE_ROOT_CREATE) {
        create_only_commit(rx, s, dfd, name, have_cur ? &cur : NULL);
        close(dfd);
        return;
    }

    if (s->op == WIRE_OP_DELETE) {
        strbuf old = STRBUF_INIT;
        int kind = g ? git_deletion(rx, s, g, dfd, name, have_cur ? &cur : NULL, &old)
                     : GIT_DEL_PLAIN;
        if (kind == GIT_DEL_KEEP) {
            /* Kept, and so is the manifest's record of it: see git_plan. */
        } else if (!have_cur) {
            mf_forget(rx->t, s->root, s->path, s->path_len);
        } else if (host_changed || crossing || (S_ISDIR(cur.st_mode) != (s->type == MF_DIR))) {
            if (!S_ISDIR(cur.st_mode))
                warnf(rx, "kept %s/%s: deleted in the sandbox but changed on the host", r->base,
                      s->path);
        } else if (unlinkat(dfd, name, S_ISDIR(cur.st_mode) ? AT_REMOVEDIR : 0) == 0) {
            mf_forget(rx->t, s->root, s->path, s->path_len);
            account(rx, -allocated(&cur), -1);   /* quota */
            if (g)
                git_deleted(rx, s, g, kind, &old);
        } else if (errno != ENOTEMPTY && errno != EEXIST) {
            warnf(rx, "cannot delete %s/%s: %s", r->base, s->path, strerror(errno));
        }
        strbuf_release(&old);
        close(dfd);
        return;
    }

    if (s->type == MF_DIR) {
        if (have_cur && S_ISDIR(cur.st_mode)) {
            if (!mapped)
                host_record(rx, s, dfd, name);
        } else if (!have_cur) {
            if (mkdirat(dfd, name, 0755) < 0) {
                warnf(rx, "cannot create %s/%s: %s", r->base, path->buf, strerror(errno));
            } else {
                account(rx, (int64_t)s->alloc, 1);   /* quota */
                if (!mapped)
                    host_record(rx, s, dfd, name);
            }
        } else {
            char cname[NAME_MAX + 1];
            if (sf_conflict_place(dfd, name, cname, sizeof(cname), place_dir, NULL) == 0) {
                dir_rename *dr;
                account(rx, (int64_t)s->alloc, 1);   /* quota */
                XGROW(rx->renames, rx->arenames, rx->nrenames + 1);
                dr = &rx->renames[rx->nrenames++];
                dr->root = s->root;
                dr->from = xstrndup(s->path, s->path_len);
                dr->to = xasprintf("%.*s%s%s", (int)dlen, path->buf, dlen ? "/" : "", cname);
                warnf(rx, "conflict: %s/%s is a directory in the sandbox but not on the host; "
                      "kept the host's version, the sandbox's is now %s/%s", r->base, s->path,
                      r->base, dr->to);
            }
        }
        close(dfd);
        return;
    }

    /* A file or a symlink. */
    if (have_cur && S_ISDIR(cur.st_mode)) {
        host_changed = true;   /* a directory is never replaced by a file */
    } else if (have_cur && (host_changed || crossing) && same_version(rx, s, dfd, name, &cur)) {
        if (!crossing && !mapped)
            host_record(rx, s, dfd, name);
        close(dfd);
        return;
    }
    if (!have_cur || (!host_changed && !crossing)) {
        strbuf old_packed = STRBUF_INIT;
        bool packed = g && s->type == MF_REG && path_is(s, ".git/packed-refs");
        if (packed && have_cur)
            read_host_file(rx, s->root, s->path, s->path_len, GIT_PACKED_REFS_MAX, &old_packed);
        if (install(rx, s, dfd, name, have_cur ? &cur : NULL) < 0) {
            warnf(rx, "cannot write %s/%s: %s", r->base, path->buf, strerror(errno));
        } else {
            account(rx, (int64_t)s->alloc - (have_cur ? allocated(&cur) : 0),
                    have_cur ? 0 : 1);   /* quota */
            if (!crossing && !mapped)
                host_record(rx, s, dfd, name);
            if (packed) {
                /* A rewrite that drops refs (git branch -d of a packed ref): note them. */
                strbuf now = STRBUF_INIT;
                read_host_file(rx, s->root, s->path, s->path_len, GIT_PACKED_REFS_MAX, &now);
                git_note_dropped(rx, s->root, &old_packed, &now);
                strbuf_reset(&g->packed);
                strbuf_add(&g->packed, now.buf, now.len);
                strbuf_release(&now);
            }
        }
        strbuf_release(&old_packed);
    } else {
        char cname[NAME_MAX + 1];
        conflict_install ci = { rx, s };
        if (sf_conflict_place(dfd, name, cname, sizeof(cname), place_staged, &ci) < 0) {
            warnf(rx, "cannot write %s/%s: %s", r->base, cname, strerror(errno));
        } else {
            account(rx, (int64_t)s->alloc, 1);   /* quota */
            warnf(rx, "conflict: %s/%s changed both on the host and in the sandbox; kept the "
                  "host's version, the sandbox's is %s/%.*s%s%s", r->base, path->buf, r->base,
                  (int)dlen, path->buf, dlen ? "/" : "", cname);
        }
    }
    close(dfd);
}

/* DELTA_END on the host: commits every staged op, then says so for each root whose
 * repository was kept against the sandbox's deletion (it is pushed back), then removes the
 * stage. */
static void host_commit(apply_rx *rx)
{
    strbuf path = STRBUF_INIT;
    size_t n = mf_nroots(rx->t);
    git_plan *plans = xcalloc(n ? n : 1, sizeof(*plans));
    for (size_t i = 0; i < n; i++)
        strbuf_init(&plans[i].packed, 0);
    rx->shape_ok_valid = false;   /* the host tree may have changed since the last commit */
    for (size_t i = 0; i < rx->nops; i++)
        commit_one(rx, &rx->ops[i], &path, plans);
    for (size_t i = 0; i < n; i++) {
        if (plans[i].restore) {
            /* The sandbox's repository is gone or lost HEAD's branch, the host's is whole:
             * forgetting it makes the next push send all of it back. */
            char p[512];
            mf_forget(rx->t, i, ".git", 4);
            mf_invalidate(rx->t);
            warnf(rx, "the sandbox removed %s/%s: a pull never deletes git history, so the "
                  "host kept its repository, and the next command brings it back to the sandbox",
                  mf_root_at(rx->t, i)->base,
                  shown(plans[i].why, strlen(plans[i].why), p, sizeof(p)));
        }
        git_plan_release(&plans[i]);
    }
    free(plans);
    strbuf_release(&path);
    clear_staging(rx);
}

/* ---- frames ------------------------------------------------------------------------------ */

/* The entry's content is complete when nothing is left: a trailing hole gets its length
 * from ftruncate, then the file is finished (or dropped when skipped). */
static int entry_progress(apply_rx *rx, sbx_err *err)
{
    if (rx->left)
        return 0;
    if (rx->skip) {
        drop_entry(rx);
        return 0;
    }
    if (rx->e_hole && ftruncate(rx->fd, (off_t)rx->e_size) < 0) {
        if (rx->role == APPLY_HOST)
            return sbx_errno(err, "cannot stage a file");
        warnf(rx, "cannot write %s/%s in the sandbox: %s",
              mf_root_at(rx->t, rx->e_root)->base, rx->e_path, strerror(errno));
        drop_entry(rx);
        return 0;
    }
    return rx->role == APPLY_HOST ? host_finish_file(rx, err) : agent_finish_file(rx, err);
}

/* The agent could not write the entry: say so, drop what it wrote, skip the rest. */
static void agent_write_failed(apply_rx *rx)
{
    warnf(rx, "cannot write %s/%s in the sandbox: %s", mf_root_at(rx->t, rx->e_root)->base,
          rx->e_path, strerror(errno));
    close(rx->fd);
    rx->fd = -1;
    if (rx->dir_fd >= 0)
        unlinkat(rx->dir_fd, rx->tmp, 0);
    rx->skip = true;
}

/* Bytes of the current entry's content (inline or a CHUNK): never more than the entry
 * announced; on the host, a file over max_file_size of data is dropped with a warning and
 * staging counts against the quota. */
static int content(apply_rx *rx, const void *data, size_t len, sbx_err *err)
{
    if (len > rx->left)
        return sbx_errf(err, "%zu content bytes for an entry that has %llu left", len,
                        (unsigned long long)rx->left);
    rx->left -= len;
    if (rx->role == APPLY_HOST && !rx->skip && len &&
        (rx->e_data += len) > rx->lim.max_file_size) {
        /* Checked on the data it stores, so that a sparse file passes by what it costs. */
        char p[512];
        warnf(rx, "refused a sandbox change to %s/%s: file over the size limit (%llu bytes "
              "of data)", mf_root_at(rx->t, rx->e_root)->base,
              shown(rx->e_path, rx->e_path_len, p, sizeof(p)),
              (unsigned long long)rx->lim.max_file_size);
        uint64_t left = rx->left;
        drop_entry(rx);
        rx->in_entry = rx->skip = true;
        rx->left = left;
    }
    if (!rx->skip && len) {
        mf_hash_update(&rx->hs, data, len);
        if (write_full(rx->fd, data, len) < 0) {
            if (rx->role == APPLY_HOST)
                return sbx_errno(err, "cannot stage a file");
            agent_write_failed(rx);
        } else if (rx->role == APPLY_HOST) {
            /* The file's data so far on top of the finished entries' cost. */
            over_quota(rx, rx->stage_cost + rx->e_data);
        }
    }
    return entry_progress(rx, err);
}

/* n zero bytes the sender does not store: hashed as zeros (the content hash is over the
 * logical bytes, so both manifests agree), seeked over, not written. */
static int hole(apply_rx *rx, uint64_t n, sbx_err *err)
{
    static const uint8_t zeros[65536];
    if (n > rx->left)
        return sbx_errf(err, "a %llu-byte hole for an entry that has %llu bytes left",
                        (unsigned long long)n, (unsigned long long)rx->left);
    rx->left -= n;
    if (!rx->skip) {
        for (uint64_t k = n; k;) {
            size_t piece = k < sizeof(zeros) ? (size_t)k : sizeof(zeros);
            mf_hash_update(&rx->hs, zeros, piece);
            k -= piece;
        }
        if (lseek(rx->fd, (off_t)n, SEEK_CUR) < 0) {
            if (rx->role == APPLY_HOST)
                return sbx_errno(err, "cannot stage a file");
            agent_write_failed(rx);
        } else {
            rx->e_hole = true;
        }
    }
    return entry_progress(rx, err);
}

int apply_frame(apply_rx *rx, const wire_frame *f, sbx_err *err)
{
    if (!rx->active)
        return sbx_errf(err, "%s outside a delta", wire_type_name(f->type));

    switch (f->type) {
    case WIRE_ENTRY: {
        wire_entry e;
        if (rx->in_entry)
            return sbx_errf(err, "ENTRY before the previous entry's content was complete");
        if (wire_get_entry(f, &e, err) < 0)
            return -1;
        if (++rx->entries > rx->lim.max_entries)
            return sbx_errf(err, "delta has more than %llu entries",
                            (unsigned long long)rx->lim.max_entries);
        if (e.op == WIRE_OP_PUT && e.ftype == MF_REG) {
            rx->bytes += e.size;
            if (rx->bytes > rx->lim.max_bytes || rx->bytes < e.size)
                return sbx_errf(err, "delta brings more than %llu bytes",
                                (unsigned long long)rx->lim.max_bytes);
        }
        if ((rx->role == APPLY_HOST ? host_entry(rx, &e, err) : agent_entry(rx, &e, err)) < 0)
            return -1;
        if (rx->in_entry)
            return content(rx, e.data, e.data_len, err) < 0 ? -1 : 0;
        return 0;
    }
    case WIRE_CHUNK:
        if (!rx->in_entry)
            return sbx_errf(err, "CHUNK without a file entry in progress");
        if (!f->len)
            return sbx_errf(err, "empty CHUNK");
        return content(rx, f->payload, f->len, err) < 0 ? -1 : 0;
    case WIRE_HOLE: {
        uint64_t n;
        if (!rx->in_entry)
            return sbx_errf(err, "HOLE without a file entry in progress");
        if (wire_get_hole(f, &n, err) < 0)
            return -1;
        return hole(rx, n, err) < 0 ? -1 : 0;
    }
    case WIRE_ENTRY_CANCEL:
        if (!rx->in_entry)
            return sbx_errf(err, "ENTRY_CANCEL without a file entry in progress");
        drop_entry(rx);
        return 0;
    case WIRE_DELTA_END: {
        uint64_t seq, n;
        if (wire_get_u64_pair(f, &seq, &n, err) < 0)
            return -1;
        if (rx->in_entry)
            return sbx_errf(err, "DELTA_END before the last entry's content was complete");
        if (seq != rx->seq || n != rx->entries)
            return sbx_errf(err, "DELTA_END says %llu entries of delta %llu; %llu arrived for "
                            "delta %llu", (unsigned long long)n, (unsigned long long)seq,
                            (unsigned long long)rx->entries, (unsigned long long)rx->seq);
        if (rx->role == APPLY_HOST) {
            /* What was staged, by its allocated blocks and entries, must fit before anything
             * lands. */
            uint64_t alloc = 0, puts = 0;
            for (size_t i = 0; !rx->refused && i < rx->nops; i++) {
                alloc += rx->ops[i].alloc;
                puts += rx->ops[i].op == WIRE_OP_PUT;
            }
            if (!rx->refused && !over_files(rx, puts) && !over_quota(rx, alloc))
                host_commit(rx);
            else
                clear_staging(rx);
        }
        close_dir_cache(rx);
        mf_seal(rx->t);
        rx->done_entries = rx->entries;
        rx->done_bytes = rx->bytes;
        rx->active = false;
        return 1;
    }
    }
    return sbx_errf(err, "%s frame inside a delta", wire_type_name(f->type));
}
