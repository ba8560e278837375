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

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const git_sub_names[] = { "clone", "fetch", "pull", "push", "ls-remote" };

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

static int check_clone_target(const route_ctx *ctx, const char *cwd, const char *dir,
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
    }
    strbuf_release(&abs);
    return ret;
}

/* The probes git makes for a local repository path (path.c's enter_repo()
 * and clone's get_repo_path()), in the same order. A `.git` directory or
 * gitfile is the host's (sync never writes one); a repository under any
 * other name, or a gitfile under another name, is the sandbox's to change,
 * and a symlink could point anywhere. */
static int probe_local_repo(const char *abs, strbuf *why)
{
    static const char *const suffixes[] = { "/.git", "", ".git/.git", ".git", ".bundle" };
    strbuf c = STRBUF_INIT;
    int ret = 0;

    for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
        struct stat st;
        const char *base;

        strbuf_reset(&c);
        strbuf_addf(&c, "%s%s", abs, suffixes[i]);
        if (lstat(c.buf, &st) < 0)
            continue;
        base = strrchr(c.buf, '/');
        base = base ? base + 1 : c.buf;
        if (S_ISLNK(st.st_mode)) {
            strbuf_addstr(why, "the local repository is a symbolic link");
            ret = -1;
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            static const char *const marks[] = { "HEAD", "objects", "refs", "commondir" };
            bool gitdir = false;
            if (!strcmp(base, ".git"))
                break;
            for (size_t k = 0; k < ARRAY_SIZE(marks) && !gitdir; k++) {
                strbuf_setlen(&c, strlen(abs) + strlen(suffixes[i]));
                strbuf_addf(&c, "/%s", marks[k]);
                gitdir = lstat(c.buf, &st) == 0;
            }
            if (gitdir) {
                strbuf_addstr(why, "a bare repository inside the code directories "
                                   "(the sandbox can change its config and alternates)");
                ret = -1;
                break;
            }
            continue;
        }
        if (S_ISREG(st.st_mode)) {
            char head[8];
            int fd = open(c.buf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            ssize_t n = fd >= 0 ? read_full(fd, head, sizeof(head)) : -1;
            if (fd >= 0)
                close(fd);
            if (n == 8 && !memcmp(head, "gitdir: ", 8) && strcmp(base, ".git")) {
                strbuf_addstr(why, "a gitfile inside the code directories points git elsewhere");
                ret = -1;
            }
            break;      /* a bundle, or the host's gitfile */
        }
        strbuf_addstr(why, "the local repository is not a file or directory");
        ret = -1;
        break;
    }
    strbuf_release(&c);
    return ret;
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

int route_check_repo(const route_ctx *ctx, const char *cwd, const char *repo, bool push,
                     strbuf *why)
{
    strbuf scheme = STRBUF_INIT, abs = STRBUF_INIT;
    const char *rest, *local = NULL, *w;
    bool exists;
    int ret = -1;

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
        } else if (!strcmp(scheme.buf, "https") || !strcmp(scheme.buf, "http")) {
            if (check_authority(rest, alen, false, why) < 0)
                goto out;
        } else if (!strcmp(scheme.buf, "ssh") || !strcmp(scheme.buf, "git+ssh") ||
                   !strcmp(scheme.buf, "ssh+git") || !strcmp(scheme.buf, "git")) {
            if (check_authority(rest, alen, true, why) < 0)
                goto out;
        } else {
            strbuf_addstr(why, "unknown URL scheme ");
            reason_add(why, scheme.buf, scheme.len);
            strbuf_addstr(why, ": git would run git-remote-");
            reason_add(why, scheme.buf, scheme.len);
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
        if (route_walk(cwd, local, WALK_MISSING_OK, &abs, &exists, &w) < 0) {
            strbuf_addf(why, "local repository: %s", w);
            goto out;
        }
        if (!route_in_code_dirs(ctx, abs.buf)) {
            strbuf_addstr(why, "a local repository outside the code directories");
            goto out;
        }
        if (push) {
            /* a bare word that names nothing on disk is a remote's name */
            strbuf probe = STRBUF_INIT;
            bool any = false;
            static const char *const sfx[] = { "", "/.git", ".git", ".bundle" };
            for (size_t i = 0; i < ARRAY_SIZE(sfx) && !any; i++) {
                struct stat st;
                strbuf_reset(&probe);
                strbuf_addf(&probe, "%s%s", abs.buf, sfx[i]);
                any = lstat(probe.buf, &st) == 0;
            }
            strbuf_release(&probe);
            if (!valid_remote_nick(local) || any) {
                strbuf_addstr(why, "pushing to a local repository runs its hooks on the host");
                goto out;
            }
        } else if (probe_local_repo(abs.buf, why) < 0) {
            goto out;
        }
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
    reason_add(why, name, n);
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
    reason_add(why, &c, 1);
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

int route_check_git(const route_ctx *ctx, rcmd *c, strbuf *why)
{
    char **argv = c->argv.v;
    size_t argc = c->argv.n, i = 1, nops = 0;
    strbuf cwd = STRBUF_INIT, tmp = STRBUF_INIT, w = STRBUF_INIT;
    const char *ops[ROUTE_MAX_WORDS], *sub, *werr;
    const gopt *opts;
    bool exists, multiple = false, all = false, dashdash = false;
    int s, ret = -1;

    strbuf_addstr(&cwd, ctx->cwd);
    /* git's own options, before the subcommand: exact matches only */
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--no-pager") || !strcmp(a, "-P") || !strcmp(a, "--no-replace-objects"))
            continue;
        if (!strcmp(a, "-C")) {
            if (++i >= argc) {
                strbuf_addstr(why, "git -C without a directory");
                goto out;
            }
            if (!*argv[i])
                continue;       /* git ignores -C "" */
            if (argv[i][0] == '~' || route_walk(cwd.buf, argv[i], WALK_DIR, &tmp, &exists,
                                                &werr) < 0) {
                strbuf_addf(why, "git -C: %s",
                            argv[i][0] == '~' ? "~ (outside the code directories)" : werr);
                goto out;
            }
            if (!route_in_code_dirs(ctx, tmp.buf)) {
                strbuf_addstr(why, "git -C: outside the code directories");
                goto out;
            }
            strbuf_reset(&cwd);
            strbuf_add(&cwd, tmp.buf, tmp.len);
            continue;
        }
        strbuf_addstr(why, "git ");
        reason_add(why, a, strlen(a));
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
    if (i >= argc) {
        strbuf_addstr(why, "git without a network subcommand");
        goto out;
    }
    sub = argv[i++];
    for (s = 0; s < (int)ARRAY_SIZE(git_sub_names); s++)
        if (!strcmp(sub, git_sub_names[s]))
            break;
    if (s == (int)ARRAY_SIZE(git_sub_names)) {
        strbuf_addstr(why, "git ");
        reason_add(why, sub, strlen(sub));
        strbuf_addstr(why, ": only clone, fetch, pull, push and ls-remote run on the host");
        goto out;
    }
    if (!route_in_code_dirs(ctx, cwd.buf)) {
        strbuf_addf(why, "git %s: the directory is outside the code directories", sub);
        goto out;
    }
    opts = sub_opts[s];

    for (; i < argc; i++) {
        const char *a = argv[i];
        const gopt *o;

        if (dashdash || a[0] != '-' || !a[1]) {
            ops[nops++] = a;
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
            multiple |= o->sh == 'm' && s == GIT_FETCH;
            all |= !strcmp(o->lng, "all");
            continue;
        }
        for (const char *p = a + 1; *p; p++) {
            if (!(o = find_short(opts, sub, *p, why)))
                goto out;
            if (o->arg == A_NONE) {
                multiple |= *p == 'm' && s == GIT_FETCH;
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

    /* operands */
    for (size_t k = 0; k < nops; k++) {
        bool repo_pos = k == 0 || (multiple && s == GIT_FETCH);
        strbuf_reset(&w);
        if (s == GIT_CLONE) {
            if (k == 0) {
                if (route_check_repo(ctx, cwd.buf, ops[0], false, &w) < 0)
                    goto bad_operand;
            } else if (k == 1) {
                if (check_clone_target(ctx, cwd.buf, ops[1], &w) < 0)
                    goto bad_operand;
            } else {
                strbuf_addstr(&w, "too many operands");
                goto bad_operand;
            }
            continue;
        }
        if (repo_pos && !all) {
            if (route_check_repo(ctx, cwd.buf, ops[k], s == GIT_PUSH, &w) < 0)
                goto bad_operand;
            if (k == 0)
                c->git_remote = ops[k];
        } else if (check_ref(ops[k], s == GIT_LS_REMOTE ? "pattern" : "refspec", &w) < 0) {
            goto bad_operand;
        }
    }
    if (s == GIT_CLONE) {
        if (nops == 0) {
            strbuf_addstr(why, "git clone without a repository");
            goto out;
        }
        if (nops == 1) {
            if (clone_default_dir(ops[0], &tmp) < 0) {
                strbuf_addstr(why, "git clone: name the directory to clone into");
                goto out;
            }
            strbuf_reset(&w);
            if (check_clone_target(ctx, cwd.buf, tmp.buf, &w) < 0)
                goto bad_operand;
        }
    }
    c->git_cwd = strbuf_detach(&cwd, NULL);
    c->git_sub = s;
    ret = 0;
    goto out;

bad_operand:
    strbuf_addf(why, "git %s: %s", sub, w.buf);
out:
    strbuf_release(&cwd);
    strbuf_release(&tmp);
    strbuf_release(&w);
    return ret;
}

int route_check_configured_url(const route_ctx *ctx, const char *cwd, const char *url, bool push,
                               strbuf *why)
{
    strbuf scheme = STRBUF_INIT, path = STRBUF_INIT;
    const char *rest, *local = NULL;
    char real[PATH_MAX];
    int ret = 0;

    /* The host's own configuration chose this URL; only a local repository
     * the sandbox can write matters: receive-pack would run its hooks, and
     * upload-pack would follow its alternates. */
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
        strbuf_addf(&path, "%s/%s", cwd, local);
    /* the longest existing prefix, with its symlinks resolved */
    while (!realpath(path.buf, real)) {
        char *slash = strrchr(path.buf, '/');
        if (!slash || slash == path.buf)
            goto out;
        strbuf_setlen(&path, (size_t)(slash - path.buf));
    }
    if (!route_in_synced(ctx, real))
        goto out;
    if (push) {
        strbuf_addstr(why, "the remote is a repository inside the code directories, whose "
                           "hooks the sandbox can change");
        ret = -1;
    } else if (probe_local_repo(real, why) < 0) {
        ret = -1;
    }
out:
    strbuf_release(&scheme);
    strbuf_release(&path);
    return ret;
}
