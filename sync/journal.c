/*
 * The undo journal (journal.h): what a pull replaced or deleted on the host, saved before the
 * write, and the undo that puts it back. Trusted host code, like hostwrite.c: every file
 * system call is an *at() call beneath a held fd (the session's state directory, a code
 * directory's), never a path (tests/host-no-path-calls.sh).
 *
 * The log (journal/log) is text, one record per line, fields separated by one space:
 *
 *   E ID TIME KIND LABEL        an entry begins (KIND: pull or undo)
 *   C ROOT PATH OLD CUR         one change of it: the path's state before and after
 *   Z ID                        the entry is complete (one write() carries E..Z)
 *
 * Strings (LABEL, ROOT, PATH, a link target) are written as '=' then their bytes, each byte
 * that is a space, a control, '%' or not ASCII as %XX. A state is "-" (absent), "d:MODE",
 * "f:MODE:SIZE:HASH:MTIME:OBJ" (OBJ "." when the content was not saved: the state a pull
 * left, which the tree holds) or "l:=TARGET". An entry without its Z (a crash mid-write) is
 * skipped by the parser, which checks every field (fuzzed: tests/fuzz/fuzz-journal.c).
 *
 * A pull's commit, as a state machine: jnl_begin() (lock taken, the entry open) -> for each
 * host write, jnl_take() (the old state saved: the object linked, cloned or copied) and
 * jnl_record() (the change added) -> jnl_end() (the entry written in one write, the bound
 * applied, the lock let go). Without the lock (10 s) the pull commits unjournaled, and says so.
 */
#include "sync/journal.h"
#include "sync/manifest.h"
#include "sync/safefs.h"
#include "common/fsat.h"
#include "common/strvec.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define LOG_NAME "log"
#define OBJ_DIR "objects"
#define LOCK_NAME "lock"
/* What a change costs the bound besides its object: its record, and the inode a restore
 * makes (as the pull quota counts every entry). */
#define CHANGE_COST 4096
#define LOCK_WAIT_MS 10000

enum save_mode { SAVE_LINK, SAVE_CLONE, SAVE_COPY };

struct jnl {
    int dirfd, objfd, lockfd;
    bool locked;
    uint64_t max;
    enum save_mode save;
    char *label;
    jnl_notify_fn notify;
    void *nctx;
    jnl_warn_fn warn;
    void *wctx;
    jnl_entry cur;        /* the entry being made (between jnl_begin and jnl_end) */
    bool open;
    uint64_t new_bytes;   /* what the objects this entry made cost the bound */
    /* What the last full read found, while the log is the size it left (no other writer
     * since): the next id and the bound's total, so that a pull appends without reading the
     * whole log (an entry of 50,000 files would otherwise be read again by every pull). */
    bool known;
    uint64_t known_size, known_next, known_total;
};

/* ---- strings and states as text ----------------------------------------------------------- */

static void put_str(strbuf *sb, const char *s, size_t n)
{
    strbuf_addch(sb, '=');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 0x7f || c == '%')
            strbuf_addf(sb, "%%%02X", c);
        else
            strbuf_addch(sb, (char)c);
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* A field written by put_str, decoded (NUL bytes refused: paths and labels have none). */
static char *get_str(const char *f, size_t n)
{
    strbuf sb = STRBUF_INIT;
    if (n < 1 || f[0] != '=')
        return NULL;
    for (size_t i = 1; i < n; i++) {
        if (f[i] == '%') {
            int a, b;
            if (i + 2 >= n) {
                strbuf_release(&sb);
                return NULL;
            }
            a = hexval(f[i + 1]);
            b = hexval(f[i + 2]);
            if (a < 0 || b < 0 || (a == 0 && b == 0)) {
                strbuf_release(&sb);
                return NULL;
            }
            strbuf_addch(&sb, (char)(a * 16 + b));
            i += 2;
        } else {
            strbuf_addch(&sb, f[i]);
        }
    }
    return strbuf_detach(&sb, NULL);
}

static void put_state(strbuf *sb, const jnl_state *s)
{
    switch (s->type) {
    case 'd':
        strbuf_addf(sb, "d:%o", (unsigned)(s->mode & 07777));
        break;
    case 'f':
        strbuf_addf(sb, "f:%o:%" PRIu64 ":%016" PRIx64 ":%" PRId64 ":%s", (unsigned)(s->mode & 07777),
                    s->size, s->hash, s->mtime_ns, s->obj[0] ? s->obj : ".");
        break;
    case 'l':
        strbuf_addstr(sb, "l:");
        put_str(sb, s->target ? s->target : "", s->target ? strlen(s->target) : 0);
        break;
    default:
        strbuf_addch(sb, '-');
    }
}

/* A decimal or hex number filling exactly [p, p+n). */
static bool get_num(const char *p, size_t n, int base, bool sign, uint64_t max, uint64_t *out,
                    bool *neg)
{
    uint64_t v = 0;
    size_t i = 0;
    *neg = false;
    if (sign && n && p[0] == '-') {
        *neg = true;
        i = 1;
    }
    if (i >= n || n - i > 20)
        return false;
    for (; i < n; i++) {
        int d = hexval(p[i]);
        if (d < 0 || d >= base || (base == 16 && p[i] >= 'A' && p[i] <= 'F'))
            return false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

static bool is_obj_name(const char *p, size_t n)
{
    /* HASH (16 hex) '-' SIZE */
    if (n < 18 || n > 40 || p[16] != '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (i != 16 && !((p[i] >= '0' && p[i] <= '9') || (i < 16 && p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

static bool get_state(const char *f, size_t n, jnl_state *s)
{
    const char *part[6];
    size_t plen[6], np = 0, i = 0;
    uint64_t v;
    bool neg;

    memset(s, 0, sizeof(*s));
    if (n == 1 && f[0] == '-') {
        s->type = '-';
        return true;
    }
    if (n >= 2 && f[0] == 'l' && f[1] == ':') {
        s->type = 'l';
        s->target = get_str(f + 2, n - 2);
        return s->target && s->target[0] && strlen(s->target) <= 4095;
    }
    while (i <= n && np < 6) {
        size_t j = i;
        while (j < n && f[j] != ':')
            j++;
        part[np] = f + i;
        plen[np++] = j - i;
        i = j + 1;
    }
    if (i <= n)
        return false;   /* more than six parts */
    if (plen[0] != 1)
        return false;
    s->type = f[0];
    if (s->type == 'd' && np == 2) {
        if (!get_num(part[1], plen[1], 8, false, 07777, &v, &neg))
            return false;
        s->mode = (uint32_t)v;
        return true;
    }
    if (s->type != 'f' || np != 6)
        return false;
    if (!get_num(part[1], plen[1], 8, false, 07777, &v, &neg))
        return false;
    s->mode = (uint32_t)v;
    if (!get_num(part[2], plen[2], 10, false, UINT64_MAX, &s->size, &neg))
        return false;
    if (plen[3] != 16 || !get_num(part[3], plen[3], 16, false, UINT64_MAX, &s->hash, &neg))
        return false;
    if (!get_num(part[4], plen[4], 10, true, INT64_MAX, &v, &neg))
        return false;
    s->mtime_ns = neg ? -(int64_t)v : (int64_t)v;
    if (plen[5] == 1 && part[5][0] == '.')
        return true;
    if (!is_obj_name(part[5], plen[5]))
        return false;
    memcpy(s->obj, part[5], plen[5]);
    s->obj[plen[5]] = '\0';
    return true;
}

void jnl_state_free(jnl_state *s)
{
    free(s->target);
    s->target = NULL;
}

static void change_free(jnl_change *c)
{
    free(c->root);
    free(c->path);
    jnl_state_free(&c->old);
    jnl_state_free(&c->cur);
}

static void entry_free(jnl_entry *e)
{
    for (size_t i = 0; i < e->n; i++)
        change_free(&e->changes[i]);
    free(e->changes);
    free(e->label);
    memset(e, 0, sizeof(*e));
}

void jnl_log_free(jnl_log *l)
{
    for (size_t i = 0; i < l->n; i++)
        entry_free(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static void put_entry(strbuf *sb, const jnl_entry *e)
{
    strbuf_addf(sb, "E %" PRIu64 " %" PRId64 " %s ", e->id, e->time, e->kind);
    put_str(sb, e->label ? e->label : "", e->label ? strlen(e->label) : 0);
    strbuf_addch(sb, '\n');
    for (size_t i = 0; i < e->n; i++) {
        const jnl_change *c = &e->changes[i];
        strbuf_addstr(sb, "C ");
        put_str(sb, c->root, strlen(c->root));
        strbuf_addch(sb, ' ');
        put_str(sb, c->path, strlen(c->path));
        strbuf_addch(sb, ' ');
        put_state(sb, &c->old);
        strbuf_addch(sb, ' ');
        put_state(sb, &c->cur);
        strbuf_addch(sb, '\n');
    }
    strbuf_addf(sb, "Z %" PRIu64 "\n", e->id);
}

void jnl_log_format(const jnl_log *l, strbuf *out)
{
    for (size_t i = 0; i < l->n; i++)
        put_entry(out, &l->v[i]);
}

/* ---- the parser -------------------------------------------------------------------------- */

/* Splits a line into at most max fields at single spaces; -1 when it has more. */
static int fields(const char *p, size_t n, const char **f, size_t *fl, int max)
{
    int k = 0;
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && p[j] != ' ')
            j++;
        if (k == max)
            return -1;
        f[k] = p + i;
        fl[k++] = j - i;
        i = j + 1;
    }
    return k;
}

int jnl_parse(const char *buf, size_t len, jnl_log *out)
{
    jnl_entry e;
    bool in = false;
    size_t pos = 0;

    memset(out, 0, sizeof(*out));
    memset(&e, 0, sizeof(e));
    while (pos < len) {
        const char *line = buf + pos, *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        const char *f[6];
        size_t fl[6];
        int k;
        uint64_t v;
        bool neg;

        pos += n + (nl ? 1 : 0);
        if (!nl)
            break;   /* a line cut short */
        k = fields(line, n, f, fl, 6);
        if (k < 1 || fl[0] != 1)
            goto bad;
        switch (f[0][0]) {
        case 'E':
            if (in)
                entry_free(&e);
            in = false;
            if (k != 5 || !get_num(f[1], fl[1], 10, false, UINT64_MAX - 1, &e.id, &neg) ||
                !get_num(f[2], fl[2], 10, false, INT64_MAX, &v, &neg) || fl[3] > 4 ||
                (memcmp(f[3], "pull", fl[3]) && memcmp(f[3], "undo", fl[3])) || fl[3] != 4)
                goto bad;
            e.time = (int64_t)v;
            memcpy(e.kind, f[3], 4);
            e.kind[4] = '\0';
            e.label = get_str(f[4], fl[4]);
            if (!e.label)
                goto bad;
            in = true;
            break;
        case 'C': {
            jnl_change c;
            sbx_err err;
            if (!in || k != 5)
                goto bad;
            memset(&c, 0, sizeof(c));
            c.root = get_str(f[1], fl[1]);
            c.path = get_str(f[2], fl[2]);
            if (!c.root || c.root[0] != '/' || !c.path ||
                sf_check_relpath(c.path, strlen(c.path), &err) < 0 ||
                !get_state(f[3], fl[3], &c.old) || !get_state(f[4], fl[4], &c.cur)) {
                change_free(&c);
                goto bad;
            }
            XGROW(e.changes, e.alloc, e.n + 1);
            e.changes[e.n++] = c;
            break;
        }
        case 'Z':
            if (!in || k != 2 || !get_num(f[1], fl[1], 10, false, UINT64_MAX, &v, &neg) ||
                v != e.id || (out->n && out->v[out->n - 1].id >= e.id))
                goto bad;
            XGROW(out->v, out->alloc, out->n + 1);
            out->v[out->n++] = e;
            memset(&e, 0, sizeof(e));
            in = false;
            break;
        default:
            goto bad;
        }
        continue;
    bad:
        /* the entry this line belongs to is dropped whole */
        if (in)
            entry_free(&e);
        in = false;
    }
    if (in)
        entry_free(&e);
    return 0;
}

/* ---- opening, the lock --------------------------------------------------------------------- */

int jnl_open(int statefd, uint64_t max_bytes, jnl **out, sbx_err *err)
{
    jnl *j = xcalloc(1, sizeof(*j));
    j->dirfd = j->objfd = j->lockfd = -1;
    j->max = max_bytes ? max_bytes : JNL_DEFAULT_MAX;
    j->save = SAVE_LINK;
    if (mkdirat(statefd, "journal", 0700) < 0 && errno != EEXIST)
        goto fail;
    j->dirfd = openat(statefd, "journal", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (j->dirfd < 0)
        goto fail;
    if (mkdirat(j->dirfd, OBJ_DIR, 0700) < 0 && errno != EEXIST)
        goto fail;
    j->objfd = openat(j->dirfd, OBJ_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (j->objfd < 0)
        goto fail;
    j->lockfd = openat(j->dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (j->lockfd < 0)
        goto fail;
    *out = j;
    return 0;
fail:
    sbx_errno(err, "cannot open the undo journal");
    jnl_free(j);
    return -1;
}

void jnl_free(jnl *j)
{
    if (!j)
        return;
    if (j->open)
        entry_free(&j->cur);
    if (j->dirfd >= 0)
        close(j->dirfd);
    if (j->objfd >= 0)
        close(j->objfd);
    if (j->lockfd >= 0)
        close(j->lockfd);
    free(j->label);
    free(j);
}

void jnl_set_label(jnl *j, const char *label)
{
    free(j->label);
    j->label = label ? xstrdup(label) : NULL;
}

void jnl_set_notify(jnl *j, jnl_notify_fn fn, void *ctx)
{
    j->notify = fn;
    j->nctx = ctx;
}

void jnl_set_save_mode(jnl *j, const char *mode)
{
    if (mode && !strcmp(mode, "copy"))
        j->save = SAVE_COPY;
    else if (mode && !strcmp(mode, "clone"))
        j->save = SAVE_CLONE;
    else
        j->save = SAVE_LINK;
}

/* The lock, waited for at most LOCK_WAIT_MS (an undo at a prompt does not hold it). */
static bool lock_take(jnl *j)
{
    for (int waited = 0; waited <= LOCK_WAIT_MS; waited += 20) {
        if (flock(j->lockfd, LOCK_EX | LOCK_NB) == 0) {
            j->locked = true;
            return true;
        }
        if (errno != EWOULDBLOCK && errno != EINTR)
            return false;
        usleep(20000);
    }
    return false;
}

static void lock_drop(jnl *j)
{
    if (j->locked)
        flock(j->lockfd, LOCK_UN);
    j->locked = false;
}

static void warnf(jnl *j, const char *fmt, ...) SBX_PRINTF(2, 3);
static void warnf(jnl *j, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (j->warn)
        j->warn(j->wctx, msg);
}

/* ---- saving a state ------------------------------------------------------------------------ */

/* Clones or copies fd's content into a fresh file of dirfd (a temporary name); 0 with the
 * name in tmp. */
static int clone_or_copy(int fd, int dirfd, char *tmp, size_t tmpsz, bool try_clone)
{
    int to = sf_mktemp(dirfd, tmp, tmpsz, 0600);
    if (to < 0)
        return -1;
    if (!(try_clone && ioctl(to, FICLONE, fd) == 0) && sf_copy_fd(fd, to) < 0) {
        int e = errno;
        close(to);
        unlinkat(dirfd, tmp, 0);
        errno = e;
        return -1;
    }
    close(to);
    return 0;
}

/* What an object of st's size costs the bound. */
static uint64_t obj_cost(const struct stat *st)
{
    uint64_t a = (uint64_t)st->st_blocks * 512;
    return a > (uint64_t)st->st_size ? a : (uint64_t)st->st_size;
}

/* The content of the regular file fd (st its fstat; dfd/name where it is) into objects/,
 * named by hash and size; s->obj gets the name. A hard link first (the same inode: a pull
 * never writes into a file, it renames over it), then a clone, then a copy. */
static int save_object(jnl *j, int fd, const struct stat *st, int dfd, const char *name,
                       jnl_state *s)
{
    char tmp[96];
    struct stat ost;

    if (mf_hash_fd(fd, &s->hash) < 0)
        return -1;
    snprintf(s->obj, sizeof(s->obj), "%016" PRIx64 "-%" PRIu64, s->hash, (uint64_t)st->st_size);
    /* The same content saved already: kept, unless its inode has another name (a link whose
     * pull failed, say), whose in-place edit would change it. */
    if (fstatat(j->objfd, s->obj, &ost, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(ost.st_mode) &&
        ost.st_size == st->st_size && ost.st_nlink == 1)
        return 0;
    /* A link only to a file with no other name: after the pull's rename the inode is the
     * journal's alone (one the person hard-linked elsewhere could still be edited there). */
    if (j->save == SAVE_LINK && st->st_nlink == 1) {
        sf_tempname(tmp, sizeof(tmp));
        if (linkat(dfd, name, j->objfd, tmp, 0) == 0) {
            /* the name may have been swapped meanwhile: keep the link only if it is fd's */
            if (fstatat(j->objfd, tmp, &ost, AT_SYMLINK_NOFOLLOW) == 0 &&
                ost.st_ino == st->st_ino && ost.st_dev == st->st_dev &&
                renameat(j->objfd, tmp, j->objfd, s->obj) == 0) {
                j->new_bytes += obj_cost(&ost);
                return 0;
            }
            unlinkat(j->objfd, tmp, 0);
        }
    }
    if (clone_or_copy(fd, j->objfd, tmp, sizeof(tmp), j->save != SAVE_COPY) < 0)
        return -1;
    if (renameat(j->objfd, tmp, j->objfd, s->obj) < 0) {
        unlinkat(j->objfd, tmp, 0);
        return -1;
    }
    if (fstatat(j->objfd, s->obj, &ost, AT_SYMLINK_NOFOLLOW) == 0)
        j->new_bytes += obj_cost(&ost);
    return 0;
}

/* What is at dfd/name now (no symlink followed), described; with save, a file's content is
 * saved as an object. -1 when it cannot be read. */
static int take_state(jnl *j, int dfd, const char *name, bool save, jnl_state *s)
{
    struct stat st;
    memset(s, 0, sizeof(*s));
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        s->type = '-';
        return errno == ENOENT ? 0 : -1;
    }
    s->mode = st.st_mode & 07777;
    if (S_ISDIR(st.st_mode)) {
        s->type = 'd';
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        char t[4097];
        ssize_t n = readlinkat(dfd, name, t, sizeof(t) - 1);
        if (n <= 0)
            return -1;
        t[n] = '\0';
        s->type = 'l';
        s->target = xstrdup(t);
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return -1;   /* a fifo or device: never the journal's (nor a pull's) */
    s->type = 'f';
    s->size = (uint64_t)st.st_size;
    s->mtime_ns = sf_stat_mtime(&st);
    {
        int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat fst;
        int r = -1;
        if (fd < 0)
            return -1;
        if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_ino == st.st_ino) {
            s->size = (uint64_t)fst.st_size;
            r = save ? save_object(j, fd, &fst, dfd, name, s) : mf_hash_fd(fd, &s->hash);
        }
        close(fd);
        return r;
    }
}

bool jnl_begin(jnl *j, jnl_warn_fn warn, void *ctx)
{
    j->warn = warn;
    j->wctx = ctx;
    if (!lock_take(j)) {
        warnf(j, "the undo journal is busy (another sbx undo?): this pull is applied without "
                 "it, and cannot be undone");
        return false;
    }
    memset(&j->cur, 0, sizeof(j->cur));
    j->open = true;
    j->new_bytes = 0;
    return true;
}

void jnl_take(jnl *j, int dfd, const char *name, const struct stat *cur, jnl_state *old)
{
    memset(old, 0, sizeof(*old));
    old->type = '-';
    if (!j->open || !cur)
        return;
    if (take_state(j, dfd, name, true, old) < 0) {
        jnl_state_free(old);
        memset(old, 0, sizeof(*old));
        old->type = '?';   /* not saved: the change is not recorded */
    }
}

void jnl_record(jnl *j, const char *root, const char *path, size_t len, jnl_state *old,
                const jnl_state *cur)
{
    jnl_change *c;
    if (!j->open || old->type == '?') {
        if (j->open && old->type == '?') {
            char shown[256];
            size_t k = 0;
            for (size_t i = 0; i < len && k + 1 < sizeof(shown); i++)
                shown[k++] = ((unsigned char)path[i] < ' ' || path[i] == 0x7f) ? '?' : path[i];
            shown[k] = '\0';
            warnf(j, "the undo journal could not save %s/%s before the pull replaced it: "
                     "sbx undo cannot bring it back", root, shown);
        }
        jnl_state_free(old);
        return;
    }
    XGROW(j->cur.changes, j->cur.alloc, j->cur.n + 1);
    c = &j->cur.changes[j->cur.n++];
    memset(c, 0, sizeof(*c));
    c->root = xstrdup(root);
    c->path = xstrndup(path, len);
    c->old = *old;
    memset(old, 0, sizeof(*old));
    c->cur = *cur;
    c->cur.target = cur->target ? xstrdup(cur->target) : NULL;
}

/* ---- the log on disk, the bound ---------------------------------------------------------- */

int jnl_read(jnl *j, jnl_log *out, sbx_err *err)
{
    strbuf sb = STRBUF_INIT;
    int fd = openat(j->dirfd, LOG_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    memset(out, 0, sizeof(*out));
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return sbx_errno(err, "cannot read the undo journal");
    }
    if (strbuf_read_fd(&sb, fd, (size_t)1 << 30) < 0) {
        close(fd);
        strbuf_release(&sb);
        return sbx_errno(err, "cannot read the undo journal");
    }
    close(fd);
    jnl_parse(sb.buf, sb.len, out);
    strbuf_release(&sb);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The objects entries [first, n) of l refer to, sorted and unique, and what they and the
 * changes cost the bound. */
static uint64_t cost_of(jnl *j, const jnl_log *l, size_t first, strvec *objs)
{
    uint64_t total = 0;
    strvec_clear(objs);
    for (size_t i = first; i < l->n; i++)
        for (size_t k = 0; k < l->v[i].n; k++) {
            const jnl_state *o = &l->v[i].changes[k].old;
            total += CHANGE_COST;
            if (o->type == 'f' && o->obj[0])
                strvec_push(objs, o->obj);
        }
    if (objs->n)
        qsort(objs->v, objs->n, sizeof(char *), cmp_str);
    for (size_t i = 0; i < objs->n; i++) {
        struct stat st;
        if (i && !strcmp(objs->v[i], objs->v[i - 1]))
            continue;
        if (fstatat(j->objfd, objs->v[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
            total += obj_cost(&st);
    }
    return total;
}

/* Removes the objects no entry refers to (objs sorted): dropped entries', and any a crash
 * left. */
static void prune_objects(jnl *j, const strvec *objs)
{
    int fd = fcntl(j->objfd, F_DUPFD_CLOEXEC, 3);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    rewinddir(d);
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
            continue;
        if (objs->n && bsearch(&name, objs->v, objs->n, sizeof(char *), cmp_str))
            continue;
        unlinkat(j->objfd, name, 0);
    }
    closedir(d);
}

/* Rewrites the log with entries [first, n) of l (a temporary, then rename: the log is never
 * half written). */
static int rewrite_log(jnl *j, const jnl_log *l, size_t first)
{
    strbuf sb = STRBUF_INIT;
    char tmp[96];
    int fd, r = -1;
    for (size_t i = first; i < l->n; i++)
        put_entry(&sb, &l->v[i]);
    fd = sf_mktemp(j->dirfd, tmp, sizeof(tmp), 0600);
    if (fd >= 0) {
        if (write_full(fd, sb.buf, sb.len) == 0 && renameat(j->dirfd, tmp, j->dirfd, LOG_NAME) == 0)
            r = 0;
        else
            unlinkat(j->dirfd, tmp, 0);
        close(fd);
    }
    strbuf_release(&sb);
    return r;
}

static void human(char *buf, size_t n, uint64_t v)
{
    if (v < 1024 * 1024)
        snprintf(buf, n, "%" PRIu64 " KiB", (v + 1023) / 1024);
    else if (v < 1024ULL * 1024 * 1024)
        snprintf(buf, n, "%.1f MiB", (double)v / (1024.0 * 1024.0));
    else
        snprintf(buf, n, "%.1f GiB", (double)v / (1024.0 * 1024.0 * 1024.0));
}

/* Applies the bound: the oldest entries go until what is left fits (the newest too, when it
 * alone is over), each said; unreferenced objects are removed. The ids go on from next at
 * least (a log emptied by the bound does not start again at 1). */
static void apply_bound(jnl *j, uint64_t next)
{
    struct stat st;
    jnl_log l;
    sbx_err err;
    strvec objs = STRVEC_INIT;
    size_t first = 0;
    uint64_t total;
    if (jnl_read(j, &l, &err) < 0)
        return;
    total = cost_of(j, &l, 0, &objs);
    while (first < l.n && total > j->max) {
        const jnl_entry *e = &l.v[first];
        char m[32], shown[160];
        size_t k = 0;
        for (size_t i = 0; e->label && e->label[i] && k + 4 < sizeof(shown); i++)
            shown[k++] = ((unsigned char)e->label[i] < ' ' || e->label[i] == 0x7f) ? '?'
                                                                                 : e->label[i];
        shown[k] = '\0';
        human(m, sizeof(m), j->max);
        if (first + 1 == l.n)
            warnf(j, "the changes of `%s` alone are over the undo journal's bound "
                     "(AGENT_SANDBOX_UNDO_MAX=%s): they cannot be undone", shown, m);
        else
            warnf(j, "the undo journal dropped its oldest entry, %" PRIu64 " (`%s`), to stay "
                     "under AGENT_SANDBOX_UNDO_MAX=%s: it can no longer be undone", e->id, shown, m);
        first++;
        total = cost_of(j, &l, first, &objs);
    }
    if (first)
        rewrite_log(j, &l, first);
    if (first || l.n == 0)
        prune_objects(j, &objs);
    j->known = fstatat(j->dirfd, LOG_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0;
    j->known_size = j->known ? (uint64_t)st.st_size : 0;
    j->known_total = total;
    j->known_next = l.n && l.v[l.n - 1].id + 1 > next ? l.v[l.n - 1].id + 1 : next;
    strvec_clear(&objs);
    jnl_log_free(&l);
}

/* The next entry's id: one more than the log's last (0 when it has none). */
static uint64_t next_id(jnl *j)
{
    jnl_log l;
    sbx_err err;
    uint64_t id = 1;
    if (jnl_read(j, &l, &err) == 0 && l.n)
        id = l.v[l.n - 1].id + 1;
    jnl_log_free(&l);
    return id;
}

/* Writes j->cur (kind) as one append, then the bound: from what is known of the log when
 * no one else wrote it since (the common case: one holder), else from reading it all. */
static void write_entry(jnl *j, const char *kind)
{
    strbuf sb = STRBUF_INIT;
    struct stat st;
    bool hit = j->known && fstatat(j->dirfd, LOG_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               (uint64_t)st.st_size == j->known_size;
    int fd;
    j->cur.id = hit ? j->known_next : next_id(j);
    j->cur.time = (int64_t)time(NULL);
    snprintf(j->cur.kind, sizeof(j->cur.kind), "%s", kind);
    if (!j->cur.label)
        j->cur.label = xstrdup(j->label ? j->label : "");
    put_entry(&sb, &j->cur);
    fd = openat(j->dirfd, LOG_NAME, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write_full(fd, sb.buf, sb.len) < 0) {
        warnf(j, "cannot write the undo journal: %s", strerror(errno));
        hit = false;
    } else if (j->notify) {
        j->notify(j->nctx, &j->cur);
    }
    if (hit && fstat(fd, &st) == 0) {
        j->known_size = (uint64_t)st.st_size;
        j->known_next = j->cur.id + 1;
        j->known_total += (uint64_t)j->cur.n * CHANGE_COST + j->new_bytes;
    }
    if (fd >= 0)
        close(fd);
    strbuf_release(&sb);
    if (!hit || j->known_total > j->max)
        apply_bound(j, j->cur.id + 1);
}

void jnl_end(jnl *j)
{
    if (!j->open)
        return;
    if (j->cur.n)
        write_entry(j, "pull");
    entry_free(&j->cur);
    j->open = false;
    lock_drop(j);
}

/* ---- undo ---------------------------------------------------------------------------------- */

static const jnl_root *root_of(const jnl_root *roots, size_t n, const char *base)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(roots[i].base, base))
            return &roots[i];
    return NULL;
}

static bool same_state(const jnl_state *a, const jnl_state *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case 'f': return a->size == b->size && a->hash == b->hash;
    case 'l': return a->target && b->target && !strcmp(a->target, b->target);
    default: return true;
    }
}

static void state_copy(jnl_state *to, const jnl_state *from)
{
    *to = *from;
    to->target = from->target ? xstrdup(from->target) : NULL;
}

static jnl_step *find_step(jnl_plan *p, const char *root, const char *path)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->v[i].root, root) && !strcmp(p->v[i].path, path))
            return &p->v[i];
    return NULL;
}

/* The parent of rel beneath the root's fd (no symlink followed) and the last name. */
static int open_parent(const jnl_root *r, const char *rel, bool create, const char **name)
{
    size_t dlen;
    sbx_err err;
    sf_split(rel, strlen(rel), &dlen, name);
    return sf_open_dir(r->fd, rel, dlen, create, &err);
}

static void plan_clear(jnl_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].root);
        free(p->v[i].path);
        free(p->v[i].conflict);
        jnl_state_free(&p->v[i].target);
    }
    free(p->v);
    strbuf_release(&p->ids);
    memset(p, 0, sizeof(*p));
}

void jnl_plan_free(jnl_plan *p)
{
    plan_clear(p);
}

/* Plans with the log l (see jnl_plan_make). Walking the entries newest first, each change
 * backwards: the first time a path is met, what the host has must be the change's "cur" (else
 * a conflict: the host changed it since); each later (older) change of it must follow on from
 * the newer one; the path's target is the oldest change's "old". */
static int plan_with(jnl *j, const jnl_log *l, const jnl_root *roots, size_t nroots,
                     uint64_t from, uint64_t to, jnl_plan *p)
{
    memset(p, 0, sizeof(*p));
    strbuf_init(&p->ids, 0);
    for (size_t i = l->n; i-- > 0;) {
        const jnl_entry *e = &l->v[i];
        if (e->id < from || e->id > to)
            continue;
        strbuf_addf(&p->ids, "%s%" PRIu64, p->ids.len ? ", " : "", e->id);
        for (size_t k = e->n; k-- > 0;) {
            const jnl_change *c = &e->changes[k];
            jnl_step *s = find_step(p, c->root, c->path);
            if (!s) {
                const jnl_root *r = root_of(roots, nroots, c->root);
                jnl_state now;
                const char *name;
                int dfd;
                XGROW(p->v, p->alloc, p->n + 1);
                s = &p->v[p->n++];
                memset(s, 0, sizeof(*s));
                s->root = xstrdup(c->root);
                s->path = xstrdup(c->path);
                memset(&now, 0, sizeof(now));
                now.type = '?';
                dfd = r ? open_parent(r, c->path, false, &name) : -1;
                if (!r)
                    s->conflict = xstrdup("not a code directory of this session");
                else if (dfd < 0 && errno == ENOENT)
                    now.type = '-';
                else if (dfd < 0 || take_state(j, dfd, name, false, &now) < 0)
                    s->conflict = xasprintf("cannot be read: %s", strerror(errno));
                if (dfd >= 0)
                    close(dfd);
                s->now = now.type;
                if (!s->conflict && !same_state(&now, &c->cur)) {
                    /* a directory the pull made or left keeps what the host added in it */
                    if (!(now.type == 'd' && c->cur.type == 'd'))
                        s->conflict = xstrdup(now.type == '-' ? "deleted on the host since"
                                                              : "changed on the host since");
                }
                jnl_state_free(&now);
            } else if (!s->conflict && !same_state(&s->target, &c->cur) &&
                       !(s->target.type == 'd' && c->cur.type == 'd')) {
                s->conflict = xstrdup("changed on the host between the commands undone");
            }
            jnl_state_free(&s->target);
            state_copy(&s->target, &c->old);
            if (s->target.type == 'f' && !s->target.obj[0] && !s->conflict)
                s->conflict = xstrdup("its earlier content was not saved");
        }
    }
    for (size_t i = 0; i < p->n; i++)
        p->conflicts += p->v[i].conflict != NULL;
    return 0;
}

int jnl_plan_make(jnl *j, const jnl_root *roots, size_t nroots, uint64_t from, uint64_t to,
                  jnl_plan *plan, sbx_err *err)
{
    jnl_log l;
    if (jnl_read(j, &l, err) < 0)
        return -1;
    plan_with(j, &l, roots, nroots, from, to, plan);
    jnl_log_free(&l);
    return 0;
}

static size_t depth(const char *p)
{
    size_t d = 0;
    for (; *p; p++)
        d += *p == '/';
    return d;
}

static int by_depth(const void *a, const void *b)
{
    const jnl_step *x = *(jnl_step *const *)a, *y = *(jnl_step *const *)b;
    size_t dx = depth(x->path), dy = depth(y->path);
    return dx < dy ? -1 : dx > dy ? 1 : strcmp(x->path, y->path);
}

/* Puts state t at dfd/name (what is there of another type was removed already). */
static int put_target(jnl *j, int dfd, const char *name, const jnl_state *t)
{
    char tmp[96];
    if (t->type == 'd') {
        int fd;
        if (mkdirat(dfd, name, t->mode ? t->mode & 07777 : 0755) < 0 && errno != EEXIST)
            return -1;
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return -1;
        fchmod(fd, t->mode & 07777);
        close(fd);
        return 0;
    }
    if (t->type == 'l') {
        sf_tempname(tmp, sizeof(tmp));
        if (symlinkat(t->target, dfd, tmp) < 0)
            return -1;
    } else {
        int from = openat(j->objfd, t->obj, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), to;
        struct stat st;
        if (from < 0)
            return -1;
        uint64_t h;
        /* The saved bytes are checked before they are used: what comes back is what was
         * saved, or nothing (EIO). */
        if (fstat(from, &st) < 0 || (uint64_t)st.st_size != t->size || mf_hash_fd(from, &h) < 0 ||
            h != t->hash) {
            close(from);
            errno = EIO;
            return -1;
        }
        to = sf_mktemp(dfd, tmp, sizeof(tmp), 0600);
        if (to < 0) {
            close(from);
            return -1;
        }
        if (ioctl(to, FICLONE, from) < 0 && sf_copy_fd(from, to) < 0) {
            int e = errno;
            close(from);
            close(to);
            unlinkat(dfd, tmp, 0);
            errno = e;
            return -1;
        }
        close(from);
        fchmod(to, t->mode & 07777);
        sf_set_mtime(to, t->mtime_ns);
        close(to);
    }
    if (renameat(dfd, tmp, dfd, name) < 0) {
        int e = errno;
        unlinkat(dfd, tmp, 0);
        errno = e;
        return -1;
    }
    return 0;
}

static void step_warn(jnl *j, const jnl_step *s, const char *what)
{
    char shown[512];
    size_t k = 0;
    for (size_t i = 0; s->path[i] && k + 1 < sizeof(shown); i++)
        shown[k++] = ((unsigned char)s->path[i] < ' ' || s->path[i] == 0x7f) ? '?' : s->path[i];
    shown[k] = '\0';
    warnf(j, "undo: cannot %s %s/%s: %s", what, s->root, shown, strerror(errno));
}

int jnl_apply(jnl *j, const jnl_root *roots, size_t nroots, jnl_plan *plan, bool force,
              jnl_warn_fn warn, void *ctx, size_t *failed, sbx_err *err)
{
    jnl_log l;
    jnl_plan p;
    jnl_step **order = NULL;
    uint64_t from = UINT64_MAX, to = 0;
    int ret = 0;

    *failed = 0;
    j->warn = warn;
    j->wctx = ctx;
    /* the ids planned, from the plan's text ("5, 4") */
    for (const char *q = plan->ids.buf; q && *q;) {
        char *end;
        uint64_t v = strtoull(q, &end, 10);
        if (end == q)
            break;
        from = v < from ? v : from;
        to = v > to ? v : to;
        q = end;
        while (*q == ',' || *q == ' ')
            q++;
    }
    if (!to)
        return sbx_errf(err, "nothing to undo");
    if (!lock_take(j))
        return sbx_errf(err, "the undo journal is busy (a pull is being applied); try again");
    /* Planned again under the lock: the checks hold at the moment of the writes. */
    if (jnl_read(j, &l, err) < 0) {
        lock_drop(j);
        return -1;
    }
    plan_with(j, &l, roots, nroots, from, to, &p);
    jnl_log_free(&l);
    if (p.conflicts && !force) {
        plan_clear(plan);
        *plan = p;
        lock_drop(j);
        return sbx_errf(err, "the host changed files since");
    }
    memset(&j->cur, 0, sizeof(j->cur));
    j->open = true;
    j->new_bytes = 0;
    j->cur.label = xasprintf("sbx undo (of %s)", p.ids.buf);
    order = xcalloc(p.n ? p.n : 1, sizeof(*order));
    for (size_t i = 0; i < p.n; i++)
        order[i] = &p.v[i];
    qsort(order, p.n, sizeof(*order), by_depth);
    /* 1. what must go (a path to be absent, or of another type), deepest first, saved first;
     * 2. what must be there, shallowest first (a directory before what is in it). The state
     * the host had is recorded for each, so that undoing this undo puts it back. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t x = 0; x < p.n; x++) {
            jnl_step *s = order[pass == 0 ? p.n - 1 - x : x];
            const jnl_root *r = root_of(roots, nroots, s->root);
            const char *name;
            jnl_state old;
            int dfd;
            bool go = s->now != '-' && s->now != '?' && s->target.type != s->now;
            if (!r || (pass == 0 && !go) || (pass == 1 && s->target.type == '-'))
                continue;
            if (pass == 1 && s->target.type == 'd' && s->now == 'd')
                continue;   /* a directory stays (the protocol carries no directory mode) */
            dfd = open_parent(r, s->path, pass == 1, &name);
            if (dfd < 0) {
                if (pass == 0 && errno == ENOENT)
                    continue;
                step_warn(j, s, pass ? "restore" : "remove");
                (*failed)++;
                continue;
            }
            {
                struct stat st;
                bool have = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
                jnl_take(j, dfd, name, have ? &st : NULL, &old);
                if (pass == 0) {
                    int rc = unlinkat(dfd, name, have && S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
                    if (rc < 0 && errno != ENOENT) {
                        step_warn(j, s, "remove");
                        (*failed)++;
                        jnl_state_free(&old);
                    } else {
                        jnl_state gone = { .type = '-' };
                        jnl_record(j, r->base, s->path, strlen(s->path), &old, &gone);
                        s->now = '-';
                    }
                } else if (put_target(j, dfd, name, &s->target) < 0) {
                    step_warn(j, s, "restore");
                    (*failed)++;
                    jnl_state_free(&old);
                } else {
                    jnl_state now;
                    jnl_state after;
                    state_copy(&after, &s->target);
                    after.obj[0] = '\0';   /* in the tree, not saved again */
                    if (after.type == 'f' && take_state(j, dfd, name, false, &now) == 0) {
                        after.hash = now.hash;
                        after.size = now.size;
                    }
                    jnl_state_free(&now);
                    /* a path removed in pass 0 has its old state recorded there already */
                    if (old.type == '-') {
                        jnl_change *prev = NULL;
                        for (size_t q = 0; q < j->cur.n; q++)
                            if (!strcmp(j->cur.changes[q].path, s->path) &&
                                !strcmp(j->cur.changes[q].root, r->base))
                                prev = &j->cur.changes[q];
                        if (prev) {
                            jnl_state_free(&prev->cur);
                            prev->cur = after;
                            jnl_state_free(&old);
                            close(dfd);
                            continue;
                        }
                    }
                    jnl_record(j, r->base, s->path, strlen(s->path), &old, &after);
                    jnl_state_free(&after);
                }
            }
            close(dfd);
        }
    }
    free(order);
    if (j->cur.n)
        write_entry(j, "undo");
    entry_free(&j->cur);
    j->open = false;
    lock_drop(j);
    plan_clear(plan);
    *plan = p;
    return ret;
}
