/*
 * The git network commands the host runs: clone, fetch, pull, push and
 * ls-remote, each with an allowlist of options spelled exactly as git
 * spells them.
 *
 * git's option parser accepts any unambiguous prefix of a long option
 * (--upload-pa=... is --upload-pack), "--opt=value" and "--opt value",
 * clusters of short options whose last member may take the rest of the
 * word as its value (-j4, -ofoo), and options after operands. The parser
 * below models exactly that, and accepts a word only when it is an
 * allowed option, a value that allowed option takes (checked by kind), or
 * an operand in a position the rules understand. Everything else is the
 * sandbox's. The host runner also sets GIT_TEST_DISALLOW_ABBREVIATED_OPTIONS
 * so that git itself refuses abbreviations, whatever its version.
 */
#include "router/rules.h"
#include "common/urlcred.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const route_git_sub_names[] = { "clone", "fetch", "pull", "push", "ls-remote" };

typedef enum argkind { A_NONE, A_REQ, A_OPT } argkind;

typedef enum valkind {
    V_NONE,
    V_NUM,       /* 1-9 decimal digits */
    V_REF,       /* printable, no spaces, not starting with '-' */
    V_TEXT,      /* printable with spaces, not starting with '-' */
    V_SORT,      /* ls-remote --sort keys: -?[a-z:()]... */
    V_REBASE,    /* true, false, merges */
    V_NO,        /* the only allowed value is "no" */
    V_CHECK_NO,  /* check or no */
    V_DIR,       /* global -C: a directory inside the code directories */
} valkind;

typedef struct gopt {
    char sh;             /* short letter, or 0 */
    const char *lng;     /* long name without "--", or NULL */
    argkind arg;
    valkind val;
} gopt;

#define END { 0, NULL, A_NONE, V_NONE }

static const gopt clone_opts[] = {
    { 'v', "verbose", A_NONE, V_NONE }, { 'q', "quiet", A_NONE, V_NONE },
    { 0, "progress", A_NONE, V_NONE }, { 0, "no-progress", A_NONE, V_NONE },
    { 0, "reject-shallow", A_NONE, V_NONE }, { 0, "no-reject-shallow", A_NONE, V_NONE },
    { 'n', "no-checkout", A_NONE, V_NONE }, { 0, "checkout", A_NONE, V_NONE },
    { 0, "bare", A_NONE, V_NONE }, { 0, "mirror", A_NONE, V_NONE },
    { 'l', "local", A_NONE, V_NONE }, { 0, "no-local", A_NONE, V_NONE },
    { 0, "no-hardlinks", A_NONE, V_NONE }, { 0, "hardlinks", A_NONE, V_NONE },
    { 0, "no-recurse-submodules", A_NONE, V_NONE },
    { 'o', "origin", A_REQ, V_REF }, { 'b', "branch", A_REQ, V_REF },
    { 0, "depth", A_REQ, V_NUM }, { 0, "shallow-since", A_REQ, V_TEXT },
    { 0, "shallow-exclude", A_REQ, V_REF },
    { 0, "single-branch", A_NONE, V_NONE }, { 0, "no-single-branch", A_NONE, V_NONE },
    { 0, "no-tags", A_NONE, V_NONE }, { 0, "tags", A_NONE, V_NONE },
    { '4', "ipv4", A_NONE, V_NONE }, { '6', "ipv6", A_NONE, V_NONE },
    { 0, "filter", A_REQ, V_REF }, { 0, "no-filter", A_NONE, V_NONE },
    { 0, "sparse", A_NONE, V_NONE },
    END
};

static const gopt fetch_opts[] = {
    { 'v', "verbose", A_NONE, V_NONE }, { 'q', "quiet", A_NONE, V_NONE },
    { 0, "all", A_NONE, V_NONE }, { 0, "set-upstream", A_NONE, V_NONE },
    { 'a', "append", A_NONE, V_NONE }, { 0, "atomic", A_NONE, V_NONE },
    { 'f', "force", A_NONE, V_NONE }, { 'm', "multiple", A_NONE, V_NONE },
    { 't', "tags", A_NONE, V_NONE }, { 'n', NULL, A_NONE, V_NONE },
    { 0, "no-tags", A_NONE, V_NONE }, { 'j', "jobs", A_REQ, V_NUM },
    { 'p', "prune", A_NONE, V_NONE }, { 0, "no-prune", A_NONE, V_NONE },
    { 'P', "prune-tags", A_NONE, V_NONE }, { 0, "no-prune-tags", A_NONE, V_NONE },
    { 0, "no-recurse-submodules", A_NONE, V_NONE },
    { 0, "recurse-submodules", A_OPT, V_NO },
    { 0, "dry-run", A_NONE, V_NONE },
    { 0, "write-fetch-head", A_NONE, V_NONE }, { 0, "no-write-fetch-head", A_NONE, V_NONE },
    { 'k', "keep", A_NONE, V_NONE },
    { 0, "progress", A_NONE, V_NONE }, { 0, "no-progress", A_NONE, V_NONE },
    { 0, "depth", A_REQ, V_NUM }, { 0, "shallow-since", A_REQ, V_TEXT },
    { 0, "shallow-exclude", A_REQ, V_REF }, { 0, "deepen", A_REQ, V_NUM },
    { 0, "unshallow", A_NONE, V_NONE }, { 0, "refetch", A_NONE, V_NONE },
    { 0, "update-shallow", A_NONE, V_NONE },
    { '4', "ipv4", A_NONE, V_NONE }, { '6', "ipv6", A_NONE, V_NONE },
    { 0, "filter", A_REQ, V_REF },
    { 0, "show-forced-updates", A_NONE, V_NONE },
    { 0, "no-show-forced-updates", A_NONE, V_NONE },
    { 0, "write-commit-graph", A_NONE, V_NONE },
    { 0, "no-write-commit-graph", A_NONE, V_NONE },
    { 0, "prefetch", A_NONE, V_NONE },
    { 0, "auto-maintenance", A_NONE, V_NONE }, { 0, "no-auto-maintenance", A_NONE, V_NONE },
    { 0, "auto-gc", A_NONE, V_NONE }, { 0, "no-auto-gc", A_NONE, V_NONE },
    END
};

static const gopt pull_opts[] = {
    { 'v', "verbose", A_NONE, V_NONE }, { 'q', "quiet", A_NONE, V_NONE },
    { 0, "progress", A_NONE, V_NONE }, { 0, "no-progress", A_NONE, V_NONE },
    { 0, "no-recurse-submodules", A_NONE, V_NONE },
    { 0, "recurse-submodules", A_OPT, V_NO },
    { 'r', "rebase", A_OPT, V_REBASE }, { 0, "no-rebase", A_NONE, V_NONE },
    { 'n', NULL, A_NONE, V_NONE }, { 0, "stat", A_NONE, V_NONE },
    { 0, "no-stat", A_NONE, V_NONE }, { 0, "summary", A_NONE, V_NONE },
    { 0, "no-summary", A_NONE, V_NONE },
    { 0, "log", A_OPT, V_NUM }, { 0, "no-log", A_NONE, V_NONE },
    { 0, "signoff", A_NONE, V_NONE }, { 0, "no-signoff", A_NONE, V_NONE },
    { 0, "squash", A_NONE, V_NONE }, { 0, "no-squash", A_NONE, V_NONE },
    { 0, "commit", A_NONE, V_NONE }, { 0, "no-commit", A_NONE, V_NONE },
    { 0, "no-edit", A_NONE, V_NONE },
    { 0, "ff", A_NONE, V_NONE }, { 0, "no-ff", A_NONE, V_NONE },
    { 0, "ff-only", A_NONE, V_NONE },
    { 0, "no-verify", A_NONE, V_NONE }, { 0, "verify", A_NONE, V_NONE },
    { 0, "autostash", A_NONE, V_NONE }, { 0, "no-autostash", A_NONE, V_NONE },
    { 0, "allow-unrelated-histories", A_NONE, V_NONE },
    { 0, "all", A_NONE, V_NONE }, { 'a', "append", A_NONE, V_NONE },
    { 'f', "force", A_NONE, V_NONE }, { 't', "tags", A_NONE, V_NONE },
    { 0, "no-tags", A_NONE, V_NONE }, { 'p', "prune", A_NONE, V_NONE },
    { 0, "no-prune", A_NONE, V_NONE }, { 'j', "jobs", A_OPT, V_NUM },
    { 0, "dry-run", A_NONE, V_NONE }, { 'k', "keep", A_NONE, V_NONE },
    { 0, "depth", A_REQ, V_NUM }, { 0, "shallow-since", A_REQ, V_TEXT },
    { 0, "shallow-exclude", A_REQ, V_REF }, { 0, "deepen", A_REQ, V_NUM },
    { 0, "unshallow", A_NONE, V_NONE }, { 0, "update-shallow", A_NONE, V_NONE },
    { '4', "ipv4", A_NONE, V_NONE }, { '6', "ipv6", A_NONE, V_NONE },
    { 0, "show-forced-updates", A_NONE, V_NONE },
    { 0, "no-show-forced-updates", A_NONE, V_NONE },
    { 0, "set-upstream", A_NONE, V_NONE },
    END
};

static const gopt push_opts[] = {
    { 'v', "verbose", A_NONE, V_NONE }, { 'q', "quiet", A_NONE, V_NONE },
    { 0, "all", A_NONE, V_NONE }, { 0, "mirror", A_NONE, V_NONE },
    { 'd', "delete", A_NONE, V_NONE }, { 0, "tags", A_NONE, V_NONE },
    { 'n', "dry-run", A_NONE, V_NONE }, { 0, "porcelain", A_NONE, V_NONE },
    { 'f', "force", A_NONE, V_NONE },
    { 0, "force-with-lease", A_OPT, V_REF }, { 0, "no-force-with-lease", A_NONE, V_NONE },
    { 0, "force-if-includes", A_NONE, V_NONE },
    { 0, "no-force-if-includes", A_NONE, V_NONE },
    { 0, "no-recurse-submodules", A_NONE, V_NONE },
    { 0, "recurse-submodules", A_REQ, V_CHECK_NO },
    { 0, "thin", A_NONE, V_NONE }, { 0, "no-thin", A_NONE, V_NONE },
    { 'u', "set-upstream", A_NONE, V_NONE },
    { 0, "progress", A_NONE, V_NONE }, { 0, "no-progress", A_NONE, V_NONE },
    { 0, "prune", A_NONE, V_NONE }, { 0, "no-verify", A_NONE, V_NONE },
    { 0, "verify", A_NONE, V_NONE },
    { 0, "follow-tags", A_NONE, V_NONE }, { 0, "no-follow-tags", A_NONE, V_NONE },
    { 0, "no-signed", A_NONE, V_NONE },
    { 0, "atomic", A_NONE, V_NONE }, { 0, "no-atomic", A_NONE, V_NONE },
    { 'o', "push-option", A_REQ, V_TEXT },
    { '4', "ipv4", A_NONE, V_NONE }, { '6', "ipv6", A_NONE, V_NONE },
    END
};

static const gopt ls_remote_opts[] = {
    { 'q', "quiet", A_NONE, V_NONE }, { 't', "tags", A_NONE, V_NONE },
    { 'h', "heads", A_NONE, V_NONE }, { 0, "refs", A_NONE, V_NONE },
    { 0, "get-url", A_NONE, V_NONE }, { 0, "sort", A_REQ, V_SORT },
    { 0, "exit-code", A_NONE, V_NONE }, { 0, "symref", A_NONE, V_NONE },
    END
};

static const gopt *const sub_opts[] = { clone_opts, fetch_opts, pull_opts, push_opts,
                                        ls_remote_opts };

/* Options (and short letters) with a known danger, for a reason people can
 * act on; the same words, abbreviated, get the same reason. */
static const struct danger {
    const char *lng;
    const char *why;
} dangers[] = {
    { "upload-pack", "runs a program" },
    { "receive-pack", "runs a program" },
    { "exec", "runs a program" },
    { "config", "sets configuration (core.sshCommand, hooks, ...)" },
    { "template", "installs hooks from a template directory" },
    { "separate-git-dir", "moves the repository" },
    { "reference", "reads objects from another repository" },
    { "reference-if-able", "reads objects from another repository" },
    { "shared", "links the clone to the source's objects" },
    { "recurse-submodules", "fetches submodules from URLs the repository names" },
    { "recursive", "fetches submodules from URLs the repository names" },
    { "bundle-uri", "downloads from a second location" },
    { "edit", "opens an editor" },
    { "strategy", "a merge strategy is a program found on PATH" },
    { "strategy-option", "passes options to a merge strategy" },
    { "gpg-sign", "runs gpg" },
    { "signed", "runs gpg" },
    { "verify-signatures", "runs gpg" },
    { "stdin", "reads refspecs from standard input" },
    { "update-head-ok", "lets fetch overwrite the checked-out branch" },
    { "repo", "names the repository in an option" },
    { "help", "opens the manual in a pager" },
    { "server-option", "sends text to the server" },
    { "refmap", "changes where fetched refs are stored" },
    { "negotiation-tip", "is not needed on the host" },
};

static const char *danger_of(const char *name, size_t n, bool *abbrev)
{
    for (size_t i = 0; i < ARRAY_SIZE(dangers); i++) {
        size_t dl = strlen(dangers[i].lng);
        if (n <= dl && !strncmp(dangers[i].lng, name, n)) {
            *abbrev = n < dl;
            return dangers[i].why;
        }
    }
    return NULL;
}

static bool is_abbrev_of_allowed(const gopt *opts, const char *name, size_t n)
{
    for (const gopt *o = opts; o->sh || o->lng; o++)
        if (o->lng && strlen(o->lng) > n && !strncmp(o->lng, name, n))
            return true;
    return false;
}

static bool printable(const char *v, bool spaces)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p > 0x7e || *p < (spaces ? 0x20 : 0x21))
            return false;
    return true;
}

/* Checks an option's value; 0 or -1 with why. */
static int check_value(valkind k, const char *v, strbuf *why)
{
    size_t n = strlen(v);

    switch (k) {
    case V_NONE:
        return 0;
    case V_NUM:
        if (n >= 1 && n <= 9 && strspn(v, "0123456789") == n)
            return 0;
        strbuf_addstr(why, "value is not a number");
        return -1;
    case V_REF:
    case V_TEXT:
        if (n && n <= 1024 && v[0] != '-' && printable(v, k == V_TEXT))
            return 0;
        strbuf_addstr(why, n && v[0] == '-' ? "value starts with '-'"
                                            : "value with unexpected characters");
        return -1;
    case V_SORT:
        if (n && n <= 64 && strspn(v, "-abcdefghijklmnopqrstuvwxyz:()") == n)
            return 0;
        strbuf_addstr(why, "unexpected sort key");
        return -1;
    case V_REBASE:
        if (!strcmp(v, "true") || !strcmp(v, "false") || !strcmp(v, "merges"))
            return 0;
        strbuf_addstr(why, "only true, false and merges (interactive opens an editor)");
        return -1;
    case V_NO:
        if (!strcmp(v, "no"))
            return 0;
        strbuf_addstr(why, "fetches submodules from URLs the repository names");
        return -1;
    case V_CHECK_NO:
        if (!strcmp(v, "check") || !strcmp(v, "no"))
            return 0;
        strbuf_addstr(why, "pushes submodules (only check and no are allowed)");
        return -1;
    case V_DIR:
        break;
    }
    strbuf_addstr(why, "unexpected value");
    return -1;
}

/* The directory git clone makes when no directory is given: the URL's last
 * component without .git or .bundle. Only plain names are accepted, so
 * that there is no doubt about which directory it is. */
static int clone_default_dir(const char *url, strbuf *out)
{
    size_t n = strlen(url), start;

    while (n > 1 && url[n - 1] == '/')
        n--;
    if (n >= 5 && !strncmp(url + n - 5, "/.git", 5))
        n -= 5;
    while (n > 1 && url[n - 1] == '/')
        n--;
    start = n;
    while (start > 0 && url[start - 1] != '/' && url[start - 1] != ':')
        start--;
    strbuf_reset(out);
    strbuf_add(out, url + start, n - start);
    if (out->len > 4 && !strcmp(out->buf + out->len - 4, ".git"))
        strbuf_setlen(out, out->len - 4);
    else if (out->len > 7 && !strcmp(out->buf + out->len - 7, ".bundle"))
        strbuf_setlen(out, out->len - 7);
    if (!out->len || !strcmp(out->buf, ".") || !strcmp(out->buf, "..") ||
        strspn(out->buf, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
            out->len)
        return -1;
    return 0;
}

static int check_clone_target(const route_ctx *ctx, rcmd *c, const char *cwd, const char *dir,
                              strbuf *why)
{
    strbuf abs = STRBUF_INIT;
    const char *w;
    bool exists;
    int ret = 0;

    if (dir[0] == '-' || !printable(dir, true)) {
        strbuf_addstr(why, "unexpected characters in the clone directory");
        return -1;
    }
    if (dir[0] == '~') {
        strbuf_addstr(why, "~ in the clone directory");
        return -1;
    }
    if (route_walk(cwd, dir, WALK_DIR | WALK_MISSING_OK, &abs, &exists, &w) < 0) {
        strbuf_addf(why, "clone directory %s", w);
        ret = -1;
    } else if (!route_in_code_dirs(ctx, abs.buf)) {
        strbuf_addstr(why, "clone directory outside the code directories");
        ret = -1;
    } else if (exists) {
        /* the runner makes the missing directories itself, beneath the code
         * directory, and git the last one: never an existing one */
        strbuf_addstr(why, "the clone directory already exists");
        ret = -1;
    } else if (strstr(abs.buf, "/.git/") || !strcmp(strrchr(abs.buf, '/'), "/.git")) {
        strbuf_addstr(why, "a clone directory inside a .git directory");
        ret = -1;
    } else {
        free(c->clone_target);
        c->clone_target = strbuf_detach(&abs, NULL);
    }
    strbuf_release(&abs);
    return ret;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* A directory git would take for a repository (is_git_directory(): HEAD,
 * objects/ and refs/). */
static bool looks_like_git_dir(int dfd)
{
    struct stat st;
    return fstatat(dfd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
           fstatat(dfd, "objects", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
           fstatat(dfd, "refs", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/*
 * Pins the repository git works in: c->git_cwd_fd is already open beneath
 * code directory `which`. git must use that code directory's own top level
 * and its own `.git` directory, and nothing a walk up from the directory
 * might find on the way (a nested repository, a gitfile, a bare repository
 * planted in the tree, the inside of `.git`). The walk goes up through
 * ".." from the held descriptor, comparing directories by device and inode,
 * so what is checked is where git will be, not what a name meant a moment
 * ago. A clone makes a new repository: it needs no repository here, but
 * must not start inside `.git` or a bare repository either.
 */
static int pin_repository(const route_ctx *ctx, rcmd *c, int which, bool clone, strbuf *why)
{
    struct stat top, git, cur, up;
    int fd = -1, parent;
    const char *topdir = ctx->code_dirs[which];
    bool has_git = false;

    c->git_top = topdir;
    if ((c->git_top_fd = route_open_code_dir(ctx, which)) < 0 || fstat(c->git_top_fd, &top) < 0) {
        strbuf_addstr(why, "the code directory cannot be opened");
        return -1;
    }
    c->git_dir_fd = openat(c->git_top_fd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (c->git_dir_fd >= 0 && fstat(c->git_dir_fd, &git) == 0) {
        has_git = true;
    } else if (!clone) {
        struct stat st;
        if (fstatat(c->git_top_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0)
            strbuf_addstr(why, "not in a git repository (the code directory has no .git)");
        else
            strbuf_addstr(why, "the code directory's .git is not a directory (a gitfile or a "
                               "link points git elsewhere)");
        return -1;
    }
    if ((fd = fcntl(c->git_cwd_fd, F_DUPFD_CLOEXEC, 3)) < 0) {
        strbuf_addstr(why, "cannot examine the directory");
        return -1;
    }
    for (int depth = 0;; depth++) {
        struct stat st;
        if (fstat(fd, &cur) < 0 || depth > 4096) {
            strbuf_addstr(why, "cannot examine the directory");
            goto bad;
        }
        if (same_file(&cur, &top))
            break;
        if (has_git && same_file(&cur, &git)) {
            strbuf_addstr(why, "inside the repository's .git directory (whose contents the "
                               "sandbox writes)");
            goto bad;
        }
        if (looks_like_git_dir(fd)) {
            strbuf_addstr(why, "inside a bare repository in the code directories (its config "
                               "and hooks are the sandbox's)");
            goto bad;
        }
        if (!clone && fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
            strbuf_addstr(why, "in a nested repository or worktree: only the code directory's "
                               "own repository runs on the host");
            goto bad;
        }
        parent = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        close(fd);
        fd = parent;
        if (fd < 0 || fstat(fd, &up) < 0 || same_file(&up, &cur)) {
            strbuf_addstr(why, "the directory is no longer inside the code directory");
            goto bad;
        }
    }
    close(fd);
    {
        /* git never looks for a repository above the code directory (a clone reads
         * the config of the repository it starts in, for its pager) */
        const char *slash = strrchr(topdir, '/');
        strbuf ceil = STRBUF_INIT;
        strbuf_add(&ceil, topdir, slash && slash > topdir ? (size_t)(slash - topdir) : 1);
        c->git_ceiling = strbuf_detach(&ceil, NULL);
    }
    if (has_git && !clone) {
        struct stat named;
        strbuf d = STRBUF_INIT;
        strbuf_addf(&d, "%s/.git", strcmp(topdir, "/") ? topdir : "");
        /* the name git will be given must be the directory just checked */
        if (lstat(d.buf, &named) < 0 || !S_ISDIR(named.st_mode) || !same_file(&named, &git)) {
            strbuf_release(&d);
            strbuf_addstr(why, "the repository's .git changed while it was checked");
            return -1;
        }
        c->git_dir = strbuf_detach(&d, NULL);
    }
    return 0;
bad:
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Whether the directory abs (inside the code directories) is the pinned
 * repository itself: its top level or its .git. */
static bool is_this_repository(const route_ctx *ctx, const rcmd *c, const char *abs)
{
    struct stat st, top, git;
    const char *w;
    int fd;
    bool yes;

    if (c->git_dir_fd < 0 || (fd = route_open_dir(ctx, abs, NULL, &w)) < 0)
        return false;
    yes = fstat(fd, &st) == 0 && fstat(c->git_top_fd, &top) == 0 &&
          fstat(c->git_dir_fd, &git) == 0 && (same_file(&st, &top) || same_file(&st, &git));
    close(fd);
    return yes;
}

bool route_git_secret(const sh_parse *p, const sh_pipeline *pl, strbuf *sub)
{
    strbuf v = STRBUF_INIT;
    bool hit = false;

    for (const sh_cmd *cmd = pl->cmds; cmd && !hit; cmd = cmd->next) {
        bool value_next = false;   /* the word after -C or -c is not the subcommand */
        if (cmd->kind != SH_SIMPLE || !cmd->words)
            continue;
        strbuf_reset(&v);
        if (!sh_word_static_value(cmd->words, &v) || strcmp(v.buf, "git"))
            continue;
        strbuf_reset(sub);
        for (const sh_word *w = cmd->words->next; w && !hit; w = w->next) {
            /* The word's source text, quotes and expansions and all: bash may glob an
             * unquoted `https://u:p@[::1]/r` or expand `u:$TOKEN@`, and either way the
             * line names a secret in a URL. */
            hit = urlcred_has(sh_span_ptr(p, w->span), sh_span_len(w->span));
            strbuf_reset(&v);
            if (!sh_word_static_value(w, &v)) {
                value_next = false;
                continue;
            }
            if (!sub->len && !value_next && v.len && v.buf[0] != '-' && !strchr(v.buf, ':'))
                strbuf_addstr(sub, v.buf);
            value_next = !strcmp(v.buf, "-C") || !strcmp(v.buf, "-c");
        }
    }
    if (!hit)
        strbuf_reset(sub);
    strbuf_release(&v);
    return hit;
}

static bool url_scheme(const char *repo, strbuf *scheme, const char **rest)
{
    const char *p = repo;

    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        return false;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '+' || *p == '-' || *p == '.')
        p++;
    if (strncmp(p, "://", 3))
        return false;
    strbuf_reset(scheme);
    for (const char *q = repo; q < p; q++)
        strbuf_addch(scheme, (*q >= 'A' && *q <= 'Z') ? *q + 32 : *q);
    *rest = p + 3;
    return true;
}

/* user@host:port of a URL or of scp-like syntax must not look like an
 * option to ssh, even after percent-decoding. */
static int check_authority(const char *a, size_t n, bool decoded_by_git, strbuf *why)
{
    const char *at = memchr(a, '@', n);
    const char *host = at ? at + 1 : a;

    if ((n && a[0] == '-') || (host < a + n && *host == '-')) {
        strbuf_addstr(why, "a host or user that starts with '-' (an ssh option)");
        return -1;
    }
    if (decoded_by_git && memchr(a, '%', n)) {
        strbuf_addstr(why, "percent-encoding in the host part");
        return -1;
    }
    return 0;
}

static bool valid_remote_nick(const char *s)
{
    return *s && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/');
}

/* Which names git tries for a local repository path (path.c's enter_repo()
 * and clone's get_repo_path()): if any exists, the operand is a path. */
static bool any_probe_exists(const char *abs)
{
    static const char *const sfx[] = { "", "/.git", ".git/.git", ".git", ".bundle" };
    strbuf probe = STRBUF_INIT;
    bool any = false;

    for (size_t i = 0; i < ARRAY_SIZE(sfx) && !any; i++) {
        struct stat st;
        strbuf_reset(&probe);
        strbuf_addf(&probe, "%s%s", abs, sfx[i]);
        any = lstat(probe.buf, &st) == 0;
    }
    strbuf_release(&probe);
    return any;
}

/*
 * A repository operand. base is where git resolves a relative path: the
 * top level of the work tree (git moves there before it looks at its
 * arguments), or for clone the directory it starts in. A local path is
 * allowed only when it is the repository git already works in (its top
 * level or its .git, by device and inode): every other directory inside
 * the code directories has contents the sandbox chose (a bare repository
 * there is plain synced files, config and hooks included), and a local
 * repository needs no credentials, so it loses nothing in the sandbox. It
 * is then passed on as the absolute path of that .git (into *rewrite). A
 * bare word that names nothing on disk is a remote's name (*nick): the
 * runner checks that it is configured.
 */
static int check_repo(const route_ctx *ctx, const rcmd *c, const char *base, const char *repo,
                      bool push, strbuf *rewrite, bool *nick, strbuf *why)
{
    strbuf scheme = STRBUF_INIT, abs = STRBUF_INIT;
    const char *rest, *local = NULL, *w;
    bool exists, file_url = false;
    int ret = -1;

    *nick = false;
    if (!*repo) {
        strbuf_addstr(why, "an empty repository");
        return -1;
    }
    if (repo[0] == '-') {
        strbuf_addstr(why, "a repository that starts with '-' would be read as an option");
        return -1;
    }
    if (strstr(repo, "::")) {
        strbuf_addstr(why, "<transport>::<address> runs a remote helper program");
        return -1;
    }
    if (!printable(repo, false) || strlen(repo) > 4096) {
        strbuf_addstr(why, "a repository with spaces or control characters");
        return -1;
    }
    if (repo[0] == '~') {
        strbuf_addstr(why, "a repository under ~ (outside the code directories)");
        return -1;
    }
    if (url_scheme(repo, &scheme, &rest)) {
        size_t alen = strcspn(rest, "/");
        if (!strcmp(scheme.buf, "file")) {
            if (*rest != '/') {
                strbuf_addstr(why, "a file:// URL with a host");
                goto out;
            }
            if (strchr(rest, '%')) {
                strbuf_addstr(why, "percent-encoding in a file:// URL");
                goto out;
            }
            if (push) {
                strbuf_addstr(why, "pushing to a local repository runs its hooks on the host");
                goto out;
            }
            local = rest;
            file_url = true;
        } else if (!strcmp(scheme.buf, "https") || !strcmp(scheme.buf, "http")) {
            if (check_authority(rest, alen, false, why) < 0)
                goto out;
        } else if (!strcmp(scheme.buf, "ssh") || !strcmp(scheme.buf, "git+ssh") ||
                   !strcmp(scheme.buf, "ssh+git") || !strcmp(scheme.buf, "git")) {
            if (check_authority(rest, alen, true, why) < 0)
                goto out;
        } else {
            strbuf_addstr(why, "unknown URL scheme ");
            route_reason_add(why, scheme.buf, scheme.len);
            strbuf_addstr(why, ": git would run git-remote-");
            route_reason_add(why, scheme.buf, scheme.len);
            goto out;
        }
    } else {
        const char *colon = strchr(repo, ':'), *slash = strchr(repo, '/');
        if (colon && (!slash || colon < slash)) {
            /* scp-like [user@]host:path, run through ssh */
            if (check_authority(repo, (size_t)(colon - repo), true, why) < 0)
                goto out;
        } else {
            local = repo;
        }
    }
    if (local) {
        if (route_walk(base, local, WALK_MISSING_OK, &abs, &exists, &w) < 0) {
            strbuf_addf(why, "local repository: %s", w);
            goto out;
        }
        if (!route_in_code_dirs(ctx, abs.buf)) {
            strbuf_addstr(why, "a local repository outside the code directories");
            goto out;
        }
        if (!file_url && valid_remote_nick(local) && !any_probe_exists(abs.buf)) {
            /* a bare word that names nothing on disk is a remote's name */
            *nick = true;
            ret = 0;
            goto out;
        }
        if (push) {
            strbuf_addstr(why, "pushing to a local repository runs its hooks on the host");
            goto out;
        }
        if (!exists || !is_this_repository(ctx, c, abs.buf)) {
            strbuf_addstr(why, "a local repository other than this one (its config, hooks "
                               "and alternates are the sandbox's; it needs no credentials)");
            goto out;
        }
        strbuf_reset(rewrite);
        if (!strcmp(repo, ".") && c->git_sub != GIT_CLONE)
            strbuf_addstr(rewrite, ".");   /* git reads it as its own top level, as checked */
        else
            strbuf_addf(rewrite, "%s%s/.git", file_url ? "file://" : "",
                        strcmp(c->git_top, "/") ? c->git_top : "");
    }
    ret = 0;
out:
    strbuf_release(&scheme);
    strbuf_release(&abs);
    return ret;
}

static int check_ref(const char *v, const char *what, strbuf *why)
{
    if (v[0] == '-') {
        strbuf_addf(why, "a %s that starts with '-' would be read as an option", what);
        return -1;
    }
    if (!*v || !printable(v, false) || strlen(v) > 1024) {
        strbuf_addf(why, "a %s with spaces or control characters", what);
        return -1;
    }
    return 0;
}

/* Looks up a long option; returns it, or NULL with a reason. */
static const gopt *find_long(const gopt *opts, const char *sub, const char *name, size_t n,
                             strbuf *why)
{
    const char *danger;
    bool abbrev;

    for (const gopt *o = opts; o->sh || o->lng; o++)
        if (o->lng && strlen(o->lng) == n && !strncmp(o->lng, name, n))
            return o;
    strbuf_addf(why, "git %s: --", sub);
    route_reason_add(why, name, n);
    if ((danger = danger_of(name, n, &abbrev)))
        strbuf_addf(why, "%s %s", abbrev ? " abbreviates an option that" : "", danger);
    else if (is_abbrev_of_allowed(opts, name, n))
        strbuf_addstr(why, " is an abbreviation (only exact spellings are allowed)");
    else
        strbuf_addstr(why, " is not an allowed option");
    return NULL;
}

static const gopt *find_short(const gopt *opts, const char *sub, char c, strbuf *why)
{
    static const struct { char c; const char *why; } short_dangers[] = {
        { 'u', "runs a program or overwrites the checked-out branch" },
        { 'c', "sets configuration" },
        { 's', "runs a merge strategy from PATH or shares objects" },
        { 'S', "runs gpg" },
        { 'e', "opens an editor" },
        { 'X', "passes options to a merge strategy" },
        { 'o', "sends text to the server" },
        { 'h', "opens help" },
    };

    for (const gopt *o = opts; o->sh || o->lng; o++)
        if (o->sh == c)
            return o;
    strbuf_addf(why, "git %s: -", sub);
    route_reason_add(why, &c, 1);
    for (size_t i = 0; i < ARRAY_SIZE(short_dangers); i++)
        if (short_dangers[i].c == c) {
            strbuf_addf(why, " %s", short_dangers[i].why);
            return NULL;
        }
    strbuf_addstr(why, " is not an allowed option");
    return NULL;
}

static int option_value(const gopt *o, const char *sub, const char *v, strbuf *why)
{
    strbuf w = STRBUF_INIT;
    if (check_value(o->val, v, &w) == 0) {
        strbuf_release(&w);
        return 0;
    }
    strbuf_addf(why, "git %s: ", sub);
    if (o->lng)
        strbuf_addf(why, "--%s", o->lng);
    else
        strbuf_addf(why, "-%c", o->sh);
    strbuf_addf(why, " %s", w.buf);
    strbuf_release(&w);
    return -1;
}

/* One git command line as route_check_git takes it apart, word by word. */
typedef struct git_words {
    char **argv;
    size_t argc;
    size_t i;                           /* the next word to look at */
    bool skip[ROUTE_MAX_WORDS];         /* -C and its directory: not passed on to git */
    const char *ops[ROUTE_MAX_WORDS];   /* the operands ... */
    size_t op_at[ROUTE_MAX_WORDS];      /* ... and where each stands in argv */
    size_t nops;
    char *rewritten[ROUTE_MAX_WORDS];   /* an operand as checked (a local repository's
                                           real path), or NULL: as given */
    bool multiple, all;                 /* fetch -m/--multiple: every operand names a
                                           repository; --all: none does */
} git_words;

/* git's own options, before the subcommand: exact matches only, since each
 * other one can make git run something or work on another repository. -C
 * moves *cwd (inside the code directories only) and is not passed on: git
 * starts in the directory held for it (git_cwd_fd). */
static int git_global_options(const route_ctx *ctx, git_words *g, strbuf *cwd, strbuf *why)
{
    char **argv = g->argv;
    size_t argc = g->argc, i = g->i;
    strbuf tmp = STRBUF_INIT;
    const char *werr;
    bool exists;
    int ret = -1;

    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--no-pager") || !strcmp(a, "-P") || !strcmp(a, "--no-replace-objects"))
            continue;
        if (!strcmp(a, "-C")) {
            g->skip[i] = g->skip[i + 1 < argc ? i + 1 : i] = true;
            if (++i >= argc) {
                strbuf_addstr(why, "git -C without a directory");
                goto out;
            }
            if (!*argv[i])
                continue;       /* git ignores -C "" */
            if (argv[i][0] == '~' || route_walk(cwd->buf, argv[i], WALK_DIR, &tmp, &exists,
                                                &werr) < 0) {
                strbuf_addf(why, "git -C: %s",
                            argv[i][0] == '~' ? "~ (outside the code directories)" : werr);
                goto out;
            }
            if (!route_in_code_dirs(ctx, tmp.buf)) {
                strbuf_addstr(why, "git -C: outside the code directories");
                goto out;
            }
            strbuf_reset(cwd);
            strbuf_add(cwd, tmp.buf, tmp.len);
            continue;
        }
        strbuf_addstr(why, "git ");
        route_reason_add(why, a, strlen(a));
        if (!strcmp(a, "-c") || !strncmp(a, "--config-env", 12))
            strbuf_addstr(why, ": sets configuration (core.sshCommand, aliases, ...)");
        else if (!strncmp(a, "--exec-path", 11))
            strbuf_addstr(why, ": runs git programs from another directory");
        else if (!strncmp(a, "--git-dir", 9) || !strncmp(a, "--work-tree", 11) ||
                 !strncmp(a, "--namespace", 11) || !strcmp(a, "--bare"))
            strbuf_addstr(why, ": moves the repository");
        else if (!strcmp(a, "-p") || !strcmp(a, "--paginate"))
            strbuf_addstr(why, ": runs a pager");
        else
            strbuf_addstr(why, ": not an allowed git option");
        goto out;
    }
    ret = 0;
out:
    g->i = i;
    strbuf_release(&tmp);
    return ret;
}

/* The subcommand's options, each against its allowlist (opts), with its value
 * checked; the other words are operands (all of them after `--`, and for
 * ls-remote after its first). */
static int git_sub_options(const gopt *opts, const char *sub, int s, git_words *g, strbuf *why)
{
    char **argv = g->argv;
    size_t argc = g->argc, i = g->i;
    bool dashdash = false;
    int ret = -1;

    for (; i < argc; i++) {
        const char *a = argv[i];
        const gopt *o;

        if (dashdash || a[0] != '-' || !a[1]) {
            g->op_at[g->nops] = i;
            g->ops[g->nops++] = a;
            /* ls-remote stops at its first operand: the rest are patterns */
            if (s == GIT_LS_REMOTE)
                dashdash = true;
            continue;
        }
        if (!strcmp(a, "--") || !strcmp(a, "--end-of-options")) {
            dashdash = true;
            continue;
        }
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t n = eq ? (size_t)(eq - name) : strlen(name);
            if (!(o = find_long(opts, sub, name, n, why)))
                goto out;
            if (o->arg == A_NONE && eq) {
                strbuf_addf(why, "git %s: --%s takes no value", sub, o->lng);
                goto out;
            }
            if (o->arg == A_REQ && !eq) {
                if (++i >= argc) {
                    strbuf_addf(why, "git %s: --%s needs a value", sub, o->lng);
                    goto out;
                }
                eq = argv[i] - 1;
            }
            if (eq && option_value(o, sub, eq + 1, why) < 0)
                goto out;
            /* --recurse-submodules alone means yes */
            if (!eq && o->val == V_NO && option_value(o, sub, "", why) < 0)
                goto out;
            g->multiple |= o->sh == 'm' && s == GIT_FETCH;
            g->all |= !strcmp(o->lng, "all");
            continue;
        }
        for (const char *p = a + 1; *p; p++) {
            if (!(o = find_short(opts, sub, *p, why)))
                goto out;
            if (o->arg == A_NONE) {
                g->multiple |= *p == 'm' && s == GIT_FETCH;
                continue;
            }
            /* the rest of the word is the value; a required one may be the next word */
            if (p[1]) {
                if (option_value(o, sub, p + 1, why) < 0)
                    goto out;
            } else if (o->arg == A_REQ) {
                if (++i >= argc) {
                    strbuf_addf(why, "git %s: -%c needs a value", sub, *p);
                    goto out;
                }
                if (option_value(o, sub, argv[i], why) < 0)
                    goto out;
            }
            break;
        }
    }
    ret = 0;
out:
    g->i = i;
    return ret;
}

/* The operands: repositories (a URL, a configured remote, or a local path that
 * must be a repository of ours), refspecs and patterns, a clone's source and
 * target. -1 with w saying what is wrong with one. */
static int git_operands(const route_ctx *ctx, rcmd *c, int s, const char *cwd, git_words *g,
                        strbuf *w)
{
    strbuf rw = STRBUF_INIT;
    bool nick;
    int ret = -1;

    for (size_t k = 0; k < g->nops; k++) {
        bool repo_pos = k == 0 || (g->multiple && s == GIT_FETCH);
        strbuf_reset(w);
        strbuf_reset(&rw);
        if (s == GIT_CLONE) {
            if (k == 0) {
                if (check_repo(ctx, c, cwd, g->ops[0], false, &rw, &nick, w) < 0)
                    goto out;
                if (nick) {
                    strbuf_addstr(w, "no such local repository");
                    goto out;
                }
            } else if (k == 1) {
                if (check_clone_target(ctx, c, cwd, g->ops[1], w) < 0)
                    goto out;
            } else {
                strbuf_addstr(w, "too many operands");
                goto out;
            }
            if (rw.len)
                g->rewritten[k] = strbuf_detach(&rw, NULL);
            continue;
        }
        if (repo_pos && !g->all) {
            if (check_repo(ctx, c, c->git_top, g->ops[k], s == GIT_PUSH, &rw, &nick, w) < 0)
                goto out;
            if (nick)
                strvec_push(&c->git_nicks, g->ops[k]);
            if (rw.len)
                g->rewritten[k] = strbuf_detach(&rw, NULL);
            if (k == 0)
                c->git_remote = g->ops[k];
        } else if (check_ref(g->ops[k], s == GIT_LS_REMOTE ? "pattern" : "refspec", w) < 0) {
            goto out;
        }
    }
    ret = 0;
out:
    strbuf_release(&rw);
    return ret;
}

/* What git is given: the words without -C, local repositories as checked. */
static void git_final_args(rcmd *c, int s, const git_words *g)
{
    for (size_t k = 1, o = 0; k < g->argc; k++) {
        while (o < g->nops && g->op_at[o] < k)
            o++;
        if (g->skip[k])
            continue;
        if (s == GIT_CLONE && o == 1 && o < g->nops && g->op_at[o] == k)
            c->clone_arg = (int)c->git_args.n;
        strvec_push(&c->git_args, o < g->nops && g->op_at[o] == k && g->rewritten[o]
                                      ? g->rewritten[o] : g->argv[k]);
    }
}

int route_check_git(const route_ctx *ctx, rcmd *c, strbuf *why)
{
    git_words *g = xcalloc(1, sizeof(*g));
    strbuf cwd = STRBUF_INIT, tmp = STRBUF_INIT, w = STRBUF_INIT;
    const char *sub, *werr;
    int s, ret = -1, which;

    g->argv = c->argv.v;
    g->argc = c->argv.n;
    g->i = 1;
    strbuf_addstr(&cwd, ctx->cwd);
    if (git_global_options(ctx, g, &cwd, why) < 0)
        goto out;
    if (g->i >= g->argc) {
        strbuf_addstr(why, "git without a network subcommand");
        goto out;
    }
    sub = g->argv[g->i++];
    for (s = 0; s < (int)ARRAY_SIZE(route_git_sub_names); s++)
        if (!strcmp(sub, route_git_sub_names[s]))
            break;
    if (s == (int)ARRAY_SIZE(route_git_sub_names)) {
        strbuf_addstr(why, "git ");
        route_reason_add(why, sub, strlen(sub));
        strbuf_addstr(why, ": only clone, fetch, pull, push and ls-remote run on the host");
        goto out;
    }
    if (!route_in_code_dirs(ctx, cwd.buf)) {
        strbuf_addf(why, "git %s: the directory is outside the code directories", sub);
        goto out;
    }
    /* Resolved once, held for the whole host part: git works here whatever
     * happens to the names afterwards. */
    c->git_sub = s;
    if ((c->git_cwd_fd = route_open_dir(ctx, cwd.buf, &which, &werr)) < 0) {
        strbuf_addf(why, "git %s: the directory %s", sub, werr);
        goto out;
    }
    strbuf_reset(&w);
    if (pin_repository(ctx, c, which, s == GIT_CLONE, &w) < 0)
        goto bad_operand;
    if (git_sub_options(sub_opts[s], sub, s, g, why) < 0)
        goto out;
    if (git_operands(ctx, c, s, cwd.buf, g, &w) < 0)
        goto bad_operand;
    if (s == GIT_CLONE) {
        if (g->nops == 0) {
            strbuf_addstr(why, "git clone without a repository");
            goto out;
        }
        if (g->nops == 1) {
            if (clone_default_dir(g->ops[0], &tmp) < 0) {
                strbuf_addstr(why, "git clone: name the directory to clone into");
                goto out;
            }
            strbuf_reset(&w);
            if (check_clone_target(ctx, c, cwd.buf, tmp.buf, &w) < 0)
                goto bad_operand;
        }
    }
    git_final_args(c, s, g);
    c->git_cwd = strbuf_detach(&cwd, NULL);
    ret = 0;
    goto out;

bad_operand:
    strbuf_addf(why, "git %s: %s", sub, w.buf);
out:
    for (size_t k = 0; k < g->nops; k++)
        free(g->rewritten[k]);
    free(g);
    strbuf_release(&cwd);
    strbuf_release(&tmp);
    strbuf_release(&w);
    return ret;
}

int route_check_configured_url(const route_ctx *ctx, const rcmd *c, const char *url,
                               strbuf *why)
{
    strbuf scheme = STRBUF_INIT, path = STRBUF_INIT, abs = STRBUF_INIT;
    const char *rest, *local = NULL, *w;
    char real[PATH_MAX];
    bool exists, inside;
    int ret = 0;

    /* The host's own configuration chose this URL; only a local path into
     * what the sandbox writes matters: receive-pack would run its hooks, and
     * upload-pack would read its config and follow its alternates. Relative
     * paths are git's, from the top of the work tree. */
    if (url_scheme(url, &scheme, &rest)) {
        if (!strcmp(scheme.buf, "file"))
            local = rest;
    } else if (!strstr(url, "::")) {
        const char *colon = strchr(url, ':'), *slash = strchr(url, '/');
        if (!colon || (slash && slash < colon))
            local = url;
    }
    if (!local)
        goto out;
    if (local[0] == '~' && ctx->home)
        strbuf_addf(&path, "%s%s", ctx->home, local + 1);
    else if (local[0] == '/')
        strbuf_addstr(&path, local);
    else
        strbuf_addf(&path, "%s/%s", c->git_top, local);
    if (route_walk("/", path.buf, WALK_MISSING_OK, &abs, &exists, &w) == 0) {
        inside = route_in_synced(ctx, abs.buf);
    } else {
        /* a symlink (or a file) on the way: where it really goes, as the
         * longest existing prefix resolves, and where the name is */
        inside = route_in_synced(ctx, path.buf);
        while (!inside && !realpath(path.buf, real)) {
            char *slash = strrchr(path.buf, '/');
            if (!slash || slash == path.buf)
                goto out;
            strbuf_setlen(&path, (size_t)(slash - path.buf));
        }
        inside = inside || route_in_synced(ctx, real);
        if (inside) {
            strbuf_addstr(why, "the remote is reached through a symbolic link into the code "
                               "directories");
            ret = -1;
            goto out;
        }
    }
    if (!inside)
        goto out;
    if (c->git_sub == GIT_PUSH) {
        strbuf_addstr(why, "the remote is a repository inside the code directories, whose "
                           "hooks the sandbox can change");
        ret = -1;
    } else if (!exists || !route_in_code_dirs(ctx, abs.buf) ||
               !is_this_repository(ctx, c, abs.buf)) {
        strbuf_addstr(why, "the remote is a local repository inside the code directories other "
                           "than this one (its config and alternates are the sandbox's)");
        ret = -1;
    }
out:
    strbuf_release(&scheme);
    strbuf_release(&path);
    strbuf_release(&abs);
    return ret;
}

/* ---- sbx policy show ------------------------------------------------------------------ */

/* What each value kind accepts, as a pattern of the policy format (for reading: the code
 * above is what checks them). */
static const char *valkind_pattern(valkind v)
{
    switch (v) {
    case V_NUM: return "[0-9]{1,9}";
    case V_REF: return "[!-,.-~][!-~]*";
    case V_TEXT: return "[ !-,.-~][ -~]*";
    case V_SORT: return "-?[a-z:()]+";
    case V_REBASE: return "true|false|merges";
    case V_NO: return "no";
    case V_CHECK_NO: return "check|no";
    case V_DIR: return "DIR inside a code directory, no symlinks";
    case V_NONE: break;
    }
    return "";
}

/* The built-in git rules in the policy format (sbxsh-policy(5)), from the tables above, so
 * that `sbx policy show` prints what the code checks. Options with an optional value are
 * shown twice: as a flag, and as an option whose value follows `=`. */
void route_git_rules_text(strbuf *out)
{
    strbuf_addstr(out, "# Built in (router/git.c): git's network commands. These rules are code\n"
                       "# (the security core), shown here in the policy format for reading;\n"
                       "# a policy file cannot change them. Besides the options below, git\n"
                       "# runs pinned to the code directory's repository, with\n"
                       "# -c safe.bareRepository=explicit -c protocol.ext.allow=never, and its\n"
                       "# operands (repository, refspecs, clone target) are checked by kind\n"
                       "# (router/README.md, \"git\").\n");
    for (size_t s = 0; s < ARRAY_SIZE(sub_opts); s++) {
        strbuf_addf(out, "\nrule builtin-git-%s\n    program git\n    subcommand %s\n",
                    route_git_sub_names[s], route_git_sub_names[s]);
        for (const gopt *o = sub_opts[s]; o->sh || o->lng; o++) {
            for (int form = 0; form < 2; form++) {
                char name[64];
                if (form == 0 && !o->lng)
                    continue;
                if (form == 1 && !o->sh)
                    continue;
                if (form == 0)
                    snprintf(name, sizeof(name), "--%s", o->lng);
                else
                    snprintf(name, sizeof(name), "-%c", o->sh);
                if (o->arg != A_REQ)
                    strbuf_addf(out, "    flag %s\n", name);
                if (o->arg != A_NONE)
                    strbuf_addf(out, "    option %s %s\n", name, valkind_pattern(o->val));
            }
        }
        strbuf_addstr(out, "    # operands: checked in code (remote, URL, refspec, clone target)\n");
    }
}
