/*
 * The host's apply: every write the sandbox can cause on the host (libsbx only; sbx-agent
 * does not link it). A pull is a delta the sandbox sends; sync/apply.c checks its frames and
 * calls the hooks at the end of this file (apply_host_side). Everything the delta says is
 * hostile: a prompt injection may have written the sandbox's files, or replaced sbx-agent.
 *
 * The pull, as a state machine per delta (apply_begin() to DELTA_END):
 *   1. ENTRY: checked alone (host_refusal): a refusal is a warning and the entry's content
 *      is read and dropped, never a failure of the stream (one bad name cannot stop the
 *      rest of a pull from arriving);
 *   2. staged (host_entry, host_finish_file): a deletion or a directory becomes an op, a
 *      symlink or a file is made in a fresh mode-0700 directory under its root (stage_dir),
 *      by fd, never under its final name. Nothing touches the host tree yet;
 *   3. DELTA_END (host_delta_end): if the whole delta fits the quotas, each op is committed
 *      (commit_one) by rename from the stage, else nothing is: a malformed, truncated,
 *      over-quota or interrupted pull leaves the host tree as it was (refuse());
 *   4. the stage is removed (clear_staging), also on abort.
 * With a journal (sync/journal.h), the commit is one journal entry: before each write that
 * replaces or deletes something on the host, its state is saved (jnl_take: the file linked,
 * cloned or copied into the session's journal), and after the write the change is recorded
 * (jnl_record), so that `sbx undo` can put it back. Objects under .git/objects are not
 * journaled: a pull only adds them, and an undo leaves them (git's gc removes the unreachable).
 *
 * The checks and the attacks they stop:
 *   - paths: relative, no "." or "..", bounded, no name of sbxsh's own temporaries
 *     (host_refusal; sf_check_relpath): a write outside the code directory, or over the
 *     stage itself;
 *   - every host directory is reached by sf_open_dir() beneath the root's held fd, without
 *     following a symlink, and every call here is an *at() call on such an fd (never a
 *     path: tests/integration/host-no-path-calls.t checks this file's object): a symlink the
 *     sandbox planted, or swapped in between check and use, leads nowhere;
 *   - modes: only the exec bit travels (never setuid, setgid or sticky), and no fifo,
 *     socket or device is ever made: a setuid binary or a device node on the host;
 *   - a code directory's .git: only git's own shapes (sync/gitpolicy.c's allowlists, and
 *     the contents of HEAD, refs and packed-refs checked on the staged file), never config,
 *     hooks or a gitfile: host git running the sandbox's programs;
 *     history is never deleted (git_plan): objects and reflogs stay, a deleted ref is noted
 *     in .git/sbxsh-deleted-refs, a removed repository is kept and pushed back: a sandbox
 *     `rm -rf .git` destroying the person's work;
 *   - no directory that git would take for a repository is made anywhere
 *     (repo_shape_refusal): a planted bare repository whose config runs programs when the
 *     person runs git there;
 *   - reflogs, FETCH_HEAD, MERGE_MSG and SQUASH_MSG get back the URL secrets the push
 *     removed (restore_credentials), so the host's files stay whole;
 *   - sync paths: only what the pattern names; create-only directories: only new files,
 *     never a change or deletion of one the host has (create_only_commit);
 *   - a change made on both sides keeps the host's version and puts the sandbox's beside it
 *     as NAME.sbx-conflict-sandbox-TIME, placed with RENAME_NOREPLACE so that no name is
 *     ever replaced (sf_conflict_place): losing the person's edits;
 *   - quotas: the disk (allocated bytes, every entry at least SYNC_ENTRY_COST) and the entry
 *     count, checked while staging and again before the commit: filling the host's disk or
 *     its inodes.
 */
#include "sync/apply_int.h"
#include "sync/gitcred.h"
#include "sync/gitindex.h"
#include "sync/gitpolicy.h"
#include "sync/journal.h"
#include "sync/safefs.h"
#include "common/fsat.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One op of the delta, staged: checked alone already (host_refusal), its file or symlink
 * (if any) in the root's stage under the name idx, nothing of it on the host tree yet. The
 * commit (commit_one) decides from the host tree as it is then, not as it was when the op
 * arrived: the person may have changed the host meanwhile. */
struct staged {
    uint8_t op, type;
    uint16_t root;
    bool exec;
    int64_t mtime_ns;
    char *path;
    size_t path_len;
    uint32_t idx;          /* name in the root's staging directory (REG, LNK) */
    uint64_t hash;
    uint64_t alloc;        /* PUT: what the entry costs the disk quota (entry_cost()) */
};

/* A host path that is not a directory where the sandbox has one: the sandbox's directory is
 * made beside it under a conflict name, and the ops beneath it follow it there (map_path),
 * so that a sandbox directory never replaces a host file. */
struct dir_rename {
    uint16_t root;
    char *from, *to;       /* a sandbox directory put aside under a conflict name */
};

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
    apply_drop_entry(rx);
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
        /* A fresh name, made here: mkdirat() never takes over a directory or symlink
         * already there, which the sandbox could have planted under a guessed name. */
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
        apply_warnf(rx, "refused a sandbox change to %s/%s: %s", r ? r->base : "?",
                    apply_shown(e->path, e->path_len, p, sizeof(p)), why);
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
    /* The mode is set on the staged file before the rename: umask's, or the host file's own
     * (a pull never widens a mode the person narrowed), plus the exec bit, never more. */
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

/* sf_conflict_place's place(): a directory made at cname (mkdirat fails with EEXIST on a
 * taken name). */
static int place_dir(int dfd, const char *cname, void *ctx)
{
    (void)ctx;
    return mkdirat(dfd, cname, 0755);
}

/* The manifest records what a commit installed, so the next push does not send it back. */
static void host_record(apply_rx *rx, const staged *s, int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        mf_record(rx->t, s->root, s->path, s->path_len, &st, s->hash, s->type == MF_REG);
}

/* ---- host: the undo journal ---------------------------------------------------------------- */

void apply_set_journal(apply_rx *rx, struct jnl *j)
{
    rx->journal = j;
}

/* Whether the commit of s is journaled: a journal is open, and s is not a git object (only
 * ever added; an undo leaves it). */
static bool journaled(const apply_rx *rx, const staged *s)
{
    return rx->journal && !(mf_root_at(rx->t, s->root)->kind == WIRE_ROOT_CODE &&
                            s->path_len > 13 && !memcmp(s->path, ".git/objects/", 13));
}

/* Saves what is at dfd/name before a write of s replaces or deletes it (old: '-' when
 * nothing is journaled). */
static void journal_take(apply_rx *rx, const staged *s, int dfd, const char *name,
                         const struct stat *cur, jnl_state *old)
{
    memset(old, 0, sizeof(*old));
    old->type = '-';
    if (journaled(rx, s))
        jnl_take(rx->journal, dfd, name, cur, old);
}

/* The write of s to dfd/name (at path, as mapped) is done: the change is recorded with the
 * state it left (a file's hash is the staged content's, s->hash). */
static void journal_done(apply_rx *rx, const staged *s, const char *path, size_t len, int dfd,
                         const char *name, jnl_state *old)
{
    jnl_state now;
    struct stat st;
    char t[SYNC_MAX_LINK + 1];
    if (!journaled(rx, s)) {
        jnl_state_free(old);
        return;
    }
    memset(&now, 0, sizeof(now));
    now.type = '-';
    if (s->op == WIRE_OP_PUT && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        now.mode = st.st_mode & 07777;
        if (S_ISDIR(st.st_mode)) {
            now.type = 'd';
        } else if (S_ISLNK(st.st_mode)) {
            ssize_t n = readlinkat(dfd, name, t, sizeof(t) - 1);
            now.type = 'l';
            t[n > 0 ? n : 0] = '\0';
            now.target = t;
        } else {
            now.type = 'f';
            now.size = (uint64_t)st.st_size;
            now.hash = s->hash;
            now.mtime_ns = sf_stat_mtime(&st);
        }
    }
    jnl_record(rx->journal, mf_root_at(rx->t, s->root)->base, path, len, old, &now);
}

/* A conflict copy or directory made at cname in the parent of path (dlen): recorded as added. */
static void journal_added(apply_rx *rx, const staged *s, const strbuf *path, size_t dlen,
                          int dfd, const char *cname)
{
    jnl_state none = { .type = '-' };
    strbuf p = STRBUF_INIT;
    if (!journaled(rx, s))
        return;
    strbuf_addf(&p, "%.*s%s%s", (int)dlen, path->buf, dlen ? "/" : "", cname);
    journal_done(rx, s, p.buf, p.len, dfd, cname, &none);
    strbuf_release(&p);
}

static void journal_warn(void *ctx, const char *msg)
{
    apply_warnf(ctx, "%s", msg);
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
    apply_shown(ref, ref_len, rshown, sizeof(rshown));
    apply_shown(val, val_len, vshown, sizeof(vshown));
    strbuf_addf(&line, "%s%s %s %s\n", sym ? "ref:" : "", vshown, rshown, when);
    if (fd < 0 || write_full(fd, line.buf, line.len) < 0)
        apply_warnf(rx, "cannot record the deleted ref %s (it was %s) in %s/.git/" GIT_NOTE ": %s",
                    rshown, vshown, r->base, strerror(errno));
    else
        apply_warnf(rx, "deleted ref %s in %s/.git: it was %s%s (recorded in .git/" GIT_NOTE ")",
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

/* Rewrites staged file s with the bytes the host decided on (merged), in place: the stage is
 * the host's own directory, never the sandbox's. The manifest then records what the host
 * has (s->hash), at s->mtime_ns. -1 when it cannot be written: the sandbox's bytes may be
 * half gone from the stage, and the caller commits nothing of this path. */
static int restage(apply_rx *rx, staged *s, const strbuf *merged)
{
    char sname[32];
    struct stat st;
    mf_hasher hs;
    int fd;

    snprintf(sname, sizeof(sname), "%u", s->idx);
    fd = openat(rx->stage_fd[s->root], sname, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (write_full(fd, merged->buf, merged->len) < 0) {
        close(fd);
        return -1;
    }
    mf_hash_init(&hs);
    mf_hash_update(&hs, merged->buf, merged->len);
    s->hash = mf_hash_final(&hs);
    sf_set_mtime(fd, s->mtime_ns);
    if (fstat(fd, &st) == 0)
        s->alloc = (uint64_t)allocated(&st);
    close(fd);
    return 0;
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
    if (restage(rx, s, &merged) < 0)
        why = "the staged file cannot be rewritten";
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
    struct stat hst;
    bool have_host;
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
    /* Half written, nothing is committed (the host keeps its index). */
    s->mtime_ns = apply_index_mtime(s->mtime_ns, have_host ? &hst : NULL);
    ret = restage(rx, s, &merged);
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
    apply_shown(s->path, s->path_len, p, sizeof(p));
    if (s->op == WIRE_OP_DELETE || (cur && (s->type == MF_DIR) != S_ISDIR(cur->st_mode)) ||
        (cur && s->type == MF_REG && !same_version(rx, s, dfd, name, cur))) {
        if (!cur) {
            mf_forget(rx->t, s->root, s->path, s->path_len);
            return;
        }
        apply_warnf(rx, "refused a sandbox change to %s/%s: %s/%s is create-only (the sandbox may "
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
            apply_warnf(rx, "cannot create %s/%s: %s", r->base, p, strerror(errno));
            return;
        }
    } else if (install_at(rx, s, dfd, name, NULL, true) < 0) {
        if (errno == EEXIST)
            apply_warnf(rx, "refused a sandbox change to %s/%s: %s/%s is create-only, and the host "
                        "made that file meanwhile; the host's is kept", r->base, p, r->base,
                        r->pattern);
        else
            apply_warnf(rx, "cannot write %s/%s: %s", r->base, p, strerror(errno));
        return;
    }
    {
        jnl_state none = { .type = '-' };
        journal_done(rx, s, s->path, s->path_len, dfd, name, &none);
    }
    account(rx, (int64_t)s->alloc, 1);   /* quota */
    host_record(rx, s, dfd, name);
}

/*
 * One staged op lands on the host, or is refused with a warning (the rest of the delta still
 * commits: the ops are independent, and each refusal leaves the host's version in place).
 * In order, each check before anything on the host is made for it:
 *   1. under .git, the staged file's content must be git's shape for its path (HEAD, a
 *      ref, packed-refs: a ref that is really a gitfile or a symbolic ref out of refs/ would
 *      point host git elsewhere);
 *   2. no directory on the way may become a repository (repo_shape_refusal);
 *   3. a file whose URL secrets the push removed gets the host's back, or is refused;
 *   4. the code directory's index is merged with the host's (stat data: host_merge_index);
 *   5. its parent is opened beneath the root's held fd without following a symlink, and
 *      made if missing (sf_open_dir): from here every call is relative to that fd, so a
 *      symlink or a rename the sandbox (or anyone) makes in the path cannot redirect it;
 *   6. what is there now (fstatat, no follow) against the manifest: a host change since the
 *      last sync (host_changed), or a push of this path still in flight to the agent
 *      (crossing), makes it a conflict: the host's version stays, the sandbox's goes beside
 *      it under a new name (never replacing one);
 *   7. the op: a deletion (git history kept: git_deletion), a directory, or a file or
 *      symlink renamed from the stage; the quota's totals and the manifest follow.
 */
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
            apply_warnf(rx, "refused a sandbox change to %s/%s: %s", r->base,
                        apply_shown(s->path, s->path_len, p, sizeof(p)), why);
            return;
        }
    }
    if (s->op == WIRE_OP_PUT) {
        /* Before anything (a parent directory) is made: see repo_shape_refusal(). */
        strbuf shape = STRBUF_INIT;
        if (repo_shape_refusal(rx, s, path, &shape)) {
            char p[512], d[512];
            apply_warnf(rx, "refused a sandbox change to %s/%s: it would make %s%s%s a git "
                        "repository (HEAD beside refs/ or commondir), whose config and hooks git "
                        "on the host would run; the sandbox keeps its copy", r->base,
                  apply_shown(path->buf, path->len, p, sizeof(p)), r->base, shape.len ? "/" : "",
                        apply_shown(shape.buf, shape.len, d, sizeof(d)));
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
            apply_warnf(rx, "refused a sandbox change to %s/%s: %s", r->base,
                        apply_shown(s->path, s->path_len, p, sizeof(p)), why);
            return;
        }
    }
    if (g && s->op == WIRE_OP_PUT && s->type == MF_REG &&
        apply_is_code_index(rx, s->root, s->path, s->path_len)) {
        if (host_merge_index(rx, &rx->ops[s - rx->ops]) < 0) {
            apply_warnf(rx, "refused a sandbox change to %s/%s: the staged file cannot be "
                        "rewritten", r->base, s->path);
            return;
        }
    }
    /* Step 5: the parent, held by fd from here on (checks hold at the time of use). */
    sf_split(path->buf, path->len, &dlen, &name);
    rfd = mf_root_fd(rx->t, s->root, false);
    if (rfd < 0) {
        apply_warnf(rx, "refused a sandbox change to %s/%s: %s is missing on the host", r->base,
                    s->path, r->base);
        return;
    }
    dfd = sf_open_dir(rfd, path->buf, dlen, s->op == WIRE_OP_PUT, &err);
    if (dfd < 0) {
        if (s->op == WIRE_OP_DELETE && errno == ENOENT) {
            mf_forget(rx->t, s->root, s->path, s->path_len);
            return;
        }
        apply_warnf(rx, "refused a sandbox change to %s/%s: %s", r->base, s->path, err.msg);
        return;
    }
    /* Step 6: what the host has at the name now, and whether it moved since the last sync.
     * A path mapped under a directory put aside is new by construction (a conflict copy). */
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

    /* A deletion removes only what the host did not change since: a sandbox `rm` never
     * takes a host edit with it (kept, with a warning), and a directory only when empty
     * (what the host has in it and the sandbox never saw stays). */
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
                apply_warnf(rx, "kept %s/%s: deleted in the sandbox but changed on the host",
                            r->base, s->path);
        } else {
            jnl_state jold;
            journal_take(rx, s, dfd, name, &cur, &jold);
            if (unlinkat(dfd, name, S_ISDIR(cur.st_mode) ? AT_REMOVEDIR : 0) == 0) {
                journal_done(rx, s, path->buf, path->len, dfd, name, &jold);
                mf_forget(rx->t, s->root, s->path, s->path_len);
                account(rx, -allocated(&cur), -1);   /* quota */
                if (g)
                    git_deleted(rx, s, g, kind, &old);
            } else {
                int e = errno;
                jnl_state_free(&jold);
                if (e != ENOTEMPTY && e != EEXIST)
                    apply_warnf(rx, "cannot delete %s/%s: %s", r->base, s->path, strerror(e));
            }
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
                apply_warnf(rx, "cannot create %s/%s: %s", r->base, path->buf, strerror(errno));
            } else {
                jnl_state none = { .type = '-' };
                journal_done(rx, s, path->buf, path->len, dfd, name, &none);
                account(rx, (int64_t)s->alloc, 1);   /* quota */
                if (!mapped)
                    host_record(rx, s, dfd, name);
            }
        } else {
            char cname[NAME_MAX + 1];
            if (sf_conflict_place(dfd, name, cname, sizeof(cname), place_dir, NULL) == 0) {
                dir_rename *dr;
                journal_added(rx, s, path, dlen, dfd, cname);
                account(rx, (int64_t)s->alloc, 1);   /* quota */
                XGROW(rx->renames, rx->arenames, rx->nrenames + 1);
                dr = &rx->renames[rx->nrenames++];
                dr->root = s->root;
                dr->from = xstrndup(s->path, s->path_len);
                dr->to = xasprintf("%.*s%s%s", (int)dlen, path->buf, dlen ? "/" : "", cname);
                apply_warnf(rx, "conflict: %s/%s is a directory in the sandbox but not on the "
                            "host; kept the host's version, the sandbox's is now %s/%s", r->base,
                            s->path, r->base, dr->to);
            }
        }
        close(dfd);
        return;
    }

    /* A file or a symlink: installed by rename over the host's only when the host did not
     * change it (the rename is atomic: a reader sees the old or the new file, never half);
     * otherwise a conflict copy beside it, placed with RENAME_NOREPLACE. A change to the
     * same result on both sides is no conflict (same_version). */
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
        jnl_state jold;
        if (packed && have_cur)
            read_host_file(rx, s->root, s->path, s->path_len, GIT_PACKED_REFS_MAX, &old_packed);
        journal_take(rx, s, dfd, name, have_cur ? &cur : NULL, &jold);
        if (install(rx, s, dfd, name, have_cur ? &cur : NULL) < 0) {
            int e = errno;
            jnl_state_free(&jold);
            apply_warnf(rx, "cannot write %s/%s: %s", r->base, path->buf, strerror(e));
        } else {
            journal_done(rx, s, path->buf, path->len, dfd, name, &jold);
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
            apply_warnf(rx, "cannot write %s/%s: %s", r->base, cname, strerror(errno));
        } else {
            journal_added(rx, s, path, dlen, dfd, cname);
            account(rx, (int64_t)s->alloc, 1);   /* quota */
            apply_warnf(rx, "conflict: %s/%s changed both on the host and in the sandbox; kept the "
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
    /* One journal entry for the commit; without the journal's lock, none (said). */
    struct jnl *journal = rx->journal;
    if (journal && !jnl_begin(journal, journal_warn, rx))
        rx->journal = NULL;
    for (size_t i = 0; i < rx->nops; i++)
        commit_one(rx, &rx->ops[i], &path, plans);
    if (rx->journal)
        jnl_end(rx->journal);
    rx->journal = journal;
    for (size_t i = 0; i < n; i++) {
        if (plans[i].restore) {
            /* The sandbox's repository is gone or lost HEAD's branch, the host's is whole:
             * forgetting it makes the next push send all of it back. */
            char p[512];
            mf_forget(rx->t, i, ".git", 4);
            mf_invalidate(rx->t);
            apply_warnf(rx, "the sandbox removed %s/%s: a pull never deletes git history, so the "
                  "host kept its repository, and the next command brings it back to the sandbox",
                        mf_root_at(rx->t, i)->base,
                        apply_shown(plans[i].why, strlen(plans[i].why), p, sizeof(p)));
        }
        git_plan_release(&plans[i]);
    }
    free(plans);
    strbuf_release(&path);
    clear_staging(rx);
}

/* ---- the hooks apply.c calls -------------------------------------------------------------- */

/* DELTA_END on the host: the commit, or nothing when the delta was refused or does not fit. */
static void host_delta_end(apply_rx *rx)
{
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

/* Content was written to the staged file: checked against the disk quota as it comes (the
 * file's data so far on top of the finished entries' cost), so that the stage itself never
 * holds more than the quota leaves: a single huge file is refused while it arrives. */
static void host_wrote(apply_rx *rx)
{
    over_quota(rx, rx->stage_cost + rx->e_data);
}

const struct apply_side apply_host_side = {
    .host = true,
    .entry = host_entry,
    .finish_file = host_finish_file,
    .wrote = host_wrote,
    .end = host_delta_end,
    .clear = clear_staging,
};
