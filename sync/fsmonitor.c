/* sbx-agent as git's fsmonitor: the journal, the answers, the hook; see fsmonitor.h. */
#include "sync/fsmonitor.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

void fsm_init(fsm_state *s, uint64_t instance)
{
    memset(s, 0, sizeof(*s));
    s->instance = instance;
    s->seq = 1;
    s->valid_from = UINT64_MAX;
}

static void free_log(fsm_state *s)
{
    for (size_t i = 0; i < s->nlog; i++)
        free(s->log[i].path);
    s->nlog = 0;
    s->log_bytes = 0;
}

static void free_dirs(fsm_dir *d, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free(d[i].path);
    *n = 0;
}

void fsm_release(fsm_state *s)
{
    free_log(s);
    free(s->log);
    free_dirs(s->fresh, &s->nfresh);
    free(s->fresh);
    free_dirs(s->blind, &s->nblind);
    free(s->blind);
    memset(s, 0, sizeof(*s));
}

/* Everything up to now is forgotten: a token made before now cannot be vouched for. The
 * seq moves on so that the tokens already given out are all older than valid_from. */
static void forget(fsm_state *s)
{
    free_log(s);
    s->seq++;
    s->valid_from = s->seq;
}

void fsm_lost(fsm_state *s, bool watching)
{
    forget(s);
    free_dirs(s->fresh, &s->nfresh);
    if (!watching) {
        s->ready = false;
        s->valid_from = UINT64_MAX;
        free_dirs(s->blind, &s->nblind);
    }
}

static void log_add(fsm_state *s, uint16_t root, const char *path, size_t len, bool slash)
{
    /* The same path as the last entry, with no token given out since (a write's IN_MODIFY
     * after IN_CREATE, a large file's many writes): that entry already covers it. */
    if (s->nlog && s->log[s->nlog - 1].seq > s->issued && s->log[s->nlog - 1].root == root) {
        const char *last = s->log[s->nlog - 1].path;
        if (!strncmp(last, path, len) && (slash ? !strcmp(last + len, "/") : !last[len]))
            return;
    }
    if (s->nlog >= FSM_LOG_MAX || s->log_bytes + len + 2 > FSM_LOG_BYTES_MAX) {
        /* Tokens up to now stay good only if no entry after them is dropped: drop all, and
         * the ones given out so far get `/` (once). */
        forget(s);
    }
    XGROW(s->log, s->alog, s->nlog + 1);
    fsm_ent *e = &s->log[s->nlog++];
    e->seq = ++s->seq;
    e->root = root;
    e->path = xmalloc(len + 2);
    memcpy(e->path, path, len);
    if (slash)
        e->path[len++] = '/';
    e->path[len] = '\0';
    s->log_bytes += len + 1 + sizeof(*e);
}

static bool dir_has(const fsm_dir *d, size_t n, uint16_t root, const char *path, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (d[i].root == root && !strncmp(d[i].path, path, len) && !d[i].path[len])
            return true;
    return false;
}

void fsm_note(fsm_state *s, uint16_t root, const char *path, size_t len, bool is_dir, bool fresh)
{
    /* A name is logged as a file and, if it is a directory, as a directory too: git looks up
     * an index entry by the first (a file that became a directory, a gitlink) and invalidates
     * every entry under the second. */
    log_add(s, root, path, len, false);
    if (is_dir)
        log_add(s, root, path, len, true);
    if (fresh && !dir_has(s->fresh, s->nfresh, root, path, len)) {
        XGROW(s->fresh, s->afresh, s->nfresh + 1);
        s->fresh[s->nfresh].root = root;
        s->fresh[s->nfresh++].path = xstrndup(path, len);
    }
}

void fsm_note_blind(fsm_state *s, uint16_t root, const char *path, size_t len)
{
    /* Kept until the agent forgets everything (fsm_lost without watching): a directory that
     * is gone since costs an answer one name. Past FSM_BLIND_MAX, fsm_answer says `/`. */
    if (s->nblind > FSM_BLIND_MAX || dir_has(s->blind, s->nblind, root, path, len))
        return;
    XGROW(s->blind, s->ablind, s->nblind + 1);
    s->blind[s->nblind].root = root;
    s->blind[s->nblind++].path = xstrndup(path, len);
}

/* Adds to dirs the relative path of every directory at and below rel (rel itself first),
 * walking beneath dfd without following symlinks; false when it holds more than *budget
 * entries (or is deeper than any synced path). A directory that is gone adds nothing. */
static bool walk_dirs(int dfd, strbuf *rel, size_t depth, size_t *budget, strbuf *dirs)
{
    int fd = openat(dfd, rel->len ? rel->buf : ".",
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d;
    struct dirent *e;
    bool ok = true;
    if (fd < 0)
        return true;
    if (depth > 256 || !(d = fdopendir(fd))) {
        close(fd);
        return depth <= 256;
    }
    strbuf_add(dirs, rel->buf, rel->len + 1);
    while (ok && (e = readdir(d))) {
        size_t len = rel->len;
        bool is_dir = e->d_type == DT_DIR;
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (!*budget) {
            ok = false;
            break;
        }
        --*budget;
        if (e->d_type == DT_UNKNOWN)
            is_dir = fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                     S_ISDIR(st.st_mode);
        if (!is_dir)
            continue;
        strbuf_addch(rel, '/');
        strbuf_addstr(rel, e->d_name);
        ok = walk_dirs(dfd, rel, depth + 1, budget, dirs);
        strbuf_setlen(rel, len);
    }
    closedir(d);
    return ok;
}

/* The directories at and below path in the root at base, NUL-separated, into dirs; false
 * when too many. */
static bool list_dirs(const char *base, const char *path, strbuf *dirs, size_t *budget)
{
    strbuf rel = STRBUF_INIT;
    int dfd = base ? open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    bool ok;
    if (dfd < 0)
        return false;
    strbuf_addstr(&rel, path);
    ok = walk_dirs(dfd, &rel, 0, budget, dirs);
    strbuf_release(&rel);
    close(dfd);
    return ok;
}

void fsm_scanned(fsm_state *s, bool watching, char *const *bases, size_t nbases)
{
    if (!watching) {
        fsm_lost(s, false);
        return;
    }
    if (!s->ready) {
        /* Every directory is watched from now on; before now, some were not. */
        forget(s);
        s->ready = true;
    }
    /* The fresh directories are watched now (under their new paths). What changed in them
     * before was not journaled: log them, and every directory in them (for git to list it
     * again), after every token given out so far. */
    size_t budget = FSM_WALK_MAX;
    strbuf dirs = STRBUF_INIT;
    for (size_t i = 0; i < s->nfresh; i++) {
        fsm_dir *f = &s->fresh[i];
        strbuf_reset(&dirs);
        if (!list_dirs(f->root < nbases ? bases[f->root] : NULL, f->path, &dirs, &budget)) {
            forget(s);
            break;
        }
        log_add(s, f->root, f->path, strlen(f->path), true);
        for (size_t at = 0; at < dirs.len; at += strlen(dirs.buf + at) + 1) {
            char *p = xasprintf("%s/" FSM_DUMMY, dirs.buf + at);
            log_add(s, f->root, p, strlen(p), false);
            free(p);
        }
    }
    strbuf_release(&dirs);
    free_dirs(s->fresh, &s->nfresh);
}

/* The token a client gets now. */
static void add_token(fsm_state *s, strbuf *out)
{
    s->issued = s->seq;
    strbuf_addf(out, "sbx1:%016" PRIx64 ":%" PRIu64, s->instance, s->seq);
    strbuf_addch(out, '\0');
}

/* Parses one of our tokens: 0 and its seq, or -1 for anything else. */
static int parse_token(const fsm_state *s, const char *token, uint64_t *seq)
{
    char inst[17];
    const char *p;
    char *end;
    if (strncmp(token, "sbx1:", 5) || strlen(token) < 5 + 16 + 2 || token[21] != ':')
        return -1;
    snprintf(inst, sizeof(inst), "%016" PRIx64, s->instance);
    if (memcmp(token + 5, inst, 16))
        return -1;
    p = token + 22;
    if (*p < '0' || *p > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno || *end || v > s->seq)
        return -1;
    *seq = v;
    return 0;
}

/* How an entry's path stands to the work tree at prefix: -1 outside it, 1 the work tree
 * itself or one of its ancestors (everything may have changed), 0 inside it (*rel is the
 * path relative to the work tree). */
static int place(const char *path, const char *prefix, size_t plen, const char **rel)
{
    size_t len = strlen(path);
    size_t bare = len && path[len - 1] == '/' ? len - 1 : len;
    if (!plen) {
        *rel = path;
        return bare ? 0 : 1;
    }
    if (!strncmp(path, prefix, plen) && path[plen] == '/' && path[plen + 1]) {
        *rel = path + plen + 1;
        return 0;
    }
    /* path an ancestor of (or the same as) prefix */
    if (bare <= plen && !strncmp(path, prefix, bare) && (bare == plen || prefix[bare] == '/'))
        return 1;
    if (!bare)
        return 1;
    return -1;
}

/* Adds one path to the answer; false when the answer must be `/` instead. */
static bool answer_path(strbuf *out, const char *path, const char *prefix, size_t plen,
                        bool as_dir)
{
    const char *rel;
    int where = place(path, prefix, plen, &rel);
    if (where < 0)
        return true;
    if (where > 0)
        return false;
    /* The repository's own directory: git ignores what happens there, and it changes at
     * every git command. */
    if (!strncmp(rel, ".git", 4) && (!rel[4] || rel[4] == '/'))
        return true;
    strbuf_addstr(out, rel);
    if (as_dir)
        strbuf_addch(out, '/');
    strbuf_addch(out, '\0');
    if (as_dir) {
        strbuf_addstr(out, rel);
        strbuf_addch(out, '\0');
    }
    return out->len <= FSM_ANSWER_MAX;
}

/* Names every directory at and below d (fresh or excluded) in the answer, as DIR/FSM_DUMMY,
 * and d itself as a directory; false when the answer must be `/`. */
static bool answer_unwatched(strbuf *out, const fsm_dir *d, const char *base,
                             const char *prefix, size_t plen, size_t *budget)
{
    strbuf dirs = STRBUF_INIT;
    bool ok = list_dirs(base, d->path, &dirs, budget) &&
              answer_path(out, d->path, prefix, plen, true);
    for (size_t at = 0; ok && at < dirs.len; at += strlen(dirs.buf + at) + 1) {
        char *p = xasprintf("%s/" FSM_DUMMY, dirs.buf + at);
        ok = answer_path(out, p, prefix, plen, false);
        free(p);
    }
    strbuf_release(&dirs);
    return ok;
}

void fsm_answer(fsm_state *s, const char *token, bool known, uint16_t root, const char *base,
                const char *prefix, strbuf *out)
{
    size_t budget = FSM_WALK_MAX;
    uint64_t since = 0;
    size_t plen = strlen(prefix), start;
    bool ok = known && s->ready && s->nblind <= FSM_BLIND_MAX &&
              parse_token(s, token, &since) == 0 && since >= s->valid_from;

    strbuf_reset(out);
    add_token(s, out);
    start = out->len;
    if (ok) {
        /* The log is ordered by seq: find the first entry after the token. */
        size_t lo = 0, hi = s->nlog;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (s->log[mid].seq <= since)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; ok && i < s->nlog; i++)
            if (s->log[i].root == root)
                ok = answer_path(out, s->log[i].path, prefix, plen, false);
        for (size_t i = 0; ok && i < s->nfresh; i++)
            if (s->fresh[i].root == root)
                ok = answer_unwatched(out, &s->fresh[i], base, prefix, plen, &budget);
        for (size_t i = 0; ok && i < s->nblind; i++)
            if (s->blind[i].root == root)
                ok = answer_unwatched(out, &s->blind[i], base, prefix, plen, &budget);
    }
    if (!ok) {
        strbuf_setlen(out, start);
        strbuf_add(out, "/", 2);
    }
}

int fsm_parse_request(const char *buf, size_t len, const char **token, const char **cwd)
{
    const char *f[3];
    size_t at = 0;
    for (int i = 0; i < 3; i++) {
        const char *nul = at < len ? memchr(buf + at, '\0', len - at) : NULL;
        if (!nul)
            return -1;
        f[i] = buf + at;
        at = (size_t)(nul - buf) + 1;
    }
    if (at != len || strcmp(f[0], FSM_REQUEST_MAGIC) || strlen(f[1]) > FSM_TOKEN_MAX ||
        f[2][0] != '/' || strlen(f[2]) > FSM_CWD_MAX)
        return -1;
    *token = f[1];
    *cwd = f[2];
    return 0;
}

static bool token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == ':' || c == '.' || c == '_' || c == '-';
}

bool fsm_answer_ok(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && i <= FSM_TOKEN_MAX && token_char(buf[i]))
        i++;
    if (!i || i > FSM_TOKEN_MAX || i >= len || buf[i] != '\0')
        return false;
    /* Then paths, each non-empty (git reads the byte before an empty one's end) and
     * NUL-terminated. */
    for (size_t start = ++i; i < len; i++) {
        if (buf[i])
            continue;
        if (i == start)
            return false;
        start = i + 1;
    }
    return len && buf[len - 1] == '\0';
}

/* ---- the hook ----------------------------------------------------------------------------- */

static const char fallback[] = "sbx1:none\0/";   /* and its final NUL */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Asks the agent at sock; 0 and its answer in out, or -1. Bounded: 30 s in all (an agent
 * busy with a large scan answers late; git waits for its hook). */
static int ask(const char *sock, const char *token, strbuf *out)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    char cwd[FSM_CWD_MAX + 1];
    strbuf req = STRBUF_INIT;
    int64_t deadline = now_ms() + 30000;
    size_t off = 0;
    int fd = -1, r = -1;

    if (strlen(sock) >= sizeof(sun.sun_path) || strlen(token) > FSM_TOKEN_MAX ||
        !getcwd(cwd, sizeof(cwd)))
        return -1;
    memcpy(sun.sun_path, sock, strlen(sock) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
        goto out;
    strbuf_add(&req, FSM_REQUEST_MAGIC, sizeof(FSM_REQUEST_MAGIC));
    strbuf_add(&req, token, strlen(token) + 1);
    strbuf_add(&req, cwd, strlen(cwd) + 1);
    while (off < req.len) {
        ssize_t n = write(fd, req.buf + off, req.len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto out;
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int64_t left = deadline - now_ms();
        ssize_t n;
        if (left <= 0 || out->len > FSM_ANSWER_MAX + FSM_TOKEN_MAX + 2)
            goto out;
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            goto out;
        strbuf_grow(out, 65536);
        n = read(fd, out->buf + out->len, 65536);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            goto out;
        if (n == 0)
            break;
        strbuf_setlen(out, out->len + (size_t)n);
    }
    r = fsm_answer_ok(out->buf, out->len) ? 0 : -1;
out:
    if (fd >= 0)
        close(fd);
    strbuf_release(&req);
    return r;
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int fsm_hook_main(int argc, char **argv)
{
    strbuf ans = STRBUF_INIT;
    int r;
    if (argc != 3 || strcmp(argv[1], "2")) {
        /* Version 1 (a timestamp) is not spoken: git then checks everything. */
        fprintf(stderr, "sbx-agent: --fsmonitor-hook wants SOCKET 2 TOKEN (git's fsmonitor "
                        "hook protocol, version 2)\n");
        return 1;
    }
    if (ask(argv[0], argv[2], &ans) == 0)
        r = write_all(1, ans.buf, ans.len);
    else
        r = write_all(1, fallback, sizeof(fallback));
    strbuf_release(&ans);
    return r < 0 ? 1 : 0;
}
