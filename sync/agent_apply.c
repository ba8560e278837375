/*
 * The agent's apply (sbx-agent only; not linked into sbxsh or sbx): the host's delta written
 * into the sandbox as it comes, through sync/apply.c's frame handling (apply_agent_side).
 * The host is trusted here, but the tree is the sandbox's own and anything in it may have
 * changed since the last round: every path is walked by fds from its root without following
 * a symlink (agent_parent), the sandbox's own newer changes are kept or put aside under a
 * conflict name rather than overwritten (agent_must_keep, agent_put_aside), and a deleted
 * directory takes with it only what never synced (agent_clear_unsynced). A write that fails
 * is a warning: the sandbox keeps what it had, and the stream goes on.
 * Nothing here is trusted by the host: a hostile sandbox may replace this code, and the
 * host checks everything it sends (hostwrite.c).
 */
#include "sync/apply_int.h"
#include "sync/gitindex.h"
#include "sync/safefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    apply_close_dir_cache(rx);
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

/* The sandbox's own version of the path is in the way and differs: rename it aside. */
static void agent_put_aside(apply_rx *rx, int dfd, const char *name)
{
    char cname[NAME_MAX + 1];
    if (sf_conflict_place(dfd, name, cname, sizeof(cname), place_by_rename, (void *)name) == 0) {
        if (rx->dir_fd == dfd && rx->e_type == MF_DIR)
            apply_close_dir_cache(rx);
        apply_warnf(rx, "conflict: %s/%s changed both in the sandbox and on the host; kept the "
                    "host's version, the sandbox's is now %s", mf_root_at(rx->t, rx->e_root)->base,
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
            rx->e_mtime = apply_index_mtime(rx->e_mtime, lfd >= 0 ? cur : NULL);
        } else {
            apply_warnf(rx, "cannot write %s/%s in the sandbox: %s",
                        mf_root_at(rx->t, rx->e_root)->base, rx->e_path, strerror(errno));
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
    if (apply_is_code_index(rx, rx->e_root, rx->e_path, rx->e_path_len) &&
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
        apply_warnf(rx, "cannot write %s/%s in the sandbox: %s",
                    mf_root_at(rx->t, rx->e_root)->base, rx->e_path, strerror(errno));
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
        apply_warnf(rx, "cannot write %s/%s in the sandbox: %s", mf_root_at(rx->t, e->root)->base,
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
        !apply_is_code_index(rx, e->root, e->path, e->path_len)) {
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
                    apply_close_dir_cache(rx);
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
            apply_warnf(rx, "cannot create %s/%s in the sandbox: %s",
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
            apply_warnf(rx, "cannot create symlink %s/%s in the sandbox: %s",
                        mf_root_at(rx->t, e->root)->base, rx->e_path, strerror(errno));
        } else {
            if (have_cur && agent_must_keep(rx, dfd, name, &cur, target, -1))
                agent_put_aside(rx, dfd, name);
            if (renameat(dfd, rx->tmp, dfd, name) < 0) {
                apply_warnf(rx, "cannot write %s/%s in the sandbox: %s",
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
        apply_warnf(rx, "cannot write %s/%s in the sandbox: %s", mf_root_at(rx->t, e->root)->base,
                    rx->e_path, strerror(errno));
        rx->skip = true;
    }
    rx->in_entry = true;
    rx->left = e->size;
    return 0;
}


const struct apply_side apply_agent_side = {
    .host = false,
    .entry = agent_entry,
    .finish_file = agent_finish_file,
};
