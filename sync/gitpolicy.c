/*
 * .git allowlists and git config filtering (gitpolicy.h). A repository's .git is code the
 * host runs: git reads its config (core.fsmonitor, core.pager, aliases run programs),
 * runs its hooks, follows its gitdir and commondir files and alternates. So a pull may
 * write into .git only what git's own history work produces (objects, refs, reflogs, the
 * index, merge and rebase state), each by the exact shape git gives it, its content
 * checked again on the staged file; everything else the sandbox puts there stays in the
 * sandbox. The other way, the host's git config reaches the sandbox only through
 * allowlists of keys that name no program, helper or file, so the sandbox learns nothing
 * it could run or read on the host's behalf (a credential helper, an include path).
 */
#include "sync/gitpolicy.h"
#include "sync/wire.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- paths ------------------------------------------------------------------------------- */

/* Whether a path component names a .git directory. */
static bool comp_is_dotgit(const char *s, size_t n)
{
    /* Case-insensitively: a host on a case-insensitive file system would read ".GIT". */
    return n == 4 && !strncasecmp(s, ".git", 4);
}

/* Allowed top-level entries of .git, by name; dirs allow everything below them. */
static const char *const git_dirs[] = {
    "objects", "refs", "logs", "rebase-merge", "rebase-apply", "sequencer",
};
static const char *const git_files[] = {
    "HEAD", "index", "packed-refs", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "MERGE_MSG",
    "MERGE_MODE", "MERGE_AUTOSTASH", "AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD",
    "REBASE_HEAD", "SQUASH_MSG", "COMMIT_EDITMSG", "TAG_EDITMSG", "BISECT_LOG", "BISECT_START",
    "BISECT_TERMS", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "BISECT_NAMES",
    "BISECT_HEAD", "shallow",
};

/* Exact membership of (s, len) in a list of names. */
static bool in_list(const char *const *list, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && !memcmp(list[i], s, len))
            return true;
    return false;
}

/* Lower-case hex only, as git names objects and packs (upper case is another file). */
static bool is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* An object id as git writes it: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits. */
static bool is_oid(const char *s, size_t n)
{
    return (n == 40 || n == 64) && is_hex(s, n);
}

static bool name_is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && !memcmp(s, lit, n);
}

/* Names that make a directory a repository, or that git reads as config or runs as code:
 * never below the top of .git (case-insensitively: a case-insensitive host file system
 * would read "Config" as config). */
static const char *const repo_names[] = { "HEAD", "config", "hooks", "commondir", "gitdir" };
/* Below refs/ and logs/ also: the other pieces of a repository, and hidden names. */
static const char *const ref_names[] = { "objects", "info" };

static bool in_list_nocase(const char *const *list, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && !strncasecmp(list[i], s, len))
            return true;
    return false;
}

/* comps[0] is ".git", comps[1] one of git_dirs; the rest is checked here. */
typedef struct comp {
    const char *s;
    size_t n;
} comp;

/* .git/objects/...: NULL when the path has one of the shapes git writes there (loose
 * objects, packs and their indexes, commit-graphs, the multi-pack-index, info/packs), else
 * why not. Only shapes, by exact name and type: contents are checked on the staged file. */
static const char *objects_refusal(const comp *c, size_t nc, int ftype)
{
    static const char *const pack_ext[] = { "pack", "idx", "rev", "bitmap", "keep", "mtimes" };
    static const char why[] = "only loose objects, packs and their indexes, info/packs, "
                              "commit-graphs and the multi-pack-index are written under "
                              ".git/objects from the sandbox";
    /* Exact names, so that nothing else (a repository, alternates, a script) lands here. */
    bool dir = ftype == WIRE_DIR, reg = ftype == WIRE_REG;

    if (nc == 3 && name_is(c[2].s, c[2].n, "info") && dir)
        return NULL;
    if (nc == 3 && name_is(c[2].s, c[2].n, "pack") && dir)
        return NULL;
    if (nc == 3 && c[2].n == 2 && is_hex(c[2].s, 2) && dir)
        return NULL;
    if (nc == 4 && c[2].n == 2 && is_hex(c[2].s, 2) && (c[3].n == 38 || c[3].n == 62) &&
        is_hex(c[3].s, c[3].n) && reg)
        return NULL;
    if (nc == 4 && name_is(c[2].s, c[2].n, "info")) {
        if (name_is(c[3].s, c[3].n, "alternates") || name_is(c[3].s, c[3].n, "http-alternates"))
            return "object alternates (which read other repositories) are never written from "
                   "the sandbox";
        if (reg && (name_is(c[3].s, c[3].n, "packs") || name_is(c[3].s, c[3].n, "commit-graph")))
            return NULL;
        if (dir && name_is(c[3].s, c[3].n, "commit-graphs"))
            return NULL;
    }
    if (nc == 5 && reg && name_is(c[2].s, c[2].n, "info") &&
        name_is(c[3].s, c[3].n, "commit-graphs")) {
        const char *s = c[4].s;
        size_t n = c[4].n;
        if (name_is(s, n, "commit-graph-chain"))
            return NULL;
        if (n > 12 && !memcmp(s, "graph-", 6) && !memcmp(s + n - 6, ".graph", 6) &&
            is_oid(s + 6, n - 12))
            return NULL;
    }
    if (nc == 4 && reg && name_is(c[2].s, c[2].n, "pack")) {
        const char *s = c[3].s, *dot;
        size_t n = c[3].n;
        if (name_is(s, n, "multi-pack-index"))
            return NULL;
        dot = memchr(s, '.', n);
        /* The multi-pack-index's own bitmap and reverse index. */
        if (n > 17 && !memcmp(s, "multi-pack-index-", 17) && dot &&
            is_oid(s + 17, (size_t)(dot - s) - 17) &&
            (name_is(dot, n - (size_t)(dot - s), ".bitmap") ||
             name_is(dot, n - (size_t)(dot - s), ".rev")))
            return NULL;
        if (n > 5 && !memcmp(s, "pack-", 5) && dot && is_oid(s + 5, (size_t)(dot - s) - 5) &&
            in_list(pack_ext, ARRAY_SIZE(pack_ext), dot + 1, n - (size_t)(dot + 1 - s)))
            return NULL;
    }
    return why;
}

/* A path below one of git_dirs: NULL when allowed, else why not. Refuses replace refs,
 * anything in logs/ but HEAD's and refs' reflogs, and below the top of .git any name that
 * would make a repository (HEAD, config, hooks, ...: case-insensitively) or, under refs/
 * and logs/, objects, info or a hidden name; a clone's refs/remotes/NAME/HEAD is git's own. */
static const char *below_git_refusal(const comp *c, size_t nc, int ftype)
{
    bool refs = name_is(c[1].s, c[1].n, "refs"), logs = name_is(c[1].s, c[1].n, "logs");

    if (nc == 2)
        return ftype == WIRE_DIR ? NULL
                                 : "objects, refs, logs and the merge/rebase state of .git are "
                                   "directories";
    if (name_is(c[1].s, c[1].n, "objects"))
        return objects_refusal(c, nc, ftype);
    /* refs/replace/ (git replace) makes host git show one object in place of another: a
     * sandbox could make `git log` on the host show a history other than the one pushed. */
    if ((refs || logs) && nc >= (size_t)(logs ? 4 : 3) &&
        name_is(c[logs ? 3 : 2].s, c[logs ? 3 : 2].n, "replace"))
        return "replace refs (refs/replace/, git replace) are never written from the sandbox";
    if (logs && nc >= 3 && !name_is(c[2].s, c[2].n, "refs") &&
        !(nc == 3 && name_is(c[2].s, c[2].n, "HEAD") && ftype == WIRE_REG))
        return "only logs/HEAD and logs/refs/ (reflogs) are written under .git/logs from the "
               "sandbox";
    for (size_t i = 2; i < nc; i++) {
        /* refs/remotes/NAME/HEAD (a clone's symbolic ref) and its reflog are git's own. */
        size_t r = logs ? 3 : 2;   /* index of the component below refs/ */
        bool remote_head = (refs || logs) && nc == r + 3 && i == nc - 1 && ftype == WIRE_REG &&
                           name_is(c[r].s, c[r].n, "remotes") && name_is(c[i].s, c[i].n, "HEAD");
        if (logs && i == 2)
            continue;   /* logs/HEAD or logs/refs, checked above */
        if (!remote_head && in_list_nocase(repo_names, ARRAY_SIZE(repo_names), c[i].s, c[i].n))
            return "nothing named HEAD, config, hooks, commondir or gitdir is written below the "
                   "top of .git from the sandbox";
        if ((refs || logs) &&
            (in_list_nocase(ref_names, ARRAY_SIZE(ref_names), c[i].s, c[i].n) || c[i].s[0] == '.'))
            return "no name objects, info or starting with '.' is written below .git/refs or "
                   ".git/logs from the sandbox";
    }
    return NULL;
}

/* Why a pull may not write rel (a path in a code directory) as ftype, or NULL. Outside
 * any .git: NULL (the other checks apply). A .git below the top of a code directory is
 * refused whole: it would be a nested repository the host's git walks into (a submodule's
 * config and hooks). A case variant (.GIT) is refused: a case-insensitive host would read
 * it as .git. .git itself must be a directory (a gitfile would point git at a repository
 * elsewhere on the host). Inside: no symlink (git would follow it out), no lock file (a
 * stale one blocks the host's git), and only git_dirs' trees and git_files' names. */
const char *git_pull_refusal(const char *rel, size_t len, int ftype)
{
    size_t i = 0, depth = 0;
    comp c[8];
    size_t nc = 0;
    bool in_git = false;

    while (i < len) {
        size_t j = i;
        while (j < len && rel[j] != '/')
            j++;
        if (comp_is_dotgit(rel + i, j - i)) {
            if (depth > 0)
                return "a .git below the top level of a code directory is never written "
                       "from the sandbox";
            if (j - i != 4 || memcmp(rel + i, ".git", 4))
                return "a case variant of .git is never written from the sandbox";
            in_git = true;
        }
        if (in_git && nc < ARRAY_SIZE(c)) {
            c[nc].s = rel + i;
            c[nc].n = j - i;
        }
        nc++;
        depth++;
        i = j + 1;
    }
    if (!in_git)
        return NULL;
    if (depth == 1)
        return ftype == WIRE_DIR ? NULL
                                 : ".git that is not a directory (a gitfile) is never written "
                                   "from the sandbox";
    if (ftype == WIRE_LNK)
        return "symlinks inside .git are never written from the sandbox";
    if (len >= 5 && !memcmp(rel + len - 5, ".lock", 5))
        return "git lock files are not synced";
    if (in_list(git_dirs, ARRAY_SIZE(git_dirs), c[1].s, c[1].n)) {
        if (nc > ARRAY_SIZE(c)) {
            /* Deeper than the array (branch names with many slashes): the first components
             * as directories, then each further one by name. */
            bool refs = name_is(c[1].s, c[1].n, "refs") || name_is(c[1].s, c[1].n, "logs");
            const char *why = below_git_refusal(c, ARRAY_SIZE(c), WIRE_DIR);
            size_t k = 0;
            if (why)
                return why;
            for (i = 0; i < len; k++) {
                size_t j = i;
                while (j < len && rel[j] != '/')
                    j++;
                if (k >= ARRAY_SIZE(c) &&
                    (in_list_nocase(repo_names, ARRAY_SIZE(repo_names), rel + i, j - i) ||
                     (refs && (in_list_nocase(ref_names, ARRAY_SIZE(ref_names), rel + i, j - i) ||
                               rel[i] == '.'))))
                    return "no name HEAD, config, hooks, commondir or gitdir (nor objects, info "
                           "or a name starting with '.' below refs/ and logs/) is written below "
                           "the top of .git from the sandbox";
                i = j + 1;
            }
            return NULL;
        }
        return below_git_refusal(c, nc, ftype);
    }
    if (depth == 2 && ftype == WIRE_REG && in_list(git_files, ARRAY_SIZE(git_files), c[1].s,
                                                   c[1].n))
        return NULL;
    return "only objects, refs, logs, HEAD, index, packed-refs and merge/rebase state are "
           "written into .git from the sandbox";
}

/* Whether rel is the top .git or inside it (the only .git a pull may write). */
bool git_path_in_git(const char *rel, size_t len)
{
    return len >= 4 && !memcmp(rel, ".git", 4) && (len == 4 || rel[4] == '/');
}

/* No file with an exec bit in .git: an executable there is a hook waiting for a name. */
const char *git_pull_exec_refusal(const char *rel, size_t len)
{
    return git_path_in_git(rel, len) ? "no executable file is written into .git from the sandbox"
                                     : NULL;
}

/* ---- contents ---------------------------------------------------------------------------- */

/* Reads up to max bytes of fd from offset 0 into out; -1 on a read error or when the file
 * is longer than max. */
static int read_bounded(int fd, size_t max, strbuf *out)
{
    char buf[65536];
    off_t off = 0;
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof(buf), off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        if (out->len + (size_t)n > max)
            return -1;
        strbuf_add(out, buf, (size_t)n);
        off += n;
    }
}

/* A ref file as git writes one: an object id, or "ref: refs/..." (a symbolic ref) with no
 * control byte, blank or backslash in it, and a newline; nothing else and no NUL, so that
 * the host's git reads exactly the value that was checked, and a symbolic ref names a ref
 * (git itself refuses the other malformed names when it resolves one). */
bool git_ref_parse(const char *text, size_t len, const char **val, size_t *val_len, bool *symref)
{
    if (len < 2 || text[len - 1] != '\n' || memchr(text, '\0', len))
        return false;
    len--;
    if (is_oid(text, len)) {
        *val = text;
        *val_len = len;
        *symref = false;
        return true;
    }
    if (len > 10 && !memcmp(text, "ref: refs/", 10)) {
        for (size_t i = 5; i < len; i++)
            if ((unsigned char)text[i] <= ' ' || text[i] == 0x7f || text[i] == '\\')
                return false;
        *val = text + 5;
        *val_len = len - 5;
        *symref = true;
        return true;
    }
    return false;
}

/* Every line "<oid> <oid> ..." (same hash length), no NUL, the last one ended. */
static bool reflog_ok(const char *t, size_t len)
{
    size_t i = 0;
    if (memchr(t, '\0', len) || (len && t[len - 1] != '\n'))
        return false;
    while (i < len) {
        const char *nl = memchr(t + i, '\n', len - i);
        size_t n = (size_t)(nl - (t + i)), h;
        const char *sp = memchr(t + i, ' ', n);
        h = sp ? (size_t)(sp - (t + i)) : 0;
        if (!sp || !is_oid(t + i, h) || n < 2 * h + 2 || !is_oid(t + i + h + 1, h) ||
            t[i + 2 * h + 1] != ' ')
            return false;
        i += n + 1;
    }
    return true;
}

/* packed-refs: a "# pack-refs with:" header, then "<oid> refs/..." lines, each optionally
 * followed by "^<oid>" (a peeled tag). */
static bool packed_ok(const char *t, size_t len)
{
    size_t i = 0;
    bool first = true;
    if (memchr(t, '\0', len) || (len && t[len - 1] != '\n'))
        return false;
    while (i < len) {
        const char *nl = memchr(t + i, '\n', len - i);
        size_t n = (size_t)(nl - (t + i));
        const char *l = t + i, *sp = memchr(l, ' ', n);
        if (first && n >= 1 && l[0] == '#') {
            /* the header */
        } else if (n >= 41 && l[0] == '^') {
            if (!is_oid(l + 1, n - 1))
                return false;
        } else {
            size_t h = sp ? (size_t)(sp - l) : 0;
            if (!sp || !is_oid(l, h) || n < h + 6 || memcmp(sp + 1, "refs/", 5))
                return false;
            for (size_t k = h + 1; k < n; k++)
                if ((unsigned char)l[k] <= ' ' || l[k] == 0x7f)
                    return false;
        }
        first = false;
        i += n + 1;
    }
    return true;
}

/* Text files of .git (MERGE_MSG, the rebase state, ...) carry no NUL. */
static bool text_ok(const char *t, size_t len)
{
    return !memchr(t, '\0', len);
}

/* Every line an object id (commit-graph-chain). */
static bool oid_lines_ok(const char *t, size_t len)
{
    size_t i = 0;
    if (len && t[len - 1] != '\n')
        return false;
    while (i < len) {
        const char *nl = memchr(t + i, '\n', len - i);
        size_t n = (size_t)(nl - (t + i));
        if (!is_oid(t + i, n))
            return false;
        i += n + 1;
    }
    return true;
}

/* Whether the file starts with git's signature for its kind (PACK, DIRC, ...). */
static bool has_magic(int fd, const char *magic, size_t n)
{
    char buf[8];
    return n <= sizeof(buf) && pread(fd, buf, n, 0) == (ssize_t)n && !memcmp(buf, magic, n);
}

/* A zlib stream's first two bytes (RFC 1950): deflate, a window of at most 32 KiB, no preset
 * dictionary, the check bits right. */
static bool zlib_header(int fd)
{
    unsigned char b[2];
    if (pread(fd, b, 2, 0) != 2)
        return false;
    return (b[0] & 0x0f) == 8 && (b[0] >> 4) <= 7 && !(b[1] & 0x20) &&
           ((unsigned)b[0] * 256 + b[1]) % 31 == 0;
}

static bool ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && !memcmp(s + n - k, suf, k);
}

static bool starts_with(const char *s, size_t n, const char *pre)
{
    size_t k = strlen(pre);
    return n >= k && !memcmp(s, pre, k);
}

/* Why the staged file fd may not be committed at rel in .git, or NULL: its content must
 * be what git keeps under that name (checked on the fd the commit will rename, after the
 * sandbox can no longer change it). Binary files by their signature, so that a "pack" is
 * not a config or a script git would be made to parse as something else; text files
 * parsed whole within a size bound (a 4 GiB "ref" must not be read into memory), refs and
 * packed-refs line by line, since the host's git acts on what they name. */
const char *git_pull_content_refusal(const char *rel, size_t len, int fd)
{
    enum { REF, REFLOG, PACKED, TEXT, OIDS, NONE } kind = NONE;
    size_t max = 0;
    const char *what = NULL;
    strbuf sb = STRBUF_INIT;
    bool good;

    if (!git_path_in_git(rel, len))
        return NULL;
    if ((len == 9 && !memcmp(rel, ".git/HEAD", 9)) || starts_with(rel, len, ".git/refs/")) {
        kind = REF;
        max = GIT_REF_MAX;
        what = "a ref file holds an object id or \"ref: refs/...\" and a newline";
    } else if (starts_with(rel, len, ".git/logs/")) {
        kind = REFLOG;
        max = GIT_REFLOG_MAX;
        what = "a reflog holds \"<old id> <new id> ...\" lines";
    } else if (len == 16 && !memcmp(rel, ".git/packed-refs", 16)) {
        kind = PACKED;
        max = GIT_PACKED_REFS_MAX;
        what = "packed-refs holds \"<id> refs/...\" lines";
    } else if (len == 10 && !memcmp(rel, ".git/index", 10)) {
        if (!has_magic(fd, "DIRC", 4))
            return "not a git index (no DIRC signature)";
        return NULL;
    } else if (starts_with(rel, len, ".git/objects/pack/")) {
        /* git's binary files under objects/pack/, each known by its 4-byte signature */
        static const struct { const char *suffix, *magic, *refusal; } signed_files[] = {
            { ".pack", "PACK", "not a pack (no PACK signature)" },
            { ".idx", "\377tOc", "not a pack index (no \\377tOc signature)" },
            { ".rev", "RIDX", "not a reverse index (no RIDX signature)" },
            { ".bitmap", "BITM", "not a pack bitmap (no BITM signature)" },
            { ".mtimes", "MTME", "not a pack mtimes file (no MTME signature)" },
            { "/multi-pack-index", "MIDX", "not a multi-pack-index (no MIDX signature)" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(signed_files); i++)
            if (ends_with(rel, len, signed_files[i].suffix))
                return has_magic(fd, signed_files[i].magic, 4) ? NULL : signed_files[i].refusal;
        if (ends_with(rel, len, ".keep")) {
            kind = TEXT;
            max = 65536;
            what = "a .keep file is a short text";
        }
    } else if (starts_with(rel, len, ".git/objects/info/")) {
        if (ends_with(rel, len, "/commit-graph") || ends_with(rel, len, ".graph"))
            return has_magic(fd, "CGPH", 4) ? NULL : "not a commit-graph (no CGPH signature)";
        if (ends_with(rel, len, "/commit-graph-chain")) {
            kind = OIDS;
            max = 65536;
            what = "a commit-graph chain holds object ids";
        } else if (ends_with(rel, len, "/packs")) {
            kind = TEXT;
            max = 1024 * 1024;
            what = "objects/info/packs is a short text";
        }
    } else if (starts_with(rel, len, ".git/objects/")) {
        /* The path rules leave only loose objects here. */
        return zlib_header(fd) ? NULL : "not a loose object (no zlib header)";
    }
    if (kind == NONE)
        return NULL;
    if (read_bounded(fd, max, &sb) < 0) {
        strbuf_release(&sb);
        return kind == REF       ? "a ref file over 4 KiB is never written from the sandbox"
               : kind == REFLOG  ? "a reflog over 16 MiB is never written from the sandbox"
               : kind == PACKED  ? "a packed-refs over 64 MiB is never written from the sandbox"
                                 : "too long for what git keeps there";
    }
    switch (kind) {
    case REF: {
        const char *v;
        size_t vl;
        bool sym;
        good = git_ref_parse(sb.buf, sb.len, &v, &vl, &sym);
        break;
    }
    case REFLOG: good = reflog_ok(sb.buf, sb.len); break;
    case PACKED: good = packed_ok(sb.buf, sb.len); break;
    case OIDS: good = oid_lines_ok(sb.buf, sb.len); break;
    default: good = text_ok(sb.buf, sb.len); break;
    }
    strbuf_release(&sb);
    return good ? NULL : what;
}

bool git_packed_next(const char **p, const char *end, const char **oid, size_t *oid_len,
                     const char **name, size_t *name_len)
{
    while (*p < end) {
        const char *l = *p, *nl = memchr(l, '\n', (size_t)(end - l)), *sp;
        size_t n = nl ? (size_t)(nl - l) : (size_t)(end - l);
        *p = l + n + (nl ? 1 : 0);
        if (!n || l[0] == '#' || l[0] == '^')
            continue;
        sp = memchr(l, ' ', n);
        if (!sp || !is_oid(l, (size_t)(sp - l)))
            continue;
        *oid = l;
        *oid_len = (size_t)(sp - l);
        *name = sp + 1;
        *name_len = n - (size_t)(sp + 1 - l);
        return true;
    }
    return false;
}

bool git_packed_find(const char *text, size_t len, const char *ref, size_t ref_len,
                     const char **oid, size_t *oid_len)
{
    const char *p = text, *name;
    size_t nl;
    while (git_packed_next(&p, text + len, oid, oid_len, &name, &nl))
        if (nl == ref_len && !memcmp(name, ref, nl))
            return true;
    return false;
}

/* The names that, together, make git take a directory for a repository (HEAD with refs/
 * or commondir): a pull must not assemble one outside .git, where the host's git would
 * find it by walking up and run its config (sync/hostwrite.c's repo_shape_refusal). */
bool git_repo_shape_name(const char *name, size_t len)
{
    return (len == 4 && !strncasecmp(name, "HEAD", 4)) ||
           (len == 4 && !strncasecmp(name, "refs", 4)) ||
           (len == 9 && !strncasecmp(name, "commondir", 9));
}

/* Whether dfd has name (exactly, as git opens it), or name is the one being added (in any
 * letter case: a case-insensitive host file system would give it to git under both). */
static bool shape_has(int dfd, const char *name, const char *adding, size_t adding_len)
{
    struct stat st;
    if (adding && adding_len == strlen(name) && !strncasecmp(adding, name, adding_len))
        return true;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return true;
    return errno != ENOENT && errno != ENOTDIR;
}

/* Whether dfd would look like a repository with adding added (an error other than "not
 * there" counts as there: in doubt, refuse). */
bool git_dir_is_repo_shape(int dfd, const char *adding, size_t adding_len)
{
    return shape_has(dfd, "HEAD", adding, adding_len) &&
           (shape_has(dfd, "refs", adding, adding_len) ||
            shape_has(dfd, "commondir", adding, adding_len));
}

/* A sync path (a file outside the code directories, ~/.config/...) takes no .git at any
 * depth: there is no repository there whose history a pull could be carrying. */
const char *git_pull_refusal_syncpath(const char *rel, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && rel[j] != '/')
            j++;
        if (comp_is_dotgit(rel + i, j - i))
            return "a .git inside a sync path is never written from the sandbox";
        i = j + 1;
    }
    return NULL;
}

/* Whether rel is a repository's config (config or config.worktree under a .git, in any
 * letter case of .git): what gitconfig_filter_repo filters before it reaches the sandbox. */
bool git_is_repo_config(const char *rel, size_t len)
{
    size_t dir_len;
    const char *name = rel + len;
    bool under_git = false;

    while (name > rel && name[-1] != '/')
        name--;
    dir_len = (size_t)(name - rel);
    if (!((rel + len - name == 6 && !memcmp(name, "config", 6)) ||
          (rel + len - name == 15 && !memcmp(name, "config.worktree", 15))))
        return false;
    for (size_t i = 0; i < dir_len;) {
        size_t j = i;
        while (j < dir_len && rel[j] != '/')
            j++;
        if (comp_is_dotgit(rel + i, j - i))
            under_git = true;
        i = j + 1;
    }
    return under_git;
}

/* ---- credentials in URLs ----------------------------------------------------------------- */

/* Whether text holds a URL with a password or token before its '@' (user:secret@host, or a
 * bare user on http(s) and ftp(s), which is a token): a config setting whose value holds
 * one is left out of what the sandbox gets (filter_config), where anything could read it. */
bool git_url_has_credentials(const char *url, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        size_t start;
        if (url[i] != '@')
            continue;
        start = i;
        while (start > 0 && url[start - 1] != '/' && !isspace((unsigned char)url[start - 1]))
            start--;
        if (start < i && memchr(url + start, ':', i - start) && url[start] != ':')
            return true;
        /* A bare user on http(s) is a token. */
        if (start >= 3 && start < i && url[start - 1] == '/' && url[start - 2] == '/' &&
            url[start - 3] == ':') {
            size_t s = start - 3;
            while (s > 0 && isalpha((unsigned char)url[s - 1]))
                s--;
            if ((start - 3 - s == 5 && !strncasecmp(url + s, "https", 5)) ||
                (start - 3 - s == 4 && !strncasecmp(url + s, "http", 4)) ||
                (start - 3 - s == 3 && !strncasecmp(url + s, "ftp", 3)) ||
                (start - 3 - s == 4 && !strncasecmp(url + s, "ftps", 4)))
                return true;
        }
    }
    return false;
}

/* ---- config parsing ---------------------------------------------------------------------- */

typedef struct cfg_setting {
    char section[64];      /* lower case */
    char sub[256];         /* case kept; "" for none */
    bool has_sub;
    char key[64];          /* lower case */
    strbuf value;
    bool implicit;         /* "key" alone: boolean true */
} cfg_setting;

typedef struct cfg_parser {
    const char *p, *end;
    char section[64];
    char sub[256];
    bool has_sub;
} cfg_parser;

/* The config parser's cursor: at the end, past blanks, past the rest of the line. */
static bool at_end(cfg_parser *ps)
{
    return ps->p >= ps->end;
}

static void skip_blank(cfg_parser *ps)
{
    while (!at_end(ps) && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r'))
        ps->p++;
}

static void skip_line(cfg_parser *ps)
{
    while (!at_end(ps) && *ps->p != '\n')
        ps->p++;
    if (!at_end(ps))
        ps->p++;
}

/* "[section]", "[section "sub"]" or "[section.sub]"; ps->p is just past the '['. */
static bool parse_section(cfg_parser *ps)
{
    size_t n = 0;
    ps->has_sub = false;
    ps->sub[0] = '\0';
    while (!at_end(ps) && (isalnum((unsigned char)*ps->p) || *ps->p == '-' || *ps->p == '.')) {
        if (n + 1 >= sizeof(ps->section))
            return false;
        ps->section[n++] = (char)tolower((unsigned char)*ps->p++);
    }
    ps->section[n] = '\0';
    if (!n)
        return false;
    if (!at_end(ps) && *ps->p == ']') {
        /* The deprecated [section.sub] form: the sub part is lower-cased by git. */
        char *dot = strchr(ps->section, '.');
        if (dot) {
            snprintf(ps->sub, sizeof(ps->sub), "%s", dot + 1);
            *dot = '\0';
            ps->has_sub = true;
            if (!*ps->section)
                return false;
        }
        ps->p++;
        return true;
    }
    if (strchr(ps->section, '.'))
        return false;
    skip_blank(ps);
    if (at_end(ps) || *ps->p != '"')
        return false;
    ps->p++;
    n = 0;
    for (;;) {
        char c;
        if (at_end(ps) || *ps->p == '\n' || *ps->p == '\0')
            return false;
        c = *ps->p++;
        if (c == '"')
            break;
        if (c == '\\') {
            if (at_end(ps) || *ps->p == '\n')
                return false;
            c = *ps->p++;
        }
        if (n + 1 >= sizeof(ps->sub))
            return false;
        ps->sub[n++] = c;
    }
    ps->sub[n] = '\0';
    ps->has_sub = true;
    if (at_end(ps) || *ps->p != ']')
        return false;
    ps->p++;
    return true;
}

/* A value after '=' up to the end of the line (continuations joined). */
static bool parse_value(cfg_parser *ps, strbuf *v)
{
    bool quoted = false;
    size_t trim = 0;   /* length without trailing unquoted blanks */
    skip_blank(ps);
    while (!at_end(ps)) {
        char c = *ps->p++;
        if (c == '\n') {
            if (quoted)
                return false;
            break;
        }
        if (!quoted && (c == ';' || c == '#')) {
            skip_line(ps);
            break;
        }
        if (c == '\0')
            return false;
        if (c == '"') {
            quoted = !quoted;
            trim = v->len;
            continue;
        }
        if (c == '\\') {
            if (at_end(ps))
                return false;
            c = *ps->p++;
            switch (c) {
            case '\n': continue;
            case '\r':
                if (!at_end(ps) && *ps->p == '\n') {
                    ps->p++;
                    continue;
                }
                return false;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case '\\': case '"': break;
            default: return false;
            }
            strbuf_addch(v, c);
            trim = v->len;
            continue;
        }
        if (!quoted && (c == ' ' || c == '\t' || c == '\r')) {
            if (v->len)
                strbuf_addch(v, c);
            continue;
        }
        strbuf_addch(v, c);
        trim = v->len;
    }
    if (quoted)
        return false;
    strbuf_setlen(v, trim);
    return true;
}

typedef bool (*allow_fn)(const cfg_setting *s);

/* Parses text and calls allow() on every setting; appends the allowed ones to out. */
static int filter_config(const char *text, size_t len, strbuf *out, allow_fn allow)
{
    cfg_parser ps = { .p = text, .end = text + len };
    strbuf res = STRBUF_INIT;
    char cur_section[64] = "", cur_sub[256] = "";
    bool cur_has_sub = false, have_header = false;
    int kept = 0;

    if (len > GITCONFIG_MAX || memchr(text, '\0', len))
        return -1;
    while (!at_end(&ps)) {
        cfg_setting s;
        size_t n = 0;
        skip_blank(&ps);
        if (at_end(&ps))
            break;
        if (*ps.p == '\n') {
            ps.p++;
            continue;
        }
        if (*ps.p == '#' || *ps.p == ';') {
            skip_line(&ps);
            continue;
        }
        if (*ps.p == '[') {
            ps.p++;
            if (!parse_section(&ps))
                goto bad;
            skip_blank(&ps);
            /* A key may follow the header on the same line. */
            continue;
        }
        if (!ps.section[0] || !isalpha((unsigned char)*ps.p))
            goto bad;
        memset(&s, 0, sizeof(s));
        strbuf_init(&s.value, 0);
        while (!at_end(&ps) && (isalnum((unsigned char)*ps.p) || *ps.p == '-')) {
            if (n + 1 >= sizeof(s.key)) {
                strbuf_release(&s.value);
                goto bad;
            }
            s.key[n++] = (char)tolower((unsigned char)*ps.p++);
        }
        s.key[n] = '\0';
        skip_blank(&ps);
        if (at_end(&ps) || *ps.p == '\n' || *ps.p == '#' || *ps.p == ';') {
            s.implicit = true;
            skip_line(&ps);
        } else if (*ps.p == '=') {
            ps.p++;
            if (!parse_value(&ps, &s.value)) {
                strbuf_release(&s.value);
                goto bad;
            }
        } else {
            strbuf_release(&s.value);
            goto bad;
        }
        memcpy(s.section, ps.section, sizeof(s.section));
        memcpy(s.sub, ps.sub, sizeof(s.sub));
        s.has_sub = ps.has_sub;
        if (allow(&s) && !git_url_has_credentials(s.value.buf, s.value.len)) {
            bool ok = true;
            for (size_t i = 0; i < s.value.len; i++) {
                unsigned char c = (unsigned char)s.value.buf[i];
                if (c < 0x20 && c != '\t' && c != '\n')
                    ok = false;
            }
            if (ok) {
                if (!have_header || strcmp(cur_section, s.section) || cur_has_sub != s.has_sub ||
                    strcmp(cur_sub, s.sub)) {
                    strbuf_addf(&res, "[%s", s.section);
                    if (s.has_sub) {
                        strbuf_addstr(&res, " \"");
                        for (const char *c = s.sub; *c; c++) {
                            if (*c == '"' || *c == '\\')
                                strbuf_addch(&res, '\\');
                            strbuf_addch(&res, *c);
                        }
                        strbuf_addch(&res, '"');
                    }
                    strbuf_addstr(&res, "]\n");
                    memcpy(cur_section, s.section, sizeof(cur_section));
                    memcpy(cur_sub, s.sub, sizeof(cur_sub));
                    cur_has_sub = s.has_sub;
                    have_header = true;
                }
                if (s.implicit) {
                    strbuf_addf(&res, "\t%s\n", s.key);
                } else {
                    strbuf_addf(&res, "\t%s = \"", s.key);
                    for (size_t i = 0; i < s.value.len; i++) {
                        char c = s.value.buf[i];
                        if (c == '"' || c == '\\')
                            strbuf_addch(&res, '\\');
                        if (c == '\n')
                            strbuf_addstr(&res, "\\n");
                        else if (c == '\t')
                            strbuf_addstr(&res, "\\t");
                        else
                            strbuf_addch(&res, c);
                    }
                    strbuf_addstr(&res, "\"\n");
                }
                kept++;
            }
        }
        strbuf_release(&s.value);
    }
    strbuf_add(out, res.buf, res.len);
    strbuf_release(&res);
    return kept;
bad:
    strbuf_release(&res);
    return -1;
}

/* Exact membership of a "section.key" in an allowlist. */
static bool key_in(const char *key, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(key, list[i]))
            return true;
    return false;
}

#define KEY_IN(key, list) key_in((key), (list), ARRAY_SIZE(list))

/* Everyday settings, allowed from both the user's and the repository's config, by
 * "section.key" (no subsection). None names a program, a file to read, or a hook. */
static const char *const everyday[] = {
    "user.name", "user.email", "author.name", "author.email", "committer.name",
    "committer.email", "init.defaultbranch", "core.autocrlf", "core.eol", "core.safecrlf",
    "core.quotepath", "core.abbrev", "color.ui", "color.diff", "color.status", "color.branch",
    "color.interactive", "color.grep", "color.decorate", "color.showbranch", "color.advice",
    "color.pager", "diff.renames", "diff.algorithm", "diff.colormoved", "diff.mnemonicprefix",
    "diff.noprefix", "diff.context", "diff.indentheuristic", "diff.submodule",
    "diff.renamelimit", "merge.conflictstyle", "merge.ff", "merge.log", "merge.renames",
    "merge.renamelimit", "pull.rebase", "pull.ff", "push.default", "push.autosetupremote",
    "push.followtags", "fetch.prune", "fetch.prunetags", "fetch.fsckobjects",
    "transfer.fsckobjects", "rebase.autosquash", "rebase.autostash", "rebase.updaterefs",
    "rebase.stat", "rerere.enabled", "rerere.autoupdate", "commit.verbose", "commit.cleanup",
    "status.short", "status.branch", "status.showuntrackedfiles", "status.submodulesummary",
    "status.relativepaths", "log.date", "log.decorate", "log.follow", "log.abbrevcommit",
    "tag.sort", "branch.sort", "branch.autosetupmerge", "branch.autosetuprebase",
    "column.ui", "grep.linenumber", "grep.patterntype", "grep.extendedregexp", "am.threeway",
    "apply.whitespace", "submodule.recurse", "protocol.version", "help.autocorrect",
    "blame.date", "safe.directory",
};

static const char *const color_subs[] = {
    "diff", "status", "branch", "grep", "interactive", "decorate", "remote", "advice",
    "blame", "transport", "push",
};

/* The user's config allowlist: the everyday keys above, color.<sub>.*, and advice.*. */
static bool allow_everyday(const cfg_setting *s)
{
    char key[140];
    if (s->has_sub) {
        return !strcmp(s->section, "color") && KEY_IN(s->sub, color_subs);
    }
    if (!strcmp(s->section, "advice"))
        return true;
    snprintf(key, sizeof(key), "%s.%s", s->section, s->key);
    return KEY_IN(key, everyday);
}

static const char *const repo_core[] = {
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
    "core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.checkstat",
    "core.trustctime", "core.commitgraph", "core.multipackindex", "core.splitindex",
    "core.untrackedcache", "core.sparsecheckout", "core.sparsecheckoutcone",
    "core.protecthfs", "core.protectntfs", "core.compression", "core.bigfilethreshold",
};

/* A repository's config allowlist: the everyday keys, the core settings that describe
 * the repository (repo_core), extensions and format, and of branch, remote and submodule
 * sections only the keys that name where things are (url, fetch, merge, ...), never a
 * command, a helper or a file to read. */
static bool allow_repo(const cfg_setting *s)
{
    char key[140];
    if (s->has_sub) {
        if (!strcmp(s->section, "branch"))
            return !strcmp(s->key, "remote") || !strcmp(s->key, "merge") ||
                   !strcmp(s->key, "rebase") || !strcmp(s->key, "pushremote") ||
                   !strcmp(s->key, "description");
        if (!strcmp(s->section, "remote"))
            return !strcmp(s->key, "url") || !strcmp(s->key, "pushurl") ||
                   !strcmp(s->key, "fetch") || !strcmp(s->key, "push") ||
                   !strcmp(s->key, "tagopt") || !strcmp(s->key, "mirror") ||
                   !strcmp(s->key, "prune");
        if (!strcmp(s->section, "submodule"))
            return !strcmp(s->key, "url") || !strcmp(s->key, "active") ||
                   !strcmp(s->key, "branch");
        return allow_everyday(s);
    }
    if (!strcmp(s->section, "extensions") || !strcmp(s->section, "format"))
        return true;
    snprintf(key, sizeof(key), "%s.%s", s->section, s->key);
    return KEY_IN(key, repo_core) || allow_everyday(s);
}

int gitconfig_filter_repo(const char *text, size_t len, strbuf *out)
{
    return filter_config(text, len, out, allow_repo);
}

int gitconfig_filter_user(const char *text, size_t len, strbuf *out)
{
    return filter_config(text, len, out, allow_everyday);
}
